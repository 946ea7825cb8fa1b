"""What the operator emits: window results, late elements, and output tags."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["LateElement", "OutputTag", "WindowResult"]


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


class WindowResult(NamedTuple):
    """One output of a window evaluation; ``timestamp`` is ``window.max_timestamp()``."""

    key: Any
    window: Any
    value: Any
    timestamp: int


class LateElement(NamedTuple):
    """An input element that was added to no window because it was late.

    ``watermark`` is the operator's watermark when the element arrived.
    """

    key: Any
    value: Any
    timestamp: int | None
    watermark: int
