"""The streaming processor's calls on whole columns (:class:`ColumnarCalls`): a key group's
keys whose windows the columnar plan can take (built-in aggregations of tumbling, hopping or
session windows) run together on Arrow columns, and a key's state moves between the
operator's ``KeyState`` and ``OpenWindows``."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import Row

from windowing.operator import WindowOperator
from windowing.spark.columnar.accumulators import AggregateItems
from windowing.spark.columnar.core import (
    OpenWindows,
    keys_needing_the_operator,
    open_windows_of,
    rows_needing_the_operator,
    step_open_windows,
)
from windowing.spark.columns.inputs import ARR as _ARR
from windowing.spark.columns.inputs import TS as _TS
from windowing.spark.columns.keys import (
    group_codes,
    key_value,
    state_key,
)
from windowing.spark.columns.schema import (
    arrow_to_python,
    make_row_encoder,
    row_class,
)
from windowing.spark.streaming.call_output import CallOutput
from windowing.spark.streaming.checkpoint import Entry
from windowing.spark.streaming.clocks import BatchClocks
from windowing.spark.streaming.config import ProcessorConfig
from windowing.spark.streaming.state_io import StateIO

__all__ = ["ColumnarCalls", "concat_windows"]


def concat_windows(windows: OpenWindows | None, joining: list[OpenWindows]) -> OpenWindows | None:
    """The group's columnar windows with those of the keys ``joining`` it (all fired up to
    the same watermark; no key in two of them)."""
    parts = [w for w in (windows, *joining) if w is not None and len(w)]
    return OpenWindows.concat(parts) if parts else None


class ColumnarCalls:
    """The calls of ``config``'s columnar plan: a key group's keys together, or one key, on
    whole columns, with the operator ``op`` for the keys they cannot take; keys' entries are
    made by ``state_io``, the output goes to ``output``, due times are read on ``clocks``.

    ``opened``: the columnar windows the last key call (:meth:`key_call`) left, which
    :meth:`join` moves into the group's windows."""

    def __init__(
        self,
        config: ProcessorConfig,
        op: WindowOperator,
        clocks: BatchClocks,
        state_io: StateIO,
        output: CallOutput,
    ) -> None:
        assert config.columnar is not None
        self.config = config
        self.plan = config.columnar
        self.op = op
        self.clocks = clocks
        self.state_io = state_io
        self.output = output
        self.opened: OpenWindows | None = None
        schema = config.layout.input_schema
        self.record_names = list(schema.names)
        # the columns of the rows the plan adds: the input's, and their event times where
        # its items hold them (an evictor's)
        with_times = getattr(getattr(self.plan, "items", None), "with_times", False)
        self.row_names = [*schema.names, _TS] if with_times else list(schema.names)
        self.record_type = row_class(tuple(schema.names))
        self.encode_record = make_row_encoder(schema)
        # .agg columns: the operator's state values are accumulators, encoded with the key
        items = getattr(self.plan, "items", None)
        self.accumulators = items if isinstance(items, AggregateItems) else None
        self.items_schema = (
            None
            if self.accumulators is None
            else self.accumulators.items_schema(config.input_arrow)
        )

    def _open_windows(self, key: Any, ks: Any) -> tuple[bool, OpenWindows | None]:
        """The columnar form of the key state ``ks`` of ``key``: ``(False, None)`` when it
        has none."""
        if ks is None or isinstance(ks, OpenWindows):
            return True, ks
        if ks.is_empty():
            return True, None
        encode = self._records_table
        items, schema = self.accumulators, self.items_schema
        if items is not None and schema is not None:
            key_columns = self.output.key_columns(key)

            def encode(accumulators: list[Any]) -> pa.Table | None:
                return items.encode(accumulators, key_columns(len(accumulators)), schema)

        found = open_windows_of(self.plan, self.op, ks, encode)
        return found is not None, found

    def _records_table(self, records: list[Any]) -> pa.Table | None:
        """Input records as a table of the input columns; ``None`` when one is not an input
        record (a ``Row`` of the input columns: the runtime's, or a plain ``Row`` as
        unpickling gives back) or a value does not fit its column (e.g. a sum beyond the
        column's type)."""
        c = self.config
        names = self.record_names
        for r in records:
            if type(r) is not self.record_type and not (
                type(r) is Row and getattr(r, "__fields__", None) == names
            ):
                return None
        try:
            encoded = [self.encode_record(r) for r in records]
            arrays = [
                pa.array([values[i] for values in encoded], field.type)
                for i, field in enumerate(c.input_arrow)
            ]
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return None
        return pa.Table.from_arrays(arrays, schema=c.input_arrow)

    def join(self, entries: dict[Any, Entry], skey: Any, joining: list[OpenWindows]) -> None:
        """Move the key ``skey`` from ``entries`` to ``joining`` (the windows that join the
        group's columnar windows) when its call left its windows in columnar form, with
        values the columns can reduce (not those of nulls an operator call left)."""
        opened = self.opened
        self.opened = None
        if (
            opened is not None
            and skey in entries
            and opened.fired_upto == self.op.watermark
            and self.plan.usable_state(opened.rows)
        ):
            del entries[skey]
            joining.append(opened)

    def group_call(
        self,
        table: pa.Table | None,
        entries: dict[Any, Entry],
        windows: OpenWindows | None,
    ) -> tuple[pa.Table | None, OpenWindows | None]:
        """Run the keys of the group that the columns can take on whole columns, together:
        fire and clean up the group's windows ``windows`` at the watermark, then add the
        rows of ``table`` (the group's rows in replay order; ``None``: a timer call) of the
        keys that have no entry and no row needing the operator
        (:func:`~windowing.spark.columnar.core.rows_needing_the_operator`). The windows of the
        other keys with rows move to ``entries``. Returns the rows left for the key-by-key
        calls and the group's new windows (when the columns cannot take the call at all,
        every key moves to ``entries`` and all rows are left)."""
        c = self.config
        plan = self.plan
        keys = c.layout.keys
        watermark = self.op.watermark
        n_held = 0 if windows is None else len(windows)
        rows = table if table is not None and table.num_rows else None
        # key codes common to the group's windows and the rows
        if rows is None:
            key_table = None if windows is None else windows.rows.select(keys)
        elif windows is None:
            key_table = rows.select(keys)
        else:
            key_table = pa.concat_tables([windows.rows.select(keys), rows.select(keys)])
        if key_table is None or not keys:
            codes = np.zeros(n_held + (0 if rows is None else rows.num_rows), np.int64)
        else:
            codes = group_codes(key_table, keys)
        held_codes, row_codes = codes[:n_held], codes[n_held:]
        if rows is not None:
            needs = rows_needing_the_operator(plan, watermark, rows, rows.column(_TS))
            if _ARR in c.internal and rows.column(_ARR).null_count:
                needs |= rows.column(_ARR).is_null().to_numpy(zero_copy_only=False)
            if not needs.all():  # keys whose state the rows cannot meet on columns (sessions)
                rest = np.flatnonzero(~needs)
                times = rows.column(_TS).take(pa.array(rest)).to_numpy()
                needs[rest] |= keys_needing_the_operator(
                    plan, windows, held_codes, watermark, times, row_codes[rest]
                )
            if entries:  # keys with an entry stay with the operator
                distinct, first = np.unique(row_codes, return_index=True)
                values = [arrow_to_python(rows.column(k).take(first)) for k in keys]
                has_entry = [
                    state_key(key_value([v[i] for v in values])) in entries
                    for i in range(len(first))
                ]
                needs |= np.isin(row_codes, distinct[np.array(has_entry, np.bool_)])
            if needs.any():
                by_operator = np.isin(row_codes, np.unique(row_codes[needs]))
                moving = np.isin(held_codes, np.unique(row_codes[by_operator]))
                if moving.any() and windows is not None:
                    self.to_entries(entries, windows.take(np.flatnonzero(moving)))
                    windows = windows.take(np.flatnonzero(~moving))
                    held_codes = held_codes[~moving]
                left = rows.filter(pa.array(by_operator))
                rows = rows.filter(pa.array(~by_operator))
                row_codes = row_codes[~by_operator]
            else:
                left = rows.schema.empty_table()
        else:
            left = table
        step = step_open_windows(
            plan,
            windows,
            watermark,
            None if rows is None else rows.select(self.row_names),
            None if rows is None else rows.column(_TS).to_numpy(),
            (held_codes, row_codes),
        )
        if step is None:  # the operator runs every key
            if windows is not None:
                self.to_entries(entries, windows)
            return table, None
        n_input = 0 if rows is None else rows.num_rows
        fired = step.fired_rows

        def fired_keys(n: int) -> list[pa.Array]:
            return [] if fired is None else [fired.column(k).combine_chunks() for k in keys]

        def late_keys(n: int) -> list[pa.Array]:
            # the late rows' keys, then the metrics row's (of several keys: null)
            types = c.key_arrow_types
            if rows is None or n == 1:
                return [pa.nulls(n, t) for t in types]
            late = pa.array(step.late)
            return [
                pa.concat_arrays([rows.column(k).take(late).combine_chunks(), pa.nulls(1, t)])
                for k, t in zip(keys, types, strict=True)
            ]

        self.output.add_columnar(step, n_input, rows, fired_keys, late_keys)
        return left, step.state

    def to_entries(self, entries: dict[Any, Entry], windows: OpenWindows) -> None:
        """Give each key of the group's ``windows`` its own entry."""
        keys = self.config.layout.keys
        # a key's items are contiguous (in any order of keys): split where the key changes
        codes = group_codes(windows.rows.select(keys), keys)
        starts = [0, *(np.flatnonzero(codes[1:] != codes[:-1]) + 1).tolist(), len(windows)]
        first_rows = pa.array(starts[:-1], pa.int64())
        values = [arrow_to_python(windows.rows.column(k).take(first_rows)) for k in keys]
        for i, (lo, hi) in enumerate(itertools.pairwise(starts)):
            key = key_value([v[i] for v in values])
            own = windows.slice(lo, hi)
            entry = self.state_io.entry(key, own)
            if entry is not None and entry[1] is not None:
                nxt = own.next_event_time(self.plan)
                if nxt is not None and nxt <= self.op.watermark:
                    # windows the columns held below this watermark are due in this call,
                    # not at the next advance (the floor of an operator's late timers)
                    entry = (entry[0], self.clocks.due_clock(), *entry[2:])
            self.state_io.store(entries, state_key(key), entry)

    def key_call(self, key: Any, stored: Any, table: pa.Table | None) -> tuple[bool, Entry | None]:
        """Run one key's call on whole columns
        (:func:`~windowing.spark.columnar.core.step_open_windows`), its output to the call's:
        ``(True, the key's new entry)``, or ``(False, None)`` (nothing done) when the
        operator must run it."""
        self.opened = None
        c = self.config
        times = None
        rows = None
        if table is not None:
            ts = table.column(_TS)
            if ts.null_count or (_ARR in c.internal and table.column(_ARR).null_count):
                return False, None
            times = ts.to_numpy()
            rows = table.select(self.row_names)
        convertible, windows = self._open_windows(key, stored)
        if not convertible:
            return False, None
        step = step_open_windows(self.plan, windows, self.op.watermark, rows, times)
        if step is None:
            return False, None
        entry = self.state_io.entry(key, step.state)
        self.opened = step.state
        n_input = 0 if table is None else table.num_rows
        self.output.add_columnar(step, n_input, table, self.output.key_columns(key))
        return True, entry
