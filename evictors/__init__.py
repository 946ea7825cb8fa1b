"""Evictors: remove elements from a window before and/or after the window function."""

from evictors.base import Evictor, EvictorContext
from evictors.count import CountEvictor
from evictors.delta import DeltaEvictor
from evictors.time import TimeEvictor

__all__ = ["CountEvictor", "DeltaEvictor", "Evictor", "EvictorContext", "TimeEvictor"]
