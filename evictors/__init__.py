"""Evictors: remove elements from a window before and/or after the window function."""

if __name__ == "evictors":  # the top-level name of a source checkout: windowing.evictors itself
    from windowing._aliases import alias

    alias(__name__)

from windowing.evictors.base import Evictor, EvictorContext
from windowing.evictors.count import CountEvictor
from windowing.evictors.delta import DeltaEvictor
from windowing.evictors.time import TimeEvictor
from windowing.evictors.vectorized import VectorizedEvictor, WindowRows

__all__ = [
    "CountEvictor",
    "DeltaEvictor",
    "Evictor",
    "EvictorContext",
    "TimeEvictor",
    "VectorizedEvictor",
    "WindowRows",
]
