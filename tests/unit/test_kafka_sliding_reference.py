"""KIP-450 sliding windows against Kafka Streams' own test data.

The inputs and expected outputs are those of Kafka's ``KStreamSlidingWindowAggregateTest``
(aggregator ``agg + "+" + value`` from ``"0"``, reducer ``a + "+" + b``), for both emit
strategies: ``onWindowUpdate`` (here ``OnWindowUpdateTrigger``: every update) and
``onWindowClose`` (``OnWindowCloseTrigger``: the final value once the window closes).
Kafka's stream time is the largest timestamp seen, including the record being processed; the
operator's watermark is stream time - 1, set before each record. Kafka does not flush at the
end of its input, so neither do these runs.

Outputs are compared per window as Kafka's tests do: the set of values a window emitted, or,
for the tests that list every update, the values in emission order.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from windowing.assigners.sliding_distinct import SlidingDistinctAssigner
from windowing.functions import Fold, Reduce
from windowing.testing import WindowOperatorHarness
from windowing.triggers.emit import OnWindowCloseTrigger, OnWindowUpdateTrigger

Record = tuple[str, str, int]  # key, value, timestamp


def kafka_aggregate(acc: str, value: str) -> str:
    return acc + "+" + value


def run(
    size: int, grace: int, records: list[Record], *, final: bool, reduce: bool = False
) -> dict[tuple[str, int], list[str]]:
    """Values emitted per (key, window start), in emission order."""
    function: Any = Reduce(lambda a, b: a + "+" + b) if reduce else Fold("0", kafka_aggregate)
    h = WindowOperatorHarness(
        SlidingDistinctAssigner(size, grace=grace),
        function,
        trigger=OnWindowCloseTrigger() if final else OnWindowUpdateTrigger(),
    )
    stream_time: int | None = None
    for key, value, ts in records:
        stream_time = ts if stream_time is None else max(stream_time, ts)
        h.process_watermark(stream_time - 1)
        h.process_element(value, ts, key=key)
    out: dict[tuple[str, int], list[str]] = defaultdict(list)
    for r in h.extract_output():
        assert r.window.end - 1 - r.window.start == size  # inclusive [start; start + size]
        out[(r.key, r.window.start)].append(r.value)
    return dict(out)


def as_sets(out: dict[tuple[str, int], list[str]]) -> dict[int, set[str]]:
    return {start: set(values) for (_, start), values in out.items()}


def a(*records: tuple[str, int]) -> list[Record]:
    return [("A", v, ts) for v, ts in records]


SMALL = a(("1", 10), ("2", 10), ("3", 14), ("4", 15), ("5", 20), ("6", 22), ("7", 30))


@pytest.mark.parametrize("final", [False, True], ids=["update", "close"])
def test_aggregate_small_input(final: bool) -> None:
    got = as_sets(run(10, 5, SMALL, final=final))
    if final:
        assert got == {
            0: {"0+1+2"},
            4: {"0+1+2+3"},
            5: {"0+1+2+3+4"},
            10: {"0+1+2+3+4+5"},
            11: {"0+3+4+5"},
            12: {"0+3+4+5+6"},
        }
    else:
        assert got == {
            0: {"0+1", "0+1+2"},
            4: {"0+1+2+3"},
            5: {"0+1+2+3+4"},
            10: {"0+1+2+3+4+5"},
            11: {"0+3", "0+3+4", "0+3+4+5"},
            12: {"0+3+4+5+6"},
            15: {"0+4", "0+4+5", "0+4+5+6"},
            16: {"0+5", "0+5+6"},
            20: {"0+5+6+7"},
            21: {"0+6", "0+6+7"},
            23: {"0+7"},
        }


@pytest.mark.parametrize("final", [False, True], ids=["update", "close"])
def test_reduce_small_input(final: bool) -> None:
    records = a(("1", 10), ("2", 14), ("3", 15), ("4", 22), ("5", 26), ("6", 30))
    got = as_sets(run(10, 5, records, final=final, reduce=True))
    if final:
        assert got == {0: {"1"}, 4: {"1+2"}, 5: {"1+2+3"}, 11: {"2+3"}, 12: {"2+3+4"}}
    else:
        assert got == {
            0: {"1"},
            4: {"1+2"},
            5: {"1+2+3"},
            11: {"2", "2+3"},
            12: {"2+3+4"},
            15: {"3", "3+4"},
            16: {"4", "4+5"},
            20: {"4+5+6"},
            23: {"5", "5+6"},
            27: {"6"},
        }


LARGE = [
    ("A", "1", 10), ("A", "2", 20), ("A", "3", 22), ("A", "4", 15),
    ("B", "1", 12), ("B", "2", 13), ("B", "3", 18), ("B", "4", 19), ("B", "5", 25), ("B", "6", 14),
    ("C", "1", 11), ("C", "2", 15), ("C", "3", 16), ("C", "4", 21), ("C", "5", 23),
    ("D", "4", 11), ("D", "2", 12), ("D", "3", 29), ("D", "5", 16),
]  # fmt: skip


def test_aggregate_large_input_every_update() -> None:
    got = run(10, 50, LARGE, final=False)
    assert got == {
        ("A", 0): ["0+1"],
        ("A", 5): ["0+1+4"],
        ("A", 10): ["0+1+2", "0+1+2+4"],
        ("A", 11): ["0+2", "0+2+4"],
        ("A", 12): ["0+2+3", "0+2+3+4"],
        ("A", 16): ["0+2+3"],
        ("A", 21): ["0+3"],
        ("B", 2): ["0+1"],
        ("B", 3): ["0+1+2"],
        ("B", 4): ["0+1+2+6"],
        ("B", 8): ["0+1+2+3", "0+1+2+3+6"],
        ("B", 9): ["0+1+2+3+4", "0+1+2+3+4+6"],
        ("B", 13): ["0+2", "0+2+3", "0+2+3+4", "0+2+3+4+6"],
        ("B", 14): ["0+3", "0+3+4", "0+3+4+6"],
        ("B", 15): ["0+3+4+5"],
        ("B", 19): ["0+4", "0+4+5"],
        ("B", 20): ["0+5"],
        ("C", 1): ["0+1"],
        ("C", 5): ["0+1+2"],
        ("C", 6): ["0+1+2+3"],
        ("C", 11): ["0+1+2+3+4"],
        ("C", 12): ["0+2", "0+2+3", "0+2+3+4"],
        ("C", 13): ["0+2+3+4+5"],
        ("C", 16): ["0+3", "0+3+4", "0+3+4+5"],
        ("C", 17): ["0+4", "0+4+5"],
        ("C", 22): ["0+5"],
        ("D", 1): ["0+4"],
        ("D", 2): ["0+4+2"],
        ("D", 6): ["0+4+2+5"],
        ("D", 12): ["0+2", "0+2+5"],
        ("D", 13): ["0+5"],
        ("D", 19): ["0+3"],
    }


def test_aggregate_large_input_final() -> None:
    got = run(10, 10, LARGE, final=True)
    assert got == {
        ("A", 0): ["0+1"],
        ("A", 5): ["0+1+4"],
        ("B", 2): ["0+1"],
        ("B", 3): ["0+1+2"],
        ("B", 8): ["0+1+2+3+6"],  # B@14's own left window [4; 14] was already closed
        ("C", 5): ["0+2"],  # C@11 was dropped: [1; 11] closed, at stream time 25
        ("C", 6): ["0+2+3"],
    }


EARLY = a(("1", 0), ("2", 5), ("3", 6), ("4", 3), ("5", 13), ("6", 10), ("7", 70))


@pytest.mark.parametrize("final", [False, True], ids=["update", "close"])
def test_early_records_small_input(final: bool) -> None:
    got = as_sets(run(50, 0, EARLY, final=final))
    if final:
        assert got == {
            0: {"0+1+2+3+4+5+6"},
            1: {"0+2+3+4+5+6"},
            4: {"0+2+3+5+6"},
            6: {"0+3+5+6"},
            7: {"0+5+6"},
            11: {"0+5"},
        }
    else:
        assert got == {
            0: {"0+1", "0+1+2", "0+1+2+3", "0+1+2+3+4", "0+1+2+3+4+5", "0+1+2+3+4+5+6"},
            1: {"0+2", "0+2+3", "0+2+3+4", "0+2+3+4+5", "0+2+3+4+5+6"},
            4: {"0+2+3", "0+2+3+5", "0+2+3+5+6"},
            6: {"0+3", "0+3+5", "0+3+5+6"},
            7: {"0+5", "0+5+6"},
            11: {"0+5"},
            20: {"0+7"},
        }


@pytest.mark.parametrize("final", [False, True], ids=["update", "close"])
def test_early_records_repeated_input(final: bool) -> None:
    records = a(
        ("1", 0), ("2", 2), ("3", 4), ("4", 0), ("5", 2), ("6", 2), ("7", 0), ("8", 7)
    )  # fmt: skip
    got = as_sets(run(5, 0, records, final=final))
    if final:
        assert got == {0: {"0+1+2+3+4+5+6+7"}, 1: {"0+2+3+5+6"}}
    else:
        assert got == {
            0: {
                "0+1",
                "0+1+2",
                "0+1+2+3",
                "0+1+2+3+4",
                "0+1+2+3+4+5",
                "0+1+2+3+4+5+6",
                "0+1+2+3+4+5+6+7",
            },
            1: {"0+2", "0+2+3", "0+2+3+5", "0+2+3+5+6"},
            2: {"0+2+3+5+6+8"},
            3: {"0+3", "0+3+8"},
            5: {"0+8"},
        }


E_LARGE = [("E", v, ts) for v, ts in [
    ("1", 0), ("3", 5), ("4", 6), ("2", 3), ("6", 13), ("5", 10), ("7", 4), ("8", 2), ("9", 15),
]]  # fmt: skip


@pytest.mark.parametrize("grace", [50, 0])
def test_early_records_large_input_every_update(grace: int) -> None:
    """Kafka's testEarlyRecordsLargeInput (grace 50) and testEarlyNoGracePeriodLargeInput
    (grace 0): with no grace the records at 10, 4 and 2 no longer reach [0; 10] and
    [1; 11]."""
    got = run(10, grace, E_LARGE, final=False)
    late_updates = (
        {
            ("E", 0): ["0+1+3+4+2+5", "0+1+3+4+2+5+7", "0+1+3+4+2+5+7+8"],
            ("E", 1): ["0+3+4+2+5", "0+3+4+2+5+7", "0+3+4+2+5+7+8"],
        }
        if grace
        else {("E", 0): [], ("E", 1): []}
    )
    assert got == {
        ("E", 0): ["0+1", "0+1+3", "0+1+3+4", "0+1+3+4+2", *late_updates[("E", 0)]],
        ("E", 1): ["0+3", "0+3+4", "0+3+4+2", *late_updates[("E", 1)]],
        ("E", 3): ["0+3+4+2+6", "0+3+4+2+6+5", "0+3+4+2+6+5+7"],
        ("E", 4): ["0+3+4", "0+3+4+6", "0+3+4+6+5", "0+3+4+6+5+7"],
        ("E", 5): ["0+3+4+6+5", "0+3+4+6+5+9"],
        ("E", 6): ["0+4", "0+4+6", "0+4+6+5", "0+4+6+5+9"],
        ("E", 7): ["0+6", "0+6+5", "0+6+5+9"],
        ("E", 11): ["0+6", "0+6+9"],
        ("E", 14): ["0+9"],
    }


@pytest.mark.parametrize("grace", [1, 0])
def test_early_records_large_input_final(grace: int) -> None:
    got = run(10, grace, E_LARGE, final=True)
    expected = {
        ("E", 0): ["0+1+3+4+2"],
        ("E", 1): ["0+3+4+2"],
        ("E", 3): ["0+3+4+2+6+5+7"],
    }
    if grace == 0:  # testEarlyNoGracePeriodLargeInput: [4; 14] closes by stream time 15
        expected[("E", 4)] = ["0+3+4+6+5+7"]
    assert got == expected


NO_GRACE = a(("1", 100), ("2", 105), ("3", 106), ("4", 103), ("5", 113), ("6", 110))


@pytest.mark.parametrize("final", [False, True], ids=["update", "close"])
def test_no_grace_period_small_input(final: bool) -> None:
    """The windows created after the out-of-order record 4@103 combine their records in
    arrival order: [63; 113] is 0+1+2+3+4+5, not 0+1+4+2+3+5."""
    got = as_sets(run(50, 0, NO_GRACE, final=final))
    if final:
        assert got == {50: {"0+1"}, 55: {"0+1+2"}, 56: {"0+1+2+3+4"}}
    else:
        assert got == {
            50: {"0+1"},
            55: {"0+1+2"},
            56: {"0+1+2+3", "0+1+2+3+4"},
            63: {"0+1+2+3+4+5", "0+1+2+3+4+5+6"},
            101: {"0+2", "0+2+3", "0+2+3+4", "0+2+3+4+5", "0+2+3+4+5+6"},
            104: {"0+2+3", "0+2+3+5", "0+2+3+5+6"},
            106: {"0+3", "0+3+5", "0+3+5+6"},
            107: {"0+5", "0+5+6"},
            111: {"0+5"},
        }


def test_no_grace_period_large_input_every_update() -> None:
    records = [("E", v, ts + 100) for _, v, ts in E_LARGE]
    got = run(10, 0, records, final=False)
    assert got == {
        ("E", 90): ["0+1"],
        ("E", 95): ["0+1+3"],
        ("E", 96): ["0+1+3+4", "0+1+3+4+2"],
        ("E", 101): ["0+3", "0+3+4", "0+3+4+2"],
        ("E", 103): ["0+3+4+2+6", "0+3+4+2+6+5", "0+3+4+2+6+5+7"],
        ("E", 104): ["0+3+4", "0+3+4+6", "0+3+4+6+5", "0+3+4+6+5+7"],
        ("E", 105): ["0+3+4+6+5", "0+3+4+6+5+9"],
        ("E", 106): ["0+4", "0+4+6", "0+4+6+5", "0+4+6+5+9"],
        ("E", 107): ["0+6", "0+6+5", "0+6+5+9"],
        ("E", 111): ["0+6", "0+6+9"],
        ("E", 114): ["0+9"],
    }
