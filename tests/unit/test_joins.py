"""Window joins and coGroups on the window operator (tagged rows split by side, Flink's
CoGroupWindowFunction) and the interval join operator, against brute force."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any, NamedTuple

import pytest

from windowing import (
    EventTimeSessionWindows,
    OutputTag,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from windowing.functions.joins import (
    LEFT,
    RIGHT,
    SIDE,
    CoGroupFunction,
    CoGroupWindowFunction,
    FlatJoinFunction,
    JoinFunction,
    ProcessJoinFunction,
    as_co_group,
    as_process_join,
    output_annotation,
)
from windowing.interval_join import IntervalJoinOperator
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP


def tagged(side: str, row: Any) -> dict[str, Any]:
    return {SIDE: side, LEFT: row if side == LEFT else None, RIGHT: row if side == RIGHT else None}


# ---------------------------------------------------------------------------- functions
class Pair(JoinFunction[Any, Any, Any]):
    def join(self, first: Any, second: Any) -> tuple[Any, Any]:
        return (first, second)


class Twice(FlatJoinFunction[Any, Any, Any]):
    def join(self, first: Any, second: Any) -> Iterable[Any]:
        yield (first, second)
        yield (second, first)


class Sizes(CoGroupFunction[Any, Any, Any]):
    def co_group(self, first: list[Any], second: list[Any]) -> Iterable[tuple[int, int]]:
        yield (len(first), len(second))


def test_co_group_window_function_splits_by_side_in_order() -> None:
    seen: list[tuple[list[Any], list[Any]]] = []

    def record(first: list[Any], second: list[Any]) -> list[Any]:
        seen.append((first, second))
        return []

    rows = [tagged(RIGHT, "x"), tagged(LEFT, 1), tagged(RIGHT, "y"), tagged(LEFT, 2)]
    assert list(CoGroupWindowFunction(as_co_group(record, "co_group")).apply("k", None, rows)) == []
    assert seen == [([1, 2], ["x", "y"])]


def test_join_is_a_nested_loop_left_outer_and_inner_on_empty_sides() -> None:
    rows = [tagged(LEFT, 1), tagged(LEFT, 2), tagged(RIGHT, "x"), tagged(RIGHT, "y")]
    join = CoGroupWindowFunction(as_co_group(Pair(), "join"))
    assert list(join.apply("k", None, rows)) == [(1, "x"), (1, "y"), (2, "x"), (2, "y")]
    assert list(join.apply("k", None, rows[:2])) == []  # no right rows: nothing
    assert list(join.apply("k", None, rows[2:])) == []
    flat = CoGroupWindowFunction(as_co_group(Twice(), "join"))
    assert list(flat.apply("k", None, rows[1:3])) == [(2, "x"), ("x", 2)]
    plain = CoGroupWindowFunction(as_co_group(lambda a, b: a * 10, "join"))
    assert list(plain.apply("k", None, rows[:3])) == [10, 20]


def test_co_group_is_called_with_an_empty_side() -> None:
    sizes = CoGroupWindowFunction(as_co_group(Sizes(), "co_group"))
    assert list(sizes.apply("k", None, [tagged(LEFT, 1)])) == [(1, 0)]
    assert list(sizes.apply("k", None, [tagged(RIGHT, 1), tagged(RIGHT, 2)])) == [(0, 2)]


@pytest.mark.parametrize(
    ("function", "kind", "message"),
    [
        (Sizes(), "join", "must be a JoinFunction"),
        (Pair, "join", "must be a JoinFunction"),
        (42, "join", "got int 42"),
        (Pair(), "co_group", "must be a CoGroupFunction"),
        ("f", "co_group", "got str 'f'"),
    ],
)
def test_two_input_functions_are_checked(function: Any, kind: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        as_co_group(function, kind)


def test_process_join_functions_are_checked() -> None:
    with pytest.raises(ValueError, match="must be a ProcessJoinFunction or a callable"):
        as_process_join(Pair())
    with pytest.raises(ValueError, match="got int 3"):
        as_process_join(3)


def test_output_annotations() -> None:
    class Typed(JoinFunction[Any, Any, float]):
        def join(self, first: Any, second: Any) -> float:
            return 1.0

    def groups(first: list[Any], second: list[Any]) -> list[int]:
        return []

    assert output_annotation(Typed()) == (Typed.join, False)
    assert output_annotation(Twice()) == (Twice.join, True)
    assert output_annotation(Sizes()) == (Sizes.co_group, True)
    assert output_annotation(groups, many=True) == (groups, True)


# ---------------------------------------------------------------------------- window joins
class Row(NamedTuple):
    key: str
    ts: int
    n: int


def random_sides(rng: random.Random, n: int = 40) -> tuple[list[Row], list[Row]]:
    def rows(count: int) -> list[Row]:
        return [Row(rng.choice("ab"), rng.randrange(-30, 60), i) for i in range(count)]

    return rows(rng.randrange(n)), rows(rng.randrange(n))


def harness_join(assigner: Any, left: list[Row], right: list[Row], function: Any) -> set[Any]:
    """The window operator over the tagged rows of both sides, in event-time order."""
    h = WindowOperatorHarness(assigner, CoGroupWindowFunction(function))
    elements = [(tagged(LEFT, r), r.ts, r.key) for r in left]
    elements += [(tagged(RIGHT, r), r.ts, r.key) for r in right]
    elements.sort(key=lambda e: e[1])
    h.process_elements(elements)
    h.process_watermark(MAX_TIMESTAMP)
    return {(r.key, r.window.start, r.window.end, r.value) for r in h.extract_output()}


def windows_of(assigner: Any, ts: int) -> list[tuple[int, int]]:
    if isinstance(assigner, TumblingEventTimeWindows):
        start = ts - ts % assigner.size
        return [(start, start + assigner.size)]
    size, slide = assigner.size, assigner.slide
    last = ts - ts % slide
    return [(s, s + size) for s in range(last, ts - size, -slide)]


def sessions(times: list[int], gap: int) -> list[tuple[int, int]]:
    """Flink's sessions of ``times``: windows [t, t + gap), merged while they intersect."""
    out: list[list[int]] = []
    for t in sorted(times):
        if out and t <= out[-1][1]:
            out[-1][1] = max(out[-1][1], t + gap)
        else:
            out.append([t, t + gap])
    return [(s, e) for s, e in out]


def brute_force_join(
    assigner: Any, left: list[Row], right: list[Row]
) -> set[tuple[str, int, int, Any]]:
    out = set()
    if isinstance(assigner, EventTimeSessionWindows):
        for key in {r.key for r in left + right}:
            times = [r.ts for r in left + right if r.key == key]
            for s, e in sessions(times, assigner.gap):
                for a in left:
                    for b in right:
                        if a.key == b.key == key and s <= a.ts < e and s <= b.ts < e:
                            out.add((key, s, e, (a.n, b.n)))
        return out
    for a in left:
        for b in right:
            if a.key != b.key:
                continue
            for w in set(windows_of(assigner, a.ts)) & set(windows_of(assigner, b.ts)):
                out.add((a.key, w[0], w[1], (a.n, b.n)))
    return out


@pytest.mark.parametrize(
    "assigner",
    [TumblingEventTimeWindows(10), SlidingEventTimeWindows(15, 5), EventTimeSessionWindows(4)],
    ids=["tumbling", "sliding", "session"],
)
@pytest.mark.parametrize("seed", range(15))
def test_window_join_is_the_pairs_of_each_window(assigner: Any, seed: int) -> None:
    left, right = random_sides(random.Random(seed))
    join = as_co_group(lambda a, b: (a.n, b.n), "join")
    assert harness_join(assigner, left, right, join) == brute_force_join(assigner, left, right)


def test_sessions_merge_over_both_sides() -> None:
    # left rows at 0 and 6 are two sessions of gap 4 alone; a right row at 3 bridges them
    left = [Row("a", 0, 0), Row("a", 6, 1)]
    right = [Row("a", 3, 0)]
    join = as_co_group(lambda a, b: (a.n, b.n), "join")
    got = harness_join(EventTimeSessionWindows(4), left, right, join)
    assert got == {("a", 0, 10, (0, 0)), ("a", 0, 10, (1, 0))}


def test_co_group_windows_with_one_side() -> None:
    left = [Row("a", 1, 0), Row("b", 2, 0)]
    right = [Row("a", 3, 0), Row("c", 15, 0)]
    got = harness_join(TumblingEventTimeWindows(10), left, right, Sizes())
    assert got == {("a", 0, 10, (1, 1)), ("b", 0, 10, (1, 0)), ("c", 10, 20, (0, 1))}


def test_window_join_late_rows_of_either_side_and_late_firings() -> None:
    late = OutputTag("late")
    join = CoGroupWindowFunction(as_co_group(lambda a, b: (a, b), "join"))
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10), join, allowed_lateness=5, late_output_tag=late
    )
    h.process_element(tagged(LEFT, "l1"), 1, "k")
    h.process_element(tagged(RIGHT, "r1"), 2, "k")
    h.process_watermark(9)
    assert [r.value for r in h.extract_output()] == [("l1", "r1")]
    h.process_element(tagged(RIGHT, "r2"), 3, "k")  # within the lateness: fires again
    assert [r.value for r in h.extract_output()] == [("l1", "r1"), ("l1", "r2")]
    h.process_watermark(14)  # cleanup time 9 + 5
    h.process_element(tagged(LEFT, "l2"), 4, "k")
    assert h.extract_output() == []
    assert [(e.value[SIDE], e.value[LEFT], e.watermark) for e in h.extract_side_output(late)] == [
        (LEFT, "l2", 14)
    ]


# ---------------------------------------------------------------------------- interval join
def brute_force_interval(
    left: list[Row], right: list[Row], lower: int, upper: int, lo_in: bool, up_in: bool
) -> list[tuple[str, int, int, int]]:
    out = []
    for a in left:
        for b in right:
            d = b.ts - a.ts
            above = lower < d or (lo_in and d == lower)
            below = d < upper or (up_in and d == upper)
            if a.key == b.key and above and below:
                out.append((a.key, a.n, b.n, max(a.ts, b.ts)))
    return sorted(out)


@pytest.mark.parametrize("seed", range(40))
def test_interval_join_without_watermark_is_every_pair_within_the_bounds(seed: int) -> None:
    rng = random.Random(seed)
    left, right = random_sides(rng)
    lower = rng.randrange(-20, 10)
    upper = lower + rng.randrange(0, 20)
    lo_in, up_in = rng.random() < 0.5, rng.random() < 0.5
    op = IntervalJoinOperator(
        lower, upper, lambda a, b: (a.n, b.n), lower_inclusive=lo_in, upper_inclusive=up_in
    )
    arrivals = [(LEFT, r) for r in left] + [(RIGHT, r) for r in right]
    rng.shuffle(arrivals)
    for side, r in arrivals:
        (op.process_left if side == LEFT else op.process_right)(r, r.ts, r.key)
    got = sorted((r.key, *r.value, r.timestamp) for r in op.extract_output())
    assert got == brute_force_interval(left, right, lower, upper, lo_in, up_in)
    op.process_watermark(MAX_TIMESTAMP)
    assert op.num_buffered() == 0
    assert op.num_timers() == 0


class Gap(ProcessJoinFunction[Any, Any, Any]):
    def process_element(self, left: Any, right: Any, context: Any) -> Iterable[Any]:
        yield (context.left_timestamp(), context.right_timestamp(), context.timestamp())


def test_interval_join_context_and_result_time() -> None:
    op = IntervalJoinOperator(-5, 5, Gap())
    op.process_right("r", 7, "k")
    op.process_left("l", 4, "k")
    assert [(r.value, r.timestamp) for r in op.extract_output()] == [((4, 7, 7), 7)]


def test_interval_join_bounds() -> None:
    def pairs(lower: int, upper: int, **kw: Any) -> list[int]:
        op = IntervalJoinOperator(lower, upper, lambda a, b: b, **kw)
        op.process_left("l", 10, "k")
        for t in range(21):
            op.process_right(t, t, "k")
        return [r.value for r in op.extract_output()]

    assert pairs(-2, 1) == [8, 9, 10, 11]
    assert pairs(-2, 1, lower_inclusive=False) == [9, 10, 11]
    assert pairs(-2, 1, upper_inclusive=False) == [8, 9, 10]
    assert pairs(-4, -2) == [6, 7, 8]
    assert pairs(3, 3) == [13]
    assert pairs(3, 3, upper_inclusive=False) == []
    with pytest.raises(ValueError, match="lower bound must be <= the upper bound"):
        IntervalJoinOperator(2, 1, lambda a, b: a)


def test_interval_join_late_rows_go_to_their_side() -> None:
    left_late, right_late = OutputTag("left-late"), OutputTag("right-late")
    op = IntervalJoinOperator(
        0, 5, lambda a, b: (a, b), left_late_tag=left_late, right_late_tag=right_late
    )
    op.process_left("l1", 10, "k")
    op.process_watermark(12)
    op.process_right("r1", 11, "k")  # late: 11 < 12, though within l1's bounds
    op.process_right("r2", 12, "k")  # not late
    op.process_left("l2", 3, "k")  # late
    assert [r.value for r in op.extract_output()] == [("l1", "r2")]
    assert [(e.value, e.timestamp, e.watermark) for e in op.extract_side_output(left_late)] == [
        ("l2", 3, 12)
    ]
    assert [(e.value, e.watermark) for e in op.extract_side_output(right_late)] == [("r1", 12)]
    assert (op.metrics.num_late_left, op.metrics.num_late_right) == (1, 1)


def test_interval_join_cleanup_follows_flinks_timers() -> None:
    op = IntervalJoinOperator(-3, 2, lambda a, b: (a, b))
    op.process_left("l", 10, "k")  # cleaned up at watermark 10 + 2
    op.process_right("r", 10, "k")  # cleaned up at watermark 10 + 3
    assert op.num_buffered() == 2
    op.process_watermark(11)
    assert op.num_buffered() == 2
    op.process_watermark(12)
    assert op.num_buffered() == 1
    # a right row at 12 is not late and within l's bounds, but l has left the buffer
    op.process_right("r12", 12, "k")
    op.process_left("l13", 13, "k")  # joins r (10 in [10, 15]) and r12
    assert [r.value for r in op.extract_output()] == [("l", "r"), ("l13", "r"), ("l13", "r12")]
    op.process_watermark(13)
    assert op.num_buffered() == 2  # r12 (until 15) and l13 (until 15)


def test_interval_join_keys_are_apart() -> None:
    op = IntervalJoinOperator(-1, 1, lambda a, b: (a, b))
    op.process_left("la", 5, "a")
    op.process_right("rb", 5, "b")
    op.process_right("ra", 5, "a")
    assert [(r.key, r.value) for r in op.extract_output()] == [("a", ("la", "ra"))]


def test_interval_join_brute_force_with_a_watermark() -> None:
    """With a watermark moving between arrivals, a pair is emitted exactly when neither row
    was late and the first to arrive was still buffered when the second arrived."""
    for seed in range(30):
        rng = random.Random(seed)
        left, right = random_sides(rng, 30)
        lower = rng.randrange(-10, 5)
        upper = lower + rng.randrange(0, 10)
        arrivals = [(LEFT, r) for r in left] + [(RIGHT, r) for r in right]
        rng.shuffle(arrivals)
        op = IntervalJoinOperator(lower, upper, lambda a, b: (a.n, b.n))
        watermarks, seen, wm = [], -(10**6), -(10**6)
        for side, r in arrivals:
            wm = max(wm, seen - 8)
            watermarks.append(wm)
            op.process_watermark(wm)
            (op.process_left if side == LEFT else op.process_right)(r, r.ts, r.key)
            seen = max(seen, r.ts)
        got = sorted((*r.value,) for r in op.extract_output())

        def cleanup(side: str, t: int, lower: int = lower, upper: int = upper) -> int:
            rel = upper if side == LEFT else -lower
            return t + rel if rel > 0 else t

        expected = []
        for i, (s1, a) in enumerate(arrivals):
            for j in range(i + 1, len(arrivals)):
                s2, b = arrivals[j]
                if s1 == s2 or a.key != b.key:
                    continue
                if a.ts < watermarks[i] or b.ts < watermarks[j]:
                    continue  # late
                if watermarks[j] >= cleanup(s1, a.ts):
                    continue  # the first row had left the buffer
                lrow, rrow = (a, b) if s1 == LEFT else (b, a)
                if lower <= rrow.ts - lrow.ts <= upper:
                    expected.append((lrow.n, rrow.n))
        assert got == sorted(expected), seed


# ---------------------------------------------------------------------------- snapshots
def micro_batch_run(
    batches: list[tuple[int, list[tuple[str, Row]]]], lower: int, upper: int, **kw: Any
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """A streaming runtime's run: each key's own operator per micro-batch (``(watermark,
    arrivals)``), restored from the key's encoded snapshot and snapshotted again; keys whose
    earliest cleanup time the watermark passed are cleaned up without rows. Returns the
    results (key, value, time) and the late rows (side, key, value, watermark)."""
    from windowing.engine.encoding import StateWriter, open_state

    left_late, right_late = OutputTag("l"), OutputTag("r")
    stored: dict[str, bytes] = {}
    results: list[tuple[Any, ...]] = []
    lates: list[tuple[Any, ...]] = []

    def call(key: str, watermark: int, arrivals: list[tuple[str, Row]]) -> None:
        op = IntervalJoinOperator(
            lower,
            upper,
            lambda a, b: (a, b),
            left_late_tag=left_late,
            right_late_tag=right_late,
            **kw,
        )
        if key in stored:
            op.restore(open_state(stored.pop(key))[0])
        op.process_watermark(watermark)
        for side, r in arrivals:
            (op.process_left if side == LEFT else op.process_right)(tuple(r), r.ts, key)
        results.extend((r.key, r.value, r.timestamp) for r in op.extract_output())
        for side, tag in ((LEFT, left_late), (RIGHT, right_late)):
            lates.extend((side, e.key, e.value, e.watermark) for e in op.extract_side_output(tag))
        if op.num_buffered():
            stored[key] = StateWriter().finish(op.snapshot())

    for watermark, arrivals in batches:
        keys = sorted({r.key for _, r in arrivals})
        for key in keys:
            call(key, watermark, [(s, r) for s, r in arrivals if r.key == key])
        for key in sorted(set(stored) - set(keys)):
            op = IntervalJoinOperator(lower, upper, lambda a, b: (a, b), **kw)
            op.restore(open_state(stored[key])[0])
            due = op.next_timer()
            if due is not None and due <= watermark and watermark > op.watermark:
                call(key, watermark, [])
    return results, lates


def one_operator_run(
    batches: list[tuple[int, list[tuple[str, Row]]]], lower: int, upper: int, **kw: Any
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The same micro-batches through one operator that holds every key (the batch replay)."""
    left_late, right_late = OutputTag("l"), OutputTag("r")
    op = IntervalJoinOperator(
        lower, upper, lambda a, b: (a, b), left_late_tag=left_late, right_late_tag=right_late, **kw
    )
    lates: list[tuple[Any, ...]] = []
    for watermark, arrivals in batches:
        op.process_watermark(watermark)
        for side, r in arrivals:
            (op.process_left if side == LEFT else op.process_right)(tuple(r), r.ts, r.key)
            for s, tag in ((LEFT, left_late), (RIGHT, right_late)):
                lates.extend((s, e.key, e.value, e.watermark) for e in op.extract_side_output(tag))
    results = [(r.key, r.value, r.timestamp) for r in op.extract_output()]
    return results, lates


def random_micro_batches(rng: random.Random) -> list[tuple[int, list[tuple[str, Row]]]]:
    """Micro-batches of both sides' rows, each with the watermark of the rows before it
    (the largest event time so far minus a delay, minus 1; never going back): rows at it
    and around it."""
    batches, seen, n, delay = [], None, 0, rng.randrange(0, 3)
    watermark = -(2**63)
    for b in range(rng.randrange(1, 8)):
        watermark = watermark if seen is None else max(watermark, seen - delay - 1)
        arrivals = []
        for _ in range(rng.randrange(0, 8)):
            ts = b * 4 + rng.randrange(-6, 4)
            if seen is not None and rng.random() < 0.3:
                ts = watermark + rng.choice((-1, 0, 0, 0, 1))  # at the watermark, or around it
            arrivals.append((rng.choice((LEFT, RIGHT)), Row(rng.choice("ab"), ts, n)))
            n += 1
        batches.append((watermark, arrivals))
        if arrivals:
            seen = max([seen or -(2**62)] + [r.ts for _, r in arrivals])
    return batches


@pytest.mark.parametrize("seed", range(60))
def test_interval_join_restored_per_key_and_micro_batch_equals_one_operator(seed: int) -> None:
    """Each key's buffers and watermark, encoded as plain data after each micro-batch and
    restored into a new operator, give the results and late rows one operator gives."""
    rng = random.Random(seed)
    lower = rng.randrange(-4, 2)
    upper = lower + rng.randrange(0, 5)
    kw = {"lower_inclusive": rng.random() < 0.7, "upper_inclusive": rng.random() < 0.7}
    batches = random_micro_batches(rng)
    got, got_late = micro_batch_run(batches, lower, upper, **kw)
    expected, expected_late = one_operator_run(batches, lower, upper, **kw)
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert sorted(got_late, key=repr) == sorted(expected_late, key=repr)


def test_a_restored_operator_keeps_a_timer_at_its_watermark_pending() -> None:
    """A left row at the watermark with ``upper <= 0`` is cleaned up at its own time, which
    the watermark has reached: the timer fires at the next advance, not on restoring, so a
    right row at the same watermark still joins it (Flink's timers fire as the watermark
    advances)."""
    op = IntervalJoinOperator(-3, 0, lambda a, b: (a, b))
    op.process_watermark(10)
    op.process_left("l", 10, "k")
    restored = IntervalJoinOperator(-3, 0, lambda a, b: (a, b))
    restored.restore(op.snapshot())
    assert restored.next_timer() == 10
    restored.process_watermark(10)  # the same watermark: nothing fires
    restored.process_right("r", 10, "k")
    assert [r.value for r in restored.extract_output()] == [("l", "r")]
    restored.process_watermark(11)
    assert restored.num_buffered() == 1  # the right row, until 10 + 3
    assert restored.snapshot() == (11, [("k", [], [(10, ["r"])])])
    with pytest.raises(ValueError, match="already holds"):
        restored.restore(op.snapshot())


def test_an_interval_join_snapshot_is_plain_data() -> None:
    """The snapshot of rows of plain values encodes unsigned, and loads without running
    code; the rows come back in their order."""
    from windowing.engine.encoding import StateWriter, open_state

    op = IntervalJoinOperator(0, 5, lambda a, b: (a, b))
    for i, t in enumerate((3, 1, 3)):
        op.process_left(("a", t, i), t, ("k", 1))
    op.process_right(("b", 9, 0), 9, ("k", 2))
    blob = StateWriter().finish(op.snapshot())
    assert blob[5] == 0  # unsigned, no user objects
    plain, _ = open_state(blob)
    assert plain == (
        -(2**63),
        [
            (("k", 1), [(1, [("a", 1, 1)]), (3, [("a", 3, 0), ("a", 3, 2)])], []),
            (("k", 2), [], [(9, [("b", 9, 0)])]),
        ],
    )
    assert op.next_timer() == 6
