"""The window functions of the Nexmark queries (windowing.nexmark_queries), in memory: the
rows with the largest value of a field, ties kept, merged as the windows' partial results
are, and emitted one result row each."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from windowing.assigners import TumblingEventTimeWindows
from windowing.nexmark_queries import (
    QUERIES,
    EmitRows,
    RowsWithMaximum,
    VectorizedRowsWithMaximum,
)
from windowing.testing import WindowOperatorHarness


def _bid(auction: int, price: int | None) -> dict[str, Any]:
    return {"auction": auction, "price": price}


def test_the_rows_with_the_largest_value_all_of_them_on_a_tie() -> None:
    f = RowsWithMaximum("price", ("auction", "price"))
    acc = f.create_accumulator()
    for bid in [_bid(1, 5), _bid(2, 9), _bid(3, None), _bid(4, 9), _bid(5, 2)]:
        acc = f.add(bid, acc)
    assert f.get_result(acc) == ((2, 9), (4, 9))
    assert f.get_result(f.create_accumulator()) == ()
    only_nulls = f.add(_bid(1, None), f.create_accumulator())
    assert f.get_result(only_nulls) == ()


def test_merged_partial_results_equal_one_pass() -> None:
    rng = random.Random(3)
    f = RowsWithMaximum("price", ("auction", "price"))
    for _ in range(200):
        bids = [_bid(i, rng.choice([None, *range(6)])) for i in range(rng.randint(0, 12))]
        cut = rng.randint(0, len(bids))
        whole, left, right = (f.create_accumulator() for _ in range(3))
        for b in bids:
            whole = f.add(b, whole)
        for b in bids[:cut]:
            left = f.add(b, left)
        for b in bids[cut:]:
            right = f.add(b, right)
        assert f.get_result(f.merge(left, right)) == f.get_result(whole)
        prices = [b["price"] for b in bids if b["price"] is not None]
        expected = tuple(
            (b["auction"], b["price"]) for b in bids if prices and b["price"] == max(prices)
        )
        assert f.get_result(whole) == expected


def test_a_window_emits_one_row_per_highest_bid() -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10),
        RowsWithMaximum("price", ("auction", "price")),
        window_function=EmitRows(),
    )
    for ts, bid in [(1, _bid(1, 3)), (2, _bid(2, 7)), (4, _bid(3, 7)), (12, _bid(4, 1))]:
        h.process_element(bid, ts, None)
    h.process_watermark(20)
    assert [(r.window.start, r.value) for r in h.extract_output()] == [
        (0, (2, 7)),
        (0, (3, 7)),
        (10, (4, 1)),
    ]


@pytest.mark.parametrize(
    ("field", "columns"), [("", ("a",)), (3, ("a",)), ("price", "auction"), ("price", ())]
)
def test_bad_arguments_are_refused_naming_them(field: Any, columns: Any) -> None:
    with pytest.raises(ValueError, match=r"RowsWithMaximum: (field|columns)"):
        RowsWithMaximum(field, columns)


def test_the_vectorized_form_gives_the_pairs_rows_in_the_windows_order() -> None:
    rng = random.Random(5)
    pair = RowsWithMaximum("price", ("auction", "price"))
    vectorized = VectorizedRowsWithMaximum("price", ("auction", "price"), ("id", "best"))
    for _ in range(200):
        bids = [_bid(i, rng.choice([None, *range(5)])) for i in range(rng.randint(0, 10))]
        acc = pair.create_accumulator()
        for b in bids:
            acc = pair.add(b, acc)
        schema = pa.schema([("auction", pa.int64()), ("price", pa.int64())])
        out = vectorized.process(None, None, pa.Table.from_pylist(bids, schema))  # type: ignore[arg-type]
        rows = [] if out is None else [(r["id"], r["best"]) for r in out.to_pylist()]
        assert rows == list(pair.get_result(acc))


def test_the_vectorized_form_skips_nan_as_null() -> None:
    f = VectorizedRowsWithMaximum("x", ("i", "x"))
    batch = pa.table({"i": [1, 2, 3], "x": [float("nan"), 2.0, None]})
    assert f.process(None, None, batch).to_pylist() == [{"i": 2, "x": 2.0}]  # type: ignore[arg-type, union-attr]
    only_nan = pa.table({"i": [1], "x": [float("nan")]})
    assert f.process(None, None, only_nan).num_rows == 0  # type: ignore[arg-type, union-attr]


def test_the_vectorized_form_runs_in_the_window_operator() -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10), VectorizedRowsWithMaximum("price", ("auction", "price"))
    )
    for ts, bid in [(1, _bid(1, 3)), (2, _bid(2, 7)), (4, _bid(3, 7)), (12, _bid(4, None))]:
        h.process_element(bid, ts, None)
    h.process_watermark(20)
    assert [(r.window.start, r.value) for r in h.extract_output()] == [
        (0, {"auction": 2, "price": 7}),
        (0, {"auction": 3, "price": 7}),
    ]


@pytest.mark.parametrize(
    ("field", "columns", "names"),
    [
        ("", ("a",), None),
        ("p", "a", None),
        ("p", ("a", "b"), ("x",)),
        ("p", ("a",), (1,)),
        ("p", ("p", "p"), None),
    ],
)
def test_the_vectorized_form_refuses_bad_arguments_naming_them(
    field: Any, columns: Any, names: Any
) -> None:
    with pytest.raises(ValueError, match=r"VectorizedRowsWithMaximum: (field|columns|names)"):
        VectorizedRowsWithMaximum(field, columns, names)


def test_the_queries_are_named_as_the_command_takes_them() -> None:
    assert QUERIES == ("q5", "q7", "q8", "q11", "q12", "q7_late")
