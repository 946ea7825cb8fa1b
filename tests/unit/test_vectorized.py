"""VectorizedAggregateFunction and its adapter on the window operator: batches, defaults,
errors, state."""

from __future__ import annotations

import dataclasses
from collections import namedtuple
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import windowing
from windowing import (
    AggregateFunction,
    EventTimeSessionWindows,
    TumblingEventTimeWindows,
    VectorizedAggregateFunction,
    WindowOperator,
)
from windowing.engine.encoding import decode_key_state, encode_key_state
from windowing.engine.keystate import KeyState
from windowing.functions import Aggregate, as_spec
from windowing.functions import vectorized as vec
from windowing.functions.spec import result_source, with_input_schema
from windowing.functions.vectorized import VectorizedAdapter, batch_table
from windowing.testing import WindowOperatorHarness
from windowing.windows import TimeWindow


class Stats(VectorizedAggregateFunction[tuple[int, int, Any], tuple[int, int, Any]]):
    """Count, integer sum and last value of column ``x`` (order-sensitive: the last)."""

    batch_format = "arrow"

    def __init__(self) -> None:
        self.batches: list[Any] = []

    def create_accumulator(self) -> tuple[int, int, Any]:
        return (0, 0, None)

    def add_batch(self, batch: Any, acc: tuple[int, int, Any]) -> tuple[int, int, Any]:
        self.batches.append(batch)
        x = _column(batch, "x", self.batch_format)
        return (acc[0] + len(x), acc[1] + int(sum(int(v) for v in x)), int(x[-1]))

    def merge(self, a: tuple[int, int, Any], b: tuple[int, int, Any]) -> tuple[int, int, Any]:
        return (a[0] + b[0], a[1] + b[1], b[2] if b[0] else a[2])

    def get_result(self, acc: tuple[int, int, Any]) -> tuple[int, int, Any]:
        return acc


class PandasStats(Stats):
    batch_format = "pandas"


class NumpyStats(Stats):
    batch_format = "numpy"


def _column(batch: Any, name: str, fmt: str) -> Any:
    if fmt == "arrow":
        return batch.column(name).to_pylist()
    if fmt == "pandas":
        return batch[name].to_numpy()
    return batch[name]


def rows(*xs: int) -> pa.Table:
    return pa.table({"x": pa.array(xs, pa.int64())})


# ---------------------------------------------------------------------------- the API
def test_exported_from_the_package_and_the_functions_package() -> None:
    assert windowing.VectorizedAggregateFunction is VectorizedAggregateFunction
    assert "VectorizedAggregateFunction" in windowing.functions.__all__


@pytest.mark.parametrize("cls", [Stats, PandasStats, NumpyStats])
def test_default_add_groups_is_add_batch_per_group_in_each_format(cls: type[Stats]) -> None:
    fn = cls()
    batch = vec.in_format(rows(1, 2, 3, 4, 5, 6), fn.batch_format)
    accs = fn.add_groups(batch, np.array([0, 1, 4, 6]))
    assert accs == [(1, 1, 1), (3, 9, 4), (2, 11, 6)]
    assert fn.get_results(accs) == accs
    assert [len(_column(b, "x", fn.batch_format)) for b in fn.batches] == [1, 3, 2]


def test_numpy_format_is_a_dict_of_arrays_and_pandas_a_data_frame() -> None:
    table = rows(1, 2)
    as_numpy = vec.in_format(table, "numpy")
    assert isinstance(as_numpy, dict) and isinstance(as_numpy["x"], np.ndarray)
    assert as_numpy["x"].tolist() == [1, 2]
    assert vec.in_format(table, "pandas")["x"].tolist() == [1, 2]


def test_aggregate_holds_a_vectorized_function_as_its_adapter() -> None:
    fn = Stats()
    spec = as_spec(fn)
    assert isinstance(spec, Aggregate)
    assert isinstance(spec.function, VectorizedAdapter) and spec.function.function is fn
    assert spec.user_function is fn and spec.vectorized is fn
    assert result_source(spec) == "VectorizedAggregateFunction Stats.get_result"
    assert Aggregate(fn) == Aggregate(fn)


def test_order_insensitive_is_the_users() -> None:
    class Insensitive(Stats):
        order_insensitive = True

    assert not Aggregate(Stats()).order_insensitive
    assert Aggregate(Insensitive()).order_insensitive


def test_with_input_schema_binds_the_adapter_only() -> None:
    schema = pa.schema([("x", pa.int32())])
    spec = with_input_schema(Aggregate(Stats()), schema)
    assert isinstance(spec, Aggregate)
    assert spec.function.input_schema == schema  # type: ignore[attr-defined]
    reduce = as_spec(max)
    assert with_input_schema(reduce, schema) is reduce


# ---------------------------------------------------------------------------- errors
def test_a_non_function_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"AggregateFunction or a VectorizedAggregateFunction.*42"):
        Aggregate(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be a VectorizedAggregateFunction, got str 'x'"):
        VectorizedAdapter("x")  # type: ignore[arg-type]


def test_an_unknown_batch_format_is_refused() -> None:
    class Polars(Stats):
        batch_format = "polars"

    with pytest.raises(ValueError, match=r"Polars\.batch_format must be one of .* got 'polars'"):
        WindowOperator(TumblingEventTimeWindows(10), Polars())


def test_add_batch_returning_none_names_the_function() -> None:
    class Forgetful(Stats):
        def add_batch(self, batch: Any, acc: Any) -> Any:
            return None

    h = WindowOperatorHarness(TumblingEventTimeWindows(10), Forgetful())
    h.process_element({"x": 1}, 1, "k")
    with pytest.raises(TypeError, match=r"Forgetful\.add_batch returned None"):
        h.process_watermark(100)


def test_merge_returning_none_names_the_function() -> None:
    class Forgetful(Stats):
        def merge(self, a: Any, b: Any) -> Any:
            return None

    h = WindowOperatorHarness(EventTimeSessionWindows(5), Forgetful())
    h.process_element({"x": 1}, 1, "k")
    h.process_element({"x": 2}, 10, "k")
    with pytest.raises(TypeError, match=r"Forgetful\.merge returned None"):
        h.process_element({"x": 3}, 5, "k")  # bridges the two sessions


def test_get_results_of_the_wrong_length_names_the_function_and_value() -> None:
    class Short(Stats):
        def get_results(self, accumulators: Any) -> Any:
            return [1, 2]

    fn = Short()
    accs = fn.add_groups(rows(1, 2, 3), np.array([0, 1, 2, 3]))
    with pytest.raises(ValueError, match=r"Short\.get_results .* \(3\), got list \[1, 2\] of 2"):
        vec.group_results(fn, accs)


def test_get_results_columns_of_different_lengths_are_refused() -> None:
    class Ragged(Stats):
        def get_results(self, accumulators: Any) -> Any:
            return {"a": [1, 2], "b": [1]}

    with pytest.raises(ValueError, match=r"Ragged\.get_results .* got dict"):
        vec.group_results(Ragged(), [(1, 1, 1), (1, 1, 1)])


def test_add_groups_of_the_wrong_length_names_the_function() -> None:
    class Lost(Stats):
        def add_groups(self, batch: Any, offsets: Any) -> Any:
            return None

    with pytest.raises(ValueError, match=r"Lost\.add_groups .* \(2\), got NoneType None"):
        vec.group_accumulators(Lost(), rows(1, 2), np.array([0, 1, 2]))


def test_group_results_accepts_columns() -> None:
    class Columns(Stats):
        def get_results(self, accumulators: Any) -> Any:
            return {"n": np.array([a[0] for a in accumulators])}

    fn = Columns()
    accs = vec.group_accumulators(fn, rows(1, 2, 3), np.array([0, 2, 3]))
    assert vec.group_results(fn, accs)["n"].tolist() == [2, 1]


# ---------------------------------------------------------------------------- batches
Point = namedtuple("Point", "x y")


@dataclasses.dataclass
class Reading:
    x: int
    y: float


@pytest.mark.parametrize(
    ("values", "names"),
    [
        ([{"x": 1, "y": 2.0}, {"x": 3, "y": 4.0}], ["x", "y"]),
        ([Point(1, 2.0), Point(3, 4.0)], ["x", "y"]),
        ([Reading(1, 2.0), Reading(3, 4.0)], ["x", "y"]),
        ([(1, 2.0), (3, 4.0)], ["f0", "f1"]),
        ([1, 3], ["value"]),
    ],
)
def test_batches_of_each_shape_of_row(values: list[Any], names: list[str]) -> None:
    table = batch_table(values)
    assert table.column_names == names
    assert table.column(0).to_pylist() == [1, 3]


def test_dict_rows_missing_a_key_have_a_null_there() -> None:
    table = batch_table([{"x": 1}, {"x": 2, "y": "b"}])
    assert table.to_pylist() == [{"x": 1, "y": None}, {"x": 2, "y": "b"}]


def test_rows_of_different_shapes_are_refused() -> None:
    with pytest.raises(TypeError, match="rows of different shapes"):
        batch_table([(1, 2), (1, 2, 3)])
    with pytest.raises(TypeError, match="rows of different shapes"):
        batch_table([{"x": 1}, 3])


def test_a_schema_gives_the_types_and_the_order_of_the_columns() -> None:
    schema = pa.schema([("y", pa.float32()), ("x", pa.int16())])
    table = batch_table([{"x": 1, "y": 2.0}], schema)
    assert table.schema == schema
    assert table.to_pylist() == [{"y": 2.0, "x": 1}]
    with pytest.raises(ValueError, match="rows with the fields"):
        batch_table([{"z": 1, "y": 2.0}], schema)


# ---------------------------------------------------------------------------- the adapter
def test_the_adapter_hands_the_rows_since_the_last_result_in_one_batch() -> None:
    fn = Stats()
    adapter = VectorizedAdapter(fn)
    acc = adapter.create_accumulator()
    for x in (1, 2, 3):
        acc = adapter.add({"x": x}, acc)
    assert fn.batches == []
    assert adapter.get_result(acc) == (3, 6, 3)
    assert [b.num_rows for b in fn.batches] == [3]
    acc = adapter.add({"x": 10}, acc)
    assert adapter.get_result(acc) == (4, 16, 10)
    assert adapter.get_result(acc) == (4, 16, 10)  # nothing pending: no batch
    assert [b.num_rows for b in fn.batches] == [3, 1]


def test_merge_flushes_both_and_keeps_b_meaning_the_same() -> None:
    fn = Stats()
    adapter = VectorizedAdapter(fn)
    a = adapter.add({"x": 1}, adapter.create_accumulator())
    b = adapter.add({"x": 5}, adapter.add({"x": 2}, adapter.create_accumulator()))
    merged = adapter.merge(a, b)
    assert merged is a
    assert adapter.get_result(merged) == (3, 8, 5)
    assert adapter.get_result(b) == (2, 7, 5)


def test_the_adapter_adds_a_long_windows_rows_in_batches(monkeypatch: Any) -> None:
    monkeypatch.setattr(vec, "MAX_PENDING_ROWS", 4)
    fn = Stats()
    adapter = VectorizedAdapter(fn)
    acc = adapter.create_accumulator()
    for x in range(10):
        acc = adapter.add({"x": x}, acc)
    assert len(acc[1]) == 2
    assert adapter.get_result(acc) == (10, 45, 9)
    assert [b.num_rows for b in fn.batches] == [4, 4, 2]


def test_a_batch_error_names_the_function() -> None:
    adapter = VectorizedAdapter(Stats())
    acc = adapter.add((1, 2), adapter.add((1,), adapter.create_accumulator()))
    with pytest.raises(TypeError, match="rows of different shapes") as info:
        adapter.get_result(acc)
    assert "for VectorizedAggregateFunction Stats" in "".join(info.value.__notes__)


def test_the_input_schema_types_the_batches() -> None:
    fn = Stats()
    schema = pa.schema([("x", pa.int32()), ("s", pa.string())])
    adapter = VectorizedAdapter(fn, schema)
    acc = adapter.add(Point(1, None)._replace(y="a"), adapter.create_accumulator())  # wrong names
    with pytest.raises(ValueError, match="rows with the fields"):
        adapter.get_result(acc)
    acc = adapter.add({"x": 1, "s": None}, adapter.create_accumulator())
    adapter.get_result(acc)
    assert fn.batches[-1].schema == schema


def test_the_accumulator_is_plain_data_when_the_functions_is() -> None:
    adapter = VectorizedAdapter(Stats())
    ks = KeyState()
    ks.contents[TimeWindow(0, 10)] = adapter.add({"x": 1}, adapter.create_accumulator())
    data = encode_key_state(ks)  # unsigned: refuses user objects
    assert decode_key_state(data).contents == {TimeWindow(0, 10): [(0, 0, None), [{"x": 1}]]}


# ---------------------------------------------------------------------------- the operator
class PerRowStats(AggregateFunction[Any, tuple[int, int, Any], tuple[int, int, Any]]):
    def create_accumulator(self) -> tuple[int, int, Any]:
        return (0, 0, None)

    def add(self, value: Any, acc: tuple[int, int, Any]) -> tuple[int, int, Any]:
        return (acc[0] + 1, acc[1] + value["x"], value["x"])

    def merge(self, a: tuple[int, int, Any], b: tuple[int, int, Any]) -> tuple[int, int, Any]:
        return (a[0] + b[0], a[1] + b[1], b[2] if b[0] else a[2])

    def get_result(self, acc: tuple[int, int, Any]) -> tuple[int, int, Any]:
        return acc


@pytest.mark.parametrize("cls", [Stats, PandasStats, NumpyStats])
def test_the_operator_gives_the_per_row_functions_results(cls: type[Stats]) -> None:
    def run(function: Any) -> list[Any]:
        h = WindowOperatorHarness(EventTimeSessionWindows(4), function)
        for x, ts in [(1, 1), (2, 9), (3, 4), (4, 30), (5, 6)]:
            h.process_element({"x": x}, ts, "k")
        h.process_watermark(100)
        return [(r.window, r.value) for r in h.extract_output()]

    expected = run(PerRowStats())
    assert expected == [(TimeWindow(1, 13), (4, 11, 5)), (TimeWindow(30, 34), (1, 4, 4))]
    assert [(w, tuple(int(v) for v in r)) for w, r in run(cls())] == expected
