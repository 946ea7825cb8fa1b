"""KIP-450 sliding windows against the hopping emulation (advance 1 ms), same harness.

Workload: N elements (default 1,000,000) over 1,000 keys spread over 1 hour of event time (as
``core_bench.py``), batches of 1,000 with a watermark after each. Prints elements/s, windows
created (window results) and peak state entries for

* ``SlidingDistinctAssigner(10 s)`` with the default trigger and with ``OnWindowCloseTrigger``;
* ``SlidingEventTimeWindows(10 s, 1 ms)``, capped at ``--hopping-cap`` elements (it creates
  10,000 windows per element);
* ``TumblingEventTimeWindows(10 s)`` as the reference throughput;

and the per-record cost of sliding-distinct windows as the size grows from 1 s to 1 h.

    .venv/bin/python benchmarks/sliding_bench.py [--n 1000000] [--hopping-cap 2000]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from core_bench import add, make_events

from windowing.assigners import (
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
)
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP
from windowing.triggers.emit import OnWindowCloseTrigger


def run(harness: WindowOperatorHarness, events: list[Any]) -> tuple[float, int, int]:
    """Seconds spent in the harness (the peak-state probe is timed and left out), window
    results, peak state entries."""
    batches = [events[i : i + 1_000] for i in range(0, len(events), 1_000)]
    watermarks = []
    max_ts = 0
    for batch in batches:
        max_ts = max(max_ts, max(ts for _, ts, _ in batch))
        watermarks.append(max_ts - 500)
    gc.collect()
    gc.freeze()
    peak = results = 0
    probing = 0.0
    try:
        start = time.perf_counter()
        for n, (batch, watermark) in enumerate(zip(batches, watermarks, strict=True)):
            harness.process_elements(batch)
            harness.process_watermark(watermark)
            results += len(harness.extract_output())
            if n % 50 == 0:
                probe = time.perf_counter()
                peak = max(peak, harness.num_state_entries())
                probing += time.perf_counter() - probe
        harness.process_watermark(MAX_TIMESTAMP)
        results += len(harness.extract_output())
        elapsed = time.perf_counter() - start - probing
    finally:
        gc.unfreeze()
    return elapsed, results, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--hopping-cap", type=int, default=2_000)
    args = parser.parse_args()
    events = make_events(args.n, args.keys)
    print(f"{args.n:,} elements, {args.keys:,} keys, 1 h event time, watermark every 1,000\n")
    header = ("configuration", "elements", "elements/s", "windows", "peak state")
    print(f"{header[0]:<46} {header[1]:>10} {header[2]:>11} {header[3]:>11} {header[4]:>11}")
    rows = [
        ("tumbling 10 s (reference)", TumblingEventTimeWindows("10 s"), None, events),
        ("sliding-distinct 10 s", SlidingDistinctAssigner("10 s", grace=0), None, events),
        (
            "sliding-distinct 10 s, on close",
            SlidingDistinctAssigner("10 s", grace=0),
            OnWindowCloseTrigger(),
            events,
        ),
        (
            "hopping 10 s / 1 ms (capped)",
            HoppingEventTimeWindows("10 s", 1),
            None,
            events[: args.hopping_cap],
        ),
    ]
    rates = {}
    for name, assigner, trigger, data in rows:
        # an integer sum: the order does not matter, so the record timeline may be used
        harness = WindowOperatorHarness(assigner, add, trigger=trigger, slicing=True)
        elapsed, windows, peak = run(harness, data)
        rates[name] = len(data) / elapsed
        print(f"{name:<46} {len(data):>10,} {rates[name]:>11,.0f} {windows:>11,} {peak:>11,}")
    ratio = rates["sliding-distinct 10 s"] / rates["tumbling 10 s (reference)"]
    print(f"\nsliding-distinct / tumbling throughput: {ratio:.2f}")
    print("\nper-record cost as the window grows (sliding-distinct, default trigger):")
    sample = events[: min(len(events), 200_000)]
    for size in ("1 s", "10 s", "1 min", "10 min", "1 hour"):
        elapsed, windows, peak = run(
            WindowOperatorHarness(SlidingDistinctAssigner(size, grace=0), add, slicing=True),
            sample,
        )
        print(
            f"  size {size:>7}: {elapsed / len(sample) * 1e6:7.2f} us/record, "
            f"{windows / len(sample):5.2f} windows/record, "
            f"{elapsed / max(windows, 1) * 1e6:6.2f} us/window, peak state {peak:,}"
        )


if __name__ == "__main__":
    main()
