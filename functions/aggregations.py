"""Flink's built-in window aggregations: ``sum``, ``min``, ``max``, ``min_by``, ``max_by``.

Each is a :class:`~functions.base.ReduceFunction` over one field of the elements, so it runs
wherever a reduce runs (the harness, the batch replay, streaming) and keeps the element type:

* ``SUM``, ``MIN``, ``MAX``: the window's *first* element with the field replaced by the sum,
  the minimum or the maximum of that field over the window (Flink's ``SumAggregator`` and
  ``ComparableAggregator``: the other fields are not aggregated);
* ``MIN_BY``, ``MAX_BY``: the element with the smallest / largest value of the field; on a tie
  the first one (``first=True``, Flink's default) or the last one.

"First" and "last" follow the order in which the window combines its elements (time order when
elements are pre-aggregated per pane or timestamp, arrival order otherwise; see
``docs/semantics.md``).

Nulls: where Flink fails on a null field (a ``NullPointerException``), these follow SQL's
aggregates: ``None`` values are skipped, the sum / minimum / maximum of only ``None`` values is
``None``, and ``MIN_BY`` / ``MAX_BY`` never pick an element whose field is ``None`` over one
whose field has a value.

The field is a name (``Row``, named tuple, ``dict``, dataclass or other object) or a
position (``tuple`` and ``Row``). Flink's nested field expressions (``"a.b"``) are not
supported; a name is always a top-level field.

>>> from collections import namedtuple
>>> Sale = namedtuple("Sale", "shop amount")
>>> total = FieldAggregation(AggregationType.SUM, "amount")
>>> total.reduce(Sale("a", 2), Sale("b", 5))
Sale(shop='a', amount=7)
>>> FieldAggregation(AggregationType.MAX_BY, 1).reduce(("a", 2), ("b", 5))
('b', 5)
"""

from __future__ import annotations

import copy
import dataclasses
import enum
from dataclasses import dataclass
from typing import Any

from functions.base import ReduceFunction

__all__ = ["AggregationType", "FieldAggregation"]


class AggregationType(enum.Enum):
    """The built-in aggregations of Flink's ``WindowedStream`` (``sum``, ``min``, ``max``,
    ``minBy``, ``maxBy``)."""

    SUM = "sum"
    MIN = "min"
    MAX = "max"
    MIN_BY = "min_by"
    MAX_BY = "max_by"

    @property
    def picks_element(self) -> bool:
        """Whether the result is one of the elements (``MIN_BY`` / ``MAX_BY``)."""
        return self in (AggregationType.MIN_BY, AggregationType.MAX_BY)


@dataclass(frozen=True)
class FieldAggregation(ReduceFunction[Any]):
    """One of Flink's built-in aggregations over the field ``field``, as a reduce function.

    ``first`` only matters for ``MIN_BY`` / ``MAX_BY``: which element a tie keeps.

    >>> FieldAggregation(AggregationType.MIN, "t").reduce({"t": 3, "x": 1}, {"t": 2, "x": 9})
    {'t': 2, 'x': 1}
    """

    aggregation: AggregationType
    field: str | int
    first: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.aggregation, AggregationType):
            msg = (
                "aggregation must be an AggregationType, "
                f"got {type(self.aggregation).__name__} {self.aggregation!r}"
            )
            raise ValueError(msg)
        field = self.field
        if isinstance(field, bool) or not isinstance(field, str | int):
            msg = f"field must be a field name or position, got {type(field).__name__} {field!r}"
            raise ValueError(msg)
        if isinstance(field, str) and not field:
            msg = "field must be a non-empty field name, got ''"
            raise ValueError(msg)
        if isinstance(field, int) and field < 0:
            msg = f"field: a position must be >= 0, got {field}"
            raise ValueError(msg)
        if not isinstance(self.first, bool):
            msg = f"first must be a bool, got {type(self.first).__name__} {self.first!r}"
            raise ValueError(msg)

    def reduce(self, value1: Any, value2: Any) -> Any:
        a = self._get(value1)
        b = self._get(value2)
        kind = self.aggregation
        if kind is AggregationType.SUM:
            if b is None:
                return value1
            return self._with(value1, b if a is None else a + b)
        if kind.picks_element:
            if b is None:
                return value1
            if a is None:
                return value2
            better = b < a if kind is AggregationType.MIN_BY else b > a
            if better or (not self.first and b == a):
                return value2
            return value1
        if b is None or (a is not None and not (b < a if kind is AggregationType.MIN else b > a)):
            return value1
        return self._with(value1, b)

    # -- field access ----------------------------------------------------------------------
    def _get(self, record: Any) -> Any:
        field = self.field
        try:
            if isinstance(field, int) or isinstance(record, dict):
                return record[field]
            return getattr(record, field)
        except (AttributeError, IndexError, KeyError, TypeError) as exc:
            msg = (
                f"{self.aggregation.value}: the element {record!r} has no field {field!r}"
                f" ({type(exc).__name__}: {exc})"
            )
            raise ValueError(msg) from exc

    def _with(self, record: Any, value: Any) -> Any:
        """A copy of ``record`` whose field is ``value`` (``record`` is not modified)."""
        field = self.field
        if isinstance(record, dict):
            return {**record, field: value}
        if isinstance(record, tuple):
            names = getattr(record, "__fields__", None) or getattr(record, "_fields", None)
            index = field if isinstance(field, int) else list(names or ()).index(field)
            values = (*record[:index], value, *record[index + 1 :])
            if hasattr(record, "_make"):  # a named tuple
                return record._make(values)
            copied = tuple.__new__(type(record), values)
            if "__fields__" in getattr(record, "__dict__", ()):  # a plain pyspark Row
                copied.__fields__ = record.__fields__  # type: ignore[attr-defined]
            return copied
        if isinstance(field, str) and dataclasses.is_dataclass(record):
            return dataclasses.replace(record, **{field: value})  # type: ignore[type-var]
        if isinstance(field, str):
            copied = copy.copy(record)
            setattr(copied, field, value)
            return copied
        items = list(record)
        items[field] = value
        return items if isinstance(record, list) else type(record)(items)
