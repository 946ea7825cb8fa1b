"""Moved to :mod:`windowing.engine.panes`; kept so that key states pickled by earlier versions
(streaming checkpoints, snapshots) still load."""

from windowing.engine.panes import SlicedHopping, Slices

__all__ = ["SlicedHopping", "Slices"]
