"""Flink's ``MergingWindowSet`` (``windowing.engine.merging``), on its own."""

from __future__ import annotations

from typing import Any

from windowing.assigners import EventTimeSessionWindows
from windowing.engine.merging import MergingWindowSet
from windowing.windows import TimeWindow

W = TimeWindow


def make() -> tuple[MergingWindowSet, dict[Any, Any], list[tuple[Any, ...]]]:
    mapping: dict[Any, Any] = {}
    merges: list[tuple[Any, ...]] = []
    windows = MergingWindowSet(EventTimeSessionWindows(10), mapping)
    return windows, mapping, merges


def test_a_new_window_is_its_own_state_window() -> None:
    windows, mapping, merges = make()
    assert windows.add_window(W(0, 10), lambda *m: merges.append(m)) == W(0, 10)
    assert mapping == {W(0, 10): W(0, 10)} and merges == []
    assert windows.get_state_window(W(0, 10)) == W(0, 10)


def test_merging_keeps_one_state_window_and_reports_the_others() -> None:
    windows, mapping, merges = make()
    windows.add_window(W(0, 10), lambda *m: merges.append(m))
    windows.add_window(W(20, 30), lambda *m: merges.append(m))
    # [8, 20) reaches both: one session [0, 30) whose state window is one of the two.
    result = windows.add_window(W(8, 20), lambda *m: merges.append(m))
    assert result == W(0, 30)
    assert list(mapping) == [W(0, 30)]
    ((merged_into, merged, state, merged_states),) = merges
    assert merged_into == W(0, 30)
    assert sorted(merged) == [W(0, 10), W(20, 30)]
    assert state == mapping[W(0, 30)] and state in (W(0, 10), W(20, 30))
    assert merged_states == [w for w in (W(0, 10), W(20, 30)) if w != state]


def test_a_window_inside_an_in_flight_one_needs_no_merge() -> None:
    windows, mapping, merges = make()
    windows.add_window(W(0, 20), lambda *m: merges.append(m))
    assert windows.add_window(W(5, 15), lambda *m: merges.append(m)) == W(0, 20)
    assert mapping == {W(0, 20): W(0, 20)} and merges == []


def test_retire_and_orphans() -> None:
    windows, mapping, merges = make()
    windows.add_window(W(0, 10), lambda *m: merges.append(m))
    windows.retire_window(W(0, 10))
    assert mapping == {} and windows.get_state_window(W(0, 10)) is None
    # A merged window whose state window is another one, then an equal new window: Flink
    # maps it to itself, the former state window is not reached any more (counted).
    mapping[W(0, 10)] = W(3, 10)
    windows.add_window(W(0, 10), lambda *m: merges.append(m))
    assert mapping == {W(0, 10): W(0, 10)} and windows.orphaned == 1
