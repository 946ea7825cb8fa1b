"""What a strategy sees of its operator: the :class:`Engine`, a small services object.

A strategy (:mod:`windowing.engine.strategy`) is handed an :class:`Engine`, not the operator:

- ``engine.job``: the job, frozen (:class:`JobFacts`: assigner, trigger, evictor, function,
  allowed lateness, late output tag, the operator's :class:`~windowing.plan.Plan`);
- ``engine.clocks``: the clocks the operator advances and a strategy reads (:class:`Clocks`;
  a strategy sets only ``timer_time`` / ``timer_event_time``, the timer it is firing);
- ``engine.outputs``: where results, side outputs, dead letters and counters go
  (:class:`Outputs`);
- the services every strategy shares: evaluating and emitting a window, adding to its
  contents, the contexts handed to triggers and functions, the key scheduler, and Flink's
  rules of lateness and cleanup applied to a key's state (:meth:`Engine.cleanup_time`,
  :meth:`Engine.not_added`, ...).

The operator (:class:`~windowing.operator.WindowOperator`) owns the engine and drives it:
the clocks move only through the operator's methods, and the runtimes read the outputs
through it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import windowing.rules as rules
from windowing.assigners.base import WindowAssigner
from windowing.engine.contents import make_adder, make_partials
from windowing.engine.context import Clock, ProcessContext, WindowContext
from windowing.engine.evaluation import WindowEvaluator
from windowing.engine.keystate import InMemoryStateBackend, KeyState, StateBackend, register_timer
from windowing.engine.metrics import NullResult, OperatorMetrics
from windowing.engine.pane_info import PaneTracker, StepClock
from windowing.engine.timers import KeyScheduler
from windowing.errors import DeadLetter, ErrorPhase
from windowing.evictors.base import Evictor
from windowing.functions.spec import Aggregate, Reduce, WindowFunctionSpec, result_source
from windowing.plan import Plan, Strategy, process_function
from windowing.records import LateElement, OutputTag, WindowResult
from windowing.sliding import TimelineExpiry
from windowing.time import MIN_TIMESTAMP
from windowing.triggers.base import Trigger

__all__ = ["Clocks", "Engine", "JobFacts", "Outputs"]

_EXPIRY = TimelineExpiry()


@dataclasses.dataclass(frozen=True, slots=True)
class JobFacts:
    """The job an operator runs, as its strategy sees it (nothing here changes)."""

    assigner: WindowAssigner[Any, Any]
    trigger: Trigger[Any, Any]
    evictor: Evictor[Any, Any] | None
    spec: WindowFunctionSpec
    allowed_lateness: int
    late_output_tag: OutputTag | None
    is_event_time: bool
    is_merging: bool
    plan: Plan


class Clocks:
    """The operator's clocks: the watermark and processing time; the values before the step
    that fires timers and which clock that step advances (pane info,
    :mod:`windowing.engine.pane_info`); and the timer whose firing is being evaluated."""

    __slots__ = (
        "processing_time",
        "processing_time_before",
        "step_clock",
        "timer_event_time",
        "timer_time",
        "watermark",
        "watermark_before",
    )

    def __init__(self) -> None:
        self.watermark = MIN_TIMESTAMP
        self.processing_time = 0
        self.watermark_before = MIN_TIMESTAMP
        self.processing_time_before = 0
        self.step_clock = StepClock.NONE
        self.timer_time: int | None = None
        self.timer_event_time = True


class Outputs:
    """What the operator emitted and has not handed over yet, and its counters.
    ``side_outputs`` is one dict for the operator's life (contexts hold it); ``output`` and
    ``metrics`` are replaced when a runtime takes them."""

    __slots__ = ("dead_letters", "metrics", "output", "side_outputs")

    def __init__(self, *, guarded: bool) -> None:
        self.output: list[WindowResult] = []
        self.side_outputs: dict[OutputTag, list[Any]] = {}
        self.metrics = OperatorMetrics()
        #: The errors routed to the dead-letter output (``on_error="dead_letter"``), else None.
        self.dead_letters: list[DeadLetter] | None = [] if guarded else None


class Engine:
    """The services object a strategy runs on (see the module docstring).

    Examples
    --------
    >>> from windowing.assigners import TumblingEventTimeWindows
    >>> from windowing.operator import WindowOperator
    >>> engine = WindowOperator(TumblingEventTimeWindows(10), lambda a, b: a + b).engine
    >>> engine.job.allowed_lateness, engine.cleanup_time(engine.job.assigner.assign_windows(
    ...     1, 3, engine.clock)[0])
    (0, 9)
    """

    def __init__(
        self,
        job: JobFacts,
        backend: StateBackend,
        *,
        guarded: bool,
        pane_info: bool,
        count_rows: bool = False,
    ) -> None:
        spec, evictor = job.spec, job.evictor
        self.job = job
        #: Whether the strategies count the rows each window's contents take in
        #: (:func:`~windowing.engine.keystate.count_row`; ``WindowSummary.num_rows_in``).
        self.count_rows = count_rows
        self.clocks = Clocks()
        self.outputs = Outputs(guarded=guarded)
        self.backend = backend
        # Direct dict access for the in-memory backend (hot path).
        self.states: dict[Any, KeyState] | None = (
            backend.states if isinstance(backend, InMemoryStateBackend) else None
        )
        self.clock = Clock(self.clocks)
        self.ctx = WindowContext(
            self.clocks,
            self.outputs.side_outputs,
            is_merging=job.is_merging,
            late_tag=job.late_output_tag,
        )
        self.pctx = ProcessContext(self.ctx)
        self.pwf = process_function(spec)
        self.scheduler = KeyScheduler(in_order=job.plan.strategy is Strategy.TIMELINE_DERIVED)
        self.add_contents, self.merge_values = make_adder(spec, evictor)
        self.partials = make_partials(spec, evictor)
        self.inline_reducer: Callable[[Any, Any], Any] | None = (
            spec.reducer() if isinstance(spec, Reduce) and evictor is None else None
        )
        #: Incremental results emitted as they are (no window function, no evictor).
        self.direct_result: Callable[[Any], Any] | None = None
        if job.plan.direct_result:
            self.direct_result = (
                spec.function.get_result if isinstance(spec, Aggregate) else _identity
            )
        #: Counts firings per window (``pane_info=True``), else ``None``.
        self.pane_tracker: PaneTracker | None = (
            PaneTracker(
                self.clocks, event_time=job.is_event_time, allowed_lateness=job.allowed_lateness
            )
            if pane_info
            else None
        )
        self.evaluator = WindowEvaluator(self)
        self.emit: Callable[[Any, KeyState, Any, Any], bool] = self.evaluator.emit
        self.emit_contents: Callable[[Any, KeyState, Any, Any, Any], bool] = (
            self.evaluator.emit_contents
        )
        if guarded:
            self.emit = self.evaluator.emit_guarded
            self.emit_contents = self.evaluator.emit_contents_guarded

    # -- Flink's rules on a key's state --------------------------------------------------
    def cleanup_time(self, window: Any) -> int:
        """When ``window`` is removed (:func:`windowing.rules.cleanup_time`)."""
        job = self.job
        return rules.cleanup_time(
            window.max_timestamp(), job.allowed_lateness, event_time=job.is_event_time
        )

    def is_window_late(self, window: Any) -> bool:
        """Whether ``window`` is already past its cleanup time (event time only;
        :func:`windowing.rules.is_window_late`)."""
        job = self.job
        return job.is_event_time and rules.is_window_late(
            window.max_timestamp(), job.allowed_lateness, self.clocks.watermark
        )

    def is_element_late(self, timestamp: int | None) -> bool:
        """Whether an element is late (event time only; :func:`windowing.rules.is_element_late`:
        near ``MAX_TIMESTAMP`` the sum wraps negative, so an element whose windows are all
        late goes to the late output)."""
        job = self.job
        return job.is_event_time and rules.is_element_late(
            timestamp, job.allowed_lateness, self.clocks.watermark
        )

    def register_cleanup_timer(self, ks: KeyState, window: Any) -> None:
        """The timer that removes ``window`` of the key ``ks`` (none when it saturates)."""
        t = self.cleanup_time(window)
        if not rules.has_cleanup_timer(t):
            return
        if self.job.is_event_time:
            register_timer(ks.evt_timers, ks.evt_heap, ks, t, window)
        else:
            register_timer(ks.proc_timers, ks.proc_heap, ks, t, window)

    def delete_cleanup_timer(self, ks: KeyState, window: Any) -> None:
        t = self.cleanup_time(window)
        if not rules.has_cleanup_timer(t):
            return
        if self.job.is_event_time:
            ks.evt_timers.discard((t, window))
        else:
            ks.proc_timers.discard((t, window))

    def register_store_expiry(self, ks: KeyState, time: int) -> None:
        """The key's one timer that forgets its Kafka window store
        (:mod:`windowing.engine.kafka`)."""
        register_timer(ks.evt_timers, ks.evt_heap, ks, time, _EXPIRY)

    def not_added(self, key: Any, ks: KeyState, value: Any, timestamp: int | None) -> None:
        """Account for an element added to no window: late side output, or a metric."""
        outputs = self.outputs
        if self.is_element_late(timestamp):
            tag = self.job.late_output_tag
            if tag is not None:
                outputs.metrics.num_late_records_side_output += 1
                outputs.side_outputs.setdefault(tag, []).append(
                    LateElement(key, value, timestamp, self.clocks.watermark)
                )
            else:
                outputs.metrics.num_late_records_dropped += 1
        else:
            outputs.metrics.num_records_in_no_window += 1
        self.release(key, ks)

    def dead_letter(self, exc: Exception, key: Any, window: Any) -> bool:
        """Route ``exc``, raised while firing ``window`` of ``key``, to the dead letters;
        ``False`` (the caller raises) when the policy is to fail."""
        letters = self.outputs.dead_letters
        if letters is None:
            return False
        letters.append(DeadLetter.of(exc, key, ErrorPhase.WINDOW, window=window))
        return True

    def null_results(self, key: Any, windows: Sequence[Any]) -> None:
        """Account for firings of ``windows`` of ``key`` whose incremental result was
        ``None``: as in Flink they emit nothing (``WindowOperator.processElement`` and
        ``onEventTime`` skip a window whose ``windowState.get()`` is null, which a heap
        ``ReducingState`` / ``AggregatingState`` returns for a null reduce or
        ``getResult``). Each is counted in ``metrics.num_null_results``, the first is kept
        in ``metrics.first_null_result`` (for a :class:`~windowing.errors.NullResultWarning`),
        and with dead letters each is one (phase ``NULL_RESULT``)."""
        metrics = self.outputs.metrics
        metrics.num_null_results += len(windows)
        if metrics.first_null_result is None:
            metrics.first_null_result = NullResult(key, windows[0])
        letters = self.outputs.dead_letters
        if letters is not None:
            source = result_source(self.job.spec) or "the window function"
            letters.extend(DeadLetter.null_result(key, w, source) for w in windows)

    # -- keys ------------------------------------------------------------------------------
    def new_key_state(self) -> KeyState:
        """An empty :class:`KeyState` for this job."""
        return KeyState(self.job.is_merging)

    def schedule(self, key: Any, ks: KeyState) -> bool:
        """Schedule ``key`` at its earliest timers in the in-memory driver; returns whether it
        has any (:class:`~windowing.engine.timers.KeyScheduler`)."""
        return self.scheduler.schedule(key, ks)

    def release(self, key: Any, ks: KeyState) -> None:
        """Drop the key's state once it keeps nothing."""
        if ks.is_empty():
            self.backend.remove(key)


def _identity(value: Any) -> Any:
    return value
