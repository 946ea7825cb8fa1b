"""Built-in aggregations computed on whole columns (``windowing/spark/columnar.py``) against
the window operator replaying the same sorted rows to the end of input."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from assigners import TumblingEventTimeWindows
from functions import AggregationType, FieldAggregation, Reduce
from windowing.spark.columnar import columnar_plan, columnar_results
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
