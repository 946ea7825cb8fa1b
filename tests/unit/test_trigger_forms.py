"""The rules of triggers' forms on whole columns: which triggers have one (a subclass changing a
per-row method without its form has none), which hold for session windows, and the checks
of what a form returns."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from windowing.evictors.vectorized import WindowRows
from windowing.triggers import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    DeltaTrigger,
    EventTimeTrigger,
    ProcessingTimeoutTrigger,
    PurgingTrigger,
    TriggerResult,
)
from windowing.triggers.vectorized import (
    EndFirings,
    checked_end_firings,
    checked_results,
    on_sessions,
)


def _same(old: Any, new: Any) -> float:
    return 0.0


class OwnElement(CountTrigger):
    """Changes ``on_element`` only: the inherited form would disagree."""

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> Any:
        return TriggerResult.FIRE


class OwnForm(CountTrigger):
    """Changes the per-row rule and its form, and says nothing of sessions."""

    def on_element(self, element: Any, timestamp: Any, window: Any, ctx: Any) -> Any:
        return TriggerResult.FIRE

    def on_elements(self, rows: WindowRows, ctx: Any) -> Any:
        return np.ones(len(rows), np.int8)


class OwnFormOnSessions(OwnForm):
    @property
    def vectorized_on_sessions(self) -> bool:
        return True


def test_which_triggers_have_a_form_on_columns_and_on_sessions() -> None:
    delta = DeltaTrigger(1, _same, lambda old, new: np.zeros(old.num_rows))
    formed = [
        EventTimeTrigger(),
        CountTrigger(3),
        PurgingTrigger(CountTrigger(3)),
        ContinuousEventTimeTrigger(10),
        ProcessingTimeoutTrigger(CountTrigger(2), 5),
        ProcessingTimeoutTrigger(PurgingTrigger(ContinuousEventTimeTrigger(5)), 5, True, True),
        delta,
        OwnForm(2),
    ]
    assert all(t.vectorized for t in formed)
    per_row = [
        DeltaTrigger(1, _same),
        PurgingTrigger(DeltaTrigger(1, _same)),
        ProcessingTimeoutTrigger(delta, 5),  # its clear forgets the delta's reference row
        OwnElement(2),
    ]
    assert not any(t.vectorized for t in per_row)
    on = [EventTimeTrigger(), CountTrigger(3), ContinuousEventTimeTrigger(10), OwnFormOnSessions(2)]
    assert all(on_sessions(t) for t in on)
    assert on_sessions(PurgingTrigger(CountTrigger(3)))
    not_on = [delta, ProcessingTimeoutTrigger(CountTrigger(2), 5), OwnForm(2)]
    assert not any(on_sessions(t) for t in not_on)  # cannot merge; not said by its form


ROWS = WindowRows(np.array([0, 2, 3]), np.arange(3), np.array([0, 10]), np.array([10, 20]))


@pytest.mark.parametrize(
    ("codes", "shown"),
    [
        (np.array([0, 1]), "shape (2,)"),
        (np.array([0, 1, 4]), "dtype int64 and shape (3,)"),
        (np.array([0.0, 1.0, 1.0]), "dtype float64"),
    ],
    ids=["short", "beyond 3", "floats"],
)
def test_result_codes_are_checked(codes: Any, shown: str) -> None:
    with pytest.raises(
        TypeError, match=r"CountTrigger\.on_elements must return a result code"
    ) as e:
        checked_results(codes, ROWS, CountTrigger(1))
    assert shown in str(e.value)


def test_end_firings_are_checked() -> None:
    fire = EndFirings.once_each(ROWS, TriggerResult.FIRE)
    assert checked_end_firings(fire, ROWS, CountTrigger(1)).windows.tolist() == [0, 1]
    for wrong in (
        None,
        EndFirings(np.array([0, 2]), np.array([1, 1])),  # no window 2
        EndFirings(np.array([0]), np.array([1, 1])),
        EndFirings(np.array([0]), np.array([5])),
    ):
        with pytest.raises(TypeError, match=r"on_end_of_input must return EndFirings of windows"):
            checked_end_firings(wrong, ROWS, CountTrigger(1))
