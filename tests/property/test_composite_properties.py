"""Composite triggers against a brute-force oracle.

For random element / watermark / processing-time scripts over a few windows, a composite
trigger runs in one TriggerHarness while each of its children runs *alone* in its own
harness. The oracle combines the children's answers with the composite's documented rule
(``docs/triggers.md``) and must match the composite's answer for every element and for every
(time, window) timer callback (a wrapper records the time of each callback). Children are
drawn from the built-in triggers and from composites of them, so namespacing and timer
ownership are exercised through nesting too. Every run ends with the
composite's windows cleared and no timer or state left.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st

from windowing.testing import TriggerHarness
from windowing.triggers import (
    AfterWatermark,
    AllOf,
    AnyOf,
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    DeltaTrigger,
    EventTimeTrigger,
    NeverTrigger,
    OrFinally,
    ProcessingTimeoutTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Repeatedly,
    Trigger,
    TriggerResult,
)
from windowing.windows import TimeWindow

W = TimeWindow
CONTINUE = TriggerResult.CONTINUE
FIRE = TriggerResult.FIRE
PURGE = TriggerResult.PURGE
FIRE_AND_PURGE = TriggerResult.FIRE_AND_PURGE
WINDOWS = (W(0, 10), W(5, 20), W(18, 30))
FLUSH = 25  # milliseconds past the last action for both clocks


def _rise(old: int, new: int) -> float:
    return new - old


def result(fire: bool, purge: bool) -> TriggerResult:
    if fire:
        return FIRE_AND_PURGE if purge else FIRE
    return PURGE if purge else CONTINUE


def any_of(results: Sequence[TriggerResult | None]) -> TriggerResult:
    rs = [r for r in results if r is not None]
    return result(any(r.is_fire() for r in rs), any(r.is_purge() for r in rs))


# ---------------------------------------------------------------------------- strategies
leaves: st.SearchStrategy[Trigger[Any, Any]] = st.one_of(
    st.builds(CountTrigger, st.integers(1, 3)),
    st.just(EventTimeTrigger()),
    st.just(ProcessingTimeTrigger()),
    st.just(NeverTrigger()),
    st.builds(ContinuousEventTimeTrigger, st.integers(1, 7)),
    st.builds(ContinuousProcessingTimeTrigger, st.integers(1, 7)),
    st.builds(lambda t: DeltaTrigger(t, _rise), st.integers(0, 3)),
    st.builds(lambda n: PurgingTrigger(CountTrigger(n)), st.integers(1, 3)),
    # Answers FIRE_AND_PURGE to *any* processing-time timer: catches timers reaching a
    # child that does not own them.
    st.just(PurgingTrigger(ProcessingTimeTrigger())),
    st.builds(
        lambda n, t, reset, clear: ProcessingTimeoutTrigger(CountTrigger(n), t, reset, clear),
        st.integers(1, 4),
        st.integers(1, 9),
        st.booleans(),
        st.booleans(),
    ),
)


def _composites(children: st.SearchStrategy[Trigger[Any, Any]]) -> Any:
    return st.one_of(
        st.lists(children, min_size=1, max_size=3).map(lambda cs: AnyOf(*cs)),
        st.lists(children, min_size=1, max_size=3).map(lambda cs: AllOf(*cs)),
        children.map(Repeatedly),
        st.tuples(children, children).map(lambda mu: OrFinally(*mu)),
    )


#: Children: built-in triggers, or (one level of) composites of them.
children = st.one_of(leaves, leaves, _composites(leaves))

Action = tuple[Any, ...]
actions: st.SearchStrategy[list[Action]] = st.lists(
    st.one_of(
        st.tuples(
            st.just("element"),
            st.integers(0, len(WINDOWS) - 1),
            st.integers(0, 14),  # offset into the window
            st.integers(-3, 6),  # value (for delta triggers)
        ),
        st.tuples(st.just("watermark"), st.integers(0, 6)),
        st.tuples(st.just("processing"), st.integers(0, 6)),
    ),
    max_size=25,
)


# ---------------------------------------------------------------------------- the oracle
class Timed(Trigger[Any, Any]):
    """Test-only, transparent: records the time of every timer callback (the harness does
    not report it) and, with ``reset_on_fire``, clears ``inner`` right after each firing
    (the oracle's own, independent way of restarting a child)."""

    def __init__(self, inner: Trigger[Any, Any], reset_on_fire: bool = False) -> None:
        self.inner = inner
        self.reset_on_fire = reset_on_fire
        self.times: list[int] = []

    def _after(self, r: TriggerResult, window: Any, ctx: Any) -> TriggerResult:
        if self.reset_on_fire and r.is_fire():
            self.inner.clear(window, ctx)
        return r

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        return self._after(self.inner.on_element(element, timestamp, window, ctx), window, ctx)

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        self.times.append(time)
        return self._after(self.inner.on_event_time(time, window, ctx), window, ctx)

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        self.times.append(time)
        return self._after(self.inner.on_processing_time(time, window, ctx), window, ctx)

    def clear(self, window: Any, ctx: Any) -> None:
        self.inner.clear(window, ctx)


Timers = dict[tuple[int, Any], TriggerResult]  # (time, window) -> answer


def advance(h: TriggerHarness, time: int, event_time: bool) -> Timers:
    """Advance one clock of a harness whose trigger is :class:`Timed`; every callback."""
    timed = h.trigger
    assert isinstance(timed, Timed)
    timed.times.clear()
    fired = h.advance_watermark(time) if event_time else h.advance_processing_time(time)
    assert len(fired) == len(timed.times)
    out: Timers = {}
    for t, (window, r) in zip(timed.times, fired, strict=True):
        assert (t, window) not in out, f"two callbacks for {window} at {t}"
        out[(t, window)] = r
    return out


@dataclass
class Oracle:
    """Runs each child alone (``reset`` children restart after every firing)."""

    children: list[Trigger[Any, Any]]
    reset: frozenset[int] = frozenset()
    harnesses: list[TriggerHarness] = field(init=False)
    flags: dict[Any, list[int]] = field(default_factory=dict)  # AllOf
    finished: set[Any] = field(default_factory=set)  # OrFinally

    def __post_init__(self) -> None:
        self.harnesses = [
            TriggerHarness(Timed(c, i in self.reset)) for i, c in enumerate(self.children)
        ]

    def element(self, index: int, value: int, ts: int, window: Any) -> TriggerResult:
        return self.harnesses[index].process_element(value, ts, window)

    def timers(self, index: int, time: int, event_time: bool) -> Timers:
        return advance(self.harnesses[index], time, event_time)


@dataclass
class Case:
    """A composite, the oracle's view of it, and how to combine the children's answers."""

    trigger: Trigger[Any, Any]
    oracle: Oracle
    on_element: Callable[[Oracle, int, int, Any, int], TriggerResult]
    on_timers: Callable[[Oracle, int, bool, int], Timers]
    #: The composite's own state entries of a window once no timer is pending (flags).
    own_entries: Callable[[Oracle, Any], int] = lambda o, w: 0
    #: Whether the children's state of a finished window was reset (OrFinally).
    finishes: bool = False

    def expected_entries(self, window: Any) -> int:
        """Children's state (as they hold it alone) plus the composite's own entries."""
        if self.finishes and window in self.oracle.finished:
            return 1  # only the finished flag: the children were reset when it finished
        children = sum(h.num_state_entries(window) for h in self.oracle.harnesses)
        return children + self.own_entries(self.oracle, window)


def _all_elements(o: Oracle, value: int, ts: int, window: Any) -> list[TriggerResult]:
    return [o.element(i, value, ts, window) for i in range(len(o.children))]


def _all_timers(o: Oracle, time: int, event_time: bool) -> list[Timers]:
    return [o.timers(i, time, event_time) for i in range(len(o.children))]


def _keys(per_child: list[Timers]) -> list[tuple[int, Any]]:
    """Every (time, window) any child answered, in time order (the composite's order)."""
    keys: set[tuple[int, Any]] = set().union(*per_child) if per_child else set()
    return sorted(keys, key=lambda k: (k[0], k[1].start, k[1].end))


def any_case(kids: list[Trigger[Any, Any]]) -> Case:
    def on_element(o: Oracle, value: int, ts: int, window: Any, wm: int) -> TriggerResult:
        return any_of(_all_elements(o, value, ts, window))

    def on_timers(o: Oracle, time: int, event_time: bool, wm: int) -> Timers:
        per_child = _all_timers(o, time, event_time)
        return {k: any_of([c.get(k) for c in per_child]) for k in _keys(per_child)}

    return Case(AnyOf(*kids), Oracle(kids), on_element, on_timers)


def all_case(kids: list[Trigger[Any, Any]]) -> Case:
    def combine(o: Oracle, window: Any, results: list[TriggerResult | None]) -> TriggerResult:
        rs = [CONTINUE if r is None else r for r in results]
        flags = o.flags.setdefault(window, [0] * len(rs))
        for i, r in enumerate(rs):
            if r.is_fire():
                flags[i] = max(flags[i], 2 if r.is_purge() else 1)
        bare_purge = any(r.is_purge() and not r.is_fire() for r in rs)
        if all(flags):
            purge = bare_purge or 2 in flags
            del o.flags[window]
            return result(True, purge)
        return result(False, bare_purge)

    def on_element(o: Oracle, value: int, ts: int, window: Any, wm: int) -> TriggerResult:
        return combine(o, window, list(_all_elements(o, value, ts, window)))

    def on_timers(o: Oracle, time: int, event_time: bool, wm: int) -> Timers:
        per_child = _all_timers(o, time, event_time)
        return {k: combine(o, k[1], [c.get(k) for c in per_child]) for k in _keys(per_child)}

    return Case(
        AllOf(*kids), Oracle(kids), on_element, on_timers, lambda o, w: any(o.flags.get(w, ()))
    )


def repeatedly_case(kid: Trigger[Any, Any]) -> Case:
    def on_element(o: Oracle, value: int, ts: int, window: Any, wm: int) -> TriggerResult:
        return o.element(0, value, ts, window)

    def on_timers(o: Oracle, time: int, event_time: bool, wm: int) -> Timers:
        return o.timers(0, time, event_time)

    return Case(Repeatedly(kid), Oracle([kid], reset=frozenset({0})), on_element, on_timers)


def or_finally_case(main: Trigger[Any, Any], until: Trigger[Any, Any]) -> Case:
    def combine(o: Oracle, window: Any, m: TriggerResult | None, u: TriggerResult | None) -> Any:
        if window in o.finished:
            return None  # the element / timer answer once finished
        m = CONTINUE if m is None else m
        u = CONTINUE if u is None else u
        if u.is_fire():
            o.finished.add(window)
            return FIRE_AND_PURGE
        return result(m.is_fire(), m.is_purge() or u.is_purge())

    def on_element(o: Oracle, value: int, ts: int, window: Any, wm: int) -> TriggerResult:
        m, u = _all_elements(o, value, ts, window)
        r = combine(o, window, m, u)
        return PURGE if r is None else r

    def on_timers(o: Oracle, time: int, event_time: bool, wm: int) -> Timers:
        m, u = _all_timers(o, time, event_time)
        out = {}
        for k in _keys([m, u]):
            r = combine(o, k[1], m.get(k), u.get(k))
            out[k] = CONTINUE if r is None else r
        return out

    oracle = Oracle([main, until])
    return Case(OrFinally(main, until), oracle, on_element, on_timers, finishes=True)


def after_watermark_case(early: Trigger[Any, Any] | None, late: Trigger[Any, Any] | None) -> Case:
    kids = [early or NeverTrigger(), late or NeverTrigger()]
    pending_end: set[Any] = set()  # windows whose end-of-window timer was registered

    def on_element(o: Oracle, value: int, ts: int, window: Any, wm: int) -> TriggerResult:
        if window.max_timestamp() <= wm:
            return FIRE if late is None else o.element(1, value, ts, window)
        pending_end.add(window)
        return CONTINUE if early is None else o.element(0, value, ts, window)

    def on_timers(o: Oracle, time: int, event_time: bool, wm: int) -> Timers:
        per_child = _all_timers(o, time, event_time)
        out = {k: any_of([c.get(k) for c in per_child]) for k in _keys(per_child)}
        if event_time:
            # Event-time timers of the built-in triggers never pass the window end, so the
            # early child has no later timer in this advance that the reset would cancel.
            for w in sorted(w for w in pending_end if w.max_timestamp() <= time):
                pending_end.discard(w)
                o.harnesses[0].clear(w)  # the early phase is over
                k = (w.max_timestamp(), w)
                out[k] = any_of([out.get(k), FIRE])
        return out

    trigger = AfterWatermark(early=early, late=late)
    return Case(trigger, Oracle(kids, reset=frozenset({0, 1})), on_element, on_timers)


# ---------------------------------------------------------------------------- the runner
def run(case: Case, script: list[Action]) -> None:
    composite = TriggerHarness(Timed(case.trigger))
    clocks = {True: 0, False: 0}  # event time (watermark), processing time

    def move(target: int, event_time: bool) -> None:
        clocks[event_time] = target
        got = advance(composite, target, event_time)
        want = case.on_timers(case.oracle, target, event_time, clocks[True])
        for key in set(got) | set(want):
            note(f"{'watermark' if event_time else 'processing'} {key}")
            assert got.get(key, CONTINUE) == want.get(key, CONTINUE)

    # Both clocks start at 0 (the watermark too, so that "late" is well defined).
    move(0, True)
    move(0, False)
    for action in script:
        if action[0] == "element":
            _, index, offset, value = action
            window = WINDOWS[index]
            ts = window.start + offset % (window.end - window.start)
            got = composite.process_element(value, ts, window)
            want = case.on_element(case.oracle, value, ts, window, clocks[True])
            note(f"element {value}@{ts} in {window}: {got.name} (oracle {want.name})")
            assert got == want
        else:
            event_time = action[0] == "watermark"
            move(clocks[event_time] + action[1], event_time)
    move(max(clocks[True], 30) + FLUSH, True)
    move(max(clocks[False], 30) + FLUSH, False)
    # Every timer has fired: nothing may be left of them (no stale owner entries either).
    assert composite.num_event_time_timers() == composite.num_processing_time_timers() == 0
    for window in WINDOWS:
        assert composite.num_state_entries(window) == case.expected_entries(window), window
    for window in WINDOWS:
        composite.clear(window)
    assert composite.num_event_time_timers() == 0
    assert composite.num_processing_time_timers() == 0
    assert composite.num_state_entries() == 0


# ---------------------------------------------------------------------------- properties
@given(st.lists(children, min_size=1, max_size=3), actions)
def test_any_of_is_the_union_of_its_children(kids: list[Trigger[Any, Any]], script: Any) -> None:
    run(any_case(kids), script)


@given(st.lists(children, min_size=1, max_size=3), actions)
def test_all_of_fires_when_all_children_fired(kids: list[Trigger[Any, Any]], script: Any) -> None:
    run(all_case(kids), script)


@given(children, actions)
def test_repeatedly_is_its_child_reset_after_each_firing(
    kid: Trigger[Any, Any], script: Any
) -> None:
    run(repeatedly_case(kid), script)


@given(children, children, actions)
def test_or_finally_is_main_until_until_fires(
    main: Trigger[Any, Any], until: Trigger[Any, Any], script: Any
) -> None:
    run(or_finally_case(main, until), script)


@given(st.none() | children, st.none() | children, actions)
def test_after_watermark_is_early_then_end_then_late(
    early: Trigger[Any, Any] | None, late: Trigger[Any, Any] | None, script: Any
) -> None:
    run(after_watermark_case(early, late), script)
