"""Count windows: Flink's ``countWindow(size[, slide])`` as an (assigner, trigger, evictor) spec.

A count window is not a window assigner of its own: Flink builds it from global windows, a
count trigger and, for sliding count windows, a count evictor. :func:`count_window` returns
that combination as a :class:`CountWindowSpec`, which the in-memory harness and the builder
both take apart:

Examples
--------
>>> from windowing.testing import WindowOperatorHarness
>>> spec = count_window(3)
>>> h = WindowOperatorHarness(spec.assigner, lambda a, b: a + b, **spec.options())
>>> for v in range(1, 8):
...     h.process_element(v, key="k")
>>> [r.value for r in h.extract_output()]  # 1+2+3, 4+5+6; 7 waits for two more
[6, 15]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from windowing.assigners.global_windows import GlobalWindows
from windowing.evictors.base import Evictor
from windowing.evictors.count import CountEvictor
from windowing.triggers.base import Trigger
from windowing.triggers.count import CountTrigger
from windowing.triggers.purging import PurgingTrigger

__all__ = ["CountWindowSpec", "count_window"]


@dataclass(frozen=True)
class CountWindowSpec:
    """The assigner, trigger and optional evictor that make up a count window.

    Use :meth:`options` as keyword arguments of ``WindowOperatorHarness`` /
    ``WindowOperator`` (``trigger=``, ``evictor=``), or set them one by one on a builder.

    Known elsewhere as: what Flink's ``countWindow`` configures on a ``WindowedStream``.

    Examples
    --------
    >>> spec = count_window(10, slide=5)
    >>> spec.assigner, spec.options()
    (GlobalWindows(), {'trigger': CountTrigger(max_count=5), 'evictor': CountEvictor(max_count=10, do_evict_after=False)})
    """  # noqa: E501

    assigner: GlobalWindows
    trigger: Trigger[Any, Any]
    evictor: Evictor[Any, Any] | None = None

    def options(self) -> dict[str, Any]:
        """``{"trigger": ..., "evictor": ...}`` for the operator / harness constructors."""
        return {"trigger": self.trigger, "evictor": self.evictor}


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"count_window: {name} must be an int, got {value!r}"
        raise ValueError(msg)
    return value


def count_window(size: int, slide: int | None = None) -> CountWindowSpec:
    """Windows of ``size`` elements per key, tumbling or (with ``slide``) sliding.

    Exactly Flink's ``KeyedStream.countWindow``:

    * tumbling, ``count_window(size)``: ``GlobalWindows()`` +
      ``PurgingTrigger(CountTrigger(size))``, no evictor: every ``size`` elements the window
      fires with those elements and is emptied;
    * sliding, ``count_window(size, slide)``: ``GlobalWindows()`` + ``CountTrigger(slide)`` +
      ``CountEvictor(size)``: every ``slide`` elements the window fires with the last ``size``
      elements (fewer at the start), and older elements are evicted for good.

    Elements are counted in arrival order per key; timestamps play no part. Global windows
    are never cleaned up: a key keeps its last (``< size``, or ``< slide`` for sliding)
    elements until more arrive, and a partial window is never emitted.

    Known elsewhere as: Flink ``countWindow(size)`` / ``countWindow(size, slide)``; Beam
    ``GlobalWindows`` + ``Repeatedly(AfterCount(size))`` (tumbling only).

    Parameters
    ----------
    size
        Elements per window. Below 1 is accepted, as by Flink (tumbling: every element fires
        alone; sliding: every element is evicted), with the ``UserWarning`` of
        :class:`~windowing.triggers.CountTrigger` / :class:`~windowing.evictors.CountEvictor`.
    slide
        Elements between firings of a sliding window (below 1: every element fires);
        ``None`` for tumbling windows.

    Returns
    -------
    CountWindowSpec
        ``assigner``, ``trigger`` and ``evictor`` (``None`` when tumbling).

    Raises
    ------
    ValueError
        If ``size`` or ``slide`` is not an int.

    Examples
    --------
    >>> count_window(100)
    CountWindowSpec(assigner=GlobalWindows(), trigger=PurgingTrigger(trigger=CountTrigger(max_count=100)), evictor=None)
    >>> spec = count_window(4, slide=2)
    >>> spec.trigger, spec.evictor
    (CountTrigger(max_count=2), CountEvictor(max_count=4, do_evict_after=False))

    Sliding windows of 4 elements every 2 (sums of ``[1, 2]``, ``[1..4]``, ``[3..6]``):

    >>> from windowing.testing import WindowOperatorHarness
    >>> h = WindowOperatorHarness(spec.assigner, lambda a, b: a + b, **spec.options())
    >>> for v in range(1, 7):
    ...     h.process_element(v, key="k")
    >>> [r.value for r in h.extract_output()]
    [3, 10, 18]
    """  # noqa: E501
    size = _count(size, "size")
    if slide is None:
        return CountWindowSpec(GlobalWindows(), PurgingTrigger(CountTrigger(size)))
    slide = _count(slide, "slide")
    return CountWindowSpec(GlobalWindows(), CountTrigger(slide), CountEvictor(size))
