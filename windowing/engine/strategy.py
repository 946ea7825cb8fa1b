"""The strategy interface, and the engine a strategy drives.

A :class:`WindowStrategy` runs one job's windows for the keys of one operator: it takes
elements (one, or in bulk), fires a key's timers up to a time, and reports what a key keeps.
The operator (:class:`~windowing.operator.WindowOperator`) picks one strategy from its plan
(:mod:`windowing.plan`), owns the clocks, outputs and key states, and offers the services every
strategy shares (:class:`Engine`): evaluation, late accounting, cleanup timers, scheduling.
A strategy touches no other strategy's fields, and keeps its per-key data in the key's
:class:`~windowing.engine.keystate.KeyState`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from windowing.assigners.base import WindowAssigner
from windowing.engine.context import Clock, ProcessContext, WindowContext
from windowing.engine.evaluation import WindowEvaluator
from windowing.engine.keystate import KeyState, StateBackend
from windowing.engine.metrics import OperatorMetrics
from windowing.engine.pane_info import PaneTracker
from windowing.engine.timers import KeyScheduler
from windowing.evictors.base import Evictor
from windowing.functions.base import ProcessWindowFunction
from windowing.functions.spec import WindowFunctionSpec
from windowing.plan import Plan
from windowing.records import OutputTag, WindowResult
from windowing.sliding import Partials
from windowing.triggers.base import Trigger

__all__ = ["Element", "Engine", "WindowStrategy"]

#: ``(value, timestamp, key)``
Element = tuple[Any, "int | None", Any]


class Engine(Protocol):
    """What a strategy sees of its operator: the job, the clocks, the outputs, and the
    services shared by every strategy."""

    # the job
    assigner: WindowAssigner[Any, Any]
    trigger: Trigger[Any, Any]
    evictor: Evictor[Any, Any] | None
    spec: WindowFunctionSpec
    allowed_lateness: int
    late_output_tag: OutputTag | None
    is_event_time: bool
    is_merging: bool
    plan: Plan
    # clocks, outputs, state
    watermark: int
    processing_time: int
    timer_time: int | None
    timer_event_time: bool
    output: list[WindowResult]
    side_outputs: dict[OutputTag, list[Any]]
    metrics: OperatorMetrics
    backend: StateBackend
    states: dict[Any, KeyState] | None
    # shared services
    clock: Clock
    ctx: WindowContext
    pctx: ProcessContext
    pwf: ProcessWindowFunction[Any, Any, Any, Any] | None
    partials: Partials
    add_contents: Callable[[dict[Any, Any], Any, Any, int | None], None]
    merge_values: Callable[[Any, Any], Any] | None
    direct_result: Callable[[Any], Any] | None
    inline_reducer: Callable[[Any, Any], Any] | None
    evaluator: WindowEvaluator
    panes: PaneTracker | None
    scheduler: KeyScheduler
    emit: Callable[[Any, KeyState, Any, Any], bool]
    emit_contents: Callable[[Any, KeyState, Any, Any, Any], bool]

    def cleanup_time(self, window: Any) -> int: ...

    def dead_letter(self, exc: Exception, key: Any, window: Any) -> bool: ...

    def is_window_late(self, window: Any) -> bool: ...

    def is_element_late(self, timestamp: int | None) -> bool: ...

    def register_cleanup_timer(self, ks: KeyState, window: Any) -> None: ...

    def delete_cleanup_timer(self, ks: KeyState, window: Any) -> None: ...

    def not_added(self, key: Any, ks: KeyState, value: Any, timestamp: int | None) -> None: ...

    def schedule(self, key: Any, ks: KeyState) -> bool: ...

    def release(self, key: Any, ks: KeyState) -> None: ...

    def register_store_expiry(self, ks: KeyState, time: int) -> None: ...

    def new_key_state(self) -> KeyState: ...

    def process_element(self, value: Any, timestamp: int | None, key: Any = None) -> None: ...


class WindowStrategy(abc.ABC):
    """How an operator runs its job; every strategy gives the generic one's results."""

    def __init__(self, op: Engine) -> None:
        self.op = op

    @abc.abstractmethod
    def add_element(self, key: Any, ks: KeyState, value: Any, timestamp: int | None) -> bool:
        """Add one element of ``key`` (Flink ``processElement``, without the element count and
        the late accounting); returns whether it was added to any window."""

    def process(self, elements: Iterable[Element], states: dict[Any, KeyState]) -> None:
        """Elements in order, all at the current clocks, for the in-memory key states
        ``states``; same as :meth:`Engine.process_element` for each."""
        process = self.op.process_element
        for value, timestamp, key in elements:
            process(value, timestamp, key)

    def process_to_end(self, key: Any, elements: Sequence[Element]) -> bool:
        """A key's whole bounded input with no watermark yet, in one pass if this strategy has
        one (returns ``False`` otherwise: the operator processes the elements as usual)."""
        return False

    @abc.abstractmethod
    def fire_event_timers(self, key: Any, ks: KeyState, upto: int) -> None:
        """Fire the event-time timers of ``key`` up to ``upto``, in time order."""

    @abc.abstractmethod
    def fire_processing_timers(self, key: Any, ks: KeyState, upto: int) -> None:
        """Fire the processing-time timers of ``key`` up to ``upto``, in time order."""

    def event_timer_firing(self) -> Callable[[Any, KeyState, int], None]:
        """The function that fires a key's event-time timers, picked once per watermark
        (:meth:`fire_event_timers`, or a specialised form of it)."""
        return self.fire_event_timers

    def drain_event_time(self, upto: int) -> bool:
        """Fire every key's event-time timers up to ``upto`` if this strategy orders keys
        itself; ``False`` lets the operator's scheduler visit the due keys."""
        return False

    def num_event_time_timers(self, ks: KeyState) -> int:
        """Live event-time timers of a key, as Flink's per-window layout would hold them."""
        return len(ks.evt_timers)

    def num_state_entries(self, ks: KeyState) -> int:
        """Live state entries of a key, as Flink's per-window layout would hold them."""
        return ks.num_state_entries()

    def live_windows(self, ks: KeyState) -> list[Any] | None:
        """The key's windows with contents when they are not ``ks.contents``' keys."""
        return None
