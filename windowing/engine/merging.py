"""Flink's ``MergingWindowSet``: a key's in-flight windows of a merging assigner (sessions),
each mapped to the *state window* whose namespace holds its contents.

Merging windows does not move contents: the merged window keeps the state window of one of
the windows it covers (chosen as Flink's ``HashSet`` iteration order chooses it), and the other
state windows' contents are merged into it by the caller's merge function. The mapping itself
is plain data (``dict`` window -> state window) kept in the key's state.

Examples
--------
>>> from windowing.assigners import EventTimeSessionWindows
>>> from windowing.windows import TimeWindow
>>> mapping = {}
>>> windows = MergingWindowSet(EventTimeSessionWindows(10), mapping)
>>> windows.add_window(TimeWindow(0, 10), lambda *merge: None)
TimeWindow(start=0, end=10)
>>> windows.add_window(TimeWindow(5, 15), lambda *merge: None)
TimeWindow(start=0, end=15)
>>> mapping
{TimeWindow(start=0, end=15): TimeWindow(start=0, end=10)}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from windowing.assigners.base import MergingWindowAssigner
from windowing.java_order import hash_set_order

__all__ = ["MergeFunction", "MergingWindowSet"]

#: ``merge(merge_result, merged_windows, state_window, merged_state_windows)``: called when
#: windows merge, before the caller adds the element (Flink's ``MergeFunction.merge``).
MergeFunction = Callable[[Any, list[Any], Any, list[Any]], None]


class MergingWindowSet:
    """The in-flight windows of one key; ``orphaned`` counts new windows that replaced an
    equal in-flight merged window's mapping (Flink keeps that state window unreachable)."""

    __slots__ = ("assigner", "mapping", "orphaned")

    def __init__(self, assigner: MergingWindowAssigner[Any, Any], mapping: dict[Any, Any]) -> None:
        self.assigner = assigner
        self.mapping = mapping
        self.orphaned = 0

    def get_state_window(self, window: Any) -> Any:
        """The state window of an in-flight window (``None`` if it is not in flight)."""
        return self.mapping.get(window)

    def retire_window(self, window: Any) -> None:
        """Forget an in-flight window (it was late, or cleaned up)."""
        self.mapping.pop(window, None)

    def add_window(self, new_window: Any, merge: MergeFunction) -> Any:
        """Add ``new_window``, merging it with the in-flight windows the assigner merges it
        with (Flink ``MergingWindowSet.addWindow``); returns the window it ended up in."""
        mapping = self.mapping
        merges = self.assigner.merge_windows([*mapping, new_window])
        result_window = new_window
        merged_new_window = False
        for merged, merge_result in merges:
            # Flink collects the group in a java.util.HashSet, inserted in start order (the
            # set's windows, then the new one): its iteration order decides the state window
            # and the order in which the others are merged into it.
            ordered = hash_set_order(sorted(merged, key=lambda w: (w[0], w not in mapping)))
            if new_window in ordered:
                merged_new_window = True
                result_window = merge_result
                ordered.remove(new_window)  # removes an equal window of the set too, as Java
            target_state = mapping[ordered[0]]
            merged_state_windows = [mapping.pop(w) for w in ordered if w in mapping]
            mapping[merge_result] = target_state
            merged_state_windows.remove(target_state)
            # Nothing to merge when the only merged window is the result itself (the new
            # window fell inside an existing one without extending it).
            if not (len(ordered) == 1 and merge_result in ordered):
                merge(merge_result, ordered, target_state, merged_state_windows)
        if not merges or (result_window == new_window and not merged_new_window):
            previous = mapping.get(new_window)
            if previous is not None and previous != new_window:
                # Flink maps a new window equal to an in-flight merged window to itself: the
                # contents of its former state window are not reached any more.
                self.orphaned += 1
            mapping[new_window] = new_window
        return result_window
