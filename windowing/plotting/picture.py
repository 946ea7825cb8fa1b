"""The picture :func:`~windowing.plotting.plot_windows` draws, whatever it was read from: the
records, the windows with their lifetimes and firings, the watermark; and small helpers the
readers share."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ANY_KEY",
    "Pane",
    "Picture",
    "Record",
    "Window",
    "pick_key",
    "row_of",
    "short",
    "some",
    "text_of",
]

#: ``key=`` left out.
ANY_KEY: Any = object()


@dataclass(frozen=True)
class Record:
    """A record at its event time and arrival, with its label; ``late``: added to no window."""

    time: int
    y: float | None  # None: arrival unknown (drawn on the windows panel only)
    label: str | None
    late: bool


@dataclass(frozen=True)
class Pane:
    """One firing of a window: its pane number, timing name and result's label."""

    index: int
    timing: str | None  # None: unknown (a table without the timing column)
    label: str | None
    y: float | None  # when it fired (a trace only)


@dataclass
class Window:
    """A window ``[start, end)``, its firings and the arrival spans it held state for."""

    start: int
    end: int
    panes: list[Pane] = field(default_factory=list)
    open: list[tuple[float, float]] = field(default_factory=list)  # (y from, y to)


@dataclass
class Picture:
    """Everything drawn for one key; ``y`` values are arrivals (or processing times)."""

    key: Any
    records: list[Record]
    windows: list[Window]
    watermark: list[tuple[float, int]]  # (y, watermark from then on), in order
    watermark_points: list[tuple[float, int]]  # single known watermarks (late rows)
    y_label: str
    y_time: bool  # y is a time (processing time, or a timestamp arrival column)
    time_unit: str
    row: float  # the height of one arrival step on the y axis
    notes: list[str] = field(default_factory=list)


def pick_key(key: Any, keys: Sequence[Any], what: str) -> Any:
    """``key``, checked against the ``keys`` found in the ``what`` (the only one if left out)."""
    if key is ANY_KEY:
        if len(keys) == 1:
            return keys[0]
        msg = f"plot_windows: key= is needed, the {what} has {len(keys)} keys: {some(keys)}"
        raise ValueError(msg)
    if key not in keys:
        msg = f"plot_windows: key={key!r} is not in the {what}; its keys: {some(keys)}"
        raise ValueError(msg)
    return key


def some(values: Sequence[Any], n: int = 10) -> str:
    """The first ``n`` values, for an error message."""
    shown = ", ".join(repr(v) for v in values[:n])
    return f"[{shown}{', ...' if len(values) > n else ''}]"


def short(value: Any, width: int = 14) -> str | None:
    """A label for a plain value (numbers, strings), cut at ``width``; ``None`` for others."""
    if value is None:
        return None
    if isinstance(value, float):
        text = f"{value:g}"
    elif isinstance(value, str | int | bool):
        text = str(value)
    else:
        return None
    return text if len(text) <= width else text[: width - 1] + "…"


def text_of(value: object) -> str | None:
    """A user label function's result as text."""
    return None if value is None else str(value)


def row_of(ys: Sequence[float]) -> float:
    """The usual distance between two arrivals (at least 1% of the whole span)."""
    distinct = sorted(set(ys))
    gaps = sorted(b - a for a, b in itertools.pairwise(distinct))
    if not gaps:
        return 1.0
    return max(gaps[len(gaps) // 2], (distinct[-1] - distinct[0]) / 100)
