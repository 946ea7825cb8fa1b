"""The context functions of the conformance fuzzer (``--functions ctx``), without Java."""

from __future__ import annotations

import dataclasses

from . import ours
from .ours import Outcome
from .run import _same_time_order
from .scenarios import CONTEXT_FUNCTIONS, FUNCTIONS, Record, Scenario, generate


def test_the_context_draw_changes_only_the_function() -> None:
    for i in range(200):
        default, ctx = generate(5, i), generate(5, i, CONTEXT_FUNCTIONS)
        assert default == generate(5, i, FUNCTIONS)
        assert default.fn in FUNCTIONS and ctx.fn in CONTEXT_FUNCTIONS
        assert dataclasses.replace(ctx, fn=default.fn) == default


def _scenario(fn: str, *, keyed: bool = True, assigner: str = "tumble:10:0") -> Scenario:
    return Scenario(
        sid="t:0",
        keyed=keyed,
        assigner=assigner,
        trigger="default",
        purge=False,
        evictor="none",
        lateness=5,
        late_tag=False,
        fn=fn,
        records=(Record("x", 1, "a", 3, 12), Record("x", 2, "b", 13, 20)),
    )


def test_state_watermark_side_output_and_clear_are_rendered() -> None:
    """Flink 2.3 gives the same lines (``run.py --replay``), as for the next test."""
    got = ours.run(_scenario("process_ctx"))
    assert got.error is None
    assert sorted(got.lines) == [
        ("R", "x", "0", "10", "C[x|1|a]#w=1#g=1#wm=12#cl=0", "9"),
        ("R", "x", "10", "20", "C[x|2|b]#w=1#g=2#wm=20#cl=1", "19"),
        ("S", "-", "0", "10", "X#w=1#cl=1#wm=20", "9"),
        ("S", "-", "10", "20", f"X#w=1#cl=2#wm={2**63 - 1}", "19"),
        ("S", "x", "0", "10", "O[1]#g=1", "9"),
        ("S", "x", "10", "20", "O[1]#g=2", "19"),
    ]


def test_incremental_non_keyed_and_merging_variants() -> None:
    got = ours.run(_scenario("agg_ctx", keyed=False, assigner="session:2"))
    assert got.error is None
    assert ("R", "*", "3", "5", "C[1|a]#w=-#g=1#wm=-#cl=0", "4") in got.lines
    assert ("S", "-", "3", "5", "X#w=-#cl=1#wm=-", "4") in got.lines


def test_same_time_order_allows_only_a_permutation_of_the_counters() -> None:
    s = _scenario("process_ctx")
    a = [("R", "x", "0", "4", "C[x]#w=1#g=1#wm=9#cl=0", "3"), ("S", "x", "0", "4", "O[1]#g=1", "3")]
    b = [("R", "x", "1", "5", "C[x]#w=1#g=2#wm=9#cl=0", "4"), ("S", "x", "1", "5", "O[1]#g=2", "4")]
    swapped = [
        tuple(v.replace("g=1", "g=3").replace("g=2", "g=1").replace("g=3", "g=2") for v in ln)
        for ln in a + b
    ]
    assert _same_time_order(s, Outcome(a + b), Outcome(swapped))
    assert not _same_time_order(s, Outcome(a + b), Outcome([*a, *a]))
    later = [tuple(v.replace("wm=9", "wm=10") for v in ln) for ln in swapped[:1]] + swapped[1:]
    assert not _same_time_order(s, Outcome(a + b), Outcome(later))
