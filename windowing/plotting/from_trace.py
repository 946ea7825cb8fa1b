"""A traced harness's steps as a picture (:func:`from_trace`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from windowing.plotting.picture import (
    Pane,
    Picture,
    Record,
    Window,
    pick_key,
    row_of,
    short,
    text_of,
)
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.trace import StepKind, Trace

__all__ = ["Y_MODES", "from_trace"]

Y_MODES = ("arrival", "processing_time")


def from_trace(
    trace: Trace, key: Any, y: str, label: Callable[[Any], object] | None, time_unit: str
) -> Picture:
    """The picture of ``key`` in a harness's trace, by call order (``y="arrival"``) or by
    processing time."""
    if y not in Y_MODES:
        msg = f"plot_windows: y must be one of {Y_MODES}, got {y!r}"
        raise ValueError(msg)
    key = pick_key(key, trace.keys(), "trace")
    ys: list[float] = []
    elements = 0
    for step in trace.steps:
        if y == "processing_time":
            ys.append(float(step.processing_time))
        elif step.kind is StepKind.ELEMENT:
            ys.append(float(elements))
            elements += 1
        else:
            ys.append(elements - 0.5)
    records: list[Record] = []
    untimed = 0
    for step, at in zip(trace.steps, ys, strict=True):
        if step.kind is not StepKind.ELEMENT or step.key != key:
            continue
        if step.timestamp is None:
            untimed += 1
            continue
        text = short(step.value) if label is None else text_of(label(step.value))
        records.append(Record(step.timestamp, at, text, step.late))
    windows, unbounded = _windows_of_trace(trace, key, ys)
    row = 1.0 if y == "arrival" else row_of(ys)
    picture = Picture(
        key=key,
        records=records,
        windows=windows,
        watermark=[(at, step.watermark) for step, at in zip(trace.steps, ys, strict=True)]
        if trace.event_time
        else [],
        watermark_points=[],
        y_label="arrival (element #) →" if y == "arrival" else "processing time →",
        y_time=y == "processing_time",
        time_unit=time_unit,
        row=row,
    )
    if untimed:
        picture.notes.append(f"{untimed} element(s) without event time not drawn")
    if unbounded:
        picture.notes.append(f"{unbounded} window(s) without start and end not drawn")
    return picture


def _windows_of_trace(trace: Trace, key: Any, ys: Sequence[float]) -> tuple[list[Window], int]:
    """The key's windows with the arrival spans they held state for and their firings, and
    the number of windows without bounds (global and count windows), which are not drawn."""
    windows: dict[tuple[int, int], Window] = {}
    skipped: set[Any] = set()

    def window(w: Any) -> Window | None:
        bounds = _bounds(w)
        if bounds is None:
            skipped.add(w)
            return None
        if bounds not in windows:
            windows[bounds] = Window(*bounds)
        return windows[bounds]

    opened: dict[Any, float] = {}  # window: y where its current lifetime began
    for step, at in zip(trace.steps, ys, strict=True):
        now = set(step.windows.get(key, ()))
        for w in [w for w in opened if w not in now]:
            target = window(w)
            if target is not None:
                target.open.append((opened.pop(w), at))
            else:
                opened.pop(w)
        for w in now:
            if w not in opened:
                opened[w] = at
    end = (ys[-1] if ys else 0.0) + 0.5
    for w, began in opened.items():
        target = window(w)
        if target is not None:
            target.open.append((began, end))
    for firing in trace.firings(key):
        target = window(firing.result.window)
        if target is not None:
            text = short(firing.result.value)
            target.panes.append(Pane(firing.pane_index, firing.timing, text, ys[firing.step]))
    return sorted(windows.values(), key=lambda w: (w.start, w.end)), len(skipped)


def _bounds(window: Any) -> tuple[int, int] | None:
    start, end = getattr(window, "start", None), getattr(window, "end", None)
    if isinstance(start, int) and isinstance(end, int) and MIN_TIMESTAMP < start < end:
        return start, min(end, MAX_TIMESTAMP)
    return None
