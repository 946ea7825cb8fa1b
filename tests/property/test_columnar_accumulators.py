"""Streaming ``.agg`` columns of tumbling windows, sessions, hopping windows and KIP-450
windows on whole columns (:mod:`windowing.spark.columnar.accumulators`,
:mod:`windowing.spark.columnar.hopping_accumulators`, :mod:`windowing.spark.columnar.kip450`)
against the window operator running ``ColumnAggregates``: a key group's micro-batches, each
advancing the watermark and then adding rows of several keys; calls the columns leave go
through the operator, the state converted to its accumulator lists and back."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from tests.columnar_plans import columnar_plan
from windowing import OutputTag
from windowing.assigners import (
    EventTimeSessionWindows,
    SlidingDistinctAssigner,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from windowing.engine.encoding import open_state
from windowing.engine.exchange import CountedWindows
from windowing.functions import Aggregate, AggregationType, FieldAggregation, Reduce
from windowing.functions.columns import AggKind, ColumnAggregate, ColumnAggregates, ValueKind
from windowing.operator import KeyState, WindowOperator
from windowing.spark.columnar.accumulators import AggregateItems
from windowing.spark.columnar.core import (
    OpenWindows,
    decode_open_windows,
    encode_open_windows,
    key_state_of,
    open_windows_of,
    rows_needing_the_operator,
    step_open_windows,
)
from windowing.time import MAX_TIMESTAMP
from windowing.triggers import CountTrigger, PurgingTrigger
from windowing.windows import TimeWindow


class Rec(NamedTuple):
    k: str
    i: int
    v: int | None
    f: float | None
    b: bool | None


SCHEMA = pa.schema(
    [
        ("k", pa.string()),
        ("i", pa.int64()),
        ("v", pa.int64()),
        ("f", pa.float64()),
        ("b", pa.bool_()),
    ]
)
V, F, B = 2, 3, 4  # the argument positions

#: The aggregates the columns take: (kind, inputs, value kind).
MENU = [
    (AggKind.COUNT, (), ValueKind.OTHER),
    (AggKind.COUNT, (V,), ValueKind.INTEGRAL),
    (AggKind.COUNT, (V, F), ValueKind.INTEGRAL),
    (AggKind.COUNT_IF, (B,), ValueKind.ORDERED),
    (AggKind.SUM, (V,), ValueKind.INTEGRAL),
    (AggKind.AVG, (V,), ValueKind.INTEGRAL),
    (AggKind.MIN, (V,), ValueKind.INTEGRAL),
    (AggKind.MAX, (V,), ValueKind.INTEGRAL),
    (AggKind.MIN, (F,), ValueKind.FLOATING),
    (AggKind.MAX, (F,), ValueKind.FLOATING),
    (AggKind.BOOL_AND, (B,), ValueKind.ORDERED),
    (AggKind.BOOL_OR, (B,), ValueKind.ORDERED),
]


def function_of(picks: list[int], ansi: bool = True) -> ColumnAggregates:
    aggregates = tuple(
        ColumnAggregate(MENU[p][0], MENU[p][1], value=MENU[p][2], ansi=ansi, name=f"a{j}")
        for j, p in enumerate(picks)
    )
    return ColumnAggregates(aggregates, names=tuple(f"a{j}" for j in range(len(picks))))


def assigner_of(shape: str, size: int, offset: int, slide: int = 1) -> Any:
    """Sessions of gap ``size``, tumbling windows of ``size``, hopping windows of
    ``size + slide`` every ``slide`` (``offset`` within the slide), or KIP-450 windows of
    ``size``."""
    if shape == "session":
        return EventTimeSessionWindows(size)
    if shape == "kip450":
        return SlidingDistinctAssigner(size, grace=0)
    if shape.endswith("-hopping"):  # under a count trigger: windows of size every size / 3
        every = max(1, size // 3)
        return SlidingEventTimeWindows(size, every, offset % every)
    if shape == "hopping":
        return SlidingEventTimeWindows(size + slide, slide, offset % slide)
    return TumblingEventTimeWindows(size, offset % size)


def plan_of(
    fn: ColumnAggregates,
    size: int,
    offset: int,
    lateness: int,
    shape: str = "tumbling",
    slide: int = 1,
) -> Any:
    assigner = assigner_of(shape, size, offset, slide)
    plan = columnar_plan(
        assigner,
        Aggregate(fn),
        trigger_of(shape, slide),
        None,
        lateness,
        SCHEMA,
        streaming=True,
        keys=("k",),
        slicing=slicing_of(shape),
    )
    assert plan is not None and isinstance(plan.items, AggregateItems)
    return plan


def trigger_of(shape: str, slide: int) -> Any:
    """A count trigger of ``slide`` elements for the tumbling windows of ``"count"`` and the
    hopping ones of ``"count-hopping"`` (``"purging..."``: in a ``PurgingTrigger``), else
    the default trigger."""
    if shape.startswith("count"):
        return CountTrigger(slide)
    if shape.startswith("purging"):
        return PurgingTrigger(CountTrigger(slide))
    return None


def slicing_of(shape: str) -> bool | None:
    """Hopping windows as panes, even of an ``avg`` (whose sum of doubles makes the operator
    keep windows by default)."""
    return True if shape == "hopping" else None


def _value(x: Any) -> str:
    return f"{type(x).__name__}:{x!r}"  # NaN equals NaN; 1 and 1.0 differ


def _results(rows: list[tuple[str, int, dict[str, Any]]]) -> list[Any]:
    return sorted((k, s, sorted((n, _value(v)) for n, v in d.items())) for k, s, d in rows)


values = st.one_of(st.integers(-9, 9), st.none(), st.sampled_from([2**61, -(2**61), 2**52]))
floats = st.one_of(
    st.floats(-4, 4, allow_nan=False).map(lambda x: round(x, 1)),
    st.none(),
    st.sampled_from([math.nan, -0.0, math.inf]),
)


def rows_of(keys: str, times: Any, max_rows: int) -> Any:
    """Up to ``max_rows`` rows ``(key, time, v, f, b)`` of the ``keys``, at ``times``."""
    row = st.tuples(
        st.sampled_from(keys), times, values, floats, st.one_of(st.booleans(), st.none())
    )
    return st.lists(row, max_size=max_rows)


rows_strategy = rows_of("abc", st.integers(-30, 40), 10)


@settings(max_examples=800, deadline=None)
@example(  # windows of null values only: sum, avg, min, bool_and are null, counts 0
    picks=[4, 5, 6, 10, 1, 3],
    size=2,
    offset=0,
    lateness=0,
    ansi=True,
    calls=[(0, [("a", 0, None, None, None), ("a", 3, 1, None, None)]), (30, [])],
    shape="tumbling",
    slide=1,
)
@example(  # an integer sum beyond 64 bits under ANSI: the operator raises when it fires
    picks=[4],
    size=10,
    offset=0,
    lateness=0,
    ansi=True,
    calls=[(0, [("a", 0, 2**61, None, None)] * 4), (30, [])],
    shape="session",
    slide=1,
)
@example(  # ... and wraps without ANSI
    picks=[4, 5],
    size=10,
    offset=0,
    lateness=0,
    ansi=False,
    calls=[(0, [("a", 0, 2**61, None, None)] * 4), (30, [])],
    shape="session",
    slide=1,
)
@example(  # an avg whose sum of doubles rounds: the order of additions decides it
    picks=[5],
    size=10,
    offset=0,
    lateness=0,
    ansi=True,
    calls=[(0, [("a", 0, 2**53, None, None)] + [("a", 1, 1, None, None)] * 15), (30, [])],
    shape="tumbling",
    slide=1,
)
@example(  # sessions: rows of two calls in one session, one bridging two of them
    picks=[0, 4, 6],
    size=3,
    offset=0,
    lateness=0,
    ansi=True,
    calls=[
        (0, [("a", 0, 1, None, None), ("a", 10, 2, None, None)]),
        (0, [("a", 5, 3, None, None)]),
        (40, []),
    ],
    shape="session",
    slide=1,
)
@example(  # hopping: a window of panes of two calls, a pane dropped while a window fires
    picks=[0, 4, 6, 11],
    size=4,
    offset=1,
    lateness=0,
    ansi=True,
    calls=[
        (0, [("a", -20, 1, None, True), ("a", -17, 2, None, False)]),
        (3, [("a", -15, 5, None, None), ("b", -14, None, None, None)]),
        (20, []),
    ],
    shape="hopping",
    slide=2,
)
@example(  # KIP-450: in-order rows on columns over two calls, then a key out of order
    picks=[0, 4, 7],
    size=3,
    offset=0,
    lateness=2,
    ansi=True,
    calls=[
        (0, [("a", 7, 1, None, None), ("a", 9, 2, None, None), ("b", 8, 5, None, None)]),
        (1, [("a", 10, 3, None, None), ("a", 14, 4, None, None), ("b", 11, 6, None, None)]),
        (4, [("a", 15, 1, None, None), ("b", 10, 7, None, None)]),
        (30, []),
    ],
    shape="kip450",
    slide=1,
)
@given(
    shape=st.sampled_from(
        ["tumbling", "session", "hopping", "kip450", "count", "purging", "count-hopping"]
    ),
    slide=st.integers(1, 4),
    picks=st.lists(st.integers(0, len(MENU) - 1), min_size=1, max_size=5),
    size=st.integers(1, 6),
    offset=st.integers(-3, 3),
    lateness=st.sampled_from([0, 0, 1, 5, 13]),
    ansi=st.booleans(),
    calls=st.lists(st.tuples(st.integers(0, 12), rows_strategy), min_size=1, max_size=6),
)
def test_streaming_agg_calls_equal_the_operator(
    shape: str,
    slide: int,
    picks: list[int],
    size: int,
    offset: int,
    lateness: int,
    ansi: bool,
    calls: list[tuple[int, list[tuple[Any, ...]]]],
) -> None:
    """Tumbling windows, sessions, hopping windows or KIP-450 windows, every call: the fired
    windows' results, the late rows and the open windows equal the operator's, whichever of
    the columns and the operator computes the call, and the state survives its checkpoint
    encoding."""
    if shape == "kip450":
        size *= 3  # windows spanning calls
    check_calls(shape, slide, picks, size, offset, lateness, ansi, calls)


kip450_calls = st.lists(
    st.tuples(
        st.integers(0, 40),
        # within the call's 25 ms, one in ten anywhere from 40 ms before to after
        rows_of(
            "abc",
            st.tuples(st.integers(0, 9), st.integers(0, 24), st.integers(-40, 40)).map(
                lambda x: x[2] if x[0] == 0 else x[1]
            ),
            14,
        ),
    ),
    min_size=2,
    max_size=10,
)


@settings(max_examples=400, deadline=None)
@given(
    picks=st.lists(st.integers(0, len(MENU) - 1), min_size=1, max_size=4),
    size=st.integers(0, 24),
    lateness=st.sampled_from([0, 0, 3, 10, 40]),
    calls=kip450_calls,
)
@example(  # a record exactly size after the key's latest: its left window seeded from the
    # latest's left window, which starts exactly size before it
    picks=[0, 4],
    size=10,
    lateness=0,
    calls=[(0, []), (0, [("a", 20, 1, None, None)]), (0, [("a", 5, 2, None, None)]), (90, [])],
)
def test_kip450_streams_equal_kafkas_algorithm(
    picks: list[int], size: int, lateness: int, calls: list[tuple[int, list[tuple[Any, ...]]]]
) -> None:
    """KIP-450 windows over longer streams whose calls mostly follow each other in time (rows
    of a call 25 ms after the last call's, give or take): each call on columns where every
    key's rows come after its store and the watermark, else in the operator (the state
    converting each way), equals Kafka's algorithm in the operator."""
    check_calls("kip450", 1, picks, size, 0, lateness, True, calls)


counted_calls = st.lists(
    st.tuples(st.integers(0, 8), rows_of("ab", st.integers(-25, 25), 12)),
    min_size=2,
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(
    purging=st.booleans(),
    hopping=st.booleans(),
    every=st.integers(1, 5),
    picks=st.lists(st.integers(0, len(MENU) - 1), min_size=1, max_size=4),
    size=st.integers(10, 40),
    lateness=st.sampled_from([0, 5, 30]),
    calls=counted_calls,
)
def test_count_triggers_over_many_rows_of_few_windows(
    purging: bool,
    hopping: bool,
    every: int,
    picks: list[int],
    size: int,
    lateness: int,
    calls: list[tuple[int, list[tuple[Any, ...]]]],
) -> None:
    """Tumbling or hopping windows under a count trigger, many rows of two keys in few
    windows per call (several firings of a window in one call, counts carried from call to
    call): each call on columns equals the operator's."""
    shape = ("purging" if purging else "count") + ("-hopping" if hopping else "")
    check_calls(shape, every, picks, size, 0, lateness, True, calls)


def check_calls(
    shape: str,
    slide: int,
    picks: list[int],
    size: int,
    offset: int,
    lateness: int,
    ansi: bool,
    calls: list[tuple[int, list[tuple[Any, ...]]]],
) -> None:
    """Run ``calls`` (each: the watermark's advance, then rows ``(key, time, v, f, b)``)
    through the operator and through the columns (the operator where they cannot), and
    compare every call."""
    fn = function_of(picks, ansi)
    plan = plan_of(fn, size, offset, lateness, shape, slide)
    items: AggregateItems = plan.items
    assigner = assigner_of(shape, size, offset, slide)
    tag = OutputTag("late")

    def operator() -> WindowOperator:
        return WindowOperator(
            assigner,
            Aggregate(fn),
            trigger=trigger_of(shape, slide),
            allowed_lateness=lateness,
            late_output_tag=tag,
            slicing=slicing_of(shape),
        )

    def operator_call(
        op: WindowOperator, states: dict[str, KeyState], records: list[tuple[Rec, int]]
    ) -> tuple[list[Any], list[int]]:
        op.set_clocks(watermark=watermark)
        op.output.clear()
        op.side_outputs.clear()
        for key in sorted(states):
            op.fire_timers(key, states[key])
        for key in sorted({r.k for r, _ in records}):
            ks = states.get(key) or op.new_key_state()
            mine = [(r, t, key) for r, t in records if r.k == key]
            states[key] = op.process_key_elements(key, ks, mine)
        results = [(w.key, w.window.start, w.value) for w in op.output]
        return _results(results), sorted(e.value.i for e in op.side_outputs.get(tag, []))

    reference, columnar = operator(), operator()
    ref_states: dict[str, KeyState] = {}
    state: OpenWindows | dict[str, KeyState] | None = None
    schema = items.items_schema(SCHEMA)
    watermark = -20
    n = 0
    for call, (advance, raw) in enumerate(calls):
        watermark += advance
        if shape == "kip450":  # calls mostly in time order, a key's rows at times not
            raw = [(k, 25 * call + t, *r) for k, t, *r in raw]
        raw = sorted(raw, key=lambda r: (r[0], r[1]))  # each key's rows in event-time order
        records = [(Rec(k, n + j, v, f, b), t) for j, (k, t, v, f, b) in enumerate(raw)]
        n += len(records)
        try:
            expected, expected_late = operator_call(reference, ref_states, records)
        except ArithmeticError:  # a sum that overflows under ANSI: the columns never decide it
            event("overflow")
            with pytest.raises(ArithmeticError):
                run_columnar = state if isinstance(state, dict) else {}
                if isinstance(state, OpenWindows):
                    run_columnar = per_key(plan, columnar, state)
                operator_call(columnar, run_columnar, records)
            return
        expected_windows = sum(len(reference.windows_of(ks)) for ks in ref_states.values())

        rows = pa.Table.from_pylist([r._asdict() for r, _ in records], schema=SCHEMA)
        times = np.array([t for _, t in records], np.int64)
        if isinstance(state, dict):  # back to columns where every key converts
            state = to_columns(plan, columnar, state, items, schema)
        step = None
        if not isinstance(state, dict):
            needs = rows_needing_the_operator(plan, watermark, rows, pa.chunked_array([times]))
            if not needs.any():
                codes = ({"a": 0, "b": 1, "c": 2}, rows.column("k").to_pylist())
                held = [] if state is None else state.rows.column("k").to_pylist()
                state_codes = np.array([codes[0][k] for k in held], np.int64)
                row_codes = np.array([codes[0][k] for k in codes[1]], np.int64)
                step = step_open_windows(
                    plan, state, watermark, rows, times, (state_codes, row_codes)
                )
        if step is not None:
            event(f"{shape}: columns" + (", rows" if records and state is not None else ""))
            fired = step.fired_rows
            got = []
            if fired is not None:
                keys = fired.column("k").to_pylist()
                outputs = {name: fired.column(name).to_pylist() for name in items.names}
                for j, start in enumerate(step.fired_starts.tolist()):
                    got.append((keys[j], start, {m: outputs[m][j] for m in items.names}))
            got_late = sorted(rows.column("i")[j].as_py() for j in step.late.tolist())
            state = step.state
            windows = 0
            if state is not None:
                held = state.rows.column("k").to_pylist()
                windows = state.window_count(plan, np.array([ord(k) for k in held], np.int64))
            if state is not None:
                plain, _ = open_state(encode_open_windows(state))
                again = decode_open_windows(plain)
                assert again is not None
                assert repr(again.rows.to_pylist()) == repr(state.rows.to_pylist())
            got = _results(got)
        else:
            event(f"{shape}: operator")
            states = per_key(plan, columnar, state) if isinstance(state, OpenWindows) else state
            states = states or {}
            got, got_late = operator_call(columnar, states, records)
            windows = sum(len(columnar.windows_of(ks)) for ks in states.values())
            state = states
        assert got == expected, (got, expected, watermark)
        assert got_late == expected_late
        assert windows == expected_windows


def per_key(plan: Any, op: WindowOperator, state: OpenWindows) -> dict[str, KeyState]:
    """The operator's state of each key of a group's columnar windows."""
    keys = state.rows.column("k").to_pylist()
    out = {}
    for key in sorted(set(keys)):
        index = np.flatnonzero(np.array(keys, object) == key)
        out[key] = key_state_of(plan, op, state.take(index))
    return out


def to_columns(
    plan: Any, op: WindowOperator, states: dict[str, KeyState], items: AggregateItems, schema: Any
) -> OpenWindows | dict[str, KeyState] | None:
    """The keys' operator states as one columnar state, or as they are when one does not
    convert or they have fired up to different watermarks."""
    parts = []
    for key in sorted(states):
        ks = states[key]
        if ks.is_empty():
            continue

        def encode(accumulators: list[Any], key: str = key) -> Any:
            return items.encode(accumulators, [pa.array([key] * len(accumulators))], schema)

        found = open_windows_of(plan, op, ks, encode)
        if found is None:
            return states
        parts.append(found)
    if not parts:
        return None
    if len({p.fired_upto for p in parts}) > 1:
        return states  # one state holds keys fired up to one watermark (the runtime's rule)
    return OpenWindows.concat(parts)


def test_only_exact_aggregates_run_on_columns() -> None:
    """A float sum or avg, count(DISTINCT), first / last, another trigger or an evictor keep
    the operator; hopping windows run on columns where the operator keeps panes (not with
    an avg, a sum of doubles, unless ``slicing=True``; not with ``slicing=False``); a batch
    replay never takes the accumulator columns."""
    float_sum = ColumnAggregates(
        (ColumnAggregate(AggKind.SUM, (F,), value=ValueKind.FLOATING),), names=("s",)
    )
    distinct = ColumnAggregates(
        (ColumnAggregate(AggKind.COUNT, (V,), distinct=True),), names=("d",)
    )
    for fn in (float_sum, distinct):
        spec = Aggregate(fn)
        assigner = TumblingEventTimeWindows(10)
        assert columnar_plan(assigner, spec, None, None, 0, SCHEMA, streaming=True) is None
    fn = function_of([0, 4])
    hopping = SlidingEventTimeWindows(10, 5)
    plan = columnar_plan(hopping, Aggregate(fn), None, None, 0, SCHEMA, streaming=True)
    assert plan is not None and "pane of 5 ms" in plan.describe()
    off = columnar_plan(
        hopping, Aggregate(fn), None, None, 0, SCHEMA, streaming=True, slicing=False
    )
    assert off is None
    mean = function_of([0, 5])
    assert columnar_plan(hopping, Aggregate(mean), None, None, 0, SCHEMA, streaming=True) is None
    sliced = columnar_plan(
        hopping, Aggregate(mean), None, None, 0, SCHEMA, streaming=True, slicing=True
    )
    assert sliced is not None and sliced.items.function is mean
    gaps = SlidingEventTimeWindows(5, 10)
    assert columnar_plan(gaps, Aggregate(fn), None, None, 0, SCHEMA, streaming=True) is None
    tumbling = TumblingEventTimeWindows(10)
    assert columnar_plan(tumbling, Aggregate(fn), None, None, 0, SCHEMA) is None
    plan = plan_of(fn, 10, 0, 0)
    assert "count, sum" in plan.describe()


def test_window_all_on_columns() -> None:
    """A non-keyed ``.agg`` (no key columns in the items): the windows' results equal the
    operator's."""
    fn = function_of([0, 4, 5, 7])
    assigner = TumblingEventTimeWindows(10)
    plan = columnar_plan(assigner, Aggregate(fn), None, None, 0, SCHEMA, streaming=True)
    assert plan is not None and plan.items.keys == ()
    records = [Rec("a", i, v, None, None) for i, v in enumerate([3, None, 5, 7])]
    times = np.array([1, 2, 12, 15], np.int64)
    rows = pa.Table.from_pylist([r._asdict() for r in records], schema=SCHEMA)
    step = step_open_windows(plan, None, -100, rows, times)
    assert step is not None and step.state is not None
    assert step.state.rows.column_names == [
        "__pw_acc_0",
        "__pw_acc_1",
        "__pw_acc_2",
        "__pw_acc_2_n",
        "__pw_acc_3",
    ]
    fired = step_open_windows(plan, step.state, 100, None, None)
    assert fired is not None and fired.fired_rows is not None
    op = WindowOperator(assigner, Aggregate(fn))
    ks = op.new_key_state()
    ks = op.process_key_elements(
        None, ks, [(r, int(t), None) for r, t in zip(records, times, strict=True)]
    )
    op.set_clocks(watermark=100)
    op.fire_timers(None, ks)
    assert fired.fired_rows.to_pylist() == [w.value for w in op.output]
    assert fired.fired_rows.to_pylist() == [
        {"a0": 2, "a1": 3, "a2": 3.0, "a3": 3},
        {"a0": 2, "a1": 12, "a2": 6.0, "a3": 7},
    ]


def test_states_of_two_argument_types_concatenate() -> None:
    """A state of an earlier run whose ``max`` argument was an int, and one of a bigint
    argument: one group state of bigint accumulators."""
    narrow = OpenWindows(
        np.array([0]), pa.table({"k": ["a"], "__pw_acc_0": pa.array([1], pa.int32())}), 5
    )
    wide = OpenWindows(np.array([0]), pa.table({"k": ["b"], "__pw_acc_0": pa.array([2**40])}), 5)
    joined = OpenWindows.concat([narrow, wide])
    assert joined.rows.column("__pw_acc_0").type == pa.int64()
    assert joined.rows.column("__pw_acc_0").to_pylist() == [1, 2**40]


@pytest.mark.parametrize("t", [6 * 10**18, -6 * 10**18, 4 * 10**18])
def test_hopping_times_beyond_the_pane_grid_go_to_the_operator(t: int) -> None:
    """Hopping windows (``.agg`` columns and a built-in sum) fire window starts within
    ``±MAX_TIMESTAMP / 2``: a row whose windows reach beyond, or the margin of it, runs the
    operator, which fires its windows; a row well inside takes the columns."""
    hopping = SlidingEventTimeWindows(10, 5)
    fn = function_of([0, 4])
    plans = [
        columnar_plan(hopping, Aggregate(fn), None, None, 0, SCHEMA, streaming=True),
        columnar_plan(
            hopping,
            Reduce(FieldAggregation(AggregationType.SUM, "v")),
            None,
            None,
            0,
            SCHEMA,
            streaming=True,
        ),
    ]
    rows = pa.Table.from_pylist([Rec("a", 0, 7, None, None)._asdict()], schema=SCHEMA)
    times = np.array([t], np.int64)
    far = abs(t) > MAX_TIMESTAMP // 2 - 100
    for plan in plans:
        assert plan is not None
        needs = rows_needing_the_operator(plan, t - 100, rows, pa.chunked_array([times]))
        assert needs.tolist() == [far]
        step = step_open_windows(plan, None, t - 100, rows, times)
        if far:
            assert step is None
            continue
        assert step is not None and step.state is not None
        fired = step_open_windows(plan, step.state, t + 100, None, None)
        assert fired is not None and len(fired.fired_starts) == 2  # both windows of the row


def test_count_firings_come_in_the_order_of_their_rows() -> None:
    """A key's rows in arrival order, not event-time order (a streaming job with an
    ``arrival_order``): the columns emit its count firings in the order of the rows that
    fire them, as the operator does."""
    records = [
        (Rec("a", 0, 1, None, None), 15),
        (Rec("a", 1, 2, None, None), 16),  # fires [10, 20)
        (Rec("a", 2, 3, None, None), 0),
        (Rec("a", 3, 4, None, None), 1),  # then [0, 10)
    ]
    got, expected = _firings_both_ways("count", 10, 2, records)
    assert got == expected == [(10, 3), (0, 7)]


def _firings_both_ways(
    kind: str, size: int, count: int, records: list[tuple[Rec, int]]
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Key ``a``'s ``records`` (with their event times) in one call under
    ``CountTrigger(count)``: the firings (window start, sum of ``a0``) on columns, and the
    operator's."""
    fn = function_of([4])
    plan = plan_of(fn, size, 0, 0, kind, count)
    trigger = trigger_of("count", count)
    op = WindowOperator(assigner_of(kind, size, 0), Aggregate(fn), trigger=trigger)
    op.set_clocks(watermark=-20)
    op.process_key_elements("a", op.new_key_state(), [(r, t, "a") for r, t in records])
    rows = pa.Table.from_pylist([r._asdict() for r, _ in records], schema=SCHEMA)
    step = step_open_windows(plan, None, -20, rows, np.array([t for _, t in records]), None)
    assert step is not None and step.fired_rows is not None
    starts, sums = step.fired_starts.tolist(), step.fired_rows.column("a0").to_pylist()
    expected = [(w.window.start, w.value["a0"]) for w in op.output]
    return list(zip(starts, sums, strict=True)), expected


def test_a_count_the_trigger_never_leaves_keeps_the_operator() -> None:
    """A window whose count is at or above the trigger's (a state of another count) does not
    move to the columns, which count modulo the trigger's."""
    fn = function_of([4])
    plan = plan_of(fn, 10, 0, 0, "count", 3)
    op = WindowOperator(assigner_of("count", 10, 0), Aggregate(fn), trigger=trigger_of("count", 3))
    schema = plan.items.items_schema(SCHEMA)

    def encode(accumulators: list[Any]) -> Any:
        return plan.items.encode(accumulators, [pa.array(["a"] * len(accumulators))], schema)

    for count, converts in ((4, False), (3, False), (2, True)):
        windows = CountedWindows((TimeWindow(0, 10),), ([5],), (count,))
        ks = op.import_counted_windows(windows)
        assert (open_windows_of(plan, op, ks, encode) is not None) == converts


def test_a_row_fires_its_hopping_windows_latest_start_first() -> None:
    """Under ``CountTrigger(1)`` a row fires every hopping window holding it, in the order the
    assigner gives them (Flink's: the latest start first), on columns as in the operator."""
    records = [(Rec("a", 0, 1, None, None), 12), (Rec("a", 1, 2, None, None), 13)]
    got, expected = _firings_both_ways("count-hopping", 9, 1, records)
    assert got == expected
    assert expected == [(12, 1), (9, 1), (6, 1), (12, 3), (9, 3), (6, 3)]
