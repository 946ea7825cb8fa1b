"""The iteration order of Java's ``HashSet`` of Flink ``TimeWindow``s, where Flink's results
depend on it.

When windows merge, Flink's ``TimeWindow.mergeWindows`` collects each group of windows in a
``java.util.HashSet``, and ``MergingWindowSet.addWindow`` takes the state window of the first
window the set iterates over as the merged window's state, and merges the other state windows
into it in the set's order. With an order-sensitive function (concatenation, "the first
element", a process function reading the elements in order) that order shows in the results,
so it is reproduced here: a ``HashSet`` iterates its hash table's buckets in index order, and
each bucket in insertion order; the bucket of a window is its ``hashCode()`` (Flink's
``MathUtils.longToIntWithBitMixing(start + end)``), spread (``h ^ (h >>> 16)``) and masked by
the table's capacity (16, doubled whenever the set grows beyond three quarters of it).

Examples
--------
>>> [tuple(w) for w in hash_set_order([(0, 5), (3, 8), (6, 11)])]
[(6, 11), (0, 5), (3, 8)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

__all__ = ["hash_set_order", "time_window_hash"]

W = TypeVar("W", bound=Sequence[Any])

_MASK64 = (1 << 64) - 1


def time_window_hash(start: int, end: int) -> int:
    """Flink's ``TimeWindow.hashCode()`` as the 32 bits of the Java ``int`` (unsigned):
    ``longToIntWithBitMixing(start + end)``, in Java's ``long`` arithmetic."""
    x = (start + end) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    x ^= x >> 31
    return x & 0xFFFFFFFF


def hash_set_order(added: Sequence[W]) -> list[W]:
    """The windows (``(start, end)`` pairs, e.g. ``TimeWindow``) of a ``java.util.HashSet``
    into which ``added`` was inserted in this order, in the set's iteration order (an equal
    window added again is not inserted twice). Removing an element later does not change the
    order of the others."""
    unique = list(dict.fromkeys(added))
    capacity = 16
    while len(unique) > capacity * 3 // 4:
        capacity *= 2
    mask = capacity - 1

    def bucket(i: int) -> tuple[int, int]:
        w = unique[i]
        h = time_window_hash(w[0], w[1])
        return ((h ^ (h >> 16)) & mask, i)

    return [unique[i] for i in sorted(range(len(unique)), key=bucket)]
