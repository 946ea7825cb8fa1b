"""Flink's built-in window aggregations: ``sum``, ``min``, ``max``, ``min_by``, ``max_by``.

Each is a :class:`~windowing.functions.base.ReduceFunction` over one field of the elements, so
it runs wherever a reduce runs (the harness, the batch replay, streaming) and keeps the element
type:

* ``SUM``, ``MIN``, ``MAX``: the window's *first* element with the field replaced by the sum,
  the minimum or the maximum of that field over the window (Flink's ``SumAggregator`` and
  ``ComparableAggregator``: the other fields are not aggregated);
* ``MIN_BY``, ``MAX_BY``: the element with the smallest / largest value of the field; on a tie
  the first one (``first=True``, Flink's default) or the last one.

Values are ordered as Flink's ``ComparableAggregator`` orders them (``compareTo``): floats as
Java's ``Double.compareTo``, NaN above every number and ``-0.0`` below ``0.0``, whatever the
order of the elements. On a tie ``MIN`` / ``MAX`` take the later element's value, as Flink
does (visible only for equal values that look different, such as ``Decimal("1.0")`` and
``Decimal("1.00")``).

"First" and "last" follow the order in which the window combines its elements (time order when
elements are pre-aggregated per pane or timestamp, arrival order otherwise; see
``docs/semantics.md``).

Nulls: where Flink fails on a null field (a ``NullPointerException``), these follow SQL's
aggregates: ``None`` values are skipped, the sum / minimum / maximum of only ``None`` values is
``None``, and ``MIN_BY`` / ``MAX_BY`` never pick an element whose field is ``None`` over one
whose field has a value.

The field is a name (``Row``, named tuple, any mapping, dataclass or other object; a ``Row``
field is read by position, so columns named ``count`` or ``index`` work) or a position
(tuples, ``Row``, lists, arrays); for a stream of plain values, ``0`` or ``"*"`` is the value
itself, as in Flink. Results keep the element's type (a copy with the field replaced; a
dataclass's ``__post_init__`` does not run again). Flink's nested field expressions
(``"a.b"``) are not supported; a name is always a top-level field.

Examples
--------
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
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from windowing.functions.base import ReduceFunction

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

    Examples
    --------
    >>> FieldAggregation(AggregationType.MIN, "t").reduce({"t": 3, "x": 1}, {"t": 2, "x": 9})
    {'t': 2, 'x': 1}
    """

    aggregation: AggregationType
    field: str | int
    first: bool = True
    # Position of a named field per record class whose names are the class's (named tuples,
    # the runtime's Row classes): found once, not per element.
    _positions: dict[type, int] = dataclasses.field(
        default_factory=dict, init=False, repr=False, compare=False
    )

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

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.aggregation, self.field, self.first))  # without the cache

    def reduce(self, value1: Any, value2: Any) -> Any:
        a = self._get(value1)
        b = self._get(value2)
        kind = self.aggregation
        if kind is AggregationType.SUM:
            if b is None:
                return value1
            return self._with(value1, b if a is None else a + b)
        if b is None:
            return value1
        if a is None:
            return value2 if kind.picks_element else self._with(value1, b)
        lowest = kind in (AggregationType.MIN, AggregationType.MIN_BY)
        if lowest:
            a_wins, b_wins = _before(a, b), _before(b, a)
        else:
            a_wins, b_wins = _before(b, a), _before(a, b)
        if kind.picks_element:
            if b_wins or (not a_wins and not self.first):
                return value2
            return value1
        # Flink's MIN / MAX replace the field unless value1's is strictly more extreme (a tie
        # takes value2's, which may differ in representation, e.g. Decimal("1.0") / "1.00").
        return value1 if a_wins else self._with(value1, b)

    # -- field access ----------------------------------------------------------------------
    def _get(self, record: Any) -> Any:
        field = self.field
        try:
            if isinstance(record, tuple):
                if isinstance(field, int):
                    return record[field]
                index = self._position(record)
                if index is not None:
                    # By position: a Row's count / index / asDict are its methods.
                    return tuple.__getitem__(record, index)
                return getattr(record, field)
            if isinstance(field, int) and field == 0 and _is_atomic(record):
                return record  # Flink's position 0 of a stream of plain values
            if field == "*" and _is_atomic(record):
                return record
            if isinstance(field, int) or isinstance(record, Mapping):
                return record[field]
            return getattr(record, field)
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            msg = (
                f"{self.aggregation.value}: the element {record!r} has no field {field!r}"
                f" ({type(exc).__name__}: {exc})"
            )
            raise ValueError(msg) from exc

    def _with(self, record: Any, value: Any) -> Any:
        """A copy of ``record`` whose field is ``value`` (``record`` is not modified)."""
        field = self.field
        if isinstance(record, tuple):
            index = field if isinstance(field, int) else self._position(record)
            assert index is not None  # _get found the field
            values = (*record[:index], value, *record[index + 1 :])
            make = getattr(type(record), "_make", None)
            if make is not None:  # a named tuple
                return make(values)
            row: Any = tuple.__new__(type(record), values)
            if "__fields__" in getattr(record, "__dict__", ()):  # a plain pyspark Row
                row.__fields__ = record.__fields__  # type: ignore[attr-defined]
            return row
        if _is_atomic(record):
            return value
        copied: Any = copy.copy(record)
        if isinstance(field, int) or isinstance(record, Mapping):
            copied[field] = value  # dicts (of any type), lists, arrays
        elif dataclasses.is_dataclass(record):
            object.__setattr__(copied, field, value)  # also frozen; no __post_init__ again
        else:
            setattr(copied, field, value)
        return copied

    def _position(self, record: tuple[Any, ...]) -> int | None:
        """The position of the named field in a ``Row`` or named tuple (``None``: a tuple
        without field names); ``ValueError`` when it has no such field."""
        kind = type(record)
        index = self._positions.get(kind)
        if index is not None:
            return index
        names = getattr(record, "__fields__", None)
        if names is None:
            names = getattr(kind, "_fields", None)
            if names is None:
                return None
        index = list(names).index(self.field)
        if "__fields__" not in getattr(record, "__dict__", ()):  # the class's names
            self._positions[kind] = index
        return index


def _is_atomic(record: Any) -> bool:
    return isinstance(record, int | float | Decimal | str | bytes) and not isinstance(record, bool)


def _order(v: Any) -> Any:
    """Java's ``Double.compareTo`` order for floats (Flink's ``ComparableAggregator``, and
    Spark's ``min`` / ``max``): NaN above every number, ``-0.0`` below ``0.0``."""
    if v != v:  # NaN
        return (1, 0.0, 0.0)
    return (0, v, math.copysign(1.0, v) if v == 0 else 0.0)


def _before(a: Any, b: Any) -> bool:
    """Whether ``a`` comes strictly before ``b`` in Flink's order of the field's values."""
    if isinstance(a, float) or isinstance(b, float):
        return bool(_order(a) < _order(b))
    return bool(a < b)
