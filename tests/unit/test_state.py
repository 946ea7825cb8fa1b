"""Unit tests for windowing.state: state views and the per-key StateTable."""

from __future__ import annotations

import operator
from typing import Any

import pytest

from windowing.functions import AggregateFunction, ReduceFunction
from windowing.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    StateTable,
    ValueState,
    ValueStateDescriptor,
)
from windowing.windows import GLOBAL_WINDOW, TimeWindow


class Average(AggregateFunction[float, tuple[float, int], float]):
    def create_accumulator(self) -> tuple[float, int]:
        return (0.0, 0)

    def add(self, value: float, accumulator: tuple[float, int]) -> tuple[float, int]:
        return (accumulator[0] + value, accumulator[1] + 1)

    def get_result(self, accumulator: tuple[float, int]) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, a: tuple[float, int], b: tuple[float, int]) -> tuple[float, int]:
        return (a[0] + b[0], a[1] + b[1])


class Max(ReduceFunction[int]):
    def reduce(self, value1: int, value2: int) -> int:
        return max(value1, value2)


VALUE = ValueStateDescriptor("value")
VALUE_DEFAULT = ValueStateDescriptor("value-with-default", default=7)
SUM = ReducingStateDescriptor("sum", operator.add)
MAX = ReducingStateDescriptor("max", Max())
LIST = ListStateDescriptor("list")
AVG = AggregatingStateDescriptor("avg", Average())
MAP = MapStateDescriptor("map")

W1 = TimeWindow(0, 10)
W2 = TimeWindow(10, 20)
W3 = TimeWindow(20, 30)


@pytest.fixture
def table() -> StateTable:
    return StateTable()


# =========================================================================== view types


@pytest.mark.parametrize(
    ("descriptor", "view_type"),
    [
        (VALUE, ValueState),
        (SUM, ReducingState),
        (LIST, ListState),
        (AVG, AggregatingState),
        (MAP, MapState),
    ],
)
def test_state_returns_view_of_descriptor_kind(
    table: StateTable, descriptor: Any, view_type: type
) -> None:
    assert type(table.state(descriptor, W1)) is view_type


def test_new_table_is_empty(table: StateTable) -> None:
    assert table.num_entries() == 0
    assert table.namespaces() == set()
    table.state(VALUE, W1)
    table.state(LIST, W1)
    assert table.num_entries() == 0  # asking for a view stores nothing


# =========================================================================== value state


def test_value_state_default_none(table: StateTable) -> None:
    assert table.state(VALUE, W1).value() is None


def test_value_state_default_value(table: StateTable) -> None:
    s = table.state(VALUE_DEFAULT, W1)
    assert s.value() == 7
    assert table.num_entries() == 0
    s.update(3)
    assert s.value() == 3
    s.clear()
    assert s.value() == 7


def test_value_state_update_and_clear(table: StateTable) -> None:
    s = table.state(VALUE, W1)
    s.update("a")
    assert s.value() == "a"
    assert table.state(VALUE, W1).value() == "a"  # a new view sees the same value
    assert table.num_entries(W1) == 1
    s.update("b")
    assert s.value() == "b"
    assert table.num_entries() == 1
    s.clear()
    assert s.value() is None
    assert table.num_entries() == 0


def test_value_state_update_none_removes_entry(table: StateTable) -> None:
    s = table.state(VALUE, W1)
    s.update(5)
    s.update(None)
    assert s.value() is None
    assert table.num_entries() == 0


def test_value_state_falsy_values_are_kept(table: StateTable) -> None:
    s = table.state(VALUE_DEFAULT, W1)
    s.update(0)
    assert s.value() == 0
    assert table.num_entries() == 1


def test_value_state_namespaces_are_independent(table: StateTable) -> None:
    table.state(VALUE, W1).update(1)
    table.state(VALUE, W2).update(2)
    assert table.state(VALUE, W1).value() == 1
    assert table.state(VALUE, W2).value() == 2
    assert table.state(VALUE, W3).value() is None
    table.state(VALUE, W1).clear()
    assert table.state(VALUE, W2).value() == 2


def test_clear_of_empty_view_is_noop(table: StateTable) -> None:
    for d in (VALUE, SUM, LIST, AVG, MAP):
        table.state(d, W1).clear()
    assert table.num_entries() == 0


# =========================================================================== reducing state


def test_reducing_state_with_callable(table: StateTable) -> None:
    s = table.state(SUM, W1)
    assert s.get() is None
    s.add(2)
    assert s.get() == 2
    s.add(3)
    s.add(5)
    assert s.get() == 10
    assert table.num_entries() == 1
    s.clear()
    assert s.get() is None
    assert table.num_entries() == 0


def test_reducing_state_with_reduce_function(table: StateTable) -> None:
    s = table.state(MAX, W1)
    for v in (3, 9, 1):
        s.add(v)
    assert s.get() == 9


def test_reducing_state_first_value_not_reduced(table: StateTable) -> None:
    calls: list[tuple[Any, Any]] = []

    def record(a: Any, b: Any) -> Any:
        calls.append((a, b))
        return b

    s = table.state(ReducingStateDescriptor("r", record), W1)
    s.add("first")
    assert calls == []
    s.add("second")
    assert calls == [("first", "second")]


def test_reducing_state_zero_is_a_value(table: StateTable) -> None:
    s = table.state(SUM, W1)
    s.add(0)
    assert s.get() == 0
    assert table.num_entries() == 1


def test_reducing_state_descriptor_rejects_reduce_function_class(table: StateTable) -> None:
    with pytest.raises(ValueError, match=r"reduce_function"):
        ReducingStateDescriptor("max", Max)


# =========================================================================== list state


def test_list_state_add_get(table: StateTable) -> None:
    s = table.state(LIST, W1)
    assert s.get() == []
    s.add(1)
    s.add(2)
    assert s.get() == [1, 2]
    assert table.num_entries() == 1


def test_list_state_get_returns_copy(table: StateTable) -> None:
    s = table.state(LIST, W1)
    s.add(1)
    got = s.get()
    got.append(99)
    assert s.get() == [1]


def test_list_state_add_all(table: StateTable) -> None:
    s = table.state(LIST, W1)
    s.add_all(iter([1, 2]))
    s.add_all([3])
    assert s.get() == [1, 2, 3]


def test_list_state_add_all_empty_stores_nothing(table: StateTable) -> None:
    s = table.state(LIST, W1)
    s.add_all([])
    assert table.num_entries() == 0
    assert s.get() == []


def test_list_state_update_replaces_and_empty_removes(table: StateTable) -> None:
    s = table.state(LIST, W1)
    s.add_all([1, 2, 3])
    s.update(x for x in [7, 8])
    assert s.get() == [7, 8]
    s.update([])
    assert s.get() == []
    assert table.num_entries() == 0


def test_list_state_update_does_not_alias_argument(table: StateTable) -> None:
    s = table.state(LIST, W1)
    values = [1, 2]
    s.update(values)
    values.append(3)
    assert s.get() == [1, 2]


# =========================================================================== aggregating state


def test_aggregating_state(table: StateTable) -> None:
    s = table.state(AVG, W1)
    assert s.get() is None
    s.add(2)
    s.add(4)
    assert s.get() == 3.0
    assert table.num_entries() == 1
    s.clear()
    assert s.get() is None
    assert table.num_entries() == 0


def test_aggregating_state_creates_accumulator_per_namespace(table: StateTable) -> None:
    table.state(AVG, W1).add(10)
    table.state(AVG, W2).add(2)
    table.state(AVG, W2).add(4)
    assert table.state(AVG, W1).get() == 10.0
    assert table.state(AVG, W2).get() == 3.0


# =========================================================================== map state


def test_map_state_put_get_contains(table: StateTable) -> None:
    s = table.state(MAP, W1)
    assert s.is_empty()
    assert s.get("a") is None
    assert not s.contains("a")
    s.put("a", 1)
    s.put("b", 2)
    assert s.get("a") == 1
    assert s.contains("b")
    assert not s.is_empty()
    assert sorted(s.keys()) == ["a", "b"]
    assert sorted(s.items()) == [("a", 1), ("b", 2)]
    assert table.num_entries() == 1


def test_map_state_put_all_and_overwrite(table: StateTable) -> None:
    s = table.state(MAP, W1)
    s.put_all({"a": 1, "b": 2})
    s.put("a", 10)
    assert dict(s.items()) == {"a": 10, "b": 2}


def test_map_state_remove_last_key_removes_entry(table: StateTable) -> None:
    s = table.state(MAP, W1)
    s.put("a", 1)
    s.put("b", 2)
    s.remove("a")
    assert table.num_entries() == 1
    s.remove("missing")
    s.remove("b")
    assert s.is_empty()
    assert table.num_entries() == 0
    s.remove("b")  # removing from an empty map is fine
    assert table.num_entries() == 0


def test_map_state_read_only_calls_store_nothing(table: StateTable) -> None:
    s = table.state(MAP, W1)
    s.get("a")
    s.contains("a")
    list(s.keys())
    list(s.items())
    s.is_empty()
    assert table.num_entries() == 0


def test_map_state_iteration_is_a_snapshot(table: StateTable) -> None:
    s = table.state(MAP, W1)
    s.put_all({"a": 1, "b": 2})
    for k in s.keys():  # noqa: SIM118 - MapState is not iterable
        s.remove(k)
    assert s.is_empty()


def test_map_state_put_all_empty_stores_nothing(table: StateTable) -> None:
    s = table.state(MAP, W1)
    s.put_all({})
    assert s.is_empty()
    assert table.num_entries() == 0


def test_map_state_none_value_is_stored(table: StateTable) -> None:
    s = table.state(MAP, W1)
    s.put("a", None)
    assert s.contains("a")
    assert table.num_entries() == 1


# =========================================================================== name / kind


def test_same_name_different_kind_raises(table: StateTable) -> None:
    table.state(ValueStateDescriptor("x"), W1)
    with pytest.raises(
        ValueError,
        match=r"state 'x' was declared as ValueStateDescriptor and is now requested as "
        r"ListStateDescriptor",
    ):
        table.state(ListStateDescriptor("x"), W1)


def test_kind_conflict_raises_in_another_namespace(table: StateTable) -> None:
    table.state(ReducingStateDescriptor("x", operator.add), W1).add(1)
    with pytest.raises(ValueError, match=r"declared as ReducingStateDescriptor"):
        table.state(MapStateDescriptor("x"), W2)
    with pytest.raises(ValueError, match=r"requested as AggregatingStateDescriptor"):
        table.merge_namespaces(AggregatingStateDescriptor("x", Average()), W1, [W2])


def test_same_name_same_kind_shares_table(table: StateTable) -> None:
    table.state(ReducingStateDescriptor("c", operator.add), W1).add(2)
    # A different descriptor object with the same name and kind reads the same state.
    assert table.state(ReducingStateDescriptor("c", operator.add), W1).get() == 2


def test_different_names_are_independent(table: StateTable) -> None:
    table.state(ValueStateDescriptor("a"), W1).update(1)
    table.state(ValueStateDescriptor("b"), W1).update(2)
    assert table.state(ValueStateDescriptor("a"), W1).value() == 1
    assert table.num_entries(W1) == 2


def test_descriptors_are_frozen_and_hashable() -> None:
    assert ValueStateDescriptor("v") == ValueStateDescriptor("v")
    assert hash(ListStateDescriptor("l")) == hash(ListStateDescriptor("l"))
    with pytest.raises(AttributeError):
        VALUE.name = "other"  # type: ignore[misc]


# =========================================================================== merge_namespaces


def test_merge_reducing(table: StateTable) -> None:
    table.state(SUM, W1).add(1)
    table.state(SUM, W2).add(2)
    table.state(SUM, W2).add(3)
    table.merge_namespaces(SUM, W3, [W1, W2])
    assert table.state(SUM, W3).get() == 6
    assert table.state(SUM, W1).get() is None
    assert table.state(SUM, W2).get() is None
    assert table.num_entries() == 1


def test_merge_reducing_into_existing_target(table: StateTable) -> None:
    table.state(SUM, W1).add(10)
    table.state(SUM, W2).add(5)
    table.merge_namespaces(SUM, W1, [W2])
    assert table.state(SUM, W1).get() == 15
    assert table.namespaces() == {W1}


def test_merge_reducing_with_reduce_function(table: StateTable) -> None:
    table.state(MAX, W1).add(4)
    table.state(MAX, W2).add(9)
    table.merge_namespaces(MAX, W3, [W1, W2])
    assert table.state(MAX, W3).get() == 9


def test_merge_list_target_first_then_sources_in_order(table: StateTable) -> None:
    table.state(LIST, W3).add("t")
    table.state(LIST, W1).add_all(["a1", "a2"])
    table.state(LIST, W2).add("b")
    table.merge_namespaces(LIST, W3, [W1, W2])
    assert table.state(LIST, W3).get() == ["t", "a1", "a2", "b"]
    assert table.num_entries() == 1


def test_merge_list_does_not_alias_source_lists(table: StateTable) -> None:
    table.state(LIST, W1).add(1)
    table.state(LIST, W2).add(2)
    table.merge_namespaces(LIST, W3, [W1, W2])
    table.state(LIST, W3).add(3)
    table.state(LIST, W1).add(100)
    assert table.state(LIST, W3).get() == [1, 2, 3]
    assert table.state(LIST, W1).get() == [100]


def test_merge_aggregating(table: StateTable) -> None:
    table.state(AVG, W1).add(1)
    table.state(AVG, W2).add(2)
    table.state(AVG, W2).add(6)
    table.merge_namespaces(AVG, W3, [W1, W2])
    assert table.state(AVG, W3).get() == 3.0
    assert table.num_entries() == 1


def test_merge_skips_missing_sources(table: StateTable) -> None:
    table.state(SUM, W2).add(4)
    table.merge_namespaces(SUM, W3, [W1, W2])
    assert table.state(SUM, W3).get() == 4
    assert table.num_entries() == 1


def test_merge_nothing_stores_nothing(table: StateTable) -> None:
    table.merge_namespaces(SUM, W3, [W1, W2])
    table.merge_namespaces(LIST, W3, [])
    assert table.num_entries() == 0


def test_merge_with_target_among_sources_keeps_target(table: StateTable) -> None:
    table.state(SUM, W1).add(1)
    table.state(SUM, W2).add(2)
    table.merge_namespaces(SUM, W1, [W1, W2])
    assert table.state(SUM, W1).get() == 3
    assert table.namespaces() == {W1}


def test_merge_only_touches_its_descriptor(table: StateTable) -> None:
    table.state(SUM, W1).add(1)
    table.state(LIST, W1).add("x")
    table.merge_namespaces(SUM, W2, [W1])
    assert table.state(LIST, W1).get() == ["x"]
    assert table.state(SUM, W2).get() == 1


@pytest.mark.parametrize("descriptor", [VALUE, MAP], ids=["value", "map"])
def test_merge_non_mergeable_raises(table: StateTable, descriptor: Any) -> None:
    with pytest.raises(ValueError, match=rf"state '{descriptor.name}' .* is not mergeable"):
        table.merge_namespaces(descriptor, W3, [W1])


def test_merge_value_state_leaves_state_untouched(table: StateTable) -> None:
    table.state(VALUE, W1).update(1)
    with pytest.raises(ValueError, match=r"ValueStateDescriptor"):
        table.merge_namespaces(VALUE, W2, [W1])
    assert table.state(VALUE, W1).value() == 1


# =========================================================================== counting / clearing


def test_num_entries_per_namespace_and_total(table: StateTable) -> None:
    table.state(VALUE, W1).update(1)
    table.state(SUM, W1).add(1)
    table.state(LIST, W2).add(1)
    table.state(MAP, GLOBAL_WINDOW).put("k", "v")
    assert table.num_entries() == 4
    assert table.num_entries(W1) == 2
    assert table.num_entries(W2) == 1
    assert table.num_entries(W3) == 0
    assert table.num_entries(GLOBAL_WINDOW) == 1
    assert table.namespaces() == {W1, W2, GLOBAL_WINDOW}


def test_num_entries_for_none_namespace(table: StateTable) -> None:
    table.state(VALUE, None).update(1)
    assert table.num_entries(None) == 1
    assert table.num_entries() == 1


def test_clear_namespace_removes_every_kind(table: StateTable) -> None:
    for ns in (W1, W2):
        table.state(VALUE, ns).update(1)
        table.state(SUM, ns).add(1)
        table.state(LIST, ns).add(1)
        table.state(AVG, ns).add(1)
        table.state(MAP, ns).put("k", 1)
    assert table.num_entries(W1) == 5
    table.clear_namespace(W1)
    assert table.num_entries(W1) == 0
    assert table.num_entries(W2) == 5
    assert table.namespaces() == {W2}
    table.clear_namespace(W1)  # idempotent
    table.clear_namespace(W3)  # unknown namespace
    assert table.num_entries() == 5


def test_clear_namespace_keeps_declared_kinds(table: StateTable) -> None:
    table.state(VALUE, W1).update(1)
    table.clear_namespace(W1)
    with pytest.raises(ValueError, match=r"declared as ValueStateDescriptor"):
        table.state(ListStateDescriptor("value"), W1)


def test_views_bound_to_namespace_after_clear(table: StateTable) -> None:
    s = table.state(LIST, W1)
    s.add(1)
    table.clear_namespace(W1)
    assert s.get() == []
    s.add(2)
    assert table.state(LIST, W1).get() == [2]
