"""Notes added to a user function's error: which key, element, window or phase it was in."""

from __future__ import annotations

from typing import Any

from windowing.time import instant_text
from windowing.windows import window_text

__all__ = ["END_OF_INPUT_NOTE", "EVALUATING", "note_element", "note_window"]

#: How the note on an error raised while a window was evaluated begins.
EVALUATING = "while evaluating window"


def note_window(exc: Exception, window: Any, key: Any) -> None:
    """Name the window (with its bounds as ISO times) and key being evaluated in a user
    error, unless a window is noted already."""
    if not any(n.startswith(EVALUATING) for n in getattr(exc, "__notes__", ())):
        exc.add_note(f"{EVALUATING} {window_text(window)} of key {key!r}")


def note_element(exc: Exception, key: Any, timestamp: int | None, windows: Any = None) -> None:
    """Name the key, timestamp and windows of the element being added in a user error (unless
    the error happened while evaluating a window, which is noted already)."""
    notes = getattr(exc, "__notes__", ())
    if any(n.startswith((EVALUATING, "while adding the element")) for n in notes):
        return
    where = "" if windows is None else f" to windows [{', '.join(map(window_text, windows))}]"
    at = instant_text(timestamp)
    exc.add_note(f"while adding the element with timestamp {at}{where} of key {key!r}")


#: The note on an error raised while the end of input fires the remaining windows and timers
#: (:meth:`WindowOperator.process_to_end`).
END_OF_INPUT_NOTE = "at the end of input (watermark and processing time at MAX_TIMESTAMP)"
