"""The price of ``on_error("dead_letter")`` in the window operator when nothing fails: the
same jobs with ``"fail"`` (the planner's fastest strategy) and with ``"dead_letter"`` (the
generic operator, every firing guarded), on the same elements, best of three. Prints the
ratio per job (run both in one process: compare ratios, not times across runs).

    .venv/bin/python benchmarks/dead_letter_bench.py [--n 200000]
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from windowing.assigners import EventTimeSessionWindows, TumblingEventTimeWindows
from windowing.functions import ProcessWindowFunction
from windowing.operator import WindowOperator


class Count(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield len(list(elements))


def _add(a: int, b: int) -> int:
    return a + b


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200_000)
    n = parser.parse_args().n
    rng = random.Random(1)
    elements = [
        (rng.randint(1, 9), i * 7 + rng.randint(0, 50), f"k{rng.randint(0, 999)}") for i in range(n)
    ]
    jobs = [
        ("tumbling 1 s, reduce", TumblingEventTimeWindows(1_000), _add),
        ("tumbling 1 s, process", TumblingEventTimeWindows(1_000), Count()),
        ("sessions 300 ms, reduce", EventTimeSessionWindows(300), _add),
    ]
    print(f"{'job':26s} {'fail s':>8s} {'dead_letter s':>14s} {'ratio':>7s}")
    for name, assigner, function in jobs:
        best: dict[str, float] = {}
        outputs: dict[str, int] = {}
        for policy in ("fail", "dead_letter"):
            times = []
            for _ in range(3):
                op = WindowOperator(assigner, function, on_error=policy)
                start = time.perf_counter()
                op.process_elements(elements)
                op.process_watermark(2**62)
                times.append(time.perf_counter() - start)
            best[policy], outputs[policy] = min(times), len(op.output)
        assert outputs["fail"] == outputs["dead_letter"]
        ratio = best["dead_letter"] / best["fail"]
        print(f"{name:26s} {best['fail']:8.2f} {best['dead_letter']:14.2f} {ratio:6.2f}x")


if __name__ == "__main__":
    main()
