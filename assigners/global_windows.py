"""Global windows: one window per key, never ending, that fires only by a custom trigger."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from windowing.assigners.base import WindowAssigner, WindowAssignerContext
from windowing.triggers.base import Trigger
from windowing.triggers.never import NeverTrigger
from windowing.windows import GLOBAL_WINDOW, GlobalWindow

__all__ = ["GlobalWindows"]


@dataclass(frozen=True, repr=False)
class GlobalWindows(WindowAssigner[Any, GlobalWindow]):
    """Assigns every element of a key to the single :data:`~windowing.windows.GLOBAL_WINDOW`.

    The default trigger never fires, so set one (e.g. ``CountTrigger``). Global windows are
    never late and never cleaned up (their end is ``MAX_TIMESTAMP``); like Flink, the assigner
    reports ``is_event_time() == False``.

    Known elsewhere as: Flink ``GlobalWindows.create()``; Beam ``GlobalWindows``.

    Examples
    --------
    >>> GlobalWindows().assign_windows("x", 5, None)
    (GlobalWindow(),)
    """

    def assign_windows(
        self, element: Any, timestamp: int | None, context: WindowAssignerContext
    ) -> Collection[GlobalWindow]:
        return (GLOBAL_WINDOW,)

    def get_default_trigger(self) -> Trigger[Any, GlobalWindow]:
        return NeverTrigger()

    def is_event_time(self) -> bool:
        return False
