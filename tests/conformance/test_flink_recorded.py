"""Our operator against Apache Flink 2.3's recorded output, without Java.

``flink_2_3_seed11.txt`` holds 584 random scenarios (every assigner, trigger, evictor and
function kind of :mod:`tests.conformance.scenarios`) with the results and late elements that
Flink's ``WindowOperator`` / ``EvictingWindowOperator`` produced for them, recorded with
``./dev conformance --count 600 --seed 11 --record tests/conformance/flink_2_3_seed11.txt``
(the 16 scenarios left out are the documented differences at the ends of time, see
docs/semantics.md). Every scenario must give exactly Flink's output here.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from . import ours
from .run import read_record

RECORDED = Path(__file__).with_name("flink_2_3_seed11.txt")
CASES = read_record(RECORDED.read_text())


def test_the_recording_covers_every_kind_of_setting() -> None:
    assert len(CASES) == 584
    kinds = Counter()
    for s, _ in CASES:
        kinds.update(
            {
                "assigner:" + s.assigner.split(":")[0],
                "trigger:" + s.trigger.split(":")[0],
                "evictor:" + s.evictor.split(":")[0],
                "fn:" + s.fn,
            }
        )
    expected = {
        "assigner:" + a for a in ("tumble", "slide", "session", "dynsession", "global", "countwin")
    } | {"evictor:" + e for e in ("none", "count", "time", "delta")}
    assert expected <= set(kinds)
    assert sum(bool(out) for _, out in CASES) > 500  # scenarios with output


@pytest.mark.parametrize("chunk", range(8))
def test_ours_gives_flinks_output(chunk: int) -> None:
    failures = []
    for s, flink_lines in CASES[chunk::8]:
        got = ours.run(s)
        if got.error is not None or Counter(got.lines) != Counter(flink_lines):
            failures.append(f"{s.describe()}\n    ours: {got.error or sorted(got.lines)}")
    assert not failures, f"{len(failures)} scenarios differ from Flink:\n" + "\n".join(failures[:3])
