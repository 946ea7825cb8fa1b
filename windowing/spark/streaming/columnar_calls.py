"""The streaming processor's calls on whole columns: a key group's keys whose windows the
columnar plan can take (built-in aggregations of tumbling, hopping or session windows) run
together on Arrow columns, and a key's state moves between the operator's ``KeyState`` and
``OpenWindows`` (:class:`~windowing.spark.streaming.processor.WindowProcessor` mixes this in)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import Row

from windowing.operator import WindowOperator
from windowing.spark.columnar.core import (
    ColumnarStep,
    OpenWindows,
    keys_needing_the_operator,
    open_windows_of,
    rows_needing_the_operator,
    step_open_windows,
    usable,
)
from windowing.spark.columns.inputs import ARR as _ARR
from windowing.spark.columns.inputs import TS as _TS
from windowing.spark.columns.keys import (
    group_codes,
    key_value,
    state_key,
)
from windowing.spark.columns.output import (
    REASON_LATE,
    LateRows,
)
from windowing.spark.columns.schema import (
    arrow_to_python,
)
from windowing.spark.streaming.checkpoint import (
    Entry,
)

__all__ = ["ColumnarCalls"]


class ColumnarCalls:
    """The columnar part of :class:`~windowing.spark.streaming.processor.WindowProcessor`, which
    provides the state below."""

    config: Any  # the processor's ProcessorConfig
    op: WindowOperator
    _opened: OpenWindows | None
    record_names: list[str]
    record_type: Any
    encode_record: Callable[[Any], Any]
    key_encoders: list[Callable[[Any], Any] | None]
    _entry: Callable[[Any, Any], Entry | None]
    _store: Callable[[dict[Any, Entry], Any, Entry | None], None]
    _clock: Callable[[], int]

    def _open_windows(self, ks: Any) -> tuple[bool, OpenWindows | None]:
        """The columnar form of the key state ``ks``: ``(False, None)`` when it has none."""
        if ks is None or isinstance(ks, OpenWindows):
            return True, ks
        if ks.is_empty():
            return True, None
        plan = self.config.columnar
        assert plan is not None
        found = open_windows_of(plan, self.op, ks, self._records_table)
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

    # -- callbacks -------------------------------------------------------------------------

    def _join(self, entries: dict[Any, Entry], skey: Any, joining: list[OpenWindows]) -> None:
        """Move the key ``skey`` from ``entries`` to ``joining`` (the windows that join the
        group's columnar windows) when its call left its windows in columnar form, with
        values the columns can reduce (not those of nulls an operator call left)."""
        opened = self._opened
        self._opened = None
        if opened is not None and skey in entries and opened.fired_upto == self.op.watermark:
            plan = self.config.columnar
            assert plan is not None
            if usable(plan.aggregation, opened.rows.column(plan.field)):
                del entries[skey]
                joining.append(opened)

    def _group_call(
        self,
        table: pa.Table | None,
        entries: dict[Any, Entry],
        windows: OpenWindows | None,
        outputs: list[pa.RecordBatch],
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
        plan = c.columnar
        assert plan is not None
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
                    self._to_entries(entries, windows.take(np.flatnonzero(moving)))
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
            None if rows is None else rows.select(c.layout.input_schema.names),
            None if rows is None else rows.column(_TS).to_numpy(),
            (held_codes, row_codes),
        )
        if step is None:  # the operator runs every key
            if windows is not None:
                self._to_entries(entries, windows)
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

        self._emit_columnar(step, n_input, rows, fired_keys, outputs, late_keys)
        return left, step.state

    def _to_entries(self, entries: dict[Any, Entry], windows: OpenWindows) -> None:
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
            entry = self._entry(key, own)
            if entry is not None and entry[1] is not None:
                assert self.config.columnar is not None
                nxt = own.next_event_time(self.config.columnar)
                if nxt is not None and nxt <= self.op.watermark:
                    # windows the columns held below this watermark are due in this call,
                    # not at the next advance (the floor of an operator's late timers)
                    entry = (entry[0], self._clock(), *entry[2:])
            self._store(entries, state_key(key), entry)

    def _emit_columnar(
        self,
        step: ColumnarStep,
        n_input: int,
        source: pa.Table | None,
        key_columns: Callable[[int], list[pa.Array]],
        outputs: list[pa.RecordBatch],
        other_key_columns: Callable[[int], list[pa.Array]] | None = None,
    ) -> None:
        """Add the tagged output of a call on whole columns to ``outputs``: the windows
        ``step`` fired (their key columns ``key_columns(n)``), its late rows of ``source``
        and the call's metrics row (key columns ``other_key_columns``, by default
        ``key_columns``)."""
        c = self.config
        plan = c.columnar
        assert plan is not None
        n_late = len(step.late)
        fired = len(step.fired_starts)
        if not (n_input or fired):
            return
        tag = c.window.late_output_tag
        late = LateRows()
        if tag is not None:
            watermark = self.op.watermark
            for i in step.late.tolist():
                late.add(i, watermark, REASON_LATE)
        counters = {
            "num_input_rows": n_input,
            "num_elements": n_input,
            "num_late_records_side_output": n_late if tag is not None else 0,
            "num_late_records_dropped": 0 if tag is not None else n_late,
            "num_windows_fired": fired,
            "num_results": fired,
        }
        starts = step.fired_starts
        ends = step.fired_ends
        bounds = (pa.array(starts), pa.array(ends), pa.array(ends - 1))
        records = step.fired_rows if step.fired_rows is not None else c.input_arrow.empty_table()
        columns = [records.column(f.name).combine_chunks() for f in c.layout.out_schema.fields]
        outputs.extend(
            c.layout.tagged_result_batches(
                key_columns=key_columns,
                bounds=bounds,
                columns=columns,
                counters=counters,
                late_source=source,
                late=late,
                other_key_columns=other_key_columns,
            )
        )

    def _columnar_call(
        self, key: Any, stored: Any, table: pa.Table | None, outputs: list[pa.RecordBatch]
    ) -> tuple[bool, Entry | None]:
        """Run one key's call on whole columns
        (:func:`~windowing.spark.columnar.core.step_open_windows`), its output to ``outputs``:
        ``(True, the key's new entry)``, or ``(False, None)`` (nothing done) when the
        operator must run it."""
        c = self.config
        plan = c.columnar
        assert plan is not None
        times = None
        rows = None
        if table is not None:
            ts = table.column(_TS)
            if ts.null_count or (_ARR in c.internal and table.column(_ARR).null_count):
                return False, None
            times = ts.to_numpy()
            rows = table.select(c.layout.input_schema.names)
        convertible, state = self._open_windows(stored)
        if not convertible:
            return False, None
        step = step_open_windows(plan, state, self.op.watermark, rows, times)
        if step is None:
            return False, None
        entry = self._entry(key, step.state)
        self._opened = step.state
        n_input = 0 if table is None else table.num_rows
        self._emit_columnar(step, n_input, table, self._key_columns(key), outputs)
        return True, entry

    def _window_count(self, windows: OpenWindows) -> int:
        """The windows the operator would hold for the group's columnar ``windows``."""
        plan = self.config.columnar
        assert plan is not None
        if windows.kind == "tumbling":
            return len(windows)  # one item per window
        keys = self.config.layout.keys
        codes = group_codes(windows.rows.select(keys), keys) if keys else None
        return windows.window_count(plan, codes)

    def _keys_columns(self, keys: list[Any], trailing_nulls: int = 0) -> list[pa.Array]:
        """The key column(s) of rows whose keys are ``keys`` (one per row), then
        ``trailing_nulls`` rows without a key (none for ``window_all``)."""
        encoders = self.key_encoders
        if not encoders:
            return []
        if len(encoders) == 1:
            columns: list[list[Any]] = [keys]
        else:
            columns = [list(c) for c in zip(*keys, strict=True)] if keys else [[] for _ in encoders]
        tail = [None] * trailing_nulls
        out = []
        for values, enc, t in zip(columns, encoders, self.config.key_arrow_types, strict=True):
            encoded = values if enc is None else [enc(v) for v in values]
            out.append(pa.array(encoded + tail, t))
        return out

    def _key_columns(self, key: Any) -> Callable[[int], list[pa.Array]]:
        """The key column(s) of ``key`` for ``n`` output rows (none for ``window_all``)."""
        encoders = self.key_encoders
        values = [key] if len(encoders) == 1 else list(key or ())
        values = [v if enc is None else enc(v) for v, enc in zip(values, encoders, strict=True)]
        types = self.config.key_arrow_types

        def key_columns(total: int) -> list[pa.Array]:
            return [pa.array([v] * total, t) for v, t in zip(values, types, strict=True)]

        return key_columns
