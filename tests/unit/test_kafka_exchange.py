"""KIP-450 windows in Kafka's store out of and into a key state
(:meth:`WindowOperator.export_kafka_windows` / :meth:`WindowOperator.import_kafka_windows`),
and the store's ``irregular_upto``: where its windows may differ from KIP-450's definition."""

from __future__ import annotations

from typing import Any

import pytest

from windowing import MIN_TIMESTAMP, OutputTag
from windowing.assigners import SlidingDistinctAssigner, TumblingEventTimeWindows
from windowing.engine.encoding import decode_key_state, encode_key_state, open_state
from windowing.functions import AggregateFunction
from windowing.testing import WindowOperatorHarness
from windowing.triggers import CountTrigger

LATE = OutputTag("late")


class SumCount(AggregateFunction[int, list[int], tuple[int, int]]):
    def create_accumulator(self) -> list[int]:
        return [0, 0]

    def add(self, value: int, accumulator: list[int]) -> list[int]:
        return [accumulator[0] + value, accumulator[1] + 1]

    def get_result(self, accumulator: list[int]) -> tuple[int, int]:
        return accumulator[0], accumulator[1]

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        return [a[0] + b[0], a[1] + b[1]]


def harness(grace: int = 0, trigger: Any = None) -> WindowOperatorHarness:
    return WindowOperatorHarness(
        SlidingDistinctAssigner(10, grace=grace),
        SumCount(),
        trigger=trigger,
        late_output_tag=LATE,
    )


def store_of(h: WindowOperatorHarness) -> Any:
    return h.operator.backend.get("k").kafka


@pytest.mark.parametrize("grace", [0, 3])
def test_kafka_windows_export_and_import_mid_stream(grace: int) -> None:
    """A key's store exported from one operator and imported into another with the
    watermark it fired up to (as a runtime that keeps the store on whole columns hands a key
    back and forth): the same store, contents and timers, and the same later firings,
    updates within the grace and late rows."""
    first = harness(grace)
    for ts in (100, 105, 108, 112, 121):
        first.process_element(ts, ts, "k")
    first.process_watermark(115)
    first.extract_output()
    op = first.operator
    ks = op.backend.get("k")
    exported = op.export_kafka_windows(ks)
    assert exported is not None
    assert exported.starts == tuple(sorted(exported.starts)) == tuple(ks.kafka.starts)
    assert exported.max_ts == tuple(ks.kafka.max_ts[s] for s in exported.starts)
    assert exported.expiry_at == ks.kafka.expiry_at == 90 + 30 + grace
    # the latest end of a window that fired, or cleanup time of one cleaned up
    assert exported.fired_upto == (115 if grace else 112)
    second = harness(grace)
    imported = second.operator.import_kafka_windows(exported)
    assert imported.evt_timers == ks.evt_timers
    assert imported.contents == ks.contents
    assert imported.kafka.values == ks.kafka.values and imported.kafka.max_ts == ks.kafka.max_ts
    second.operator.backend.put("k", imported)
    for h in (first, second):
        h.operator.set_clocks(watermark=115)
        h.process_element(5, 104, "k")  # no window of it open: late
        h.process_element(7, 113, "k")  # its left window closed, its right window open
        h.process_element(9, 126, "k")
        for wm in (118, 124, 140, 200):
            h.process_watermark(wm)
    output = first.extract_output()
    assert len(output) >= 6 and output == second.extract_output()
    late = first.extract_side_output(LATE)
    assert late == second.extract_side_output(LATE)
    assert [e.timestamp for e in late] == [104]
    for h in (first, second):  # the store forgotten by its expiry timer
        assert h.operator.backend.get("k") is None


def test_kafka_windows_export_only_the_default_triggers_store() -> None:
    """A store whose windows keep a trigger's state, or another assigner's state, exports
    nothing; an operator that does not run Kafka's algorithm refuses a store."""
    counted = harness(trigger=CountTrigger(2))
    counted.process_element(1, 100, "k")
    assert counted.operator.export_kafka_windows(counted.operator.backend.get("k")) is None
    tumbling = WindowOperatorHarness(TumblingEventTimeWindows(10), SumCount())
    tumbling.process_element(1, 100, "k")
    assert tumbling.operator.export_kafka_windows(tumbling.operator.backend.get("k")) is None
    plain = harness()
    plain.process_element(1, 100, "k")
    exported = plain.operator.export_kafka_windows(plain.operator.backend.get("k"))
    assert exported is not None and exported.values == ([1, 1],)
    with pytest.raises(TypeError, match="does not run Kafka's algorithm"):
        tumbling.operator.import_kafka_windows(exported)


def test_irregular_records_mark_the_windows_they_touch() -> None:
    """Records in time order far from 0 leave the store regular; a record behind the
    watermark by its grace or more (some of its windows closed), one near 0 and one that
    reads windows within ``2 * size`` of such a record mark the store up to its time + 1;
    a dropped record marks nothing."""
    h = harness(grace=2)
    for ts in (100, 104, 130):
        h.process_element(1, ts, "k")
    assert store_of(h).irregular_upto == MIN_TIMESTAMP
    h.process_watermark(120)
    h.process_element(1, 119, "k")  # 119 + 2 > 120: within the grace, regular
    assert store_of(h).irregular_upto == MIN_TIMESTAMP
    h.process_element(1, 117, "k")  # 117 + 2 <= 120: its left window is closed
    assert store_of(h).irregular_upto == 118
    h.process_element(1, 105, "k")  # 105 + 10 + 2 <= 120: dropped before any window
    assert store_of(h).irregular_upto == 118
    h.process_element(1, 138, "k")  # reads windows from 118 on
    assert store_of(h).irregular_upto == 139
    h.process_element(1, 160, "k")  # reads from 140 on: regular again
    assert store_of(h).irregular_upto == 139
    early = harness()
    early.process_element(1, 15, "k")  # within 2 * size of 0: Kafka's early path, the cut
    assert store_of(early).irregular_upto == 16


def test_the_mark_survives_a_checkpoint_and_an_earlier_state_is_irregular() -> None:
    """The mark is encoded with the store; a state written before it was kept reads as
    irregular up to its latest record + 1."""
    h = harness(grace=2)
    for ts in (100, 130):
        h.process_element(1, ts, "k")
    h.process_watermark(120)
    h.process_element(1, 117, "k")
    ks = h.operator.backend.get("k")
    again = decode_key_state(encode_key_state(ks))
    assert again.kafka is not None and again.kafka.irregular_upto == 118
    plain, reader = open_state(encode_key_state(ks))
    earlier = list(plain)
    earlier[9] = tuple(earlier[9][:4])  # the store as an earlier version wrote it
    old = reader.key_state(tuple(earlier))
    assert old.kafka is not None and old.kafka.irregular_upto == 131
