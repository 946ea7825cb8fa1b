"""Delta evictor: evicts elements too far, by a delta function, from the last element."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from windowing.evictors.base import OneSidedEvictor, check_after_flag
from windowing.windows import TimestampedValue

__all__ = ["DeltaEvictor", "check_delta_config"]


def check_delta_config(threshold: Any, delta_function: Any, owner: str) -> None:
    """Validation shared with :class:`~windowing.triggers.DeltaTrigger`."""
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        msg = f"{owner}: threshold must be a number, got {threshold!r}"
        raise ValueError(msg)
    if math.isnan(threshold):
        msg = f"{owner}: threshold is NaN: no delta reaches it (Flink accepts it too)"
        warnings.warn(msg, UserWarning, stacklevel=4)
    if not callable(delta_function):
        msg = (
            f"{owner}: delta_function must be a callable (old, new) -> float, "
            f"got {delta_function!r}"
        )
        raise ValueError(msg)


@dataclass(frozen=True, repr=False)
class DeltaEvictor(OneSidedEvictor[Any, Any]):
    """Evicts every element whose delta to the *last* element of the buffer reaches
    ``threshold``.

    Rule: with ``last`` the most recently arrived element, an element ``e`` is evicted when
    ``delta_function(e.value, last.value) >= threshold`` and kept when the delta is
    ``< threshold``. Every element is tested (not only a prefix), as in current Flink. An
    empty buffer stays empty.

    Known elsewhere as: Flink ``DeltaEvictor.of(threshold, delta_function, do_evict_after)``
    (``DeltaFunction.getDelta(old, new)``); Beam has no evictors.

    Parameters
    ----------
    threshold
        The delta at which an element is evicted (a number; NaN, as in Flink, evicts
        nothing, with a ``UserWarning``).
    delta_function
        ``delta_function(old, new) -> float``, called with an element's value and the last
        element's value. It must be picklable (lambdas are fine with cloudpickle).
    do_evict_after
        Evict after the window function instead of before it.

    Examples
    --------
    Keep the values that are less than 2 below the last value (5):

    >>> from windowing.windows import TimestampedValue as TV
    >>> buffer = [TV(1, 1), TV(4, 2), TV(3, 3), TV(5, 4)]
    >>> evictor = DeltaEvictor(2, lambda old, new: new - old)
    >>> [e.value for e in evictor.evict_before(buffer, None, None)]
    [4, 5]
    """

    threshold: float
    delta_function: Callable[[Any, Any], float]
    do_evict_after: bool = False

    def __post_init__(self) -> None:
        check_delta_config(self.threshold, self.delta_function, "DeltaEvictor")
        check_after_flag(self.do_evict_after, "DeltaEvictor")

    def evict(self, elements: Sequence[TimestampedValue[Any]]) -> Sequence[TimestampedValue[Any]]:
        if not elements:
            return elements
        last = elements[-1].value
        delta, threshold = self.delta_function, self.threshold
        # Flink removes when delta >= threshold: a NaN delta (or threshold) keeps the element
        return [e for e in elements if not delta(e.value, last) >= threshold]
