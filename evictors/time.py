"""Time evictor: keeps the elements within ``window_size`` of the newest element."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy

from windowing.evictors.base import check_after_flag
from windowing.evictors.vectorized import VectorizedOneSidedEvictor, WindowRows
from windowing.time import Duration, to_millis
from windowing.windows import TimestampedValue

__all__ = ["TimeEvictor"]

_INT64_MAX = 2**63 - 1


@dataclass(frozen=True, init=False, repr=False)
class TimeEvictor(VectorizedOneSidedEvictor[Any, Any]):
    """Keeps the elements whose timestamp is within ``window_size`` of the newest timestamp
    in the window.

    Rule: with ``newest = max(timestamps)``, an element is evicted when
    ``timestamp <= newest - window_size``, i.e. it is kept when
    ``timestamp > newest - window_size`` (Flink's exact inequality). The newest element is
    therefore always kept. Elements without a timestamp are never evicted, and when no element
    has one the evictor does nothing (Flink: "no element will be evicted"). Order in the buffer
    does not matter, the maximum is taken over all elements.

    Known elsewhere as: Flink ``TimeEvictor.of(window_size, do_evict_after)``; Beam has no
    evictors.

    Parameters
    ----------
    window_size
        How far back from the newest timestamp to keep (int ms, ``timedelta`` or e.g.
        ``"2 seconds"``). As in Flink, ``0`` or less is accepted and keeps no element that
        has a timestamp (with a ``UserWarning``).
    do_evict_after
        Evict after the window function instead of before it.

    Examples
    --------
    With ``window_size=2000`` and a newest timestamp of 4000, the cut-off is 2000: the
    element at exactly 2000 goes, the one at 2001 stays.

    >>> from windowing.windows import TimestampedValue as TV
    >>> buffer = [TV("a", 1000), TV("b", 4000), TV("c", 2000), TV("d", 2001)]
    >>> [e.value for e in TimeEvictor("2 seconds").evict_before(buffer, None, None)]
    ['b', 'd']
    >>> TimeEvictor(2000).evict_before([TV("x", None), TV("y", None)], None, None)
    [TimestampedValue(value='x', timestamp=None), TimestampedValue(value='y', timestamp=None)]
    """

    window_size: int
    do_evict_after: bool

    def __init__(self, window_size: Duration, do_evict_after: bool = False) -> None:
        size = to_millis(window_size, "window_size")
        if size <= 0:
            msg = (
                f"TimeEvictor: window_size={window_size!r} evicts every element with a "
                "timestamp (Flink accepts it too)"
            )
            warnings.warn(msg, UserWarning, stacklevel=2)
        check_after_flag(do_evict_after, "TimeEvictor")
        object.__setattr__(self, "window_size", size)
        object.__setattr__(self, "do_evict_after", do_evict_after)

    def evict(self, elements: Sequence[TimestampedValue[Any]]) -> Sequence[TimestampedValue[Any]]:
        stamps = [e.timestamp for e in elements if e.timestamp is not None]
        if not stamps:
            return elements
        cutoff = max(stamps) - self.window_size
        return [e for e in elements if e.timestamp is None or e.timestamp > cutoff]

    def keep(self, rows: WindowRows) -> numpy.ndarray[Any, Any]:
        """The rows within ``window_size`` of their window's newest timestamp (every row of
        columns has one)."""
        newest = rows.per_row(rows.window_max(rows.timestamps))
        # t > newest - size, as t - newest > -size: no overflow whatever the size
        bound = max(min(-self.window_size, _INT64_MAX), -_INT64_MAX)
        kept: numpy.ndarray[Any, Any] = rows.timestamps - newest > bound
        return kept
