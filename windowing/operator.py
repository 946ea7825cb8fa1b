"""The window operator: Flink's ``WindowOperator`` / ``EvictingWindowOperator`` semantics in
pure Python, for every key of a stream.

One :class:`WindowOperator` runs in the test harness, in Spark batch replay and in Spark
Structured Streaming. Everything it keeps for one key lives in one :class:`KeyState` value
(window contents, trigger and function state, timers, the merging-window set), held by a
:class:`StateBackend`, so a runtime can load a key's state once, drive it, and store it once.

Semantics (Flink's, see ``docs/semantics.md``):

* An element is assigned to windows; a window whose cleanup time
  (``max_timestamp + allowed_lateness``, event time only) is ``<=`` the watermark is *late*
  and skipped. An element added to no window goes to the late side output when the element
  itself is late (``timestamp + allowed_lateness <= watermark``), and is counted otherwise.
* The trigger sees every added element and the timers it registered; ``FIRE`` evaluates the
  window function (nothing is emitted for empty contents), ``PURGE`` drops contents only.
* A cleanup timer at the cleanup time (processing-time windows: at ``max_timestamp``) first
  reaches the trigger, then removes contents, trigger state and per-window function state.
  No cleanup timer is set when the cleanup time saturates at ``MAX_TIMESTAMP``.
* Timers are deduplicated per (key, window, time) and fire in time order.
* Merging assigners merge windows through a merging-window set: contents stay in one state
  namespace; trigger state is merged by the trigger's ``on_merge``.
* With an evictor, elements are buffered with timestamps; the evictor runs around the
  function and its evictions are permanent.
* Results carry ``window.max_timestamp()`` as their timestamp.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from windowing.assigners.base import MergingWindowAssigner, WindowAssigner
from windowing.assigners.hopping import HoppingEventTimeWindows
from windowing.assigners.session import DynamicEventTimeSessionWindows, EventTimeSessionWindows
from windowing.assigners.sliding_distinct import SlidingDistinctAssigner
from windowing.assigners.tumbling import TumblingEventTimeWindows
from windowing.engine.aligned import AlignedStrategy
from windowing.engine.encoding import (
    MAGIC,
    decode_snapshot,
    encode_snapshot,
    legacy_loads,
    legacy_pickle_allowed,
)
from windowing.engine.exchange import (
    CountedWindows,
    KafkaWindows,
    ReducedPanes,
    ReducedWindows,
    WindowSummary,
    export_counted,
    export_reduced,
    import_counted,
    import_reduced,
    summaries,
)
from windowing.engine.generic import GenericStrategy
from windowing.engine.keystate import (
    InMemoryStateBackend,
    KeyState,
    StateBackend,
)
from windowing.engine.metrics import OperatorMetrics
from windowing.engine.notes import END_OF_INPUT_NOTE, note_element
from windowing.engine.pane_info import StepClock
from windowing.engine.services import Engine, JobFacts
from windowing.engine.sessions import SessionStrategy
from windowing.engine.strategies import make_strategy
from windowing.errors import DeadLetter, ErrorPolicy
from windowing.evictors.base import Evictor
from windowing.functions.spec import Aggregate, Fold, Reduce, WindowFunctionSpec, as_spec
from windowing.plan import Plan, plan_operator, state_form
from windowing.records import OutputTag, WindowResult
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP, Duration, to_millis
from windowing.triggers.base import Trigger
from windowing.triggers.count import CountTrigger
from windowing.triggers.event_time import EventTimeTrigger
from windowing.triggers.purging import PurgingTrigger

__all__ = [
    "END_OF_INPUT_NOTE",
    "InMemoryStateBackend",
    "KeyState",
    "OperatorMetrics",
    "OutputMark",
    "StateBackend",
    "WindowOperator",
    "fire_ended_windows",
    "fires_ended_windows",
]

_MISSING: Any = object()

#: Assigners whose windows of an element hold its timestamp (sessions: start at it), so that
#: an element never reaches a window ending before its timestamp (``fire_ended_windows``).
_WINDOWS_HOLD_THEIR_ELEMENTS = (
    TumblingEventTimeWindows,
    HoppingEventTimeWindows,
    EventTimeSessionWindows,
    DynamicEventTimeSessionWindows,
)


class WindowOperator:
    """Applies an assigner, trigger, optional evictor and window function to a keyed stream.

    Parameters
    ----------
    assigner
        The :class:`~windowing.assigners.WindowAssigner`.
    function
        The window function: a reduce callable / ``ReduceFunction``, ``AggregateFunction``,
        ``ProcessWindowFunction``, ``WindowFunction``, or a spec from :mod:`functions`
        (``Reduce``, ``Aggregate``, ``Fold``, ``Process``, ``Apply``).
    window_function
        For a reduce or aggregate: a ``ProcessWindowFunction`` / ``WindowFunction`` that gets
        the incremental result (Flink ``reduce(f, windowFunction)``).
    trigger
        Replaces the assigner's default trigger.
    evictor
        Buffers elements and evicts around the window function.
    allowed_lateness
        How long after a window's end late elements are still added (event time), >= 0.
    late_output_tag
        Emit late elements added to no window to this side output instead of dropping them.
    backend
        Where per-key state lives; an in-memory dict by default.
    slicing
        Whether windows that overlap may share partial results: hopping event-time windows
        with a reduce or aggregate (default trigger, no evictor, no window function) as one
        partial per pane of ``gcd(size, slide)`` (:mod:`windowing.engine.panes`), and
        sliding-distinct windows with the built-in ``EventTimeTrigger`` or
        ``OnWindowCloseTrigger`` as ranges of the key's record timeline
        (:mod:`windowing.engine.timeline_derived`). Both combine a window's records in time
        order, not in arrival order as Flink and Kafka do. ``None`` (the default): panes only for a
        function that declares ``order_insensitive = True`` (``ReduceFunction``,
        ``AggregateFunction``), whose results are then the same, and never the timeline
        (whose windows are KIP-450's definition, not Kafka's algorithm:
        ``docs/sliding-distinct.md``); ``True``: both, for any reduce or aggregate (an
        opt-in: results of an order-sensitive function follow time order, and a process
        function sees the records in time order); ``False``: never.
    on_error
        ``"fail"`` (the default, as Flink): an error of user code propagates, with notes
        naming the key, window and element. ``"dead_letter"``: an error while firing a
        window (window function, evictor, trigger timers) is appended to
        :attr:`dead_letters` and the operator goes on (the firing emits nothing); the
        operator runs element by element (:class:`~windowing.plan.Strategy` ``GENERIC``).
        An error while adding an element still propagates: a runtime skips the element by
        replaying the key without it (``windowing.errors``).
    pane_info
        Give every result its :class:`~windowing.records.PaneInfo` (``WindowResult.pane``):
        which firing of its window it is and whether it fired early, on time or late
        (:mod:`windowing.engine.pane_info`). Off by default: counting firings keeps a small
        entry per window that fired.
    count_rows
        Count the rows each window's contents take in (``window_summaries``'
        ``num_rows_in``; a streaming runtime's ``read_state``). Off by default: one more
        count per element and window, and one int per open window.

    Examples
    --------
    >>> from windowing.assigners import TumblingEventTimeWindows
    >>> op = WindowOperator(TumblingEventTimeWindows(10), lambda a, b: a + b)
    >>> for ts in (1, 5, 12):
    ...     op.process_element(1, ts, key="k")
    >>> op.process_watermark(9)
    >>> op.output
    [WindowResult(key='k', window=TimeWindow(start=0, end=10), value=2, timestamp=9)]
    """

    def __init__(
        self,
        assigner: WindowAssigner[Any, Any],
        function: Any,
        *,
        window_function: Any = None,
        trigger: Trigger[Any, Any] | None = None,
        evictor: Evictor[Any, Any] | None = None,
        allowed_lateness: Duration = 0,
        late_output_tag: OutputTag | None = None,
        backend: StateBackend | None = None,
        slicing: bool | None = None,
        on_error: ErrorPolicy | str = ErrorPolicy.FAIL,
        pane_info: bool = False,
        count_rows: bool = False,
    ) -> None:
        if not isinstance(assigner, WindowAssigner):
            msg = f"assigner must be a WindowAssigner, got {type(assigner).__name__} {assigner!r}"
            raise ValueError(msg)
        if trigger is None:
            trigger = assigner.get_default_trigger()
        elif not isinstance(trigger, Trigger):
            msg = f"trigger must be a Trigger, got {type(trigger).__name__} {trigger!r}"
            raise ValueError(msg)
        if evictor is not None and not isinstance(evictor, Evictor):
            msg = f"evictor must be an Evictor, got {type(evictor).__name__} {evictor!r}"
            raise ValueError(msg)
        lateness = to_millis(allowed_lateness, "allowed_lateness")
        if lateness < 0:
            msg = f"allowed_lateness must be >= 0, got {allowed_lateness!r}"
            raise ValueError(msg)
        if isinstance(assigner, SlidingDistinctAssigner):
            lateness = assigner.lateness(lateness, shown=allowed_lateness)
        if slicing is not None and not isinstance(slicing, bool):
            msg = f"slicing must be a bool or None, got {type(slicing).__name__} {slicing!r}"
            raise ValueError(msg)
        if late_output_tag is not None and not isinstance(late_output_tag, OutputTag):
            msg = f"late_output_tag must be an OutputTag, got {late_output_tag!r}"
            raise ValueError(msg)
        spec = as_spec(function, window_function)
        is_merging = isinstance(assigner, MergingWindowAssigner)
        if is_merging and not trigger.can_merge():
            msg = (
                f"trigger {trigger!r} cannot merge, but assigner {assigner!r} merges windows; "
                "a merging window assigner needs a trigger whose can_merge() is True"
            )
            raise ValueError(msg)
        if is_merging and isinstance(spec, Fold):
            msg = f"fold cannot be used with the merging window assigner {assigner!r}"
            raise ValueError(msg)

        guarded = ErrorPolicy.of(on_error) is ErrorPolicy.DEAD_LETTER
        if not isinstance(pane_info, bool):
            msg = f"pane_info must be a bool, got {type(pane_info).__name__} {pane_info!r}"
            raise ValueError(msg)
        if not isinstance(count_rows, bool):
            msg = f"count_rows must be a bool, got {type(count_rows).__name__} {count_rows!r}"
            raise ValueError(msg)
        self.plan: Plan = plan_operator(
            assigner,
            trigger,
            evictor,
            spec,
            lateness,
            slicing,
            guarded=guarded,
            pane_info=pane_info,
        )
        #: Whether windows share partials (panes, or a record timeline).
        self.slicing = self.plan.time_order
        job = JobFacts(
            assigner,
            trigger,
            evictor,
            spec,
            lateness,
            late_output_tag,
            assigner.is_event_time(),
            is_merging,
            self.plan,
        )
        #: The services object the strategy runs on: the job, the clocks, the outputs.
        self.engine = Engine(
            job,
            backend if backend is not None else InMemoryStateBackend(),
            guarded=guarded,
            pane_info=pane_info,
            count_rows=count_rows,
        )
        #: How the job's windows hold their contents (its elements, or one accumulator).
        self.state_form = state_form(spec, evictor)
        self.job, self.clocks, self.outputs = job, self.engine.clocks, self.engine.outputs
        self.backend: StateBackend = self.engine.backend
        # Direct dict access for the in-memory backend (hot path).
        self.states: dict[Any, KeyState] | None = self.engine.states
        self.scheduler = self.engine.scheduler
        self.strategy = make_strategy(self.engine, assigner, trigger, evictor)
        self._add_element = self.strategy.add_element

    # -- what runtimes and tests read (the engine owns it) -------------------------------
    @property
    def watermark(self) -> int:
        return self.clocks.watermark

    @property
    def processing_time(self) -> int:
        return self.clocks.processing_time

    @property
    def output(self) -> list[WindowResult]:
        """The results emitted and not taken yet (:meth:`take_output`)."""
        return self.outputs.output

    @property
    def side_outputs(self) -> dict[OutputTag, list[Any]]:
        return self.outputs.side_outputs

    @property
    def metrics(self) -> OperatorMetrics:
        return self.outputs.metrics

    @property
    def dead_letters(self) -> list[DeadLetter] | None:
        """The errors routed to the dead-letter output (``on_error="dead_letter"``), else
        ``None``."""
        return self.outputs.dead_letters

    @property
    def assigner(self) -> WindowAssigner[Any, Any]:
        return self.job.assigner

    @property
    def trigger(self) -> Trigger[Any, Any]:
        return self.job.trigger

    @property
    def evictor(self) -> Evictor[Any, Any] | None:
        return self.job.evictor

    @property
    def spec(self) -> WindowFunctionSpec:
        return self.job.spec

    @property
    def allowed_lateness(self) -> int:
        return self.job.allowed_lateness

    @property
    def late_output_tag(self) -> OutputTag | None:
        return self.job.late_output_tag

    @property
    def is_event_time(self) -> bool:
        return self.job.is_event_time

    @property
    def is_merging(self) -> bool:
        return self.job.is_merging

    def new_key_state(self) -> KeyState:
        """An empty :class:`KeyState` for this operator."""
        return self.engine.new_key_state()

    def on_element(self, key: Any, ks: KeyState, value: Any, timestamp: int | None) -> bool:
        """Process one element of ``key`` whose state is ``ks`` (Flink ``processElement``);
        returns whether it was added to any window."""
        self.outputs.metrics.num_elements += 1
        try:
            added = self._add_element(key, ks, value, timestamp)
        except Exception as exc:
            note_element(exc, key, timestamp)
            raise
        if not added:
            self.engine.not_added(key, ks, value, timestamp)
        return added

    def fire_timers(self, key: Any, ks: KeyState) -> None:
        """Fire every timer of ``key`` due at the current watermark / processing time (for
        pane info, the clocks advanced from ``watermark_before`` /
        ``processing_time_before``, which a runtime setting the clocks itself sets)."""
        try:
            self.clocks.step_clock = StepClock.EVENT
            self.strategy.fire_event_timers(key, ks, self.clocks.watermark)
            self.clocks.step_clock = StepClock.PROCESSING
            self.strategy.fire_processing_timers(key, ks, self.clocks.processing_time)
        finally:
            self.clocks.step_clock = StepClock.NONE

    # -- runtimes that drive keys one at a time ------------------------------------------
    def set_clocks(
        self, *, watermark: int | None = None, processing_time: int | None = None
    ) -> None:
        """Set the watermark and / or the processing time the next calls see, for a runtime
        that drives keys one at a time with clocks of their own (a micro-batch's watermark, a
        key's ``processing_time`` column or idle clock); fires nothing (:meth:`fire_timers`
        does)."""
        if watermark is not None:
            self.clocks.watermark = watermark
        if processing_time is not None:
            self.clocks.processing_time = processing_time

    def clear_outputs(self, *, metrics: OperatorMetrics | None = None) -> None:
        """Drop the outputs not taken yet (results, side outputs, dead letters); with
        ``metrics``, the counters start again from it (a fresh ``OperatorMetrics()``, or a
        copy of earlier counters)."""
        self.outputs.output.clear()
        self.outputs.side_outputs.clear()
        if self.outputs.dead_letters is not None:
            self.outputs.dead_letters.clear()
        if metrics is not None:
            self.outputs.metrics = metrics

    def export_reduced_windows(self, ks: KeyState) -> ReducedWindows | None:
        """The windows of the key state ``ks`` when it holds nothing but one reduced value per
        window with the default trigger's timers and their cleanup timers, else ``None``
        (:func:`~windowing.engine.exchange.export_reduced`): for a runtime that computes such
        windows on whole columns."""
        return export_reduced(ks, lateness=self.job.allowed_lateness, merging=self.job.is_merging)

    def import_reduced_windows(self, reduced: ReducedWindows) -> KeyState:
        """A new key state holding the windows of ``reduced``, with the default trigger's
        timers and their cleanup timers (:func:`~windowing.engine.exchange.import_reduced`)."""
        ks = self.new_key_state()
        import_reduced(ks, reduced, lateness=self.job.allowed_lateness)
        return ks

    def export_reduced_panes(self, ks: KeyState) -> ReducedPanes | None:
        """The panes of the key state ``ks`` when this operator keeps hopping windows as panes
        (``slicing``) and ``ks`` holds nothing else, else ``None``: for a runtime that
        computes the panes on whole columns."""
        return self.strategy.export_panes(ks)

    def import_reduced_panes(self, reduced: ReducedPanes) -> KeyState:
        """A new key state holding the panes of ``reduced``, with the key's timer as the
        operator leaves it after firing up to ``reduced.upto``."""
        ks = self.new_key_state()
        if not self.strategy.import_panes(ks, reduced):
            msg = "import_reduced_panes: this operator keeps no panes (slicing is off)"
            raise TypeError(msg)
        return ks

    def export_counted_windows(self, ks: KeyState) -> CountedWindows | None:
        """The windows of the key state ``ks`` when it holds nothing but one reduced value
        per window, a count trigger's counts and the cleanup timers, else ``None``
        (:func:`~windowing.engine.exchange.export_counted`); only for a job of a count
        trigger, no evictor and a reduce or aggregate function."""
        if not self._counted():
            return None
        return export_counted(ks, lateness=self.job.allowed_lateness)

    def _counted(self) -> bool:
        """Whether the job fires event-time windows that do not merge by ``CountTrigger``
        (also in ``PurgingTrigger``), without an evictor, each window one reduced value."""
        job = self.job
        trigger = job.trigger
        if type(trigger) is PurgingTrigger:
            trigger = trigger.trigger
        return (
            type(trigger) is CountTrigger
            and job.is_event_time
            and not job.is_merging
            and job.evictor is None
            and isinstance(job.spec, Reduce | Aggregate)
            and job.spec.window_function is None
        )

    def import_counted_windows(self, windows: CountedWindows) -> KeyState:
        """A new key state holding the windows of ``windows``, their counts and cleanup
        timers (:func:`~windowing.engine.exchange.import_counted`)."""
        if not self._counted():
            msg = "import_counted_windows: this operator's job fires by no count trigger"
            raise TypeError(msg)
        ks = self.new_key_state()
        import_counted(ks, windows, lateness=self.job.allowed_lateness)
        return ks

    def export_kafka_windows(self, ks: KeyState) -> KafkaWindows | None:
        """The KIP-450 windows of the key state ``ks`` when this operator runs Kafka's
        algorithm (``SlidingDistinctAssigner``, the default trigger) and ``ks`` holds nothing
        else, else ``None``: for a runtime that computes the windows on whole columns."""
        return self.strategy.export_kafka(ks)

    def import_kafka_windows(self, windows: KafkaWindows) -> KeyState:
        """A new key state holding the KIP-450 windows of ``windows``, with the timers the
        operator leaves after firing up to ``windows.fired_upto``."""
        ks = self.new_key_state()
        if not self.strategy.import_kafka(ks, windows):
            msg = "import_kafka_windows: this operator does not run Kafka's algorithm"
            raise TypeError(msg)
        return ks

    def window_summaries(self, ks: KeyState) -> list[WindowSummary]:
        """The open windows of the key state ``ks`` (as :meth:`windows_of`): how they hold
        their contents (:attr:`state_form`), the rows they took in (with ``count_rows``),
        the elements they keep, their pending timers."""
        strategy = self.strategy
        windows = self.windows_of(ks)
        return summaries(ks, windows, self.state_form, strategy.rows_in, strategy.window_timers)

    def output_mark(self) -> OutputMark:
        """Where the outputs and counters stand now (:meth:`rewind_outputs` goes back to it)."""
        return OutputMark(
            len(self.outputs.output),
            {tag: len(values) for tag, values in self.outputs.side_outputs.items()},
            0 if self.outputs.dead_letters is None else len(self.outputs.dead_letters),
            dataclasses.replace(self.outputs.metrics),
        )

    def rewind_outputs(self, mark: OutputMark) -> None:
        """Drop the outputs emitted since ``mark`` and put the counters back (an element
        whose processing raised, left out as if it had never arrived)."""
        del self.outputs.output[mark.results :]
        for tag, values in list(self.outputs.side_outputs.items()):
            del values[mark.side_outputs.get(tag, 0) :]
        if self.outputs.dead_letters is not None:
            del self.outputs.dead_letters[mark.dead_letters :]
        self.outputs.metrics = mark.metrics

    def take_output(self) -> list[WindowResult]:
        """The results emitted since the last call (they leave the operator)."""
        out, self.outputs.output = self.outputs.output, []
        return out

    def key_state(self, key: Any) -> KeyState:
        ks = self.backend.get(key)
        if ks is None:
            ks = self.new_key_state()
            self.backend.put(key, ks)
        return ks

    def process_element(self, value: Any, timestamp: int | None, key: Any = None) -> None:
        """Process one element (``key=None`` for a non-keyed stream)."""
        states = self.states
        if states is not None:
            ks = states.get(key)
            if ks is None:
                ks = states[key] = KeyState(self.job.is_merging)
        else:
            ks = self.key_state(key)
        self.on_element(key, ks, value, timestamp)
        if not (ks.contents or ks.evt_timers or ks.proc_timers):
            self.engine.release(key, ks)  # e.g. purged by the trigger, with nothing pending
        self.scheduler.schedule(key, ks)

    def process_elements(self, elements: Iterable[tuple[Any, int | None, Any]]) -> None:
        """Process ``(value, timestamp, key)`` triples in order, all at the current watermark
        and processing time; same result as calling :meth:`process_element` for each."""
        states = self.states
        if states is not None and self.strategy.process(elements, states):
            return
        process = self.process_element
        for value, timestamp, key in elements:
            process(value, timestamp, key)

    def process_key_elements(
        self, key: Any, ks: KeyState, elements: Iterable[tuple[Any, int | None, Any]]
    ) -> KeyState:
        """Process the ``(value, timestamp, key)`` elements of one ``key`` whose state ``ks``
        a runtime loaded from its own store, with the bulk loops of :meth:`process_elements`
        (same results as :meth:`on_element` for each). Returns the key's state afterwards
        (``ks``, or a new one if ``ks`` emptied and the key started over). The runtime keeps
        the key's timer itself (``KeyState.next_event_time()``): nothing stays scheduled in
        this operator's multi-key driver."""
        states = self.states
        if states is None or key in states:
            for value, timestamp, _ in elements:
                self.on_element(key, ks, value, timestamp)
            return ks
        states[key] = ks
        try:
            self.process_elements(elements)
        finally:
            ks = states.pop(key, ks)
            self.scheduler.forget(key)
        return ks

    def process_to_end(self, key: Any, elements: Sequence[tuple[Any, int | None, Any]]) -> None:
        """Process the ``(value, timestamp, key)`` elements of one ``key`` (all of its bounded
        input, in order), then the end of input: watermark and processing time at
        ``MAX_TIMESTAMP``. Same results as :meth:`process_elements` followed by
        :meth:`process_watermark` and :meth:`advance_processing_time` to ``MAX_TIMESTAMP``.

        This is a batch replay without arrival order (Flink's batch execution mode: a key's
        input, then the end of time). When the operator holds no state and no watermark yet,
        no element can be late and every window fires at the end, so with the built-in
        ``EventTimeTrigger``, no evictor and a reduce or aggregate, tumbling windows and (for
        input in timestamp order) event-time session windows take one pass: contents by
        window, no timers, windows fired in order of their end. If a user function raises,
        the operator's state afterwards is unspecified (a runtime abandons the key)."""
        if not self.strategy.process_to_end(key, elements):
            self.process_elements(elements)
        try:
            self.process_watermark(MAX_TIMESTAMP)
            self.advance_processing_time(MAX_TIMESTAMP)
        except Exception as exc:
            exc.add_note(END_OF_INPUT_NOTE)
            raise

    def process_watermark(self, watermark: int) -> None:
        """Advance the watermark and fire every event-time timer ``<= watermark``.

        Each key fires its due timers in time order; keys are visited in the order of their
        earliest due timer. A watermark lower than the current one is ignored."""
        if watermark < self.clocks.watermark:
            return
        self.clocks.watermark_before, self.clocks.watermark = self.clocks.watermark, watermark
        self.clocks.step_clock = StepClock.EVENT
        try:
            self.scheduler.compact()
            if self.strategy.drain_event_time(watermark):
                return
            states = self.states
            self.scheduler.drain(
                watermark,
                event_time=True,
                fire=self.strategy.event_timer_firing(),
                get=states.get if states is not None else self.backend.get,
                remove=self.backend.remove,
            )
        finally:
            self.clocks.step_clock = StepClock.NONE
            self.clocks.watermark_before = watermark

    def advance_processing_time(self, time: int) -> None:
        """Set the processing-time clock and fire every processing-time timer ``<= time``."""
        if time < self.clocks.processing_time:
            return
        self.clocks.processing_time_before, self.clocks.processing_time = (
            self.clocks.processing_time,
            time,
        )
        self.clocks.step_clock = StepClock.PROCESSING
        try:
            states = self.states
            self.scheduler.drain(
                time,
                event_time=False,
                fire=self.strategy.fire_processing_timers,
                get=states.get if states is not None else self.backend.get,
                remove=self.backend.remove,
            )
        finally:
            self.clocks.step_clock = StepClock.NONE
            self.clocks.processing_time_before = time

    def keys(self) -> list[Any]:
        """Keys with live state."""
        return [k for k, _ in self.backend.items()]

    def num_event_time_timers(self, key: Any = _MISSING) -> int:
        """Live event-time timers (of one key, or all), as Flink's per-window layout holds
        them (sliced hopping windows count the per-window timers; derived sliding-distinct
        windows their key's one timer)."""
        return self._count(self.strategy.num_event_time_timers, key)

    def num_processing_time_timers(self, key: Any = _MISSING) -> int:
        """Live processing-time timers (of one key, or all)."""
        return self._count(lambda ks: len(ks.proc_timers), key)

    def num_state_entries(self, key: Any = _MISSING) -> int:
        """Live state entries (window contents, trigger and function state; merging-window
        set entries are not counted) of one key, or all, as Flink's per-window layout holds
        them."""
        return self._count(self.strategy.num_state_entries, key)

    def _count(self, fn: Callable[[KeyState], int], key: Any) -> int:
        if key is not _MISSING:
            ks = self.backend.get(key)
            return 0 if ks is None else fn(ks)
        return sum(fn(ks) for _, ks in self.backend.items())

    def iter_windows(self, key: Any) -> Iterator[Any]:
        """The windows of ``key`` that hold contents (or, for merging assigners, are in the
        merging-window set)."""
        ks = self.backend.get(key)
        return iter(()) if ks is None else iter(self.windows_of(ks))

    def windows_of(self, ks: KeyState) -> list[Any]:
        """The windows of a key state (one a runtime holds itself) that hold contents (or,
        for merging assigners, are in the merging-window set), as :meth:`iter_windows`."""
        if ks.merging is not None:
            return sorted(ks.merging, key=_window_sort_key)
        live = self.strategy.live_windows(ks)
        if live is not None:
            return list(live)
        return sorted(ks.contents, key=_window_sort_key)

    def snapshot(self, *, trusted: bool = False) -> bytes:
        """All key states and the clocks, as bytes (outputs are not included), in the
        versioned state encoding (:mod:`windowing.engine.encoding`): plain data, signed with
        the state key if one is set. User objects (a user's accumulator class, ...) need the
        key, the opt-in ``WINDOWING_TRUST_UNSIGNED_STATE=1``, or ``trusted`` (a snapshot this
        process reads back itself)."""
        return encode_snapshot(
            self.clocks.watermark,
            self.clocks.processing_time,
            self.backend.items(),
            trusted=trusted,
        )

    def restore(self, data: bytes, *, trusted: bool = False) -> None:
        """Load a :meth:`snapshot` into this (fresh) operator, replacing its state; ``trusted``
        unpickles the user objects of an unsigned snapshot. Snapshots of earlier versions
        (pickles, without the format header) still load under the opt-in, with a
        ``DeprecationWarning``."""
        if bytes(data[:4]) == MAGIC:
            watermark, processing_time, states = decode_snapshot(data, trusted=trusted)
        else:
            watermark, processing_time, states = _legacy_snapshot(data, trusted=trusted)
        for key, _ in list(self.backend.items()):
            self.backend.remove(key)
        self.scheduler.clear()
        self.clocks.watermark = self.clocks.watermark_before = watermark
        self.clocks.processing_time = self.clocks.processing_time_before = processing_time
        for key, ks in states:
            if ks.merging is None and self.job.is_merging:
                msg = "restore: the snapshot was taken with a non-merging assigner"
                raise ValueError(msg)
            self.backend.put(key, ks)
            self.scheduler.schedule(key, ks)


@dataclasses.dataclass(frozen=True)
class OutputMark:
    """How many results, side output values of each tag and dead letters an operator had
    emitted, and its counters then (:meth:`WindowOperator.output_mark`)."""

    results: int
    side_outputs: dict[OutputTag, int]
    dead_letters: int
    metrics: OperatorMetrics


def fires_ended_windows(op: WindowOperator) -> bool:
    """Whether :func:`fire_ended_windows` can fire windows of ``op`` before the end of input:
    an event-time assigner of this library whose windows hold their elements' timestamps
    (tumbling, hopping, sessions), the built-in ``EventTimeTrigger`` (its timers are a
    window's end and cleanup time), and a strategy that keeps each window's own timers (not
    panes or record timelines)."""
    return (
        type(op.assigner) in _WINDOWS_HOLD_THEIR_ELEMENTS
        and type(op.trigger) is EventTimeTrigger
        and type(op.strategy) in (GenericStrategy, AlignedStrategy, SessionStrategy)
    )


def fire_ended_windows(op: WindowOperator, key: Any, upto: int) -> bool:
    """Fire the event-time timers of ``key`` up to ``upto`` now, as the end of input
    (``op.process_watermark(MAX_TIMESTAMP)``) will fire them first (triggers, evictors and
    functions see the watermark at ``MAX_TIMESTAMP``, panes are timed as in that step), then
    put the watermark back for the elements that follow.

    For a key's input in timestamp order with no watermark yet (Flink's batch mode, the Spark
    batch replay without arrival order), when every later element has a timestamp above
    ``upto + 1``: no later element reaches a window these timers fire (a session ending at
    ``upto + 1`` would still merge), so the outputs and metrics are those of the end of input,
    in the same order, and the key keeps only its open windows: its memory is bounded by
    them, not by its input. ``False`` (nothing fired) unless :func:`fires_ended_windows` and
    the watermark is ``MIN_TIMESTAMP``.

    Examples
    --------
    >>> from windowing.assigners import TumblingEventTimeWindows
    >>> op = WindowOperator(TumblingEventTimeWindows(10), lambda a, b: a + b)
    >>> op.process_elements([(1, 1, "k"), (1, 5, "k"), (1, 12, "k")])
    >>> fire_ended_windows(op, "k", 12 - 2)  # later elements have timestamps >= 12
    True
    >>> op.output, op.watermark == MIN_TIMESTAMP
    ([WindowResult(key='k', window=TimeWindow(start=0, end=10), value=2, timestamp=9)], True)
    """
    if op.watermark != MIN_TIMESTAMP or not fires_ended_windows(op):
        return False
    ks = op.backend.get(key)
    if ks is None:
        return True
    # the step of the end of input (pane info: the watermark advances from MIN_TIMESTAMP)
    clocks = op.clocks
    clocks.watermark_before, clocks.watermark = MIN_TIMESTAMP, MAX_TIMESTAMP
    clocks.step_clock = StepClock.EVENT
    try:
        op.strategy.fire_event_timers(key, ks, upto)
    finally:
        clocks.watermark = clocks.watermark_before = MIN_TIMESTAMP
        clocks.step_clock = StepClock.NONE
    if ks.is_empty():
        op.backend.remove(key)
    return True


def _window_sort_key(window: Any) -> tuple[int, int, str]:
    start = getattr(window, "start", None)
    end = getattr(window, "end", None)
    if isinstance(start, int) and isinstance(end, int):
        return (start, end, "")
    return (MAX_TIMESTAMP, MAX_TIMESTAMP, repr(window))


def _legacy_snapshot(data: bytes, *, trusted: bool) -> tuple[int, int, list[tuple[Any, KeyState]]]:
    """A snapshot of version 0.1 (a cloudpickled dict)."""
    if not trusted:
        legacy_pickle_allowed("a pickled snapshot of an earlier version", data)
    try:
        payload = legacy_loads(data)
    except Exception as exc:
        msg = "restore: data is not a WindowOperator snapshot"
        raise ValueError(msg) from exc
    if not isinstance(payload, dict) or payload.get("version") != 1:
        msg = "restore: data is not a WindowOperator snapshot"
        raise ValueError(msg)
    warnings.warn(
        "restoring a pickled snapshot of an earlier version; take a new snapshot to store "
        "state in the versioned encoding",
        DeprecationWarning,
        stacklevel=3,
    )
    return payload["watermark"], payload["processing_time"], list(payload["states"].items())
