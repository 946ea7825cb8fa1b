"""The executor side of the streaming runtime: the stateful processor that runs the window
operator for a key group's keys in each micro-batch (``transformWithStateInPandas``), its
state layout, and how its output is packed for Spark (:mod:`windowing.spark.streaming.query` builds
the query)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from windowing.spark.columnar.core import OpenWindows
from windowing.spark.columns.frames import input_table, key_ranges, pack, restore_nans
from windowing.spark.columns.inputs import PT as _PT
from windowing.spark.columns.inputs import TS as _TS
from windowing.spark.columns.inputs import arrival_count, replay_order
from windowing.spark.columns.keys import state_key
from windowing.spark.jobs import window_operator
from windowing.spark.streaming.call_output import CallOutput
from windowing.spark.streaming.checkpoint import Entry
from windowing.spark.streaming.clocks import BatchClocks, KeyClocks
from windowing.spark.streaming.columnar_calls import ColumnarCalls, concat_windows
from windowing.spark.streaming.config import ProcessorConfig
from windowing.spark.streaming.key_calls import KeyCalls, RowColumns
from windowing.spark.streaming.state_io import StateIO
from windowing.time import MIN_TIMESTAMP

__all__ = ["WindowProcessor"]


class WindowProcessor(StatefulProcessor):
    """One ``WindowOperator`` per Python worker; Spark's grouping key is a key group
    (:meth:`~windowing.stream.WindowedStream.max_parallelism`), with one ValueState and one
    timer.

    The state (:mod:`~windowing.spark.streaming.checkpoint`) is the encoded ``(layout, key
    groups, registered timer, entries, windows, job digest)``, where ``entries`` maps each key
    of the group run by the operator (:func:`~windowing.spark.columns.keys.state_key`) to an
    :data:`~windowing.spark.streaming.checkpoint.Entry`: the key, the Spark time at which it
    is next due, its encoded key state, its clock, its open windows and its idle clock;
    ``windows`` (a columnar plan only; ``None`` without) are the open windows of all other
    keys, as one :class:`~windowing.spark.columnar.core.OpenWindows`. The key state of an
    entry is the operator's :class:`~windowing.operator.KeyState`, or the key's own
    ``OpenWindows`` (each form converts to the other when a call needs it; a key whose call
    ends with its windows in columnar form joins the group's windows); only the entries a
    call touches are decoded. The clock is the key's largest ``processing_time`` value so far
    (``None`` without that column). The registered timer is the earliest due time of the
    group.

    A call composes its parts, built by :meth:`init`: the micro-batch's ``clocks`` and each
    key's (``key_clocks``), the group's state in and out (``state_io``), the operator's calls
    of one key (``key_calls``) and the calls on whole columns (``columnar``, a columnar plan
    only), and the call's tagged ``output``."""

    def __init__(self, config: ProcessorConfig) -> None:
        self.config = config

    def init(self, handle: StatefulProcessorHandle) -> None:
        c = self.config
        self.op = op = window_operator(c.window, c.spec, count_rows=True)
        self.clocks = clocks = BatchClocks(c.wall_clock)
        self.key_clocks = key_clocks = KeyClocks(c.idleness, clocks)
        self.state_io = state_io = StateIO(handle, c, op, clocks)
        self.output = output = CallOutput(c, op)
        self.columnar: ColumnarCalls | None = None
        if c.columnar is not None:
            self.columnar = ColumnarCalls(c, op, clocks, state_io, output)
        self.key_calls = KeyCalls(c, op, clocks, key_clocks, state_io, output, self.columnar)

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
        order = replay_order(arrival=arrival_count(c.internal), processing_time=_PT in c.internal)
        table = input_table(pdf, c.input_table_schema, order)
        newest = pc.max(table.column(_TS)).as_py()
        if c.nan_masks:
            table = restore_nans(table, c.nan_masks)
        registered, entries, windows = self.state_io.load(key)
        self._begin(timerValues)
        if self.columnar is not None:
            table, windows = self.columnar.group_call(table, entries, windows)
        joining: list[OpenWindows] = []
        touched = set()
        table, ranges = key_ranges(table, c.layout.keys)
        columns = RowColumns(table, c)
        run = self.key_calls.run
        for k, lo, hi in ranges:
            skey = state_key(k)
            touched.add(skey)
            run(entries, skey, k, table.slice(lo, hi - lo), joining, (columns, lo, hi))
        # keys of the group without rows whose timers are due fire now, as their own
        # timers would at the end of this micro-batch
        due = self.clocks.due_clock()
        self.key_calls.fire_due(entries, due, skip=touched, joining=joining)
        outputs = self.output.finish()
        windows = concat_windows(windows, joining)
        yield pack(outputs, self._save(registered, entries, windows, alive=True, newest=newest))

    def handleExpiredTimer(  # noqa: N802 - Spark's name; called with keyword arguments
        self,
        key: Any,
        timerValues: Any,  # noqa: N803
        expiredTimerInfo: Any,  # noqa: N803
    ) -> Any:
        registered, entries, windows = self.state_io.load(key)
        self._begin(timerValues)
        if windows is not None:
            assert self.columnar is not None
            _, windows = self.columnar.group_call(None, entries, windows)
        due = self.clocks.due_clock()
        if self.config.idleness is None:  # an event-time timer (a poll's is processing time)
            due = max(due, int(expiredTimerInfo.getExpiryTimeInMs()))
        joining: list[OpenWindows] = []
        self.key_calls.fire_due(entries, due, skip=(), joining=joining)
        outputs = self.output.finish()
        windows = concat_windows(windows, joining)
        yield pack(outputs, self._save(registered, entries, windows, alive=False))

    def close(self) -> None:
        pass

    def _begin(self, timer_values: Any) -> None:
        """Start a call: the micro-batch's clocks (the operator's watermark in EventTime
        mode), no output yet."""
        clocks = self.clocks
        clocks.advance(timer_values)
        if not clocks.wall_clock:
            self.op.set_clocks(watermark=clocks.stream_watermark)
        self.output.begin()

    def _save(
        self,
        registered: int | None,
        entries: dict[Any, Entry],
        windows: OpenWindows | None,
        *,
        alive: bool,
        newest: int | None = None,
    ) -> list[pa.RecordBatch]:
        """Save the group's state (:meth:`StateIO.save`; the keys that only kept an idle
        clock the stream caught up with leave first); the group's metrics row, with the
        newest event time of the call's rows (``newest``) and the stream's watermark."""
        self.key_clocks.prune(entries)
        gauges = self.state_io.save(registered, entries, windows, alive=alive)
        if newest is not None:
            gauges["max_event_time"] = newest
        watermark = self.clocks.stream_watermark
        if watermark > MIN_TIMESTAMP:
            gauges["watermark"] = watermark
        return self.output.group_metrics(gauges)
