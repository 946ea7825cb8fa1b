"""The streaming processor's clocks: the micro-batch's (:class:`BatchClocks`: processing time,
Spark's watermark and the operator's) and, with an idle timeout (:mod:`windowing.idleness`),
each key's own (:class:`KeyClocks`: a key's watermark, when its entry is due, what it
stores)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from windowing.idleness import Idleness, KeyIdleness
from windowing.spark.columns.inputs import TS as _TS
from windowing.spark.streaming.checkpoint import Entry
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

__all__ = ["WATERMARK_SHIFT_MS", "BatchClocks", "KeyClocks", "flink_watermark"]

#: How far Spark's watermark column is ahead of the event time: the milliseconds from
#: 0001-01-01T00:00:00Z to the epoch, so that every timestamp Spark accepts has a positive
#: watermark (Spark keeps its watermark at 0 until event times pass the delay).
WATERMARK_SHIFT_MS = 62_135_596_800_000


def flink_watermark(spark_watermark_ms: int) -> int:
    """Spark's watermark over the shifted event time (late when ``ts + shift < W``; ``0`` =
    none yet) as the operator's (Flink's: late when ``ts <= W``)."""
    if spark_watermark_ms <= 0:
        return MIN_TIMESTAMP
    return spark_watermark_ms - WATERMARK_SHIFT_MS - 1


class BatchClocks:
    """The clocks of the micro-batch a call runs in: ``now`` (its processing time),
    ``spark_watermark`` (Spark's, in the shifted domain; ``0``: none yet) and
    ``stream_watermark`` (Spark's in the operator's terms, never going back;
    ``MIN_TIMESTAMP`` on the wall clock). ``wall_clock``: ProcessingTime mode, where timers
    are due by ``now``."""

    def __init__(self, wall_clock: bool) -> None:
        self.wall_clock = wall_clock
        self.now = 0
        self.spark_watermark = 0
        self.stream_watermark = MIN_TIMESTAMP

    def advance(self, timer_values: Any) -> None:
        """The micro-batch's processing time and (EventTime mode) watermark, from Spark's
        ``TimerValues``."""
        self.now = int(timer_values.getCurrentProcessingTimeInMs())
        if not self.wall_clock:
            self.spark_watermark = int(timer_values.getCurrentWatermarkInMs())
            wm = max(self.stream_watermark, flink_watermark(self.spark_watermark))
            self.stream_watermark = wm

    def due_clock(self) -> int:
        """The Spark clock timers are due by: the watermark, or processing time."""
        return self.now if self.wall_clock else self.spark_watermark

    def spark_timer(self, nxt: int | None, watermark: int) -> int | None:
        """The operator timer ``nxt`` as a Spark timer (``None``: none), for an operator at
        ``watermark``: in event time no earlier than ``W + 1`` (Spark watermark ``W``, and
        the operator's in Spark's terms), so that a timer already due fires at the next
        watermark advance, as in Flink and the batch replay; in processing time no earlier
        than the next millisecond."""
        if self.wall_clock:
            floor, shift = self.now + 1, 0
        else:
            shift = WATERMARK_SHIFT_MS + 1
            floor = max(self.spark_watermark, watermark + shift) + 1
        if nxt is not None and nxt < MAX_TIMESTAMP - shift:
            return max(nxt + shift, floor)
        return None


class KeyClocks:
    """Each key's own clock with an idle timeout ``idleness`` (``None``: the stream's
    watermark for every key), read against the micro-batch's ``clocks``."""

    def __init__(self, idleness: Idleness | None, clocks: BatchClocks) -> None:
        self.idleness = idleness
        self.clocks = clocks

    def key_clock(self, entry: Entry | None) -> int:
        """The key's watermark: the stream's, or with an idle timeout the key's own clock
        (:class:`~windowing.idleness.KeyIdleness`) when it is ahead."""
        idleness = self.idleness
        clocks = self.clocks
        if idleness is None or entry is None or entry[5] is None:
            return clocks.stream_watermark
        return KeyIdleness(*entry[5]).clock(idleness, clocks.stream_watermark, clocks.now)

    def due_clock(self, entry: Entry, clock: int) -> int:
        """The Spark clock the entry's due time is compared with: ``clock``, or the key's
        own clock in Spark's watermark terms when that is ahead (an idle timeout)."""
        if self.idleness is None or entry[5] is None:
            return clock
        return max(clock, self.key_clock(entry) + WATERMARK_SHIFT_MS + 1)

    def idle_after(
        self, entry: Entry | None, table: pa.Table | None, watermark: int
    ) -> KeyIdleness | None:
        """The key's idle clock after a call that processed ``table`` (``None``: a timer
        call) at the key's watermark ``watermark``; ``None`` without an idle timeout."""
        if self.idleness is None:
            return None
        before = None if entry is None else entry[5]
        newest, last = (None, None) if before is None else before[:2]
        if table is not None and table.num_rows:
            seen = pc.max(table.column(_TS)).as_py()
            if seen is not None:
                newest = seen if newest is None else max(newest, seen)
            last = self.clocks.now
        if last is None:
            return None
        return KeyIdleness(newest, last, watermark)

    def prune(self, entries: dict[Any, Entry]) -> None:
        """Forget the keys that only kept a clock the stream's watermark has caught up with
        (nothing without an idle timeout)."""
        if self.idleness is None:
            return
        stream = self.clocks.stream_watermark
        caught_up = [
            skey
            for skey, e in entries.items()
            if not e[2] and e[5] is not None and e[5][2] <= stream
        ]
        for skey in caught_up:
            del entries[skey]
