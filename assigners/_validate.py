"""Argument checks shared by the built-in assigners."""

from __future__ import annotations

from windowing.time import Duration, to_millis


def positive(value: Duration, name: str, owner: str) -> int:
    ms = to_millis(value, name)
    if ms <= 0:
        msg = f"{owner}: {name} must be > 0, got {value!r}"
        raise ValueError(msg)
    return ms


def offset_within(value: Duration, bound: int, bound_name: str, owner: str) -> int:
    ms = to_millis(value, "offset")
    if abs(ms) >= bound:
        msg = f"{owner}: abs(offset) must be < {bound_name} ({bound} ms), got offset={value!r}"
        raise ValueError(msg)
    return ms


def require_timestamp(timestamp: int | None, owner: str) -> int:
    if timestamp is None:
        msg = (
            f"{owner}: element has no timestamp; event-time windows need an event-time column "
            "(or use a processing-time assigner)"
        )
        raise ValueError(msg)
    return timestamp
