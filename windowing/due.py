"""The in-memory driver's heaps of keys to visit: ``(time, seq, key)`` entries.

A key is scheduled by pushing an entry at its next timer and recording that time in a
``sched`` dict; an entry whose time no longer matches ``sched`` is stale and is skipped when it
comes up (lazy deletion). A drain visits the keys whose entries are due by a watermark in
heap order (time, then ``seq``), and visiting a key reschedules only that key, after the
watermark.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any

__all__ = ["compact", "put_back", "take_due"]

Entry = tuple[int, int, Any]


def take_due(due: list[Entry], upto: int) -> list[Entry]:
    """Remove the entries due by ``upto`` from the heap and return them in heap order.

    A drain reschedules the keys it visits after ``upto`` only, so these are exactly the
    entries it would pop one at a time, in the same order; selecting and sorting them at
    once is cheaper when most keys are due (small slides). A drain interrupted by an
    exception hands the entries it has not visited to :func:`put_back`."""
    if not due or due[0][0] > upto:
        return []
    ready = [entry for entry in due if entry[0] <= upto]
    if len(ready) == len(due):
        due.clear()
    else:
        due[:] = [entry for entry in due if entry[0] > upto]
        heapq.heapify(due)
    ready.sort()  # (time, seq) is unique: keys are never compared
    return ready


def put_back(due: list[Entry], rest: Iterator[Entry]) -> None:
    """Return the entries a drain has not visited to the heap."""
    for entry in rest:
        heapq.heappush(due, entry)


def compact(due: list[Entry]) -> None:
    """Drop the dead entries of a heap, in place.

    A key is rescheduled by pushing a new entry; the entries it supersedes stay in the heap
    and are skipped when popped unless the key is scheduled at their time again by then. Of
    several entries of one key at one time, only the first (smallest ``seq``) can ever be
    acted on: when it comes up the key either is visited (and rescheduled later than that
    time) or is not scheduled at that time, and nothing else reschedules the key before the
    others, right after it, come up. Keeping only those entries leaves the order of the
    visits unchanged while stale entries of a key that keeps the same next timer (a long
    window) stop piling up."""
    first: dict[tuple[int, Any], Entry] = {}
    for entry in due:
        slot = (entry[0], entry[2])
        kept = first.get(slot)
        if kept is None or entry[1] < kept[1]:
            first[slot] = entry
    if len(first) < len(due):
        due[:] = first.values()
        heapq.heapify(due)
