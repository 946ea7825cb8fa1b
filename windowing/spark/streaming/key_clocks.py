"""The keys' own clocks of the streaming processor with an idle timeout
(:mod:`windowing.idleness`): a key's watermark, when its entry is due, what it stores."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from windowing.idleness import KeyIdleness
from windowing.operator import WindowOperator
from windowing.spark.columns.inputs import TS as _TS
from windowing.spark.streaming.checkpoint import Entry

__all__ = ["WATERMARK_SHIFT_MS", "KeyClocks"]

#: How far Spark's watermark column is ahead of the event time: the milliseconds from
#: 0001-01-01T00:00:00Z to the epoch, so that every timestamp Spark accepts has a positive
#: watermark (Spark keeps its watermark at 0 until event times pass the delay).
WATERMARK_SHIFT_MS = 62_135_596_800_000


class KeyClocks:
    """The idle-clock part of :class:`~windowing.spark.streaming.processor.WindowProcessor`, which
    provides the state below. ``stream_watermark``: Spark's watermark in the operator's
    terms (``MIN_TIMESTAMP`` on the wall clock)."""

    config: Any  # the processor's ProcessorConfig
    op: WindowOperator
    now: int
    stream_watermark: int

    def _key_clock(self, entry: Entry | None) -> int:
        """The key's watermark: the stream's, or with an idle timeout the key's own clock
        (:class:`~windowing.idleness.KeyIdleness`) when it is ahead."""
        idleness = self.config.idleness
        if idleness is None or entry is None or entry[5] is None:
            return self.stream_watermark
        return KeyIdleness(*entry[5]).clock(idleness, self.stream_watermark, self.now)

    def _key_due_clock(self, entry: Entry, clock: int) -> int:
        """The Spark clock the entry's due time is compared with: ``clock``, or the key's
        own clock in Spark's watermark terms when that is ahead (an idle timeout)."""
        if self.config.idleness is None or entry[5] is None:
            return clock
        return max(clock, self._key_clock(entry) + WATERMARK_SHIFT_MS + 1)

    def _idle_after(self, entry: Entry | None, table: pa.Table | None) -> KeyIdleness | None:
        """The key's idle clock after a call that processed ``table`` (``None``: a timer
        call) at the key's current watermark; ``None`` without an idle timeout."""
        if self.config.idleness is None:
            return None
        before = None if entry is None else entry[5]
        newest, last = (None, None) if before is None else before[:2]
        if table is not None and table.num_rows:
            seen = pc.max(table.column(_TS)).as_py()
            if seen is not None:
                newest = seen if newest is None else max(newest, seen)
            last = self.now
        if last is None:
            return None
        return KeyIdleness(newest, last, self.op.watermark)

    def _prune_clocks(self, entries: dict[Any, Entry]) -> None:
        """Forget the keys that only kept a clock the stream's watermark has caught up with."""
        caught_up = [
            skey
            for skey, e in entries.items()
            if not e[2] and e[5] is not None and e[5][2] <= self.stream_watermark
        ]
        for skey in caught_up:
            del entries[skey]
