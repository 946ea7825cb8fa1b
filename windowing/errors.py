"""What a job does when a user function raises: fail (Flink's default), or route the failing
element or firing to a dead-letter output and go on (Kafka Streams' processing-exception
handler with a dead-letter queue, KIP-1033 / KIP-1034).

Examples
--------
>>> ErrorPolicy.of("dead_letter")
<ErrorPolicy.DEAD_LETTER: 'dead_letter'>
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

__all__ = ["DeadLetter", "ErrorPhase", "ErrorPolicy", "EventTimeUnitWarning"]


class ErrorPolicy(enum.Enum):
    """What an error raised by user code does to the job."""

    FAIL = "fail"
    """The job fails with the error, which names the key, window and element (Flink)."""
    DEAD_LETTER = "dead_letter"
    """The failing element or firing goes to the dead-letter output, the job goes on."""

    @classmethod
    def of(cls, value: ErrorPolicy | str) -> ErrorPolicy:
        """``value`` as a policy; a ``ValueError`` naming it otherwise."""
        if isinstance(value, ErrorPolicy):
            return value
        for policy in cls:
            if value == policy.value:
                return policy
        names = ", ".join(repr(p.value) for p in cls)
        msg = f"on_error must be one of {names}, got {value!r}"
        raise ValueError(msg)


class ErrorPhase(enum.Enum):
    """Where a dead-lettered error was raised."""

    ELEMENT = "element"
    """Adding one element: the assigner, the trigger's ``on_element`` / ``on_merge``, an
    incremental reduce or aggregate. The element is skipped: every window goes on as if it
    had never arrived (its event time still moved the watermark)."""
    WINDOW = "window"
    """Firing a window: the window function, the evictor, the trigger's timer methods or
    ``clear``. The firing emits nothing; the window's state goes on as the trigger said (a
    trigger method that raised counts as ``CONTINUE``)."""
    RESULT = "result"
    """Writing a result as a row of the output schema (a value of the wrong type, an int
    beyond ``bigint``). That result row is left out."""


@dataclass(frozen=True)
class DeadLetter:
    """One error routed to the dead-letter output.

    ``value`` and ``timestamp`` are the element's (``ELEMENT``); ``window`` the window's
    (``WINDOW``, ``RESULT``); ``error_class`` and ``error_message`` the exception's class
    name and message (without notes, which may show values).
    """

    key: Any
    phase: ErrorPhase
    error_class: str
    error_message: str
    window: Any = None
    value: Any = None
    timestamp: int | None = None

    @classmethod
    def of(
        cls,
        exc: BaseException,
        key: Any,
        phase: ErrorPhase,
        *,
        window: Any = None,
        value: Any = None,
        timestamp: int | None = None,
    ) -> DeadLetter:
        """The dead letter of ``exc``."""
        return cls(key, phase, type(exc).__qualname__, str(exc), window, value, timestamp)


class EventTimeUnitWarning(UserWarning):
    """An integral event-time column read as epoch milliseconds (the default) holds values
    that look like another unit: epoch seconds, microseconds or nanoseconds
    (:func:`windowing.time.suspected_unit`). Pass ``event_time_unit`` to ``from_dataframe``:
    the column's unit, or ``"ms"`` to keep milliseconds, which also silences the warning.

    Example::

        import warnings
        from windowing.errors import EventTimeUnitWarning

        warnings.simplefilter("error", EventTimeUnitWarning)  # make the check fail the build
    """
