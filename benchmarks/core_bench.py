"""Throughput of the pure-Python window operator, driven through the public harness.

Workload: N elements (default 1,000,000) over 1,000 keys spread over 1 hour of event time with
up to 500 ms of disorder, fed in batches of 1,000 (``process_elements``), a watermark (max seen -
500 ms) after each batch, and a final watermark at MAX_TIMESTAMP. Results are drained after each
watermark, as a sink would. The pre-generated input is frozen out of the garbage collector's
view (``gc.freeze``); the operator's own allocations are collected as usual. Prints
elements/second per configuration.

    .venv/bin/python benchmarks/core_bench.py [--n 1000000] [--only tumbling,hopping]
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from windowing.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    HoppingEventTimeWindows,
    TumblingEventTimeWindows,
)
from windowing.functions import AggregateFunction
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP
from windowing.triggers import CountTrigger

HOUR_MS = 3_600_000


class SumCount(AggregateFunction[int, tuple[int, int], tuple[int, int]]):
    """Sum and count of the values (integers: the order does not matter)."""

    order_insensitive = True

    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: int, acc: tuple[int, int]) -> tuple[int, int]:
        return (acc[0] + value, acc[1] + 1)

    def get_result(self, acc: tuple[int, int]) -> tuple[int, int]:
        return acc

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


def add(a: int, b: int) -> int:
    return a + b


def make_events(n: int, keys: int, seed: int = 42) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    step = HOUR_MS / n
    return [
        (rng.randint(1, 100), max(0, int(i * step) - rng.randint(0, 500)), rng.randrange(keys))
        for i in range(n)
    ]


CONFIGS: dict[str, Callable[[], WindowOperatorHarness]] = {
    "tumbling 10 s reduce-sum": lambda: WindowOperatorHarness(
        TumblingEventTimeWindows("10 seconds"), add
    ),
    "hopping 10 s / 1 s aggregate": lambda: WindowOperatorHarness(
        HoppingEventTimeWindows("10 seconds", "1 second"), SumCount()
    ),
    "session gap 5 s reduce-sum": lambda: WindowOperatorHarness(
        EventTimeSessionWindows("5 seconds"), add
    ),
    "global + CountTrigger(100) reduce-sum": lambda: WindowOperatorHarness(
        GlobalWindows(), add, trigger=CountTrigger(100)
    ),
}


def run(factory: Callable[[], WindowOperatorHarness], events: list[Any]) -> tuple[float, int]:
    harness = factory()
    batches = [events[i : i + 1_000] for i in range(0, len(events), 1_000)]
    gc.collect()
    gc.freeze()  # the pre-generated input is not the operator's garbage to scan
    try:
        start = time.perf_counter()
        max_ts = 0
        results = 0
        for batch in batches:
            harness.process_elements(batch)
            max_ts = max(max_ts, max(ts for _, ts, _ in batch))
            harness.process_watermark(max_ts - 500)
            results += len(harness.extract_output())  # a sink drains results as they come
        harness.process_watermark(MAX_TIMESTAMP)
        results += len(harness.extract_output())
        elapsed = time.perf_counter() - start
    finally:
        gc.unfreeze()
    if harness.num_state_entries() and not isinstance(harness.operator.assigner, GlobalWindows):
        msg = "state left behind after the final watermark"
        raise AssertionError(msg)
    return elapsed, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--only", default="", help="comma-separated name prefixes")
    args = parser.parse_args()
    events = make_events(args.n, args.keys)
    wanted = [w.strip() for w in args.only.split(",") if w.strip()]
    print(f"{args.n:,} elements, {args.keys:,} keys, 1 h event time, watermark every 1,000\n")
    print(f"{'configuration':<40} {'seconds':>8} {'elements/s':>12} {'results':>10}")
    for name, factory in CONFIGS.items():
        if wanted and not any(name.startswith(w) for w in wanted):
            continue
        elapsed, results = run(factory, events)
        print(f"{name:<40} {elapsed:>8.2f} {args.n / elapsed:>12,.0f} {results:>10,}")


if __name__ == "__main__":
    main()
