"""``.agg`` columns of tumbling windows on whole Arrow columns, in streaming.

A streaming ``.agg(F.count("*"), F.sum("amount"), ...)`` runs
:class:`~windowing.functions.columns.ColumnAggregates` in the window operator, whose state per
window is a list of accumulators. Where every aggregate is exact in any order of rows
(:func:`aggregate_items_of`: ``count`` without ``DISTINCT``, ``count_if``, ``sum`` and ``avg``
of integers, ``min`` / ``max`` of integers and floats, ``bool_and`` / ``bool_or``), the
columnar state keeps those accumulators as columns next to the key columns, one row (an
*item*) per window (:class:`AggregateItems`), and a call adds a key group's rows with numpy:

* a row becomes an item of its own: ``count`` 1 or 0 (a null argument), ``count_if`` 1 or 0,
  ``sum`` / ``min`` / ``max`` / ``bool_*`` the argument (null: no value yet), ``avg`` the
  argument as a double and 1 or 0;
* a window's items reduce to one: counts and sums add, extremes keep the extreme, an
  accumulator is null while no value came;
* a fired window's results are computed from its item as the operator's ``get_result`` does.

A call is left to the operator (the items convert to and from its accumulator lists) when the
columns could give another result: an integer sum that could leave 64 bits (the operator
raises under ANSI, or wraps), an ``avg`` whose sum of doubles could round (beyond ``2**53``),
a float ``min`` / ``max`` meeting NaN or ``-0.0`` (Spark's order of doubles, not numpy's).
Without an argument or order that depends on the order of rows, the results equal the
operator's whatever the order in which a micro-batch's rows reach the window.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from windowing.functions.columns import AggKind, ColumnAggregates, ValueKind
from windowing.functions.spec import Aggregate, WindowFunctionSpec
from windowing.job import WindowConfig
from windowing.spark.columnar.core import (
    default_firing,
    null_times,
    ordered_floats,
    unordered_floats,
    window_groups,
)
from windowing.spark.columnar.ranges import range_reduce

__all__ = ["AggregateItems", "aggregate_items", "aggregate_items_of", "spec_items"]

_Array = np.ndarray[Any, Any]

#: The prefix of the accumulator columns of a columnar ``.agg`` state.
ACC = "__pw_acc_"

# int64 sums are exact while |sum| < 2**63; sums of doubles of integers while < 2**53.
_INT_LIMIT = 2**63
_FLOAT_LIMIT = 2**53

_COUNTS = (AggKind.COUNT, AggKind.COUNT_IF)


@dataclass(frozen=True)
class AggregateItems:
    """The items of ``.agg`` columns: per window the key columns ``keys`` and the
    accumulators of ``function``'s aggregates, whose arguments are the input columns
    ``args`` (per aggregate, its argument names). See the module docstring.

    Example::

        items = aggregate_items_of(function, ("key",), input_arrow)  # None: not on columns
        state = items.items_of(rows)  # one item per row
    """

    function: ColumnAggregates
    keys: tuple[str, ...]
    args: tuple[tuple[str, ...], ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The output columns, one per aggregate."""
        names = self.function.names
        assert names is not None
        return names

    # -------------------------------------------------------------------- rows to items
    def rows_needing_the_operator(
        self, rows: pa.Table, times: pa.ChunkedArray
    ) -> tuple[_Array, _Array]:
        """No event time, or a float ``min`` / ``max`` argument that is NaN or ``-0.0``."""
        if rows.num_rows == 0:
            return np.zeros(0, np.bool_), np.zeros(0, np.int64)
        mask, t = null_times(times)
        for a, args in zip(self.function.aggregates, self.args, strict=True):
            if a.kind in (AggKind.MIN, AggKind.MAX) and a.value is ValueKind.FLOATING:
                mask |= unordered_floats(rows.column(args[0]).fill_null(1.0).to_numpy())
        return mask, t

    def items_of(self, rows: pa.Table) -> pa.Table:
        """Each input row as an item (see the module docstring)."""
        n = rows.num_rows
        arrays: list[pa.Array | pa.ChunkedArray] = [rows.column(k) for k in self.keys]
        names = list(self.keys)
        for i, (a, args) in enumerate(zip(self.function.aggregates, self.args, strict=True)):
            kind = a.kind
            if kind is AggKind.COUNT:
                counted = np.ones(n, np.int64)
                for name in args:
                    counted &= rows.column(name).is_valid().to_numpy(zero_copy_only=False)
                arrays.append(pa.array(counted, pa.int64()))
            elif kind is AggKind.COUNT_IF:
                arrays.append(pc.fill_null(rows.column(args[0]), False).cast(pa.int64()))
            elif kind is AggKind.SUM:
                arrays.append(rows.column(args[0]).cast(pa.int64()))
            elif kind is AggKind.AVG:
                values = rows.column(args[0])
                # beyond 2**53 the double rounds: the reduction then leaves it to the operator
                arrays.append(values.cast(pa.float64(), safe=False))
                names.append(f"{ACC}{i}")
                arrays.append(values.is_valid().cast(pa.int64()))
                names.append(f"{ACC}{i}_n")
                continue
            else:
                arrays.append(rows.column(args[0]))
            names.append(f"{ACC}{i}")
        return pa.Table.from_arrays(arrays, names=names)

    # -------------------------------------------------------------------- reduction
    def reduce(
        self, group: _Array, items: pa.Table, codes: _Array | None
    ) -> tuple[_Array, _Array, pa.Table] | None:
        """The items of each window (``group``: their window starts; ``codes``: their keys)
        reduced to one, or ``None`` when the columns could give another result than the
        operator."""
        perm, first_rows = window_groups(group, codes)
        starts = (group if perm is None else group[perm])[first_rows]
        carriers = first_rows if perm is None else perm[first_rows]
        reduced = self._reduced(items, perm, _Groups(first_rows), carriers)
        return None if reduced is None else (starts, carriers, reduced)

    def reduce_ranges(self, items: pa.Table, lo: _Array, hi: _Array) -> pa.Table | None:
        """The items ``[lo[i], hi[i])`` (non-empty ranges of one key's items each) reduced to
        one per range, or ``None`` when the columns could give another result than the
        operator: the windows of hopping panes, each a range of a key's panes."""
        return self._reduced(items, None, _Ranges(lo, hi), lo)

    def _reduced(
        self, items: pa.Table, perm: _Array | None, spans: _Spans, carriers: _Array
    ) -> pa.Table | None:
        """The items of each of ``spans`` (over the items permuted by ``perm``) reduced to
        one; the key columns are those of the items ``carriers``."""
        n = items.num_rows
        take = pa.array(carriers, pa.int64())
        names = list(self.keys)
        arrays = [items.column(k).take(take) for k in self.keys]  # none for window_all

        def numbers(column: pa.ChunkedArray, fill: Any) -> tuple[_Array, _Array]:
            valid = column.is_valid().to_numpy(zero_copy_only=False)
            v = column.fill_null(fill).to_numpy() if column.null_count else column.to_numpy()
            return (v, valid) if perm is None else (v[perm], valid[perm])

        for i, a in enumerate(self.function.aggregates):
            name = f"{ACC}{i}"
            column = items.column(name)
            kind = a.kind
            if kind in _COUNTS:
                v, _ = numbers(column, 0)
                names.append(name)
                arrays.append(pa.array(spans.total(v)))
            elif kind is AggKind.SUM:
                v, valid = numbers(column, 0)
                if n and max(abs(int(v.min())), abs(int(v.max()))) * n >= _INT_LIMIT:
                    return None  # the sum could leave 64 bits: the operator decides
                names.append(name)
                arrays.append(pa.array(spans.total(v), mask=~spans.any(valid)))
            elif kind is AggKind.AVG:
                v, valid = numbers(column, 0.0)
                if not _whole_numbers(v):
                    return None  # not a sum of integers (state converted from the operator)
                if float(np.abs(v).sum()) >= _FLOAT_LIMIT:
                    return None  # a sum of doubles that could round: the order matters
                counts, _ = numbers(items.column(f"{name}_n"), 0)
                count = spans.total(counts)
                names += [name, f"{name}_n"]
                arrays += [pa.array(spans.total(v), mask=count == 0), pa.array(count)]
            else:
                found = self._extreme(kind, column, numbers, spans)
                if found is None:
                    return None
                names.append(name)
                arrays.append(found)
        return pa.Table.from_arrays(arrays, names=names)

    @staticmethod
    def _extreme(
        kind: AggKind,
        column: pa.ChunkedArray,
        numbers: Any,
        spans: _Spans,
    ) -> pa.Array | None:
        """Per span the smallest (``min``, ``bool_and``) or largest value of ``column``,
        null without one; ``None`` for floats holding NaN or ``-0.0``."""
        dtype = column.type
        lowest = kind in (AggKind.MIN, AggKind.BOOL_AND)
        if pa.types.is_boolean(dtype):
            v, valid = numbers(column.cast(pa.int8()), 1 if lowest else 0)
        elif pa.types.is_floating(dtype):
            v, valid = numbers(column, np.inf if lowest else -np.inf)
            if not ordered_floats(v[valid]):
                return None
        else:
            info = np.iinfo(column.type.to_pandas_dtype())
            v, valid = numbers(column, info.max if lowest else info.min)
        extreme = spans.extreme(v, np.minimum if lowest else np.maximum)
        return pa.array(extreme, mask=~spans.any(valid)).cast(dtype)

    def usable_state(self, items: pa.Table) -> bool:
        """Whether no float extreme is NaN or ``-0.0`` and every ``avg`` sum is a whole
        number (what an operator call may leave)."""
        for i, a in enumerate(self.function.aggregates):
            column = items.column(f"{ACC}{i}")
            if pa.types.is_floating(column.type) and a.kind is not AggKind.AVG:
                if not ordered_floats(column.drop_null().to_numpy()):
                    return False
            elif a.kind is AggKind.AVG and not _whole_numbers(column.drop_null().to_numpy()):
                return False
        return True

    # -------------------------------------------------------------------- results
    def results_of(self, items: pa.Table) -> pa.Table:
        """The key columns and output columns of the items' windows (``get_result`` of
        their accumulators)."""
        arrays = [items.column(k) for k in self.keys]
        for i, a in enumerate(self.function.aggregates):
            column = items.column(f"{ACC}{i}")
            if a.kind is AggKind.AVG:
                count = items.column(f"{ACC}{i}_n").cast(pa.float64())
                column = pc.divide(column, count)  # null where no value came
            arrays.append(column)
        return pa.Table.from_arrays(arrays, names=[*self.keys, *self.names])

    # -------------------------------------------------------------------- the operator's form
    def records_of(self, items: pa.Table) -> list[Any]:
        """Each item's accumulator list, as ``ColumnAggregates.create_accumulator`` and
        ``add`` build it."""
        columns: list[list[Any]] = []
        for i, a in enumerate(self.function.aggregates):
            values = items.column(f"{ACC}{i}").to_pylist()
            if a.kind is AggKind.AVG:
                counts = items.column(f"{ACC}{i}_n").to_pylist()
                columns.append(
                    [[s, c] for s, c in zip(values, counts, strict=True)]  # fresh lists
                )
            else:
                columns.append(values)
        return [list(acc) for acc in zip(*columns, strict=True)] if columns else []

    def encode(
        self, accumulators: Sequence[Any], key_columns: Sequence[pa.Array], types: pa.Schema
    ) -> pa.Table | None:
        """The items of the operator's accumulator lists ``accumulators`` (one key's
        windows, its key columns ``key_columns``; ``types``: an items table's schema), or
        ``None`` when one does not fit its column (an integer sum beyond 64 bits)."""
        arrays: list[pa.Array] = list(key_columns)
        names = list(self.keys)
        try:
            for i, a in enumerate(self.function.aggregates):
                name = f"{ACC}{i}"
                values = [acc[i] for acc in accumulators]
                if a.kind is AggKind.AVG:
                    arrays.append(pa.array([s for s, _ in values], pa.float64()))
                    arrays.append(pa.array([c for _, c in values], pa.int64()))
                    names += [name, f"{name}_n"]
                    continue
                arrays.append(pa.array(values, types.field(name).type))
                names.append(name)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return None
        return pa.Table.from_arrays(arrays, names=names)

    def items_schema(self, input_arrow: pa.Schema) -> pa.Schema:
        """The schema of the items of rows of ``input_arrow``."""
        return self.items_of(input_arrow.empty_table()).schema

    def describe(self) -> str:
        kinds = ", ".join(a.kind.value for a in self.function.aggregates)
        return f".agg columns ({kinds}) as accumulator columns"


class _Spans(ABC):
    """Spans of items to reduce: contiguous groups, or ranges that may overlap."""

    @abstractmethod
    def total(self, v: _Array) -> _Array:
        """The sum of each span's values."""

    @abstractmethod
    def extreme(self, v: _Array, ufunc: np.ufunc) -> _Array:
        """``ufunc`` (``np.minimum`` / ``np.maximum``) over each span's values."""

    def any(self, valid: _Array) -> _Array:
        """Whether one of each span's items is ``valid``."""
        return self.total(valid.astype(np.int64)) > 0  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _Groups(_Spans):
    """Consecutive groups of items, starting at ``first_rows``."""

    first_rows: _Array

    def total(self, v: _Array) -> _Array:
        return np.add.reduceat(v, self.first_rows)  # type: ignore[no-any-return]

    def extreme(self, v: _Array, ufunc: np.ufunc) -> _Array:
        return ufunc.reduceat(v, self.first_rows)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _Ranges(_Spans):
    """Non-empty ranges ``[lo, hi)`` of items: sums are differences of prefix sums (exact
    for integers, and for doubles of whole numbers whose total is below ``2**53``), extremes
    come from a sparse table (:func:`~windowing.spark.columnar.ranges.range_reduce`)."""

    lo: _Array
    hi: _Array

    def total(self, v: _Array) -> _Array:
        prefix = np.concatenate((np.zeros(1, v.dtype), np.cumsum(v)))
        return prefix[self.hi] - prefix[self.lo]  # type: ignore[no-any-return]

    def extreme(self, v: _Array, ufunc: np.ufunc) -> _Array:
        return range_reduce(v, ufunc, self.lo, self.hi)


def _whole_numbers(v: _Array) -> bool:
    """Whether the doubles ``v`` are finite whole numbers (sums of integers)."""
    return bool(np.isfinite(v).all() and (np.floor(v) == v).all())


def aggregate_items(
    config: WindowConfig,
    spec: WindowFunctionSpec,
    keys: Sequence[str],
    input_arrow: pa.Schema | None,
) -> AggregateItems | None:
    """The accumulator columns of a streaming ``.agg`` (function ``spec``) with the default
    trigger, no evictor and a lateness after which windows are cleaned up
    (:func:`aggregate_items_of`), or ``None``."""
    if not default_firing(config.trigger, config.evictor, config.allowed_lateness):
        return None
    return spec_items(spec, keys, input_arrow)


def spec_items(
    spec: WindowFunctionSpec, keys: Sequence[str], input_arrow: pa.Schema | None
) -> AggregateItems | None:
    """The accumulator columns of ``.agg`` columns (``spec``) without a window function
    (:func:`aggregate_items_of`), whatever the trigger and evictor, or ``None``."""
    if not isinstance(spec, Aggregate) or spec.window_function is not None:
        return None
    if type(spec.function) is not ColumnAggregates or input_arrow is None:
        return None
    return aggregate_items_of(spec.function, keys, input_arrow)


def aggregate_items_of(
    function: ColumnAggregates, keys: Sequence[str], input_arrow: pa.Schema
) -> AggregateItems | None:
    """The columnar items of ``function`` (the ``.agg`` columns over rows of ``input_arrow``,
    keyed by ``keys``), or ``None`` when an aggregate is not exact on columns in any order of
    rows (see the module docstring)."""
    if function.names is None:
        return None
    args: list[tuple[str, ...]] = []
    for a in function.aggregates:
        names = tuple(input_arrow.field(i).name for i in a.inputs)
        types = [input_arrow.field(i).type for i in a.inputs]
        if a.distinct or not _exact(a.kind, a.value, types):
            return None
        args.append(names)
    return AggregateItems(function, tuple(keys), tuple(args))


def _exact(kind: AggKind, value: ValueKind, types: Sequence[pa.DataType]) -> bool:
    """Whether an aggregate of ``kind`` over arguments of Arrow ``types`` is exact on columns
    in any order of rows."""
    if kind is AggKind.COUNT:
        return True
    if kind is AggKind.PANDAS_UDF:
        return False  # (the window operator calls it per firing)
    dtype = types[0]
    if kind in (AggKind.COUNT_IF, AggKind.BOOL_AND, AggKind.BOOL_OR):
        return bool(pa.types.is_boolean(dtype))
    if kind in (AggKind.SUM, AggKind.AVG):
        return value is ValueKind.INTEGRAL and bool(pa.types.is_integer(dtype))
    if kind in (AggKind.MIN, AggKind.MAX):
        return bool(pa.types.is_integer(dtype) or pa.types.is_floating(dtype))
    return False
