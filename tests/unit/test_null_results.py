"""A window whose incremental result is ``None``: Flink's rule (nothing emitted), counted,
warned once per job naming the first such window and its key, and a dead letter under
``on_error="dead_letter"``."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from windowing.assigners import (
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    TumblingEventTimeWindows,
)
from windowing.errors import DeadLetter, ErrorPhase, NullResultWarning, window_text
from windowing.functions import AggregateFunction, ReduceFunction
from windowing.testing import WindowOperatorHarness
from windowing.windows import GLOBAL_WINDOW, TimeWindow


class EvenSum(AggregateFunction[int, int, Any]):
    """The sum of the values, ``None`` when it is odd."""

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: int, accumulator: int) -> int:
        return accumulator + value

    def get_result(self, accumulator: int) -> Any:
        return accumulator if accumulator % 2 == 0 else None

    def merge(self, a: int, b: int) -> int:
        return a + b


class KeepNone(ReduceFunction[Any]):
    def reduce(self, a: Any, b: Any) -> Any:
        return None


def _run(h: WindowOperatorHarness, elements: list[tuple[int, int, str]], watermark: int) -> Any:
    """Feed ``elements``, move the watermark; the NullResultWarnings raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        h.process_elements(elements)
        h.process_watermark(watermark)
    return [w for w in caught if w.category is NullResultWarning]


def test_the_harness_warns_once_per_job_naming_the_first_window_and_key() -> None:
    h = WindowOperatorHarness(TumblingEventTimeWindows(10), EvenSum())
    # key a: [0, 10) sums to 3 (None), [10, 20) to 4; key b: [0, 10) sums to 5 (None)
    warned = _run(h, [(1, 1, "a"), (2, 2, "a"), (5, 3, "b"), (4, 12, "a")], 9)
    assert [(r.key, r.value) for r in h.extract_output()] == []
    assert len(warned) == 1
    text = str(warned[0].message)
    assert "AggregateFunction EvenSum.get_result returned None" in text
    assert "[0 (1970-01-01T00:00:00.000Z), 10 (1970-01-01T00:00:00.010Z))" in text
    assert "of key 'a'" in text
    assert "2 windows so far" in text  # both keys' windows fired at this watermark
    assert "on_error('dead_letter')" in text  # how to get each of them
    assert warned[0].filename == __file__  # shown at the caller's line
    # later None results are counted, not warned again
    warned = _run(h, [(3, 21, "b")], 100)
    assert warned == []
    assert [(r.key, r.value) for r in h.extract_output()] == [("a", 4)]
    assert h.metrics.num_null_results == 3
    first = h.metrics.first_null_result
    assert first is not None and (first.key, first.window) == ("a", TimeWindow(0, 10))


def test_a_reduce_returning_none_is_named_by_its_class() -> None:
    h = WindowOperatorHarness(EventTimeSessionWindows(5), KeepNone())
    with pytest.warns(NullResultWarning, match=r"ReduceFunction KeepNone\.reduce returned None"):
        h.process_elements([(1, 1, ("x", 1)), (2, 3, ("x", 1))])
        h.process_watermark(100)
    assert h.extract_output() == []
    assert h.metrics.num_null_results == 1


def test_no_warning_without_a_none_result() -> None:
    h = WindowOperatorHarness(TumblingEventTimeWindows(10), EvenSum())
    assert _run(h, [(1, 1, "a"), (1, 2, "a")], 100) == []
    assert h.metrics.first_null_result is None


def test_dead_letters_hold_each_none_result_with_its_key_and_window() -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10), EvenSum(), on_error="dead_letter", allowed_lateness=20
    )
    warned = _run(h, [(1, 1, "a"), (2, 12, "a"), (3, 5, "b")], 9)
    assert len(warned) == 1
    assert "each is in the dead letters with error_phase 'null_result'" in str(warned[0].message)
    letters = h.extract_dead_letters()
    assert [(d.key, d.window, d.phase) for d in letters] == [
        ("a", TimeWindow(0, 10), ErrorPhase.NULL_RESULT),
        ("b", TimeWindow(0, 10), ErrorPhase.NULL_RESULT),
    ]
    assert letters[0] == DeadLetter.null_result(
        "a", TimeWindow(0, 10), "AggregateFunction EvenSum.get_result"
    )
    assert letters[0].error_class == "NullResultWarning"
    assert letters[0].error_message.startswith("AggregateFunction EvenSum.get_result returned None")
    # a late firing (an element within the allowed lateness) that gives None again: one more
    _run(h, [(2, 3, "b")], 9)
    assert [r.value for r in h.extract_output()] == []  # 5 + 2 is odd: still None
    assert [(d.key, d.window) for d in h.extract_dead_letters()] == [("b", TimeWindow(0, 10))]
    assert h.metrics.num_null_results == 3
    assert h.extract_output() == []


def test_a_dead_lettered_element_takes_its_none_result_back() -> None:
    """An element whose processing raises is left out as if it never arrived: a None result
    that a late firing of one of its windows gave before the element's next window raised
    is taken back with it (counter, first None result, dead letter)."""

    class Fussy(EvenSum):
        negatives = 0

        def add(self, value: int, accumulator: int) -> int:
            if value < 0:
                self.negatives += 1
                if self.negatives == 2:  # the element's second window
                    msg = "negative"
                    raise ValueError(msg)
            return accumulator + value

    h = WindowOperatorHarness(
        HoppingEventTimeWindows(10, 5), Fussy(), on_error="dead_letter", allowed_lateness=100
    )
    assert _run(h, [(2, 7, "a")], 20) == []
    assert [r.value for r in h.extract_output()] == [2, 2]
    # the first window of -1 fires late with 2 - 1 (None), then its second window raises
    assert _run(h, [(-1, 8, "a")], 20) == []
    assert [d.phase for d in h.extract_dead_letters()] == [ErrorPhase.ELEMENT]
    assert h.extract_output() == []
    assert h.metrics.num_null_results == 0 and h.metrics.first_null_result is None


def test_window_text() -> None:
    assert window_text(TimeWindow(0, 60_000)) == (
        "[0 (1970-01-01T00:00:00.000Z), 60000 (1970-01-01T00:01:00.000Z))"
    )
    assert window_text(GLOBAL_WINDOW) == repr(GLOBAL_WINDOW)
