"""The interval join in streaming (``windowing.spark.interval_join.streaming``) == its batch
replay with the micro-batch as arrival order, micro-batch by micro-batch: results, each
side's late rows and the counters; a restart from the checkpoint mid-stream gives what one
uninterrupted run gives. The stateful processor is also called directly, with a fake state
handle, against one in-memory operator over many random micro-batches (no query)."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, SparkSession

from windowing import BoundedOutOfOrderness, OutputTag, WindowedStream
from windowing.functions.joins import LEFT, RIGHT, ProcessJoinFunction
from windowing.interval_join import IntervalJoinOperator
from windowing.spark.columns.frames import PACKED, from_ipc
from windowing.spark.interval_join import IntervalBounds, StreamingIntervalJoinResult
from windowing.spark.interval_join.streaming import IntervalJoinProcessor
from windowing.spark.streaming import write_results_and_late
from windowing.spark.streaming.checkpoint import JobChangedError
from windowing.spark.streaming.clocks import WATERMARK_SHIFT_MS, flink_watermark

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LEFT_SCHEMA = "k string, ts bigint, n bigint, arr bigint"
RIGHT_SCHEMA = "key string, t bigint, m bigint, arr bigint"
LEFT_LATE, RIGHT_LATE = OutputTag("left-late"), OutputTag("right-late")
OUT = "n bigint, m bigint, la bigint, ra bigint"
DELAY = 2


class Arrivals(ProcessJoinFunction[Any, Any, Any]):
    """The pair's row numbers and arrivals (micro-batches)."""

    def process_element(self, left: Any, right: Any, context: Any) -> Any:
        yield (left.n, right.m, left.arr, right.arr)


def join(
    left_df: DataFrame, right_df: DataFrame, arrival: str | None = None, lower: int = -4
) -> Any:
    """``between(lower, 3)`` with both bounds exclusive: by default a right row 3 ms before
    to 2 ms after the left one."""

    def stream(df: DataFrame, ts: str) -> Any:
        return WindowedStream.from_dataframe(
            df, event_time=ts, watermark=BoundedOutOfOrderness(DELAY), arrival_order=arrival
        )

    return (
        stream(left_df, "ts")
        .key_by("k")
        .interval_join(stream(right_df, "t").key_by("key"))
        .between(lower, 3)
        .lower_bound_exclusive()
        .upper_bound_exclusive()
        .side_output_left_late_data(LEFT_LATE)
        .side_output_right_late_data(RIGHT_LATE)
        .process(Arrivals(), output_schema=OUT)
    )


def random_batches(seed: int, n: int = 5) -> tuple[list[list[dict[str, Any]]], ...]:
    """Micro-batches of both sides: mostly in order, some rows late (12 ms back), one row
    without event time on each side."""
    rng = random.Random(seed)
    lefts: list[list[dict[str, Any]]] = []
    rights: list[list[dict[str, Any]]] = []
    for b in range(n):
        for rows, key, ts, value in ((lefts, "k", "ts", "n"), (rights, "key", "t", "m")):
            batch = []
            for i in range(8):
                t = b * 6 + rng.randrange(-3, 4) - (12 if rng.random() < 0.15 else 0)
                batch.append({key: rng.choice("ab"), ts: t, value: b * 100 + i, "arr": b})
            rows.append(batch)
    lefts[1].append({"k": "a", "ts": None, "n": 999, "arr": 1})
    rights[2].append({"key": "b", "t": None, "m": 999, "arr": 2})
    return lefts, rights


def write_files(directory: Path, batches: list[list[dict[str, Any]]], first: int = 0) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(batches, start=first):
        path = directory / f"part-{i:04d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        t = 1_600_000_000 + i * 10  # distinct modification times: the file source's order
        os.utime(path, (t, t))


def run_query(
    spark: SparkSession, src: Path, out: Path, lower: int = -4
) -> tuple[Any, StreamingIntervalJoinResult]:
    def read(name: str, schema: str) -> DataFrame:
        return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(src / name))

    result = join(read("left", LEFT_SCHEMA), read("right", RIGHT_SCHEMA), lower=lower)
    assert isinstance(result, StreamingIntervalJoinResult)
    query = write_results_and_late(
        result,
        str(out / "results"),
        None,
        str(out / "checkpoint"),
        available_now=True,
        side_output_paths={LEFT_LATE: str(out / "left_late"), RIGHT_LATE: str(out / "right_late")},
    )
    query.awaitTermination()
    assert query.exception() is None
    return query, result


def read_output(spark: SparkSession, path: Path) -> Counter[tuple[Any, ...]]:
    """Each row with its micro-batch (``batch_id``) first."""
    if not path.exists():
        return Counter()
    df = spark.read.parquet(str(path))
    rest = [c for c in df.columns if c != "batch_id"]
    return Counter(tuple(r) for r in df.select("batch_id", *rest).collect())


@pytest.fixture(scope="module")
def uninterrupted(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Any:
    lefts, rights = random_batches(11)
    base = tmp_path_factory.mktemp("interval_stream")
    write_files(base / "src" / "left", lefts)
    write_files(base / "src" / "right", rights)
    query, result = run_query(spark, base / "src", base / "out")
    outputs = {
        name: read_output(spark, base / "out" / name)
        for name in ("results", "left_late", "right_late")
    }
    totals: Counter[str] = Counter()
    for progress in query.recentProgress:
        observed = result.observed_metrics(progress)
        if observed is not None:
            totals.update({k: v for k, v in observed.items() if k.startswith("num_")})
    return lefts, rights, outputs, totals, query


def test_streaming_interval_join_equals_its_batch_replay_by_micro_batch(
    spark: SparkSession, uninterrupted: Any
) -> None:
    lefts, rights, outputs, totals, query = uninterrupted
    batch_left = spark.createDataFrame([r for b in lefts for r in b], LEFT_SCHEMA)
    batch_right = spark.createDataFrame([r for b in rights for r in b], RIGHT_SCHEMA)
    replay = join(batch_left, batch_right, "arr")
    with replay:
        # a pair is emitted in the micro-batch of its second row, a late row in its own
        expected = Counter((max(r.la, r.ra), *r) for r in replay.results.collect())
        late = {
            name: Counter((r.arr, *r) for r in replay.get_side_output(tag).collect())
            for name, tag in (("left_late", LEFT_LATE), ("right_late", RIGHT_LATE))
        }
        metrics = replay.collect_metrics()
    assert outputs["results"] == expected
    assert any(r[4] < r[5] for r in expected) and any(r[4] > r[5] for r in expected)
    for name, rows in late.items():
        assert outputs[name] == rows
        assert {r[-1] for r in rows} == {"late", "null_event_time"}  # both kinds, each side
    assert totals == metrics
    assert metrics["num_pairs"] == sum(expected.values())
    stage = query.stage_metrics(query.recentProgress[-1])["windowing"]
    assert {"watermark_lag_ms", "state_bytes", "buffered_rows"} <= set(stage)


@pytest.mark.slow  # two more queries
def test_a_restart_from_the_checkpoint_gives_the_uninterrupted_output(
    spark: SparkSession, tmp_path: Path, uninterrupted: Any
) -> None:
    """Three micro-batches, then the query stops and starts again from its checkpoint with
    the rest: the buffered rows of the first run join the rows of the second. (A restart may
    run one micro-batch without data first: the rows are compared with their arrivals.)"""
    lefts, rights, outputs, _, _ = uninterrupted
    src, out = tmp_path / "src", tmp_path / "out"
    write_files(src / "left", lefts[:3])
    write_files(src / "right", rights[:3])
    run_query(spark, src, out)
    first = read_output(spark, out / "results")
    write_files(src / "left", lefts[3:], first=3)
    write_files(src / "right", rights[3:], first=3)
    run_query(spark, src, out)

    def rows(counter: Counter[tuple[Any, ...]]) -> Counter[tuple[Any, ...]]:
        return Counter({r[1:]: n for r, n in counter.items()})

    got = rows(read_output(spark, out / "results"))
    assert got == rows(outputs["results"])
    across = [r for r in got if min(r[3], r[4]) < 3 <= max(r[3], r[4])]
    assert across  # pairs of a row buffered before the restart and a row after it
    assert not set(across) & set(rows(first))
    for name in ("left_late", "right_late"):
        assert rows(read_output(spark, out / name)) == rows(outputs[name])
    # the checkpoint records the job: other bounds cannot continue from its buffers
    with pytest.raises(JobChangedError, match="state_shape"):
        run_query(spark, src, out, lower=-5)


def test_late_path_and_mistakes_are_refused_before_the_query_starts(
    spark: SparkSession, tmp_path: Path
) -> None:
    (tmp_path / "left").mkdir()
    (tmp_path / "right").mkdir()
    left = spark.readStream.schema(LEFT_SCHEMA).json(str(tmp_path / "left"))
    right = spark.readStream.schema(RIGHT_SCHEMA).json(str(tmp_path / "right"))
    result = join(left, right)
    with pytest.raises(ValueError, match=r"late output per side.*'left-late'.*'right-late'"):
        write_results_and_late(
            result, str(tmp_path / "r"), str(tmp_path / "l"), str(tmp_path / "c")
        )
    with pytest.raises(ValueError, match="no side output"):
        result.get_side_output(OutputTag("other"))
    assert not (tmp_path / "r").exists() and not (tmp_path / "c").exists()


# ---------------------------------------------------------------------------- the processor
class _ValueState:
    def __init__(self) -> None:
        self.value: tuple[Any, ...] | None = None

    def get(self) -> tuple[Any, ...] | None:
        return self.value

    def update(self, value: tuple[Any, ...]) -> None:
        self.value = value

    def clear(self) -> None:
        self.value = None


class _Handle:
    def __init__(self) -> None:
        self.state = _ValueState()
        self.timers: set[int] = set()

    def getValueState(self, name: str, schema: Any) -> _ValueState:  # noqa: N802
        return self.state

    def registerTimer(self, t: int) -> None:  # noqa: N802
        self.timers.add(t)

    def deleteTimer(self, t: int) -> None:  # noqa: N802
        self.timers.discard(t)


class _Clock:
    def __init__(self, spark_watermark: int) -> None:
        self.spark_watermark = spark_watermark

    def getCurrentWatermarkInMs(self) -> int:  # noqa: N802
        return self.spark_watermark

    def getCurrentProcessingTimeInMs(self) -> int:  # noqa: N802
        return 0

    def getExpiryTimeInMs(self) -> int:  # noqa: N802
        return self.spark_watermark


def frame(config: Any, rows: list[tuple[str, dict[str, Any]]]) -> pd.DataFrame:
    """A call's rows as Spark hands them to the processor: the union's columns, then the
    runtime's (event time in ms, content hash), by position."""
    columns: dict[str, list[Any]] = {n: [] for n in config.input_table_schema.names}
    for i, (side, row) in enumerate(rows):
        ts = row["ts"] if side == LEFT else row["t"]
        values = {
            "k": row["k"] if side == LEFT else row["key"],
            "side": side,
            LEFT: row if side == LEFT else None,
            RIGHT: row if side == RIGHT else None,
            "event_time": ts,
            "__pw_ts": ts,
            "__pw_tb": i,
        }
        for name in columns:
            columns[name].append(values[name])
    return pd.DataFrame(columns)


def tagged_rows(calls: list[Any]) -> tuple[Counter[Any], Counter[Any], list[dict[str, Any]]]:
    """The results (key, n, m, max timestamp) and late rows (side, row number, watermark)
    of the processor's calls, and their metrics rows."""
    results: Counter[Any] = Counter()
    late: Counter[Any] = Counter()
    metrics = []
    for out in calls:
        for f in out:
            for blob in f[PACKED]:
                for r in from_ipc(blob).to_pylist():
                    if r["__pw_kind"] == 0:
                        results[(r["k"], r["n"], r["m"], r["__pw_mt"])] += 1
                    elif r["__pw_kind"] in (1, 2):
                        row = r["__pw_lrow"] or r["__pw_rrow"]
                        number = row.get("n", row.get("m"))
                        late[(r["__pw_kind"], number, r["__pw_lwm"], r["__pw_lreason"])] += 1
                    else:
                        metrics.append(r)
    return results, late, metrics


@pytest.fixture(scope="module")
def processor_config(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The processor's configuration the builder makes for two streaming inputs."""
    base = tmp_path_factory.mktemp("interval_processor")
    (base / "l").mkdir()
    (base / "r").mkdir()
    left = spark.readStream.schema(LEFT_SCHEMA).json(str(base / "l"))
    right = spark.readStream.schema(RIGHT_SCHEMA).json(str(base / "r"))
    result = (
        WindowedStream.from_dataframe(left, event_time="ts")
        .key_by("k")
        .interval_join(WindowedStream.from_dataframe(right, event_time="t").key_by("key"))
        .between(0, 0)
        .process(lambda a, b: (a.n, b.m), output_schema="n bigint, m bigint")
    )
    return result.config


@pytest.mark.parametrize("seed", range(40))
def test_the_processor_equals_one_operator_over_random_micro_batches(
    processor_config: Any, seed: int
) -> None:
    """One key group's calls (rows, or its timer alone) with a fake state handle: each
    micro-batch's results and late rows are one in-memory operator's at that micro-batch's
    watermark, rows at the watermark included; the state is plain data between calls, with
    one timer; at the end nothing is left."""
    rng = random.Random(seed)
    lower = rng.randrange(-4, 2)
    upper = lower + rng.randrange(0, 5)
    inclusive = rng.random() < 0.7, rng.random() < 0.7
    bounds = IntervalBounds(lower, upper, *inclusive, LEFT_LATE, RIGHT_LATE)
    layout = dataclasses.replace(processor_config.layout, bounds=bounds)
    config = dataclasses.replace(processor_config, layout=layout)
    processor = IntervalJoinProcessor(config)
    handle = _Handle()
    processor.init(handle)  # type: ignore[arg-type]
    reference = IntervalJoinOperator(
        lower,
        upper,
        lambda a, b: (a["n"], b["m"]),
        lower_inclusive=inclusive[0],
        upper_inclusive=inclusive[1],
        left_late_tag=LEFT_LATE,
        right_late_tag=RIGHT_LATE,
    )
    spark_watermark, seen, number = 0, None, 0
    for b in range(12):
        if seen is not None:
            spark_watermark = max(spark_watermark, seen - DELAY + WATERMARK_SHIFT_MS)
        watermark = flink_watermark(spark_watermark)
        rows = []
        for _ in range(rng.choice((0, 2, 5))):
            t = b * 3 + rng.randrange(-4, 3)
            if seen is not None and rng.random() < 0.3:
                t = watermark + rng.choice((0, 0, 1, -1))
            side = rng.choice((LEFT, RIGHT))
            key = rng.choice("abc")
            row = (
                {"k": key, "ts": t, "n": number, "arr": b}
                if side == LEFT
                else {"key": key, "t": t, "m": number, "arr": b}
            )
            rows.append((side, row))
            number += 1
        calls = []
        clock = _Clock(spark_watermark)
        if rows:
            calls.append(processor.handleInputRows((0,), iter([frame(config, rows)]), clock))
        if handle.timers and min(handle.timers) <= spark_watermark:
            (timer,) = handle.timers
            handle.timers.clear()  # Spark removes a timer as it fires
            calls.append(processor.handleExpiredTimer((0,), clock, _Clock(timer)))
        got, got_late, metrics = tagged_rows(calls)
        # the reference: one operator for every key, at the micro-batch's watermark
        reference.process_watermark(watermark)
        expected_late: Counter[Any] = Counter()
        for side, row in rows:
            key = row["k"] if side == LEFT else row["key"]
            t = row["ts"] if side == LEFT else row["t"]
            (reference.process_left if side == LEFT else reference.process_right)(row, t, key)
            tag = LEFT_LATE if side == LEFT else RIGHT_LATE
            for e in reference.extract_side_output(tag):
                number_of = e.value["n"] if side == LEFT else e.value["m"]
                expected_late[(1 if side == LEFT else 2, number_of, e.watermark, "late")] += 1
        expected = Counter((r.key, *r.value, r.timestamp) for r in reference.extract_output())
        assert (got, got_late) == (expected, expected_late), b
        if rows:
            assert sum(m["__pw_n_num_elements"] for m in metrics) == len(rows)
        if metrics:  # the group's buffers after its calls: the operator's
            assert metrics[-1]["__pw_n_buffered_rows"] == reference.num_buffered()
        if rows:
            seen = max(
                [seen if seen is not None else -(2**62)]
                + [(r["ts"] if s == LEFT else r["t"]) for s, r in rows]
            )
        assert len(handle.timers) <= 1
        assert (handle.state.value is None) == (not handle.timers)
    # far ahead: every buffer is cleaned up at the timer, nothing is left
    far = WATERMARK_SHIFT_MS + 10**6
    if handle.timers:
        (timer,) = handle.timers
        handle.timers.clear()
        tagged_rows([processor.handleExpiredTimer((0,), _Clock(far), _Clock(timer))])
    assert handle.state.value is None
    assert not handle.timers
