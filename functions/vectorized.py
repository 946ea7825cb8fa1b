"""Vectorized aggregate functions: a window's rows as one columnar batch (Arrow, pandas or
numpy) rather than one Python call per row, and many windows' row groups in a few calls.

:class:`VectorizedAggregateFunction` is what a user writes. :class:`VectorizedAdapter` runs
it on the window operator as an :class:`~windowing.functions.base.AggregateFunction` whose
accumulator holds the rows added since the last result or merge, handed to ``add_batch`` in
one batch: every assigner, trigger, evictor, lateness and merging window works through it
unchanged. A runtime that holds whole columns (the Spark batch replay of tumbling windows)
calls :meth:`VectorizedAggregateFunction.add_groups` and
:meth:`~VectorizedAggregateFunction.get_results` once for many windows instead
(:func:`group_accumulators`, :func:`group_results`).

``pyarrow`` is imported when the first batch is built (``import windowing`` does not load it).
"""

from __future__ import annotations

import dataclasses
import itertools
import reprlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from windowing.functions.base import AggregateFunction

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "BATCH_FORMATS",
    "MAX_PENDING_ROWS",
    "InputBatches",
    "VectorizedAdapter",
    "VectorizedAggregateFunction",
    "batch_table",
    "check_batch_format",
    "describe",
    "group_accumulators",
    "group_results",
    "in_format",
    "result_count",
    "slice_batch",
]

ACC = TypeVar("ACC")
OUT = TypeVar("OUT")

#: The values of :attr:`VectorizedAggregateFunction.batch_format`.
BATCH_FORMATS = ("arrow", "pandas", "numpy")
#: The rows an adapter's accumulator holds before it hands them to ``add_batch`` without
#: waiting for a result (a long window's rows are not all held as Python objects).
MAX_PENDING_ROWS = 65_536


class VectorizedAggregateFunction(ABC, Generic[ACC, OUT]):
    """An aggregate function over batches of rows: ``add_batch`` takes many rows at once as
    a columnar batch, where an :class:`~windowing.functions.base.AggregateFunction` takes one.

    ``batch`` is a window's (or a part of a window's) rows in replay order, the input
    columns, as :attr:`batch_format` says: ``"arrow"`` (a ``pyarrow.Table``, the default),
    ``"pandas"`` (a ``pandas.DataFrame``) or ``"numpy"`` (a ``dict`` of column name to
    ``numpy`` array, as Arrow's ``to_numpy`` gives it: nulls are NaN or ``None``). A batch has
    at least one row. On Spark the columns and their types are the DataFrame's; in memory
    (the window operator, its harness) they are inferred from the values: a ``dict``, ``Row``,
    named tuple or dataclass gives a column per field, a plain tuple the columns ``f0``,
    ``f1``, ..., and any other value one column ``value``.

    The contract (Beam's ``CombineFn``): how a window's rows are split into batches must not
    change the result beyond float rounding, i.e. ``add_batch(A + B, acc)`` equals
    ``merge(add_batch(A, acc), add_batch(B, create_accumulator()))``; ``merge`` may modify
    and return ``a``, never ``b``; ``add_batch`` may modify and return its accumulator. The
    window operator hands ``add_batch`` the rows added since the last result or merge (see
    :class:`VectorizedAdapter`); a runtime holding whole columns calls :meth:`add_groups`
    and :meth:`get_results` once for many windows. ``order_insensitive`` means what it means
    for an :class:`~windowing.functions.base.AggregateFunction`.

    For streaming state, keep accumulators plain data (tuples of Python ``int`` / ``float``:
    ``float(x.sum())``); numpy arrays and scalars are user objects, which only signed state
    holds (``windowing.engine.encoding``).

    Known elsewhere as: Spark's pandas aggregate UDF; Beam ``CombineFn``.

    Examples
    --------
    The mean and population variance of ``x`` (count, mean and sum of squared deviations,
    combined as Chan et al.); ``add_groups`` and ``get_results`` do many windows in a few
    numpy calls:

    >>> import numpy as np
    >>> class MeanVar(VectorizedAggregateFunction):
    ...     batch_format = "numpy"
    ...     def create_accumulator(self):
    ...         return (0, 0.0, 0.0)
    ...     def add_batch(self, batch, acc):
    ...         x = batch["x"]
    ...         mean = float(x.mean())
    ...         return self.merge(acc, (len(x), mean, float(((x - mean) ** 2).sum())))
    ...     def merge(self, a, b):
    ...         n = a[0] + b[0]
    ...         if n == 0:
    ...             return a
    ...         d = b[1] - a[1]
    ...         return (n, a[1] + d * b[0] / n, a[2] + b[2] + d * d * a[0] * b[0] / n)
    ...     def get_result(self, acc):
    ...         return {"mean": acc[1], "var": acc[2] / acc[0]}
    ...     def add_groups(self, batch, offsets):
    ...         x, n = batch["x"], np.diff(offsets)
    ...         mean = np.add.reduceat(x, offsets[:-1]) / n
    ...         m2 = np.add.reduceat((x - np.repeat(mean, n)) ** 2, offsets[:-1])
    ...         return np.column_stack((n, mean, m2))
    ...     def get_results(self, accs):
    ...         return {"mean": accs[:, 1], "var": accs[:, 2] / accs[:, 0]}
    >>> f = MeanVar()
    >>> f.get_result(f.add_batch({"x": np.array([1.0, 2.0, 6.0])}, f.create_accumulator()))
    {'mean': 3.0, 'var': 4.666666666666667}
    >>> f.get_results(f.add_groups({"x": np.array([1.0, 3.0, 5.0])}, np.array([0, 2, 3])))
    {'mean': array([2., 5.]), 'var': array([1., 0.])}
    """

    #: How ``add_batch`` and ``add_groups`` get their rows: ``"arrow"``, ``"pandas"`` or
    #: ``"numpy"`` (see the class docstring).
    batch_format: ClassVar[str] = "arrow"
    #: The result does not depend on the order of the rows (see the class docstring).
    order_insensitive: ClassVar[bool] = False

    @abstractmethod
    def create_accumulator(self) -> ACC:
        """A new, empty accumulator."""

    @abstractmethod
    def add_batch(self, batch: Any, accumulator: ACC) -> ACC:
        """Add the rows of ``batch`` (at least one) to ``accumulator``; return the (possibly
        same) accumulator."""

    @abstractmethod
    def merge(self, a: ACC, b: ACC) -> ACC:
        """Merge two accumulators; may modify and return ``a``, must not modify ``b``."""

    @abstractmethod
    def get_result(self, accumulator: ACC) -> OUT:
        """The result for ``accumulator`` (``None``: the window emits nothing, as for an
        ``AggregateFunction``)."""

    def add_groups(self, batch: Any, offsets: Sequence[int]) -> Sequence[ACC]:
        """The accumulators of the row groups ``[offsets[i], offsets[i + 1])`` of ``batch``
        (a window each, consecutive, none empty; ``offsets`` is a numpy ``int64`` array from
        0 to the number of rows), one per group, each as :meth:`add_batch` of its rows on a
        new accumulator would give.

        By default one :meth:`add_batch` per group. Override it to do all groups in a few
        calls (``np.add.reduceat(x, offsets[:-1])``); the sequence returned may be any sized
        sequence, e.g. a 2-d numpy array of one row per group, that :meth:`get_results`
        understands."""
        fmt = self.batch_format
        bounds = [int(o) for o in offsets]
        return [
            self.add_batch(slice_batch(batch, lo, hi, fmt), self.create_accumulator())
            for lo, hi in itertools.pairwise(bounds)
        ]

    def get_results(self, accumulators: Sequence[ACC]) -> Any:
        """The results of ``accumulators`` (as :meth:`add_groups` returns them), one per
        accumulator, each :meth:`get_result`'s: a sequence of results or, for speed, the same
        as columns (a ``dict`` of field name to array, a ``pyarrow.Table`` or a
        ``pandas.DataFrame``; for an output of one field, a numpy or Arrow array).

        By default one :meth:`get_result` per accumulator."""
        return [self.get_result(acc) for acc in accumulators]


def describe(function: VectorizedAggregateFunction[Any, Any]) -> str:
    """A vectorized function, named for a message."""
    return f"VectorizedAggregateFunction {type(function).__qualname__}"


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {reprlib.repr(value)}"


def _checked_accumulator(function: Any, method: str, value: Any) -> Any:
    if value is None:
        msg = (
            f"{describe(function)}.{method} returned None; it must return the accumulator "
            "(a modified one, or a new one)"
        )
        raise TypeError(msg)
    return value


# ---------------------------------------------------------------------------- batches
def batch_table(values: Sequence[Any], schema: pa.Schema | None = None) -> pa.Table:
    """The rows ``values`` (one shape: ``dict``, ``Row``, named tuple, dataclass, plain tuple
    or scalar; see :class:`VectorizedAggregateFunction`) as a ``pyarrow.Table``, of
    ``schema`` when given (the input columns' types; rows by field name, or by position for
    plain tuples), else of the types Arrow infers."""
    import pyarrow as pa

    names, columns = _columns(values)
    if schema is None:
        return pa.Table.from_arrays([pa.array(c) for c in columns], names=names)
    if names != schema.names:
        if sorted(names) != sorted(schema.names):
            msg = f"rows with the fields {names} for the input columns {schema.names}"
            raise ValueError(msg)
        by_name = dict(zip(names, columns, strict=True))
        columns = [by_name[name] for name in schema.names]
    arrays = [pa.array(c, f.type) for c, f in zip(columns, schema, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


def _columns(values: Sequence[Any]) -> tuple[list[str], list[list[Any]]]:
    """The column names and columns of rows of one shape."""
    first = values[0]
    if isinstance(first, Mapping):
        names = list(dict.fromkeys(k for v in _all(values, Mapping, first) for k in v))
        return [str(n) for n in names], [[v.get(n) for v in values] for n in names]
    fields = _fields_of(first)
    if fields is not None:
        names = fields
        for v in values:
            if _fields_of(v) != names:
                msg = f"rows of different fields: {names} and {_shown(v)}"
                raise TypeError(msg)
        return names, [list(c) for c in zip(*values, strict=True)]
    if dataclasses.is_dataclass(first) and not isinstance(first, type):
        names = [f.name for f in dataclasses.fields(first)]
        rows = _all(values, type(first), first)
        return names, [[getattr(v, n) for v in rows] for n in names]
    if isinstance(first, tuple):
        width = len(first)
        for v in values:
            if type(v) is not type(first) or len(v) != width:
                msg = f"rows of different shapes: {_shown(first)} and {_shown(v)}"
                raise TypeError(msg)
        return [f"f{i}" for i in range(width)], [list(c) for c in zip(*values, strict=True)]
    return ["value"], [list(values)]


def _fields_of(value: Any) -> list[str] | None:
    """The field names of a ``Row`` or named tuple, else ``None``."""
    if not isinstance(value, tuple):
        return None
    fields = getattr(value, "__fields__", None) or getattr(value, "_fields", None)
    return None if fields is None else list(fields)


def _all(values: Sequence[Any], kind: Any, first: Any) -> Sequence[Any]:
    for v in values:
        if not isinstance(v, kind):
            msg = f"rows of different shapes: {_shown(first)} and {_shown(v)}"
            raise TypeError(msg)
    return values


def in_format(table: pa.Table, batch_format: str) -> Any:
    """``table`` as a batch of ``batch_format`` (see
    :attr:`VectorizedAggregateFunction.batch_format`)."""
    if batch_format == "arrow":
        return table
    if batch_format == "pandas":
        return table.to_pandas()
    return {name: table.column(name).to_numpy() for name in table.column_names}


def slice_batch(batch: Any, lo: int, hi: int, batch_format: str) -> Any:
    """Rows ``lo`` to ``hi`` of a batch of ``batch_format``."""
    if batch_format == "arrow":
        return batch.slice(lo, hi - lo)
    if batch_format == "pandas":
        return batch.iloc[lo:hi].reset_index(drop=True)  # indexed from 0, as a batch of its own
    return {name: column[lo:hi] for name, column in batch.items()}


def check_batch_format(function: Any, kind: str) -> None:
    """Refuse a :attr:`~VectorizedAggregateFunction.batch_format` that is not one of
    :data:`BATCH_FORMATS` (``kind``: the function's base class, named in the message)."""
    fmt = getattr(function, "batch_format", None)
    if fmt not in BATCH_FORMATS:
        msg = (
            f"{kind} {type(function).__qualname__}.batch_format must be one of "
            f"{', '.join(BATCH_FORMATS)}, got {fmt!r}"
        )
        raise ValueError(msg)


class InputBatches:
    """What the adapters of vectorized functions share: the user's function (an instance of
    :attr:`kind`, checked) and the input columns' Arrow schema ``input_schema`` its batches
    are built with, which a runtime that knows it gives (:meth:`with_input_schema`; without
    one, a batch's types are inferred from the rows)."""

    #: The base class of the functions the adapter runs.
    kind: ClassVar[type]

    def __init__(self, function: Any, input_schema: Any = None) -> None:
        name = self.kind.__name__
        if not isinstance(function, self.kind):
            msg = f"function must be a {name}, got {type(function).__name__} {function!r}"
            raise ValueError(msg)
        check_batch_format(function, name)
        self.function = function
        self.input_schema = input_schema

    def with_input_schema(self, schema: Any) -> Any:
        """The adapter building batches of the input columns ``schema`` (a
        ``pyarrow.Schema``)."""
        return type(self)(self.function, schema)

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other.function is self.function
            and other.input_schema == self.input_schema
        )

    def __hash__(self) -> int:
        return hash((type(self), id(self.function)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.function!r})"


# ---------------------------------------------------------------------------- many groups
def result_count(results: Any) -> int:
    """How many results ``get_results`` returned: the length of a sequence, the rows of a
    table or data frame, the length of a ``dict``'s columns (all equal)."""
    if isinstance(results, Mapping):
        lengths = {len(column) for column in results.values()}
        if len(lengths) > 1:
            msg = f"columns of different lengths {sorted(lengths)}"
            raise ValueError(msg)
        return lengths.pop() if lengths else 0
    return len(results)


def group_accumulators(
    function: VectorizedAggregateFunction[Any, Any], batch: Any, offsets: Sequence[int]
) -> Sequence[Any]:
    """``function.add_groups(batch, offsets)``, checked: one accumulator per group."""
    groups = len(offsets) - 1
    accumulators = function.add_groups(batch, offsets)
    try:
        count = len(accumulators)
    except TypeError:
        count = -1
    if count != groups:
        msg = (
            f"{describe(function)}.add_groups must return one accumulator per group "
            f"({groups}), got {_shown(accumulators)}"
            + (f" of length {count}" if count >= 0 else "")
        )
        raise ValueError(msg)
    return accumulators


def group_results(
    function: VectorizedAggregateFunction[Any, Any], accumulators: Sequence[Any]
) -> Any:
    """``function.get_results(accumulators)``, checked: one result per accumulator."""
    results = function.get_results(accumulators)
    expected = len(accumulators)
    try:
        count = result_count(results)
    except (TypeError, ValueError):
        count = -1
    if count != expected or isinstance(results, str | bytes):
        msg = (
            f"{describe(function)}.get_results must return one result per accumulator "
            f"({expected}), got {_shown(results)}" + (f" of {count}" if count >= 0 else "")
        )
        raise ValueError(msg)
    return results


# ---------------------------------------------------------------------------- the adapter
class VectorizedAdapter(InputBatches, AggregateFunction[Any, list[Any], Any]):
    """A :class:`VectorizedAggregateFunction` as the window operator's
    :class:`~windowing.functions.base.AggregateFunction`: its accumulator is
    ``[accumulator, rows]``, the function's accumulator and the rows added since the last
    result or merge (at most :data:`MAX_PENDING_ROWS`), which ``get_result`` and ``merge``
    hand to ``add_batch`` in one batch (the accumulator is updated in place: its meaning
    does not change). It is plain data when the function's accumulator is (the rows are the
    operator's values: Spark ``Row`` objects on Spark).

    ``input_schema``: the input columns' Arrow schema, which a runtime that knows it gives
    (:meth:`with_input_schema`); without one, the batch's types are inferred from the rows.

    Examples
    --------
    >>> import pyarrow.compute as pc
    >>> class Total(VectorizedAggregateFunction):
    ...     def create_accumulator(self):
    ...         return 0
    ...     def add_batch(self, batch, acc):
    ...         return acc + pc.sum(batch.column("value")).as_py()
    ...     def merge(self, a, b):
    ...         return a + b
    ...     def get_result(self, acc):
    ...         return acc
    >>> adapter = VectorizedAdapter(Total())
    >>> acc = adapter.add(2, adapter.add(1, adapter.create_accumulator()))
    >>> acc
    [0, [1, 2]]
    >>> adapter.get_result(acc), acc
    (3, [3, []])
    """

    kind = VectorizedAggregateFunction
    function: VectorizedAggregateFunction[Any, Any]

    def create_accumulator(self) -> list[Any]:
        return [self.function.create_accumulator(), []]

    def add(self, value: Any, accumulator: list[Any]) -> list[Any]:
        pending = accumulator[1]
        pending.append(value)
        if len(pending) >= MAX_PENDING_ROWS:
            self._flush(accumulator)
        return accumulator

    def get_result(self, accumulator: list[Any]) -> Any:
        self._flush(accumulator)
        return self.function.get_result(accumulator[0])

    def merge(self, a: list[Any], b: list[Any]) -> list[Any]:
        self._flush(a)
        self._flush(b)
        merged = self.function.merge(a[0], b[0])
        a[0] = _checked_accumulator(self.function, "merge", merged)
        return a

    def _flush(self, accumulator: list[Any]) -> None:
        """Hand the pending rows to ``add_batch`` (the accumulator then holds none)."""
        pending = accumulator[1]
        if not pending:
            return
        fn = self.function
        try:
            table = batch_table(pending, self.input_schema)
        except Exception as exc:
            exc.add_note(f"while building a batch of {len(pending)} rows for {describe(fn)}")
            raise
        added = fn.add_batch(in_format(table, fn.batch_format), accumulator[0])
        accumulator[0] = _checked_accumulator(fn, "add_batch", added)
        accumulator[1] = []
