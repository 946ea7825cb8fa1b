"""What a window operator did, step by step: the trace a
:class:`~windowing.testing.WindowOperatorHarness` keeps when built with ``trace=True``, and
that :func:`~windowing.plotting.plot_windows` draws.

Each call on the harness (an element, a watermark, a processing-time advance) is one
:class:`TraceStep`: its input, both clocks before and after it, the results it emitted,
whether the element was late, and the windows each key holds afterwards. :meth:`Trace.firings`
numbers each window's firings and tells early, on-time and late ones apart
(:func:`pane_timing`). A trace keeps every step and every key's windows after each step: it
is meant for small inputs (tests, pictures), and costs nothing when it is off.

Examples
--------
>>> from windowing.assigners import TumblingEventTimeWindows
>>> from windowing.testing import WindowOperatorHarness
>>> h = WindowOperatorHarness(
...     TumblingEventTimeWindows(10), lambda a, b: a + b, allowed_lateness=5, trace=True
... )
>>> h.process_element(1, timestamp=3, key="k")
>>> h.process_watermark(12)  # the window [0, 10) fires on time
>>> h.process_element(2, timestamp=4, key="k")  # late, within the allowed lateness
>>> [(f.step, f.result.value, f.pane_index, f.timing) for f in h.trace.firings()]
[(1, 1, 0, 'ON_TIME'), (2, 3, 1, 'LATE')]
>>> [s.kind.value for s in h.trace.steps]
['element', 'watermark', 'element']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from windowing.records import WindowResult

__all__ = ["TIMINGS", "Firing", "StepKind", "Trace", "TraceStep", "pane_timing"]

#: The firing timings, as Beam's ``PaneInfo.Timing`` members are named.
TIMINGS = ("EARLY", "ON_TIME", "LATE")

_ANY: Any = object()


class StepKind(Enum):
    """What a :class:`TraceStep` fed the operator."""

    ELEMENT = "element"
    WATERMARK = "watermark"
    PROCESSING_TIME = "processing_time"


def pane_timing(clock_before: int, clock_after: int, max_timestamp: int, final: bool) -> str:
    """The timing of one firing of a window, by Beam's ``PaneInfo`` rule.

    ``clock_before`` / ``clock_after`` are the window's clock (the watermark for event-time
    windows, the processing time otherwise) before and after the step that fired it,
    ``max_timestamp`` the window's, and ``final`` whether the window already emitted a pane
    that was not early. ``"LATE"`` when the clock had already reached the window's max
    timestamp before the step, or after a final pane; ``"EARLY"`` while the clock is still
    below it; else ``"ON_TIME"`` (the step that moved the clock past it).

    Examples
    --------
    >>> pane_timing(5, 5, 9, final=False)  # a count trigger, watermark below the window
    'EARLY'
    >>> pane_timing(5, 12, 9, final=False)  # the watermark passed the window
    'ON_TIME'
    >>> pane_timing(12, 12, 9, final=True)  # a late element within allowed lateness
    'LATE'
    """
    if clock_before >= max_timestamp or final:
        return "LATE"
    if clock_after < max_timestamp:
        return "EARLY"
    return "ON_TIME"


@dataclass(frozen=True)
class TraceStep:
    """One call on the harness and what came out of it.

    ``key``, ``value`` and ``timestamp`` are the element's (``None`` for a clock step);
    ``late``: the element was added to no window because it was late (to the late side
    output, or dropped and counted); ``windows``: every key's windows after the step (those
    :meth:`~windowing.operator.WindowOperator.iter_windows` lists), keys without any left out.
    """

    kind: StepKind
    key: Any
    value: Any
    timestamp: int | None
    watermark_before: int
    watermark: int
    processing_time_before: int
    processing_time: int
    results: tuple[WindowResult, ...]
    late: bool
    windows: Mapping[Any, tuple[Any, ...]]


@dataclass(frozen=True)
class Firing:
    """One result of a trace: the step that emitted it, the window's pane number (0, 1, ...
    per key and window) and its timing (``"EARLY"``, ``"ON_TIME"`` or ``"LATE"``)."""

    step: int
    result: WindowResult
    pane_index: int
    timing: str


@dataclass
class Trace:
    """The steps a harness ran (``WindowOperatorHarness(..., trace=True).trace``).

    ``event_time``: whether the operator's assigner is event-time, which picks the clock that
    :meth:`firings` compares with a window's max timestamp.
    """

    event_time: bool = True
    steps: list[TraceStep] = field(default_factory=list)

    def keys(self) -> list[Any]:
        """The keys of the elements and results, in order of first appearance."""
        seen: dict[Any, None] = {}
        for step in self.steps:
            if step.kind is StepKind.ELEMENT:
                seen.setdefault(step.key, None)
            for result in step.results:
                seen.setdefault(result.key, None)
        return list(seen)

    def firings(self, key: Any = _ANY) -> list[Firing]:
        """The results of every step (of ``key``, or all keys), each with its pane index and
        timing. A result that carries its own pane info (a ``pane`` with ``index`` and
        ``timing``) keeps it; otherwise :func:`pane_timing` classifies it from the clocks
        of the step that emitted it."""
        out: list[Firing] = []
        panes: dict[tuple[Any, Any], tuple[int, bool]] = {}  # (key, window): (count, final)
        for index, step in enumerate(self.steps):
            if self.event_time:
                before, after = step.watermark_before, step.watermark
            else:
                before, after = step.processing_time_before, step.processing_time
            for result in step.results:
                count, final = panes.get((result.key, result.window), (0, False))
                pane = getattr(result, "pane", None)
                if pane is not None:
                    pane_index, timing = int(pane.index), _timing_name(pane.timing)
                else:
                    max_ts = result.window.max_timestamp()
                    pane_index, timing = count, pane_timing(before, after, max_ts, final)
                panes[(result.key, result.window)] = (count + 1, final or timing != "EARLY")
                if key is _ANY or result.key == key:
                    out.append(Firing(index, result, pane_index, timing))
        return out


def _timing_name(timing: Any) -> str:
    """A timing enum member or its name, as the name."""
    name = getattr(timing, "name", timing)
    if name not in TIMINGS:
        msg = f"a result's pane timing must be one of {TIMINGS}, got {timing!r}"
        raise ValueError(msg)
    return str(name)
