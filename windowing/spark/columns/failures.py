"""Errors of user code in the Spark runtimes: notes that name where an error was raised
without showing row values (unless asked), and the dead-letter output
(``WindowedStream.on_error("dead_letter")``, ``windowing.errors``).

A runtime replays a key's call; when adding an element raises, the call starts over from the
key's state before the call without that element (:class:`ElementFailedError`), so every window
goes on exactly as if the element had never arrived. Errors while firing a window are caught
by the operator itself (``WindowOperator.dead_letter``); a result that cannot be written as
the output schema is found by :func:`split_results`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import pyarrow as pa

from windowing.engine.notes import END_OF_INPUT_NOTE, EVALUATING
from windowing.errors import DeadLetter, ErrorPhase
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

__all__ = [
    "DEAD_LETTER_COLUMNS",
    "SHOW_VALUES_HINT",
    "DeadRows",
    "ElementFailedError",
    "element_failure",
    "failing_window",
    "note_element_error",
    "raise_element_error",
    "split_results",
]

#: The columns the dead-letter output adds to the input columns.
DEAD_LETTER_COLUMNS = ("error_phase", "error_class", "error_message", "window_start", "window_end")

#: How to see row values in error notes.
SHOW_VALUES_HINT = "row values hidden; on_error(..., show_values=True) shows them"


def _describe(value: Any, show_values: bool) -> str:
    return repr(value) if show_values else f"<{SHOW_VALUES_HINT}>"


def _raised_by_operator(exc: BaseException) -> bool:
    """Whether ``exc`` was raised evaluating a window or at the end of input (the operator
    noted it), not by adding one element."""
    notes = getattr(exc, "__notes__", ())
    return any(n.startswith(EVALUATING) or n == END_OF_INPUT_NOTE for n in notes)


def note_element_error(
    exc: BaseException,
    failed: int,
    elements: Sequence[tuple[Any, Any, Any]],
    key: Any,
    where: str,
    *,
    show_values: bool = False,
) -> None:
    """Name where ``exc`` was raised: the element ``elements[failed]`` (operators count each
    element in ``metrics.num_elements`` as it starts, so ``failed`` is the count since the
    call began, minus one) by its event time, and its values only with ``show_values``; or,
    for an error while evaluating a window or at the end of input (already noted by the
    operator), the key and the runtime ``where``."""
    if _raised_by_operator(exc):
        exc.add_note(f"of key {key!r} in {where}")
    elif 0 <= failed < len(elements):
        value, t, _ = elements[failed]
        exc.add_note(
            f"while processing the element {_describe(value, show_values)} (event time {t}) "
            f"of key {key!r} in {where}"
        )


class ElementFailedError(Exception):
    """Adding the element at ``row`` (an index of the call's rows) raised: the runtime starts
    the key's call over without it."""

    def __init__(self, row: int, letter: DeadLetter) -> None:
        super().__init__(row, letter)
        self.row = row
        self.letter = letter


def element_failure(
    exc: Exception,
    failed: int,
    pending: Sequence[tuple[Any, Any, Any]],
    rows: Sequence[int],
    key: Any,
) -> ElementFailedError | None:
    """The :class:`ElementFailedError` of ``exc`` raised while the elements ``pending`` (the rows
    ``rows`` of the call) were added, ``failed`` counted as in :func:`note_element_error`;
    ``None`` when it was not raised by adding one of them (end of input, a firing)."""
    if _raised_by_operator(exc) or not 0 <= failed < len(pending):
        return None
    value, t, _ = pending[failed]
    letter = DeadLetter.of(exc, key, ErrorPhase.ELEMENT, value=value, timestamp=t)
    return ElementFailedError(rows[failed], letter)


def raise_element_error(
    exc: Exception,
    failed: int,
    pending: Sequence[tuple[Any, Any, Any]],
    rows: Sequence[int],
    key: Any,
    where: str,
    *,
    guarded: bool,
    show_values: bool,
) -> NoReturn:
    """Raise for ``exc``, raised while a runtime added the elements ``pending`` (the rows
    ``rows`` of the call; ``failed`` counted as in :func:`note_element_error`): with dead
    letters (``guarded``) an :class:`ElementFailedError` when one element raised it, else
    ``exc`` with a note naming where (``where``: the runtime)."""
    if guarded:
        failure = element_failure(exc, failed, pending, rows, key)
        if failure is not None:
            raise failure from exc
    note_element_error(exc, failed, pending, key, where, show_values=show_values)
    raise exc


def failing_window(records: Sequence[Any], values: Sequence[Any], arrow_type: pa.DataType) -> Any:
    """The window of the first of ``records`` whose value (in ``values``) is not of
    ``arrow_type`` (``None`` if each converts alone)."""
    for r, v in zip(records, values, strict=True):
        try:
            pa.array([v], arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return r.window
    return None


def window_bounds(window: Any) -> tuple[int | None, int | None]:
    """A window's start and end in int64 ms (``None`` for a window without them).

    Bounds beyond the int64 range are clamped to it: a start below ``MIN_TIMESTAMP`` (the
    assigner keeps its true value) is ``MIN_TIMESTAMP``, an end past ``MAX_TIMESTAMP`` (the
    operator's ``MAX_TIMESTAMP + 1``) is ``MAX_TIMESTAMP``, as Flink's window end saturates at
    ``Long.MAX_VALUE`` (``docs/failures.md``, "The ends of time")."""
    start = getattr(window, "start", None)
    end = getattr(window, "end", None)
    if not (isinstance(start, int) and isinstance(end, int)):
        return None, None
    return _in_long(start), _in_long(end)


def _in_long(ms: int) -> int:
    return min(max(ms, MIN_TIMESTAMP), MAX_TIMESTAMP)


@dataclass
class DeadRows:
    """A call's dead letters as rows of the tagged output: the input row (an index of the
    call's rows; ``None`` for a firing or a result), the phase, the error's class and message,
    the window's bounds."""

    rows: list[int | None] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    starts: list[int | None] = field(default_factory=list)
    ends: list[int | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, letter: DeadLetter, row: int | None = None) -> None:
        start, end = window_bounds(letter.window)
        self.rows.append(row)
        self.phases.append(letter.phase.value)
        self.classes.append(letter.error_class)
        self.messages.append(letter.error_message)
        self.starts.append(start)
        self.ends.append(end)

    def counters(self) -> dict[str, int]:
        """The metrics row's dead-letter counters."""
        return {
            "num_dead_letter_elements": self.phases.count(ErrorPhase.ELEMENT.value),
            "num_dead_letter_firings": self.phases.count(ErrorPhase.WINDOW.value),
            "num_dead_letter_results": self.phases.count(ErrorPhase.RESULT.value),
        }


def split_results(
    results: Sequence[Any], check: Callable[[Any], None]
) -> list[tuple[int, DeadLetter]]:
    """The index and dead letter (phase ``RESULT``) of each of ``results`` (``WindowResult``)
    whose value ``check`` raises on."""
    bad: list[tuple[int, DeadLetter]] = []
    for i, r in enumerate(results):
        try:
            check(r.value)
        except Exception as exc:
            bad.append((i, DeadLetter.of(exc, r.key, ErrorPhase.RESULT, window=r.window)))
    return bad
