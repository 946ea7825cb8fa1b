"""What the operator emits: window results, late elements, and output tags."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["LateElement", "OutputTag", "PaneInfo", "Timing", "WindowResult"]


@dataclass(frozen=True)
class OutputTag:
    """Names a side output (late data, or a process function's extra outputs).

    Known elsewhere as: Flink ``OutputTag``.

    Examples
    --------
    >>> OutputTag("late-data")
    OutputTag(name='late-data')
    """

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            msg = f"OutputTag name must be a non-empty str, got {self.name!r}"
            raise ValueError(msg)


class Timing(enum.Enum):
    """When a window fired, relative to its end on the window's clock (the watermark for
    event-time windows, the processing time for processing-time windows).

    Known elsewhere as: Beam ``PaneInfo.Timing``. A window's firings go ``EARLY* ON_TIME?
    LATE*``.
    """

    EARLY = "EARLY"
    """Before the clock reached the window's max timestamp (e.g. a ``CountTrigger`` firing)."""
    ON_TIME = "ON_TIME"
    """The first firing once the clock passed the window's max timestamp, when it passed it
    (the end-of-window timer of ``EventTimeTrigger``)."""
    LATE = "LATE"
    """Any firing after an ``ON_TIME`` or ``LATE`` one, or once the clock had already passed
    the window's max timestamp before the step that fired it (a late element within the
    allowed lateness)."""


@dataclass(frozen=True, slots=True)
class PaneInfo:
    """Which firing of its window a result is: ``index`` counts the window's firings (0 for
    the first), ``timing`` says when it fired (:class:`Timing`).

    Known elsewhere as: Beam ``PaneInfo`` (``index``, ``timing``).

    Examples
    --------
    >>> PaneInfo(0, Timing.ON_TIME)
    PaneInfo(index=0, timing=<Timing.ON_TIME: 'ON_TIME'>)
    """

    index: int
    timing: Timing


class WindowResult(NamedTuple):
    """One output of a window evaluation; ``timestamp`` is ``window.max_timestamp()``;
    ``pane`` says which firing of the window it is (an operator built with
    ``pane_info=True``), else ``None``."""

    key: Any
    window: Any
    value: Any
    timestamp: int
    pane: PaneInfo | None = None

    def __repr__(self) -> str:
        pane = "" if self.pane is None else f", pane={self.pane!r}"
        return (
            f"WindowResult(key={self.key!r}, window={self.window!r}, value={self.value!r}, "
            f"timestamp={self.timestamp!r}{pane})"
        )


class LateElement(NamedTuple):
    """An input element that was added to no window because it was late.

    ``watermark`` is the operator's watermark when the element arrived.
    """

    key: Any
    value: Any
    timestamp: int | None
    watermark: int
