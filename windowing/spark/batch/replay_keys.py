"""One key's replay in the batch replay (:mod:`windowing.spark.batch.replay`): its rows fed to the
key group's window operator batch by batch, its outputs gathered into the tagged output of
the batch they came with.

A key's rows in arrival order (or by a processing-time column) go to the operator as they
come, the watermark moving between them as a streaming run's would. In event-time order (no
arrival order: Flink's batch mode) a key of at most ``CHUNK_ROWS`` elements goes to the
operator in one pass at its end; a larger one chunk by chunk, the windows no later element
can reach fired as the end of input will fire them
(:func:`~windowing.operator.fire_ended_windows`), so that the key keeps only
its open windows.

With ``on_error("dead_letter")`` a row whose processing raises is left out by replaying the
key's earlier rows again from its start, without it (their outputs, emitted already, are
dropped): the key's rows are kept for that as Arrow record batches, in memory up to
``LOG_BYTES`` and beyond in a temporary folder (under ``SPARK_LOCAL_DIRS`` when the worker
has it).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Protocol

import pyarrow as pa

from windowing.operator import WindowOperator, fire_ended_windows
from windowing.records import OutputTag
from windowing.spark.columns.failures import (
    DeadRows,
    ElementFailedError,
    raise_element_error,
    split_results,
)
from windowing.spark.columns.inputs import ARR, PT, TS, WMAX
from windowing.spark.columns.operator_rows import (
    REASON_LATE,
    REASON_NULL_ARRIVAL_ORDER,
    REASON_NULL_EVENT_TIME,
    LateRows,
)
from windowing.spark.columns.schema import table_rows
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP, instant_text

__all__ = [
    "CHUNK_ROWS",
    "LOG_BYTES",
    "Chunk",
    "KeyGroupCall",
    "KeyLog",
    "OperatorRun",
    "OutputBlock",
    "as_batch",
]

#: A key's elements held as Python objects before the operator takes them in event-time
#: order (a smaller key goes in one pass at its end; a larger one chunk by chunk); the
#: default of ``Replay.chunk_rows``.
CHUNK_ROWS = 65_536
#: A key's input rows kept in memory for a dead-letter replay, in bytes; more go to a
#: temporary file (the default of ``Replay.log_bytes``).
LOG_BYTES = 64 * 1024 * 1024


class KeyGroupCall(Protocol):
    """What a key's replay reads from, and counts into, its key group's call."""

    replay: Any  # the call's windowing.spark.batch.replay.Replay (its configuration)
    op: WindowOperator
    late_tag: OutputTag | None
    guarded: bool  # on_error("dead_letter")
    deferred: bool  # event-time order: no arrival order, no processing-time column
    batch_id: int  # the input batch being replayed
    first_key: Any
    null_ts: int
    null_arr: int
    left_at_end: int


class Chunk:
    """Rows ``lo`` to ``hi`` of a batch or table as Python objects: the input rows as
    ``Row``s, the event time, arrival order, processing time and watermark columns."""

    __slots__ = ("_arrival", "_pts", "_rows", "_ts", "_wmax", "lo")

    def __init__(self, replay: Any, data: pa.RecordBatch | pa.Table, lo: int, hi: int) -> None:
        part = data.slice(lo, hi - lo)
        self.lo = lo
        self._rows: list[Any] = table_rows(part, replay.input_names)
        self._ts: list[Any] = part.column(TS).to_pylist()
        self._wmax: list[Any] | None = part.column(WMAX).to_pylist() if replay.has_arrival else None
        self._arrival: list[Any] | None = (
            part.column(ARR).to_pylist() if replay.has_arrival else None
        )
        self._pts: list[Any] | None = (
            part.column(PT).to_pylist() if replay.has_processing_time else None
        )

    def rows(self, lo: int, hi: int) -> list[Any]:
        return self._rows[lo - self.lo : hi - self.lo]

    def ts(self, lo: int, hi: int) -> list[Any]:
        return self._ts[lo - self.lo : hi - self.lo]

    def wmax(self, lo: int, hi: int) -> list[Any] | None:
        return None if self._wmax is None else self._wmax[lo - self.lo : hi - self.lo]

    def arrival(self, lo: int, hi: int) -> list[Any] | None:
        return None if self._arrival is None else self._arrival[lo - self.lo : hi - self.lo]

    def pts(self, lo: int, hi: int) -> list[Any] | None:
        return None if self._pts is None else self._pts[lo - self.lo : hi - self.lo]


class KeyLog:
    """A key's input rows as record batches, for a dead-letter replay: in memory up to
    ``limit`` bytes, then in Arrow IPC files in a temporary folder (under Spark's local
    directory when the worker has one)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held: list[pa.RecordBatch] = []
        self.held_bytes = 0
        self.files: list[str] = []
        self.folder: str | None = None
        self.count = 0

    def append(self, batch: pa.RecordBatch) -> None:
        self.held.append(batch)
        self.count += 1
        self.held_bytes += batch.nbytes
        if self.held_bytes > self.limit:
            self._spill()

    def _spill(self) -> None:
        if self.folder is None:
            local = os.environ.get("SPARK_LOCAL_DIRS", "").split(",")[0] or None
            self.folder = tempfile.mkdtemp(prefix="windowing-key-", dir=local)
        path = os.path.join(self.folder, f"{len(self.files)}.arrow")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, self.held[0].schema) as w:
            for batch in self.held:
                w.write_batch(batch)
        self.files.append(path)
        self.held.clear()
        self.held_bytes = 0

    def all_but_last(self) -> Iterator[pa.RecordBatch]:
        """The batches appended so far but the last one, in order."""
        left = self.count - 1
        for path in self.files:
            with pa.memory_map(path) as source:
                for batch in pa.ipc.open_stream(source):
                    if left <= 0:
                        return
                    left -= 1
                    yield batch
        for batch in self.held:
            if left <= 0:
                return
            left -= 1
            yield batch

    def close(self) -> None:
        self.held.clear()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


# ---------------------------------------------------------------------------- outputs
class OutputBlock:
    """The outputs of one input batch (or of the end of a key group), built into tagged
    record batches: operator outputs with the key columns of the batch's rows, or of the key
    rows of keys that began in an earlier batch; late rows and dead letters with their input
    rows (of the batch, or copied from an earlier one); results computed on whole columns."""

    def __init__(self, group: KeyGroupCall, batch: pa.RecordBatch | None) -> None:
        layout = group.replay.layout
        self.group = group
        self.batch = batch
        self.base = 0 if batch is None else batch.num_rows
        self.extras: list[pa.RecordBatch] = []
        self.results: list[Any] = []
        self.result_refs: list[int] = []
        self.sides: dict[OutputTag, list[Any]] = {t: [] for t in layout.side_tags}
        self.side_refs: dict[OutputTag, list[int]] = {t: [] for t in layout.side_tags}
        self.late = LateRows()
        self.late_refs: list[int] = []
        self.dead = DeadRows()
        self.dead_refs: list[int] = []
        self.extra_rows: list[pa.RecordBatch] = []
        self.columnar: list[pa.RecordBatch] = []

    def input_row(self, source: pa.RecordBatch | pa.Table, row: int) -> int:
        """Row ``row`` of ``source`` (this block's batch, or a table of an earlier one) as an
        index of the block's input rows (late rows and dead letters are taken from them)."""
        if source is self.batch:
            return row
        copy = source.take(pa.array([row], pa.int64()))  # not a view of the whole batch
        self.extra_rows.append(as_batch(copy))
        return self.base + len(self.extra_rows) - 1

    def extra(self, key_row: pa.RecordBatch) -> int:
        """A key row of a key that began in an earlier batch: its index in the key rows."""
        self.extras.append(key_row)
        return self.base + len(self.extras) - 1

    def build(self, counters: Mapping[str, int] | None) -> list[pa.RecordBatch]:
        """The tagged record batches of this block; with ``counters``, one metrics row with
        them (the end of a key group)."""
        group = self.group
        layout = group.replay.layout
        out = list(self.columnar)
        if counters is None and not (
            self.results or self.late.rows or len(self.dead) or any(self.sides.values())
        ):
            return out
        keys = group.replay.keys
        sources = [] if self.batch is None else [self.batch.select(keys)]
        sources += self.extras
        key_table = pa.Table.from_batches(sources) if keys and sources else None
        metrics_ref: int | None = 0 if sources else None
        all_counters = dict(counters or {})

        def key_columns(total: int) -> list[pa.Array]:
            refs: list[int | None] = [*self.result_refs]
            for tag in layout.side_tags:
                refs += self.side_refs[tag]
            refs += [*self.late_refs, *self.dead_refs, metrics_ref]
            assert total == len(refs)
            if key_table is None:  # no row of any key: the metrics row alone
                schema = layout.arrow_schema
                return [pa.nulls(total, schema.field(k).type) for k in keys]
            take = pa.array(refs, pa.int64())
            return [key_table.column(k).take(take).combine_chunks() for k in keys]

        inputs = [] if self.batch is None else [self.batch]
        inputs += self.extra_rows
        late_source = pa.Table.from_batches(inputs) if inputs else None

        def tagged() -> pa.Table:
            all_counters["num_results"] = len(self.results)
            return layout.tagged_table(
                key=group.first_key,
                key_columns=key_columns,
                results=self.results,
                side_outputs=self.sides,
                late_source=late_source,
                late=self.late,
                counters=all_counters,
                dead=self.dead if layout.dead_letter else None,
            )

        if not layout.dead_letter:
            table = tagged()
        else:
            try:
                table = tagged()
            except Exception:  # a result that is not a row of the output schema
                bad = split_results(self.results, layout.check_result)
                drop = {i for i, _ in bad}
                for i, letter in bad:
                    self.dead.add(letter)
                    self.dead_refs.append(self.result_refs[i])
                keep = [i for i in range(len(self.results)) if i not in drop]
                self.results = [self.results[i] for i in keep]
                self.result_refs = [self.result_refs[i] for i in keep]
                table = tagged()
        out.extend(table.to_batches())
        return out


@dataclass
class Attempt:
    """What the runtime notes while it feeds a key's rows: late rows and the rows without
    event time or arrival order (kept only once the rows went through without an element
    failing)."""

    late: LateRows = dataclasses.field(default_factory=LateRows)
    null_ts: int = 0
    null_arr: int = 0


# ---------------------------------------------------------------------------- one key
class OperatorRun:
    """One key replayed on the group's operator, its rows fed batch by batch."""

    __slots__ = (
        "batch_id",
        "extra_block",
        "extra_ref",
        "group",
        "incremental",
        "key",
        "key_row",
        "last",
        "log",
        "metrics0",
        "newest",
        "pending",
        "pending_pos",
        "position",
        "row",
        "skey",
        "skipped",
        "sources",
    )

    def __init__(self, group: KeyGroupCall, key: Any, skey: Any, row: int) -> None:
        self.group = group
        self.key = key
        self.skey = skey
        self.row = row  # the key's first row in the batch ``batch_id``
        self.batch_id = group.batch_id
        self.key_row: pa.RecordBatch | None = None
        self.extra_block: OutputBlock | None = None
        self.extra_ref = 0
        self.position = 0  # rows of the key fed so far
        self.pending: list[tuple[Any, Any, Any]] = []
        self.pending_pos: list[int] = []  # their positions, with dead letters
        # the rows the pending elements (and the current feed's) came from: (source, first
        # row, the rows as Python objects), for the input columns of a late element
        self.sources: list[tuple[Any, int, list[Any]]] = []
        self.incremental = group.guarded  # event-time order: elements as they come
        self.newest: int | None = None  # the key's largest event time so far (idleness)
        self.last: int | None = None  # when its last row arrived (idleness)
        op = group.op
        op.set_clocks(watermark=MIN_TIMESTAMP, processing_time=0)  # a key of its own
        self.skipped: dict[int, Any] = {}  # position -> DeadLetter
        self.log: KeyLog | None = None
        self.metrics0: Any = None
        if group.guarded:
            self.log = KeyLog(group.replay.log_bytes)
            self.metrics0 = dataclasses.replace(op.metrics)

    # -- key columns -------------------------------------------------------------------------
    def ref(self, block: OutputBlock) -> int:
        """The key's row in ``block``'s key rows."""
        if self.batch_id == block.group.batch_id and block.batch is not None:
            return self.row
        if self.extra_block is not block:
            assert self.key_row is not None
            self.extra_ref = block.extra(self.key_row)
            self.extra_block = block
        return self.extra_ref

    def detach(self, batch: pa.RecordBatch) -> None:
        """The key goes on in the next batch: keep a copy of its key row (row ``row`` of
        ``batch``)."""
        if self.key_row is None:
            keys = self.group.replay.keys
            self.key_row = batch.select(keys).take(pa.array([self.row], pa.int64()))

    # -- rows ----------------------------------------------------------------------------------
    def feed(
        self, chunk: Chunk, lo: int, hi: int, block: OutputBlock, source: pa.RecordBatch | pa.Table
    ) -> None:
        """Replay rows ``lo`` to ``hi`` of ``source`` (converted in ``chunk``); with dead
        letters, a row whose processing raises is left out and the key replayed again
        without it."""
        pos0 = self.position
        self.position += hi - lo
        self.sources.append((source, lo, chunk.rows(lo, hi)))
        if self.log is None:
            attempt = self._feed_once(chunk, lo, hi, pos0)
            self._collect(block, attempt, source, lo, pos0, ())
            return
        self.log.append(as_batch(source.slice(lo, hi - lo)))
        failed_here: list[int] = []
        while True:
            try:
                attempt = self._feed_once(chunk, lo, hi, pos0)
                break
            except ElementFailedError as failed:
                self.skipped[failed.row] = failed.letter
                failed_here.append(failed.row)
                self._start_over()
        self._collect(block, attempt, source, lo, pos0, failed_here)

    def _start_over(self) -> None:
        """After an element failed: the key's state as it was just before the rows of the
        current feed (its earlier rows replayed again, their outputs dropped: they were
        emitted already)."""
        group, op, log = self.group, self.group.op, self.log
        assert log is not None and self.metrics0 is not None
        op.clear_outputs(metrics=dataclasses.replace(self.metrics0))
        op.backend.remove(self.key)
        op.scheduler.forget(self.key)
        op.set_clocks(watermark=MIN_TIMESTAMP, processing_time=0)
        self.pending.clear()
        self.pending_pos.clear()
        self.newest = self.last = None
        position = 0
        for batch in log.all_but_last():
            chunk = Chunk(group.replay, batch, 0, batch.num_rows)
            self._feed_once(chunk, 0, batch.num_rows, position)
            position += batch.num_rows
        op.clear_outputs()

    def _feed_once(self, chunk: Chunk, lo: int, hi: int, pos0: int) -> Attempt:
        """Rows ``lo`` to ``hi`` (positions ``pos0`` on of the key) but the rows skipped."""
        group = self.group
        op = group.op
        key = self.key
        attempt = Attempt()
        late = attempt.late
        tag = group.late_tag
        rows, ts = chunk.rows(lo, hi), chunk.ts(lo, hi)
        event_time = op.is_event_time
        skipped = self.skipped
        guarded = group.guarded
        pending, pending_pos = self.pending, self.pending_pos
        if group.deferred:  # event-time order, no watermark before the end of input
            if not skipped and not guarded and not (event_time and None in ts):
                pending.extend(zip(rows, ts, repeat(key, len(rows)), strict=True))
            else:
                for i, row in enumerate(rows):
                    t = ts[i]
                    if t is None and event_time:
                        attempt.null_ts += 1
                        if tag is not None:
                            late.add(lo + i, op.watermark, REASON_NULL_EVENT_TIME)
                        continue
                    if pos0 + i in skipped:
                        continue
                    pending.append((row, t, key))
                    if guarded:
                        pending_pos.append(pos0 + i)
            if self.incremental or len(pending) >= group.replay.chunk_rows:
                self.incremental = True
                newest = pending[-1][1] if pending else None
                self._flush()
                if isinstance(newest, int):
                    self._fire_ended(newest - 2)  # later rows have event times >= newest
            return attempt
        wmax, arrival, pts = chunk.wmax(lo, hi), chunk.arrival(lo, hi), chunk.pts(lo, hi)
        watermark_for = group.replay.watermark.current_watermark
        idleness = group.replay.idleness
        for i, row in enumerate(rows):
            if arrival is not None and arrival[i] is None:
                attempt.null_arr += 1
                if tag is not None:
                    late.add(lo + i, None, REASON_NULL_ARRIVAL_ORDER)
                continue
            wm = op.watermark
            if wmax is not None and wmax[i] is not None:
                wm = watermark_for(wmax[i])
            pt = pts[i] if pts is not None else None
            t = ts[i]
            if idleness is not None and pt is not None:
                # the key's own clock moved while it was quiet (windowing.idleness)
                wm = max(wm, idleness.watermark_at(self.newest, self.last, pt))
                self.last = pt
                if t is not None:
                    self.newest = t if self.newest is None else max(self.newest, t)
            if wm > op.watermark or (pt is not None and pt > op.processing_time):
                self._flush()
                self._advance(wm, pt)
            if t is None and event_time:
                attempt.null_ts += 1
                if tag is not None:
                    late.add(lo + i, op.watermark, REASON_NULL_EVENT_TIME)
                continue
            if pos0 + i in skipped:
                continue  # a dead letter (its watermark advance happened)
            pending.append((row, t, key))
            if guarded:
                pending_pos.append(pos0 + i)
        self._flush()
        return attempt

    def _flush(self, *, to_end: bool = False) -> None:
        group = self.group
        op = group.op
        pending = self.pending
        before = op.metrics.num_elements  # counted as each element starts
        try:
            if to_end:
                op.process_to_end(self.key, pending)
            elif pending:
                op.process_elements(pending)
        except Exception as exc:
            failed = op.metrics.num_elements - before - 1
            raise_element_error(
                exc,
                failed,
                pending,
                self.pending_pos,
                self.key,
                "the Spark batch replay",
                guarded=group.guarded,
                show_values=group.replay.window.show_values,
            )
        pending.clear()
        self.pending_pos.clear()

    def _fire_ended(self, upto: int) -> None:
        try:
            fire_ended_windows(self.group.op, self.key, upto)
        except Exception as exc:
            exc.add_note(
                f"while firing the windows of key {self.key!r} ended before {upto + 2} in the "
                "Spark batch replay"
            )
            raise

    def _advance(self, watermark: int, processing_time: int | None) -> None:
        op = self.group.op
        try:
            if watermark > op.watermark:
                op.process_watermark(watermark)
            if processing_time is not None and processing_time > op.processing_time:
                op.advance_processing_time(processing_time)
        except Exception as exc:
            exc.add_note(
                f"while advancing the watermark to {instant_text(watermark)} / processing "
                f"time to {instant_text(processing_time)} for key {self.key!r} in the Spark "
                "batch replay"
            )
            raise

    def finish(self, block: OutputBlock) -> None:
        """The end of the key's input: the watermark and processing time at the end of time;
        the key's outputs go to ``block``."""
        group = self.group
        op = group.op
        try:
            if group.deferred and not self.incremental:
                self._flush(to_end=True)
            elif group.deferred:
                self._flush()
                try:
                    op.process_watermark(MAX_TIMESTAMP)
                    op.advance_processing_time(MAX_TIMESTAMP)
                except Exception as exc:
                    exc.add_note(f"at the end of the input of key {self.key!r}")
                    raise
            else:
                self._flush()
                self._advance(MAX_TIMESTAMP, MAX_TIMESTAMP)
            self._collect(block, Attempt(), None, 0, self.position, ())
            group.left_at_end += sum(1 for _ in op.iter_windows(self.key))
        finally:
            op.backend.remove(self.key)  # the key's input has ended
            if self.log is not None:
                self.log.close()

    def _collect(
        self,
        block: OutputBlock,
        attempt: Attempt,
        source: pa.RecordBatch | pa.Table | None,
        lo: int,
        pos0: int,
        failed: Any,
    ) -> None:
        """Move what the operator and the runtime noted while rows from ``lo`` of ``source``
        (positions from ``pos0`` of the key) were fed into ``block``: results, side outputs,
        late rows, dead letters (the positions ``failed``)."""
        group = self.group
        op = group.op
        noted = attempt.late
        if not (
            noted.rows or op.output or op.side_outputs or failed or op.dead_letters
        ):  # nothing to move (a key's rows held for its one pass, the common case)
            group.null_ts += attempt.null_ts
            group.null_arr += attempt.null_arr
            if not self.pending:
                self.sources.clear()
            return
        layout = group.replay.layout
        group.null_ts += attempt.null_ts
        group.null_arr += attempt.null_arr
        ref = self.ref(block)
        for row, watermark, reason in zip(noted.rows, noted.watermarks, noted.reasons, strict=True):
            assert source is not None
            block.late.add(block.input_row(source, row), watermark, reason)
            block.late_refs.append(ref)
        sides = op.side_outputs
        tag = group.late_tag
        lates = sides.pop(tag, None) if tag is not None else None
        if lates:  # elements of this feed, or held from earlier ones (event-time order)
            index = {
                id(r): (held, start + i)
                for held, start, rows in self.sources
                for i, r in enumerate(rows)
            }
            for e in lates:
                held, row = index[id(e.value)]
                block.late.add(block.input_row(held, row), e.watermark, REASON_LATE)
                block.late_refs.append(ref)
        if not self.pending:
            self.sources.clear()  # every element held went to the operator
        for side_tag, records in sides.items():
            if records:
                layout.check_side_output(side_tag, records, self.key)
                block.sides[side_tag].extend(records)
                block.side_refs[side_tag].extend([ref] * len(records))
        sides.clear()
        output = op.output
        if output:
            block.results.extend(output)
            block.result_refs.extend([ref] * len(output))
            output.clear()
        for position in sorted(failed):
            assert source is not None
            block.dead.add(self.skipped[position], block.input_row(source, lo + position - pos0))
            block.dead_refs.append(ref)
        letters = op.dead_letters
        if letters:
            for letter in letters:
                block.dead.add(letter)
                block.dead_refs.append(ref)
            letters.clear()


def as_batch(data: pa.RecordBatch | pa.Table) -> pa.RecordBatch:
    if isinstance(data, pa.RecordBatch):
        return data
    return data.combine_chunks().to_batches()[0] if data.num_rows else data.to_batches()[0]
