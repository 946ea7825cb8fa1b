"""Count evictor: keeps the last ``max_count`` elements of a window."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy

from windowing.evictors.base import check_after_flag
from windowing.evictors.vectorized import VectorizedOneSidedEvictor, WindowRows
from windowing.windows import TimestampedValue

__all__ = ["CountEvictor"]


@dataclass(frozen=True, repr=False)
class CountEvictor(VectorizedOneSidedEvictor[Any, Any]):
    """Keeps at most ``max_count`` elements: the newest ones by arrival, evicting from the
    beginning of the buffer.

    Rule: with ``n`` buffered elements, the first ``max(0, n - max_count)`` (the oldest
    arrivals, whatever their timestamps) are evicted. Eviction runs before the window function
    (``do_evict_after=False``, the default) or after it (``True``); what is evicted is gone for
    later firings of the window too.

    Known elsewhere as: Flink ``CountEvictor.of(max_count, do_evict_after)``; Beam has no
    evictors; the sliding half of Flink's ``countWindow(size, slide)`` (see
    :func:`windowing.count_windows.count_window`).

    Parameters
    ----------
    max_count
        How many elements to keep. ``0`` or less keeps none: accepted, as by Flink, with a
        ``UserWarning``.
    do_evict_after
        Evict after the window function instead of before it.

    Examples
    --------
    Keep the last two of four elements:

    >>> from windowing.windows import TimestampedValue as TV
    >>> buffer = [TV("a", 1), TV("b", 2), TV("c", 3), TV("d", 4)]
    >>> [e.value for e in CountEvictor(2).evict_before(buffer, None, None)]
    ['c', 'd']
    >>> len(CountEvictor(2).evict_after(buffer, None, None))  # evicts before, not after
    4

    A sliding count window (keep the last 3, fire every 2 elements) sums ``1 + 2``, then
    ``2 + 3 + 4``:

    >>> from windowing.assigners import GlobalWindows
    >>> from windowing.triggers import CountTrigger
    >>> from windowing.testing import WindowOperatorHarness
    >>> h = WindowOperatorHarness(
    ...     GlobalWindows(), lambda a, b: a + b, trigger=CountTrigger(2), evictor=CountEvictor(3)
    ... )
    >>> for v in (1, 2, 3, 4):
    ...     h.process_element(v, timestamp=v)
    >>> [r.value for r in h.extract_output()]
    [3, 9]
    """

    max_count: int
    do_evict_after: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.max_count, bool) or not isinstance(self.max_count, int):
            msg = f"CountEvictor: max_count must be an int, got {self.max_count!r}"
            raise ValueError(msg)
        if self.max_count <= 0:
            msg = (
                f"CountEvictor: max_count={self.max_count} evicts every element "
                "(Flink accepts it too)"
            )
            warnings.warn(msg, UserWarning, stacklevel=3)
        check_after_flag(self.do_evict_after, "CountEvictor")

    def evict(self, elements: Sequence[TimestampedValue[Any]]) -> Sequence[TimestampedValue[Any]]:
        if len(elements) <= self.max_count:
            return elements
        return list(elements[len(elements) - self.max_count :])

    def keep(self, rows: WindowRows) -> numpy.ndarray[Any, Any]:
        """The last ``max_count`` rows of each window."""
        # position >= size - max_count, as size - position <= max_count: no overflow
        last = min(self.max_count, 2**62)
        kept: numpy.ndarray[Any, Any] = rows.per_row(rows.sizes()) - rows.positions() <= last
        return kept
