"""The streaming processor keeps state per key group (``max_parallelism``): a call handles
every key of one group, with one state value and one timer. Whatever the grouping, the
outputs must equal those of every key in a group of its own (per-key state), and for
built-in aggregations of tumbling, hopping and session windows (a group's keys run together
on whole columns) those of the operator run key by key. This drives
the processor with fake state handles as Spark calls it (each micro-batch: the groups with
rows, then the groups whose timer is due) over random keyed micro-batches, for both
groupings, and compares each micro-batch's results, late rows and counters. No Spark
session: only the processor's Python code runs."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pyspark.sql import Row
from pyspark.sql.pandas.types import to_arrow_schema, to_arrow_type
from pyspark.sql.types import LongType, StringType, StructField, StructType

from tests.columnar_plans import columnar_plan
from windowing import OutputTag
from windowing.assigners import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from windowing.functions import (
    Aggregate,
    AggregateFunction,
    AggregationType,
    FieldAggregation,
    Reduce,
)
from windowing.job import WindowConfig
from windowing.spark.columns.frames import PACKED, from_ipc
from windowing.spark.columns.metrics import COUNTER_NAMES, METRIC_NAMES
from windowing.spark.columns.output import OutputLayout
from windowing.spark.streaming import processor as runtime_processor
from windowing.spark.streaming import query as streaming

KEYS = ["a", "b", "c", None]
SCHEMA = StructType(
    [
        StructField("k", StringType(), True),
        StructField("v", LongType(), True),
        StructField("ts", LongType(), True),
        StructField("x", LongType(), True),
    ]
)
LATE = OutputTag("late")

pytestmark = pytest.mark.spark  # imports pyspark (no session)


def order_sensitive(a: Row, b: Row) -> Row:
    return Row(k=a.k, v=((a.v or 0) * 31 + (b.v or 0)) % 1_000_003, ts=max(a.ts, b.ts), x=b.x)


class Sequence(AggregateFunction[Row, tuple[int, ...], tuple[int, int]]):
    """(count, a hash of the order of the x values)."""

    def create_accumulator(self) -> tuple[int, ...]:
        return ()

    def add(self, value: Row, accumulator: tuple[int, ...]) -> tuple[int, ...]:
        return (*accumulator, value.x)

    def get_result(self, accumulator: tuple[int, ...]) -> tuple[int, int]:
        h = 7
        for x in accumulator:
            h = (h * 31 + x) % 1_000_003
        return (len(accumulator), h)

    def merge(self, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
        return a + b


def make_config(
    function: str, assigner: str, lateness: int, tag: bool, slicing: bool | None = True
) -> Any:
    spec: Any
    if function == "aggregate":
        spec = Aggregate(Sequence())
        out = StructType([StructField("n", LongType(), True), StructField("h", LongType(), True)])
    else:
        spec = (
            Reduce(order_sensitive)
            if function == "reduce"
            else Reduce(FieldAggregation(AggregationType(function), "v", True))
        )
        out = StructType([f for f in SCHEMA.fields if f.name != "k"])
    windows: Any = {
        "tumbling": TumblingEventTimeWindows(10),
        "hopping": SlidingEventTimeWindows(10, 5),
        "session": EventTimeSessionWindows(7),
    }[assigner]
    late_tag = LATE if tag else None
    arrow = to_arrow_schema(SCHEMA, timezone="UTC")
    layout = OutputLayout(
        keys=("k",),
        input_schema=SCHEMA,
        out_schema=out,
        reduced_rows=function != "aggregate",
        ts_kind="integral",
        late_output_tag=late_tag,
    )
    return runtime_processor.ProcessorConfig(
        window=WindowConfig(
            windows, allowed_lateness=lateness, late_output_tag=late_tag, slicing=slicing
        ),
        spec=spec,
        layout=layout,
        internal=("__pw_ts", "__pw_tb"),
        input_arrow=arrow,
        key_arrow_types=[to_arrow_type(StringType())],
        wall_clock=False,
        key_groups=128,
        columnar=columnar_plan(
            windows, spec, None, None, lateness, arrow, streaming=True, slicing=slicing
        ),
    )


class _Group:
    """One Spark group's state value and timers."""

    def __init__(self) -> None:
        self.value: Any = None
        self.timers: set[int] = set()


class _Handle:
    """The state handle of one processor instance serving several groups (Spark's: the
    current group's state and timers)."""

    def __init__(self) -> None:
        self.current = _Group()

    def getValueState(self, name: str, schema: Any) -> _Handle:  # noqa: N802
        return self

    def get(self) -> Any:
        return self.current.value

    def update(self, value: Any) -> None:
        self.current.value = value

    def clear(self) -> None:
        self.current.value = None

    def registerTimer(self, t: int) -> None:  # noqa: N802
        self.current.timers.add(t)

    def deleteTimer(self, t: int) -> None:  # noqa: N802
        assert t in self.current.timers
        self.current.timers.discard(t)


class _Clock:
    def __init__(self, watermark: int, expiry: int = 0) -> None:
        self.watermark = watermark
        self.expiry = expiry

    def getCurrentWatermarkInMs(self) -> int:  # noqa: N802
        return self.watermark

    def getCurrentProcessingTimeInMs(self) -> int:  # noqa: N802
        return 0

    def getExpiryTimeInMs(self) -> int:  # noqa: N802
        return self.expiry


def frame(rows: list[dict[str, Any]], group: int) -> Any:
    """The pandas frame Spark hands over: input columns, internal ones, the key group."""
    import pandas as pd

    columns = {
        "k": pa.array([r["k"] for r in rows], pa.string()),
        "v": pa.array([r["v"] for r in rows], pa.int64()),
        "ts": pa.array([r["ts"] for r in rows], pa.int64()),
        "x": pa.array([r["x"] for r in rows], pa.int64()),
        "_4": pa.array([r["ts"] for r in rows], pa.int64()),
        "_5": pa.array([r["x"] * 7919 % 101 for r in rows], pa.int64()),
        "_6": pa.array([group] * len(rows), pa.int32()),
    }
    return pd.DataFrame({n: c.to_pandas() for n, c in columns.items()})


def canonical(value: Any) -> Any:
    if isinstance(value, float):
        return ("nan",) if value != value else (value, math.copysign(1.0, value))
    if isinstance(value, list):
        return tuple(canonical(v) for v in value)
    return value


def outputs(frames: Any, gauges: bool = False) -> tuple[Counter[Any], Counter[str]]:
    """(rows other than metrics, summed counters) of a call's yielded frames; with
    ``gauges``, also the open windows of the group calls."""
    rows: Counter[Any] = Counter()
    counters: Counter[str] = Counter()
    for f in frames:
        for blob in f[PACKED]:
            for row in from_ipc(blob).to_pylist():
                if row["__pw_kind"] == 2:  # the metrics row
                    values = dict(zip(COUNTER_NAMES, row["__pw_metrics"], strict=True))
                    # the counters (the gauges describe a key group's state, not its keys)
                    counters.update({n: values[n] for n in METRIC_NAMES})
                    if gauges and values["open_windows"] is not None:
                        counters["open_windows"] += values["open_windows"]
                else:
                    rows[tuple(sorted((k, canonical(v)) for k, v in row.items()))] += 1
    return rows, counters


def run(
    config: Any,
    batches: list[tuple[int, list[dict[str, Any]]]],
    group_of: Any,
    gauges: bool = False,
) -> list[Any]:
    """Per micro-batch ``(watermark, rows)``: the outputs of Spark's calls with the keys
    grouped by ``group_of`` (one processor instance for all groups)."""
    processor = runtime_processor.WindowProcessor(config)
    handle = _Handle()
    processor.init(handle)  # type: ignore[arg-type]
    groups: dict[int, _Group] = {}
    per_batch = []
    for watermark, rows in batches:
        got: Counter[Any] = Counter()
        counters: Counter[str] = Counter()
        by_group: dict[int, list[dict[str, Any]]] = {}
        for r in rows:
            by_group.setdefault(group_of(r["k"]), []).append(r)
        for g, group_rows in by_group.items():
            handle.current = groups.setdefault(g, _Group())
            out = processor.handleInputRows((g,), iter([frame(group_rows, g)]), _Clock(watermark))
            a, b = outputs(out, gauges)
            got += a
            counters += b
        for g, group in sorted(groups.items()):
            due = sorted(t for t in group.timers if t <= watermark)
            for t in due:
                group.timers.discard(t)  # consumed
                handle.current = group
                out = processor.handleExpiredTimer(
                    key=(g,), timerValues=_Clock(watermark), expiredTimerInfo=_Clock(0, t)
                )
                a, b = outputs(out, gauges)
                got += a
                counters += b
            # one timer per group: the earliest due time of its keys
            assert len(group.timers) <= 1
            assert all(t > watermark for t in group.timers)
        per_batch.append((got, counters))
    assert all(g.value is None and not g.timers for g in groups.values())  # all fired
    return per_batch


row_strategy = st.fixed_dictionaries(
    {
        "k": st.sampled_from(KEYS),
        "v": st.one_of(st.none(), st.integers(-5, 20)),
        "dt": st.integers(-40, 12),
    }
)


@settings(max_examples=60, deadline=None)
@example(  # windows the columns held below the watermark, handed to the operator: fire now
    function="sum",
    assigner="tumbling",
    lateness=0,
    tag=False,
    raw=[
        [],
        [{"k": "a", "v": None, "dt": 0}] * 5 + [{"k": "a", "v": None, "dt": -1}],
        [{"k": "a", "v": None, "dt": -14}, {"k": "b", "v": None, "dt": 0}],
        [{"k": "b", "v": None, "dt": 0}, {"k": "c", "v": 0, "dt": 0}],
    ],
    steps=[0, 0, 3, 0, 0, 0],
)
@given(
    function=st.sampled_from(["sum", "max_by", "reduce", "aggregate"]),
    assigner=st.sampled_from(["tumbling", "tumbling", "hopping", "session"]),
    lateness=st.sampled_from([0, 0, 6]),
    tag=st.booleans(),
    raw=st.lists(st.lists(row_strategy, max_size=8), min_size=1, max_size=6),
    steps=st.lists(st.integers(0, 15), min_size=6, max_size=6),
)
def test_key_groups_equal_per_key_state(
    function: str,
    assigner: str,
    lateness: int,
    tag: bool,
    raw: list[list[dict[str, Any]]],
    steps: list[int],
) -> None:
    config = make_config(function, assigner, lateness, tag)
    batches = []
    now = 1_000
    x = 0
    high = None
    for rows, step in zip(raw, steps, strict=False):
        # Spark's watermark: the largest event time of earlier batches minus a delay of 3, on
        # the shifted copy of the event time it is defined on
        watermark = 0 if high is None else high - 3 + streaming.WATERMARK_SHIFT_MS
        now += step
        batch = []
        for r in rows:
            batch.append({"k": r["k"], "v": r["v"], "ts": now + r["dt"], "x": x})
            x += 1
        if batch:
            top = max(r["ts"] for r in batch)
            high = top if high is None else max(high, top)
        batches.append((watermark, batch))
    batches.append((now + 1_000 + streaming.WATERMARK_SHIFT_MS, []))  # the end: all fire

    one_group = run(config, batches, lambda k: 0)
    own_groups = run(config, batches, lambda k: KEYS.index(k))
    assert one_group == own_groups
    if config.columnar is not None:
        # the keys a group runs together on whole columns give the operator's outputs
        by_operator = run(dataclasses.replace(config, columnar=None), batches, lambda k: 0)
        assert one_group == by_operator


@settings(max_examples=200, deadline=None)
@given(
    function=st.sampled_from(["sum", "max_by", "min"]),
    lateness=st.sampled_from([0, 3, 8]),
    tag=st.booleans(),
    null_share=st.sampled_from([0, 0, 10, 40]),
    raw=st.lists(
        st.lists(
            st.tuples(st.sampled_from(KEYS), st.integers(0, 99), st.integers(-25, 12)),
            max_size=14,
        ),
        min_size=1,
        max_size=7,
    ),
    steps=st.lists(st.integers(0, 12), min_size=7, max_size=7),
)
def test_keys_on_columns_together_equal_the_operator(
    function: str,
    lateness: int,
    tag: bool,
    null_share: int,
    raw: list[list[tuple[str | None, int, int]]],
    steps: list[int],
) -> None:
    """A group's keys run together on whole columns (built-in aggregation, tumbling windows),
    with some keys moving to the operator (a null value; an element within its lateness)
    and back: every micro-batch's outputs equal the operator's, key by key."""
    config = make_config(function, "tumbling", lateness, tag)
    assert config.columnar is not None
    batches = []
    now, x, high = 1_000, 0, None
    for rows, step in zip(raw, steps, strict=False):
        watermark = 0 if high is None else high - 3 + streaming.WATERMARK_SHIFT_MS
        now += step
        batch = []
        for k, v, dt in rows:
            value = None if v < null_share // 4 else v
            batch.append({"k": k, "v": value, "ts": now + dt, "x": x})
            x += 1
        if batch:
            top = max(r["ts"] for r in batch)
            high = top if high is None else max(high, top)
        batches.append((watermark, batch))
    batches.append((now + 1_000 + streaming.WATERMARK_SHIFT_MS, []))
    together = run(config, batches, lambda k: 0)
    assert together == run(dataclasses.replace(config, columnar=None), batches, lambda k: 0)


@settings(max_examples=200, deadline=None)
@given(
    function=st.sampled_from(["sum", "max_by", "min"]),
    assigner=st.sampled_from(["hopping", "session"]),
    lateness=st.sampled_from([0, 3, 8]),
    tag=st.booleans(),
    null_share=st.sampled_from([0, 0, 10, 40]),
    raw=st.lists(
        st.lists(
            st.tuples(st.sampled_from(KEYS), st.integers(0, 99), st.integers(-25, 12)),
            max_size=14,
        ),
        min_size=1,
        max_size=7,
    ),
    steps=st.lists(st.integers(0, 12), min_size=7, max_size=7),
)
def test_hopping_and_session_keys_on_columns_equal_the_operator(
    function: str,
    assigner: str,
    lateness: int,
    tag: bool,
    null_share: int,
    raw: list[list[tuple[str | None, int, int]]],
    steps: list[int],
) -> None:
    """A group's keys of hopping windows (panes) or sessions run together on whole columns,
    with keys moving to the operator (a null value; an element within its lateness; a row
    merging sessions of earlier micro-batches) and back: every micro-batch's outputs and
    counters equal the operator's, key by key, and so do the groups' open windows."""
    config = make_config(function, assigner, lateness, tag, slicing=None)
    assert config.columnar is not None
    batches = []
    now, x, high = 1_000, 0, None
    for rows, step in zip(raw, steps, strict=False):
        watermark = 0 if high is None else high - 3 + streaming.WATERMARK_SHIFT_MS
        now += step
        batch = []
        for k, v, dt in rows:
            value = None if v < null_share // 4 else v
            batch.append({"k": k, "v": value, "ts": now + dt, "x": x})
            x += 1
        if batch:
            top = max(r["ts"] for r in batch)
            high = top if high is None else max(high, top)
        batches.append((watermark, batch))
    batches.append((now + 1_000 + streaming.WATERMARK_SHIFT_MS, []))
    together = run(config, batches, lambda k: 0, gauges=True)
    by_operator = run(dataclasses.replace(config, columnar=None), batches, lambda k: 0, gauges=True)
    assert together == by_operator


def test_a_group_state_of_two_key_columns_splits_into_its_own_keys() -> None:
    """A group's columnar windows move to per-key entries (a key's call needs the operator)
    key by key, whatever the order of the keys' codes: with two key columns the codes are
    ranks of both values, not the order of the items."""
    from windowing.spark.columnar.core import OpenWindows
    from windowing.spark.streaming.checkpoint import decode_entry

    config = make_config("sum", "tumbling", 0, False)
    layout = dataclasses.replace(config.layout, keys=("k", "x"))
    two_keys = dataclasses.replace(
        config, layout=layout, key_arrow_types=[to_arrow_type(StringType()), pa.int64()]
    )
    processor = runtime_processor.WindowProcessor(two_keys)
    processor.init(_Handle())  # type: ignore[arg-type]
    processor.clocks.spark_watermark = 0
    # keys (b, 1), (a, 1), (b, 2): contiguous, but the second column's first value repeats
    rows = pa.table(
        {"k": ["b", "a", "a", "b"], "v": [1, 2, 3, 4], "ts": [0, 0, 10, 0], "x": [1, 1, 1, 2]},
        schema=to_arrow_schema(SCHEMA),
    )
    windows = OpenWindows(pa.array([0, 0, 10, 0]).to_numpy(), rows, -1)
    entries: dict[Any, Any] = {}
    processor.columnar.to_entries(entries, windows)
    got = {
        entry[0]: decode_entry(entry[2]).rows.column("v").to_pylist() for entry in entries.values()
    }
    assert got == {("b", 1): [1], ("a", 1): [2, 3], ("b", 2): [4]}


def test_batch_key_groups_are_sized_to_the_input(spark: Any, tmp_path: Any) -> None:
    from pyspark.sql import functions as F  # noqa: N812

    from windowing import WindowedStream
    from windowing.assigners import TumblingEventTimeWindows
    from windowing.spark.jobs import BYTES_PER_KEY_GROUP

    def plan_of(df: Any, keyed: bool = True, most: int = 128) -> Any:
        stream = WindowedStream.from_dataframe(df, event_time="t")
        windowed = stream.key_by("k") if keyed else stream
        assigner = TumblingEventTimeWindows(10)
        w = windowed.window(assigner) if keyed else stream.window_all(assigner)
        return w.max_parallelism(most).reduce(lambda a, b: a).plan

    spark.range(1_000).select((F.col("id") % 7).alias("k"), F.col("id").alias("t")).write.parquet(
        str(tmp_path / "small")
    )
    small = spark.read.parquet(str(tmp_path / "small"))
    plan = plan_of(small)
    assert plan.key_groups == 1
    assert plan.one_task
    assert "rows of a small input in one task, without a shuffle" in plan.reason
    # 10^7 rows of two longs: Spark estimates 160 MB, a group per 4 MiB
    large = spark.range(10**7).select((F.col("id") % 7).alias("k"), F.col("id").alias("t"))
    estimate = int(large._jdf.queryExecution().analyzed().stats().sizeInBytes())
    assert plan_of(large).key_groups == -(-estimate // BYTES_PER_KEY_GROUP) < 128
    assert plan_of(large, most=8).key_groups == 8  # at most max_parallelism (shuffle: 2)
    # no estimate (rows from a Python list): the most; without keys: one
    listed = spark.createDataFrame([(1, 2), (3, 4)], "k long, t long")
    assert plan_of(listed).key_groups == 128
    assert plan_of(listed, keyed=False).key_groups == 1
    assert not plan_of(listed, keyed=False).one_task  # (a size it does not know)
    assert not plan_of(large, keyed=False).one_task  # read in parallel, then one group
    result = (
        WindowedStream.from_dataframe(small, event_time="t")
        .key_by("k")
        .window(TumblingEventTimeWindows(10))
        .reduce(lambda a, b: b if b.t > a.t else a)
    )
    with result:  # one key group gives every key's windows
        got = {(r.k, r.window_start, r.t) for r in result.results.collect()}
    want = {
        (k, w, max(t for t in range(w, w + 10) if t % 7 == k))
        for w in range(0, 1000, 10)
        for k in range(7)
        if any(t % 7 == k for t in range(w, w + 10))
    }
    assert got == want
