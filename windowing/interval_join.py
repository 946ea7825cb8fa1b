"""Flink's interval join operator (``IntervalJoinOperator``), in memory.

A left row at ``t`` joins every right row of the same key at ``t + lower .. t + upper``
(bounds inclusive unless made exclusive). Each side's rows wait in a buffer, by event time:
a row arriving on one side is added to its buffer and joined at once with the rows of the
other side's buffer within the bounds, so each pair is emitted once, when its second row
arrives, with the larger of the two event times. A row is *late* when its event time is
below the watermark: it is not buffered, joins nothing, and goes to its side's late output
(dropped without one, and counted). Rows leave the buffers on the watermark, once no row of
the other side that is not late could still join them: a left row at ``t`` at the watermark
``t + upper`` (``t`` when ``upper <= 0``), a right row at ``t`` at ``t - lower`` (``t`` when
``lower >= 0``), as Flink's cleanup timers remove them.

:meth:`IntervalJoinOperator.snapshot` gives the watermark and the buffers as plain data, and
:meth:`~IntervalJoinOperator.restore` puts them into a new operator, which continues as the
first would have (a streaming runtime keeps each key's buffers in its checkpoint this way).

Examples
--------
>>> op = IntervalJoinOperator(-2, 1, lambda left, right: (left, right))
>>> op.process_left("a", 10, key="k")
>>> op.process_right("x", 9, key="k")   # 9 is in [10 - 2, 10 + 1]
>>> op.process_right("y", 12, key="k")  # 12 is not
>>> [(r.value, r.timestamp) for r in op.extract_output()]
[(('a', 'x'), 10)]
>>> op.process_watermark(11)            # the left row at 10 leaves its buffer at 11
>>> op.process_right("z", 11, key="k")  # not late, but the row at 10 has gone
>>> op.extract_output()
[]
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from windowing.functions.joins import ProcessJoinFunction, as_process_join
from windowing.records import LateElement, OutputTag
from windowing.time import MIN_TIMESTAMP

__all__ = ["Buckets", "IntervalJoinMetrics", "IntervalJoinOperator", "JoinResult", "Snapshot"]

#: One side's buffer of one key as plain data: ``(event time, rows in arrival order)``, by
#: event time.
Buckets = list[tuple[int, list[Any]]]
#: An operator's state as plain data (:meth:`IntervalJoinOperator.snapshot`): its watermark,
#: and each key's buffers ``(key, left, right)``.
Snapshot = tuple[int, list[tuple[Any, Buckets, Buckets]]]


class JoinResult(NamedTuple):
    """One output of a joined pair: its key, the function's value, and its event time (the
    larger of the two rows' event times)."""

    key: Any
    value: Any
    timestamp: int


@dataclass
class IntervalJoinMetrics:
    """What an :class:`IntervalJoinOperator` counted."""

    num_elements: int = 0
    num_pairs: int = 0
    num_results: int = 0
    num_late_left: int = 0
    num_late_right: int = 0


class _Context:
    """The context a :class:`~windowing.functions.joins.ProcessJoinFunction` sees."""

    __slots__ = ("_left", "_result", "_right")

    def __init__(self) -> None:
        self._left = self._right = self._result = MIN_TIMESTAMP

    def left_timestamp(self) -> int:
        return self._left

    def right_timestamp(self) -> int:
        return self._right

    def timestamp(self) -> int:
        return self._result


@dataclass
class _Buffers:
    """One key's rows of each side, by event time, in arrival order within one."""

    left: dict[int, list[Any]] = field(default_factory=dict)
    right: dict[int, list[Any]] = field(default_factory=dict)


_LEFT, _RIGHT = 0, 1


class IntervalJoinOperator:
    """Flink's ``IntervalJoinOperator``: pairs ``(left, right)`` of the same key with
    ``left.ts + lower <= right.ts <= left.ts + upper`` (see the module docstring).

    Known elsewhere as: Flink ``IntervalJoinOperator``; Spark's stream-stream inner join
    with a time range condition.

    Parameters
    ----------
    lower, upper
        The bounds in milliseconds (``lower <= upper``; negative values allowed).
    function
        A :class:`~windowing.functions.joins.ProcessJoinFunction`, or a callable
        ``(left, right) -> value`` (one output per pair).
    lower_inclusive, upper_inclusive
        Whether a right row exactly at a bound joins (Flink: both by default).
    left_late_tag, right_late_tag
        The late outputs of each side (:meth:`extract_side_output`); late rows of a side
        without one are dropped and counted.
    """

    def __init__(
        self,
        lower: int,
        upper: int,
        function: Any,
        *,
        lower_inclusive: bool = True,
        upper_inclusive: bool = True,
        left_late_tag: OutputTag | None = None,
        right_late_tag: OutputTag | None = None,
    ) -> None:
        for name, value in (("lower", lower), ("upper", upper)):
            if not isinstance(value, int) or isinstance(value, bool):
                msg = f"{name} must be int milliseconds, got {type(value).__name__} {value!r}"
                raise ValueError(msg)
        if lower > upper:
            msg = f"the lower bound must be <= the upper bound, got lower={lower}, upper={upper}"
            raise ValueError(msg)
        self.function: ProcessJoinFunction[Any, Any, Any] = as_process_join(function)
        # as Flink: the bounds moved by one for exclusive ones, then compared inclusively
        self.lower = lower if lower_inclusive else lower + 1
        self.upper = upper if upper_inclusive else upper - 1
        self.left_late_tag = left_late_tag
        self.right_late_tag = right_late_tag
        self.metrics = IntervalJoinMetrics()
        self._watermark = MIN_TIMESTAMP
        self._buffers: dict[Any, _Buffers] = {}
        self._timers: list[tuple[int, int, int, Any]] = []  # (time, seq, side, key)
        self._timer_set: set[tuple[int, int, Any]] = set()
        self._seq = 0
        self._context = _Context()
        self._output: list[JoinResult] = []
        self._side: dict[OutputTag, list[LateElement]] = {}

    @property
    def watermark(self) -> int:
        """The current event-time watermark."""
        return self._watermark

    # -- input ---------------------------------------------------------------------------
    def process_left(self, value: Any, timestamp: int, key: Any = None) -> None:
        """A row of the left input (Flink ``processElement1``)."""
        self._process(value, timestamp, key, _LEFT)

    def process_right(self, value: Any, timestamp: int, key: Any = None) -> None:
        """A row of the right input (Flink ``processElement2``)."""
        self._process(value, timestamp, key, _RIGHT)

    def process_watermark(self, watermark: int) -> None:
        """Advance the watermark (never backwards) and remove the rows whose cleanup time it
        reached."""
        if watermark <= self._watermark:
            return
        self._watermark = watermark
        timers = self._timers
        while timers and timers[0][0] <= watermark:
            time, _, side, key = heapq.heappop(timers)
            self._timer_set.discard((time, side, key))
            self._on_timer(time, side, key)

    def _process(self, value: Any, timestamp: int, key: Any, side: int) -> None:
        if not isinstance(timestamp, int) or isinstance(timestamp, bool):
            msg = (
                f"an interval join's rows need int event times (epoch ms), got "
                f"{type(timestamp).__name__} {timestamp!r}"
            )
            raise ValueError(msg)
        self.metrics.num_elements += 1
        if timestamp < self._watermark:
            self._late(value, timestamp, key, side)
            return
        buffers = self._buffers.get(key)
        if buffers is None:
            buffers = self._buffers[key] = _Buffers()
        ours, other = (
            (buffers.left, buffers.right) if side == _LEFT else (buffers.right, buffers.left)
        )
        ours.setdefault(timestamp, []).append(value)
        # the other side's times that join: [t + lower, t + upper] for a left row,
        # [t - upper, t - lower] for a right row
        low, high = (
            (timestamp + self.lower, timestamp + self.upper)
            if side == _LEFT
            else (timestamp - self.upper, timestamp - self.lower)
        )
        for t in sorted(other):
            if t < low or t > high:
                continue
            for entry in other[t]:
                if side == _LEFT:
                    self._collect(key, value, entry, timestamp, t)
                else:
                    self._collect(key, entry, value, t, timestamp)
        self._register(self._cleanup_time(timestamp, side), side, key)

    def _cleanup_time(self, timestamp: int, side: int) -> int:
        """When a row of ``side`` at ``timestamp`` leaves its buffer (Flink's cleanup timer):
        once no row of the other side that is not late can join it."""
        relative_upper = self.upper if side == _LEFT else -self.lower
        return timestamp + relative_upper if relative_upper > 0 else timestamp

    def _register(self, time: int, side: int, key: Any) -> None:
        timer = (time, side, key)
        if timer not in self._timer_set:
            self._timer_set.add(timer)
            self._seq += 1
            heapq.heappush(self._timers, (time, self._seq, side, key))

    def _on_timer(self, time: int, side: int, key: Any) -> None:
        buffers = self._buffers.get(key)
        if buffers is None:
            return
        if side == _LEFT:
            buffers.left.pop(time - self.upper if self.upper > 0 else time, None)
        else:
            buffers.right.pop(time + self.lower if self.lower <= 0 else time, None)
        if not buffers.left and not buffers.right:
            del self._buffers[key]

    def _collect(self, key: Any, left: Any, right: Any, left_ts: int, right_ts: int) -> None:
        result_ts = max(left_ts, right_ts)
        context = self._context
        context._left, context._right, context._result = left_ts, right_ts, result_ts
        self.metrics.num_pairs += 1
        outputs: Iterable[Any] = self.function.process_element(left, right, context)
        for value in outputs:
            self._output.append(JoinResult(key, value, result_ts))
            self.metrics.num_results += 1

    def _late(self, value: Any, timestamp: int, key: Any, side: int) -> None:
        if side == _LEFT:
            self.metrics.num_late_left += 1
            tag = self.left_late_tag
        else:
            self.metrics.num_late_right += 1
            tag = self.right_late_tag
        if tag is not None:
            late = LateElement(key, value, timestamp, self._watermark)
            self._side.setdefault(tag, []).append(late)

    # -- output --------------------------------------------------------------------------
    def extract_output(self) -> list[JoinResult]:
        """The results emitted since the last call (and forget them)."""
        out, self._output = self._output, []
        return out

    def extract_side_output(self, tag: OutputTag) -> list[LateElement]:
        """The late rows sent to ``tag`` since the last call (and forget them)."""
        return self._side.pop(tag, [])

    def num_buffered(self) -> int:
        """The rows in the buffers, over all keys and both sides."""
        return sum(
            len(rows)
            for b in self._buffers.values()
            for side in (b.left, b.right)
            for rows in side.values()
        )

    def num_timers(self) -> int:
        """The cleanup timers registered and not fired yet."""
        return len(self._timers)

    def next_timer(self) -> int | None:
        """The earliest cleanup time of the buffered rows (``None``: nothing buffered)."""
        return self._timers[0][0] if self._timers else None

    # -- state ---------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """The watermark and every key's buffered rows as plain data (tuples and lists of
        the keys, event times and rows, in arrival order): what :meth:`restore` takes. The
        cleanup timers are not in it: each buffered event time has exactly one, at its
        cleanup time.

        Examples
        --------
        >>> op = IntervalJoinOperator(0, 5, lambda left, right: (left, right))
        >>> op.process_left("a", 10, key="k")
        >>> op.process_watermark(9)
        >>> op.snapshot()
        (9, [('k', [(10, ['a'])], [])])
        """
        keys = [
            (
                key,
                [(t, list(rows)) for t, rows in sorted(b.left.items())],
                [(t, list(rows)) for t, rows in sorted(b.right.items())],
            )
            for key, b in self._buffers.items()
        ]
        return self._watermark, keys

    def restore(self, snapshot: Snapshot) -> None:
        """Continue from ``snapshot`` (:meth:`snapshot` of an operator with the same bounds):
        its watermark, its buffers and their cleanup timers. A timer at the watermark (of a
        row that arrived at it) fires at the next advance, as it would have. Only on an
        operator that holds nothing yet (``ValueError`` otherwise).

        Examples
        --------
        >>> op = IntervalJoinOperator(0, 5, lambda left, right: (left, right))
        >>> op.restore((9, [("k", [(10, ["a"])], [])]))
        >>> op.process_right("x", 12, key="k")
        >>> [r.value for r in op.extract_output()]
        [('a', 'x')]
        """
        if self._buffers or self._timers or self._watermark != MIN_TIMESTAMP:
            msg = "restore: the operator already holds buffers or a watermark"
            raise ValueError(msg)
        watermark, keys = snapshot
        self._watermark = watermark
        for key, left, right in keys:
            buffers = self._buffers[key] = _Buffers(
                {t: list(rows) for t, rows in left}, {t: list(rows) for t, rows in right}
            )
            for side, buckets in ((_LEFT, buffers.left), (_RIGHT, buffers.right)):
                for t in buckets:
                    self._register(self._cleanup_time(t, side), side, key)
