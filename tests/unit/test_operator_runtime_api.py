"""The few methods a runtime drives a window operator by when it runs keys one at a time
(the batch replay, the streaming processor): clocks set, outputs taken or dropped, counters
put back."""

from __future__ import annotations

from windowing.assigners import TumblingEventTimeWindows
from windowing.operator import OperatorMetrics, WindowOperator
from windowing.time import MIN_TIMESTAMP


def _operator() -> WindowOperator:
    return WindowOperator(TumblingEventTimeWindows(10), lambda a, b: a + b)


def test_set_clocks_sets_what_it_is_given_and_fires_nothing() -> None:
    op = _operator()
    op.process_elements([(1, 1, "k"), (2, 5, "k")])
    op.set_clocks(watermark=20)
    assert (op.watermark, op.processing_time, op.output) == (20, 0, [])
    op.set_clocks(processing_time=7)
    assert (op.watermark, op.processing_time) == (20, 7)
    op.fire_timers("k", op.key_state("k"))  # the runtime fires the key's due timers itself
    assert [r.value for r in op.take_output()] == [3]
    assert op.output == []


def test_clear_outputs_and_rewind_outputs() -> None:
    op = _operator()
    op.process_elements([(1, 1, "k")])
    op.set_clocks(watermark=20)
    op.fire_timers("k", op.key_state("k"))
    mark = op.output_mark()
    assert mark.results == 1 and op.metrics.num_windows_fired == 1
    op.process_elements([(5, 25, "j")])
    op.set_clocks(watermark=40)
    op.fire_timers("j", op.key_state("j"))
    assert len(op.output) == 2 and op.metrics.num_windows_fired == 2
    op.rewind_outputs(mark)  # as if the second key's element had never arrived
    assert [r.key for r in op.output] == ["k"] and op.metrics.num_windows_fired == 1
    op.clear_outputs()
    assert op.output == [] and op.metrics.num_windows_fired == 1  # counters kept
    op.clear_outputs(metrics=OperatorMetrics())
    assert op.metrics == OperatorMetrics()
    op.set_clocks(watermark=MIN_TIMESTAMP, processing_time=0)
    assert (op.watermark, op.processing_time) == (MIN_TIMESTAMP, 0)
