"""The trigger contract: :class:`Trigger`, :class:`TriggerResult` and the trigger contexts."""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["OnMergeContext", "StatelessTrigger", "Trigger", "TriggerContext", "TriggerResult"]

T = TypeVar("T")
W = TypeVar("W")


class TriggerResult(Enum):
    """What the operator does with a window after a trigger callback.

    ``FIRE`` evaluates the window function and keeps the contents; ``PURGE`` drops the
    contents (but keeps the window's trigger state and metadata); ``FIRE_AND_PURGE`` does both.
    A ``FIRE`` on a window without contents emits nothing.

    Examples
    --------
    >>> TriggerResult.FIRE_AND_PURGE.is_fire(), TriggerResult.FIRE_AND_PURGE.is_purge()
    (True, True)
    """

    CONTINUE = (False, False)
    FIRE = (True, False)
    PURGE = (False, True)
    FIRE_AND_PURGE = (True, True)

    def is_fire(self) -> bool:
        """Whether the window function is evaluated."""
        return bool(self.value[0])

    def is_purge(self) -> bool:
        """Whether the window contents are cleared."""
        return bool(self.value[1])


class TriggerContext(Protocol):
    """What a trigger may do while handling a callback for one key and window.

    Timers and partitioned state are scoped to the current key and window. Registering a timer
    that already exists for this key, window and time is a no-op (timers are deduplicated).
    """

    def get_current_watermark(self) -> int:
        """The current event-time watermark (``MIN_TIMESTAMP`` before the first one)."""
        ...

    def get_current_processing_time(self) -> int:
        """The current processing time in epoch milliseconds."""
        ...

    def register_event_time_timer(self, time: int) -> None:
        """Call ``on_event_time(time, window, ctx)`` once the watermark reaches ``time``."""
        ...

    def register_processing_time_timer(self, time: int) -> None:
        """Call ``on_processing_time(time, window, ctx)`` once processing time reaches ``time``."""
        ...

    def delete_event_time_timer(self, time: int) -> None:
        """Delete the event-time timer of this key and window at ``time``, if any."""
        ...

    def delete_processing_time_timer(self, time: int) -> None:
        """Delete the processing-time timer of this key and window at ``time``, if any."""
        ...

    def get_partitioned_state(self, descriptor: Any) -> Any:
        """State for ``descriptor`` scoped to the current key and window."""
        ...


class OnMergeContext(TriggerContext, Protocol):
    """The context of :meth:`Trigger.on_merge`: adds merging of partitioned state."""

    def merge_partitioned_state(self, descriptor: Any) -> None:
        """Merge the state of ``descriptor`` of all merged windows into the merged window."""
        ...


class Trigger(ABC, Generic[T, W]):
    """Decides when a window is evaluated and when its contents are purged.

    The operator calls :meth:`on_element` for every element added to a window,
    :meth:`on_event_time` / :meth:`on_processing_time` when a timer registered through the
    context fires, :meth:`on_merge` when windows of a merging assigner merge, and :meth:`clear`
    when the window is removed.

    A trigger must not keep state in its fields: one trigger object serves every key and
    window and is shipped to executors. Keep state through
    ``ctx.get_partitioned_state(descriptor)``, which is scoped to the key and window and is
    checkpointed with them.

    Examples
    --------
    A trigger that fires every second element (what ``CountTrigger(2)`` does):

    >>> from windowing.state import ReducingStateDescriptor
    >>> class EverySecond(Trigger):
    ...     COUNT = ReducingStateDescriptor("count", lambda a, b: a + b)
    ...     def on_element(self, element, timestamp, window, ctx):
    ...         count = ctx.get_partitioned_state(self.COUNT)
    ...         count.add(1)
    ...         if count.get() >= 2:
    ...             count.clear()
    ...             return TriggerResult.FIRE
    ...         return TriggerResult.CONTINUE
    ...     def on_event_time(self, time, window, ctx):
    ...         return TriggerResult.CONTINUE
    ...     def on_processing_time(self, time, window, ctx):
    ...         return TriggerResult.CONTINUE
    ...     def clear(self, window, ctx):
    ...         ctx.get_partitioned_state(self.COUNT).clear()
    """

    @abstractmethod
    def on_element(
        self, element: T, timestamp: int | None, window: W, ctx: TriggerContext
    ) -> TriggerResult:
        """Called for every element added to ``window``, after it has been added."""

    @abstractmethod
    def on_event_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        """Called when an event-time timer of this window fires (watermark reached ``time``)."""

    @abstractmethod
    def on_processing_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        """Called when a processing-time timer of this window fires."""

    def can_merge(self) -> bool:
        """Whether this trigger supports merging windows (required by session assigners)."""
        return False

    def on_merge(self, window: W, ctx: OnMergeContext) -> None:
        """Called when windows merged into ``window``; re-register timers, merge state.

        Only called when :meth:`can_merge` returns ``True``.
        """
        msg = "This trigger does not support merging."
        raise NotImplementedError(msg)

    @abstractmethod
    def clear(self, window: W, ctx: TriggerContext) -> None:
        """Called when ``window`` is removed: delete its timers and partitioned state."""

    def __repr__(self) -> str:
        fields = getattr(self, "__dataclass_fields__", None)
        if fields:
            args = ", ".join(f"{name}={getattr(self, name)!r}" for name in fields)
            return f"{type(self).__name__}({args})"
        return f"{type(self).__name__}()"


class StatelessTrigger(Trigger[T, W]):
    """Base of triggers that keep no state and register no timer: by default they answer
    ``CONTINUE`` to timers, merge trivially and have nothing to clear."""

    def on_event_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: W, ctx: OnMergeContext) -> None:
        return None

    def clear(self, window: W, ctx: TriggerContext) -> None:
        return None
