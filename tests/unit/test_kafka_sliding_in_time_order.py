"""Kafka's KIP-450 algorithm fed a key's records in event-time order (the batch replay without
``arrival_order``) leaves a closed form of windows, which the native Spark plan computes
(``windowing/spark/native/sliding.py``, its module docstring): checked here against the window
operator on random inputs (negative times, ties, the ends of time, sizes and graces up to
``MAX_TIMESTAMP``), window by window with each window's records, the late records and the
windows the key's store keeps at the end."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from windowing.assigners.sliding_distinct import SlidingDistinctAssigner
from windowing.functions import AggregateFunction
from windowing.functions.spec import Aggregate
from windowing.operator import WindowOperator
from windowing.records import OutputTag
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

LATE = OutputTag("late")
Window = tuple[int, int, tuple[int, ...]]  # start, end (exclusive, clamped), record ids


class Collect(AggregateFunction[int, tuple[int, ...], tuple[int, ...]]):
    """The ids of a window's records."""

    def create_accumulator(self) -> tuple[int, ...]:
        return ()

    def add(self, value: int, accumulator: tuple[int, ...]) -> tuple[int, ...]:
        return (*accumulator, value)

    def get_result(self, accumulator: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sorted(accumulator))

    def merge(self, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
        return a + b


def operator_run(
    records: list[tuple[int, int]], size: int, grace: int
) -> tuple[Counter[Window], list[int], int, int]:
    """Firings (start, end, ids), late ids, windows left at the end and records in no
    window, replaying ``(id, time)`` records in event-time order, then the end of input."""
    op = WindowOperator(
        SlidingDistinctAssigner(size, grace=grace), Aggregate(Collect()), late_output_tag=LATE
    )
    elements = [(i, t, "k") for i, t in sorted(records, key=lambda r: (r[1], r[0]))]
    op.process_to_end("k", elements)
    fired = Counter((r.window.start, r.window.end, r.value) for r in op.output)
    late = sorted(e.value for e in op.side_outputs.get(LATE, []))
    left = sum(1 for _ in op.iter_windows("k"))
    return fired, late, left, op.metrics.num_records_in_no_window


def closed_form(
    records: list[tuple[int, int]], size: int, grace: int
) -> tuple[Counter[Window], list[int], int]:
    """The same from the closed form (see ``native_sliding``'s docstring)."""
    late = sorted(i for i, t in records if t == MIN_TIMESTAMP and grace == 0)
    valid = sorted(
        ((i, t) for i, t in records if not (t == MIN_TIMESTAMP and grace == 0)),
        key=lambda r: (r[1], r[0]),
    )
    fired: Counter[Window] = Counter()
    at_min = [i for i, t in valid if t == MIN_TIMESTAMP]
    for n in range(1, len(at_min) + 1):  # the window at MIN fires per record
        fired[(MIN_TIMESTAMP - size, MIN_TIMESTAMP + 1, tuple(sorted(at_min[:n])))] += 1
    starts = {MIN_TIMESTAMP - size} if at_min else set()
    for part in ([r for r in valid if r[1] < 0], [r for r in valid if r[1] >= 0]):
        times = [t for _, t in part]
        own: set[int] = set()
        for t in set(times):
            if t < 0 or t > size:
                own.add(t - size)  # left window
            if any(t + 1 <= u <= t + 1 + size for u in times):
                own.add(t + 1)  # right window
        if any(0 <= u <= size for u in times) and times[0] >= 0:
            own.add(0)  # Kafka's early window
        own.discard(MIN_TIMESTAMP - size)  # (fired per record above)
        for s in own:
            end = min(s + size + 1, MAX_TIMESTAMP + 1)
            fired[(s, end, tuple(sorted(i for i, u in part if s <= u <= s + size)))] += 1
        starts |= own
    # the store-expiry timer: registered from the first window, then from the newest
    expiry = MAX_TIMESTAMP - 3 * size - grace
    ordered = sorted(starts)
    if not ordered or ordered[-1] < expiry:
        left = 0
    else:
        left = len(ordered) if ordered[0] >= expiry else len(ordered) - 1
    return fired, late, left


def random_case(rng: random.Random) -> tuple[list[tuple[int, int]], int, int]:
    size = rng.choice([0, 1, 2, 3, 5, 10, 2**62, MAX_TIMESTAMP - 1, MAX_TIMESTAMP])
    grace = rng.choice([0, 0, 1, 3, 2**62, MAX_TIMESTAMP])
    spread = rng.choice([5, 15, 40])
    records = []
    for i in range(rng.randint(1, 30)):
        t = rng.randint(-spread, spread)
        if rng.random() < 0.2:
            near = [MIN_TIMESTAMP, MIN_TIMESTAMP + 1, MIN_TIMESTAMP + 2, MAX_TIMESTAMP]
            near += [MAX_TIMESTAMP - 1, MAX_TIMESTAMP - 3, -1, 0, size - 1, size, size + 1]
            t = max(MIN_TIMESTAMP, min(MAX_TIMESTAMP, rng.choice(near)))
        records.append((i, t))
    return records, size, grace


@pytest.mark.parametrize("seed", range(8))
def test_kafka_in_event_time_order_is_the_closed_form(seed: int) -> None:
    rng = random.Random(seed)
    seen: Counter[str] = Counter()
    for _ in range(250):
        records, size, grace = random_case(rng)
        fired, late, left, no_window = operator_run(records, size, grace)
        assert (fired, late, left) == closed_form(records, size, grace), (records, size, grace)
        assert no_window == 0
        seen["early window"] += any(s == 0 and e == size + 1 for s, e, _ in fired) and size > 1
        seen["late"] += bool(late)
        seen["left at end"] += left > 0
        seen["fired at MIN"] += any(e == MIN_TIMESTAMP + 1 for _, e, _ in fired)
    assert all(seen[k] > 0 for k in ("early window", "late", "left at end", "fired at MIN"))


def test_kafka_differs_from_kip450_definition_at_zero() -> None:
    """Records at 5, 8, 12 and 21 (size 10): Kafka's early window [0; 10] holds 5 and 8,
    where KIP-450's definition has [-5; 5] and [-2; 8]; a record at -3 is in no window
    starting at 0 or after."""
    fired, _, _, _ = operator_run([(0, 5), (1, 8), (2, 12), (3, 21), (4, -3)], 10, 0)
    windows: dict[int, Any] = {s: ids for s, _, ids in fired}
    assert windows == {
        -13: (4,),  # [-13; -3]
        0: (0, 1),  # Kafka's early window
        2: (0, 1, 2),  # [2; 12]
        6: (1, 2),  # 5's right window
        9: (2,),  # 8's right window
        11: (2, 3),  # [11; 21]
        13: (3,),  # 12's right window
    }
    assert closed_form([(0, 5), (1, 8), (2, 12), (3, 21), (4, -3)], 10, 0)[0] == fired
