"""``write_results_and_late`` checks its paths before a query starts (no SparkSession needed):
two outputs in one folder, or one inside another, would overwrite or misread each other."""

from __future__ import annotations

from pathlib import Path

import pytest

from windowing.spark.streaming.query import check_sink_paths


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

    from windowing.spark.streaming.query import write_results_and_late

    not_a_query: Any = object()  # nothing of the result is touched before the check
    with pytest.raises(ValueError, match=r"late_path=.* lies inside results_path"):
        write_results_and_late(
            not_a_query, str(tmp_path / "out"), str(tmp_path / "out" / "late"), str(tmp_path / "c")
        )


def test_local_paths_resolve_through_links_and_their_existing_parent(tmp_path: Path) -> None:
    from windowing.spark.io.paths import resolve_path

    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real" / "deep")
    real = tmp_path.resolve()
    assert resolve_path(f"{tmp_path}/link") == f"file://{real}/real/deep"
    # a path that does not exist yet resolves through its existing parent
    assert resolve_path(f"{tmp_path}/link/new/x") == f"file://{real}/real/deep/new/x"
    # '..' after a link leaves the link's target (the file system's rule), not the link
    assert resolve_path(f"file:{tmp_path}/link/../other") == f"file://{real}/real/other"
    assert resolve_path(f"file://{tmp_path}/missing/../x/") == f"file://{real}/x"
    assert resolve_path("s3a://bucket//a/./b/../c/") == "s3a://bucket/a/c"


def test_the_folder_a_glob_reads_under() -> None:
    from windowing.spark.io.paths import glob_root

    assert glob_root("/in/*.json") == "/in"
    assert glob_root("/in/2024-*/x/*.json") == "/in"
    assert glob_root("s3a://bucket/in/{a,b}/") == "s3a://bucket/in"
    assert glob_root("/*") == "/"
    assert glob_root("*.json") == "."
    assert glob_root("/in/plain") == "/in/plain"


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (["{d}/in"], None),
        (["{d}/out"], r"results_path='.*/out' is the query's input folder '.*/out'"),
        (["{d}"], r"results_path=.* lies inside the query's input folder"),
        (["{d}/out/in/*.json"], r"the query's input folder '.*/out/in' lies inside results_path"),
        (["s3a://b/x", "{d}/chk/sources"], r"input folder .* lies inside checkpoint="),
    ],
)
def test_outputs_and_checkpoint_against_the_input(
    tmp_path: Path, inputs: list[str], message: str | None
) -> None:
    paths = {"results_path": f"{tmp_path}/out", "checkpoint": f"{tmp_path}/chk"}
    given = [i.format(d=tmp_path) for i in inputs]
    if message is None:
        check_sink_paths(paths, given)
        return
    with pytest.raises(ValueError, match=message):
        check_sink_paths(paths, given)


def test_the_same_folder_through_a_link_names_the_real_one(tmp_path: Path) -> None:
    (tmp_path / "res").mkdir()
    (tmp_path / "late").symlink_to(tmp_path / "res")
    real = str((tmp_path / "res").resolve())
    with pytest.raises(ValueError, match=f"is the same folder as results_path=.*both are '{real}'"):
        check_sink_paths({"results_path": f"{tmp_path}/res", "late_path": f"{tmp_path}/late"})
