"""Evictors: remove elements from a window before and/or after the window function."""

from evictors.base import Evictor, EvictorContext

__all__ = ["Evictor", "EvictorContext"]
