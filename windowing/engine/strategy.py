"""The strategy interface.

A :class:`WindowStrategy` runs one job's windows for the keys of one operator: it takes
elements (one, or in bulk), fires a key's timers up to a time, and reports what a key keeps.
The operator (:class:`~windowing.operator.WindowOperator`) picks one strategy from its plan
(:mod:`windowing.plan`, :func:`~windowing.engine.strategies.make_strategy`) and hands it the
:class:`~windowing.engine.services.Engine`, the services object every strategy shares (the job,
the clocks, the outputs, evaluation, late accounting, cleanup timers, scheduling), never the
operator. A strategy touches no other strategy's fields, and keeps its per-key data in the
key's :class:`~windowing.engine.keystate.KeyState`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from windowing.engine.exchange import KafkaWindows, ReducedPanes
from windowing.engine.keystate import KeyState
from windowing.engine.services import Engine

__all__ = ["Element", "Engine", "WindowStrategy"]

#: ``(value, timestamp, key)``
Element = tuple[Any, "int | None", Any]


class WindowStrategy(abc.ABC):
    """How an operator runs its job; every strategy gives the generic one's results."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @abc.abstractmethod
    def add_element(self, key: Any, ks: KeyState, value: Any, timestamp: int | None) -> bool:
        """Add one element of ``key`` (Flink ``processElement``, without the element count and
        the late accounting); returns whether it was added to any window."""

    def process(self, elements: Iterable[Element], states: dict[Any, KeyState]) -> bool:
        """Elements in order, all at the current clocks, for the in-memory key states
        ``states``, in one loop if this strategy has one: same as the operator's
        ``process_element`` for each (returns ``False`` otherwise: the operator calls it)."""
        return False

    def process_to_end(self, key: Any, elements: Sequence[Element]) -> bool:
        """A key's whole bounded input with no watermark yet, in one pass if this strategy has
        one (returns ``False`` otherwise: the operator processes the elements as usual)."""
        return False

    @abc.abstractmethod
    def fire_event_timers(self, key: Any, ks: KeyState, upto: int) -> None:
        """Fire the event-time timers of ``key`` up to ``upto``, in time order."""

    @abc.abstractmethod
    def fire_processing_timers(self, key: Any, ks: KeyState, upto: int) -> None:
        """Fire the processing-time timers of ``key`` up to ``upto``, in time order."""

    def event_timer_firing(self) -> Callable[[Any, KeyState, int], None]:
        """The function that fires a key's event-time timers, picked once per watermark
        (:meth:`fire_event_timers`, or a specialised form of it)."""
        return self.fire_event_timers

    def drain_event_time(self, upto: int) -> bool:
        """Fire every key's event-time timers up to ``upto`` if this strategy orders keys
        itself; ``False`` lets the operator's scheduler visit the due keys."""
        return False

    def num_event_time_timers(self, ks: KeyState) -> int:
        """Live event-time timers of a key, as Flink's per-window layout would hold them."""
        return len(ks.evt_timers)

    def num_state_entries(self, ks: KeyState) -> int:
        """Live state entries of a key, as Flink's per-window layout would hold them."""
        return ks.num_state_entries()

    def live_windows(self, ks: KeyState) -> list[Any] | None:
        """The key's windows with contents when they are not ``ks.contents``' keys."""
        return None

    def export_panes(self, ks: KeyState) -> ReducedPanes | None:
        """The key's windows as pane partials, for a strategy that keeps panes and a key
        state holding nothing else; ``None`` otherwise."""
        return None

    def import_panes(self, ks: KeyState, reduced: ReducedPanes) -> bool:
        """Put pane partials into the new key state ``ks``; ``False`` for a strategy that
        keeps no panes."""
        return False

    def window_timers(self, ks: KeyState, window: Any) -> tuple[int, ...] | None:
        """The event-time timers of ``window`` as Flink's per-window layout would hold them,
        for a strategy whose key state keeps other timers; ``None``: the key state's own."""
        return None

    def export_kafka(self, ks: KeyState) -> KafkaWindows | None:
        """The key's KIP-450 windows as Kafka's store holds them, for a strategy that runs
        Kafka's algorithm and a key state holding nothing else; ``None`` otherwise."""
        return None

    def import_kafka(self, ks: KeyState, windows: KafkaWindows) -> bool:
        """Put Kafka's store of KIP-450 windows into the new key state ``ks``; ``False`` for
        a strategy that does not run Kafka's algorithm."""
        return False

    def rows_in(self, ks: KeyState, window: Any, namespace: Any) -> int | None:
        """The rows ``window`` (its contents in ``namespace``) took in since its contents
        were created (0 without contents), when the engine counts rows
        (:attr:`Engine.count_rows`); ``None`` when not counted."""
        return None
