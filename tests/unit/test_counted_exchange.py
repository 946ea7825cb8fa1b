"""Windows under a count trigger out of and into a key state
(:meth:`WindowOperator.export_counted_windows` / :meth:`WindowOperator.import_counted_windows`),
as a runtime that keeps such windows on whole columns hands a key back and forth."""

from __future__ import annotations

from typing import Any

import pytest
from test_kafka_exchange import LATE, SumCount

from windowing.assigners import (
    EventTimeSessionWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from windowing.evictors import CountEvictor
from windowing.testing import WindowOperatorHarness
from windowing.triggers import ContinuousEventTimeTrigger, CountTrigger, PurgingTrigger


def harness(trigger: Any, lateness: int = 3, **kw: Any) -> WindowOperatorHarness:
    return WindowOperatorHarness(
        TumblingEventTimeWindows(10),
        SumCount(),
        trigger=trigger,
        allowed_lateness=lateness,
        late_output_tag=LATE,
        **kw,
    )


@pytest.mark.parametrize("purging", [False, True])
def test_counted_windows_export_and_import_mid_stream(purging: bool) -> None:
    """The windows, their counts and cleanup timers exported from one operator and imported
    into another: the same later firings, cleanups and late rows."""
    trigger = PurgingTrigger(CountTrigger(3)) if purging else CountTrigger(3)
    first = harness(trigger)
    for ts in (100, 101, 102, 105, 112, 113, 125):
        first.process_element(ts, ts, "k")
    first.extract_output()
    op = first.operator
    ks = op.backend.get("k")
    exported = op.export_counted_windows(ks)
    assert exported is not None
    assert [w.start for w in exported.windows] == [100, 110, 120]
    assert exported.counts == (1, 2, 1)
    assert exported.records[0] == ([105, 1] if purging else [408, 4])
    second = harness(trigger)
    second.operator.backend.put("k", second.operator.import_counted_windows(exported))
    for h in (first, second):
        h.process_element(1, 114, "k")  # the third of [110, 120): fires
        h.process_watermark(115)  # [100, 110) cleaned up without firing
        h.process_element(2, 103, "k")  # late
        h.process_element(3, 126, "k")
        h.process_element(4, 127, "k")  # fires [120, 130)
        h.process_watermark(200)
    output = first.extract_output()
    assert len(output) == 2 and output == second.extract_output()
    assert [e.timestamp for e in first.extract_side_output(LATE)] == [103]
    assert second.extract_side_output(LATE) != [] and second.operator.backend.get("k") is None


def test_only_count_trigger_state_exports() -> None:
    """Another trigger's state, an evictor's element lists or the default trigger's timers
    export nothing."""
    for h in (
        harness(ContinuousEventTimeTrigger(5)),
        harness(CountTrigger(3), evictor=CountEvictor(2)),
        harness(None),
    ):
        h.process_element(1, 100, "k")
        assert h.operator.export_counted_windows(h.operator.backend.get("k")) is None


def test_only_event_time_windows_that_do_not_merge_import_counts() -> None:
    """Sessions (merging) and processing-time windows refuse counted windows: their windows
    and timers live elsewhere."""
    plain = harness(CountTrigger(3))
    plain.process_element(1, 100, "k")
    exported = plain.operator.export_counted_windows(plain.operator.backend.get("k"))
    assert exported is not None
    for assigner in (EventTimeSessionWindows(10), TumblingProcessingTimeWindows(10)):
        other = WindowOperatorHarness(assigner, SumCount(), trigger=CountTrigger(3))
        with pytest.raises(TypeError, match="fires by no count trigger"):
            other.operator.import_counted_windows(exported)
