"""What a job does when a user function raises: fail (Flink's default), or route the failing
element or firing to a dead-letter output and go on (Kafka Streams' processing-exception
handler with a dead-letter queue, KIP-1033 / KIP-1034); and what it says about a window whose
incremental result is ``None`` (:class:`NullResultWarning`), which Flink drops.

Examples
--------
>>> ErrorPolicy.of("dead_letter")
<ErrorPolicy.DEAD_LETTER: 'dead_letter'>
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from windowing.time import instant_text

__all__ = [
    "DeadLetter",
    "ErrorPhase",
    "ErrorPolicy",
    "EventTimeUnitWarning",
    "NullResultWarning",
    "null_result_message",
    "window_text",
]


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
    NULL_RESULT = "null_result"
    """Not an error: a firing whose incremental result (a reduce, ``AggregateFunction.
    get_result``, a fold) was ``None``. The window emits nothing, as in Flink, and is counted
    in ``num_null_results``; with ``on_error("dead_letter")`` it is also a dead letter, so
    that its key and window can be read."""


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

    @classmethod
    def null_result(cls, key: Any, window: Any, function: str) -> DeadLetter:
        """The dead letter of a firing of ``window`` whose incremental result, given by
        ``function`` (its name, e.g. ``"AggregateFunction Average.get_result"``), was
        ``None`` (phase ``NULL_RESULT``, class :class:`NullResultWarning`)."""
        message = f"{function} returned None: the window is empty and emits nothing (Flink)"
        return cls(key, ErrorPhase.NULL_RESULT, NullResultWarning.__name__, message, window)


class NullResultWarning(UserWarning):
    """A window's incremental result (a reduce, ``AggregateFunction.get_result``, a fold)
    was ``None``: as in Flink, the window counts as empty and emits nothing. Warned once per
    job, naming the first such window and its key; every one is counted in the metrics'
    ``num_null_results``, and with ``on_error("dead_letter")`` each is a dead letter
    (``error_phase`` ``"null_result"``).

    Examples
    --------
    >>> import warnings
    >>> from windowing.testing import WindowOperatorHarness
    >>> from windowing.assigners import TumblingEventTimeWindows
    >>> h = WindowOperatorHarness(TumblingEventTimeWindows(10), lambda a, b: None)
    >>> h.process_elements([(1, 1, "k"), (2, 2, "k")])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     h.process_watermark(20)
    >>> caught[0].category.__name__, h.metrics.num_null_results
    ('NullResultWarning', 1)
    """


def window_text(window: Any) -> str:
    """A window for a message: a time window's bounds as epoch milliseconds and UTC
    instants (:func:`~windowing.time.instant_text`), any other window as its ``repr``.

    Examples
    --------
    >>> from windowing.windows import TimeWindow
    >>> window_text(TimeWindow(0, 60_000))
    '[0 (1970-01-01T00:00:00.000Z), 60000 (1970-01-01T00:01:00.000Z))'
    """
    start, end = getattr(window, "start", None), getattr(window, "end", None)
    if isinstance(start, int) and isinstance(end, int):
        return f"[{instant_text(start)}, {instant_text(end)})"
    return repr(window)


def null_result_message(
    function: str, key: str, window: str, count: int, *, dead_letter: bool
) -> str:
    """The text of a :class:`NullResultWarning`: ``function`` (the call that gave ``None``)
    gave it for ``window`` of ``key`` (both as text), ``count`` windows so far, and where
    the windows can be read (the dead letters with ``dead_letter``)."""
    windows = "window" if count == 1 else "windows"
    where = (
        "each is in the dead letters with error_phase 'null_result', its key and window"
        if dead_letter
        else "on_error('dead_letter') writes each to the dead letters (error_phase "
        "'null_result') with its key and window"
    )
    return (
        f"{function} returned None for window {window} of key {key}: as in Flink, the "
        f"window counts as empty and emits nothing. {count} {windows} so far (every one is "
        f"counted in the metrics' num_null_results); {where}."
    )


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
