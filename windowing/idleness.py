"""Idle keys: an event-time clock that keeps moving when a key's input goes quiet
(:meth:`~windowing.stream.WindowedStream.idle_timeout`).

A watermark only moves with data, so without new rows the last windows of a key never
close. With an idle timeout, once a key has received no rows for ``timeout`` ms of
processing time, its watermark becomes what a row at ``max event time seen + elapsed``
would give it (``elapsed``: the processing time since the key's last row), through the
stream's watermark strategy::

    idle watermark = current_watermark(max_event_time + elapsed)   when elapsed >= timeout
                   = max_event_time + elapsed - delay - 1          (BoundedOutOfOrderness)

The key's clock is the larger of that and the stream's watermark, and never goes back: a
window closed by idleness stays closed, and a row that arrives for it later is late, as after
any watermark. It is Flink's ``WatermarkStrategy.withIdleness`` idea made to close windows
(Bytewax's event clock, which advances with system time, is the same rule), kept per key so a
replay gives the same result however the keys are grouped.

The batch replay measures ``elapsed`` on the ``processing_time`` column; a streaming query on
the micro-batch clock. Both run this code.

Examples
--------
>>> from windowing.job import BoundedOutOfOrderness
>>> idle = Idleness(timeout=30_000, strategy=BoundedOutOfOrderness("5 seconds"))
>>> idle.watermark_at(max_event_time=60_000, last_arrival=1_000, now=11_000)  # 10 s: not idle
-9223372036854775808
>>> idle.watermark_at(max_event_time=60_000, last_arrival=1_000, now=41_000)  # 40 s quiet
94999
"""

from __future__ import annotations

from dataclasses import dataclass

from windowing.job import WatermarkStrategy
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

__all__ = ["Idleness", "KeyIdleness"]


@dataclass(frozen=True)
class Idleness:
    """The idle rule of a job: ``timeout`` ms without rows, then the watermark follows the
    processing time (see the module docstring)."""

    timeout: int
    strategy: WatermarkStrategy

    def watermark_at(self, max_event_time: int | None, last_arrival: int | None, now: int) -> int:
        """The watermark idleness gives a key at processing time ``now`` whose rows so far
        had ``max_event_time`` and whose last row arrived at ``last_arrival``
        (``MIN_TIMESTAMP`` while it is not idle, or when it never had a row with an event
        time)."""
        if max_event_time is None or last_arrival is None:
            return MIN_TIMESTAMP
        elapsed = now - last_arrival
        if elapsed < self.timeout:
            return MIN_TIMESTAMP
        return self.strategy.current_watermark(min(MAX_TIMESTAMP, max_event_time + elapsed))


@dataclass(frozen=True)
class KeyIdleness:
    """What the idle rule needs to know of a key between calls: the largest event time of
    its rows (``None``: none had one), when its last row arrived (processing time) and its
    clock (the watermark it has reached, which never goes back)."""

    max_event_time: int | None
    last_arrival: int
    watermark: int

    def clock(self, idleness: Idleness, watermark: int, now: int) -> int:
        """The key's watermark at processing time ``now`` when the stream's is
        ``watermark``."""
        idle = idleness.watermark_at(self.max_event_time, self.last_arrival, now)
        return max(self.watermark, watermark, idle)

    def as_tuple(self) -> tuple[int | None, int, int]:
        """Plain data for the streaming state."""
        return (self.max_event_time, self.last_arrival, self.watermark)
