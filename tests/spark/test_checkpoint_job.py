"""The checkpoint knows its job: ``write_results_and_late`` records the job's definition in
the checkpoint and refuses a restart whose state-shaping parts changed before the query
starts, naming each change; allowed changes run and are listed; a query started another way
fails at its first micro-batch, and a record of a newer version is named as such."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import Row, SparkSession

from windowing import OutputTag
from windowing.assigners import EventTimeSessionWindows, TumblingEventTimeWindows
from windowing.functions import AggregateFunction
from windowing.spark.io.ownership import WINDOWING
from windowing.spark.streaming.checkpoint import JobChangedError
from windowing.spark.streaming.job_record import JOB_RECORD
from windowing.spark.streaming.sinks import write_results_and_late
from windowing.stream import BoundedOutOfOrderness, WindowedStream

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
T0 = 1_700_000_000_000


def write_files(src: Path, batches: list[list[tuple[Any, int, int]]], first: int = 0) -> None:
    """One JSON file per micro-batch, numbered from ``first``."""
    src.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(batches, start=first):
        path = src / f"part-{i:04d}.json"
        names = ("user", "amount", "ts")
        path.write_text("".join(json.dumps(dict(zip(names, r, strict=True))) + "\n" for r in rows))
        os.utime(path, (1_600_000_000 + i * 10,) * 2)


class Total(AggregateFunction[Row, int, int]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Row, acc: int) -> int:
        return acc + value.amount

    def get_result(self, acc: int) -> int:
        return acc

    def merge(self, a: int, b: int) -> int:
        return a + b


def add(a: Row, b: Row) -> Row:
    return Row(user=a.user, amount=a.amount + b.amount, ts=max(a.ts, b.ts))


Job = Callable[[Any], Any]


def tumbling_reduce(keyed: Any, size: int = 1_000) -> Any:
    return keyed.window(TumblingEventTimeWindows(size)).reduce(add)


def query(spark: SparkSession, base: Path, job: Job, schema: str = "user string") -> Any:
    df = spark.readStream.schema(f"{schema}, amount bigint, ts bigint").json(str(base / "src"))
    stream = WindowedStream.from_dataframe(
        df, event_time="ts", watermark=BoundedOutOfOrderness(0)
    ).key_by("user")
    return job(stream)


def start(spark: SparkSession, base: Path, job: Job, **kw: Any) -> Any:
    late = kw.pop("late_path", None)
    return write_results_and_late(
        query(spark, base, job, kw.pop("schema", "user string")),
        str(base / "results"),
        late,
        str(base / "chk"),
        available_now=True,
        **kw,
    )


def finished(q: Any) -> Any:
    q.awaitTermination(300)
    assert q.exception() is None
    return q


def snapshot(base: Path) -> dict[str, bytes]:
    """Every file of the outputs and the checkpoint: what a refused query must leave as is."""
    return {
        str(p.relative_to(base)): p.read_bytes()
        for p in sorted(base.rglob("*"))
        if p.is_file() and "src" not in p.parts and not p.name.endswith(".crc")
    }


@pytest.fixture
def first_run(spark: SparkSession, tmp_path: Path) -> Path:
    """A query (tumbling 1 s windows, reduce) that ran over two files: its checkpoint has
    open windows and a job record."""
    write_files(tmp_path / "src", [[("a", 1, T0), ("b", 2, T0 + 10)], [("a", 3, T0 + 1_500)]])
    finished(start(spark, tmp_path, tumbling_reduce))
    assert (tmp_path / "chk" / WINDOWING / JOB_RECORD).exists()
    write_files(tmp_path / "src", [[("a", 4, T0 + 2_500)]], first=2)
    return tmp_path


@pytest.mark.parametrize(
    ("job", "schema", "named"),
    [
        pytest.param(
            lambda k: tumbling_reduce(k, 2_000),
            "user string",
            r"assigner: TumblingEventTimeWindows\(size=1000.* -> "
            r"TumblingEventTimeWindows\(size=2000",
            id="window-size",
        ),
        pytest.param(
            tumbling_reduce, "user bigint", r'keys: \[\["user", "string"\]\] -> ', id="key-type"
        ),
        pytest.param(
            lambda k: k.window(TumblingEventTimeWindows(1_000)).aggregate(Total()),
            "user string",
            r'function_kind: "reduce" -> "aggregate"',
            id="reduce-to-aggregate",
        ),
        pytest.param(
            lambda k: k.window(EventTimeSessionWindows(1_000)).reduce(add),
            "user string",
            r"assigner: TumblingEventTimeWindows\(.*\) -> EventTimeSessionWindows\(",
            id="tumbling-to-sessions",
        ),
        pytest.param(
            lambda k: k.window(TumblingEventTimeWindows(1_000)).allowed_lateness(500).reduce(add),
            "user string",
            r"allowed_lateness: 0 -> 500",
            id="allowed-lateness",
        ),
    ],
)
def test_a_restart_with_a_changed_job_is_refused_before_it_starts(
    spark: SparkSession, first_run: Path, job: Job, schema: str, named: str
) -> None:
    before = snapshot(first_run)
    with pytest.raises(JobChangedError, match=rf"(?s)holds the state of another job.*{named}"):
        start(spark, first_run, job, schema=schema)
    assert snapshot(first_run) == before  # nothing written, nothing deleted
    assert not spark.streams.active


def test_allowed_changes_run_and_are_listed(spark: SparkSession, first_run: Path) -> None:
    """Another reduce function, a late-data tag and a late folder: the state continues."""

    def newer(keyed: Any) -> Any:
        return (
            keyed.window(TumblingEventTimeWindows(1_000))
            .side_output_late_data(LATE)
            .reduce(lambda a, b: Row(user=a.user, amount=a.amount + b.amount, ts=b.ts))
        )

    q = finished(start(spark, first_run, newer, late_path=str(first_run / "late")))
    assert {c.part for c in q.job_changes} == {"function", "late_output_tag"}
    assert not any(c.breaking for c in q.job_changes)
    results = spark.read.parquet(str(first_run / "results")).collect()
    # the window [T0 + 1000, T0 + 2000) holds a's row of the first run: the state continued
    assert sorted((r.user, r.amount) for r in results) == [("a", 1), ("a", 3), ("b", 2)]
    record = json.loads((first_run / "chk" / WINDOWING / JOB_RECORD).read_text())
    assert record["job"]["late_output_tag"] == "late"  # the record follows the job


def test_a_query_started_another_way_fails_at_its_first_micro_batch(
    spark: SparkSession, first_run: Path
) -> None:
    """Without write_results_and_late (a writeStream of the output), the state's digest
    refuses another job inside the first micro-batch, before anything commits."""
    result = query(spark, first_run, lambda k: tumbling_reduce(k, 2_000))
    chk = first_run / "chk"
    commits = sorted(p.name for p in (chk / "commits").iterdir())
    q = (
        result.output.writeStream.foreachBatch(lambda df, i: df.collect())
        .option("checkpointLocation", str(chk))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match=r"key group \d+ of query .* was written by another job"):
        q.awaitTermination(300)
    assert sorted(p.name for p in (chk / "commits").iterdir()) == commits


def test_a_checkpoint_of_a_newer_version_is_named_as_such(
    spark: SparkSession, first_run: Path
) -> None:
    path = first_run / "chk" / WINDOWING / JOB_RECORD
    record = json.loads(path.read_text())
    record["job"].update(state_layout=99, windowing="9.9.9")
    path.write_text(json.dumps(record))
    with pytest.raises(
        JobChangedError, match=r"newer version of windowing \(9\.9\.9, state layout 99\)"
    ):
        start(spark, first_run, tumbling_reduce)


def test_a_record_without_committed_state_binds_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A first run that failed before its first commit left a record but no state: the next
    run, with another job, starts the checkpoint afresh."""
    write_files(tmp_path / "src", [[("a", 1, T0)], [("a", 2, T0 + 1_500)]])
    record = tmp_path / "chk" / WINDOWING / JOB_RECORD
    record.parent.mkdir(parents=True)
    other = query(spark, tmp_path, lambda k: tumbling_reduce(k, 5_000)).definition
    record.write_text(json.dumps({"created_layout": 8, "job": dict(other.parts)}))
    finished(start(spark, tmp_path, tumbling_reduce))
    assert json.loads(record.read_text())["job"]["assigner"]["size"] == 1_000


def test_group_values_are_checked_against_the_checkpoint() -> None:
    """A value of an earlier layout is refused in a checkpoint created by this one (it was
    copied from elsewhere: it carries no scope); a digest the driver accepted loads."""
    import pickle

    from windowing.engine import encoding
    from windowing.spark.streaming.checkpoint import StateOwner, encode_group, load_group

    scope = StateOwner("q", "/chk").scope(3)
    payload = pickle.dumps((("group", 7, 128, None, [], None), pickle.dumps([])), protocol=5)
    earlier = encoding.MAGIC + bytes((2, 0)) + payload
    assert load_group(earlier, 128, scope) == (None, {}, None)
    with pytest.raises(encoding.StateAuthenticationError, match="copied there from another"):
        load_group(earlier, 128, scope, bound=True)
    value = encode_group(128, None, {}, None, scope, "digest-a")
    with pytest.raises(JobChangedError, match="written by another job"):
        load_group(value, 128, scope, "digest-b")
    assert load_group(value, 128, scope, "digest-b", accepted=("digest-a",), bound=True)[1] == {}
