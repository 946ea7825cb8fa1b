"""Test harnesses for window operators and triggers (public: test your own triggers too).

:class:`WindowOperatorHarness` drives a whole :class:`~windowing.operator.WindowOperator` with
elements, watermarks and processing time (Flink ``KeyedOneInputStreamOperatorTestHarness``);
:class:`TriggerHarness` drives a single trigger against explicit windows (Flink
``TriggerTestHarness``). Both expose timer and state counters, so a test can prove that
everything was cleaned up.

Examples
--------
>>> from windowing.assigners import TumblingEventTimeWindows
>>> h = WindowOperatorHarness(TumblingEventTimeWindows(10), lambda a, b: a + b)
>>> h.process_element(3, timestamp=1, key="a")
>>> h.process_element(4, timestamp=8, key="a")
>>> h.process_watermark(9)
>>> [(r.key, r.window.start, r.value, r.timestamp) for r in h.extract_output()]
[('a', 0, 7, 9)]
>>> h.num_event_time_timers(), h.num_state_entries()
(0, 0)
"""

from __future__ import annotations

import copy
import heapq
import warnings
from collections.abc import Collection, Iterable
from typing import Any

from windowing.engine.context import WindowContext
from windowing.engine.keystate import KeyState, register_timer
from windowing.engine.metrics import OperatorMetrics
from windowing.errors import (
    DeadLetter,
    ErrorPhase,
    ErrorPolicy,
    NullResultWarning,
    null_result_message,
    window_text,
)
from windowing.evictors.base import Evictor
from windowing.functions.spec import result_source
from windowing.operator import WindowOperator
from windowing.plan import Plan
from windowing.records import LateElement, OutputTag, WindowResult
from windowing.time import MIN_TIMESTAMP, Duration
from windowing.trace import StepKind, Trace, TraceStep
from windowing.triggers.base import Trigger, TriggerResult

__all__ = ["Trace", "TriggerHarness", "WindowOperatorHarness"]

_ALL: Any = object()


class WindowOperatorHarness:
    """Drives a :class:`~windowing.operator.WindowOperator` in memory.

    Parameters are those of :class:`~windowing.operator.WindowOperator`. Outputs accumulate
    until :meth:`extract_output` / :meth:`extract_side_output` take them.

    With ``on_error="dead_letter"``, an element whose processing raises is left out exactly
    as the Spark runtimes leave it out (the key's state is copied before each element and
    put back), and :meth:`extract_dead_letters` returns it with the failed firings.

    A window whose incremental result is ``None`` emits nothing (Flink's rule): the first
    one makes the harness warn once, with a :class:`~windowing.errors.NullResultWarning`
    naming its key and window (``metrics.num_null_results`` counts them all; with
    ``on_error="dead_letter"`` each is also a dead letter).

    With ``trace=True``, every call is recorded in :attr:`trace` (:mod:`windowing.trace`):
    the element or clock, the results it emitted, whether the element was late, and each
    key's windows afterwards, which :func:`~windowing.plotting.plot_windows` draws. Meant
    for small inputs; without it the harness records nothing.
    """

    def __init__(
        self,
        assigner: Any,
        function: Any,
        *,
        window_function: Any = None,
        trigger: Trigger[Any, Any] | None = None,
        evictor: Evictor[Any, Any] | None = None,
        allowed_lateness: Duration = 0,
        late_output_tag: OutputTag | None = None,
        slicing: bool | None = None,
        on_error: ErrorPolicy | str = ErrorPolicy.FAIL,
        pane_info: bool = False,
        trace: bool = False,
    ) -> None:
        if not isinstance(trace, bool):
            msg = f"trace must be a bool, got {type(trace).__name__} {trace!r}"
            raise ValueError(msg)
        self.operator = WindowOperator(
            assigner,
            function,
            window_function=window_function,
            trigger=trigger,
            evictor=evictor,
            allowed_lateness=allowed_lateness,
            late_output_tag=late_output_tag,
            slicing=slicing,
            on_error=on_error,
            pane_info=pane_info,
        )
        self._trace: Trace | None = Trace(event_time=self.operator.is_event_time) if trace else None
        self._warned_null_result = False

    # -- input ---------------------------------------------------------------------------
    @property
    def plan(self) -> Plan:
        """The strategy the operator runs and why (:mod:`windowing.plan`)."""
        return self.operator.plan

    def explain(self) -> str:
        """:attr:`plan` in words."""
        return str(self.operator.plan)

    def process_element(self, value: Any, timestamp: int | None = None, key: Any = None) -> None:
        """Process one element of ``key`` (``None``: a non-keyed stream)."""
        if self._trace is not None:
            with _Recording(self.operator, self._trace, StepKind.ELEMENT, key, value, timestamp):
                self._process_element(value, timestamp, key)
        else:
            self._process_element(value, timestamp, key)
        self._warn_null_result()

    def _process_element(self, value: Any, timestamp: int | None, key: Any) -> None:
        op = self.operator
        if op.dead_letters is None:
            op.process_element(value, timestamp, key)
            return
        states = op.backend
        before = copy.deepcopy(states.get(key))
        mark = op.output_mark()
        try:
            op.process_element(value, timestamp, key)
        except Exception as exc:
            op.rewind_outputs(mark)
            op.scheduler.forget(key)
            if before is None:
                states.remove(key)
            else:
                states.put(key, before)
                op.scheduler.schedule(key, before)
            phase = ErrorPhase.ELEMENT
            op.dead_letters.append(DeadLetter.of(exc, key, phase, value=value, timestamp=timestamp))

    def process_elements(self, elements: Iterable[tuple[Any, int | None, Any]]) -> None:
        """Process ``(value, timestamp, key)`` triples in order (faster than one by one)."""
        if self.operator.dead_letters is not None or self._trace is not None:
            for value, timestamp, key in elements:
                self.process_element(value, timestamp, key)
            return
        try:
            self.operator.process_elements(elements)
        finally:
            self._warn_null_result()

    def process_watermark(self, watermark: int) -> None:
        """Advance the watermark (fires due event-time timers)."""
        try:
            if self._trace is not None:
                with _Recording(self.operator, self._trace, StepKind.WATERMARK):
                    self.operator.process_watermark(watermark)
            else:
                self.operator.process_watermark(watermark)
        finally:
            self._warn_null_result()

    def set_processing_time(self, time: int) -> None:
        """Advance the processing-time clock (fires due processing-time timers)."""
        try:
            if self._trace is not None:
                with _Recording(self.operator, self._trace, StepKind.PROCESSING_TIME):
                    self.operator.advance_processing_time(time)
            else:
                self.operator.advance_processing_time(time)
        finally:
            self._warn_null_result()

    def _warn_null_result(self) -> None:
        """Warn once about the first window whose incremental result was ``None``."""
        if self._warned_null_result:
            return
        metrics = self.operator.metrics
        first = metrics.first_null_result
        if first is None:
            return
        self._warned_null_result = True
        source = result_source(self.operator.spec) or "the window function"
        message = null_result_message(
            source,
            repr(first.key),
            window_text(first.window),
            metrics.num_null_results,
            dead_letter=self.operator.dead_letters is not None,
        )
        warnings.warn(message, NullResultWarning, stacklevel=3)

    # -- output --------------------------------------------------------------------------
    def extract_output(self) -> list[WindowResult]:
        """Window results emitted since the last call."""
        return self.operator.take_output()

    def extract_side_output(self, tag: OutputTag) -> list[Any]:
        """Side-output records of ``tag`` since the last call (``LateElement`` for the late
        data tag, ``WindowResult`` for a process function's ``context.output``)."""
        return self.operator.side_outputs.pop(tag, [])

    def extract_dead_letters(self) -> list[DeadLetter]:
        """The errors routed to the dead-letter output since the last call
        (``on_error="dead_letter"``)."""
        letters = self.operator.dead_letters
        if letters is None:
            return []
        out = list(letters)
        letters.clear()
        return out

    def extract_late_elements(self) -> list[LateElement]:
        """Shortcut for ``extract_side_output(late_output_tag)``."""
        tag = self.operator.late_output_tag
        return [] if tag is None else self.extract_side_output(tag)

    @property
    def trace(self) -> Trace:
        """Every step since the harness was built (``trace=True``)."""
        if self._trace is None:
            msg = (
                "this harness keeps no trace: build it with WindowOperatorHarness(..., trace=True)"
            )
            raise ValueError(msg)
        return self._trace

    @property
    def metrics(self) -> OperatorMetrics:
        """The operator's counters."""
        return self.operator.metrics

    @property
    def watermark(self) -> int:
        return self.operator.watermark

    # -- state ---------------------------------------------------------------------------
    def num_event_time_timers(self, key: Any = _ALL) -> int:
        return self.operator.num_event_time_timers(*(() if key is _ALL else (key,)))

    def num_processing_time_timers(self, key: Any = _ALL) -> int:
        return self.operator.num_processing_time_timers(*(() if key is _ALL else (key,)))

    def num_state_entries(self, key: Any = _ALL) -> int:
        return self.operator.num_state_entries(*(() if key is _ALL else (key,)))

    def num_keys(self) -> int:
        """Keys that still hold any state or timer."""
        return len(self.operator.keys())

    def snapshot(self) -> bytes:
        """The operator state (not pending outputs) as bytes. A harness's snapshots are
        trusted (bytes of your own test): user objects in them need no state key."""
        return self.operator.snapshot(trusted=True)

    def restore(self, snapshot: bytes) -> None:
        """Load a :meth:`snapshot` into this harness (built with the same configuration);
        the user objects of an unsigned snapshot are unpickled (it is trusted)."""
        self.operator.restore(snapshot, trusted=True)


class _Recording:
    """Appends one :class:`~windowing.trace.TraceStep` to a trace for the operator call made
    inside the ``with`` block (nothing when the call raises)."""

    def __init__(
        self,
        op: WindowOperator,
        trace: Trace,
        kind: StepKind,
        key: Any = None,
        value: Any = None,
        timestamp: int | None = None,
    ) -> None:
        self.op, self.trace, self.kind = op, trace, kind
        self.key, self.value, self.timestamp = key, value, timestamp

    def __enter__(self) -> None:
        op = self.op
        self.output, self.n_output = op.output, len(op.output)
        self.watermark, self.processing_time = op.watermark, op.processing_time
        self.late = _late_count(op.metrics)

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is not None:
            return
        op = self.op
        results = self.output[self.n_output :] if op.output is self.output else op.output
        keys = op.keys()
        self.trace.steps.append(
            TraceStep(
                kind=self.kind,
                key=self.key,
                value=self.value,
                timestamp=self.timestamp,
                watermark_before=self.watermark,
                watermark=op.watermark,
                processing_time_before=self.processing_time,
                processing_time=op.processing_time,
                results=tuple(results),
                late=_late_count(op.metrics) > self.late,
                windows={k: w for k in keys if (w := tuple(op.iter_windows(k)))},
            )
        )


def _late_count(metrics: OperatorMetrics) -> int:
    return metrics.num_late_records_side_output + metrics.num_late_records_dropped


class TriggerHarness:
    """Drives one trigger for one key against explicit windows (Flink ``TriggerTestHarness``).

    Examples
    --------
    >>> from windowing.triggers import EventTimeTrigger
    >>> from windowing.windows import TimeWindow
    >>> h = TriggerHarness(EventTimeTrigger())
    >>> h.process_element("x", 2, TimeWindow(0, 4)).name
    'CONTINUE'
    >>> h.num_event_time_timers(TimeWindow(0, 4))
    1
    >>> h.advance_watermark_for(3, TimeWindow(0, 4)).name
    'FIRE'
    >>> h.clear(TimeWindow(0, 4)); h.num_event_time_timers()
    0
    """

    def __init__(self, trigger: Trigger[Any, Any], *, is_merging: bool = False) -> None:
        if not isinstance(trigger, Trigger):
            msg = f"trigger must be a Trigger, got {trigger!r}"
            raise ValueError(msg)
        self.trigger = trigger
        self.watermark = MIN_TIMESTAMP
        self.processing_time = 0
        self.is_merging = is_merging
        self.side_outputs: dict[Any, list[Any]] = {}
        self.key: Any = "key"
        self._ks = KeyState()
        self._ctx = WindowContext(self, self.side_outputs, is_merging=is_merging)

    def _at(self, window: Any) -> WindowContext:
        ctx = self._ctx
        ctx.key, ctx.ks, ctx.window = self.key, self._ks, window
        return ctx

    def process_element(self, value: Any, timestamp: int | None, window: Any) -> TriggerResult:
        """``on_element`` for ``window``."""
        return self.trigger.on_element(value, timestamp, window, self._at(window))

    def advance_watermark(self, time: int) -> list[tuple[Any, TriggerResult]]:
        """Set the watermark; ``on_event_time`` for each due timer, in time order."""
        self.watermark = max(self.watermark, time)
        return self._fire(self._ks.evt_heap, self._ks.evt_timers, time, event_time=True)

    def advance_processing_time(self, time: int) -> list[tuple[Any, TriggerResult]]:
        """Set processing time; ``on_processing_time`` for each due timer, in time order."""
        self.processing_time = max(self.processing_time, time)
        return self._fire(self._ks.proc_heap, self._ks.proc_timers, time, event_time=False)

    def advance_watermark_for(self, time: int, window: Any) -> TriggerResult:
        """Advance the watermark, expecting exactly one firing timer, of ``window``."""
        return self._single(self.advance_watermark(time), window)

    def advance_processing_time_for(self, time: int, window: Any) -> TriggerResult:
        """Advance processing time, expecting exactly one firing timer, of ``window``."""
        return self._single(self.advance_processing_time(time), window)

    def invoke_on_event_time(self, time: int, window: Any) -> TriggerResult:
        """Call ``on_event_time`` directly (as if a timer fired)."""
        return self.trigger.on_event_time(time, window, self._at(window))

    def invoke_on_processing_time(self, time: int, window: Any) -> TriggerResult:
        """Call ``on_processing_time`` directly (as if a timer fired)."""
        return self.trigger.on_processing_time(time, window, self._at(window))

    def merge_windows(self, target: Any, merged: Collection[Any]) -> None:
        """``on_merge`` into ``target`` from ``merged``, then ``clear`` of each merged window,
        as the operator does."""
        ctx = self._at(target)
        ctx.merged_windows = list(merged)
        try:
            self.trigger.on_merge(target, ctx)
        finally:
            ctx.merged_windows = []
        for w in merged:
            self.clear(w)

    def clear(self, window: Any) -> None:
        """``clear`` for ``window``."""
        self.trigger.clear(window, self._at(window))

    def num_event_time_timers(self, window: Any = _ALL) -> int:
        return _count(self._ks.evt_timers, window)

    def num_processing_time_timers(self, window: Any = _ALL) -> int:
        return _count(self._ks.proc_timers, window)

    def num_state_entries(self, window: Any = _ALL) -> int:
        table = self._ks.trigger_state
        return table.num_entries() if window is _ALL else table.num_entries(window)

    def register_event_time_timer(self, time: int, window: Any) -> None:
        """Register a timer as the operator's cleanup timer would."""
        register_timer(self._ks.evt_timers, self._ks.evt_heap, self._ks, time, window)

    def _fire(
        self,
        heap: list[tuple[int, int, Any]],
        live: set[tuple[int, Any]],
        upto: int,
        event_time: bool,
    ) -> list[tuple[Any, TriggerResult]]:
        fired: list[tuple[Any, TriggerResult]] = []
        while heap and heap[0][0] <= upto:
            time, _, window = heapq.heappop(heap)
            if (time, window) not in live:
                continue
            live.remove((time, window))
            ctx = self._at(window)
            if event_time:
                result = self.trigger.on_event_time(time, window, ctx)
            else:
                result = self.trigger.on_processing_time(time, window, ctx)
            fired.append((window, result))
        return fired

    @staticmethod
    def _single(fired: list[tuple[Any, TriggerResult]], window: Any) -> TriggerResult:
        if len(fired) != 1 or fired[0][0] != window:
            msg = f"expected exactly one firing, of window {window!r}; got {fired!r}"
            raise AssertionError(msg)
        return fired[0][1]


def _count(timers: set[tuple[int, Any]], window: Any) -> int:
    if window is _ALL:
        return len(timers)
    return sum(1 for _, w in timers if w == window)
