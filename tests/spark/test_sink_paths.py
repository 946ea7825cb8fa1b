"""``write_results_and_late`` checks its paths before a query starts (no SparkSession needed):
two outputs in one folder, or one inside another, would overwrite or misread each other."""

from __future__ import annotations

from pathlib import Path

import pytest

from windowing.spark.streaming import check_sink_paths


def test_distinct_sibling_folders_pass(tmp_path: Path) -> None:
    check_sink_paths(
        {
            "results_path": str(tmp_path / "results"),
            "late_path": str(tmp_path / "late"),
            "checkpoint": str(tmp_path / "checkpoint"),
            "side_output_paths['audit']": "s3a://bucket/audit",
            "unused": None,
        }
    )
    check_sink_paths({"results_path": str(tmp_path / "out"), "late_path": str(tmp_path / "out2")})


@pytest.mark.parametrize(
    ("late", "message"),
    [
        ("{d}/results", "late_path=.* is the same folder as results_path"),
        ("{d}/results/", "late_path=.* is the same folder as results_path"),
        ("file:{d}/results", "late_path=.* is the same folder as results_path"),
        ("{d}/x/../results", "late_path=.* is the same folder as results_path"),
        ("{d}/results/late", "late_path=.* lies inside results_path"),
        ("{d}", "results_path=.* lies inside late_path"),
    ],
)
def test_same_or_nested_folders_are_refused_naming_both(
    tmp_path: Path, late: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        check_sink_paths(
            {"results_path": f"{tmp_path}/results", "late_path": late.format(d=tmp_path)}
        )


def test_checkpoint_and_uris_of_other_schemes() -> None:
    with pytest.raises(ValueError, match=r"checkpoint=.* lies inside results_path"):
        check_sink_paths({"results_path": "s3a://b/out", "checkpoint": "s3a://b/out/_ckpt"})
    check_sink_paths({"results_path": "s3a://b/out", "checkpoint": "s3a://b/outside"})
    check_sink_paths({"results_path": "s3a://b/out", "late_path": "gs://b/out"})
    with pytest.raises(ValueError, match="late_path must be a non-empty path"):
        check_sink_paths({"results_path": "/tmp/r", "late_path": " "})


def test_write_results_and_late_checks_before_starting_a_query(tmp_path: Path) -> None:
    from typing import Any

    from windowing.spark.streaming import write_results_and_late

    not_a_query: Any = object()  # nothing of the result is touched before the check
    with pytest.raises(ValueError, match=r"late_path=.* lies inside results_path"):
        write_results_and_late(
            not_a_query, str(tmp_path / "out"), str(tmp_path / "out" / "late"), str(tmp_path / "c")
        )
