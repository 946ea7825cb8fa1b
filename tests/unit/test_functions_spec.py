"""Unit tests for functions.spec: the function specs and as_spec detection."""

from __future__ import annotations

import functools
import operator
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from windowing.functions import (
    Aggregate,
    AggregateFunction,
    Apply,
    Fold,
    FoldFunction,
    Process,
    ProcessWindowFunction,
    Reduce,
    ReduceFunction,
    WindowFunction,
    as_spec,
)

REPO = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------- sample functions


class Sum(ReduceFunction[int]):
    def reduce(self, value1: int, value2: int) -> int:
        return value1 + value2


class Count(AggregateFunction[Any, int, int]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, a: int, b: int) -> int:
        return a + b


class Collect(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        yield list(elements)


class Legacy(WindowFunction[Any, Any, Any, Any]):
    def apply(self, key: Any, window: Any, elements: Iterable[Any]) -> Iterable[Any]:
        return [list(elements)]


class Append(FoldFunction[Any, list[Any]]):
    def fold(self, accumulator: list[Any], value: Any) -> list[Any]:
        return [*accumulator, value]


class CallableObject:
    def __call__(self, a: int, b: int) -> int:
        return a * b


def add(a: int, b: int) -> int:
    return a + b


# =========================================================================== as_spec detection


@pytest.mark.parametrize(
    "function",
    [add, lambda a, b: a - b, operator.add, functools.partial(max), CallableObject(), Sum()],
    ids=["def", "lambda", "builtin", "partial", "callable-object", "ReduceFunction"],
)
def test_as_spec_reduce(function: Any) -> None:
    spec = as_spec(function)
    assert isinstance(spec, Reduce)
    assert spec.kind == "reduce"
    assert spec.function is function
    assert spec.window_function is None


def test_as_spec_reduce_with_window_functions() -> None:
    collect, legacy = Collect(), Legacy()
    spec = as_spec(add, collect)
    assert isinstance(spec, Reduce)
    assert spec.window_function is collect
    assert as_spec(Sum(), legacy).window_function is legacy


def test_reducer_of_callable_and_reduce_function() -> None:
    assert as_spec(add).reducer() is add  # type: ignore[union-attr]
    s = Sum()
    reducer = as_spec(s).reducer()  # type: ignore[union-attr]
    assert reducer(2, 3) == 5
    assert reducer == s.reduce


def test_as_spec_aggregate() -> None:
    count = Count()
    spec = as_spec(count)
    assert isinstance(spec, Aggregate)
    assert spec.kind == "aggregate"
    assert spec.function is count
    assert spec.window_function is None
    with_process = as_spec(count, Collect())
    assert isinstance(with_process, Aggregate)
    assert isinstance(with_process.window_function, Collect)


def test_as_spec_aggregate_that_is_also_callable_is_aggregate() -> None:
    class CallableCount(Count):
        def __call__(self, a: Any, b: Any) -> Any:
            return a

    assert as_spec(CallableCount()).kind == "aggregate"


def test_as_spec_process() -> None:
    collect = Collect()
    spec = as_spec(collect)
    assert isinstance(spec, Process)
    assert spec.kind == "process"
    assert spec.function is collect


def test_as_spec_apply() -> None:
    legacy = Legacy()
    spec = as_spec(legacy)
    assert isinstance(spec, Apply)
    assert spec.kind == "apply"
    assert spec.function is legacy


@pytest.mark.parametrize(
    "spec",
    [
        Reduce(add),
        Reduce(Sum(), Collect()),
        Aggregate(Count()),
        Fold(0, add),
        Fold([], Append(), Legacy()),
        Process(Collect()),
        Apply(Legacy()),
    ],
    ids=repr,
)
def test_as_spec_passes_specs_through(spec: Any) -> None:
    assert as_spec(spec) is spec


@pytest.mark.parametrize("spec", [Reduce(add), Aggregate(Count()), Fold(0, add)], ids=repr)
def test_as_spec_rejects_window_function_with_spec(spec: Any) -> None:
    with pytest.raises(ValueError, match=r"window_function cannot be given together with a"):
        as_spec(spec, Collect())


@pytest.mark.parametrize("function", [Collect(), Legacy()], ids=["process", "apply"])
def test_as_spec_rejects_window_function_for_non_incremental(function: Any) -> None:
    with pytest.raises(ValueError, match=r"is not incremental; window_function is not allowed"):
        as_spec(function, Collect())


def test_as_spec_rejects_bare_fold_function() -> None:
    with pytest.raises(ValueError, match=r"FoldFunction needs an initial value; pass Fold\("):
        as_spec(Append())


@pytest.mark.parametrize(
    ("function", "shown"),
    [
        (5, "int 5"),
        (None, "NoneType None"),
        ("sum", "str 'sum'"),
        ([add], "list"),
        (Sum, "ABCMeta <class"),
        (Count, "ABCMeta <class"),
        (Collect, "ABCMeta <class"),
        (Legacy, "ABCMeta <class"),
        (CallableObject, "type <class"),
        (int, "type <class 'int'>"),
    ],
)
def test_as_spec_rejects_other_values_naming_them(function: Any, shown: str) -> None:
    with pytest.raises(ValueError, match=r"^function must be a ReduceFunction or callable") as info:
        as_spec(function)
    assert f"got {shown}" in str(info.value)


@pytest.mark.parametrize(
    "window_function",
    [Count(), Sum(), add, 5, Collect, Legacy, Append()],
    ids=["aggregate", "reduce", "callable", "int", "process-class", "apply-class", "fold"],
)
def test_as_spec_rejects_wrong_window_function(window_function: Any) -> None:
    with pytest.raises(ValueError, match=r"^reduce: window_function must be a Process") as info:
        as_spec(add, window_function)
    assert type(window_function).__name__ in str(info.value)


def test_as_spec_aggregate_rejects_wrong_window_function() -> None:
    with pytest.raises(ValueError, match=r"^aggregate: window_function must be a .* got Count"):
        as_spec(Count(), Count())


# =========================================================================== spec constructors


def test_reduce_spec_rejects_non_callable() -> None:
    with pytest.raises(ValueError, match=r"^reduce: function must be a ReduceFunction .*int 3"):
        Reduce(3)


@pytest.mark.parametrize("function", [Count(), Collect(), Legacy()])
def test_reduce_spec_rejects_other_function_kinds(function: Any) -> None:
    with pytest.raises(ValueError, match=r"^reduce: function must be a ReduceFunction"):
        Reduce(function)


def test_reduce_spec_rejects_callable_aggregate() -> None:
    class CallableCount(Count):
        def __call__(self, a: Any, b: Any) -> Any:
            return a

    with pytest.raises(ValueError, match=r"^reduce: function must be a ReduceFunction or callable"):
        Reduce(CallableCount())


@pytest.mark.parametrize("function", [5, Sum(), Collect(), Legacy(), Count, "agg"])
def test_aggregate_spec_requires_aggregate_function(function: Any) -> None:
    with pytest.raises(ValueError, match=r"^aggregate: function must be an AggregateFunction"):
        Aggregate(function)


def test_fold_spec_with_callable_and_fold_function() -> None:
    spec = Fold(0, add)
    assert spec.kind == "fold"
    assert spec.initial_value == 0
    assert spec.folder() is add
    f = Append()
    spec2 = Fold([], f, Collect())
    assert spec2.folder()([1], 2) == [1, 2]
    assert isinstance(spec2.window_function, Collect)


@pytest.mark.parametrize("function", [3, None, Append, "fold"])
def test_fold_spec_rejects_bad_function(function: Any) -> None:
    with pytest.raises(ValueError, match=r"^fold: function must be a FoldFunction or a callable"):
        Fold([], function)


def test_fold_spec_rejects_bad_window_function() -> None:
    with pytest.raises(ValueError, match=r"^fold: window_function must be a"):
        Fold([], Append(), Count())


@pytest.mark.parametrize("function", [add, Legacy(), Collect, 5])
def test_process_spec_requires_process_window_function(function: Any) -> None:
    with pytest.raises(ValueError, match=r"^process: function must be a ProcessWindowFunction"):
        Process(function)


@pytest.mark.parametrize("function", [add, Collect(), Legacy, 5])
def test_apply_spec_requires_window_function(function: Any) -> None:
    with pytest.raises(ValueError, match=r"^apply: function must be a WindowFunction"):
        Apply(function)


def test_specs_are_frozen_values() -> None:
    spec = Reduce(add)
    assert spec == Reduce(add)
    assert spec != Reduce(operator.add)
    with pytest.raises(AttributeError):
        spec.function = operator.add  # type: ignore[misc]


def test_spec_kinds() -> None:
    kinds = {cls.kind for cls in (Reduce, Aggregate, Fold, Process, Apply)}
    assert kinds == {"reduce", "aggregate", "fold", "process", "apply"}


def test_process_window_function_clear_is_optional() -> None:
    assert Collect().clear(None) is None  # type: ignore[arg-type]


# =========================================================================== import order


@pytest.mark.parametrize("module", ["functions", "evictors"])
def test_package_imports_on_its_own(module: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
