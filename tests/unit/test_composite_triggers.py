"""Unit tests for the composite triggers (``AnyOf``, ``AllOf``, ``Repeatedly``,
``OrFinally``, ``AfterWatermark``): results, state namespacing, timer ownership, merging,
validation; through TriggerHarness and WindowOperatorHarness.

Every scenario ends by clearing its windows (or letting the operator clean them up) and
asserting that no timer and no state is left.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import cloudpickle
import pytest

from windowing import triggers
from windowing.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from windowing.functions import ProcessWindowFunction
from windowing.testing import TriggerHarness, WindowOperatorHarness
from windowing.triggers import (
    AfterWatermark,
    AllOf,
    AnyOf,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    DeltaTrigger,
    EventTimeTrigger,
    NeverTrigger,
    OrFinally,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Repeatedly,
    Trigger,
    TriggerResult,
)
from windowing.windows import GLOBAL_WINDOW, TimeWindow

W = TimeWindow
CONTINUE = TriggerResult.CONTINUE
FIRE = TriggerResult.FIRE
PURGE = TriggerResult.PURGE
FIRE_AND_PURGE = TriggerResult.FIRE_AND_PURGE


def assert_clean(h: TriggerHarness, *windows: Any) -> None:
    for w in windows:
        h.clear(w)
    assert h.num_event_time_timers() == 0
    assert h.num_processing_time_timers() == 0
    assert h.num_state_entries() == 0


def assert_operator_clean(h: WindowOperatorHarness) -> None:
    assert h.num_event_time_timers() == 0
    assert h.num_processing_time_timers() == 0
    assert h.num_state_entries() == 0
    assert h.num_keys() == 0


def names(results: Iterable[TriggerResult]) -> list[str]:
    return [r.name for r in results]


def fired(h: TriggerHarness, *, watermark: int | None = None, processing: int | None = None) -> Any:
    if watermark is not None:
        return [(w, r.name) for w, r in h.advance_watermark(watermark)]
    assert processing is not None
    return [(w, r.name) for w, r in h.advance_processing_time(processing)]


def _rise(old: int, new: int) -> float:
    return new - old


class Scripted(Trigger[Any, Any]):
    """Test-only: elements are commands. ``("reg", t)`` / ``("del", t)`` register / delete an
    event-time timer, ``("preg", t)`` / ``("pdel", t)`` a processing-time one, ``"purge"``
    returns PURGE, ``"fire"`` FIRE; timer callbacks return ``on_timer``. Records callbacks."""

    def __init__(self, on_timer: TriggerResult = FIRE) -> None:
        self.on_timer = on_timer
        self.calls: list[tuple[str, int]] = []

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        if element == "purge":
            return PURGE
        if element == "fire":
            return FIRE
        command, time = element
        {
            "reg": ctx.register_event_time_timer,
            "del": ctx.delete_event_time_timer,
            "preg": ctx.register_processing_time_timer,
            "pdel": ctx.delete_processing_time_timer,
        }[command](time)
        return CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        self.calls.append(("event", time))
        return self.on_timer

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        self.calls.append(("processing", time))
        return self.on_timer

    def clear(self, window: Any, ctx: Any) -> None:
        return None


class Collect(ProcessWindowFunction[Any, list[Any], Any, Any]):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[list[Any]]:
        return [sorted(elements)]


def values(h: WindowOperatorHarness) -> list[Any]:
    return [r.value for r in h.extract_output()]


# =========================================================================== AnyOf


def test_any_of_count_or_time_in_one_line() -> None:
    h = WindowOperatorHarness(
        TumblingProcessingTimeWindows(1000),
        lambda a, b: a + b,
        trigger=AnyOf(CountTrigger(100), ProcessingTimeTrigger()),
    )
    for v in range(1, 251):
        h.process_element(v, key="k")
    assert values(h) == [sum(range(1, 101)), sum(range(1, 201))]  # by count, accumulating
    h.set_processing_time(998)
    assert values(h) == []
    h.set_processing_time(999)  # by time: the window end
    assert values(h) == [sum(range(1, 251))]
    assert_operator_clean(h)


def test_any_of_count_or_time_discarding() -> None:
    h = WindowOperatorHarness(
        GlobalWindows(),
        lambda a, b: a + b,
        trigger=PurgingTrigger(AnyOf(CountTrigger(3), ContinuousProcessingTimeTrigger(100))),
    )
    for v in (1, 2, 3, 4):
        h.process_element(v, key="k")
    assert values(h) == [6]
    h.set_processing_time(100)
    assert values(h) == [4]
    h.set_processing_time(200)  # fires again, on an empty window: nothing is emitted
    assert values(h) == []
    assert h.num_processing_time_timers() == 1  # the continuous trigger goes on (300)


def test_any_of_children_have_separate_state() -> None:
    h = TriggerHarness(AnyOf(CountTrigger(2), CountTrigger(3)))
    w = W(0, 10)
    assert h.process_element(1, 1, w) is CONTINUE
    assert h.num_state_entries(w) == 2  # "0/count" and "1/count", not one shared "count"
    assert names(h.process_element(v, v, w) for v in range(2, 7)) == [
        "FIRE",  # 2: the first child
        "FIRE",  # 3: the second child
        "FIRE",  # 4: the first child
        "CONTINUE",
        "FIRE",  # 6: both
    ]
    assert_clean(h, w)


def test_any_of_state_names_are_prefixed_per_child_and_nesting_level() -> None:
    h = TriggerHarness(AnyOf(NeverTrigger(), AllOf(CountTrigger(5), CountTrigger(7))))
    h.process_element(1, 1, GLOBAL_WINDOW)
    names_in_use = {name for name, table in h._ks.trigger_state.tables.items() if table}
    assert names_in_use == {"1/0/count", "1/1/count"}
    assert_clean(h, GLOBAL_WINDOW)


def test_any_of_timers_reach_only_their_owner() -> None:
    # Without ownership, the purging processing-time trigger would answer the continuous
    # trigger's timer at 3 with FIRE_AND_PURGE.
    h = TriggerHarness(
        AnyOf(PurgingTrigger(ProcessingTimeTrigger()), ContinuousProcessingTimeTrigger(3))
    )
    w = W(0, 10)
    h.process_element("a", None, w)
    assert h.num_processing_time_timers(w) == 2  # 3 and 9
    assert fired(h, processing=3) == [(w, "FIRE")]
    assert fired(h, processing=6) == [(w, "FIRE")]
    assert fired(h, processing=9) == [(w, "FIRE_AND_PURGE")]  # both own 9
    assert_clean(h, w)


def test_any_of_ignores_timers_it_did_not_register() -> None:
    child = Scripted()
    h = TriggerHarness(AnyOf(child))
    w = W(0, 10)
    h.register_event_time_timer(9, w)  # the operator's cleanup timer
    assert fired(h, watermark=9) == [(w, "CONTINUE")]
    assert child.calls == []
    assert h.invoke_on_event_time(5, w) is CONTINUE
    assert child.calls == []
    assert_clean(h, w)


def test_any_of_shared_timer_reaches_every_owner_once() -> None:
    first, second = Scripted(FIRE), Scripted(PURGE)
    h = TriggerHarness(AnyOf(first, second))
    w = W(0, 10)
    h.process_element(("reg", 5), 0, w)  # both children register 5: one window timer
    assert h.num_event_time_timers(w) == 1
    assert fired(h, watermark=5) == [(w, "FIRE_AND_PURGE")]  # FIRE + PURGE
    assert first.calls == second.calls == [("event", 5)]
    h.process_element(("reg", 7), 0, w)
    h.process_element(("del", 7), 0, w)  # both owners delete it: the window timer goes
    assert h.num_event_time_timers() == 0
    assert fired(h, watermark=7) == []
    assert_clean(h, w)


class RegisterThenDelete(Trigger[Any, Any]):
    """Child 0 registers 5 on "a" and deletes it on "x"; ignores other elements."""

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        if element == "a":
            ctx.register_event_time_timer(5)
        elif element == "x":
            ctx.delete_event_time_timer(5)
        return CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return FIRE_AND_PURGE

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return CONTINUE

    def clear(self, window: Any, ctx: Any) -> None:
        ctx.delete_event_time_timer(5)


class RegisterOnB(RegisterThenDelete):
    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> TriggerResult:
        if element == "b":
            ctx.register_event_time_timer(5)
        return CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: Any) -> TriggerResult:
        return FIRE


def test_any_of_delete_by_one_owner_keeps_the_timer_of_another() -> None:
    h = TriggerHarness(AnyOf(RegisterThenDelete(), RegisterOnB()))
    w = W(0, 10)
    h.process_element("a", 0, w)
    h.process_element("b", 0, w)
    h.process_element("x", 0, w)  # the first child drops its timer; the second still owns it
    assert h.num_event_time_timers(w) == 1
    assert fired(h, watermark=5) == [(w, "FIRE")]  # only the second child answers
    assert_clean(h, w)


def test_any_of_delete_by_the_only_owner_deletes_the_timer() -> None:
    h = TriggerHarness(AnyOf(RegisterThenDelete(), RegisterOnB()))
    w = W(0, 10)
    h.process_element("a", 0, w)
    h.process_element("x", 0, w)
    assert h.num_event_time_timers() == 0
    assert h.num_state_entries() == 0
    assert fired(h, watermark=5) == []
    assert_clean(h, w)


def test_any_of_combines_purge_flags() -> None:
    h = TriggerHarness(AnyOf(Scripted(), CountTrigger(1)))
    assert h.process_element("purge", 0, GLOBAL_WINDOW) is FIRE_AND_PURGE  # PURGE + FIRE
    h2 = TriggerHarness(AnyOf(Scripted(), CountTrigger(2)))
    assert h2.process_element("purge", 0, GLOBAL_WINDOW) is PURGE
    assert_clean(h, GLOBAL_WINDOW)
    assert_clean(h2, GLOBAL_WINDOW)


def test_any_of_merging_merges_each_childs_state() -> None:
    h = TriggerHarness(AnyOf(CountTrigger(3), EventTimeTrigger()), is_merging=True)
    assert h.trigger.can_merge()
    h.process_element(1, 0, W(0, 2))
    h.process_element(1, 0, W(0, 2))
    h.process_element(1, 2, W(2, 4))
    assert h.num_event_time_timers() == 2
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_event_time_timers() == 1
    assert h.num_event_time_timers(W(0, 4)) == 1  # EventTimeTrigger.on_merge
    assert h.num_state_entries() == 2  # the merged count and the timer owners
    assert h.process_element(1, 3, W(0, 4)) is FIRE  # 2 + 1 + 1 >= 3
    assert fired(h, watermark=3) == [(W(0, 4), "FIRE")]
    assert_clean(h, W(0, 4))


def test_any_of_in_operator_with_session_windows() -> None:
    h = WindowOperatorHarness(
        EventTimeSessionWindows(10), Collect(), trigger=AnyOf(CountTrigger(3), EventTimeTrigger())
    )
    for ts in (0, 5, 12):  # one session [0, 22)
        h.process_element(ts, ts, key="k")
    assert values(h) == [[0, 5, 12]]  # the count, across the merge
    h.process_watermark(21)
    assert values(h) == [[0, 5, 12]]
    assert_operator_clean(h)


def test_composite_with_non_mergeable_child_cannot_merge() -> None:
    trigger = AnyOf(CountTrigger(2), DeltaTrigger(1, _rise))
    assert not trigger.can_merge()
    h = TriggerHarness(trigger, is_merging=True)
    with pytest.raises(ValueError, match=r"AnyOf cannot merge .* 1: DeltaTrigger\(threshold=1"):
        h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    with pytest.raises(ValueError, match=r"DeltaTrigger\(threshold=1.*cannot merge"):
        WindowOperatorHarness(EventTimeSessionWindows(10), Collect(), trigger=trigger)
    assert_clean(h, W(0, 4))


@pytest.mark.parametrize(
    "trigger",
    [
        AllOf(EventTimeTrigger(), DeltaTrigger(1, _rise)),
        Repeatedly(DeltaTrigger(1, _rise)),
        OrFinally(CountTrigger(2), DeltaTrigger(1, _rise)),
        AfterWatermark(early=DeltaTrigger(1, _rise)),
        AfterWatermark(late=DeltaTrigger(1, _rise)),
        AnyOf(AnyOf(DeltaTrigger(1, _rise))),
    ],
    ids=["all-of", "repeatedly", "or-finally", "early", "late", "nested"],
)
def test_every_composite_refuses_to_merge_a_non_mergeable_child(
    trigger: Trigger[Any, Any],
) -> None:
    assert not trigger.can_merge()
    h = TriggerHarness(trigger, is_merging=True)
    with pytest.raises(ValueError, match=r"cannot merge windows: .*DeltaTrigger"):
        h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert_clean(h, W(0, 4))


# =========================================================================== AllOf


def test_all_of_fires_when_every_child_has_fired_since_the_last_firing() -> None:
    h = TriggerHarness(AllOf(CountTrigger(2), CountTrigger(3)))
    w = W(0, 10)
    assert names(h.process_element(v, v, w) for v in range(1, 7)) == [
        "CONTINUE",
        "CONTINUE",  # the first child fired
        "FIRE",  # the second too: fire and forget both
        "CONTINUE",  # the first child fired again
        "CONTINUE",
        "FIRE",  # both at once
    ]
    assert_clean(h, w)


def test_all_of_remembers_purging_firings_until_it_fires() -> None:
    h = TriggerHarness(AllOf(PurgingTrigger(CountTrigger(1)), CountTrigger(3)))
    w = W(0, 10)
    # The purging child fires on every element; the contents must not be purged before the
    # composite fires, so it answers CONTINUE and remembers the purge.
    assert names(h.process_element(v, v, w) for v in (1, 2, 3)) == [
        "CONTINUE",
        "CONTINUE",
        "FIRE_AND_PURGE",
    ]
    assert_clean(h, w)


def test_all_of_passes_a_bare_purge_on() -> None:
    h = TriggerHarness(AllOf(Scripted(), CountTrigger(5)))
    assert h.process_element("purge", 0, GLOBAL_WINDOW) is PURGE
    assert_clean(h, GLOBAL_WINDOW)


def test_all_of_count_and_watermark() -> None:
    h = TriggerHarness(AllOf(CountTrigger(2), EventTimeTrigger()))
    w = W(0, 10)
    h.process_element("a", 1, w)
    h.process_element("b", 2, w)  # the count fired (and reset itself)
    assert h.num_state_entries(w) == 2  # the fired flags and the timer owners
    assert fired(h, watermark=9) == [(w, "FIRE")]
    assert h.num_state_entries(w) == 0  # flags forgotten, the timer consumed
    assert_clean(h, w)


def test_all_of_in_operator_with_lateness() -> None:
    # "at least 2 elements, and not before the end of the window"
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10),
        Collect(),
        trigger=AllOf(CountTrigger(2), EventTimeTrigger()),
        allowed_lateness=10,
    )
    h.process_element(1, 1, key="k")
    h.process_watermark(9)  # the end alone is not enough
    assert values(h) == []
    h.process_element(2, 2, key="k")  # late: EventTimeTrigger fires, and the count reaches 2
    assert values(h) == [[1, 2]]
    h.process_watermark(19)
    assert values(h) == []
    assert_operator_clean(h)


def test_all_of_merges_fired_flags() -> None:
    h = TriggerHarness(AllOf(CountTrigger(2), EventTimeTrigger()), is_merging=True)
    h.process_element(1, 0, W(0, 2))
    h.process_element(1, 0, W(0, 2))  # the count fired in W(0, 2)
    h.process_element(1, 2, W(2, 4))
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert fired(h, watermark=3) == [(W(0, 4), "FIRE")]  # the merged window saw the count
    assert_clean(h, W(0, 4))


# =========================================================================== Repeatedly


def test_repeatedly_restarts_a_stateful_child() -> None:
    plain = TriggerHarness(DeltaTrigger(5, _rise))
    repeated = TriggerHarness(Repeatedly(DeltaTrigger(5, _rise)))
    elements = (0, 6, 7, 12, 13)
    assert names(plain.process_element(v, None, GLOBAL_WINDOW) for v in elements) == [
        "CONTINUE",
        "FIRE",  # 6 - 0 > 5; the reference becomes 6
        "CONTINUE",
        "FIRE",  # 12 - 6 > 5
        "CONTINUE",
    ]
    assert names(repeated.process_element(v, None, GLOBAL_WINDOW) for v in elements) == [
        "CONTINUE",
        "FIRE",  # and reset: 7 is the next reference
        "CONTINUE",
        "CONTINUE",  # 12 - 7 = 5
        "FIRE",  # 13 - 7 > 5
    ]
    assert_clean(plain, GLOBAL_WINDOW)
    assert_clean(repeated, GLOBAL_WINDOW)


def test_repeatedly_continuous_trigger_fires_only_in_intervals_with_elements() -> None:
    h = TriggerHarness(Repeatedly(ContinuousProcessingTimeTrigger(5)))
    w = W(0, 100)
    h.advance_processing_time(1)
    h.process_element("a", None, w)
    assert fired(h, processing=5) == [(w, "FIRE")]
    # Plain ContinuousProcessingTimeTrigger fires here; the reset child disowned its timer
    # at 10, which fires into nothing.
    assert fired(h, processing=10) == [(w, "CONTINUE")]
    h.advance_processing_time(12)
    h.process_element("b", None, w)
    assert fired(h, processing=15) == [(w, "FIRE")]
    assert_clean(h, w)


def test_repeatedly_reset_keeps_the_operators_cleanup_timer() -> None:
    # The inner EventTimeTrigger's timer at the window end is also the operator's cleanup
    # timer (no lateness). Resetting the child after the count firing must not delete it.
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10),
        lambda a, b: a + b,
        trigger=Repeatedly(AnyOf(CountTrigger(2), EventTimeTrigger())),
    )
    h.process_element(1, 1, key="k")
    h.process_element(2, 2, key="k")
    assert values(h) == [3]
    assert h.num_event_time_timers() == 1
    h.process_element(3, 3, key="k")
    h.process_watermark(9)
    assert values(h) == [6]
    assert_operator_clean(h)


def test_repeatedly_disowns_timers_a_leaky_child_leaves_behind() -> None:
    # Scripted.clear deletes nothing (as Flink's triggers may): after the reset its timer at 5
    # still fires, but reaches no child.
    child = Scripted(FIRE)
    h = TriggerHarness(Repeatedly(child))
    w = W(0, 10)
    h.process_element(("reg", 5), 0, w)
    assert h.process_element("fire", 0, w) is FIRE
    assert fired(h, watermark=5) == [(w, "CONTINUE")]
    assert child.calls == []
    assert_clean(h, w)


def test_clear_deletes_timers_a_leaky_child_leaves_behind() -> None:
    h = TriggerHarness(AnyOf(Scripted(), CountTrigger(2)))
    w = W(0, 10)
    h.process_element(("reg", 5), 0, w)
    h.process_element(("preg", 7), 0, w)
    assert (h.num_event_time_timers(), h.num_processing_time_timers()) == (1, 1)
    h.clear(w)  # Scripted.clear leaves both; the composite deletes them
    assert_clean(h)


def test_repeatedly_merges() -> None:
    h = TriggerHarness(Repeatedly(CountTrigger(3)), is_merging=True)
    h.process_element(1, 0, W(0, 2))
    h.process_element(1, 2, W(2, 4))
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.process_element(1, 3, W(0, 4)) is FIRE
    assert_clean(h, W(0, 4))


# =========================================================================== OrFinally


def test_or_finally_fires_until_then_purges_everything() -> None:
    h = TriggerHarness(OrFinally(CountTrigger(2), CountTrigger(5)))
    w = W(0, 10)
    results = names(h.process_element(v, v, w) for v in range(7))
    assert results == ["CONTINUE", "FIRE", "CONTINUE", "FIRE", "FIRE_AND_PURGE", "PURGE", "PURGE"]
    assert h.num_state_entries(w) == 1  # only the finished flag
    assert_clean(h, w)


def test_or_finally_timers_after_finishing_do_nothing() -> None:
    h = TriggerHarness(OrFinally(ProcessingTimeTrigger(), CountTrigger(2)))
    w = W(0, 10)
    h.process_element("a", None, w)
    assert h.process_element("b", None, w) is FIRE_AND_PURGE
    assert h.num_processing_time_timers(w) == 1  # disowned, not deleted
    assert fired(h, processing=9) == [(w, "CONTINUE")]  # not the ProcessingTimeTrigger's FIRE
    assert_clean(h, w)


def test_or_finally_main_purge_passes_through() -> None:
    h = TriggerHarness(OrFinally(PurgingTrigger(CountTrigger(2)), EventTimeTrigger()))
    w = W(0, 10)
    assert names(h.process_element(v, v, w) for v in (1, 2)) == ["CONTINUE", "FIRE_AND_PURGE"]
    assert fired(h, watermark=9) == [(w, "FIRE_AND_PURGE")]
    assert h.process_element(3, 3, w) is PURGE  # late: the window is closed
    assert_clean(h, w)


def test_or_finally_in_operator_closes_the_window_and_cleans_up() -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10),
        Collect(),
        trigger=OrFinally(CountTrigger(2), EventTimeTrigger()),
        allowed_lateness=5,
    )
    for ts in (1, 2, 3):
        h.process_element(ts, ts, key="k")
    assert values(h) == [[1, 2]]
    h.process_watermark(9)
    assert values(h) == [[1, 2, 3]]  # the final pane, then purged
    h.process_element(4, 4, key="k")  # within the lateness, but the window is finished
    assert values(h) == []
    assert h.num_state_entries() == 1  # the finished flag, until cleanup
    h.process_watermark(14)
    assert values(h) == []
    assert_operator_clean(h)


def test_or_finally_merged_window_is_finished_if_any_part_was() -> None:
    h = TriggerHarness(OrFinally(CountTrigger(5), CountTrigger(2)), is_merging=True)
    h.process_element(1, 0, W(0, 2))
    assert h.process_element(1, 0, W(0, 2)) is FIRE_AND_PURGE
    h.process_element(1, 2, W(2, 4))
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.process_element(1, 3, W(0, 4)) is PURGE
    assert_clean(h, W(0, 4))


# =========================================================================== AfterWatermark


def test_after_watermark_alone_behaves_as_event_time_trigger() -> None:
    w = W(0, 10)
    runs = []
    for trigger in (AfterWatermark(), EventTimeTrigger()):
        h = TriggerHarness(trigger)
        results = [h.process_element(1, 3, w), h.process_element(2, 4, w)]
        results += [r for _, r in h.advance_watermark(9)]
        results += [h.process_element(3, 5, w), h.process_element(4, 6, w)]  # late: fire
        assert_clean(h, w)
        runs.append(names(results))
    assert runs[0] == runs[1] == ["CONTINUE", "CONTINUE", "FIRE", "FIRE", "FIRE"]


def test_after_watermark_early_on_time_and_late_panes_in_operator() -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10),
        Collect(),
        trigger=AfterWatermark(early=CountTrigger(2), late=CountTrigger(2)),
        allowed_lateness=10,
    )
    for ts in (1, 2, 3):
        h.process_element(ts, ts, key="k")
    assert values(h) == [[1, 2]]  # early
    h.process_watermark(9)
    assert values(h) == [[1, 2, 3]]  # on time
    h.process_element(4, 4, key="k")
    assert values(h) == []
    h.process_element(5, 5, key="k")
    assert values(h) == [[1, 2, 3, 4, 5]]  # late, every 2 late elements
    h.process_watermark(19)
    assert values(h) == []
    assert_operator_clean(h)


def test_after_watermark_early_count_restarts_at_the_end_of_window() -> None:
    # The late count starts from zero: the early count's leftover element does not carry over.
    h = TriggerHarness(AfterWatermark(early=CountTrigger(2), late=CountTrigger(2)))
    w = W(0, 10)
    h.process_element(1, 1, w)  # early count 1
    assert fired(h, watermark=9) == [(w, "FIRE")]
    assert h.process_element(2, 2, w) is CONTINUE  # late count 1
    assert h.process_element(3, 3, w) is FIRE
    assert_clean(h, w)


def test_after_watermark_early_timers_stop_at_the_end_of_window() -> None:
    h = TriggerHarness(AfterWatermark(early=ContinuousProcessingTimeTrigger(5)))
    w = W(0, 10)
    h.process_element(1, 1, w)  # early timer at processing time 5
    assert fired(h, watermark=9) == [(w, "FIRE")]
    assert fired(h, processing=5) == [(w, "CONTINUE")]  # the early phase is over
    assert_clean(h, w)


def test_after_watermark_early_processing_time_firings() -> None:
    h = TriggerHarness(AfterWatermark(early=ContinuousProcessingTimeTrigger(5)))
    w = W(0, 100)
    h.process_element(1, 1, w)
    assert fired(h, processing=5) == [(w, "FIRE")]
    # Reset after the firing: the disowned timer at 10 fires into nothing.
    assert fired(h, processing=10) == [(w, "CONTINUE")]
    h.process_element(2, 2, w)
    assert fired(h, processing=15) == [(w, "FIRE")]
    assert fired(h, watermark=99) == [(w, "FIRE")]
    assert_clean(h, w)


def test_after_watermark_late_never_suppresses_late_firings() -> None:
    h = TriggerHarness(AfterWatermark(late=NeverTrigger()))
    w = W(0, 10)
    h.process_element(1, 1, w)
    assert fired(h, watermark=9) == [(w, "FIRE")]
    assert h.process_element(2, 2, w) is CONTINUE
    assert_clean(h, w)


def test_after_watermark_merging_registers_the_merged_end() -> None:
    h = TriggerHarness(AfterWatermark(early=CountTrigger(3)), is_merging=True)
    h.process_element(1, 0, W(0, 2))
    h.process_element(1, 2, W(2, 4))
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_event_time_timers() == 1
    assert h.num_event_time_timers(W(0, 4)) == 1
    assert h.process_element(1, 3, W(0, 4)) is FIRE  # the merged early count: 3
    assert fired(h, watermark=3) == [(W(0, 4), "FIRE")]
    assert_clean(h, W(0, 4))


def test_after_watermark_merging_past_the_watermark_registers_nothing() -> None:
    h = TriggerHarness(AfterWatermark(), is_merging=True)
    h.advance_watermark(3)
    h.merge_windows(W(0, 4), [W(0, 2), W(2, 4)])
    assert h.num_event_time_timers() == 0
    assert_clean(h, W(0, 4))


# =========================================================================== validation


@pytest.mark.parametrize("cls", [AnyOf, AllOf])
def test_composite_of_no_children_is_rejected(cls: Any) -> None:
    with pytest.raises(ValueError, match=rf"{cls.__name__} needs at least one trigger, got none"):
        cls()


#: The package untyped, to pass wrong types on purpose.
LOOSE: Any = triggers


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: LOOSE.AnyOf(CountTrigger(2), "x"), r"AnyOf: trigger 1 must be .* got str 'x'"),
        (lambda: LOOSE.AllOf([CountTrigger(2)]), r"AllOf: trigger 0 must be a Trigger, got list"),
        (lambda: LOOSE.Repeatedly(None), r"Repeatedly: trigger must be .* got NoneType None"),
        (lambda: LOOSE.OrFinally(CountTrigger(2), 5), r"OrFinally: until must be .* got int 5"),
        (lambda: LOOSE.AfterWatermark(early="x"), r"AfterWatermark: early must be a Trigger"),
        (lambda: LOOSE.AfterWatermark(late=CountTrigger), r"AfterWatermark: late must be a"),
    ],
)
def test_composite_rejects_non_triggers(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


# =========================================================================== general

COMPOSITES = [
    pytest.param(AnyOf(CountTrigger(2), ProcessingTimeTrigger()), id="any-of"),
    pytest.param(AllOf(CountTrigger(2), EventTimeTrigger()), id="all-of"),
    pytest.param(Repeatedly(DeltaTrigger(1, _rise)), id="repeatedly"),
    pytest.param(OrFinally(CountTrigger(2), CountTrigger(3)), id="or-finally"),
    pytest.param(AfterWatermark(early=CountTrigger(2), late=CountTrigger(1)), id="watermark"),
]


@pytest.mark.parametrize("trigger", COMPOSITES)
def test_composites_survive_cloudpickle_and_keep_no_state(trigger: Trigger[Any, Any]) -> None:
    copy = cloudpickle.loads(cloudpickle.dumps(trigger))
    with pytest.raises(AttributeError):
        trigger.memo = 1  # type: ignore[attr-defined]
    runs = []
    for t in (trigger, copy):
        h = TriggerHarness(t)
        w = W(0, 10)
        results = [h.process_element(v, v, w) for v in (1, 3, 8)]
        results += [r for _, r in h.advance_watermark(9)]
        results += [h.process_element(v, v, w) for v in (2, 4)]
        results += [r for _, r in h.advance_processing_time(100)]
        assert_clean(h, w)
        runs.append(results)
    assert runs[0] == runs[1]
    assert any(r.is_fire() for r in runs[0])


def test_composite_reprs_and_equality() -> None:
    assert repr(AnyOf(CountTrigger(100), ProcessingTimeTrigger())) == (
        "AnyOf(CountTrigger(max_count=100), ProcessingTimeTrigger())"
    )
    assert repr(AllOf(CountTrigger(1))) == "AllOf(CountTrigger(max_count=1))"
    assert repr(Repeatedly(CountTrigger(1))) == "Repeatedly(CountTrigger(max_count=1))"
    assert repr(OrFinally(CountTrigger(1), NeverTrigger())) == (
        "OrFinally(main=CountTrigger(max_count=1), until=NeverTrigger())"
    )
    assert repr(AfterWatermark(early=CountTrigger(1))) == (
        "AfterWatermark(early=CountTrigger(max_count=1), late=None)"
    )
    assert AnyOf(CountTrigger(2)) == AnyOf(CountTrigger(2))
    any_of: Trigger[Any, Any] = AnyOf(CountTrigger(2))
    assert any_of != AllOf(CountTrigger(2))
    assert hash(AnyOf(CountTrigger(2))) == hash(AnyOf(CountTrigger(2)))


def test_composites_are_exported() -> None:
    assert {"AnyOf", "AllOf", "Repeatedly", "OrFinally", "AfterWatermark"} <= set(triggers.__all__)


def test_composite_state_survives_snapshot_and_restore() -> None:
    def make() -> WindowOperatorHarness:
        return WindowOperatorHarness(
            TumblingEventTimeWindows(100),
            lambda a, b: a + b,
            trigger=AnyOf(
                AllOf(CountTrigger(2), ContinuousProcessingTimeTrigger(10)),
                OrFinally(NeverTrigger(), CountTrigger(5)),
            ),
        )

    h = make()
    for v in (1, 2, 3):
        h.process_element(v, v, key="k")  # the AllOf count fired; it waits for the timer
    assert values(h) == []
    restored = make()
    restored.restore(h.snapshot())
    assert restored.num_state_entries() == h.num_state_entries()
    restored.set_processing_time(10)  # the continuous child fires: AllOf complete
    assert values(restored) == [6]
    for v in (4, 5):
        restored.process_element(v, v, key="k")  # the fifth element: OrFinally ends
    assert values(restored) == [15]
    restored.process_watermark(99)
    assert_operator_clean(restored)
