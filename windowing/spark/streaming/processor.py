"""The executor side of the streaming runtime: the stateful processor that runs the window
operator for a key group's keys in each micro-batch (``transformWithStateInPandas``), its
state layout, and how its output is packed for Spark (:mod:`windowing.spark.streaming.query` builds
the query)."""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterator
from itertools import repeat
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from windowing.engine.keystate import KeyState
from windowing.idleness import KeyIdleness
from windowing.spark.batch.replay_plan import (
    replay_order,
)
from windowing.spark.columnar.core import (
    OpenWindows,
    key_state_of,
)
from windowing.spark.columns.failures import (
    DeadRows,
    ElementFailedError,
    raise_element_error,
)
from windowing.spark.columns.frames import (
    PACKED,
    PACKED_SCHEMA,
    input_table,
    key_ranges,
    pack,
    restore_nans,
    timestamps_as_micros,
    unpack,
)
from windowing.spark.columns.inputs import ARR as _ARR
from windowing.spark.columns.inputs import PT as _PT
from windowing.spark.columns.inputs import TS as _TS
from windowing.spark.columns.keys import (
    state_key,
)
from windowing.spark.columns.operator_rows import KeyCallRows, key_call_tables, operator_counters
from windowing.spark.columns.output import (
    REASON_NULL_ARRIVAL_ORDER,
    REASON_NULL_EVENT_TIME,
    LateRows,
)
from windowing.spark.columns.schema import (
    make_row_encoder,
    row_class,
    table_rows,
    value_encoder,
)
from windowing.spark.jobs import window_operator
from windowing.spark.streaming.checkpoint import UNKNOWN_WINDOWS, Entry, GroupState
from windowing.spark.streaming.columnar_calls import ColumnarCalls
from windowing.spark.streaming.config import ProcessorConfig
from windowing.spark.streaming.key_clocks import WATERMARK_SHIFT_MS, KeyClocks
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

__all__ = [
    "PACKED",
    "PACKED_SCHEMA",
    "ProcessorConfig",
    "WindowProcessor",
    "flink_watermark",
    "pack",
    "timestamps_as_micros",
    "unpack",
]


def flink_watermark(spark_watermark_ms: int) -> int:
    """Spark's watermark over the shifted event time (late when ``ts + shift < W``; ``0`` =
    none yet) as the operator's (Flink's: late when ``ts <= W``)."""
    if spark_watermark_ms <= 0:
        return MIN_TIMESTAMP
    return spark_watermark_ms - WATERMARK_SHIFT_MS - 1


def _concat_windows(windows: OpenWindows | None, joining: list[OpenWindows]) -> OpenWindows | None:
    """The group's columnar windows with those of the keys ``joining`` it (all fired up to
    the same watermark; no key in two of them)."""
    parts = [w for w in (windows, *joining) if w is not None and len(w)]
    return OpenWindows.concat(parts) if parts else None


class _RowColumns:
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
_RowSlice = tuple[_RowColumns, int, int]


class WindowProcessor(ColumnarCalls, KeyClocks, StatefulProcessor):
    """One ``WindowOperator`` per Python worker; Spark's grouping key is a key group
    (:meth:`~windowing.stream.WindowedStream.max_parallelism`), with one ValueState and one
    timer.

    The state is the pickled ``(version, key groups, registered timer, entries, windows)``,
    where ``entries`` maps each key of the group run by the operator
    (:func:`~windowing.spark.columns.keys.state_key`) to an :data:`Entry`: the key, the Spark time
    at which it is next due, its pickled key state, and its clock; ``windows`` (a columnar
    plan only; ``None`` without) are the open windows of all other keys, as one
    :class:`~windowing.spark.columnar.core.OpenWindows`. The key state of an entry is the
    operator's :class:`~windowing.operator.KeyState`, or the key's own ``OpenWindows``
    (each form converts to the other when a call needs it; a key whose call ends with its
    windows in columnar form joins the group's windows); only the entries a call touches are
    unpickled. The clock is the key's largest ``processing_time`` value so far (``None``
    without that column). The registered timer is the earliest due time of the group."""

    def __init__(self, config: ProcessorConfig) -> None:
        self.config = config

    def init(self, handle: StatefulProcessorHandle) -> None:
        c = self.config
        self.handle = handle
        self.state = GroupState(handle, c.key_groups, c.job_digest)
        self.op = window_operator(c.window, c.spec)
        self.spark_watermark = 0
        self.stream_watermark = MIN_TIMESTAMP  # Spark's watermark in the operator's terms
        self.now = 0
        self._opened: OpenWindows | None = None  # the windows the last key call left
        self._key_rows: list[KeyCallRows] = []  # the call's key outputs not yet packed
        schema = c.layout.input_schema
        names = schema.names
        self.record_type = row_class(tuple(names))
        self.record_names = list(names)
        self.encode_record = make_row_encoder(schema)
        self.key_encoders = [value_encoder(schema[k].dataType) for k in c.layout.keys]

    # -- state ---------------------------------------------------------------------------
    def _save(
        self,
        registered: int | None,
        entries: dict[Any, Entry],
        windows: OpenWindows | None,
        *,
        alive: bool,
        outputs: list[pa.RecordBatch],
        newest: int | None = None,
    ) -> None:
        """Write the group's state once (or clear it when nothing is left) and keep one
        Spark timer at the earliest due time of its windows; ``alive``: the registered timer
        has not fired. A metrics row with the group's state bytes and open windows goes to
        ``outputs`` (an IPC stream of its own: its null columns need not have the types of
        the key calls' columns, e.g. the time zone of input timestamps)."""
        if self.config.idleness is not None:
            self._prune_clocks(entries)
        due = [e[1] for e in entries.values() if e[1] is not None]
        if due and self.config.idleness is not None:
            # a key's due time depends on the stream's watermark, which other key groups'
            # rows move: look again in the next micro-batch (ProcessingTime mode runs one
            # every trigger interval anyway)
            due = [self.now + 1]
        if windows is not None:
            assert self.config.columnar is not None
            windows_due = self._spark_timer(windows.next_event_time(self.config.columnar))
            if windows_due is not None:
                due.append(windows_due)
        timer = min(due) if due else None
        if alive and registered is not None and registered != timer:
            self.handle.deleteTimer(registered)
        if timer is not None and timer != (registered if alive else None):
            self.handle.registerTimer(timer)
        for skey, entry in entries.items():
            if entry[4] == UNKNOWN_WINDOWS:  # stored by an earlier layout: count once
                counted = self._count_windows(self.state.decode_entry(entry[2]))
                entries[skey] = (*entry[:4], counted, entry[5])
        nbytes = self.state.store(timer, entries, windows)
        open_windows = sum(e[4] for e in entries.values())
        gauges = {
            "state_bytes": nbytes,
            "open_windows": open_windows + (0 if windows is None else self._window_count(windows)),
        }
        if newest is not None:  # the newest event time of the call's rows
            gauges["max_event_time"] = newest
        if self.stream_watermark > MIN_TIMESTAMP:
            gauges["watermark"] = self.stream_watermark
        self._group_metrics(gauges, outputs)

    def _group_metrics(self, gauges: dict[str, int], outputs: list[pa.RecordBatch]) -> None:
        """A metrics row (no key) with the gauges of the group's call."""
        layout = self.config.layout
        types = self.config.key_arrow_types
        table = layout.tagged_table(
            key=None,
            key_columns=lambda n: [pa.nulls(n, t) for t in types],
            results=[],
            side_outputs={},
            late_source=None,
            late=LateRows(),
            counters=gauges,
        )
        outputs.extend(table.to_batches())

    def _count_windows(self, ks: Any) -> int:
        """The open windows of a key state (``KeyState`` or ``OpenWindows``)."""
        if ks is None:
            return 0
        if isinstance(ks, OpenWindows):
            assert self.config.columnar is not None
            return ks.window_count(self.config.columnar)
        return len(self.op.windows_of(ks))

    def _entry(self, key: Any, ks: Any, idle: KeyIdleness | None = None) -> Entry | None:
        """The key's entry after a call, ``None`` when it holds nothing. Its due time is the
        key's next operator timer as a Spark timer: in event time no earlier than ``W + 1``
        (Spark watermark ``W``; with an idle clock, the key's watermark), in processing time
        no earlier than the next millisecond, so operator timers already due fire at the
        next watermark advance / micro-batch, as in Flink and the batch replay. ``idle``:
        the key's idle clock (an idle timeout); a key with nothing else is kept while that
        clock is ahead of the stream's watermark."""
        plan = self.config.columnar
        if ks is None:
            nxt = None
        elif self.config.wall_clock:
            nxt = ks.next_processing_time()
        elif isinstance(ks, OpenWindows):
            assert plan is not None
            nxt = ks.next_event_time(plan)
        else:
            nxt = ks.next_event_time()
        timer = self._spark_timer(nxt)
        empty = ks is None or (isinstance(ks, KeyState) and ks.is_empty())
        clock = self.op.processing_time if _PT in self.config.internal else None
        kept = None if idle is None else idle.as_tuple()
        if empty and timer is None:
            if idle is None or idle.watermark <= self.stream_watermark:
                return None
            return (key, None, b"", clock, 0, kept)  # only the key's clock
        return (key, timer, self.state.encode_entry(ks), clock, self._count_windows(ks), kept)

    def _spark_timer(self, nxt: int | None) -> int | None:
        """The operator timer ``nxt`` as a Spark timer (``None``: none): in event time no
        earlier than ``W + 1`` (Spark watermark ``W``), in processing time no earlier than
        the next millisecond."""
        if self.config.wall_clock:
            floor, shift = self.now + 1, 0
        else:
            shift = WATERMARK_SHIFT_MS + 1
            floor = max(self.spark_watermark, self.op.watermark + shift) + 1
        if nxt is not None and nxt < MAX_TIMESTAMP - shift:
            return max(nxt + shift, floor)
        return None

    def _key_state(self, ks: Any) -> KeyState:
        """The operator's form of the key state ``ks``."""
        if ks is None:
            return self.op.new_key_state()
        if isinstance(ks, OpenWindows):
            plan = self.config.columnar
            assert plan is not None
            names = self.config.layout.input_schema.names
            return key_state_of(plan, self.op, ks, table_rows(ks.rows, names))
        assert isinstance(ks, KeyState)
        return ks

    def handleInputRows(  # noqa: N802 - Spark's name
        self,
        key: Any,
        rows: Iterator[pd.DataFrame],
        timerValues: Any,  # noqa: N803
    ) -> Any:
        c = self.config
        frames = list(rows)
        pdf = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        # The batch replay's order inside a key: arrival order, else processing time, then
        # event time and the content hash, nulls last; deterministic across re-executions.
        order = replay_order(arrival=_ARR in c.internal, processing_time=_PT in c.internal)
        table = input_table(pdf, c.input_table_schema, order)
        newest = pc.max(table.column(_TS)).as_py()
        if c.nan_masks:
            table = restore_nans(table, c.nan_masks)
        registered, entries, windows = self.state.load(key)
        self._set_clocks(timerValues)
        self._key_rows = []
        outputs: list[pa.RecordBatch] = []
        if c.columnar is not None:
            table, windows = self._group_call(table, entries, windows, outputs)
        joining: list[OpenWindows] = []
        touched = set()
        table, ranges = key_ranges(table, c.layout.keys)
        columns = _RowColumns(table, c)
        for k, lo, hi in ranges:
            skey = state_key(k)
            touched.add(skey)
            key_rows = table.slice(lo, hi - lo)
            at = (columns, lo, hi)
            self._store(entries, skey, self._key_call(k, entries.get(skey), key_rows, outputs, at))
            self._join(entries, skey, joining)
        # keys of the group without rows whose timers are due fire now, as their own
        # timers would at the end of this micro-batch
        self._fire_due(entries, self._clock(), outputs, skip=touched, joining=joining)
        self._pack_keys(outputs)
        group: list[pa.RecordBatch] = []  # the group's metrics row: an IPC stream of its own
        windows = _concat_windows(windows, joining)
        self._save(registered, entries, windows, alive=True, outputs=group, newest=newest)
        yield pack(outputs, group)

    def handleExpiredTimer(  # noqa: N802 - Spark's name; called with keyword arguments
        self,
        key: Any,
        timerValues: Any,  # noqa: N803
        expiredTimerInfo: Any,  # noqa: N803
    ) -> Any:
        registered, entries, windows = self.state.load(key)
        self._set_clocks(timerValues)
        self._key_rows = []
        outputs: list[pa.RecordBatch] = []
        if windows is not None:
            _, windows = self._group_call(None, entries, windows, outputs)
        due = self._clock()
        if self.config.idleness is None:  # an event-time timer (a poll's is processing time)
            due = max(due, int(expiredTimerInfo.getExpiryTimeInMs()))
        joining: list[OpenWindows] = []
        self._fire_due(entries, due, outputs, skip=(), joining=joining)
        self._pack_keys(outputs)
        group: list[pa.RecordBatch] = []  # the group's metrics row: an IPC stream of its own
        windows = _concat_windows(windows, joining)
        self._save(registered, entries, windows, alive=False, outputs=group)
        yield pack(outputs, group)

    def _clock(self) -> int:
        """The Spark clock timers are due by: the watermark, or processing time."""
        return self.now if self.config.wall_clock else self.spark_watermark

    @staticmethod
    def _store(entries: dict[Any, Entry], skey: Any, entry: Entry | None) -> None:
        if entry is None:
            entries.pop(skey, None)
        else:
            entries[skey] = entry

    def _fire_due(
        self,
        entries: dict[Any, Entry],
        clock: int,
        outputs: list[pa.RecordBatch],
        *,
        skip: Collection[Any],
        joining: list[OpenWindows],
    ) -> None:
        """Run the timers of the keys due by ``clock`` (except those in ``skip``)."""
        due = [
            (skey, e)
            for skey, e in entries.items()
            if e[1] is not None and e[1] <= self._key_due_clock(e, clock) and skey not in skip
        ]
        for skey, entry in due:
            self._store(entries, skey, self._key_call(entry[0], entry, None, outputs))
            self._join(entries, skey, joining)

    def _key_call(
        self,
        k: Any,
        entry: Entry | None,
        table: pa.Table | None,
        outputs: list[pa.RecordBatch],
        rows: _RowSlice | None = None,
    ) -> Entry | None:
        """One key's call: fire its due timers, then process its rows of this micro-batch
        (``table``; ``None``: a timer call); its output goes to ``outputs``. Returns the key's
        new entry; ``rows``: the key's rows as Python values, when the group's are at hand.
        With dead letters, a row whose processing raises is left out and the call starts over
        from the key's stored state without it."""
        try:
            if self.op.dead_letters is None or table is None:
                return self._key_call_once(k, entry, table, outputs, {}, rows)
            skipped: dict[int, Any] = {}  # row -> DeadLetter
            while True:
                try:
                    return self._key_call_once(k, entry, table, outputs, skipped, rows)
                except ElementFailedError as failed:
                    skipped[failed.row] = failed.letter
        finally:
            if self.config.idleness is not None:
                self.op.set_clocks(watermark=self.stream_watermark)  # the next key's own

    def _key_call_once(
        self,
        k: Any,
        entry: Entry | None,
        table: pa.Table | None,
        outputs: list[pa.RecordBatch],
        skipped: dict[int, Any],
        rows: _RowSlice | None = None,
    ) -> Entry | None:
        """:meth:`_key_call` but the rows ``skipped`` (their dead letters)."""
        c = self.config
        self._opened = None
        stored = None if entry is None else self.state.decode_entry(entry[2])
        self._set_key_clock(None if entry is None else entry[3])
        if c.columnar is not None:
            done, new_entry = self._columnar_call(k, stored, table, outputs)
            if done:
                return new_entry
        ks = self._key_state(stored)
        op = self.op
        self._reset()
        if c.idleness is not None:
            op.set_clocks(watermark=self._key_clock(entry))
        self._fire(k, ks)
        if table is None:
            self._emit(k, None, LateRows(), (0, 0, 0), outputs, {})
            return self._entry(k, ks, self._idle_after(entry, None))
        columns, lo, hi = (_RowColumns(table, c), 0, table.num_rows) if rows is None else rows
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
        if arrival is None and pts is None and no_nulls and not guarded:
            pending.extend(zip(elements, ts, repeat(k, len(elements)), strict=True))
        else:
            for i, row in enumerate(elements):
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
                        late.add(i, op.watermark, REASON_NULL_EVENT_TIME)
                    continue
                if i in skipped:
                    continue  # a dead letter (its processing-time advance happened)
                pending.append((row, t, k))
                pending_rows.append(i)
        ks = flush(ks)
        if tag is not None:
            lates = op.side_outputs.get(tag, [])
            if lates:
                late.add_late_elements(lates, {id(r): i for i, r in enumerate(elements)})
        self._emit(k, table, late, (table.num_rows, null_ts, null_arr), outputs, skipped)
        return self._entry(k, ks, self._idle_after(entry, table))

    def close(self) -> None:
        pass

    # -- helpers ---------------------------------------------------------------------------
    def _set_clocks(self, timer_values: Any) -> None:
        """The micro-batch's watermark (EventTime mode) and processing time."""
        self.now = int(timer_values.getCurrentProcessingTimeInMs())
        if not self.config.wall_clock:
            self.spark_watermark = int(timer_values.getCurrentWatermarkInMs())
            wm = max(self.stream_watermark, flink_watermark(self.spark_watermark))
            self.stream_watermark = wm
            self.op.set_clocks(watermark=wm)

    def _set_key_clock(self, clock: int | None) -> None:
        """The operator's processing time for a key: its clock from its state with a
        ``processing_time`` column, else the micro-batch's."""
        if _PT in self.config.internal:
            self.op.set_clocks(processing_time=0 if clock is None else clock)
        else:
            self.op.set_clocks(processing_time=self.now)

    def _reset(self) -> None:
        self.op.clear_outputs(metrics=type(self.op.metrics)())

    def _fire(self, key: Any, ks: Any) -> None:
        try:
            self.op.fire_timers(key, ks)
        except Exception as exc:
            exc.add_note(
                f"while firing timers at watermark {self.op.watermark} / processing time "
                f"{self.op.processing_time} for key {key!r} in the Spark streaming runtime"
            )
            raise

    def _emit(
        self,
        key: Any,
        table: pa.Table | None,
        late: LateRows,
        counts: tuple[int, int, int],
        outputs: list[pa.RecordBatch],
        skipped: dict[int, Any],
    ) -> None:
        """Keep this key call's tagged rows for :meth:`_pack_keys`; ``counts`` = (input rows,
        rows without event time, rows without arrival order); ``skipped``: the dead letters
        of rows left out (row -> ``DeadLetter``)."""
        op = self.op
        m = op.metrics
        n_input, null_ts, null_arr = counts
        has_side = any(records for records in op.side_outputs.values())
        fired = m.num_windows_fired or m.num_null_results
        dead = None
        if op.dead_letters is not None:
            dead = DeadRows()
            for row, letter in sorted(skipped.items()):
                dead.add(letter, row)
            for letter in op.dead_letters:
                dead.add(letter)
        if not (op.output or late.rows or n_input or fired or has_side or dead):
            return
        self._key_rows.append(
            KeyCallRows(
                key=key,
                results=list(op.output),
                side_outputs={t: list(r) for t, r in op.side_outputs.items() if r},
                source=table,
                late=late,
                counters=operator_counters(op, n_input, null_ts, null_arr),
                dead=dead,
            )
        )

    def _pack_keys(self, outputs: list[pa.RecordBatch]) -> None:
        """Add the tagged rows of the call's keys (:meth:`_emit`) to ``outputs``."""
        parts, self._key_rows = self._key_rows, []
        with_dead = self.op.dead_letters is not None
        layout = self.config.layout
        for table in key_call_tables(
            layout, parts, self._key_columns, self._keys_columns, with_dead
        ):
            outputs.extend(table.to_batches())
