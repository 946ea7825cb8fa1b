"""Delta trigger: fires when an element has moved far enough from the last fired-on one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from windowing.evictors.delta import check_delta_config
from windowing.state import ValueStateDescriptor
from windowing.triggers.base import Trigger, TriggerContext, TriggerResult

__all__ = ["DeltaTrigger"]

#: The element the trigger last fired on (the first element until it fires), wrapped in a
#: 1-tuple so that a ``None`` element is told apart from "no element yet".
LAST_ELEMENT: ValueStateDescriptor[tuple[Any]] = ValueStateDescriptor("last-element")


@dataclass(frozen=True, repr=False)
class DeltaTrigger(Trigger[Any, Any]):
    """Fires when ``delta_function(last, element) > threshold``, where ``last`` is the element
    the trigger last fired on.

    Rules (Flink's ``DeltaTrigger``): the first element of a window is stored as ``last``
    and does not fire; each later element is compared with ``last``; when the delta is
    strictly greater than ``threshold`` the trigger fires and the element becomes the new
    ``last``. Elements that do not fire leave ``last`` unchanged. Never purges; cannot merge
    (a stored element cannot be merged).

    Known elsewhere as: Flink ``DeltaTrigger.of(threshold, delta_function, serializer)``;
    Beam has no equivalent.

    Parameters
    ----------
    threshold
        Fire when the delta exceeds this number (NaN, as in Flink, never fires, with a
        ``UserWarning``).
    delta_function
        ``delta_function(old, new) -> float``: ``old`` is the last fired-on element, ``new``
        the arriving one. Must be picklable (lambdas are fine with cloudpickle).

    Examples
    --------
    Fire when the value rises more than 10 above the last firing value:

    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import GLOBAL_WINDOW
    >>> h = TriggerHarness(DeltaTrigger(10, lambda old, new: new - old))
    >>> [h.process_element(v, None, GLOBAL_WINDOW).name for v in (0, 10, 11, 15, 22)]
    ['CONTINUE', 'CONTINUE', 'FIRE', 'CONTINUE', 'FIRE']
    >>> h.clear(GLOBAL_WINDOW); h.num_state_entries()
    0
    """

    threshold: float
    delta_function: Callable[[Any, Any], float]

    def __post_init__(self) -> None:
        check_delta_config(self.threshold, self.delta_function, "DeltaTrigger")

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        last = ctx.get_partitioned_state(LAST_ELEMENT)
        stored = last.value()
        if stored is None:
            last.update((element,))
            return TriggerResult.CONTINUE
        if self.delta_function(stored[0], element) > self.threshold:
            last.update((element,))
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        ctx.get_partitioned_state(LAST_ELEMENT).clear()
