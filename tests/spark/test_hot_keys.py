"""Hot keys in the batch replay: a key's rows reach the window operator in record batches in
replay order (``docs/scale-and-failure.md``), and give what the in-memory harness gives.

The fixture ``tiny`` makes every bound small: Spark hands Python batches of 7 rows
(``spark.sql.execution.arrow.maxRecordsPerBatch``), a key in event-time order goes to the
operator 10 elements at a time (its ended windows fired early), the columnar path carries at
most 5 rows of a window to the next batch, and a dead-letter key's log spills to disk beyond
200 bytes. The hot key ``hot`` then spans dozens of batches, with windows across batch
boundaries.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession

from tests.spark.builtin_paths import without_native_builtins
from windowing import OutputTag
from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    TumblingEventTimeWindows,
)
from windowing.evictors import CountEvictor
from windowing.functions import AggregateFunction, ProcessWindowFunction
from windowing.functions.aggregations import AggregationType, FieldAggregation
from windowing.spark.batch import replay, replay_keys
from windowing.spark.batch import replay_plan as batch
from windowing.spark.streaming import sinks
from windowing.state import ValueStateDescriptor
from windowing.stream import BoundedOutOfOrderness, WindowedStream
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

pytestmark = pytest.mark.spark

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
SCHEMA = "user string, amount bigint, ts bigint, seq bigint, pad string"
DELAY = 400
BATCH_ROWS = "spark.sql.execution.arrow.maxRecordsPerBatch"


@pytest.fixture
def tiny(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    previous = spark.conf.get(BATCH_ROWS)
    spark.conf.set(BATCH_ROWS, "7")
    monkeypatch.setattr(replay_keys, "CHUNK_ROWS", 10)
    monkeypatch.setattr(replay, "CARRY_ROWS", 5)
    monkeypatch.setattr(replay_keys, "LOG_BYTES", 200)
    try:
        yield
    finally:
        spark.conf.set(BATCH_ROWS, previous or "10000")


# ---------------------------------------------------------------------------- input
def events(seed: int, n_hot: int = 400, *, arrival: bool) -> list[tuple[Any, ...]]:
    """One hot key (``hot``, ``n_hot`` rows) and a few small ones, in arrival order ``seq``.
    With ``arrival``: mostly in order, some out of order within the watermark delay, some
    late. Without: event times distinct within each key (the replay order is then the
    harness's)."""
    rng = random.Random(seed)
    users = ["hot"] * n_hot + [rng.choice(["a", "b", "c", "d"]) for _ in range(n_hot // 4)]
    rng.shuffle(users)
    rows = []
    used: dict[str, set[int]] = {}
    for seq, user in enumerate(users):
        if arrival:
            r = rng.random()
            base = seq * 40
            ts = base - rng.randint(1_000, 3_000) if r < 0.08 else base - rng.randint(0, 300)
        else:
            taken = used.setdefault(user, set())
            ts = rng.randint(-2_000, 30_000)
            while ts in taken:
                ts += 1
            taken.add(ts)
        pad = "x" * rng.randint(0, 40)
        rows.append((user, rng.randint(1, 9), ts, seq, pad))
    return rows


def to_df(spark: SparkSession, rows: Sequence[tuple[Any, ...]]) -> DataFrame:
    return spark.createDataFrame(list(rows), SCHEMA).repartition(3)


def stream(df: DataFrame, *, arrival: bool) -> Any:
    return WindowedStream.from_dataframe(
        df,
        event_time="ts",
        watermark=BoundedOutOfOrderness(DELAY),
        arrival_order="seq" if arrival else None,
    ).key_by("user")


# ---------------------------------------------------------------------------- functions
class Seen(ProcessWindowFunction[Row, tuple[int, int, str, int, int], str, Any]):
    """Order-sensitive on purpose: the seqs in the order the window saw them, the watermark
    the function saw (``clock``: in arrival order a key's windows fire at the key's own next
    row, not at another key's as in the harness), and the key's firing count (its global
    state)."""

    FIRINGS = ValueStateDescriptor("firings", 0)

    def __init__(self, clock: bool = True) -> None:
        self.clock = clock

    def process(self, key: str, context: Any, elements: Iterable[Row]) -> Iterable[Any]:
        firings = context.global_state().get_state(self.FIRINGS)
        firings.update(firings.value() + 1)
        items = list(elements)
        seqs = ",".join(str(r.seq) for r in items)
        total = sum(r.amount for r in items)
        watermark = context.current_watermark() if self.clock else 0
        yield (len(items), total, seqs, watermark, firings.value())


SEEN = "n bigint, total bigint, seqs string, wm bigint, firing bigint"


class Amounts(AggregateFunction[Row, tuple[int, int], tuple[int, int]]):
    """Count, and an order-sensitive hash of the amounts; raises on a null amount."""

    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: Row, acc: tuple[int, int]) -> tuple[int, int]:
        return (acc[0] + 1, (acc[1] * 31 + value.amount) % 1_000_003)

    def get_result(self, acc: tuple[int, int]) -> tuple[int, int]:
        return acc

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], (a[1] * 31 + b[1]) % 1_000_003)


AMOUNTS = "n bigint, h bigint"


def fold(a: Row, b: Row) -> Row:
    """An order-sensitive reduce (the first row's other fields)."""
    merged = a.asDict()
    merged.update(amount=(a.amount * 31 + b.amount) % 1_000_003, ts=max(a.ts, b.ts))
    return Row(**merged)


# ---------------------------------------------------------------------------- reference
def reference(
    rows: Sequence[tuple[Any, ...]],
    *,
    arrival: bool,
    assigner: Any,
    function: Any,
    evictor: Any = None,
    lateness: int = 0,
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Results and late rows of the in-memory harness: in arrival order ``seq`` with the
    watermark ``max(ts of earlier rows) - DELAY - 1``, or each key in event-time order, then
    the end of input."""
    h = WindowOperatorHarness(
        assigner, function, evictor=evictor, allowed_lateness=lateness, late_output_tag=LATE
    )
    names = ("user", "amount", "ts", "seq", "pad")
    records = [Row(**dict(zip(names, r, strict=True))) for r in rows]
    late: list[tuple[Any, ...]] = []
    if arrival:
        newest: int | None = None
        for r in sorted(records, key=lambda r: r.seq):
            if newest is not None:
                h.process_watermark(newest - DELAY - 1)
            h.process_element(r, r.ts, key=r.user)
            newest = r.ts if newest is None else max(newest, r.ts)
    else:
        for r in sorted(records, key=lambda r: (r.user, r.ts)):
            h.process_element(r, r.ts, key=r.user)
    h.process_watermark(MAX_TIMESTAMP)
    results = []
    for res in h.extract_output():
        value = res.value
        if isinstance(value, Row):  # a reduced row: the key column is the result's key
            value = tuple(v for n, v in zip(value.__fields__, value, strict=True) if n != "user")
        results.append((res.key, res.window.start, res.window.end, *value, res.timestamp))
    for e in h.extract_side_output(LATE):
        wm = None if e.watermark == MIN_TIMESTAMP else e.watermark
        late.append((*e.value, wm, "late"))
    return sorted(results, key=repr), sorted(late, key=repr)


def outputs(result: Any) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with result:
        got = sorted((tuple(r) for r in result.results.collect()), key=repr)
        late = (
            sorted((tuple(r) for r in result.get_side_output(LATE).collect()), key=repr)
            if result.late_output_tag is not None
            else []
        )
    return got, late


# ---------------------------------------------------------------------------- the operator
CASES = {
    "tumbling-process": (lambda: TumblingEventTimeWindows(1_000), "process", None),
    "session-process": (lambda: EventTimeSessionWindows(150), "process", None),
    "hopping-aggregate": (lambda: HoppingEventTimeWindows(1_500, 500), "aggregate", None),
    "tumbling-reduce": (lambda: TumblingEventTimeWindows(700), "reduce", None),
    "tumbling-evictor": (lambda: TumblingEventTimeWindows(2_000), "process", CountEvictor(3)),
}


def run_case(
    spark: SparkSession, rows: list[tuple[Any, ...]], case: str, *, arrival: bool, lateness: int
) -> tuple[tuple[list[Any], list[Any]], tuple[list[Any], list[Any]]]:
    make_assigner, kind, evictor = CASES[case]
    windowed = stream(to_df(spark, rows), arrival=arrival).window(make_assigner())
    if evictor is not None:
        windowed = windowed.evictor(evictor)
    windowed = windowed.allowed_lateness(lateness).side_output_late_data(LATE)
    function: Any
    if kind == "process":
        seen = Seen(clock=not arrival)
        result, function = windowed.process(seen, output_schema=SEEN), seen
    elif kind == "aggregate":
        result, function = windowed.aggregate(Amounts(), output_schema=AMOUNTS), Amounts()
    else:
        result, function = windowed.reduce(fold), fold
    want = reference(
        rows,
        arrival=arrival,
        assigner=make_assigner(),
        function=function,
        evictor=evictor,
        lateness=lateness,
    )
    return outputs(result), want


@pytest.mark.parametrize("case", list(CASES))
def test_a_hot_key_in_event_time_order_equals_the_harness(
    spark: SparkSession, tiny: None, case: str
) -> None:
    rows = events(list(CASES).index(case), arrival=False)
    got, want = run_case(spark, rows, case, arrival=False, lateness=0)
    assert got == want
    assert sum(1 for r in got[0] if r[0] == "hot") > 5
    if CASES[case][1] == "process":  # functions see the watermark of the end of input
        assert {r[-3] for r in got[0]} == {MAX_TIMESTAMP}


class CountTotal(AggregateFunction[Row, tuple[int, int], tuple[int, int]]):
    """Count and total of the amounts (order-insensitive: ties may go in any order)."""

    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: Row, acc: tuple[int, int]) -> tuple[int, int]:
        return (acc[0] + 1, acc[1] + value.amount)

    def get_result(self, acc: tuple[int, int]) -> tuple[int, int]:
        return acc

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


@pytest.mark.parametrize(
    "assigner",
    [TumblingEventTimeWindows(100), EventTimeSessionWindows(50)],
    ids=["tumbling", "session"],
)
def test_equal_event_times_across_chunks_of_a_hot_key(
    spark: SparkSession, tiny: None, assigner: Any
) -> None:
    """Rows of one event time split over two chunks: a window ending there fires once, with
    all of them (a window fired early is one no later row can reach)."""
    rows = [("hot", i % 7 + 1, 49 + 50 * (i // 3), i, "") for i in range(300)]
    result = (
        stream(to_df(spark, rows), arrival=False)
        .window(assigner)
        .process(Seen(), output_schema=SEEN)
    )
    want = reference(rows, arrival=False, assigner=assigner, function=Seen())
    with result:
        got = sorted((tuple(r) for r in result.results.collect()), key=repr)
    # n and total per window (the seqs of equal event times may come in another order)
    assert [(r[:3], r[3], r[4]) for r in got] == [(r[:3], r[3], r[4]) for r in want[0]]
    assert sum(r[3] for r in got) == len(rows)


@pytest.mark.parametrize("case", list(CASES))
def test_a_hot_key_in_arrival_order_with_late_rows_equals_the_harness(
    spark: SparkSession, tiny: None, case: str
) -> None:
    rows = events(10 + list(CASES).index(case), arrival=True)
    got, want = run_case(spark, rows, case, arrival=True, lateness=300)
    assert got == want
    assert any(r[0] == "hot" for r in got[1]), "the hot key should have late rows"


def test_the_table_form_of_pyspark_4_0_gives_the_same(
    spark: SparkSession, tiny: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PySpark 4.0's ``applyInArrow`` takes a function of one table: the same replay."""
    assert batch.streams_record_batches("4.0.1") is False
    assert batch.streams_record_batches("4.1.0") is batch.streams_record_batches("5.0") is True
    rows = events(21, arrival=True)
    streamed = run_case(spark, rows, "tumbling-process", arrival=True, lateness=300)
    monkeypatch.setattr(batch, "streams_record_batches", lambda version=None: False)
    table = run_case(spark, rows, "tumbling-process", arrival=True, lateness=300)
    assert table[0] == streamed[0] == streamed[1]


# ---------------------------------------------------------------------------- columns
def sum_reference(
    rows: list[tuple[Any, ...]], kind: AggregationType, size: int, assigner: Any = None
) -> list[Any]:
    """The harness's results of ``kind`` over ``amount`` (tumbling windows of ``size`` unless
    ``assigner`` is given), in event-time order per key."""
    windows = assigner if assigner is not None else TumblingEventTimeWindows(size)
    h = WindowOperatorHarness(windows, FieldAggregation(kind, "amount"))
    names = ("user", "amount", "ts", "seq", "pad")
    for r in sorted(rows, key=lambda r: (r[0], r[2])):
        record = Row(**dict(zip(names, r, strict=True)))
        h.process_element(record, r[2], key=r[0])
    h.process_watermark(MAX_TIMESTAMP)
    return sorted(
        (res.key, res.window.start, res.window.end, *res.value[1:], res.timestamp)
        for res in h.extract_output()
    )


SHAPES = {
    "tumbling-short": lambda: TumblingEventTimeWindows(300),
    "tumbling-long": lambda: TumblingEventTimeWindows(4_000),
    "hopping-short": lambda: HoppingEventTimeWindows(600, 200),
    "hopping-long": lambda: HoppingEventTimeWindows(4_000, 1_000),
    "session-short": lambda: EventTimeSessionWindows(150),
    "session-long": lambda: EventTimeSessionWindows(4_000),
}


@pytest.mark.parametrize(
    ("kind", "carry"),
    [(AggregationType.SUM, 5), (AggregationType.MIN_BY, 1_000)],
    ids=["sum-carry-5", "min_by-carry-1000"],
)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_hot_key_on_whole_columns_equals_the_harness(
    spark: SparkSession,
    tiny: None,
    monkeypatch: pytest.MonkeyPatch,
    shape: str,
    kind: AggregationType,
    carry: int,
) -> None:
    """Batches of 7 rows: a key's windows that go on in the next batch are carried (its last
    tumbling window or session; all its rows with hopping windows); carried rows beyond
    ``carry`` go to the operator: the same results and metrics either way."""
    monkeypatch.setattr(replay, "CARRY_ROWS", carry)
    rows = events(31, arrival=False)
    windowed = stream(to_df(spark, rows), arrival=False).window(SHAPES[shape]())
    field = {"sum": windowed.sum, "max": windowed.max, "min_by": windowed.min_by}[kind.value]
    with without_native_builtins():
        result = field("amount")
    assert result.plan.columnar is not None
    with result:
        got = sorted(tuple(r) for r in result.results.collect())
        metrics = result.collect_metrics()
    assert got == sum_reference(rows, kind, 0, SHAPES[shape]())
    assert metrics.num_elements == metrics.num_input_rows == len(rows)
    assert metrics.num_windows_fired == metrics.num_results == len(got)
    assert metrics.num_keys == len({r[0] for r in rows})


def test_a_null_in_the_middle_of_a_hot_key_hands_it_to_the_operator(
    spark: SparkSession, tiny: None
) -> None:
    rows = events(32, arrival=False)
    hot = [i for i, r in enumerate(rows) if r[0] == "hot"]
    i = hot[len(hot) // 2]
    rows[i] = (*rows[i][:1], None, *rows[i][2:])
    result = stream(to_df(spark, rows), arrival=False).window(TumblingEventTimeWindows(500))
    with without_native_builtins():
        summed = result.sum("amount")
    assert summed.plan.columnar is not None
    with summed:
        got = sorted((tuple(r) for r in summed.results.collect()), key=repr)
    want = sorted(sum_reference(rows, AggregationType.SUM, 500), key=repr)
    assert got == want


# ---------------------------------------------------------------------------- errors
def poisoned(seed: int, poison: set[int], *, harmless: bool) -> list[tuple[Any, ...]]:
    """``events`` with the rows ``poison`` (by seq) of the hot key given a null amount, or
    (``harmless``) moved to a key of their own with the amount 0."""
    rows = []
    for user, amount, ts, seq, pad in events(41, arrival=True):
        if seq in poison and user == "hot":
            user, amount = ("zz", 0) if harmless else (user, None)
        rows.append((user, amount, ts, seq, pad))
    return rows


@pytest.mark.parametrize("arrival", [False, True], ids=["event-order", "arrival-order"])
def test_dead_letters_of_a_hot_key_streamed_in_chunks(
    spark: SparkSession, tiny: None, arrival: bool
) -> None:
    """A failing element of a key spread over many batches (its earlier rows spilled to
    disk) is left out exactly: the key is replayed from its start without it."""
    hot_seqs = [r[3] for r in events(41, arrival=True) if r[0] == "hot"]
    poison = {hot_seqs[5], hot_seqs[150], hot_seqs[151], hot_seqs[-2]}
    windowed = stream(to_df(spark, poisoned(41, poison, harmless=False)), arrival=arrival)
    job = windowed.window(TumblingEventTimeWindows(1_000)).allowed_lateness(300)
    job = job.side_output_late_data(LATE).on_error("dead_letter")
    with job.aggregate(Amounts(), output_schema=AMOUNTS) as result:
        got = sorted(tuple(r) for r in result.results.collect())
        late = sorted(tuple(r) for r in result.get_side_output(LATE).collect())
        dead = result.dead_letters.collect()
        metrics = result.collect_metrics()
    assert sorted(r.seq for r in dead) == sorted(poison)
    assert {(r.user, r.error_phase, r.error_class) for r in dead} == {
        ("hot", "element", "TypeError")
    }
    assert metrics.num_dead_letter_elements == len(poison)
    reference_df = to_df(spark, poisoned(41, poison, harmless=True))
    ref = stream(reference_df, arrival=arrival).window(TumblingEventTimeWindows(1_000))
    ref = ref.allowed_lateness(300).side_output_late_data(LATE)
    with ref.aggregate(Amounts(), output_schema=AMOUNTS) as expected:
        want = [r for r in sorted(tuple(r) for r in expected.results.collect()) if r[0] != "zz"]
        want_late = sorted(
            tuple(r) for r in expected.get_side_output(LATE).collect() if r.user != "zz"
        )
    assert got == want
    assert late == want_late


# ---------------------------------------------------------------------------- independence
def idle_job(df: DataFrame) -> Any:
    return (
        WindowedStream.from_dataframe(
            df,
            event_time="ts",
            watermark=BoundedOutOfOrderness(DELAY),
            arrival_order="seq",
            processing_time="pt",
        )
        .key_by("user")
        .window(TumblingEventTimeWindows(1_000))
        .idle_timeout(2_000)
        .side_output_late_data(LATE)
        .reduce(fold)
    )


def test_idle_timeout_of_a_hot_key_does_not_depend_on_batches(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hot key's idle clock is carried across batch boundaries: the same results and
    late rows with batches of 7 rows as with the key in one batch."""
    rows = events(51, arrival=True)
    # the hot key goes quiet now and then (processing time jumps ahead of its rows)
    with_pt = [(*r, r[3] * 40 + (5_000 if r[3] % 97 == 0 else 0)) for r in rows]
    df = spark.createDataFrame(with_pt, SCHEMA + ", pt bigint").repartition(3)
    whole = outputs(idle_job(df))
    previous = spark.conf.get(BATCH_ROWS)
    spark.conf.set(BATCH_ROWS, "7")
    try:
        chunked = outputs(idle_job(df))
    finally:
        spark.conf.set(BATCH_ROWS, previous or "10000")
    assert chunked == whole
    assert whole[0] and whole[1]


# ---------------------------------------------------------------------------- the plan
@pytest.mark.parametrize("arrival", [False, True], ids=["event-order", "arrival-order"])
def test_the_plan_sorts_once_and_the_grouping_keeps_it(spark: SparkSession, arrival: bool) -> None:
    """One shuffle by key group and one sort by key group, key and replay order below the
    grouped map: Spark adds no sort of its own that would lose the replay order. With an
    arrival order the shuffle is the prefix maximum's (its own sorts are further down)."""
    rows = events(61, n_hot=20, arrival=arrival)
    result = (
        stream(to_df(spark, rows), arrival=arrival)
        .window(TumblingEventTimeWindows(1_000))
        .process(Seen(), output_schema=SEEN)
    )
    output = result.output
    output.collect()
    plan = output._jdf.queryExecution().executedPlan().toString()
    if "== Final Plan ==" in plan:  # adaptive execution: the plan that ran
        plan = plan[plan.index("== Final Plan ==") : plan.index("== Initial Plan ==")]
    grouped = plan[plan.index("FlatMapGroupsInArrow") :].splitlines()
    first_sort = next(i for i, line in enumerate(grouped) if "Sort [" in line)
    assert not any("Exchange" in line for line in grouped[:first_sort]), plan
    ours = grouped[first_sort]
    assert "__pw_kg" in ours and "user" in ours
    assert "__pw_ts#" in ours and "ASC NULLS LAST" in ours
    assert ("__pw_arr#" in ours) == arrival
    if not arrival:
        assert sum("Sort [" in line for line in grouped) == 1, plan
        assert sum("Exchange hashpartitioning(__pw_kg" in line for line in grouped) == 1, plan


def order_batch(users: list[str], ts: list[int | None]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "user": pa.array(users),
            "__pw_ts": pa.array(ts, pa.int64()),
            "__pw_tb": pa.array([0] * len(users), pa.int64()),
        }
    )


def check(guard: Any, data: pa.RecordBatch) -> None:
    from windowing.spark.columns.keys import group_codes, state_key

    codes = group_codes(pa.Table.from_batches([data]), ["user"])
    starts = [0, *[i for i in range(1, len(codes)) if codes[i] != codes[i - 1]]]
    keys = [data.column("user")[i].as_py() for i in starts]
    guard.check(data, codes, [state_key(k) for k in keys], keys)


def test_rows_out_of_replay_order_fail_loudly() -> None:
    guard = replay._OrderGuard(["__pw_ts", "__pw_tb"])
    check(guard, order_batch(["a", "a", "b", "b"], [1, 2, 5, None]))  # nulls last
    with pytest.raises(replay.InputOrderError, match=r"key 'b'.*replay order"):
        check(guard, order_batch(["b", "c"], [4, 1]))  # b's rows went on, at an earlier time
    guard = replay._OrderGuard(["__pw_ts", "__pw_tb"])
    with pytest.raises(replay.InputOrderError, match="key 'a'"):
        check(guard, order_batch(["a", "a", "a"], [1, None, 3]))
    guard = replay._OrderGuard(["__pw_ts", "__pw_tb"])
    check(guard, order_batch(["a", "b"], [1, 2]))
    with pytest.raises(replay.InputOrderError, match="key 'a' are not contiguous"):
        check(guard, order_batch(["c", "a"], [1, 9]))


def check_sorted(guard: Any, data: pa.RecordBatch) -> None:
    from windowing.spark.columns.keys import group_codes

    codes = group_codes(pa.Table.from_batches([data]), ["user"])
    starts = [0, *[i for i in range(1, len(codes)) if codes[i] != codes[i - 1]], len(codes)]
    keys = [data.column("user")[i].as_py() for i in starts[:-1]]
    assert guard.check_sorted(data, codes, starts, keys)


def test_keys_sorted_as_spark_sorts_them_are_checked_on_their_columns() -> None:
    """Where Arrow compares the keys as Spark sorts them, ascending keys (nulls first) across
    batches stand for contiguous ones; a key coming back fails as the set of keys would."""

    def guard() -> Any:
        return replay._OrderGuard(["__pw_ts", "__pw_tb"], ["user"], sorted_keys=True)

    g = guard()
    check_sorted(g, order_batch([None, "a", "a", "b"], [1, 1, 2, 5]))  # type: ignore[list-item]
    check_sorted(g, order_batch(["b", "c"], [6, 1]))  # b goes on
    with pytest.raises(replay.InputOrderError, match=r"key 'c'.*replay order"):
        check_sorted(g, order_batch(["c", "d"], [0, 1]))
    g = guard()
    with pytest.raises(replay.InputOrderError, match=r"key 'a'.*replay order"):
        check_sorted(g, order_batch(["a", "a"], [2, 1]))
    g = guard()
    with pytest.raises(replay.InputOrderError, match="key 'a' are not contiguous"):
        check_sorted(g, order_batch(["b", "a"], [1, 1]))
    g = guard()
    check_sorted(g, order_batch(["a", "b"], [1, 2]))
    with pytest.raises(replay.InputOrderError, match="key 'a' are not contiguous"):
        check_sorted(g, order_batch(["a"], [9]))
    g = guard()
    with pytest.raises(replay.InputOrderError, match="key None are not contiguous"):
        check_sorted(g, order_batch(["a", None], [1, 1]))  # type: ignore[list-item]
    assert not replay._OrderGuard(["__pw_ts"], ["user"]).check_sorted(
        order_batch(["b", "a"], [1, 1]), np.array([0, 1]), [0, 1, 2], ["b", "a"]
    ), "nothing checked without sorted keys"


def test_which_key_types_arrow_compares_as_spark_sorts_them() -> None:
    from pyspark.sql.types import DoubleType, LongType, StringType, TimestampType

    assert replay.sorted_as_in_arrow(LongType()) and replay.sorted_as_in_arrow(StringType())
    assert replay.sorted_as_in_arrow(TimestampType())
    assert not replay.sorted_as_in_arrow(DoubleType())  # NaN last, -0.0 equal to 0.0
    assert not replay.sorted_as_in_arrow(StringType("UTF8_LCASE"))


# ---------------------------------------------------------------------------- own sessions
JOB = Path(__file__).with_name("hot_key_job.py")


def run_job(what: str, base: Path) -> tuple[dict[str, Any], str]:
    """Run ``hot_key_job.py`` in a process (and a Spark) of its own: its JSON line, its
    standard error (the driver's log)."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env["PYTHONPATH"] = os.pathsep.join([str(JOB.parents[2]), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(JOB), what, str(base)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.mark.slow  # a Spark of its own (about 100 s on 2 busy cores)
def test_a_window_larger_than_the_worker_names_the_key(tmp_path: Path) -> None:
    """With ``spark.executor.pyspark.memory``, a hot key through a reduce completes (one
    value per window), and a window whose elements do not fit fails with an error naming the
    key and the window, not an opaque memory failure."""
    out, _ = run_job("memory", tmp_path)
    assert out["reduce_rows"] == 1
    assert "process" not in out
    error = out["error"]
    assert "WindowStateTooLargeError: the window state of key 7 does not fit" in error
    assert "largest open window TimeWindow(start=0, end=1000000000000) holds" in error
    assert "spark.executor.pyspark.memory=700 MiB" in error


@pytest.mark.slow  # a Spark of its own (about 100 s on 2 busy cores)
def test_a_hot_key_streaming_query_stops_cleanly(tmp_path: Path) -> None:
    """Stopped while a micro-batch of its hot key is being written, the query ends without
    an exception and without a ``StackOverflowError`` in the stream execution thread."""
    out, log = run_job("stop", tmp_path)
    assert "StackOverflowError" not in log
    assert out["exception"] is None
    assert out["active"] is False
    assert out["committed"] == ["0"]  # the first micro-batch; the second was stopped


def test_a_stop_is_reported_in_one_line_spark_takes_for_a_stop() -> None:
    """The error a stopped micro-batch's write raises: short, and matched by the expression
    Spark uses (``StreamExecution.isInterruptionException``, here in Python's syntax)."""

    class Java:
        def __init__(self, name: str, cause: Any = None) -> None:
            self.name, self.cause = name, cause

        def getClass(self) -> Any:  # noqa: N802 - py4j's names
            return self

        def getName(self) -> str:  # noqa: N802
            return self.name

        def getCause(self) -> Any:  # noqa: N802
            return self.cause

    class Py4JError(Exception):
        def __init__(self, java: Java) -> None:
            super().__init__("An error occurred while calling o1.save.\n" + "\tat x\n" * 500)
            self.java_exception = java

    cause = Java("java.lang.Exception", Java("java.lang.InterruptedException"))
    interrupted = Py4JError(Java("org.apache.spark.SparkException", cause))
    stopped = sinks.stopped_error(interrupted, 3)
    assert stopped is not None and len(str(stopped)) < 200
    spark_pattern = (
        r"py4j.protocol.Py4JJavaError: An error occurred while calling((.|\r\n|\r|\n)*)"
        r"(java.lang.InterruptedException|java.io.InterruptedIOException|"
        r"java.nio.channels.ClosedByInterruptException)"
    )
    assert re.search(spark_pattern, str(stopped))
    assert sinks.stopped_error(Py4JError(Java("java.lang.IllegalStateException")), 3) is None
    assert sinks.stopped_error(ValueError("not from the JVM"), 3) is None
