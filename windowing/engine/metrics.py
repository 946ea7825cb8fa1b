"""The counters an operator keeps for its user."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["NullResult", "OperatorMetrics"]


@dataclass(frozen=True)
class NullResult:
    """A firing whose incremental result was ``None``: the window, and its key."""

    key: Any
    window: Any


@dataclass
class OperatorMetrics:
    """Counters the user can read; together with the outputs they account for every element.

    Attributes
    ----------
    num_elements
        Elements processed.
    num_late_records_dropped
        Late elements added to no window, with no late-data side output configured
        (Flink ``numLateRecordsDropped``).
    num_late_records_side_output
        Late elements added to no window and emitted to the late-data side output.
    num_records_in_no_window
        Elements added to no window although not late (the assigner returned no window, or
        only windows already closed); Flink drops these silently.
    num_windows_fired
        Window evaluations that had contents (each may emit zero or more results).
    num_null_results
        Firings of a window with contents whose incremental result (a reduce, or
        ``AggregateFunction.get_result``) was ``None``: as in Flink, they emit nothing (and
        are not in ``num_windows_fired``).
    num_orphaned_state_windows
        Merging windows only: times a new window equal to an in-flight merged window was
        mapped to itself, as Flink's ``MergingWindowSet`` does, so that the elements in its
        former state window are no longer reached (Flink keeps them unreachable; so does
        this operator, and counts it here). Only possible with dynamic session gaps.
    first_null_result
        The first firing counted in ``num_null_results`` (its key and window), or ``None``:
        what a :class:`~windowing.errors.NullResultWarning` names.
    """

    num_elements: int = 0
    num_late_records_dropped: int = 0
    num_late_records_side_output: int = 0
    num_records_in_no_window: int = 0
    num_windows_fired: int = 0
    num_null_results: int = 0
    num_orphaned_state_windows: int = 0
    first_null_result: NullResult | None = None
