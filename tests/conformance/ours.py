"""Our side: a scenario replayed through :class:`windowing.testing.WindowOperatorHarness`.

The functions mirror those of ``FlinkDriver.java`` one for one, and outputs are rendered as
the same tab-separated fields the driver prints, so the two can be compared as multisets:
``R`` results, ``L`` late elements, ``S`` side outputs of the context functions
(:class:`ContextEmit`).
"""

from __future__ import annotations

import signal
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from windowing import OutputTag
from windowing.assigners import (
    DynamicEventTimeSessionWindows,
    EventTimeSessionWindows,
    GlobalWindows,
    HoppingEventTimeWindows,
    TumblingEventTimeWindows,
)
from windowing.count_windows import count_window
from windowing.evictors import CountEvictor, DeltaEvictor, Evictor, TimeEvictor
from windowing.functions import (
    AggregateFunction,
    ProcessWindowFunction,
    ProcessWindowFunctionContext,
    WindowFunction,
)
from windowing.state import KeyedStateStore, ValueStateDescriptor
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.triggers import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    DeltaTrigger,
    EventTimeTrigger,
    PurgingTrigger,
    Trigger,
)
from windowing.windows import TimeWindow

from .scenarios import Scenario

Line = tuple[str, ...]


class Element(NamedTuple):
    key: str
    num: int
    tag: str


@dataclass
class Outcome:
    """The output lines of one scenario on one side, or why there are none."""

    lines: list[Line] = field(default_factory=list)
    error: str | None = None


def fmt(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, Element):
        return f"{value.key}|{value.num}|{value.tag}"
    return str(value)


def _join(elements: Iterable[Any]) -> str:
    return ";".join(fmt(e) for e in elements)


def concat_reduce(a: Element, b: Element) -> Element:
    return Element(a.key, a.num + b.num, f"{a.tag}.{b.tag}")


class ConcatAggregate(AggregateFunction[Element, tuple[int, str], str]):
    """(sum, tags in add order); ``merge`` shows its operands' order as ``(a+b)``."""

    def create_accumulator(self) -> tuple[int, str]:
        return (0, "")

    def add(self, value: Element, accumulator: tuple[int, str]) -> tuple[int, str]:
        total, tags = accumulator
        return (total + value.num, f"{tags}.{value.tag}" if tags else value.tag)

    def get_result(self, accumulator: tuple[int, str]) -> str:
        return f"{accumulator[0]}|{accumulator[1]}"

    def merge(self, a: tuple[int, str], b: tuple[int, str]) -> tuple[int, str]:
        return (a[0] + b[0], f"({a[1]}+{b[1]})")


class Emit(ProcessWindowFunction[Any, str, Any, Any]):
    """All elements in iteration order, as ``P[e1;e2]``."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[str]:
        return [f"P[{_join(elements)}]"]


class Apply(WindowFunction[Any, str, Any, Any]):
    """All elements in iteration order, as ``A[e1;e2]``."""

    def apply(self, key: Any, window: Any, elements: Iterable[Any]) -> Iterable[str]:
        return [f"A[{_join(elements)}]"]


WINDOW_FIRINGS = ValueStateDescriptor[int]("w")
KEY_FIRINGS = ValueStateDescriptor[int]("g")
KEY_CLEARS = ValueStateDescriptor[int]("cl")
CONTEXT_TAG = OutputTag("ctx")


def _increment(store: KeyedStateStore, descriptor: ValueStateDescriptor[int]) -> int:
    state = store.get_state(descriptor)
    count = (state.value() or 0) + 1
    state.update(count)
    return count


class ContextEmit(ProcessWindowFunction[Any, str, Any, Any]):
    """Uses the whole context (the ``*_ctx`` functions). Each firing counts itself in window
    state (``w``, ``-`` for merging windows, where Flink forbids it) and in the key's global
    state (``g``), and emits ``C[e1;e2]#w=..#g=..#wm=..#cl=..`` with the watermark (``-``
    when not keyed: Flink's ``ProcessAllWindowFunction`` context has none) and the key's
    ``clear`` calls so far, plus ``O[n]#g=..`` (``n`` elements) to the side output
    :data:`CONTEXT_TAG`. ``clear`` counts itself in global state, emits
    ``X#w=..#cl=..#wm=..`` (the window count it clears) to the side output, and clears the
    window state."""

    def __init__(self, *, keyed: bool, merging: bool) -> None:
        self.keyed = keyed
        self.merging = merging

    def _watermark(self, context: ProcessWindowFunctionContext) -> str:
        return str(context.current_watermark()) if self.keyed else "-"

    def process(
        self, key: Any, context: ProcessWindowFunctionContext, elements: Iterable[Any]
    ) -> Iterable[str]:
        values = list(elements)
        w = "-" if self.merging else str(_increment(context.window_state(), WINDOW_FIRINGS))
        g = _increment(context.global_state(), KEY_FIRINGS)
        cl = context.global_state().get_state(KEY_CLEARS).value() or 0
        context.output(CONTEXT_TAG, f"O[{len(values)}]#g={g}")
        wm = self._watermark(context)
        return [f"C[{_join(values)}]#w={w}#g={g}#wm={wm}#cl={cl}"]

    def clear(self, context: ProcessWindowFunctionContext) -> None:
        w = "-"
        if not self.merging:
            state = context.window_state().get_state(WINDOW_FIRINGS)
            w = fmt(state.value())
            state.clear()
        cl = _increment(context.global_state(), KEY_CLEARS)
        context.output(CONTEXT_TAG, f"X#w={w}#cl={cl}#wm={self._watermark(context)}")


def num_delta(old: Element, new: Element) -> float:
    return float(new.num - old.num)


def num_gap(e: Element) -> int:
    return e.num % 5 + 1


def _assigner(spec: str) -> Any:
    kind, *args = spec.split(":")
    nums = [int(a) for a in args]
    if kind == "tumble":
        return TumblingEventTimeWindows(nums[0], nums[1])
    if kind == "slide":
        return HoppingEventTimeWindows(nums[0], nums[1], nums[2])
    if kind == "session":
        return EventTimeSessionWindows(nums[0])
    if kind == "dynsession":
        return DynamicEventTimeSessionWindows(num_gap)
    if kind == "global":
        return GlobalWindows()
    msg = f"assigner {spec}"
    raise ValueError(msg)


def _trigger(spec: str, purge: bool) -> Trigger[Any, Any]:
    kind, _, arg = spec.partition(":")
    trigger: Trigger[Any, Any]
    if kind == "event":
        trigger = EventTimeTrigger()
    elif kind == "count":
        trigger = CountTrigger(int(arg))
    elif kind == "cont":
        trigger = ContinuousEventTimeTrigger(int(arg))
    elif kind == "delta":
        trigger = DeltaTrigger(_number(arg), num_delta)
    else:
        msg = f"trigger {spec}"
        raise ValueError(msg)
    return PurgingTrigger(trigger) if purge else trigger


def _evictor(spec: str) -> Evictor[Any, Any]:
    kind, arg, when = spec.split(":")
    after = when == "after"
    if kind == "count":
        return CountEvictor(int(arg), after)
    if kind == "time":
        return TimeEvictor(int(arg), after)
    if kind == "delta":
        return DeltaEvictor(_number(arg), num_delta, after)
    msg = f"evictor {spec}"
    raise ValueError(msg)


def _number(text: str) -> float | int:
    return float(text) if "." in text else int(text)


def build(s: Scenario, *, slicing: bool | None = None) -> WindowOperatorHarness:
    """The harness for ``s`` (``ValueError`` when we reject its settings); ``slicing`` is
    passed on only when given, so the harness default is what is tested."""
    options: dict[str, Any] = {} if slicing is None else {"slicing": slicing}
    if s.assigner.startswith("countwin:"):
        size, *slide = (int(a) for a in s.assigner.split(":")[1:])
        spec = count_window(size, slide[0] if slide else None)
        assigner: Any = spec.assigner
        options.update(spec.options())
    else:
        assigner = _assigner(s.assigner)
        if s.trigger != "default":
            options["trigger"] = _trigger(s.trigger, s.purge)
        if s.evictor != "none":
            options["evictor"] = _evictor(s.evictor)
    function: Any = ConcatAggregate() if s.fn.startswith("agg") else concat_reduce
    merging = s.assigner.startswith(("session", "dynsession"))
    if s.fn == "process":
        function = Emit()
    elif s.fn == "apply":
        function = Apply()
    elif s.fn.endswith("_pwf"):
        options["window_function"] = Emit()
    elif s.fn == "process_ctx":
        function = ContextEmit(keyed=s.keyed, merging=merging)
    elif s.fn.endswith("_ctx"):
        options["window_function"] = ContextEmit(keyed=s.keyed, merging=merging)
    return WindowOperatorHarness(
        assigner,
        function,
        allowed_lateness=s.lateness,
        late_output_tag=OutputTag("late") if s.late_tag else None,
        **options,
    )


def _bounds(window: Any) -> tuple[str, str]:
    if isinstance(window, TimeWindow):
        return str(window.start), str(window.end)
    return "G", "G"


class _TimeoutError(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _TimeoutError


def run(s: Scenario, *, slicing: bool | None = None, timeout: int = 5) -> Outcome:
    """Replay ``s``: each record, then its watermark when it is above the current one (as
    Flink's watermark generator output does), then the final ``MAX_TIMESTAMP`` watermark.

    A replay that takes longer than ``timeout`` seconds (an endless loop) is stopped.
    """
    try:
        with warnings.catch_warnings():
            # Settings Flink accepts but that make little sense warn here; they are wanted.
            warnings.simplefilter("ignore")
            h = build(s, slicing=slicing)
    except ValueError as e:
        return Outcome(error=f"rejected: {e}")
    watermark = MIN_TIMESTAMP
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        for r in s.records:
            h.process_element(Element(r.key, r.num, r.tag), r.ts, r.key if s.keyed else None)
            if r.wm is not None and r.wm > watermark:
                watermark = r.wm
                h.process_watermark(watermark)
        if watermark < MAX_TIMESTAMP:
            h.process_watermark(MAX_TIMESTAMP)
    except _TimeoutError:
        return Outcome(error=f"raised: no end after {timeout} s (endless loop)")
    except Exception as e:  # any failure is an outcome to report
        return Outcome(error=f"raised: {type(e).__name__}: {e}".replace("\n", " "))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    lines: list[Line] = []
    for res in h.extract_output():
        key = "*" if res.key is None else str(res.key)
        lines.append(("R", key, *_bounds(res.window), fmt(res.value), str(res.timestamp)))
    for late in h.extract_late_elements():
        lines.append(("L", fmt(late.value), str(late.timestamp)))
    for res in h.extract_side_output(CONTEXT_TAG):
        # Flink's clear() context has no key: its side outputs show "-".
        key = "-" if res.value.startswith("X") else "*" if res.key is None else str(res.key)
        lines.append(("S", key, *_bounds(res.window), fmt(res.value), str(res.timestamp)))
    return Outcome(lines=lines)
