"""Outputs never destroy published data: each output folder of ``write_results_and_late``
belongs to one query (its checkpoint's token, recorded in the folder), folders are compared
resolved and against the query's input, and a second live writer is refused; every refusal
comes before the query starts and names both sides."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import SparkSession

from windowing import OutputTag
from windowing.assigners import TumblingEventTimeWindows
from windowing.spark.io.files import Files
from windowing.spark.io.ownership import (
    FOLDER_LOCK,
    OWNER_FILE,
    QUERY_FILE,
    WINDOWING,
    Output,
    OwnerRecord,
    query_token,
    read_owner,
    take_ownership,
)
from windowing.spark.streaming.sinks import WindowedQuery, check_sink_paths, write_results_and_late
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


def run(spark: SparkSession, src: Path, results: Path, chk: Path, **kw: Any) -> WindowedQuery:
    query = write_results_and_late(
        result_of(spark, src), str(results), None, str(chk), available_now=True, **kw
    )
    query.awaitTermination(300)
    assert query.exception() is None
    return query


def rows(spark: SparkSession, folder: Path) -> list[tuple[Any, ...]]:
    """``(user, window_start, amount, batch_id)`` of every published row."""
    got = spark.read.parquet(str(folder)).collect()
    return sorted((r.user, r.window_start, r.amount, r.batch_id) for r in got)


def published(folder: Path) -> set[int]:
    return {int(p.name.split("=")[1]) for p in folder.glob("batch_id=*")}


def test_a_new_query_is_refused_a_folder_another_query_published_to(
    spark: SparkSession, tmp_path: Path
) -> None:
    res, chk_a, chk_b = tmp_path / "res", tmp_path / "chk_a", tmp_path / "chk_b"
    write_files(tmp_path / "in_a", [batch(i) for i in range(2)])
    run(spark, tmp_path / "in_a", res, chk_a)
    before = rows(spark, res)
    assert len(before) == 1 and published(res) >= {0, 1}
    token = json.loads((chk_a / WINDOWING / QUERY_FILE).read_text())["token"]
    record = read_owner(Files(spark), str(res))
    assert record is not None and record.token == token and record.output == "results_path"
    assert record.checkpoint == str(chk_a)

    write_files(tmp_path / "in_b", [batch(0, "b")])
    with pytest.raises(ValueError) as info:
        write_results_and_late(
            result_of(spark, tmp_path / "in_b"), str(res), None, str(chk_b), available_now=True
        )
    text = str(info.value)
    assert f"results_path={str(res)!r} belongs to another query" in text
    assert f"names the checkpoint {str(chk_a)!r}" in text
    assert f"this query's checkpoint is {str(chk_b)!r}" in text
    assert "write to another folder, or delete" in text
    # nothing was written or deleted: A's rows are all there, B has no checkpoint
    assert rows(spark, res) == before
    assert not chk_b.exists()


def test_the_owner_restarts_and_appends_keeping_its_batches(
    spark: SparkSession, tmp_path: Path
) -> None:
    res, chk, src = tmp_path / "res", tmp_path / "chk", tmp_path / "in"
    write_files(src, [batch(i) for i in range(2)])
    run(spark, src, res, chk)
    first = rows(spark, res)
    first_batches = published(res)
    write_files(src, [batch(2)], first=2)
    run(spark, src, res, chk)
    again = rows(spark, res)
    assert published(res) > first_batches
    assert [r for r in again if r[3] in first_batches] == first
    assert len(again) > len(first)


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
    assert not (tmp_path / results / OWNER_FILE).exists()


def test_a_second_live_writer_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    res, chk_a, src = tmp_path / "res", tmp_path / "chk_a", tmp_path / "in"
    write_files(src, [batch(0)])
    a = write_results_and_late(
        result_of(spark, src), str(res), None, str(chk_a), processing_time="1 second"
    )
    try:
        assert a.isActive
        holder = f"pid {os.getpid()} on "
        # another checkpoint: the folder is A's, and A is running now
        with pytest.raises(ValueError) as info:
            write_results_and_late(
                result_of(spark, src), str(res), None, str(tmp_path / "chk_b"), available_now=True
            )
        text = str(info.value)
        assert f"results_path={str(res)!r} belongs to another query" in text
        assert f"that query is running now ({holder}" in text
        # a copy of A's checkpoint (A's token): the folder's lock refuses it
        copy = tmp_path / "chk_copy" / WINDOWING
        copy.mkdir(parents=True)
        shutil.copy(chk_a / WINDOWING / QUERY_FILE, copy / QUERY_FILE)
        with pytest.raises(ValueError) as info:
            write_results_and_late(
                result_of(spark, src), str(res), None, str(copy.parent), available_now=True
            )
        text = str(info.value)
        assert f"results_path={str(res)!r} is being written by a running query ({holder}" in text
        assert str(res / FOLDER_LOCK) in text
        # A's own checkpoint, another folder: the checkpoint's lock refuses it
        with pytest.raises(ValueError) as info:
            write_results_and_late(
                result_of(spark, src), str(tmp_path / "res2"), None, str(chk_a), available_now=True
            )
        text = str(info.value)
        assert f"checkpoint={str(chk_a)!r} is in use by a running query ({holder}" in text
        assert str(chk_a / WINDOWING / "query.lock") in text
        assert not (tmp_path / "res2" / OWNER_FILE).exists()
    finally:
        a.stop()
    # stopped, A's locks are released: its owner restarts at once
    write_files(src, [batch(1)], first=1)
    run(spark, src, res, chk_a)
    assert published(res)


def test_folders_of_no_query_are_refused_and_earlier_ones_adopted(
    spark: SparkSession, tmp_path: Path
) -> None:
    src = tmp_path / "in"
    write_files(src, [batch(i) for i in range(2)])
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "part-0000.json").write_text("{}\n")
    with pytest.raises(ValueError, match=r"results_path=.* holds files this query did not write"):
        run(spark, src, foreign, tmp_path / "chk_f")
    assert sorted(p.name for p in foreign.iterdir()) == ["part-0000.json"]

    # a folder written before owner records existed: the checkpoint that wrote it adopts it
    res, chk = tmp_path / "res", tmp_path / "chk"
    run(spark, src, res, chk)
    before = rows(spark, res)
    for name in (OWNER_FILE, FOLDER_LOCK):
        (res / name).unlink()
    shutil.rmtree(chk / WINDOWING)
    # another checkpoint does not: the batches are not its own
    with pytest.raises(ValueError, match=r"has not committed \(batch_id=0, batch_id=1"):
        run(spark, src, res, tmp_path / "chk_other")
    write_files(src, [batch(2)], first=2)
    run(spark, src, res, chk)
    record = read_owner(Files(spark), str(res))
    assert record is not None and record.token == query_token(Files(spark), str(chk))
    after = rows(spark, res)
    assert [r for r in after if r in before] == before and len(after) > len(before)


class _HadoopFiles(Files):
    """Local paths through Hadoop's FileSystem (the branch of every other scheme)."""

    @staticmethod
    def local(path: str) -> str | None:
        return None


def test_records_through_hadoop(spark: SparkSession, tmp_path: Path) -> None:
    files = _HadoopFiles(spark)
    chk = f"file://{tmp_path}/chk"
    token = query_token(files, chk)
    assert query_token(files, chk) == token == query_token(Files(spark), str(tmp_path / "chk"))
    path = f"file://{tmp_path}/out/{OWNER_FILE}"
    assert files.create_exclusive(path, "first")
    assert not files.create_exclusive(path, "second")
    assert files.read_text(path) == "first"
    files.remove(path)
    assert files.read_text(path) is None


class _Racing(Files):
    """Local files where another query claims ``folder`` just before this one does."""

    def __init__(self, folder: Path, other: OwnerRecord) -> None:
        super().__init__(None)
        self.folder, self.other = folder, other

    def create_exclusive(self, path: str, text: str) -> bool:
        if path == str(self.folder / OWNER_FILE):
            super().create_exclusive(path, self.other.to_json())
        return super().create_exclusive(path, text)


def test_of_two_queries_claiming_one_folder_the_second_is_refused(tmp_path: Path) -> None:
    other = OwnerRecord("f" * 32, "/elsewhere/chk", "results_path", "2026-01-01T00:00:00+00:00")
    files = _Racing(tmp_path / "late", other)
    outputs = [
        Output("results_path", str(tmp_path / "res")),
        Output("late_path", str(tmp_path / "late")),
    ]
    with pytest.raises(ValueError, match=r"late_path=.* names the checkpoint '/elsewhere/chk'"):
        take_ownership(files, str(tmp_path / "chk"), outputs)
    # the folder claimed before the refusal is given back, and no lock stays held
    assert not (tmp_path / "res" / OWNER_FILE).exists()
    ownership = take_ownership(Files(None), str(tmp_path / "chk"), outputs[:1])
    ownership.release()


def test_the_end_of_an_earlier_run_leaves_the_running_one_publishing() -> None:
    """A restart of a query has the query's id: the listener bus may deliver the end of the
    previous run after the new run started, and only the new run's own end may stop its
    publishing (and release its locks)."""
    from types import SimpleNamespace

    from windowing.spark.io.ownership import Ownership
    from windowing.spark.streaming.sinks import _Publisher, _Publishing, _Running

    published: list[int] = []

    class Counting(_Publishing):
        def __call__(self, spark: Any) -> None:
            published.append(1)

    running = _Running(Counting((), "/chk"), None, Ownership())
    listener = _Publisher(running)
    listener.run_id = "run-2"
    listener.onQueryTerminated(SimpleNamespace(id="query", runId="run-1"))  # the earlier run
    running.publish()
    assert len(published) == 1  # still publishing
    listener.onQueryProgress(SimpleNamespace(progress=SimpleNamespace(id="query", runId="run-2")))
    assert len(published) == 2
    listener.onQueryTerminated(SimpleNamespace(id="query", runId="run-2"))  # its own end
    running.publish()
    assert len(published) == 3  # the end published once more; nothing after it
