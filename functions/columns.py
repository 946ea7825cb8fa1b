"""Spark SQL's aggregate functions over a window's rows, in pure Python.

``WindowedStream.agg(F.sum("amount"), F.count("*"), ...)`` takes Spark's own aggregate
functions. Where a native Spark plan computes a job (``docs/spark.md``), Spark evaluates them;
everywhere else (custom triggers, evictors, streaming) the window operator runs
:class:`ColumnAggregates`, an :class:`~windowing.functions.base.AggregateFunction` giving what Spark
gives for the same rows. The runtime evaluates each aggregate's argument expressions with
Spark before the rows reach the operator, so an element here is a row whose fields at
:attr:`ColumnAggregate.inputs` hold the arguments' values.

The rules, Spark SQL's (with ``spark.sql.ansi.enabled``, the default):

* ``count(*)`` counts rows, ``count(x, ...)`` the rows where no argument is null,
  ``count(DISTINCT x, ...)`` distinct such tuples (NaN equals NaN, ``-0.0`` equals ``0.0``);
* ``sum`` / ``avg`` / ``min`` / ``max`` / ``bool_and`` / ``bool_or`` skip nulls and give null
  over no value; ``sum`` of integers is a ``bigint`` (overflow raises, or wraps without ANSI),
  of decimals ``decimal(p + 10, s)``; ``avg`` is a ``double`` (values summed as doubles), of
  decimals ``decimal(p + 4, s + 4)`` rounded half up;
* ``min`` / ``max`` order NaN above every number;
* ``first`` / ``last``: the value of the window's first / last row **by event time** (Spark
  leaves it to the order rows happen to arrive in; here it is deterministic), nulls skipped
  with ``ignorenulls=True``;
* ``min_by(x, o)`` / ``max_by(x, o)``: ``x`` of the row with the smallest / largest ``o``
  (rows with a null ``o`` skipped).

Ties (``first`` / ``last`` at one event time, ``min_by`` / ``max_by`` at one ordering value)
go to the row that comes first in the replay order: event time, then arrival order (when
given), then the row's content hash. The runtime puts that order key, a tuple, in the field
:attr:`ColumnAggregates.order`. Floating-point sums depend on the order of additions: like
Spark's, their last bits are not specified.

Examples
--------
>>> count = ColumnAggregate(AggKind.COUNT, ())
>>> total = ColumnAggregate(AggKind.SUM, (0,), value=ValueKind.INTEGRAL)
>>> f = ColumnAggregates((count, total))
>>> acc = f.create_accumulator()
>>> for row in [(3,), (None,), (4,)]:
...     acc = f.add(row, acc)
>>> f.get_result(acc)
(3, 7)
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Context, Decimal, localcontext
from typing import Any

from windowing.functions.base import AggregateFunction

__all__ = ["AggKind", "ColumnAggregate", "ColumnAggregates", "ValueKind"]

_INT64 = 2**63


class AggKind(enum.Enum):
    """The aggregate functions :class:`ColumnAggregates` computes (Spark SQL names)."""

    COUNT = "count"
    SUM = "sum"
    AVG = "avg"
    MIN = "min"
    MAX = "max"
    FIRST = "first"
    LAST = "last"
    MIN_BY = "min_by"
    MAX_BY = "max_by"
    COUNT_IF = "count_if"
    BOOL_AND = "bool_and"
    BOOL_OR = "bool_or"
    PANDAS_UDF = "pandas_udf"
    """A grouped-aggregate ``pandas_udf``: :attr:`ColumnAggregate.udf` called once per
    firing with the window's argument rows, in the replay order."""

    @property
    def ordered(self) -> bool:
        """Whether the result is one row's value, picked by which row comes first (the order
        key decides)."""
        return self in (AggKind.FIRST, AggKind.LAST, AggKind.MIN_BY, AggKind.MAX_BY)

    @property
    def needs_order(self) -> bool:
        """Whether the aggregate reads the order key: a pick, or a pandas UDF (which sees
        the rows in the replay order)."""
        return self.ordered or self is AggKind.PANDAS_UDF


class ValueKind(enum.Enum):
    """What an aggregate's (first) argument holds, for the arithmetic and ordering."""

    INTEGRAL = "integral"
    FLOATING = "floating"
    DECIMAL = "decimal"
    ORDERED = "ordered"
    """Strings, binary, dates, timestamps, booleans: compared as Python compares them (Spark's
    order for these types)."""
    OTHER = "other"
    """Arrays, structs, maps: only counted, picked (first, last, min_by, max_by)."""


@dataclass(frozen=True)
class ColumnAggregate:
    """One aggregate: ``kind`` over the element fields at ``inputs``.

    ``scale`` / ``precision`` are the result's for a decimal ``sum`` / ``avg``; ``ansi`` makes
    an integer or decimal overflow raise (else an integer sum wraps and a decimal one is
    null). ``name`` is the output column, for error messages. ``udf`` (``PANDAS_UDF`` only):
    the function of the window's argument rows (tuples of the ``inputs`` fields, in the
    replay order; none when an evictor removed every row) giving the value.

    Examples
    --------
    >>> ColumnAggregate(AggKind.MAX, (2,), value=ValueKind.FLOATING).kind.value
    'max'
    """

    kind: AggKind
    inputs: tuple[int, ...]
    distinct: bool = False
    ignore_nulls: bool = False
    value: ValueKind = ValueKind.OTHER
    precision: int | None = None
    scale: int | None = None
    ansi: bool = True
    name: str = ""
    udf: Callable[[list[tuple[Any, ...]]], Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, AggKind):
            msg = f"kind must be an AggKind, got {type(self.kind).__name__} {self.kind!r}"
            raise ValueError(msg)
        if (self.udf is not None) != (self.kind is AggKind.PANDAS_UDF):
            msg = f"udf: a function for pandas_udf aggregates only, got {self.udf!r}"
            raise ValueError(msg)
        arity = {
            AggKind.COUNT: None,
            AggKind.PANDAS_UDF: None,
            AggKind.MIN_BY: 2,
            AggKind.MAX_BY: 2,
        }.get(self.kind, 1)
        if arity is not None and len(self.inputs) != arity:
            msg = (
                f"{self.kind.value} takes {arity} argument(s), got {len(self.inputs)} "
                f"(inputs={self.inputs!r})"
            )
            raise ValueError(msg)
        if self.distinct and self.kind is not AggKind.COUNT:
            msg = f"DISTINCT is supported with count only, got {self.kind.value}"
            raise ValueError(msg)
        decimal_result = self.value is ValueKind.DECIMAL and self.kind in (
            AggKind.SUM,
            AggKind.AVG,
        )
        if decimal_result and (self.precision is None or self.scale is None):
            msg = f"{self.kind.value} of a decimal needs the result's precision and scale"
            raise ValueError(msg)


def _float_key(v: float) -> tuple[int, float]:
    """Spark's order of doubles: NaN above every number."""
    return (1, 0.0) if v != v else (0, v)


def _instant(v: datetime) -> datetime:
    """An aware datetime as UTC: Python compares two datetimes sharing one ``tzinfo`` by
    their wall-clock times, so the two instants of a repeated hour would tie (or invert)."""
    return v.astimezone(UTC) if v.tzinfo is not None else v


def _distinct_value(v: Any) -> Any:
    """Values equal for ``count(DISTINCT ...)`` map to one value (NaN to one NaN; a
    timestamp to its instant)."""
    if isinstance(v, float) and v != v:
        return "NaN"
    if isinstance(v, datetime):
        return _instant(v)
    return v


#: Decimal arithmetic of sums: wide enough for any Spark decimal (38 digits) without rounding.
_EXACT = Context(prec=100)


def _plus(a: Any, b: Any) -> Any:
    """``a + b``, exact for decimals (Python's default context keeps 28 digits)."""
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return _EXACT.add(a, b)
    return a + b


_NO_VALUE = None  # a state with no value yet


@dataclass(frozen=True)
class ColumnAggregates(AggregateFunction[Any, list[Any], Any]):
    """Several :class:`ColumnAggregate` over the same rows; the result is a tuple, one value
    per aggregate, or with ``names`` a dict of the values by name (one output column each,
    whatever their types). ``order`` is the element field holding the replay-order key
    (needed by ``first``, ``last``, ``min_by``, ``max_by``).

    Examples
    --------
    >>> f = ColumnAggregates((ColumnAggregate(AggKind.MAX, (0,), value=ValueKind.FLOATING),))
    >>> f.get_result(f.merge(f.add((1.5,), f.create_accumulator()),
    ...                      f.add((float("nan"),), f.create_accumulator())))
    (nan,)
    """

    aggregates: tuple[ColumnAggregate, ...]
    order: int | None = None
    names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not self.aggregates:
            msg = "ColumnAggregates needs at least one aggregate"
            raise ValueError(msg)
        if self.names is not None and len(self.names) != len(self.aggregates):
            msg = f"names: {len(self.names)} names for {len(self.aggregates)} aggregates"
            raise ValueError(msg)
        if self.order is None and any(a.kind.needs_order for a in self.aggregates):
            kinds = [a.kind.value for a in self.aggregates if a.kind.needs_order]
            msg = f"{kinds} need the order key field (order=None)"
            raise ValueError(msg)

    @property
    def order_insensitive(self) -> bool:  # type: ignore[override]
        """Exact whatever the order of rows, unless a float is summed (or averaged)."""
        return not any(_float_sum(a) for a in self.aggregates)

    def create_accumulator(self) -> list[Any]:
        return [_initial(a) for a in self.aggregates]

    def add(self, value: Any, accumulator: list[Any]) -> list[Any]:
        order = None if self.order is None else value[self.order]
        for i, a in enumerate(self.aggregates):
            accumulator[i] = _add(a, accumulator[i], value, order)
        return accumulator

    def merge(self, a: list[Any], b: list[Any]) -> list[Any]:
        return [_merge(g, x, y) for g, x, y in zip(self.aggregates, a, b, strict=True)]

    def get_result(self, accumulator: list[Any]) -> Any:
        values = tuple(_result(a, s) for a, s in zip(self.aggregates, accumulator, strict=True))
        return values if self.names is None else dict(zip(self.names, values, strict=True))


# -- per kind ----------------------------------------------------------------------------------
def _initial(a: ColumnAggregate) -> Any:
    kind = a.kind
    if kind is AggKind.COUNT:
        return set() if a.distinct else 0
    if kind is AggKind.COUNT_IF:
        return 0
    if kind is AggKind.PANDAS_UDF:
        return []  # (order key, argument values) of each row
    if kind is AggKind.AVG:
        return [None, 0]
    return _NO_VALUE


def _float_sum(a: ColumnAggregate) -> bool:
    """Whether ``a`` adds floats (a float ``sum``; ``avg`` of anything but decimals)."""
    if a.kind is AggKind.SUM:
        return a.value is ValueKind.FLOATING
    return a.kind is AggKind.AVG and a.value is not ValueKind.DECIMAL


def _sum_term(a: ColumnAggregate, v: Any) -> Any:
    return float(v) if a.kind is AggKind.AVG and a.value is not ValueKind.DECIMAL else v


def _add(a: ColumnAggregate, state: Any, row: Any, order: Any) -> Any:
    kind = a.kind
    if kind is AggKind.COUNT:
        values = [row[i] for i in a.inputs]
        if any(v is None for v in values):
            return state
        if a.distinct:
            state.add(tuple(_distinct_value(v) for v in values))
            return state
        return state + 1
    if kind is AggKind.PANDAS_UDF:  # (every row: Spark hands a pandas UDF its nulls too)
        state.append((order, tuple(row[i] for i in a.inputs)))
        return state
    v = row[a.inputs[0]]
    if kind is AggKind.FIRST or kind is AggKind.LAST:
        if v is None and a.ignore_nulls:
            return state
        return _pick(kind, state, (order, v))
    if kind is AggKind.MIN_BY or kind is AggKind.MAX_BY:
        o = row[a.inputs[1]]
        if o is None:
            return state
        return _pick_by(a, state, (o, order, v))
    if v is None:
        return state
    if kind is AggKind.SUM:
        return v if state is None else _plus(state, v)
    if kind is AggKind.AVG:
        term = _sum_term(a, v)
        state[0] = term if state[0] is None else _plus(state[0], term)
        state[1] += 1
        return state
    if kind is AggKind.MIN or kind is AggKind.MAX:
        return _extreme(a, state, v)
    if kind is AggKind.COUNT_IF:
        return state + 1 if v else state
    if kind is AggKind.BOOL_AND:
        return bool(v) if state is None else state and bool(v)
    return bool(v) if state is None else state or bool(v)  # BOOL_OR


def _pick(kind: AggKind, state: Any, candidate: tuple[Any, Any]) -> Any:
    """``first``: the smaller order key wins (a tie keeps ``state``); ``last``: the larger."""
    if state is None:
        return candidate
    if kind is AggKind.FIRST:
        return candidate if candidate[0] < state[0] else state
    return candidate if candidate[0] > state[0] else state


def _key(v: Any) -> Any:
    if isinstance(v, float):
        return _float_key(v)
    return _instant(v) if isinstance(v, datetime) else v


def _pick_by(a: ColumnAggregate, state: Any, candidate: tuple[Any, Any, Any]) -> Any:
    """``min_by`` / ``max_by`` over ``(ordering, order key, value)``: the extreme ordering
    value, a tie to the smaller order key."""
    if state is None:
        return candidate
    c, s = _key(candidate[0]), _key(state[0])
    if c == s:
        return candidate if candidate[1] < state[1] else state
    if a.kind is AggKind.MIN_BY:
        return candidate if c < s else state
    return candidate if c > s else state


def _extreme(a: ColumnAggregate, state: Any, v: Any) -> Any:
    if state is None:
        return v
    if a.kind is AggKind.MIN:
        return v if _key(v) < _key(state) else state
    return v if _key(v) > _key(state) else state


def _merge(a: ColumnAggregate, x: Any, y: Any) -> Any:
    kind = a.kind
    if kind is AggKind.COUNT:
        return x | y if a.distinct else x + y
    if kind is AggKind.COUNT_IF or kind is AggKind.PANDAS_UDF:
        return x + y  # (a new list: panes' accumulators are merged into several windows)
    if kind is AggKind.AVG:
        if x[0] is None:
            return [y[0], y[1]]
        if y[0] is None:
            return [x[0], x[1]]
        return [_plus(x[0], y[0]), x[1] + y[1]]
    if y is None:
        return x
    if x is None:
        return y
    if kind is AggKind.FIRST or kind is AggKind.LAST:
        return _pick(kind, x, y)
    if kind is AggKind.MIN_BY or kind is AggKind.MAX_BY:
        return _pick_by(a, x, y)
    if kind is AggKind.SUM:
        return _plus(x, y)
    if kind is AggKind.MIN or kind is AggKind.MAX:
        return _extreme(a, x, y)
    if kind is AggKind.BOOL_AND:
        return x and y
    return x or y  # BOOL_OR


def _result(a: ColumnAggregate, state: Any) -> Any:
    kind = a.kind
    if kind is AggKind.COUNT:
        return len(state) if a.distinct else state
    if kind is AggKind.FIRST or kind is AggKind.LAST:
        return None if state is None else state[1]
    if kind is AggKind.MIN_BY or kind is AggKind.MAX_BY:
        return None if state is None else state[2]
    if kind is AggKind.PANDAS_UDF:
        assert a.udf is not None
        return a.udf([values for _, values in sorted(state, key=lambda item: item[0])])
    if kind is AggKind.SUM:
        if state is None:
            return None
        if a.value is ValueKind.INTEGRAL:
            return _fit_long(a, state)
        if a.value is ValueKind.DECIMAL:
            return _fit_decimal(a, Decimal(state))
        return state
    if kind is AggKind.AVG:
        total, n = state
        if total is None:
            return None
        if a.value is ValueKind.DECIMAL:
            with localcontext(Context(prec=100)):
                return _fit_decimal(a, Decimal(total) / n)
        return total / n
    return state


def _fit_long(a: ColumnAggregate, total: int) -> int:
    if -_INT64 <= total < _INT64:
        return total
    if a.ansi:
        msg = (
            f"sum {a.name!r}: {total} overflows bigint (Spark's [ARITHMETIC_OVERFLOW]; "
            "set spark.sql.ansi.enabled=false to wrap around, or sum a decimal cast)"
        )
        raise ArithmeticError(msg)
    return (total + _INT64) % (2 * _INT64) - _INT64


def _fit_decimal(a: ColumnAggregate, value: Decimal) -> Decimal | None:
    assert a.precision is not None and a.scale is not None
    with localcontext(Context(prec=100)):
        exact = value.quantize(Decimal(1).scaleb(-a.scale), rounding=ROUND_HALF_UP)
        if exact.is_zero() or exact.adjusted() < a.precision - a.scale:
            return exact
    if a.ansi:
        msg = (
            f"{a.kind.value} {a.name!r}: {value} does not fit decimal({a.precision},"
            f"{a.scale}) (Spark's [NUMERIC_VALUE_OUT_OF_RANGE])"
        )
        raise ArithmeticError(msg)
    return None
