"""The streaming processor's operator calls (:class:`KeyCalls`): one key of a key group at a
time, its due timers fired, then its rows of the micro-batch in the batch replay's order, with
its own clocks and dead letters; the keys the columnar plan can take go to its calls first."""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from itertools import repeat
from typing import Any

import pyarrow as pa

from windowing.functions.joins import SIDE
from windowing.operator import WindowOperator
from windowing.spark.columnar.core import OpenWindows
from windowing.spark.columns.failures import ElementFailedError, raise_element_error
from windowing.spark.columns.inputs import ARR as _ARR
from windowing.spark.columns.inputs import PT as _PT
from windowing.spark.columns.inputs import TS as _TS
from windowing.spark.columns.output import (
    REASON_NULL_ARRIVAL_ORDER,
    REASON_NULL_EVENT_TIME,
    LateRows,
)
from windowing.spark.columns.schema import table_rows
from windowing.spark.streaming.call_output import CallOutput
from windowing.spark.streaming.checkpoint import Entry
from windowing.spark.streaming.clocks import BatchClocks, KeyClocks
from windowing.spark.streaming.columnar_calls import ColumnarCalls
from windowing.spark.streaming.config import ProcessorConfig
from windowing.spark.streaming.state_io import StateIO
from windowing.time import MIN_TIMESTAMP, instant_text

__all__ = ["KeyCalls", "RowColumns"]


class RowColumns:
    """A group's rows (in key order) as the Python values a key call reads, converted once
    for all keys when the first key needs them."""

    def __init__(self, table: pa.Table, config: ProcessorConfig) -> None:
        self.table = table
        self.config = config

    @functools.cached_property
    def _columns(self) -> tuple[list[Any], list[Any], list[Any] | None, list[Any] | None]:
        c, table = self.config, self.table
        return (
            table_rows(table, c.layout.input_schema.names),
            table.column(_TS).to_pylist(),
            table.column(_ARR).to_pylist() if _ARR in c.internal else None,
            table.column(_PT).to_pylist() if _PT in c.internal else None,
        )

    def rows(
        self, lo: int, hi: int
    ) -> tuple[list[Any], list[Any], list[Any] | None, list[Any] | None]:
        """Rows ``lo`` to ``hi``: the input rows, event times, arrival orders, processing
        times (``None`` without the column)."""
        elements, ts, arrival, pts = self._columns
        return (
            elements[lo:hi],
            ts[lo:hi],
            None if arrival is None else arrival[lo:hi],
            None if pts is None else pts[lo:hi],
        )


#: A key's rows among its group's: (the group's columns, first row, end row).
RowSlice = tuple[RowColumns, int, int]


class KeyCalls:
    """The calls of the operator ``op`` for one key at a time, in ``config``'s job: a key's
    entry is read and made by ``state_io``, its watermark is its own clock (``key_clocks``,
    over the micro-batch's ``clocks``), its output goes to ``output``; with a columnar plan,
    ``columnar`` takes the key's call first when it can."""

    def __init__(
        self,
        config: ProcessorConfig,
        op: WindowOperator,
        clocks: BatchClocks,
        key_clocks: KeyClocks,
        state_io: StateIO,
        output: CallOutput,
        columnar: ColumnarCalls | None,
    ) -> None:
        self.config = config
        self.op = op
        self.clocks = clocks
        self.key_clocks = key_clocks
        self.state_io = state_io
        self.output = output
        self.columnar = columnar

    def run(
        self,
        entries: dict[Any, Entry],
        skey: Any,
        key: Any,
        table: pa.Table | None,
        joining: list[OpenWindows],
        rows: RowSlice | None = None,
    ) -> None:
        """Call the key ``key`` (its state key ``skey``) with its rows ``table`` (``None``: a
        timer call) and replace its entry in ``entries``; a key whose call left its windows
        in columnar form moves to ``joining`` (:meth:`ColumnarCalls.join`)."""
        entry = self._call(key, entries.get(skey), table, rows)
        self.state_io.store(entries, skey, entry)
        if self.columnar is not None:
            self.columnar.join(entries, skey, joining)

    def fire_due(
        self,
        entries: dict[Any, Entry],
        clock: int,
        *,
        skip: Collection[Any],
        joining: list[OpenWindows],
    ) -> None:
        """Run the timers of the keys due by ``clock`` (except those in ``skip``)."""
        due_clock = self.key_clocks.due_clock
        due = [
            (skey, e)
            for skey, e in entries.items()
            if e[1] is not None and e[1] <= due_clock(e, clock) and skey not in skip
        ]
        for skey, entry in due:
            self.run(entries, skey, entry[0], None, joining)

    def _call(
        self,
        k: Any,
        entry: Entry | None,
        table: pa.Table | None,
        rows: RowSlice | None = None,
    ) -> Entry | None:
        """One key's call: fire its due timers, then process its rows of this micro-batch
        (``table``; ``None``: a timer call). Returns the key's new entry; ``rows``: the key's
        rows as Python values, when the group's are at hand. With dead letters, a row whose
        processing raises is left out and the call starts over from the key's stored state
        without it."""
        try:
            if self.op.dead_letters is None or table is None:
                return self._call_once(k, entry, table, {}, rows)
            skipped: dict[int, Any] = {}  # row -> DeadLetter
            while True:
                try:
                    return self._call_once(k, entry, table, skipped, rows)
                except ElementFailedError as failed:
                    skipped[failed.row] = failed.letter
        finally:
            if self.config.idleness is not None:
                # the next key's own
                self.op.set_clocks(watermark=self.clocks.stream_watermark)

    def _call_once(
        self,
        k: Any,
        entry: Entry | None,
        table: pa.Table | None,
        skipped: dict[int, Any],
        rows: RowSlice | None = None,
    ) -> Entry | None:
        """:meth:`_call` but the rows ``skipped`` (their dead letters)."""
        c = self.config
        stored = self.state_io.decode(entry)
        self._set_key_clock(None if entry is None else entry[3])
        if self.columnar is not None:
            done, new_entry = self.columnar.key_call(k, stored, table)
            if done:
                return new_entry
        ks = self.state_io.key_state(stored)
        op = self.op
        op.clear_outputs(metrics=type(op.metrics)())
        watermark = self.key_clocks.key_clock(entry)  # the stream's, or the key's own clock
        op.set_clocks(watermark=watermark)
        # A later stage takes its rows before the watermark moves (they are results an
        # earlier stage emitted as the watermark passed them: Flink's order), then fires; a
        # join takes so the rows of its inputs that are earlier stages' results, fires, then
        # takes the other input's rows at the new watermark (as a first stage takes them).
        rows_first = (c.later_stage or bool(c.later_sides)) and table is not None
        if rows_first:
            op.set_clocks(watermark=MIN_TIMESTAMP)
        else:
            self._fire(k, ks)
        if table is None:
            self.output.add_key(k, None, LateRows(), (0, 0, 0), {})
            return self.state_io.entry(k, ks, self.key_clocks.idle_after(entry, None, op.watermark))
        columns, lo, hi = (RowColumns(table, c), 0, table.num_rows) if rows is None else rows
        elements, ts, arrival, pts = columns.rows(lo, hi)
        event_time = op.is_event_time
        tag = c.window.late_output_tag
        late = LateRows()
        null_ts = null_arr = 0
        pending: list[tuple[Any, Any, Any]] = []
        pending_rows: list[int] = []  # their rows, with dead letters
        guarded = op.dead_letters is not None

        def flush(ks: Any) -> Any:
            before = op.metrics.num_elements  # counted as each element starts
            try:
                ks = op.process_key_elements(k, ks, pending)
            except Exception as exc:
                failed = op.metrics.num_elements - before - 1
                where = "the Spark streaming runtime"
                raise_element_error(
                    exc,
                    failed,
                    pending,
                    pending_rows,
                    k,
                    where,
                    guarded=guarded,
                    show_values=c.window.show_values,
                )
            pending.clear()
            pending_rows.clear()
            return ks

        no_nulls = table.column(_TS).null_count == 0 or not event_time
        fast = arrival is None and pts is None and no_nulls and not guarded

        def take(ks: Any, positions: Sequence[int] | None) -> Any:
            """Take the rows at ``positions`` in that order (``None``: every row), then flush
            them."""
            nonlocal null_ts, null_arr
            if fast:
                if positions is None:
                    pending.extend(zip(elements, ts, repeat(k, len(elements)), strict=True))
                else:
                    pending.extend((elements[i], ts[i], k) for i in positions)
                return flush(ks)
            for i in range(len(elements)) if positions is None else positions:
                if arrival is not None and arrival[i] is None:
                    null_arr += 1
                    if tag is not None:
                        late.add(i, None, REASON_NULL_ARRIVAL_ORDER)
                    continue
                if pts is not None:
                    pt = pts[i]
                    if pt is not None and pt > op.processing_time:
                        ks = flush(ks)
                        op.set_clocks(processing_time=pt)  # the replay's advance before the row
                        self._fire(k, ks)
                t = ts[i]
                if t is None and event_time:
                    null_ts += 1
                    if tag is not None:
                        late.add(i, watermark, REASON_NULL_EVENT_TIME)
                    continue
                if i in skipped:
                    continue  # a dead letter (its processing-time advance happened)
                pending.append((elements[i], t, k))
                pending_rows.append(i)
            return flush(ks)

        # a join's rows of its inputs that are earlier stages' results, before the firing;
        # the other input's after it (None: every row on one side of the firing)
        first = [row[SIDE] in c.later_sides for row in elements] if c.later_sides else None
        ks = take(ks, None if first is None else [i for i, f in enumerate(first) if f])
        if rows_first:
            op.set_clocks(watermark=watermark)
            self._fire(k, ks)
        if first is not None:
            ks = take(ks, [i for i, f in enumerate(first) if not f])
        if tag is not None:
            lates = op.side_outputs.get(tag, [])
            if lates:
                late.add_late_elements(lates, {id(r): i for i, r in enumerate(elements)})
        self.output.add_key(k, table, late, (table.num_rows, null_ts, null_arr), skipped)
        return self.state_io.entry(k, ks, self.key_clocks.idle_after(entry, table, op.watermark))

    def _set_key_clock(self, clock: int | None) -> None:
        """The operator's processing time for a key: its clock from its state with a
        ``processing_time`` column, else the micro-batch's."""
        if _PT in self.config.internal:
            self.op.set_clocks(processing_time=0 if clock is None else clock)
        else:
            self.op.set_clocks(processing_time=self.clocks.now)

    def _fire(self, key: Any, ks: Any) -> None:
        try:
            self.op.fire_timers(key, ks)
        except Exception as exc:
            exc.add_note(
                f"while firing timers at watermark {instant_text(self.op.watermark)} / "
                f"processing time {instant_text(self.op.processing_time)} for key {key!r} in "
                "the Spark streaming runtime"
            )
            raise
