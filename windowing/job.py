"""The compiled job description a :class:`~windowing.stream.WindowedStream` hands to the runtime:
where the rows come from and how their time is read (:class:`StreamSource`, the watermark
strategies), how they are windowed (:class:`WindowConfig`), and the keys (:class:`Job`).

The builder (``windowing.stream``) creates these; the Spark runtime (``windowing.spark``)
reads them, and never imports the builder.

Examples
--------
>>> BoundedOutOfOrderness("5 seconds").current_watermark(60_000)
54999
>>> MonotonousTimestamps().current_watermark(60_000)
59999
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from windowing.assigners.base import WindowAssigner
from windowing.errors import ErrorPolicy
from windowing.evictors.base import Evictor
from windowing.records import OutputTag
from windowing.time import MIN_TIMESTAMP, Duration, TimeUnit, to_millis
from windowing.triggers.base import Trigger

if TYPE_CHECKING:
    from pyspark.sql import DataFrame  # noqa: TID251 - type-only, never imported at runtime

__all__ = [
    "MAX_KEY_GROUPS",
    "BoundedOutOfOrderness",
    "InputWatermarks",
    "Job",
    "MonotonousTimestamps",
    "StreamSource",
    "WatermarkStrategy",
    "WindowConfig",
]


# ---------------------------------------------------------------------------- watermarks
@dataclass(frozen=True, init=False)
class BoundedOutOfOrderness:
    """Watermarks that trail the largest event time seen by ``delay``.

    Formula: ``watermark = max_event_time_seen - delay - 1`` (Flink's
    ``BoundedOutOfOrdernessWatermarks``), so an element is late exactly when its event time is
    ``< max_event_time_seen - delay`` (Spark ``withWatermark(col, delay)`` drops the same
    rows).

    Known elsewhere as: Flink ``WatermarkStrategy.forBoundedOutOfOrderness``; Spark
    ``DataFrame.withWatermark``; Kafka Streams grace period (per window, not per stream).

    Parameters
    ----------
    delay
        How far events may be out of order (int ms, ``timedelta`` or e.g. ``"5 seconds"``),
        ``>= 0``.

    Examples
    --------
    >>> BoundedOutOfOrderness("2 seconds").delay
    2000
    """

    delay: int

    def __init__(self, delay: Duration) -> None:
        ms = to_millis(delay, "BoundedOutOfOrderness delay")
        if ms < 0:
            msg = f"BoundedOutOfOrderness: delay must be >= 0, got {delay!r}"
            raise ValueError(msg)
        object.__setattr__(self, "delay", ms)

    def current_watermark(self, max_event_time: int) -> int:
        """The watermark after seeing ``max_event_time`` (saturating at ``MIN_TIMESTAMP``)."""
        return max(MIN_TIMESTAMP, max_event_time - self.delay - 1)


@dataclass(frozen=True)
class MonotonousTimestamps:
    """Watermarks for event times that never decrease: ``BoundedOutOfOrderness(0)``.

    Formula: ``watermark = max_event_time_seen - 1``.

    Known elsewhere as: Flink ``WatermarkStrategy.forMonotonousTimestamps``.
    """

    @property
    def delay(self) -> int:
        """Always 0."""
        return 0

    def current_watermark(self, max_event_time: int) -> int:
        """The watermark after seeing ``max_event_time``."""
        return max(MIN_TIMESTAMP, max_event_time - 1)


WatermarkStrategy = BoundedOutOfOrderness | MonotonousTimestamps


@dataclass(frozen=True)
class InputWatermarks:
    """The watermark of several inputs read as one stream (the two sides of a join): the
    smallest of the inputs' own watermarks, as Flink's operators with two inputs take it.

    Each row names its input in ``column``; each input has its own strategy. After input
    ``i`` has seen the largest event time ``max_i``, the watermark is ``min_i(max_i -
    delay_i) - 1``, and ``MIN_TIMESTAMP`` while some input has seen no row. The runtime
    computes ``min_i(max_i - delay_i)`` itself, so that :meth:`current_watermark` of it is
    ``value - 1`` and :attr:`delay` is 0 (a streaming query tracks each input's watermark
    on that input).

    Examples
    --------
    >>> w = InputWatermarks("side", (("left", MonotonousTimestamps()),
    ...                              ("right", BoundedOutOfOrderness(5))))
    >>> w.current_watermark(min(100 - 0, 120 - 5))
    99
    """

    column: str
    inputs: tuple[tuple[str, WatermarkStrategy], ...]
    #: The inputs that are an earlier window's results in the same streaming query: their
    #: watermark is that window's (it defines none of its own), and their rows of a
    #: micro-batch come before the watermark moves (what that window emitted as it moved).
    following: tuple[str, ...] = ()

    @property
    def delay(self) -> int:
        """0: the inputs' delays are applied per input (see the class docstring)."""
        return 0

    def current_watermark(self, max_event_time: int) -> int:
        """The watermark for the smallest of ``max_i - delay_i``."""
        return max(MIN_TIMESTAMP, max_event_time - 1)


# ---------------------------------------------------------------------------- builder values
@dataclass(frozen=True, eq=False)
class StreamSource:
    """Where the stream comes from and how its time is read (see
    :meth:`~windowing.stream.DataStream.from_dataframe`)."""

    df: DataFrame
    event_time: str
    watermark: WatermarkStrategy | InputWatermarks
    #: One column name, or several (a tuple) compared in order, lexicographically.
    arrival_order: str | tuple[str, ...] | None = None
    processing_time: str | None = None
    #: The unit of an integral ``event_time`` column; ``None``: milliseconds, not declared
    #: (the values are checked, see ``windowing.errors.EventTimeUnitWarning``).
    event_time_unit: TimeUnit | None = None
    #: The unit of an integral ``processing_time`` column (milliseconds by default).
    processing_time_unit: TimeUnit = TimeUnit.MILLISECONDS

    @property
    def event_unit(self) -> TimeUnit:
        """The unit of an integral ``event_time`` column (milliseconds when not declared)."""
        return self.event_time_unit or TimeUnit.MILLISECONDS

    @property
    def arrival_columns(self) -> tuple[str, ...]:
        """The arrival-order columns, most significant first (empty without one)."""
        if self.arrival_order is None:
            return ()
        if isinstance(self.arrival_order, str):
            return (self.arrival_order,)
        return tuple(self.arrival_order)

    def arrival_text(self) -> str:
        """The arrival-order column(s) in words, for plans and messages: ``'offset'``, or
        ``['timestamp', 'partition', 'offset']``."""
        columns = self.arrival_columns
        return repr(columns[0]) if len(columns) == 1 else repr(list(columns))


@dataclass(frozen=True)
class WindowConfig:
    """Everything about the windowing of a :class:`~windowing.stream.WindowedStream` except
    the function."""

    assigner: WindowAssigner[Any, Any]
    trigger: Trigger[Any, Any] | None = None
    evictor: Evictor[Any, Any] | None = None
    allowed_lateness: int = 0
    late_output_tag: OutputTag | None = None
    slicing: bool | None = None
    max_parallelism: int = 128
    on_error: ErrorPolicy = ErrorPolicy.FAIL
    show_values: bool = False  # error notes show row values (off: they may be sensitive)
    window_struct: str | None = None  # results' window as Spark's struct column of this name
    idle_timeout: int | None = None  # ms without rows after which a key's clock follows time
    pane_info: bool = False  # results say which firing of their window they are


#: The largest number of key groups (Flink's upper bound for ``maxParallelism``).
MAX_KEY_GROUPS = 32768


@dataclass(frozen=True, eq=False)
class Job:
    """A windowed job without its function: the source, the key columns (``None`` for a
    non-keyed stream) and the windowing."""

    source: StreamSource
    keys: tuple[str, ...] | None
    config: WindowConfig
