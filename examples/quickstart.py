"""Quickstart: Flink-style event-time windows with allowed lateness and late-data side output.

Runs the pure-Python window operator over a small generated event log with out-of-order and
late events, and prints the window results and the late records.
"""

from __future__ import annotations

import random

from assigners import TumblingEventTimeWindows
from windowing import OutputTag
from windowing.testing import WindowOperatorHarness


def main() -> None:
    rng = random.Random(7)
    late = OutputTag("late")
    harness = WindowOperatorHarness(
        TumblingEventTimeWindows("10 seconds"),
        lambda a, b: a + b,  # reduce: sum of amounts
        allowed_lateness="5 seconds",
        late_output_tag=late,
    )
    max_seen = 0
    for i in range(200):
        user = rng.choice(["alice", "bob", "carol"])
        ts = i * 500 - rng.choice([0, 0, 0, 2_000, 17_000])  # some out of order, some late
        harness.process_element(rng.randint(1, 9), ts, key=user)
        max_seen = max(max_seen, ts)
        harness.process_watermark(max_seen - 3_000)  # bounded out-of-orderness of 3 s
    harness.process_watermark(2**63 - 1)  # end of input

    print("key    window               sum")
    for r in sorted(harness.extract_output(), key=lambda r: (r.window.start, r.key)):
        print(f"{r.key:<6} [{r.window.start:>6}, {r.window.end:>6})  {r.value}")
    lates = harness.extract_side_output(late)
    print(f"\n{len(lates)} late records (value, timestamp, watermark when late):")
    for e in lates:
        print(f"  {e.key:<6} {e.value} @ {e.timestamp} (watermark {e.watermark})")
    print("\nmetrics:", harness.metrics)


if __name__ == "__main__":
    main()
