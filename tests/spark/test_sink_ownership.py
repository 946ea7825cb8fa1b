"""Outputs never destroy published data: the folders of ``write_results_and_late`` are
compared resolved and against the query's input; every refusal comes before the query
starts and names both sides."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import SparkSession

from windowing import OutputTag
from windowing.assigners import TumblingEventTimeWindows
from windowing.spark.sinks import check_sink_paths, write_results_and_late
from windowing.stream import BoundedOutOfOrderness, WindowedStream

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
SCHEMA = "user string, amount bigint, ts bigint"
T0 = 1_700_000_000_000


def write_files(src: Path, batches: list[list[tuple[str, int, int]]], first: int = 0) -> None:
    """One JSON file per micro-batch, numbered from ``first``, in order."""
    src.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(batches, start=first):
        path = src / f"part-{i:04d}.json"
        names = ("user", "amount", "ts")
        path.write_text("".join(json.dumps(dict(zip(names, r, strict=True))) + "\n" for r in rows))
        os.utime(path, (1_600_000_000 + i * 10,) * 2)


def batch(i: int, user: str = "a") -> list[tuple[str, int, int]]:
    """Rows that close the windows of the batches before ``i``."""
    return [(user, i + 1, T0 + i * 5_000)]


def result_of(spark: SparkSession, src: str | Path) -> Any:
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(src))
    return (
        WindowedStream.from_dataframe(df, event_time="ts", watermark=BoundedOutOfOrderness(0))
        .key_by("user")
        .window(TumblingEventTimeWindows(1_000))
        .side_output_late_data(LATE)
        .sum("amount")
    )


def test_folders_are_compared_resolved(spark: SparkSession, tmp_path: Path) -> None:
    src = tmp_path / "in"
    write_files(src, [batch(0)])
    result = result_of(spark, src)
    chk = str(tmp_path / "chk")
    (tmp_path / "res").mkdir()
    (tmp_path / "late").symlink_to(tmp_path / "res")
    with pytest.raises(ValueError, match=r"late_path=.* is the same folder as results_path"):
        write_results_and_late(result, str(tmp_path / "res"), str(tmp_path / "late"), chk)
    # '..' after a symbolic link steps out of the link's target, not out of the link
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "a" / "b")
    spelled = f"{tmp_path}/link/../res"  # the folder a/res, not res
    with pytest.raises(ValueError, match=r"late_path=.* is the same folder as results_path"):
        write_results_and_late(result, str(tmp_path / "a" / "res"), spelled, chk)
    check_sink_paths({"results_path": str(tmp_path / "res"), "late_path": spelled})
    assert not (tmp_path / "chk").exists()


@pytest.mark.parametrize(
    ("results", "checkpoint", "source", "message"),
    [
        ("in/out", "chk", "in", r"results_path='.*/in/out' lies inside the query's input folder"),
        ("out", "in/chk", "in", r"checkpoint='.*/in/chk' lies inside the query's input folder"),
        ("in", "chk", "in", r"results_path='.*/in' is the query's input folder"),
        ("out", "chk", "out/in", r"the query's input folder '.*/out/in' lies inside results_path"),
        ("in/out", "chk", "in/*.json", r"results_path=.* lies inside the query's input folder"),
    ],
)
def test_outputs_and_the_input_are_kept_apart(
    spark: SparkSession, tmp_path: Path, results: str, checkpoint: str, source: str, message: str
) -> None:
    write_files(tmp_path / source.removesuffix("/*.json"), [batch(0)])
    result = result_of(spark, tmp_path / source)
    with pytest.raises(ValueError, match=message):
        write_results_and_late(
            result, str(tmp_path / results), None, str(tmp_path / checkpoint), available_now=True
        )
    assert not (tmp_path / checkpoint).exists()
