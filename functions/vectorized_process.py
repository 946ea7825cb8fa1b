"""Vectorized window functions: a window's rows as one columnar batch (Arrow, pandas or numpy)
handed to ``process`` once per firing, with Flink's context, returning the outputs as a table.

:class:`VectorizedProcessWindowFunction` is what a user writes. :class:`VectorizedProcessAdapter`
runs it on the window operator as a :class:`~windowing.functions.base.ProcessWindowFunction`
(every assigner, trigger, evictor, lateness, merging window, pane info, dead letter and
streaming run works through it unchanged); a runtime that holds whole columns (the Spark batch
replay in event-time order) calls ``process`` on slices of its record batches instead, without
one Python object per row.

``pyarrow`` is imported when the first batch is built (``import windowing`` does not load it).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from windowing.functions.base import ProcessWindowFunction, ProcessWindowFunctionContext
from windowing.functions.vectorized import InputBatches, batch_table, in_format

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "VectorizedProcessAdapter",
    "VectorizedProcessWindowFunction",
    "as_output_table",
    "empty_batch",
    "overrides_clear",
]


class VectorizedProcessWindowFunction(ABC):
    """A window function called once per firing with the window's rows as one columnar batch
    and Flink's context, returning the outputs as a table: the vectorized form of a
    :class:`~windowing.functions.base.ProcessWindowFunction`.

    ``batch`` holds the window's rows (after an evictor's, if any) in replay order, the input
    columns, as :attr:`batch_format` says: ``"arrow"`` (a ``pyarrow.Table``, the default),
    ``"pandas"`` (a ``pandas.DataFrame``) or ``"numpy"`` (a ``dict`` of column name to
    ``numpy`` array). On Spark the columns and their types are the DataFrame's; in memory they
    are inferred from the values, as for a
    :class:`~windowing.functions.vectorized.VectorizedAggregateFunction`. A batch is empty only
    when an evictor removed every row (Flink then calls the function with no elements).

    ``context`` is a ``ProcessWindowFunction``'s: ``window()``, ``current_watermark()``,
    ``current_processing_time()``, ``window_state()``, ``global_state()`` and
    ``output(tag, value)``. ``process`` returns the window's outputs, each a row of the
    ``output_schema`` the job declares: a ``pyarrow.Table`` or ``RecordBatch``, a
    ``pandas.DataFrame`` or a ``dict`` of column name to array (columns by name, any number of
    rows), an iterable of output values as a ``ProcessWindowFunction`` yields them (a ``dict``,
    ``Row``, tuple, ...), or ``None`` for no output. ``clear`` is called when the window is
    removed, as in Flink.

    Known elsewhere as: Spark's ``groupBy(...).applyInArrow`` / ``applyInPandas``; Flink's
    ``ProcessWindowFunction`` over a pandas frame (PyFlink's Pandas UDAF, without the context).

    Examples
    --------
    The two largest amounts of each window, with the window's start:

    >>> import pyarrow as pa
    >>> import pyarrow.compute as pc
    >>> class TopTwo(VectorizedProcessWindowFunction):
    ...     def process(self, key, context, batch):
    ...         top = batch.take(pc.select_k_unstable(batch, 2, [("amount", "descending")]))
    ...         n = top.num_rows
    ...         return {"start": [context.window().start] * n, "amount": top.column("amount")}
    >>> rows = [{"amount": 3.0}, {"amount": 9.0}, {"amount": 5.0}]
    >>> class Ctx:
    ...     def window(self):
    ...         from windowing.windows import TimeWindow
    ...         return TimeWindow(0, 10)
    >>> VectorizedProcessAdapter(TopTwo()).process("k", Ctx(), rows)
    [{'start': 0, 'amount': 9.0}, {'start': 0, 'amount': 5.0}]
    """

    #: How ``process`` gets the window's rows: ``"arrow"``, ``"pandas"`` or ``"numpy"``.
    batch_format: ClassVar[str] = "arrow"

    @abstractmethod
    def process(self, key: Any, context: ProcessWindowFunctionContext, batch: Any) -> Any:
        """The window's outputs (see the class docstring for what may be returned)."""

    def clear(self, context: ProcessWindowFunctionContext) -> None:  # noqa: B027 - optional
        """Called when the window is removed; delete per-window state here."""


def describe(function: VectorizedProcessWindowFunction) -> str:
    """A vectorized window function, named for a message."""
    return f"VectorizedProcessWindowFunction {type(function).__qualname__}"


def overrides_clear(function: VectorizedProcessWindowFunction) -> bool:
    """Whether ``function`` has a ``clear`` of its own (the default does nothing)."""
    return type(function).clear is not VectorizedProcessWindowFunction.clear


def empty_batch(schema: pa.Schema | None) -> pa.Table:
    """A batch of no rows: of the input columns ``schema``, or of no column."""
    import pyarrow as pa

    return schema.empty_table() if schema is not None else pa.table({})


def as_output_table(result: Any) -> pa.Table | list[Any]:
    """``process``'s value as a ``pyarrow.Table`` (a table, record batch, pandas frame or
    ``dict`` of columns; ``None``: no row), else as a list of output values (an iterable of
    them). Anything else is refused, naming its type."""
    import pyarrow as pa

    if result is None:
        return []
    if isinstance(result, pa.Table):
        return result
    if isinstance(result, pa.RecordBatch):
        return pa.Table.from_batches([result])
    if isinstance(result, Mapping):
        return pa.table({str(name): column for name, column in result.items()})
    if _is_pandas_frame(result):
        return pa.Table.from_pandas(result, preserve_index=False)
    if isinstance(result, str | bytes) or not isinstance(result, Iterable):
        msg = (
            "must return a pyarrow Table or RecordBatch, a pandas DataFrame, a dict of "
            "columns, an iterable of output values or None, "
            f"got {type(result).__name__} {result!r}"
        )
        raise TypeError(msg)
    return list(result)


def _is_pandas_frame(value: Any) -> bool:
    return type(value).__name__ == "DataFrame" and type(value).__module__.startswith("pandas")


class VectorizedProcessAdapter(InputBatches, ProcessWindowFunction[Any, Any, Any, Any]):
    """A :class:`VectorizedProcessWindowFunction` as the window operator's
    :class:`~windowing.functions.base.ProcessWindowFunction`: the window's elements become one
    batch (of ``input_schema``, the input columns' Arrow schema, when the runtime gives it:
    :meth:`with_input_schema`), the function's table one output value per row (a ``dict``).
    """

    kind = VectorizedProcessWindowFunction
    function: VectorizedProcessWindowFunction

    def process(
        self, key: Any, context: ProcessWindowFunctionContext, elements: Iterable[Any]
    ) -> list[Any]:
        fn = self.function
        rows = list(elements)
        try:
            table = batch_table(rows, self.input_schema) if rows else empty_batch(self.input_schema)
        except Exception as exc:
            exc.add_note(f"while building a batch of {len(rows)} rows for {describe(fn)}")
            raise
        result = fn.process(key, context, in_format(table, fn.batch_format))
        try:
            out = as_output_table(result)
        except TypeError as exc:
            msg = f"{describe(fn)}.process {exc}"
            raise TypeError(msg) from None
        return out if isinstance(out, list) else out.to_pylist()

    def clear(self, context: ProcessWindowFunctionContext) -> None:
        self.function.clear(context)
