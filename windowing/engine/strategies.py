"""Which strategy object runs a plan: one class per :class:`~windowing.plan.Strategy`, chosen
here (the planner decides the strategy, :func:`~windowing.plan.plan_operator`)."""

from __future__ import annotations

from typing import Any

from windowing.assigners.base import WindowAssigner
from windowing.assigners.session import EventTimeSessionWindows
from windowing.assigners.sliding_distinct import SlidingDistinctAssigner
from windowing.engine.aligned import AlignedStrategy
from windowing.engine.generic import GenericStrategy
from windowing.engine.panes import PanesStrategy
from windowing.engine.sessions import SessionStrategy
from windowing.engine.strategy import Engine, WindowStrategy
from windowing.engine.timeline import (
    DerivedTimelineStrategy,
    KafkaSlidingStrategy,
    LazyTimelineStrategy,
    TimelineStrategy,
)
from windowing.evictors.base import Evictor
from windowing.plan import Strategy, aligned_shape
from windowing.triggers.base import Trigger

__all__ = ["make_strategy"]

#: The strategy of each plan of KIP-450 windows.
_TIMELINES: dict[Strategy, type[KafkaSlidingStrategy | TimelineStrategy]] = {
    Strategy.KAFKA_SLIDING: KafkaSlidingStrategy,
    Strategy.TIMELINE: TimelineStrategy,
    Strategy.TIMELINE_LAZY: LazyTimelineStrategy,
    Strategy.TIMELINE_DERIVED: DerivedTimelineStrategy,
}


def make_strategy(
    engine: Engine,
    assigner: WindowAssigner[Any, Any],
    trigger: Trigger[Any, Any],
    evictor: Evictor[Any, Any] | None,
) -> WindowStrategy:
    """The strategy object of ``engine``'s plan."""
    strategy = engine.job.plan.strategy
    shape = aligned_shape(assigner, trigger, evictor)
    if strategy is Strategy.PANES:
        assert shape is not None
        return PanesStrategy(engine, shape)
    if strategy is Strategy.ALIGNED:
        assert shape is not None
        return AlignedStrategy(engine, shape)
    if strategy is Strategy.SESSIONS:
        assert isinstance(assigner, EventTimeSessionWindows)
        return SessionStrategy(engine, assigner.gap)
    if isinstance(assigner, SlidingDistinctAssigner):
        return _TIMELINES[strategy](engine, assigner.size)
    return GenericStrategy(engine)
