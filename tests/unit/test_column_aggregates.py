"""ColumnAggregates: Spark SQL's aggregate functions in pure Python (WindowedStream.agg's
operator path), each against a brute-force definition, merges included."""

from __future__ import annotations

import math
from decimal import Decimal
from functools import reduce
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowing.assigners import TumblingEventTimeWindows
from windowing.functions import Aggregate
from windowing.functions.columns import AggKind, ColumnAggregate, ColumnAggregates, ValueKind
from windowing.operator import WindowOperator

INT, FLT, DEC, ORD = ValueKind.INTEGRAL, ValueKind.FLOATING, ValueKind.DECIMAL, ValueKind.ORDERED


def run(
    aggs: list[ColumnAggregate], rows: list[tuple[Any, ...]], order: int | None = None
) -> tuple[Any, ...]:
    f = ColumnAggregates(tuple(aggs), order)
    acc = f.create_accumulator()
    for r in rows:
        acc = f.add(r, acc)
    return f.get_result(acc)


def test_count_star_counts_rows_and_count_of_columns_skips_nulls() -> None:
    rows = [(1, None), (None, None), (3, 4)]
    got = run(
        [
            ColumnAggregate(AggKind.COUNT, ()),
            ColumnAggregate(AggKind.COUNT, (0,)),
            ColumnAggregate(AggKind.COUNT, (0, 1)),
        ],
        rows,
    )
    assert got == (3, 2, 1)


def test_count_distinct_treats_nan_as_one_value_and_zeros_alike() -> None:
    rows = [(math.nan,), (math.nan,), (0.0,), (-0.0,), (None,), (1.5,)]
    assert run([ColumnAggregate(AggKind.COUNT, (0,), distinct=True)], rows) == (3,)


def test_sum_avg_min_max_skip_nulls_and_give_null_over_no_value() -> None:
    aggs = [
        ColumnAggregate(AggKind.SUM, (0,), value=INT),
        ColumnAggregate(AggKind.AVG, (0,), value=INT),
        ColumnAggregate(AggKind.MIN, (0,), value=INT),
        ColumnAggregate(AggKind.MAX, (0,), value=INT),
    ]
    assert run(aggs, [(None,), (None,)]) == (None, None, None, None)
    assert run(aggs, [(4,), (None,), (-1,)]) == (3, 1.5, -1, 4)
    assert isinstance(run(aggs, [(4,)])[1], float)


def test_min_max_order_nan_above_every_number() -> None:
    aggs = [
        ColumnAggregate(AggKind.MIN, (0,), value=FLT),
        ColumnAggregate(AggKind.MAX, (0,), value=FLT),
    ]
    lo, hi = run(aggs, [(1.0,), (math.nan,), (-math.inf,)])
    assert lo == -math.inf and math.isnan(hi)
    lo, hi = run(aggs, [(math.nan,), (2.0,)])
    assert lo == 2.0 and math.isnan(hi)


def test_integer_sum_overflow_raises_naming_the_column_or_wraps_without_ansi() -> None:
    big = 2**62
    with pytest.raises(ArithmeticError, match=r"'total'.*overflows bigint"):
        run([ColumnAggregate(AggKind.SUM, (0,), value=INT, name="total")], [(big,), (big,)])
    wrapped = run([ColumnAggregate(AggKind.SUM, (0,), value=INT, ansi=False)], [(big,), (big,)])
    assert wrapped == (-(2**63),)


def test_decimal_sum_and_avg_keep_the_result_scale_rounding_half_up() -> None:
    aggs = [
        ColumnAggregate(AggKind.SUM, (0,), value=DEC, precision=20, scale=2),
        ColumnAggregate(AggKind.AVG, (0,), value=DEC, precision=14, scale=6),
    ]
    rows = [(Decimal("1.00"),), (Decimal("0.00"),), (Decimal("0.01"),)]
    total, mean = run(aggs, rows)
    assert total == Decimal("1.01") and str(total) == "1.01"
    assert str(mean) == "0.336667"  # 1.01 / 3 = 0.33666..., half up at 6 places


def test_decimal_overflow_raises_with_ansi_and_is_null_without() -> None:
    a = ColumnAggregate(AggKind.SUM, (0,), value=DEC, precision=3, scale=1, name="s")
    with pytest.raises(ArithmeticError, match="decimal\\(3,1\\)"):
        run([a], [(Decimal("60.0"),), (Decimal("60.0"),)])
    lenient = ColumnAggregate(AggKind.SUM, (0,), value=DEC, precision=3, scale=1, ansi=False)
    assert run([lenient], [(Decimal("60.0"),), (Decimal("60.0"),)]) == (None,)


def test_first_and_last_follow_the_order_key_not_the_arrival_of_rows() -> None:
    # (value, order key): rows arrive out of event-time order
    rows = [("b", (5, 0)), ("a", (1, 0)), (None, (0, 0)), ("c", (9, 0))]
    aggs = [
        ColumnAggregate(AggKind.FIRST, (0,)),
        ColumnAggregate(AggKind.FIRST, (0,), ignore_nulls=True),
        ColumnAggregate(AggKind.LAST, (0,)),
    ]
    assert run(aggs, rows, order=1) == (None, "a", "c")


def test_min_by_max_by_skip_null_orderings_and_break_ties_by_the_order_key() -> None:
    # (value, ordering, order key)
    rows = [("late", 1, (9,)), ("early", 1, (2,)), ("none", None, (0,)), ("big", 3, (5,))]
    aggs = [ColumnAggregate(AggKind.MIN_BY, (0, 1)), ColumnAggregate(AggKind.MAX_BY, (0, 1))]
    assert run(aggs, rows, order=2) == ("early", "big")
    tie = [("x", 3, (7,)), ("y", 3, (4,))]
    assert run(aggs, tie, order=2) == ("y", "y")


def test_count_if_bool_and_bool_or() -> None:
    aggs = [
        ColumnAggregate(AggKind.COUNT_IF, (0,), value=ORD),
        ColumnAggregate(AggKind.BOOL_AND, (0,), value=ORD),
        ColumnAggregate(AggKind.BOOL_OR, (0,), value=ORD),
    ]
    assert run(aggs, [(True,), (None,), (False,), (True,)]) == (2, False, True)
    assert run(aggs, [(None,)]) == (0, None, None)


def test_bad_aggregates_are_refused_naming_the_problem() -> None:
    with pytest.raises(ValueError, match="min_by takes 2 argument"):
        ColumnAggregate(AggKind.MIN_BY, (0,))
    with pytest.raises(ValueError, match="DISTINCT is supported with count only"):
        ColumnAggregate(AggKind.SUM, (0,), distinct=True, value=INT)
    with pytest.raises(ValueError, match="precision and scale"):
        ColumnAggregate(AggKind.SUM, (0,), value=DEC)
    with pytest.raises(ValueError, match="order key"):
        ColumnAggregates((ColumnAggregate(AggKind.FIRST, (0,)),))


def test_order_insensitive_unless_floats_are_added() -> None:
    exact = ColumnAggregates((ColumnAggregate(AggKind.SUM, (0,), value=INT),))
    floats = ColumnAggregates((ColumnAggregate(AggKind.SUM, (0,), value=FLT),))
    mean = ColumnAggregates((ColumnAggregate(AggKind.AVG, (0,), value=INT),))
    assert exact.order_insensitive
    assert not floats.order_insensitive and not mean.order_insensitive


_ALL = [
    ColumnAggregate(AggKind.COUNT, ()),
    ColumnAggregate(AggKind.COUNT, (0,), distinct=True),
    ColumnAggregate(AggKind.SUM, (0,), value=INT),
    ColumnAggregate(AggKind.MIN, (0,), value=INT),
    ColumnAggregate(AggKind.MAX, (0,), value=INT),
    ColumnAggregate(AggKind.FIRST, (0,)),
    ColumnAggregate(AggKind.LAST, (0,), ignore_nulls=True),
    ColumnAggregate(AggKind.MIN_BY, (0, 1)),
    ColumnAggregate(AggKind.MAX_BY, (0, 1)),
    ColumnAggregate(AggKind.COUNT_IF, (3,), value=ORD),
    ColumnAggregate(AggKind.BOOL_AND, (3,), value=ORD),
]

_rows = st.lists(
    st.tuples(
        st.one_of(st.none(), st.integers(-5, 5)),
        st.one_of(st.none(), st.integers(0, 3)),
        st.integers(0, 10**6),
        st.one_of(st.none(), st.booleans()),
    ),
    max_size=25,
)


def _oracle(rows: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """Each aggregate by its SQL definition over the whole list (order key: position 2,
    unique per row below)."""
    xs = [r[0] for r in rows if r[0] is not None]
    by = sorted(rows, key=lambda r: r[2])
    ordered = [r for r in by if r[1] is not None]
    bools = [r[3] for r in rows if r[3] is not None]
    lows = min((r[1] for r in ordered), default=None)
    highs = max((r[1] for r in ordered), default=None)
    return (
        len(rows),
        len(set(xs)),
        sum(xs) if xs else None,
        min(xs, default=None),
        max(xs, default=None),
        by[0][0] if by else None,
        next((r[0] for r in reversed(by) if r[0] is not None), None),
        next((r[0] for r in ordered if r[1] == lows), None),
        next((r[0] for r in ordered if r[1] == highs), None),
        sum(1 for b in bools if b),
        all(bools) if bools else None,
    )


@given(_rows, st.data())
def test_every_split_into_merged_accumulators_gives_the_sql_result(
    rows: list[tuple[Any, ...]], data: st.DataObject
) -> None:
    rows = [(*r[:2], (r[2], i), r[3]) for i, r in enumerate(rows)]  # unique order keys
    f = ColumnAggregates(tuple(_ALL), order=2)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(rows)), max_size=3)))
    parts = [rows[a:b] for a, b in zip([0, *cuts], [*cuts, len(rows)], strict=True)]
    accs = []
    for part in parts:
        acc = f.create_accumulator()
        for r in data.draw(st.permutations(part)):
            acc = f.add(r, acc)
        accs.append(acc)
    merged = reduce(f.merge, data.draw(st.permutations(accs)), f.create_accumulator())
    assert f.get_result(merged) == _oracle(rows)


def test_runs_in_the_window_operator_as_any_aggregate_function() -> None:
    f = ColumnAggregates(
        (ColumnAggregate(AggKind.COUNT, ()), ColumnAggregate(AggKind.SUM, (0,), value=INT))
    )
    op = WindowOperator(TumblingEventTimeWindows(10), Aggregate(f))
    op.process_to_end("k", [((1,), 1, "k"), ((2,), 3, "k"), ((5,), 12, "k")])
    assert sorted((r.window.start, r.value) for r in op.output) == [(0, (2, 3)), (10, (1, 5))]


def test_with_names_the_result_is_a_dict_by_name() -> None:
    f = ColumnAggregates((ColumnAggregate(AggKind.COUNT, ()),), names=("n",))
    assert f.get_result(f.add((1,), f.create_accumulator())) == {"n": 1}
    with pytest.raises(ValueError, match="2 names for 1 aggregates"):
        ColumnAggregates((ColumnAggregate(AggKind.COUNT, ()),), names=("a", "b"))


def test_decimal_sums_are_exact_beyond_28_digits() -> None:
    a = ColumnAggregate(AggKind.SUM, (0,), value=DEC, precision=38, scale=18)
    m = ColumnAggregate(AggKind.AVG, (0,), value=DEC, precision=38, scale=22)
    big = Decimal("10000000000.000000000000000001")
    total, mean = run([a, m], [(big,), (Decimal("0.000000000000000001"),)])
    assert total == Decimal("10000000000.000000000000000002")
    assert mean == Decimal("5000000000.0000000000000000010000")


def test_timestamps_compare_as_instants_in_a_repeated_hour() -> None:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    ny = ZoneInfo("America/New_York")
    edt = datetime(2024, 11, 3, 1, 30, tzinfo=ny)  # 05:30 UTC
    est = datetime(2024, 11, 3, 1, 15, fold=1, tzinfo=ny)  # 06:15 UTC, later
    same_wall = datetime(2024, 11, 3, 1, 30, fold=1, tzinfo=ny)  # 06:30 UTC
    aggs = [
        ColumnAggregate(AggKind.MAX, (0,), value=ORD),
        ColumnAggregate(AggKind.MIN, (0,), value=ORD),
        ColumnAggregate(AggKind.COUNT, (0,), distinct=True),
    ]
    hi, lo, n = run(aggs, [(est,), (edt,), (same_wall,)])
    assert (hi, lo, n) == (same_wall, edt, 3)
    assert hi.fold == 1 and lo.fold == 0


# -- pandas UDF aggregates -----------------------------------------------------------------------
def _rows_seen(rows: list[tuple[Any, ...]]) -> tuple[tuple[Any, ...], ...]:
    return tuple(rows)


@given(
    st.lists(
        st.tuples(st.integers(-3, 3) | st.none(), st.integers(0, 5), st.integers(0, 99)),
        max_size=12,
    ),
    st.integers(0, 12),
)
def test_a_pandas_udf_sees_every_row_in_the_replay_order_whatever_the_merges(
    rows: list[tuple[Any, ...]], cut: int
) -> None:
    """Rows (value, event time, content) reach the UDF sorted by the order key, nulls
    included; merging two accumulators gives the UDF what one accumulator over all rows
    gives, and leaves both parts as they were (a pane merges into several windows)."""
    udf = ColumnAggregate(AggKind.PANDAS_UDF, (0,), udf=_rows_seen)
    f = ColumnAggregates((udf,), order=3)
    keyed = [(v, t, c, (t, c)) for v, t, c in rows]
    expected = tuple((r[0],) for r in sorted(keyed, key=lambda r: r[3]))
    assert run([udf], keyed, order=3) == (expected,)
    left, right = f.create_accumulator(), f.create_accumulator()
    for r in keyed[:cut]:
        left = f.add(r, left)
    for r in keyed[cut:]:
        right = f.add(r, right)
    before = (list(left[0]), list(right[0]))
    assert f.get_result(f.merge(left, right)) == (expected,)
    assert (left[0], right[0]) == before


def test_a_pandas_udf_needs_the_order_key_and_a_function() -> None:
    with pytest.raises(ValueError, match="order key"):
        ColumnAggregates((ColumnAggregate(AggKind.PANDAS_UDF, (0,), udf=_rows_seen),))
    with pytest.raises(ValueError, match="udf"):
        ColumnAggregate(AggKind.PANDAS_UDF, (0,))
    with pytest.raises(ValueError, match="udf"):
        ColumnAggregate(AggKind.SUM, (0,), udf=_rows_seen)
    assert AggKind.PANDAS_UDF.needs_order and not AggKind.PANDAS_UDF.ordered


def test_an_emptied_window_calls_the_pandas_udf_with_no_rows() -> None:
    """An evictor may leave a window no rows: the function is called with none (Flink calls
    a window function with the contents there are)."""
    udf = ColumnAggregate(AggKind.PANDAS_UDF, (0, 1), udf=_rows_seen)
    assert run([udf], [], order=2) == ((),)
