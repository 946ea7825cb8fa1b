"""Sliced hopping windows (one partial per pane) against the per-window layout."""

from __future__ import annotations

from typing import Any

import pytest

from windowing import MAX_TIMESTAMP, MIN_TIMESTAMP, OutputTag, TimeWindow
from windowing.assigners import (
    HoppingEventTimeWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from windowing.evictors import CountEvictor
from windowing.functions import AggregateFunction, ProcessWindowFunction
from windowing.plan import Strategy
from windowing.testing import WindowOperatorHarness
from windowing.triggers import CountTrigger, EventTimeTrigger

LATE = OutputTag("late")


class SumCount(AggregateFunction[int, tuple[int, int], tuple[int, int]]):
    def create_accumulator(self) -> tuple[int, int]:
        return (0, 0)

    def add(self, value: int, acc: tuple[int, int]) -> tuple[int, int]:
        return (acc[0] + value, acc[1] + 1)

    def get_result(self, acc: tuple[int, int]) -> tuple[int, int]:
        return acc

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return (a[0] + b[0], a[1] + b[1])


class SortedValues(AggregateFunction[int, list[int], tuple[int, ...]]):
    """A mutable accumulator that merge modifies in place (allowed for its first argument)."""

    def create_accumulator(self) -> list[int]:
        return []

    def add(self, value: int, acc: list[int]) -> list[int]:
        acc.append(value)
        return acc

    def get_result(self, acc: list[int]) -> tuple[int, ...]:
        return tuple(sorted(acc))

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        a.extend(b)
        return a


class Failing(SumCount):
    def get_result(self, acc: tuple[int, int]) -> tuple[int, int]:
        if acc[1] == 3:
            msg = "three is too many"
            raise RuntimeError(msg)
        return acc


def harness(function: Any, *, slicing: bool, lateness: int = 0, **kw: Any) -> Any:
    return WindowOperatorHarness(
        kw.pop("assigner", HoppingEventTimeWindows(10, 4, offset=1)),
        function,
        allowed_lateness=lateness,
        late_output_tag=LATE,
        slicing=slicing,
        **kw,
    )


def drive(h: Any, script: list[tuple[Any, ...]]) -> list[Any]:
    """Run ``script`` (("e", key, ts) / ("w", wm) / ("check",)) and record the outputs and
    the state and timer counters at every step."""
    seen: list[Any] = []
    for i, step in enumerate(script):
        if step[0] == "e":
            h.process_element(i, step[2], step[1])
        elif step[0] == "w":
            h.process_watermark(step[1])
        seen.append(
            (
                sorted(h.extract_output()),
                h.extract_side_output(LATE),
                h.num_state_entries(),
                h.num_event_time_timers(),
                [list(h.operator.iter_windows(k)) for k in "ab"],
            )
        )
    return seen


SCRIPT = [
    ("e", "a", 3),
    ("e", "a", 4),
    ("e", "b", 17),
    ("e", "a", 12),
    ("w", 9),
    ("e", "a", 2),  # late: windows ending by 9 are past their end
    ("e", "b", -7),
    ("w", 14),
    ("e", "a", 5),
    ("e", "a", 30),
    ("w", 22),
    ("e", "a", 1),  # beyond the lateness for some settings
    ("w", 40),
    ("e", "b", 33),
    ("w", MAX_TIMESTAMP),
]


@pytest.mark.parametrize("lateness", [0, 3, 8, 100])
@pytest.mark.parametrize("function", [SumCount, SortedValues])
def test_sliced_matches_per_window_layout(lateness: int, function: Any) -> None:
    sliced = harness(function(), slicing=True, lateness=lateness)
    plain = harness(function(), slicing=False, lateness=lateness)
    assert sliced.plan.strategy is Strategy.PANES and plain.plan.strategy is Strategy.ALIGNED
    assert drive(sliced, SCRIPT) == drive(plain, SCRIPT)
    assert sliced.metrics == plain.metrics
    assert sliced.num_state_entries() == 0 and sliced.num_keys() == 0


def test_reduce_is_sliced_and_matches() -> None:
    script = [("e", "a", t) for t in (0, 1, 5, 9, 10, 11, 19, 23)] + [("w", 15), ("w", 40)]
    sliced = drive(harness(max, slicing=True), script)
    assert sliced == drive(harness(max, slicing=False), script)
    # one output per window holding an element, in order of end
    fired = [r for step in sliced for r in step[0]]
    assert [r.window.start for r in fired] == [-7, -3, 1, 5, 9, 13, 17, 21]
    assert [r.value for r in fired] == [1, 2, 4, 5, 5, 6, 7, 7]  # max of the indexes


def test_state_is_one_partial_per_pane() -> None:
    h = harness(SumCount(), slicing=True, assigner=SlidingEventTimeWindows(10, 4))
    for ts in (0, 1, 2, 3, 4, 5):
        h.process_element(1, ts, "a")
    ks = h.operator.backend.get("a")
    assert sorted(ks.contents) == [0, 2, 4]  # panes of gcd(10, 4) = 2 ms
    # ... while the operator reports the windows the per-window layout would keep
    assert list(h.operator.iter_windows("a")) == [
        TimeWindow(-8, 2),
        TimeWindow(-4, 6),
        TimeWindow(0, 10),
        TimeWindow(4, 14),
    ]
    assert h.num_state_entries() == 4
    assert h.num_event_time_timers() == 4


def test_bulk_per_element_and_single_key_firing_agree() -> None:
    events = [(v, (v * 7919) % 97 - 20, "ab"[v % 2]) for v in range(200)]

    def outputs(mode: str, *, slicing: bool = True) -> tuple[list[Any], list[Any]]:
        h = harness(SumCount(), slicing=slicing, lateness=5)
        op = h.operator
        out: list[Any] = []
        for start in range(0, 200, 25):
            batch = events[start : start + 25]
            if mode == "bulk":
                h.process_elements(batch)
            else:
                for value, ts, key in batch:
                    h.process_element(value, ts, key)
            wm = start // 2
            if mode == "per_key":  # a runtime that loads and fires one key at a time
                op.set_clocks(watermark=wm)
                for key in "ab":
                    ks = op.backend.get(key)
                    if ks is not None:
                        op.fire_timers(key, ks)
            else:
                h.process_watermark(wm)
            out += sorted(h.extract_output())
        h.process_watermark(MAX_TIMESTAMP)
        return out + sorted(h.extract_output()), h.extract_side_output(LATE)

    reference = outputs("single")
    assert reference[0] and reference[1]
    assert reference == outputs("bulk") == outputs("per_key")
    assert reference == outputs("single", slicing=False)


def test_snapshot_restore_mid_stream() -> None:
    first = harness(SumCount(), slicing=True, lateness=4)
    for ts in (0, 3, 8, 13, 2):
        first.process_element(ts, ts, "k")
    first.process_watermark(9)
    before = first.extract_output()
    restored = harness(SumCount(), slicing=True, lateness=4)
    restored.restore(first.snapshot())
    for h in (first, restored):
        h.process_element(100, 7, "k")  # late firing of the windows ending by 9
        h.process_watermark(MAX_TIMESTAMP)
    assert before
    assert first.extract_output() == restored.extract_output()
    assert restored.num_state_entries() == 0


def test_windows_at_the_ends_of_time() -> None:
    script = [
        ("e", "a", MAX_TIMESTAMP),
        ("e", "a", MAX_TIMESTAMP - 5),
        ("e", "a", MIN_TIMESTAMP),
        ("e", "b", MAX_TIMESTAMP - 12),
        ("w", MAX_TIMESTAMP - 3),
        ("e", "a", MAX_TIMESTAMP - 1),
        ("w", MAX_TIMESTAMP),
    ]
    sliced = drive(harness(SumCount(), slicing=True, lateness=2), script)
    plain = drive(harness(SumCount(), slicing=False, lateness=2), script)
    # A window whose cleanup time saturates at MAX_TIMESTAMP gets no cleanup timer, so it
    # keeps its state after the final watermark (Flink); the panes keep it too.
    assert sliced == plain
    assert plain[-1][2] == 1
    ends = {r.window.end for step in sliced for r in step[0]}
    assert MAX_TIMESTAMP + 1 in ends  # clamped window ends


def test_user_error_names_window_and_key() -> None:
    h = harness(Failing(), slicing=True)
    for ts in (0, 1, 2):
        h.process_element(1, ts, "k")
    with pytest.raises(RuntimeError, match="three is too many") as info:
        h.process_watermark(20)
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert "of key 'k'" in notes and "TimeWindow" in notes


class Collect(ProcessWindowFunction[int, int, Any, Any]):
    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield sum(elements)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"function": SumCount(), "assigner": TumblingEventTimeWindows(10)},
        {"function": Collect()},
        {"function": SumCount(), "trigger": CountTrigger(2)},
        {"function": SumCount(), "trigger": type("Sub", (EventTimeTrigger,), {})()},
        {"function": SumCount(), "evictor": CountEvictor(2)},
        {"function": SumCount(), "window_function": Collect()},
        {"function": SumCount(), "assigner": HoppingEventTimeWindows(5, 7)},
        {"function": SumCount(), "slicing": False},
    ],
)
def test_slicing_only_where_it_applies(kwargs: dict[str, Any]) -> None:
    function = kwargs.pop("function")
    assigner = kwargs.pop("assigner", HoppingEventTimeWindows(10, 2))
    h = WindowOperatorHarness(assigner, function, slicing=kwargs.pop("slicing", True), **kwargs)
    assert h.plan.strategy is not Strategy.PANES
    control = WindowOperatorHarness(HoppingEventTimeWindows(10, 2), SumCount(), slicing=True)
    assert control.plan.strategy is Strategy.PANES


class DeclaredSumCount(SumCount):
    order_insensitive = True


def concat(a: str, b: str) -> str:
    return a + b


def test_default_combines_an_order_sensitive_reduce_in_arrival_order_as_flink() -> None:
    """Hopping 10/5, x@7, y@1, z@3: Flink's window [0, 10) is 'xyz' (arrival order); panes
    would give 'yzx' (time order). The default never uses panes for such a function."""

    def run(slicing: bool | None) -> dict[int, str]:
        h = WindowOperatorHarness(HoppingEventTimeWindows(10, 5), concat, slicing=slicing)
        for value, ts in [("x", 7), ("y", 1), ("z", 3)]:
            h.process_element(value, ts, key="k")
        h.process_watermark(MAX_TIMESTAMP)
        return {r.window.start: r.value for r in h.extract_output()}

    assert run(None) == {-5: "yz", 0: "xyz", 5: "x"}
    assert run(False) == run(None)
    assert run(True) == {-5: "yz", 0: "yzx", 5: "x"}  # the opt-in: time order


@pytest.mark.parametrize(
    ("function", "sliced"),
    [
        (SumCount(), False),
        (DeclaredSumCount(), True),
        (concat, False),
        (Collect(), False),
    ],
    ids=["undeclared", "declared", "callable", "process"],
)
def test_default_uses_panes_only_for_declared_functions(function: Any, sliced: bool) -> None:
    h = WindowOperatorHarness(HoppingEventTimeWindows(10, 2), function)
    assert (h.plan.strategy is Strategy.PANES) == sliced
    assert h.operator.slicing is sliced
    opted_out = WindowOperatorHarness(HoppingEventTimeWindows(10, 2), function, slicing=False)
    assert opted_out.plan.strategy is not Strategy.PANES


def test_slicing_must_be_a_bool_or_none() -> None:
    with pytest.raises(ValueError, match="slicing must be a bool or None, got str 'yes'"):
        WindowOperatorHarness(HoppingEventTimeWindows(10, 2), SumCount(), slicing="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("lateness", [0, 4])
def test_panes_export_and_import_mid_stream(lateness: int) -> None:
    """A key's panes exported from one operator and imported into another (as a runtime that
    keeps panes on whole columns hands a key back and forth): the same timer, and the same
    later firings, late firings and late rows as the operator that kept them."""
    first = harness(SumCount(), slicing=True, lateness=lateness)
    for ts in (0, 3, 8, 13, 2, 21):
        first.process_element(ts, ts, "k")
    first.process_watermark(9)
    first.extract_output()
    op = first.operator
    ks = op.backend.get("k")
    reduced = op.export_reduced_panes(ks)
    assert reduced is not None and reduced.starts == tuple(sorted(reduced.starts))
    assert reduced.upto == 9 and len(reduced.partials) == len(reduced.starts)
    second = harness(SumCount(), slicing=True, lateness=lateness)
    imported = second.operator.import_reduced_panes(reduced)
    assert imported.next_event_time() == ks.next_event_time()
    second.operator.backend.put("k", imported)
    for h in (first, second):
        h.operator.set_clocks(watermark=9)
        h.process_element(100, 7, "k")  # within the lateness: fires on arrival, else late
        o = h.operator
        for wm in (12, 17, 30):
            o.set_clocks(watermark=wm)
            o.fire_timers("k", o.backend.get("k"))
    assert first.extract_output() == second.extract_output()
    assert first.extract_side_output(LATE) == second.extract_side_output(LATE)


def test_panes_export_only_panes_and_import_only_into_panes() -> None:
    """A key state that is not panes exports nothing; an operator that keeps windows, not
    panes, refuses panes."""
    windows = harness(SumCount(), slicing=False)
    windows.process_element(1, 3, "k")
    op = windows.operator
    assert op.export_reduced_panes(op.backend.get("k")) is None
    sliced = harness(SumCount(), slicing=True)
    sliced.process_element(1, 3, "k")
    reduced = sliced.operator.export_reduced_panes(sliced.operator.backend.get("k"))
    assert reduced is not None
    with pytest.raises(TypeError, match="keeps no panes"):
        op.import_reduced_panes(reduced)


@pytest.mark.parametrize("lateness", [0, 4])
def test_panes_list_each_windows_timers_as_windows_do(lateness: int) -> None:
    """``window_summaries`` of panes lists, per window, the timers Flink's per-window layout
    holds: the same windows and timers as the operator keeping each window's contents."""
    listed = []
    for slicing in (True, False):
        h = harness(SumCount(), slicing=slicing, lateness=lateness)
        for ts in (0, 3, 8, 13, 21):
            h.process_element(ts, ts, "k")
        h.process_watermark(12)
        op = h.operator
        listed.append(
            [(s.window, s.event_timers) for s in op.window_summaries(op.backend.get("k"))]
        )
    panes, windows = listed
    assert panes == windows
    assert any(len(timers) == 2 for _, timers in panes) == bool(lateness)
    assert all(timers for _, timers in panes)
