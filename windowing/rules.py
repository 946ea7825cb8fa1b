"""Flink's window rules, defined once (``WindowOperator.java``, Flink 2.3).

Times are ``int`` milliseconds on the operator's clock; ``max_timestamp`` is a window's last
instant (``end - 1`` for a :class:`~windowing.windows.TimeWindow`).

* **Cleanup time**: ``max_timestamp + allowed_lateness`` in event time, saturating at
  ``MAX_TIMESTAMP`` where the sum overflows; ``max_timestamp`` in processing time. A window's
  state is removed when a timer fires for it at exactly its cleanup time. A window whose
  cleanup time is ``MAX_TIMESTAMP`` gets no cleanup timer ("end of time"): its state stays,
  unless one of its trigger's timers is at ``MAX_TIMESTAMP`` (``EventTimeTrigger``'s is when
  the window's end is clamped to the end of time).
* **Late window**: in event time, its cleanup time is ``<=`` the watermark; its elements are
  not added (they go to the late output when every window of the element is late and the
  element itself is late).
* **Late element**: ``timestamp + allowed_lateness <= watermark`` in Java's ``long``
  arithmetic (the sum wraps near ``MAX_TIMESTAMP``); an element without a timestamp counts
  as ``MIN_TIMESTAMP``.

Examples
--------
>>> cleanup_time(9, 5)
14
>>> cleanup_time(MAX_TIMESTAMP - 1, 5) == MAX_TIMESTAMP
True
>>> is_window_late(9, 5, 14), is_element_late(9, 5, 14)
(True, True)
>>> keeps_state(MAX_TIMESTAMP - 10, MAX_TIMESTAMP, MAX_TIMESTAMP)  # saturated: no cleanup
True
>>> keeps_state(MAX_TIMESTAMP, MAX_TIMESTAMP, MAX_TIMESTAMP)  # its trigger timer cleans up
False
"""

from __future__ import annotations

from typing import Any

import numpy as np

from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP, java_add

__all__ = [
    "cleanup_time",
    "cleanup_times",
    "has_cleanup_timer",
    "is_element_late",
    "is_window_late",
    "keeps_state",
    "windows_firing_on_arrival",
    "windows_keeping_state",
    "windows_late",
]

#: An array of ``int64`` milliseconds (window ends, event times).
Times = np.ndarray[Any, np.dtype[np.int64]]
#: An array of booleans, one per time.
Mask = np.ndarray[Any, np.dtype[np.bool_]]


def cleanup_time(max_timestamp: int, allowed_lateness: int, *, event_time: bool = True) -> int:
    """When a window ending at ``max_timestamp`` is removed (saturating at the end of time)."""
    if not event_time:
        return max_timestamp
    t = max_timestamp + allowed_lateness
    return t if t < MAX_TIMESTAMP else MAX_TIMESTAMP


def has_cleanup_timer(cleanup: int) -> bool:
    """Whether a cleanup timer is registered at ``cleanup`` (none at the end of time)."""
    return cleanup != MAX_TIMESTAMP


def keeps_state(max_timestamp: int, cleanup: int, watermark: int) -> bool:
    """Whether a window ending at ``max_timestamp`` with cleanup time ``cleanup`` still
    holds its state at ``watermark``, with ``EventTimeTrigger`` (one timer, at
    ``max_timestamp``): no timer has fired at its cleanup time."""
    return cleanup > watermark or (cleanup == MAX_TIMESTAMP and max_timestamp != MAX_TIMESTAMP)


def is_window_late(max_timestamp: int, allowed_lateness: int, watermark: int) -> bool:
    """Whether an event-time window ending at ``max_timestamp`` is past its cleanup time."""
    return cleanup_time(max_timestamp, allowed_lateness) <= watermark


def is_element_late(timestamp: int | None, allowed_lateness: int, watermark: int) -> bool:
    """Whether an event-time element is late (Java ``long`` sum; ``None`` is
    ``MIN_TIMESTAMP``)."""
    ts = MIN_TIMESTAMP if timestamp is None else timestamp
    return java_add(ts, allowed_lateness) <= watermark


# ---------------------------------------------------------------------------- whole columns
# The same rules on arrays of int64 (a runtime that computes windows on whole columns): equal,
# element by element, to the scalar forms above (tests/property/test_vector_rules.py).


def cleanup_times(max_timestamps: Times, allowed_lateness: int) -> Times:
    """:func:`cleanup_time` (event time) of each window end, saturating at the end of time."""
    return np.minimum(max_timestamps, MAX_TIMESTAMP - allowed_lateness) + allowed_lateness


def windows_late(max_timestamps: Times, allowed_lateness: int, watermark: int) -> Mask:
    """:func:`is_window_late` of each window end: past its cleanup time at ``watermark``."""
    return cleanup_times(max_timestamps, allowed_lateness) <= watermark


def windows_keeping_state(max_timestamps: Times, allowed_lateness: int, watermark: int) -> Mask:
    """:func:`keeps_state` of each window end with its cleanup time, ``EventTimeTrigger``."""
    cleanup = cleanup_times(max_timestamps, allowed_lateness)
    saturated: Mask = (cleanup == MAX_TIMESTAMP) & (max_timestamps != MAX_TIMESTAMP)
    kept: Mask = (cleanup > watermark) | saturated
    return kept


def windows_firing_on_arrival(max_timestamps: Times, allowed_lateness: int, watermark: int) -> Mask:
    """Windows an element added at ``watermark`` fires at once (``EventTimeTrigger``): ended
    (``max_timestamp <= watermark``) but not past their cleanup time."""
    ended: Mask = max_timestamps <= watermark
    firing: Mask = ended & ~windows_late(max_timestamps, allowed_lateness, watermark)
    return firing
