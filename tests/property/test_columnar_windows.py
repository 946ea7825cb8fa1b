"""Built-in aggregations of hopping and session windows on whole columns
(``windowing/spark/columnar/hopping.py``, ``columnar_sessions.py``) against the window
operator: the batch replay (several keys, event-time order, fired at the end of input) and
streaming calls of one key (watermark advances, allowed lateness, late rows, the state's
timers and window count after each call, the operator taking the calls the columns leave
to it and handing the state back)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from tests.columnar_plans import columnar_plan
from windowing import OutputTag
from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    TumblingEventTimeWindows,
)
from windowing.engine.encoding import open_state
from windowing.functions import AggregationType, FieldAggregation, Reduce
from windowing.operator import KeyState, WindowOperator
from windowing.spark.columnar.core import (
    FieldItems,
    OpenWindows,
    columnar_results,
    decode_open_windows,
    encode_open_windows,
    key_state_of,
    keys_needing_the_operator,
    open_windows_of,
    rows_needing_the_operator,
    step_open_windows,
    usable,
)
from windowing.spark.columnar.hopping import HoppingAggregation
from windowing.spark.columnar.ranges import keyed_search, range_pick, range_reduce
from windowing.spark.columnar.sessions import SessionAggregation
from windowing.spark.columnar.tumbling import TumblingAggregation
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

ints = st.integers(-4, 4)
floats = st.sampled_from([-2.5, 0.0, 1.0, 3.5, float("inf"), float("-inf")])


def assigner_of(shape: str, a: int, b: int, offset: int) -> Any:
    """Hopping windows of size ``a * b`` (plus a remainder) every ``b``, or sessions of gap
    ``a``."""
    if shape == "session":
        return EventTimeSessionWindows(a)
    size = b * a + (offset % b if a < 4 else 0)
    size = max(size, b + 1)
    return HoppingEventTimeWindows(size, b, offset=max(1 - b, min(b - 1, offset)))


shapes = st.sampled_from(["hopping", "hopping", "session"])


# ---------------------------------------------------------------------------- batch
@settings(max_examples=400, deadline=None)
@given(
    shape=shapes,
    kind=st.sampled_from(list(AggregationType)),
    first=st.booleans(),
    a=st.integers(1, 5),
    b=st.integers(1, 5),
    offset=st.integers(-4, 4),
    use_floats=st.booleans(),
    slicing=st.sampled_from([None, True]),
    keys=st.integers(1, 3),
    data=st.data(),
)
def test_batch_results_equal_the_operator(
    shape: str,
    kind: AggregationType,
    first: bool,
    a: int,
    b: int,
    offset: int,
    use_floats: bool,
    slicing: bool | None,
    keys: int,
    data: Any,
) -> None:
    """Rows of several keys sorted as the replay sorts them (key, then event time): the
    windows, the rows their results are taken from, and the aggregated values are the
    operator's (per-window state in arrival order, or panes in time order with
    ``slicing=True``: in event-time order both are the same)."""
    rows = data.draw(
        st.lists(
            st.tuples(
                st.integers(0, keys - 1), st.integers(-40, 40), floats if use_floats else ints
            ),
            min_size=1,
            max_size=40,
        )
    )
    rows.sort(key=lambda r: (r[0], r[1]))
    assigner = assigner_of(shape, a, b, offset)
    fn = FieldAggregation(kind, "v", first)
    schema = pa.schema([("v", pa.float64() if use_floats else pa.int64())])
    plan = columnar_plan(assigner, Reduce(fn), None, None, 0, schema)
    if use_floats and kind is AggregationType.SUM:
        assert plan is None  # a float sum depends on the order of additions
        return
    assert plan is not None
    times = pa.chunked_array([pa.array([t for _, t, _ in rows], pa.int64())])
    column = pa.chunked_array([pa.array([v for _, _, v in rows], schema.field("v").type)])
    codes = np.array([k for k, _, _ in rows], np.int64)
    found = columnar_results(plan, times, column, codes if keys > 1 else None)
    assert found is not None
    harness = WindowOperatorHarness(assigner, fn, slicing=slicing)
    harness.process_elements([({"i": i, "v": v}, t, k) for i, (k, t, v) in enumerate(rows)])
    harness.process_watermark(MAX_TIMESTAMP)
    expected = sorted(
        (r.key, r.window.start, r.window.end, r.value["i"], r.value["v"])
        for r in harness.extract_output()
    )
    picked = found.rows.tolist()
    values = (
        [rows[i][2] for i in picked] if found.field_values is None else found.field_values.tolist()
    )
    got = [
        (rows[i][0], s, e, i, v)
        for s, e, i, v in zip(
            found.starts.tolist(), found.ends.tolist(), picked, values, strict=True
        )
    ]
    assert sorted(got) == expected


def test_the_plans_of_other_shapes() -> None:
    """Hopping windows of ``slide == size`` are tumbling ones; ``slide > size`` (rows in no
    window) and, in streaming, ``slicing=True`` (panes in time order) keep the operator;
    dynamic gaps keep it too."""
    spec = Reduce(FieldAggregation(AggregationType.SUM, "v"))
    assert isinstance(
        columnar_plan(HoppingEventTimeWindows(10, 10, offset=3), spec, None, None),
        TumblingAggregation,
    )
    assert isinstance(
        columnar_plan(HoppingEventTimeWindows(10, 5), spec, None, None), HoppingAggregation
    )
    assert columnar_plan(HoppingEventTimeWindows(5, 10), spec, None, None) is None
    sliced = HoppingEventTimeWindows(10, 5)
    assert columnar_plan(sliced, spec, None, None, streaming=True, slicing=True) is None
    assert columnar_plan(sliced, spec, None, None, streaming=False, slicing=True) is not None
    assert isinstance(
        columnar_plan(EventTimeSessionWindows(5), spec, None, None), SessionAggregation
    )
    dynamic = EventTimeSessionWindows.with_dynamic_gap(lambda e: 5)
    assert columnar_plan(dynamic, spec, None, None) is None
    assert columnar_plan(TumblingEventTimeWindows(5), spec, None, None) is not None


def test_what_the_columns_cannot_decide_is_left_to_the_operator() -> None:
    spec = Reduce(FieldAggregation(AggregationType.SUM, "v"))

    def run(plan: Any, times: list[int], values: list[Any], arrow_type: Any = None) -> Any:
        return columnar_results(
            plan,
            pa.chunked_array([pa.array(times, pa.int64())]),
            pa.chunked_array([pa.array(values, arrow_type)]),
        )

    for assigner in (HoppingEventTimeWindows(10, 2), EventTimeSessionWindows(5)):
        plan = columnar_plan(assigner, spec, None, None)
        assert plan is not None
        assert run(plan, [1, 2], [1, 2]) is not None
        assert run(plan, [1, 2], [1, None]) is None  # nulls
        assert run(plan, [1, 2], [2**62, 2**62]) is None  # the int64 sum would overflow
        assert run(plan, [1, 2], [2**30, 2**30], pa.int32()) is None  # does not fit the column
        assert run(plan, [MIN_TIMESTAMP + 5, 2], [1, 2]) is None  # near the start of time
        assert run(plan, [1, MAX_TIMESTAMP - 5], [1, 2]) is None  # near the end of time
    # keys spread over most of the time line: each row's five windows, alone
    wide = columnar_plan(HoppingEventTimeWindows(10, 2), spec, None, None)
    assert wide is not None
    low, high = MIN_TIMESTAMP // 2, MAX_TIMESTAMP // 2
    times = pa.chunked_array([pa.array([low, high] * 2, pa.int64())])
    values = pa.chunked_array([pa.array([1, 2, 3, 4])])
    found = columnar_results(wide, times, values, np.array([0, 0, 1, 1]))
    assert found is not None and found.field_values is not None
    assert found.field_values.tolist() == [1] * 5 + [2] * 5 + [3] * 5 + [4] * 5


# ---------------------------------------------------------------------------- streaming
class Rec(NamedTuple):
    """An input record: its position in the whole input and the aggregated field."""

    i: int
    v: Any


_SCHEMAS = {
    False: pa.schema([("i", pa.int64()), ("v", pa.int64())]),
    True: pa.schema([("i", pa.int64()), ("v", pa.float64())]),
}


def _records(table: pa.Table) -> list[Rec]:
    return [Rec(*r) for r in zip(*(table.column(n).to_pylist() for n in Rec._fields), strict=True)]


def _encoder(schema: pa.Schema) -> Any:
    def encode(records: list[Rec]) -> pa.Table | None:
        if any(not hasattr(r, "i") for r in records):
            return None  # not an input record (Rec, or the Row the conversions give)
        try:
            return pa.table(
                {
                    n: pa.array([getattr(r, n) for r in records], schema.field(n).type)
                    for n in Rec._fields
                },
                schema=schema,
            )
        except (pa.ArrowException, OverflowError, TypeError):
            return None

    return encode


calls_strategy = st.lists(
    st.tuples(
        st.integers(0, 12),  # watermark advance
        st.lists(st.tuples(st.integers(-30, 40), st.one_of(ints, st.none())), max_size=8),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=500, deadline=None)
@example(
    shape="session",
    kind=AggregationType.SUM,
    first=True,
    a=3,
    b=1,
    offset=0,
    lateness=0,
    use_floats=False,
    nulls=False,
    in_time_order=True,
    calls=[(0, [(0, 1), (10, 2)]), (0, [(5, 3)]), (30, [])],
)  # a row bridging two sessions of an earlier call: Flink's merge order, the operator
@given(
    shape=shapes,
    kind=st.sampled_from(list(AggregationType)),
    first=st.booleans(),
    a=st.integers(1, 5),
    b=st.integers(1, 4),
    offset=st.integers(-3, 3),
    lateness=st.sampled_from([0, 0, 1, 5, 13]),
    use_floats=st.booleans(),
    nulls=st.booleans(),
    in_time_order=st.sampled_from([True, True, False]),
    calls=calls_strategy,
)
def test_streaming_calls_equal_the_operator(
    shape: str,
    kind: AggregationType,
    first: bool,
    a: int,
    b: int,
    offset: int,
    lateness: int,
    use_floats: bool,
    nulls: bool,
    in_time_order: bool,
    calls: list[tuple[int, list[tuple[int, Any]]]],
) -> None:
    """A key's micro-batches: each call advances the watermark, then adds rows in replay
    order (event time, or an arrival order). The columnar steps (the operator taking the
    calls they leave to it, through the state conversions) give the operator's results,
    late rows, next timer and open windows after every call, and the state survives its
    encoding."""
    assigner = assigner_of(shape, a, b, offset)
    fn = FieldAggregation(kind, "v", first)
    schema = _SCHEMAS[use_floats]
    plan = columnar_plan(assigner, Reduce(fn), None, None, lateness, streaming=True)
    assert plan is not None
    encode = _encoder(schema)
    tag = OutputTag("late")

    def operator() -> WindowOperator:
        return WindowOperator(assigner, Reduce(fn), allowed_lateness=lateness, late_output_tag=tag)

    def operator_call(
        op: WindowOperator, ks: KeyState, records: list[tuple[Rec, int]]
    ) -> tuple[list[tuple[int, int, Any]], list[int], KeyState]:
        op.set_clocks(watermark=watermark)
        op.output.clear()
        op.side_outputs.clear()
        op.fire_timers("k", ks)
        ks = op.process_key_elements("k", ks, [(r, t, "k") for r, t in records])
        results = [(w.window.start, w.window.end, w.value) for w in op.output]
        return results, [e.value.i for e in op.side_outputs.get(tag, [])], ks

    reference, columnar = operator(), operator()
    ref_ks = reference.new_key_state()
    state: Any = None  # OpenWindows, a KeyState (after an operator call), or None
    watermark = -20
    n = 0
    for advance, raw in calls:
        watermark += advance
        if in_time_order:
            raw = sorted(raw, key=lambda r: r[0])
        records = []
        for t, v in raw:
            value = None if v is None and nulls else (0 if v is None else v)
            if use_floats and value is not None:
                value = float(value) / 2
            records.append((Rec(n, value), t))
            n += 1
        expected, expected_late, ref_ks = operator_call(reference, ref_ks, records)
        expected_due = ref_ks.next_event_time()
        expected_windows = len(reference.windows_of(ref_ks))

        rows = pa.table(
            {
                "i": [r.i for r, _ in records],
                "v": pa.array([r.v for r, _ in records], schema.field("v").type),
            },
            schema=schema,
        )
        times = np.array([t for _, t in records], np.int64)
        open_windows = state
        if isinstance(state, KeyState):
            open_windows = (
                None if state.is_empty() else open_windows_of(plan, columnar, state, encode)
            )
            if open_windows is None and not state.is_empty():
                open_windows = False
        step = None
        if open_windows is not False:
            needs = rows_needing_the_operator(plan, watermark, rows, pa.chunked_array([times]))
            zeros = np.zeros(len(open_windows or ()), np.int64)
            keys = keys_needing_the_operator(
                plan, open_windows or None, zeros, watermark, times, np.zeros(len(times), np.int64)
            )
            step = step_open_windows(plan, open_windows or None, watermark, rows, times)
            if keys.any():
                assert step is None  # the keys the group call hands to the operator
            in_group = isinstance(state, OpenWindows) and usable(kind, state.rows.column("v"))
            if not (needs.any() or keys.any()) and in_group:
                assert step is not None  # the group call's windows and rows: on columns
        if step is not None:
            event(f"{shape}: columns")
            got = [
                (s, e, r)
                for s, e, r in zip(
                    step.fired_starts.tolist(),
                    step.fired_ends.tolist(),
                    _records(step.fired_rows) if step.fired_rows is not None else [],
                    strict=True,
                )
            ]
            got_late = [rows.column("i")[j].as_py() for j in step.late.tolist()]
            state = step.state
            due = None if state is None else state.next_event_time(plan)
            windows = 0 if state is None else state.window_count(plan)
            if state is not None:  # the checkpoint's encoding
                plain, _ = open_state(encode_open_windows(state))
                again = decode_open_windows(plain)
                assert again is not None and again.kind == state.kind
                assert again.next_event_time(plan) == due
                assert _records(again.rows) == _records(state.rows)
        else:
            event(f"{shape}: operator")
            ks = state
            if isinstance(state, OpenWindows):
                ks = key_state_of(plan, columnar, state)
            elif state is None:
                ks = columnar.new_key_state()
            got, got_late, ks = operator_call(columnar, ks, records)
            due = ks.next_event_time()
            windows = len(columnar.windows_of(ks))
            state = ks
        assert _canonical(got) == _canonical(expected)
        assert got_late == expected_late
        assert due == expected_due
        assert windows == expected_windows


def _canonical(results: list[tuple[int, int, Any]]) -> list[tuple[int, int, Any]]:
    return [(s, e, (r.i, repr(r.v))) for s, e, r in results]


def test_a_bridging_row_leaves_the_key_to_the_operator() -> None:
    """Sessions ``[0, 5)`` and ``[10, 15)`` of an earlier call: a row at 5 touches both, and
    Flink merges their contents in its hash-set order, so the key's call is the operator's."""
    plan = SessionAggregation(FieldItems(AggregationType.SUM, "v", True), 5)
    schema = _SCHEMAS[False]
    first = step_open_windows(
        plan, None, -100, pa.table({"i": [0, 1], "v": [1, 2]}, schema=schema), np.array([0, 10])
    )
    assert first is not None and first.state is not None
    assert first.state.starts.tolist() == [0, 10]
    assert first.state.extra["ends"].tolist() == [5, 15]
    bridge = pa.table({"i": [2], "v": [3]}, schema=schema)
    assert step_open_windows(plan, first.state, -100, bridge, np.array([5])) is None
    keys = keys_needing_the_operator(
        plan, first.state, np.zeros(2, np.int64), -100, np.array([5]), np.zeros(1, np.int64)
    )
    assert keys.tolist() == [True]
    extend = step_open_windows(plan, first.state, -100, bridge, np.array([15]))
    assert extend is not None and extend.state is not None
    assert extend.state.starts.tolist() == [0, 10]
    assert extend.state.extra["ends"].tolist() == [5, 20]
    assert extend.state.rows.column("v").to_pylist() == [1, 5]


# ---------------------------------------------------------------------------- kernels
@settings(max_examples=300, deadline=None)
@given(data=st.data(), n=st.integers(1, 40), first=st.booleans())
def test_range_kernels(data: Any, n: int, first: bool) -> None:
    values = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)))
    order = np.array(data.draw(st.permutations(range(n))))
    bounds = data.draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, n)), min_size=1, max_size=20)
    )
    lo = np.array([min(x, y - 1) for x, y in bounds])
    hi = np.array([max(x + 1, y) for x, y in bounds])

    def better(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        vi, vj = values[i], values[j]
        return (vj < vi) | (
            (vj == vi) & ((order[j] < order[i]) if first else (order[j] > order[i]))
        )

    picks = range_pick(n, better, lo, hi)
    mins = range_reduce(values, np.minimum, lo, hi)
    for p, m, x, y in zip(picks.tolist(), mins.tolist(), lo.tolist(), hi.tolist(), strict=True):
        best = min(range(x, y), key=lambda k: (values[k], order[k] if first else -order[k]))
        assert p == best
        assert m == values[x:y].min()


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_keyed_search(data: Any) -> None:
    pairs = sorted(data.draw(st.lists(st.tuples(st.integers(0, 3), st.integers(-50, 50)))))
    queries = data.draw(st.lists(st.tuples(st.integers(0, 3), st.integers(-60, 60))))
    a_codes = np.array([c for c, _ in pairs], np.int64)
    a = np.array([v for _, v in pairs], np.int64)
    q_codes = np.array([c for c, _ in queries], np.int64)
    q = np.array([v for _, v in queries], np.int64)
    for side in ("left", "right"):
        found = keyed_search(a_codes, a, q_codes, q, side)
        assert found is not None
        import bisect

        search = bisect.bisect_left if side == "left" else bisect.bisect_right
        assert found.tolist() == [search(pairs, query) for query in queries]
    wide = keyed_search(
        np.array([0, 1]),
        np.array([MIN_TIMESTAMP + 1, 0]),
        np.array([1]),
        np.array([MAX_TIMESTAMP - 1]),
        "left",
    )
    assert wide is None  # spans too wide to map to one int64: the caller falls back
