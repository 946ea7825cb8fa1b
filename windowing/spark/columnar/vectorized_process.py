"""A :class:`~windowing.functions.vectorized_process.VectorizedProcessWindowFunction` of
tumbling, hopping or session event-time windows called on slices of the batch replay's record
batches, without one Python object per row.

In event-time order (no arrival order, no processing-time column) the watermark goes from the
start to the end of input: every window fires once, at the end of input, over all its rows,
its key's windows in the order of their ends, as
:func:`~windowing.operator.fire_ended_windows` fires them. So ``process`` gets each window's
rows (consecutive rows of a record batch sorted by key and event time; a hopping window's
taken once per window) and a context as the operator's at that step: the watermark at
``MAX_TIMESTAMP``, the processing time ``0`` (the replay's clock without a processing-time
column), a new per-window state (refused for sessions, as Flink refuses it for merging
windows), and the key's per-key state, which a key that goes on in the window operator (a
window too long to carry, times near the ends of time) takes with it
(:meth:`KeyStates.hand_over`). ``clear`` follows ``process`` on the same timer when the
allowed lateness is 0; a function with a ``clear`` of its own and a lateness runs in the
operator, whose timers order the cleanups among the other windows' firings.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampType,
)

from windowing.engine.context import DeferredStateContext, ProcessContext, check_outputs
from windowing.engine.keystate import KeyState
from windowing.engine.notes import note_window
from windowing.evictors.vectorized import Clocks
from windowing.functions.base import ProcessWindowFunction
from windowing.functions.vectorized import in_format, slice_batch
from windowing.functions.vectorized_process import (
    VectorizedProcessWindowFunction,
    as_output_table,
    describe,
)
from windowing.operator import WindowOperator
from windowing.records import OutputTag, WindowResult
from windowing.spark.columns.operator_rows import windowed_columns
from windowing.spark.columns.schema import (
    gc_paused,
    make_columns_encoder,
    make_row_encoder,
    table_rows,
    value_encoder,
)
from windowing.time import MAX_TIMESTAMP
from windowing.windows import TimeWindow, window_text

if TYPE_CHECKING:
    from windowing.spark.columns.output import OutputLayout

__all__ = [
    "END_OF_INPUT",
    "KeyStates",
    "ProcessedWindows",
    "encoded_columns",
    "process_windows",
    "written_columns",
]


#: The clocks a window fired at the end of the input sees (no processing-time column).
END_OF_INPUT = Clocks(MAX_TIMESTAMP, 0)


class KeyStates:
    """The per-key state of the key whose windows were last processed on whole columns (a
    key's windows are consecutive: earlier keys are done)."""

    def __init__(self, merging: bool) -> None:
        self.is_merging = merging
        self.skey: Any = None
        self.state: KeyState | None = None

    def of(self, skey: Any) -> KeyState:
        if self.state is None or self.skey != skey:
            self.skey, self.state = skey, KeyState(self.is_merging)
        return self.state

    def hand_over(self, op: WindowOperator, key: Any, skey: Any) -> None:
        """``key`` goes on in the operator ``op``: its per-key state goes with it."""
        if self.state is None or self.skey != skey:
            return
        table = self.state.state_tables[2]
        self.skey, self.state = None, None
        if table is not None and not table.is_empty():
            ks = op.key_state(key)
            trigger, window, _ = ks.state_tables
            ks.set_state_tables(trigger, window, table)


@dataclass(frozen=True)
class ProcessedWindows:
    """The outputs of some windows: how many rows each gave (``counts``), the rows as a table
    of the output columns, and the side outputs with the window each came from."""

    counts: np.ndarray[Any, Any]
    table: pa.Table
    side_outputs: dict[OutputTag, list[tuple[int, WindowResult]]]


def process_windows(
    function: VectorizedProcessWindowFunction | ProcessWindowFunction[Any, Any, Any, Any],
    batch: pa.Table,
    offsets: np.ndarray[Any, Any],
    windows: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]],
    keys: Sequence[Any],
    skeys: Sequence[Any],
    states: KeyStates,
    out_schema: StructType,
    clear_too: bool,
    late_tag: OutputTag | None = None,
    per_row: OutputLayout | None = None,
    results: Sequence[Any] | None = None,
) -> ProcessedWindows:
    """``function.process`` of each window ``[offsets[i], offsets[i + 1])`` of ``batch`` (its
    rows in replay order; ``windows`` the starts and ends, ``keys`` the key of each), the
    outputs as ``out_schema``'s columns; ``clear_too``: ``clear`` after each; ``late_tag``:
    the tag of the late input rows, which the function may not write to. ``per_row``: a
    per-row ``ProcessWindowFunction`` whose outputs the layout writes (each window's rows as
    a list of ``Row`` objects, built once; with ``results``, each window's incremental
    result, the function following an aggregate or reduce: ``[results[i]]``)."""
    starts, ends = windows[0].tolist(), windows[1].tolist()

    def where(i: int) -> str:
        return f"window {window_text(TimeWindow(starts[i], ends[i]))} of key {keys[i]!r}"

    outputs: _Outputs | _RowOutputs
    if per_row is None:
        assert isinstance(function, VectorizedProcessWindowFunction)
        fmt = function.batch_format
        # a column with a null is another dtype in pandas / numpy (int with a null: float):
        # the operator converts each window's rows alone, and so does this when the batch
        # has one
        whole = fmt == "arrow" or not any(c.null_count for c in batch.columns)
        rows = in_format(batch, fmt) if whole else None

        def window_rows(lo: int, hi: int) -> Any:
            if rows is None:
                return in_format(batch.slice(lo, hi - lo), fmt)
            return slice_batch(rows, lo, hi, fmt)

        outputs = _Outputs(function, out_schema, where)
        named = describe(function)
    else:
        values = (
            table_rows(batch, batch.column_names)
            if results is None
            else [[r] for r in results]  # a window's incremental result, alone
        )
        if results is not None:
            offsets = np.arange(len(values) + 1)

        def window_rows(lo: int, hi: int) -> Any:
            return values[lo:hi] if results is None else values[lo]

        outputs = _RowOutputs(per_row, keys, starts, ends)
        named = f"ProcessWindowFunction {type(function).__qualname__}"
    side_outputs: dict[OutputTag, list[WindowResult]] = {}
    ctx = DeferredStateContext(
        END_OF_INPUT, side_outputs, is_merging=states.is_merging, late_tag=late_tag
    )
    ctx.key_state = states.of
    pctx = ProcessContext(ctx)
    process, clear = function.process, function.clear
    bounds = offsets.tolist()
    counts = np.zeros(len(bounds) - 1, np.int64)
    sides: dict[OutputTag, list[tuple[int, WindowResult]]] = {}
    with gc_paused():
        for i, (start, end) in enumerate(zip(starts, ends, strict=True)):
            key = keys[i]
            window = TimeWindow(start, end)
            ctx.key, ctx.state_key, ctx.window, ctx.used = key, skeys[i], window, False
            try:
                counts[i] = outputs.add(
                    i, process(key, pctx, window_rows(bounds[i], bounds[i + 1]))
                )
                if clear_too:
                    clear(pctx)
            except Exception as exc:
                if per_row is None:
                    exc.add_note(
                        f"while evaluating window {window_text(window)} of key {key!r} with "
                        f"{named} in the Spark batch replay"
                    )
                else:  # as the operator and the replay name it
                    note_window(exc, window, key)
                    exc.add_note(f"of key {key!r} in the Spark batch replay")
                raise
            if ctx.used:
                window_state = ctx.ks.state_tables[1]
                if window_state is not None:  # no other firing reads it
                    window_state.clear_namespace(window)
            if side_outputs:
                for tag, records in side_outputs.items():
                    sides.setdefault(tag, []).extend((i, r) for r in records)
                side_outputs.clear()
    return ProcessedWindows(counts, outputs.table(), sides)


class _RowOutputs:
    """The outputs of a per-row ``ProcessWindowFunction``'s ``process`` calls (iterables of
    values), written as the operator writes its results: the layout's encoders, and its
    notes on a value that is not a row of the output schema."""

    def __init__(
        self, layout: OutputLayout, keys: Sequence[Any], starts: list[int], ends: list[int]
    ) -> None:
        self.layout = layout
        self.keys, self.starts, self.ends = keys, starts, ends
        self.values: list[Any] = []
        self.counts: list[int] = []  # the values of each window so far

    def add(self, i: int, result: Any) -> int:
        if type(result) is not list:
            if (
                result is None
                or isinstance(result, str | bytes)
                or not isinstance(result, Iterable)
            ):
                window = TimeWindow(self.starts[i], self.ends[i])
                check_outputs(result, "ProcessWindowFunction.process", self.keys[i], window)
            result = list(result)
        self.values.extend(result)
        self.counts.append(len(result))
        return len(result)

    def records(self) -> list[WindowResult]:
        """The outputs as the operator's records (for its notes on a refused value)."""
        windows = np.repeat(np.arange(len(self.counts)), self.counts).tolist()
        return [
            WindowResult(self.keys[i], TimeWindow(self.starts[i], self.ends[i]), v, 0)
            for i, v in zip(windows, self.values, strict=True)
        ]

    def table(self) -> pa.Table:
        layout = self.layout
        columns = written_columns(layout, self.values, self.records)
        schema = to_arrow_schema(layout.out_schema, timezone="UTC")
        return pa.Table.from_arrays(columns, schema=schema)


def written_columns(
    layout: OutputLayout, values: list[Any], records: Callable[[], list[WindowResult]]
) -> list[pa.Array]:
    """Result ``values`` as the output columns, written as the operator writes its results
    (the layout's bulk encoder, else value by value); a refused value raises with the
    operator's note, naming its window and key from ``records()`` (the values as the
    operator's records, built only then)."""
    encode, encode_all = layout.writers[0]
    fields = layout.out_schema
    columns = encode_all(values)
    if columns is None:
        try:
            encoded = [encode(v) for v in values]
            columns = [[e[j] for e in encoded] for j in range(len(fields.fields))]
        except Exception:
            columns = None
    if columns is None:  # a value refused: the operator's records and note on it
        writers, show = layout.writers[0], layout.show_values
        columns = windowed_columns(records(), writers, fields, "result", show)[0]
    arrays = []
    types = to_arrow_schema(fields, timezone="UTC").types
    for column, field, arrow_type in zip(columns, fields.fields, types, strict=True):
        try:
            arrays.append(pa.array(column, arrow_type))
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            for r, v in zip(records(), column, strict=True):  # the first one refused
                try:
                    pa.array([v], arrow_type)
                except (pa.ArrowException, TypeError, ValueError, OverflowError):
                    exc.add_note(
                        f"while writing output column {field.name!r} "
                        f"({field.dataType.simpleString()}) of window "
                        f"{window_text(r.window)} of key {r.key!r}"
                    )
                    break
            raise
    return arrays


class _Outputs:
    """The outputs of many ``process`` calls, kept as they come and made into the columns of
    ``fields`` once: a ``dict`` of columns costs no Arrow call per window. Values are taken
    as the window operator takes them (:func:`_conform`), and a value it refuses is refused
    naming its window (``where(i)``: window ``i`` in words)."""

    def __init__(
        self,
        function: VectorizedProcessWindowFunction,
        fields: StructType,
        where: Callable[[int], str],
    ) -> None:
        self.function = function
        self.fields = fields
        self.where = where
        self.schema = to_arrow_schema(fields, timezone="UTC")
        self.names = list(fields.names)
        self.name_set = set(self.names)
        # (window, value): dicts of columns, lists of values, tables of the output columns
        self.pieces: list[tuple[int, Any]] = []

    def add(self, i: int, result: Any) -> int:
        """Keep ``result`` (the ``process`` value of window ``i``); the rows it gives."""
        if isinstance(result, dict):
            lengths = {len(column) for column in result.values()}
            if len(lengths) > 1:
                msg = (
                    f"{describe(self.function)}.process returned columns of different lengths "
                    f"{sorted(lengths)}"
                )
                raise ValueError(msg)
            n = lengths.pop() if lengths else 0
            if n:  # no row: nothing to check, as the operator takes none
                if result.keys() != self.name_set:
                    self._wrong_columns(list(map(str, result)))
                self.pieces.append((i, result))
            return n
        try:
            out = as_output_table(result)
        except TypeError as exc:
            msg = f"{describe(self.function)}.process {exc}"
            raise TypeError(msg) from None
        if isinstance(out, list):
            if out:
                self.pieces.append((i, out))
            return len(out)
        if out.num_rows:
            if sorted(out.column_names) != sorted(self.names):
                self._wrong_columns(out.column_names)
            self.pieces.append((i, out))
        return out.num_rows

    def _wrong_columns(self, names: list[str]) -> None:
        msg = (
            f"{describe(self.function)}.process returned the columns {sorted(names)} for the "
            f"output fields {self.names}"
        )
        raise ValueError(msg)

    def table(self) -> pa.Table:
        """Every output kept, as one table of the output columns."""
        try:
            return self._table(self.pieces)
        except Exception:
            for piece in self.pieces:  # the first window whose outputs are refused
                try:
                    self._table([piece])
                except Exception as exc:
                    exc.add_note(
                        f"while writing the outputs of {self.where(piece[0])} with "
                        f"{describe(self.function)} as the output columns "
                        f"{self.fields.simpleString()}"
                    )
                    raise
            raise

    def _table(self, pieces: list[tuple[int, Any]]) -> pa.Table:
        tables: list[pa.Table] = []
        run: list[Any] = []
        for _, piece in [*pieces, (-1, None)]:
            if run and type(piece) is not type(run[0]):
                tables.append(self._run_table(run))
                run = []
            if piece is not None:
                run.append(piece)
        return pa.concat_tables(tables) if tables else self.schema.empty_table()

    def _run_table(self, run: list[Any]) -> pa.Table:
        if isinstance(run[0], list):
            values = list(itertools.chain.from_iterable(run))
            return pa.Table.from_arrays(encoded_columns(values, self.fields), schema=self.schema)
        if isinstance(run[0], pa.Table):
            columns = [[t.column(name).combine_chunks() for t in run] for name in self.names]
            arrays = [
                pa.concat_arrays([_conform(c, f.dataType, a.type) for c in chunks])
                for chunks, f, a in zip(columns, self.fields.fields, self.schema, strict=True)
            ]
        else:
            arrays = [
                _conform(_column([piece[f.name] for piece in run]), f.dataType, a.type)
                for f, a in zip(self.fields.fields, self.schema, strict=True)
            ]
        return pa.Table.from_arrays(arrays, schema=self.schema)


def _column(chunks: list[Any]) -> pa.Array:
    """Chunks of one output column (numpy arrays, lists, Arrow or pandas arrays) as one
    array, each converted as ``pyarrow.table`` converts a column (a pandas object with
    pandas' nulls)."""
    if all(type(c) is np.ndarray for c in chunks) and len({c.dtype for c in chunks}) == 1:
        return pa.array(np.concatenate(chunks))
    if all(type(c) is list or type(c) is tuple for c in chunks):
        return pa.array(list(itertools.chain.from_iterable(chunks)))
    arrays = []
    for c in chunks:
        array = c if isinstance(c, pa.Array | pa.ChunkedArray) else pa.array(c)
        arrays.append(array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array)
    if len({a.type for a in arrays}) > 1:
        return pa.array(list(itertools.chain.from_iterable(a.to_pylist() for a in arrays)))
    return pa.concat_arrays(arrays)


def _conform(array: pa.Array, dtype: DataType, arrow_type: pa.DataType) -> pa.Array:
    """``array`` as the output field's ``arrow_type``, taking what the window operator
    takes: a cast where the values as Python objects would pass its encoder (an integer for
    an integral field, a number for a floating one, a timestamp for a timestamp, ...), else
    the values through that encoder (the operator's errors)."""
    source = array.type
    if source == arrow_type:
        return array
    if pa.types.is_null(source):
        return pa.nulls(len(array), arrow_type)
    if _takes(source, dtype):
        return array.cast(arrow_type)
    encode = value_encoder(dtype)
    values = array.to_pylist()
    return pa.array(values if encode is None else [encode(v) for v in values], arrow_type)


def _takes(source: pa.DataType, dtype: DataType) -> bool:
    """Whether the values of Arrow type ``source`` pass the operator's encoder of ``dtype``
    as they are (a cast keeps them)."""
    if isinstance(dtype, ByteType | ShortType | IntegerType | LongType):
        return bool(pa.types.is_integer(source))
    if isinstance(dtype, FloatType | DoubleType):
        return bool(pa.types.is_integer(source) or pa.types.is_floating(source))
    if isinstance(dtype, StringType):
        return bool(pa.types.is_string(source) or pa.types.is_large_string(source))
    if isinstance(dtype, BooleanType):
        return bool(pa.types.is_boolean(source))
    if isinstance(dtype, TimestampType):
        return bool(pa.types.is_timestamp(source))
    if isinstance(dtype, DateType):
        return bool(pa.types.is_date(source))
    return False


def encoded_columns(values: list[Any], schema: StructType) -> list[pa.Array]:
    """Output values (as a window function returns them) as the columns of ``schema``."""
    columns = make_columns_encoder(schema)(values)
    if columns is None:
        encode = make_row_encoder(schema)
        columns = [[] for _ in schema.fields]
        for value in values:
            for column, v in zip(columns, encode(value), strict=True):
                column.append(v)
    types = to_arrow_schema(schema, timezone="UTC").types
    return [pa.array(c, t) for c, t in zip(columns, types, strict=True)]
