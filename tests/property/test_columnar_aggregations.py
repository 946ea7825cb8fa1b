"""Built-in aggregations computed on whole columns (``windowing/spark/columnar/core.py``) against
the window operator replaying the same sorted rows to the end of input."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.columnar_plans import columnar_plan
from windowing import OutputTag
from windowing.assigners import TumblingEventTimeWindows
from windowing.functions import AggregationType, FieldAggregation, Reduce
from windowing.operator import KeyState, WindowOperator
from windowing.spark.columnar.core import (
    OpenWindows,
    columnar_results,
    key_state_of,
    open_windows_of,
    step_open_windows,
)
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

ints = st.integers(-4, 4)
floats = st.sampled_from([-2.5, -0.0, 0.0, 1.0, 3.5, float("inf"), float("-inf")])


@settings(max_examples=300)
@given(
    kind=st.sampled_from(list(AggregationType)),
    first=st.booleans(),
    size=st.integers(1, 15),
    offset=st.integers(-14, 14),
    use_floats=st.booleans(),
    data=st.data(),
)
def test_columnar_results_equal_the_operator(
    kind: AggregationType, first: bool, size: int, offset: int, use_floats: bool, data: Any
) -> None:
    values = st.lists(
        st.tuples(st.integers(-40, 40), floats if use_floats else ints), min_size=1, max_size=40
    )
    rows = sorted(data.draw(values), key=lambda r: r[0])  # the replay's order: event time
    fn = FieldAggregation(kind, "v", first)
    offset = max(1 - size, min(size - 1, offset))  # abs(offset) < size
    assigner = TumblingEventTimeWindows(size, offset=offset)
    plan = columnar_plan(assigner, Reduce(fn), None, None)
    assert plan is not None
    times = pa.chunked_array([pa.array([t for t, _ in rows], pa.int64())])
    column = pa.chunked_array([pa.array([v for _, v in rows])])
    found = columnar_results(plan, times, column)
    if use_floats and (kind is AggregationType.SUM or any(str(v) == "-0.0" for _, v in rows)):
        assert found is None  # float sums depend on the order of additions; -0.0 < 0.0
        return
    assert found is not None
    harness = WindowOperatorHarness(assigner, fn)
    harness.process_elements([({"i": i, "v": v}, t, "k") for i, (t, v) in enumerate(rows)])
    harness.process_watermark(MAX_TIMESTAMP)
    expected = [(r.window.start, r.value["i"], r.value["v"]) for r in harness.extract_output()]
    picked = found.rows.tolist()
    got_values = (
        [rows[i][1] for i in picked] if found.field_values is None else found.field_values.tolist()
    )
    got = list(zip(found.starts.tolist(), picked, got_values, strict=True))
    assert got == expected
    # the sign of a zero is the one the reduce keeps
    assert [str(v) for _, _, v in got] == [str(v) for _, _, v in expected]


def test_what_the_columns_cannot_decide_is_left_to_the_operator() -> None:
    plan = columnar_plan(
        TumblingEventTimeWindows(10),
        Reduce(FieldAggregation(AggregationType.SUM, "v")),
        None,
        None,
    )
    assert plan is not None

    def run(times: list[int], values: list[Any], arrow_type: Any = None) -> Any:
        return columnar_results(
            plan,
            pa.chunked_array([pa.array(times, pa.int64())]),
            pa.chunked_array([pa.array(values, arrow_type)]),
        )

    assert run([1, 2], [1, 2]) is not None
    assert run([1, 2], [1, None]) is None  # nulls
    assert run([1, 2], [2**62, 2**62]) is None  # the int64 sum would overflow
    assert run([1, 2], [2**30, 2**30], pa.int32()) is None  # does not fit the column
    assert run([MIN_TIMESTAMP + 5, 2], [1, 2]) is None  # near the start of time
    assert run([1, MAX_TIMESTAMP - 5], [1, 2]) is None  # near the end of time
    assert run([1, 2], ["a", "b"]) is None  # not a number
    assert run([1, 2], [1.0, float("nan")]) is None  # NaN is above every number
    lowest = columnar_plan(
        TumblingEventTimeWindows(10),
        Reduce(FieldAggregation(AggregationType.MIN, "v")),
        None,
        None,
    )
    assert lowest is not None
    times = pa.chunked_array([pa.array([1, 2], pa.int64())])
    assert columnar_results(lowest, times, pa.chunked_array([pa.array([0.0, -0.0])])) is None
    assert columnar_results(lowest, times, pa.chunked_array([pa.array([0.0, 2.0])])) is not None
    never_cleaned = columnar_plan(
        TumblingEventTimeWindows(10),
        Reduce(FieldAggregation(AggregationType.SUM, "v")),
        None,
        None,
        MAX_TIMESTAMP,
    )
    assert never_cleaned is None  # the operator keeps the windows: num_windows_left_at_end


# ---------------------------------------------------------------------------- streaming
class Rec(NamedTuple):
    """An input record: its position in the whole input and the aggregated field."""

    i: int
    v: Any


_REC_SCHEMA_INT = pa.schema([("i", pa.int64()), ("v", pa.int64())])
_REC_SCHEMA_FLOAT = pa.schema([("i", pa.int64()), ("v", pa.float64())])


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


@settings(max_examples=400)
@given(
    kind=st.sampled_from(list(AggregationType)),
    first=st.booleans(),
    size=st.integers(1, 12),
    offset=st.integers(-11, 11),
    lateness=st.sampled_from([0, 0, 1, 5, 13]),
    use_floats=st.booleans(),
    calls=calls_strategy,
    nulls=st.booleans(),
)
def test_streaming_calls_equal_the_operator(
    kind: AggregationType,
    first: bool,
    size: int,
    offset: int,
    lateness: int,
    use_floats: bool,
    calls: list[tuple[int, list[tuple[int, Any]]]],
    nulls: bool,
) -> None:
    """A key's micro-batches: each call advances the watermark, then adds rows (in replay
    order). The columnar steps (with the operator, through the state conversions, for the
    calls they leave to it) give the operator's results, late rows and timers."""
    fn = FieldAggregation(kind, "v", first)
    offset = max(1 - size, min(size - 1, offset))
    assigner = TumblingEventTimeWindows(size, offset=offset)
    plan = columnar_plan(assigner, Reduce(fn), None, None, lateness)
    assert plan is not None
    schema = _REC_SCHEMA_FLOAT if use_floats else _REC_SCHEMA_INT
    encode = _encoder(schema)
    tag = OutputTag("late")

    def operator() -> WindowOperator:
        return WindowOperator(assigner, Reduce(fn), allowed_lateness=lateness, late_output_tag=tag)

    def operator_call(
        op: WindowOperator, ks: KeyState, records: list[tuple[Rec, int]]
    ) -> tuple[list[tuple[int, Any]], list[int], KeyState]:
        """One call as the streaming runtime runs the operator: the watermark's timers,
        then the rows; the results, the late records' positions, the key's state."""
        op.set_clocks(watermark=watermark)
        op.output.clear()
        op.side_outputs.clear()
        op.fire_timers("k", ks)
        ks = op.process_key_elements("k", ks, [(r, t, "k") for r, t in records])
        results = [(w.window.start, w.value) for w in op.output]
        return results, [e.value.i for e in op.side_outputs.get(tag, [])], ks

    reference, columnar = operator(), operator()
    ref_ks = reference.new_key_state()
    state: Any = None  # OpenWindows, a KeyState (after an operator call), or None
    watermark = -20
    n = 0
    used_columns = 0
    for advance, raw in calls:
        watermark += advance
        records = []
        for t, v in raw:
            value = None if v is None and nulls else (0 if v is None else v)
            if use_floats and value is not None:
                value = float(value) / 2
            records.append((Rec(n, value), t))
            n += 1
        # the reference: the operator alone, as the streaming runtime runs it
        expected, expected_late, ref_ks = operator_call(reference, ref_ks, records)
        expected_due = ref_ks.next_event_time()

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
            step = step_open_windows(plan, open_windows, watermark, rows, times)
        if step is not None:
            used_columns += 1
            got = list(
                zip(
                    step.fired_starts.tolist(),
                    _records(step.fired_rows) if step.fired_rows is not None else [],
                    strict=True,
                )
            )
            got_late = [rows.column("i")[j].as_py() for j in step.late.tolist()]
            state = step.state
            due = None if state is None else state.next_event_time(plan)
        else:
            ks = state
            if isinstance(state, OpenWindows):
                ks = key_state_of(plan, columnar, state)
            elif state is None:
                ks = columnar.new_key_state()
            got, got_late, ks = operator_call(columnar, ks, records)
            due = ks.next_event_time()
            state = ks
        assert got == expected
        assert got_late == expected_late
        assert due == expected_due


def test_the_plan_reads_the_fields_type() -> None:
    """Given the input's schema, the plan is only made for fields numpy reduces as the
    reduce does: integers, and floats for all but sum (a float sum depends on the order of
    additions, and a float32 column cannot hold the operator's double sum)."""
    schema = pa.schema([("i", pa.int32()), ("f", pa.float32()), ("s", pa.string())])

    def plan(kind: AggregationType, field: str) -> Any:
        fn = FieldAggregation(kind, field)
        return columnar_plan(TumblingEventTimeWindows(10), Reduce(fn), None, None, 0, schema)

    assert plan(AggregationType.SUM, "i") is not None
    assert plan(AggregationType.MAX_BY, "i") is not None
    assert plan(AggregationType.MIN, "f") is not None
    assert plan(AggregationType.SUM, "f") is None
    assert plan(AggregationType.MAX, "s") is None
    assert plan(AggregationType.SUM, "missing") is None  # the operator names the field


def test_a_state_of_another_schema_is_left_to_the_operator() -> None:
    """State written under another schema (e.g. another session time zone, part of an Arrow
    timestamp type) cannot be concatenated with the new rows: the operator takes the call."""
    plan = columnar_plan(
        TumblingEventTimeWindows(10), Reduce(FieldAggregation(AggregationType.SUM, "v")), None, None
    )
    assert plan is not None
    zoned = pa.schema([("t", pa.timestamp("us", tz="UTC")), ("v", pa.int64())])
    rows = pa.table({"t": pa.array([1, 2], pa.timestamp("us")), "v": [1, 2]})
    times = np.array([1, 2], np.int64)
    step = step_open_windows(plan, None, -100, rows, times)
    assert step is not None and step.state is not None
    other = OpenWindows(step.state.starts, step.state.rows.cast(zoned), step.state.fired_upto)
    assert step_open_windows(plan, other, -100, rows, times) is None
    assert step_open_windows(plan, step.state, -100, rows, times) is not None
