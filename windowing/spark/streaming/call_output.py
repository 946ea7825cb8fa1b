"""The tagged output of one call of the streaming processor (:class:`CallOutput`): the key
calls' results, side outputs, late rows, dead letters and metrics, the batches of the calls on
whole columns, the group's metrics row, and the key columns they are tagged with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from windowing.operator import WindowOperator
from windowing.spark.columnar.core import ColumnarStep
from windowing.spark.columns.failures import DeadRows
from windowing.spark.columns.null_results import NullResultReport, report_null_results
from windowing.spark.columns.operator_rows import KeyCallRows, key_call_tables, operator_counters
from windowing.spark.columns.output import REASON_LATE, LateRows
from windowing.spark.columns.schema import value_encoder
from windowing.spark.streaming.config import ProcessorConfig

__all__ = ["CallOutput"]


class CallOutput:
    """The output of a key group's call as Arrow batches, in ``config``'s layout; the key
    calls' outputs are read from ``op`` and packed together at the end of the call.

    Example::

        out = CallOutput(config, op)
        out.begin()
        ...  # out.add_key(...) after each key's operator call, out.add_columnar(...)
        batches = out.finish()
    """

    def __init__(self, config: ProcessorConfig, op: WindowOperator) -> None:
        self.config = config
        self.op = op
        schema = config.layout.input_schema
        self.key_encoders = [value_encoder(schema[k].dataType) for k in config.layout.keys]
        self.batches: list[pa.RecordBatch] = []
        self._key_rows: list[KeyCallRows] = []  # the call's key outputs not yet packed
        self._nulls = NullResultReport()  # the call's windows whose result was None

    def begin(self) -> None:
        """Start a call's output: nothing yet."""
        self.batches = []
        self._key_rows = []
        self._nulls = NullResultReport()

    def finish(self) -> list[pa.RecordBatch]:
        """The call's batches, the key calls' tagged rows (:meth:`add_key`) packed last; its
        windows whose result was ``None`` are reported to the driver."""
        report_null_results(self.config.null_results, self._nulls)
        self._nulls = NullResultReport()
        parts, self._key_rows = self._key_rows, []
        with_dead = self.op.dead_letters is not None
        layout = self.config.layout
        batches, self.batches = self.batches, []
        for table in key_call_tables(layout, parts, self.key_columns, self.keys_columns, with_dead):
            batches.extend(table.to_batches())
        return batches

    def add_key(
        self,
        key: Any,
        table: pa.Table | None,
        late: LateRows,
        counts: tuple[int, int, int],
        skipped: dict[int, Any],
    ) -> None:
        """Keep the operator's output of a call of ``key`` for :meth:`finish`; ``counts`` =
        (input rows, rows without event time, rows without arrival order); ``skipped``: the
        dead letters of rows left out (row -> ``DeadLetter``)."""
        op = self.op
        m = op.metrics
        n_input, null_ts, null_arr = counts
        has_side = any(records for records in op.side_outputs.values())
        fired = m.num_windows_fired or m.num_null_results
        if m.num_null_results:
            self._nulls = self._nulls.merged(NullResultReport.of(m))
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

    def add_columnar(
        self,
        step: ColumnarStep,
        n_input: int,
        source: pa.Table | None,
        key_columns: Callable[[int], list[pa.Array]],
        other_key_columns: Callable[[int], list[pa.Array]] | None = None,
    ) -> None:
        """Add the tagged output of a call on whole columns: the windows ``step`` fired
        (their key columns ``key_columns(n)``), its late rows of ``source`` and the call's
        metrics row (key columns ``other_key_columns``, by default ``key_columns``)."""
        c = self.config
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
        records = step.fired_rows  # None: no window fired (the result columns are empty)
        names = c.layout.out_schema.names if records is not None else []
        columns = [records.column(name).combine_chunks() for name in names]
        self.batches.extend(
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

    def group_metrics(self, gauges: dict[str, int]) -> list[pa.RecordBatch]:
        """A metrics row (no key) with the gauges of the group's call (an IPC stream of its
        own: its null columns need not have the types of the key calls' columns, e.g. the
        time zone of input timestamps)."""
        types = self.config.key_arrow_types
        table = self.config.layout.tagged_table(
            key=None,
            key_columns=lambda n: [pa.nulls(n, t) for t in types],
            results=[],
            side_outputs={},
            late_source=None,
            late=LateRows(),
            counters=gauges,
        )
        batches: list[pa.RecordBatch] = table.to_batches()
        return batches

    def keys_columns(self, keys: list[Any], trailing_nulls: int = 0) -> list[pa.Array]:
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

    def key_columns(self, key: Any) -> Callable[[int], list[pa.Array]]:
        """The key column(s) of ``key`` for ``n`` output rows (none for ``window_all``)."""
        encoders = self.key_encoders
        values = [key] if len(encoders) == 1 else list(key or ())
        values = [v if enc is None else enc(v) for v, enc in zip(values, encoders, strict=True)]
        types = self.config.key_arrow_types

        def key_columns(total: int) -> list[pa.Array]:
            return [pa.array([v] * total, t) for v, t in zip(values, types, strict=True)]

        return key_columns
