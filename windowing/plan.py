"""The planner: which strategy runs a job, decided once, and why.

Every strategy gives exactly the generic operator's results (Flink's ``WindowOperator`` /
``EvictingWindowOperator``); the faster ones apply only where the job's shape lets them skip
work that cannot change an output. :func:`plan_operator` looks at the assigner, trigger,
evictor, window function, allowed lateness and the ``slicing`` choice, and returns a
:class:`Plan` naming the strategy with the reason. ``WindowOperator.plan`` holds it, the
harness and ``WindowedStream.explain()`` print it, and tests assert it.

Examples
--------
>>> from windowing.assigners import HoppingEventTimeWindows
>>> from windowing.functions import as_spec
>>> p = plan_operator(HoppingEventTimeWindows(10, 5), None, None, as_spec(max), 0, None)
>>> p.strategy
<Strategy.ALIGNED: 'aligned'>
>>> print(p)  # doctest: +NORMALIZE_WHITESPACE
strategy: aligned
  reason: hopping windows, default EventTimeTrigger, no evictor: bulk element loop with the
    trigger inlined
  element order: arrival order, as Flink
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from windowing.assigners.base import MergingWindowAssigner, WindowAssigner
from windowing.assigners.hopping import HoppingEventTimeWindows
from windowing.assigners.session import EventTimeSessionWindows
from windowing.assigners.sliding_distinct import SlidingDistinctAssigner
from windowing.assigners.tumbling import TumblingEventTimeWindows, WindowStagger
from windowing.evictors.base import Evictor
from windowing.functions.base import ProcessWindowFunction
from windowing.functions.spec import (
    Aggregate,
    Apply,
    Fold,
    Process,
    Reduce,
    WindowFunctionSpec,
)
from windowing.triggers.base import Trigger
from windowing.triggers.emit import OnWindowCloseTrigger
from windowing.triggers.event_time import EventTimeTrigger

__all__ = [
    "Plan",
    "StateForm",
    "Strategy",
    "aligned_shape",
    "plan_operator",
    "process_function",
    "state_form",
]


class StateForm(enum.Enum):
    """How a window's state holds what it took in."""

    ELEMENTS = "elements"
    """The elements themselves, as a list: a process or apply function, or any function
    with an evictor (Flink's ``ListState`` of the window contents)."""
    ACCUMULATOR = "accumulator"
    """One value: the reduced value, the aggregate's accumulator or the fold (Flink's
    ``ReducingState`` / ``AggregatingState``)."""


def state_form(spec: WindowFunctionSpec, evictor: Evictor[Any, Any] | None) -> StateForm:
    """How a job's windows hold their contents.

    Examples
    --------
    >>> from windowing.functions import as_spec
    >>> state_form(as_spec(max), None)
    <StateForm.ACCUMULATOR: 'accumulator'>
    """
    if evictor is not None or isinstance(spec, Process | Apply):
        return StateForm.ELEMENTS
    return StateForm.ACCUMULATOR


class Strategy(enum.Enum):
    """How the operator runs a job (``docs/design.md``)."""

    GENERIC = "generic"
    """Flink's operator, element by element: any assigner, trigger, evictor and function.
    The reference every other strategy is tested against."""
    ALIGNED = "aligned"
    """Tumbling or hopping event-time windows with the default trigger and no evictor: a bulk
    element loop with ``EventTimeTrigger`` inlined (per-window state, as Flink)."""
    SESSIONS = "sessions"
    """Event-time session windows with the default trigger and no evictor: the merging-window
    set and the trigger inlined in a bulk element loop."""
    PANES = "panes"
    """Hopping windows of an order-insensitive reduce or aggregate: one partial per pane of
    ``gcd(size, slide)``, combined when a window fires."""
    KAFKA_SLIDING = "kafka-sliding"
    """KIP-450 sliding windows with Kafka Streams' own algorithm and window store."""
    TIMELINE = "timeline"
    """KIP-450 sliding windows from the key's record timeline, with a window's contents kept
    per window (any trigger or evictor; opt-in with ``slicing=True``)."""
    TIMELINE_LAZY = "timeline-lazy"
    """KIP-450 sliding windows from the record timeline, a window's contents computed when it
    fires (built-in end-of-window triggers; opt-in with ``slicing=True``)."""
    TIMELINE_DERIVED = "timeline-derived"
    """As ``TIMELINE_LAZY`` without a process function: the windows to fire are derived from
    the timeline, with one timer per key (opt-in with ``slicing=True``)."""


@dataclass(frozen=True)
class Plan:
    """The strategy chosen for a job and why.

    Attributes
    ----------
    strategy
        The strategy.
    reason
        Why, in words (the job's shape that allows it).
    inline_event_timers
        Event-time timers fire with ``EventTimeTrigger`` inlined (default trigger).
    direct_result
        Results are the incremental value itself (a reduce or aggregate without a window
        function or evictor): no window function call per firing.
    one_pass_at_end
        A key's bounded input with no watermark yet (batch without arrival order) may take
        one pass: contents by window, windows fired in order at the end (tumbling windows,
        and sessions whose input is in time order).
    time_order
        A window's elements are combined in time order rather than arrival order (panes,
        timelines: only with an order-insensitive function unless opted in).
    """

    strategy: Strategy
    reason: str
    inline_event_timers: bool = False
    direct_result: bool = False
    one_pass_at_end: bool = False
    time_order: bool = False

    def __str__(self) -> str:
        return self.describe()

    def describe(
        self, element_order: str = "arrival order, as Flink", *, watermarks: bool = False
    ) -> str:
        """The plan in words; ``element_order``: the order in which the runtime feeds a key's
        elements (a window combines them in it unless :attr:`time_order`); ``watermarks``:
        the runtime moves the watermark between a key's elements (then no one pass)."""
        lines = [f"strategy: {self.strategy.value}", f"  reason: {self.reason}"]
        if self.one_pass_at_end and not watermarks:
            lines.append(
                "  a key's whole input before its first watermark (batch): one pass, windows "
                "fired at the end of input"
            )
        order = "time order (panes / timeline)" if self.time_order else element_order
        lines.append(f"  element order: {order}")
        return "\n".join(lines)


def plan_operator(
    assigner: WindowAssigner[Any, Any],
    trigger: Trigger[Any, Any] | None,
    evictor: Evictor[Any, Any] | None,
    spec: WindowFunctionSpec,
    allowed_lateness: int,
    slicing: bool | None,
    *,
    guarded: bool = False,
    pane_info: bool = False,
) -> Plan:
    """Plan a window operator; ``trigger=None`` is the assigner's default trigger and
    ``slicing=None`` shares partials only where results cannot change (see
    ``WindowOperator``). ``guarded``: errors of user code are dead-lettered
    (:class:`~windowing.errors.ErrorPolicy`), so the operator runs element by element with
    every firing through the evaluator, which catches them. ``pane_info``: every firing is
    counted per window, so hopping windows keep per-window state (no panes) and KIP-450
    timelines keep one timer per window."""
    if trigger is None:
        trigger = assigner.get_default_trigger()
    sliding = isinstance(assigner, SlidingDistinctAssigner)
    if guarded:
        return _plan_guarded(assigner, trigger, evictor, sliding=sliding)
    if slicing is None:
        slicing = isinstance(spec, Reduce | Aggregate) and spec.order_insensitive and not sliding
    default_trigger = type(trigger) is EventTimeTrigger
    incremental = isinstance(spec, Reduce | Fold | Aggregate)
    direct = evictor is None and incremental and spec.window_function is None  # type: ignore[union-attr]
    inline = default_trigger and assigner.is_event_time() and not sliding
    shape = _shape(assigner, trigger, evictor)
    if sliding:
        return _plan_sliding(
            trigger, evictor, spec, slicing=slicing, direct=direct, pane_info=pane_info
        )
    aligned = aligned_shape(assigner, trigger, evictor)
    if (
        slicing
        and not pane_info
        and aligned is not None
        and aligned[1] < aligned[0]
        and direct
        and isinstance(spec, Reduce | Aggregate)
    ):
        why = "an order-insensitive reduce/aggregate" if spec.order_insensitive else "slicing=True"
        return Plan(
            Strategy.PANES,
            f"{shape}, {why}: one partial per pane of gcd(size, slide)",
            inline_event_timers=inline,
            direct_result=True,
            time_order=True,
        )
    one_pass = direct and isinstance(spec, Reduce | Aggregate)
    if aligned is not None:
        return Plan(
            Strategy.ALIGNED,
            f"{shape}: bulk element loop with the trigger inlined",
            inline_event_timers=inline,
            direct_result=direct,
            one_pass_at_end=one_pass and aligned[0] == aligned[1],
        )
    if default_trigger and evictor is None and type(assigner) is EventTimeSessionWindows:
        return Plan(
            Strategy.SESSIONS,
            f"{shape}: merging-window set and trigger inlined in a bulk element loop",
            inline_event_timers=inline,
            direct_result=direct,
            one_pass_at_end=one_pass,
        )
    return Plan(
        Strategy.GENERIC,
        f"{shape}: Flink's operator, element by element",
        inline_event_timers=inline,
        direct_result=direct,
    )


def _plan_guarded(
    assigner: WindowAssigner[Any, Any],
    trigger: Trigger[Any, Any],
    evictor: Evictor[Any, Any] | None,
    *,
    sliding: bool,
) -> Plan:
    why = "on_error='dead_letter': every element and firing guarded"
    if sliding:
        return Plan(
            Strategy.KAFKA_SLIDING,
            f"KIP-450 sliding windows, {why}: Kafka Streams' algorithm and window store",
        )
    inline = type(trigger) is EventTimeTrigger and assigner.is_event_time()
    return Plan(
        Strategy.GENERIC,
        f"{_shape(assigner, trigger, evictor)}, {why}: Flink's operator, element by element",
        inline_event_timers=inline,
    )


def _plan_sliding(
    trigger: Trigger[Any, Any],
    evictor: Evictor[Any, Any] | None,
    spec: WindowFunctionSpec,
    *,
    slicing: bool,
    direct: bool,
    pane_info: bool = False,
) -> Plan:
    if not slicing:
        return Plan(
            Strategy.KAFKA_SLIDING,
            "KIP-450 sliding windows: Kafka Streams' algorithm and window store",
            direct_result=direct,
        )
    lazy = evictor is None and type(trigger) in (EventTimeTrigger, OnWindowCloseTrigger)
    if not lazy:
        return Plan(
            Strategy.TIMELINE,
            "KIP-450 sliding windows, slicing=True, a custom trigger or an evictor: windows "
            "from the record timeline, contents kept per window",
            direct_result=direct,
            time_order=True,
        )
    if process_function(spec) is None and not pane_info:
        return Plan(
            Strategy.TIMELINE_DERIVED,
            "KIP-450 sliding windows, slicing=True, built-in end-of-window trigger, no process "
            "function: windows derived from the record timeline, one timer per key",
            direct_result=direct,
            time_order=True,
        )
    return Plan(
        Strategy.TIMELINE_LAZY,
        "KIP-450 sliding windows, slicing=True, built-in end-of-window trigger: contents "
        "computed from the record timeline when a window fires",
        direct_result=direct,
        time_order=True,
    )


def aligned_shape(
    assigner: WindowAssigner[Any, Any],
    trigger: Trigger[Any, Any],
    evictor: Evictor[Any, Any] | None,
) -> tuple[int, int, int] | None:
    """``(size, slide, offset)`` of aligned event-time windows with the default trigger and no
    evictor (the shapes with an inlined element loop), else ``None``."""
    if type(trigger) is not EventTimeTrigger or evictor is not None:
        return None
    if type(assigner) is TumblingEventTimeWindows and assigner.stagger is WindowStagger.ALIGNED:
        return (assigner.size, assigner.size, assigner.offset)
    if type(assigner) is HoppingEventTimeWindows:
        return (assigner.size, assigner.slide, assigner.offset)
    return None


def process_function(spec: WindowFunctionSpec) -> ProcessWindowFunction[Any, Any, Any, Any] | None:
    """The job's process function (a ``process()``, or the window function of an incremental
    one), whose ``clear`` must run when a window is cleaned up."""
    if isinstance(spec, Process):
        return spec.function
    if isinstance(spec, Reduce | Aggregate | Fold):
        wf = spec.window_function
        return wf if isinstance(wf, ProcessWindowFunction) else None
    return None


def _shape(
    assigner: WindowAssigner[Any, Any],
    trigger: Trigger[Any, Any],
    evictor: Evictor[Any, Any] | None,
) -> str:
    kinds = {
        TumblingEventTimeWindows: "tumbling windows",
        HoppingEventTimeWindows: "hopping windows",
        EventTimeSessionWindows: "session windows",
    }
    what = kinds.get(type(assigner))
    if what is None:
        what = "merging windows" if isinstance(assigner, MergingWindowAssigner) else "windows"
        what = f"{what} of {type(assigner).__name__}"
    if type(trigger) is EventTimeTrigger:
        how = "default EventTimeTrigger"
    else:
        how = f"trigger {type(trigger).__name__}"
    extra = "no evictor" if evictor is None else f"evictor {type(evictor).__name__}"
    return f"{what}, {how}, {extra}"
