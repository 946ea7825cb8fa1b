"""The versioned state encoding (``windowing.engine.encoding``).

``tests/fixtures/state/format1-*.bin`` (unsigned) and ``format2-*.bin`` (signed with the test
suite's state key, ``tests/conftest.py``) are snapshots taken mid-way through the scenarios
below. Restoring one and running the rest of its scenario must give exactly what a run that
never stopped gives: a later change must keep these files loading (or bump the format with a
clear error). Regenerate the current format's files only when adding a scenario:

    .venv/bin/python -m tests.unit.test_state_encoding
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from windowing import MAX_TIMESTAMP, OutputTag
from windowing.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    HoppingEventTimeWindows,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from windowing.engine import encoding
from windowing.engine.encoding import (
    FORMAT,
    MAGIC,
    STATE_KEY_ENV,
    StateAuthenticationError,
    StateFormatError,
    UnauthenticatedStateWarning,
    decode_key_state,
    encode_key_state,
)
from windowing.evictors import CountEvictor
from windowing.functions import AggregateFunction, ProcessWindowFunction, ReduceFunction
from windowing.state import ValueStateDescriptor
from windowing.testing import WindowOperatorHarness
from windowing.triggers import ContinuousEventTimeTrigger, CountTrigger

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "state"
LATE = OutputTag("late")


class Sum(ReduceFunction[int]):
    order_insensitive = True

    def reduce(self, a: int, b: int) -> int:
        return a + b


class Avg(AggregateFunction[int, list[int], float]):
    order_insensitive = True

    def create_accumulator(self) -> list[int]:
        return [0, 0]

    def add(self, value: int, acc: list[int]) -> list[int]:
        return [acc[0] + value, acc[1] + 1]

    def get_result(self, acc: list[int]) -> float:
        return acc[0] / acc[1]

    def merge(self, a: list[int], b: list[int]) -> list[int]:
        return [a[0] + b[0], a[1] + b[1]]


class Firings(ProcessWindowFunction[int, tuple[int, int], Any, Any]):
    """Counts its firings per window (per-window state) and per key (global state)."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        seen = ValueStateDescriptor("seen", default=0)
        window_count = context.window_state().get_state(seen)
        key_count = context.global_state().get_state(seen)
        window_count.update(window_count.value() + 1)
        key_count.update(key_count.value() + 1)
        return [(sum(elements), window_count.value() * 100 + key_count.value())]

    def clear(self, context: Any) -> None:
        context.window_state().get_state(ValueStateDescriptor("seen", default=0)).clear()


def _events(seed: int) -> list[tuple[str, Any, Any]]:
    """A script: elements ``("e", value, ts)`` per key, watermarks ``("w", wm, None)`` and
    processing times ``("p", t, None)``, with disorder and late elements."""
    script: list[tuple[str, Any, Any]] = []
    ts = 0
    for i in range(60):
        ts += (i * 7 + seed) % 5
        back = (i * 13 + seed) % 11
        script.append(("e", (f"k{i % 3}", i), ts - back))
        if i % 6 == 5:
            script.append(("w", ts - 4, None))
        if i % 10 == 9:
            script.append(("p", ts, None))
    script.append(("w", MAX_TIMESTAMP, None))
    script.append(("p", MAX_TIMESTAMP, None))
    return script


SCENARIOS: dict[str, Callable[[], WindowOperatorHarness]] = {
    "tumbling-process-state": lambda: WindowOperatorHarness(
        TumblingEventTimeWindows(10),
        Firings(),
        allowed_lateness=6,
        late_output_tag=LATE,
    ),
    "hopping-panes": lambda: WindowOperatorHarness(
        HoppingEventTimeWindows(12, 4), Avg(), allowed_lateness=5, late_output_tag=LATE
    ),
    "sessions-count-trigger": lambda: WindowOperatorHarness(
        EventTimeSessionWindows(4), Sum(), trigger=CountTrigger(2), late_output_tag=LATE
    ),
    "global-evictor": lambda: WindowOperatorHarness(
        GlobalWindows(), Firings(), trigger=CountTrigger(4), evictor=CountEvictor(2)
    ),
    "continuous-trigger": lambda: WindowOperatorHarness(
        TumblingEventTimeWindows(20), Sum(), trigger=ContinuousEventTimeTrigger(5)
    ),
    "kip450-kafka": lambda: WindowOperatorHarness(
        SlidingDistinctAssigner(8, grace=4), Sum(), late_output_tag=LATE
    ),
    "kip450-timeline": lambda: WindowOperatorHarness(
        SlidingDistinctAssigner(8, grace=4), Avg(), slicing=True, late_output_tag=LATE
    ),
    "processing-time": lambda: WindowOperatorHarness(TumblingProcessingTimeWindows(10), Sum()),
}


def _drive(h: WindowOperatorHarness, script: list[tuple[str, Any, Any]]) -> None:
    for kind, a, b in script:
        if kind == "e":
            key, value = a
            h.process_element(value, b, key)
        elif kind == "w":
            h.process_watermark(a)
        else:
            h.set_processing_time(a)


def _observed(h: WindowOperatorHarness) -> tuple[Any, ...]:
    return (
        sorted(map(repr, h.extract_output())),
        sorted(map(repr, h.extract_side_output(LATE))),
        h.metrics,
    )


def _cut(script: list[tuple[str, Any, Any]]) -> int:
    return len(script) * 2 // 3


@pytest.fixture
def no_state_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No state key, and the once-per-process warning not given yet."""
    monkeypatch.delenv(STATE_KEY_ENV)
    monkeypatch.setattr(encoding, "_warned", False)


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_fixtures_restore_and_continue_as_an_uninterrupted_run(
    name: str, version: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _events(len(name))
    cut = _cut(script)
    uninterrupted = SCENARIOS[name]()
    _drive(uninterrupted, script[:cut])
    uninterrupted.extract_output()
    uninterrupted.extract_side_output(LATE)
    _drive(uninterrupted, script[cut:])

    data = (FIXTURES / f"format{version}-{name}.bin").read_bytes()
    assert data[:4] == MAGIC and data[4] == version
    restored = SCENARIOS[name]()
    if version == 1:  # unsigned: loads only without a key, with a warning
        with pytest.raises(StateAuthenticationError, match="not authenticated"):
            restored.restore(data)
        monkeypatch.delenv(STATE_KEY_ENV)
        monkeypatch.setattr(encoding, "_warned", False)
        with pytest.warns(UnauthenticatedStateWarning, match=STATE_KEY_ENV):
            restored.restore(data)
    else:
        assert data[5] == 32  # signed
        restored.restore(data)
    assert restored.metrics == type(restored.metrics)()  # metrics are not state
    _drive(restored, script[cut:])
    outputs, late, _ = _observed(restored)
    expected_outputs, expected_late, _ = _observed(uninterrupted)
    assert outputs == expected_outputs and outputs
    assert late == expected_late


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_snapshot_of_this_version_equals_the_fixture_state(name: str) -> None:
    """Taking the snapshot again at the cut gives the same state (the fixture is current)."""
    script = _events(len(name))
    h = SCENARIOS[name]()
    _drive(h, script[: _cut(script)])
    fresh = SCENARIOS[name]()
    fresh.restore((FIXTURES / f"format{FORMAT}-{name}.bin").read_bytes())
    assert fresh.snapshot() == h.snapshot()
    assert fresh.num_state_entries() == h.num_state_entries() > 0
    assert fresh.num_event_time_timers() == h.num_event_time_timers()
    assert fresh.num_processing_time_timers() == h.num_processing_time_timers()


def test_the_plain_part_never_runs_code(tmp_path: Path) -> None:
    """A tampered state naming a callable is refused before anything is called."""
    marker = tmp_path / "ran"

    class Boom:
        def __reduce__(self) -> tuple[Any, ...]:
            return (Path.touch, (marker,))

    payload = pickle.dumps((Boom(), pickle.dumps([])))
    header = MAGIC + bytes((FORMAT,))
    key = os.environ[STATE_KEY_ENV].encode()
    tag = encoding.hmac.new(key, header + payload, "sha256").digest()  # even correctly signed
    crafted = header + bytes((len(tag),)) + tag + payload
    with pytest.raises(StateFormatError, match="holds no objects"):
        decode_key_state(crafted)
    assert not marker.exists()


def test_tampered_user_objects_are_refused_before_unpickling(tmp_path: Path) -> None:
    """With a state key, user objects that the key does not authenticate are never unpickled:
    a tampered snapshot whose user part would run code raises a clear error instead."""
    marker = tmp_path / "ran"

    class Boom:
        def __reduce__(self) -> tuple[Any, ...]:
            return (Path.touch, (marker,))

    h = SCENARIOS["tumbling-process-state"]()
    _drive(h, _events(1)[:20])
    good = h.snapshot()
    assert good[5] == 32
    plain, _ = pickle.loads(good[6 + 32 :])
    evil = good[: 6 + 32] + pickle.dumps((plain, pickle.dumps([Boom()] * 50)), protocol=5)
    with pytest.raises(StateAuthenticationError, match="tampered"):
        SCENARIOS["tumbling-process-state"]().restore(evil)
    flipped = good[:-3] + bytes((good[-3] ^ 1,)) + good[-2:]
    with pytest.raises(StateAuthenticationError, match="tampered"):
        SCENARIOS["tumbling-process-state"]().restore(flipped)
    assert not marker.exists()


def test_state_of_another_key_or_none_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    h = SCENARIOS["kip450-kafka"]()
    _drive(h, _events(2)[:30])
    signed = h.snapshot()
    monkeypatch.setenv(STATE_KEY_ENV, "another key")
    with pytest.raises(StateAuthenticationError, match="another key"):
        SCENARIOS["kip450-kafka"]().restore(signed)
    monkeypatch.delenv(STATE_KEY_ENV)
    unsigned = h.snapshot()
    assert unsigned[5] == 0
    monkeypatch.setenv(STATE_KEY_ENV, "the test suite's state key")
    with pytest.raises(StateAuthenticationError, match="written without one"):
        SCENARIOS["kip450-kafka"]().restore(unsigned)


def test_without_a_key_state_loads_with_one_warning(no_state_key: None) -> None:
    h = SCENARIOS["hopping-panes"]()
    _drive(h, _events(3)[:30])
    data = h.snapshot()
    with pytest.warns(UnauthenticatedStateWarning, match="run code"):
        SCENARIOS["hopping-panes"]().restore(data)
    restored = SCENARIOS["hopping-panes"]()
    restored.restore(data)  # once per process: no second warning (warnings are errors here)
    assert restored.snapshot() == data


def test_other_formats_and_foreign_bytes_are_refused_clearly() -> None:
    from windowing.engine.keystate import KeyState

    good = encode_key_state(KeyState())
    newer = good[:4] + bytes((FORMAT + 1,)) + good[5:]
    with pytest.raises(
        StateFormatError, match=rf"format {FORMAT + 1}.*reads formats 1 to {FORMAT}"
    ):
        decode_key_state(newer)
    with pytest.raises(StateFormatError, match="no format header"):
        decode_key_state(pickle.dumps({"version": 1}))


def test_plain_part_names_no_internal_class() -> None:
    """Renaming an internal class cannot break state: only user objects are pickled."""
    h = SCENARIOS["kip450-timeline"]()
    script = _events(3)
    _drive(h, script[: _cut(script)])
    data = h.snapshot()
    for internal in (b"KeyState", b"StateTable", b"Timeline", b"Slices", b"RangeCursor"):
        assert internal not in data


def test_pickled_snapshots_of_earlier_versions_still_load_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import cloudpickle

    h = SCENARIOS["tumbling-process-state"]()
    script = _events(1)
    _drive(h, script[:20])
    legacy = cloudpickle.dumps(
        {
            "version": 1,
            "watermark": h.watermark,
            "processing_time": h.operator.processing_time,
            "states": dict(h.operator.backend.items()),
        }
    )
    restored = SCENARIOS["tumbling-process-state"]()
    with pytest.raises(StateAuthenticationError, match="pickled snapshot"):
        restored.restore(legacy)  # a pickle cannot be authenticated: refused with a key
    monkeypatch.delenv(STATE_KEY_ENV)
    monkeypatch.setattr(encoding, "_warned", False)
    with (
        pytest.warns(DeprecationWarning, match="pickled snapshot"),
        pytest.warns(UnauthenticatedStateWarning),
    ):
        restored.restore(legacy)
    assert restored.snapshot() == h.snapshot()


def _write_fixtures() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, factory in SCENARIOS.items():
        script = _events(len(name))
        h = factory()
        _drive(h, script[: _cut(script)])
        (FIXTURES / f"format{FORMAT}-{name}.bin").write_bytes(h.snapshot())


if __name__ == "__main__":
    os.environ.setdefault(STATE_KEY_ENV, "the test suite's state key")  # as tests/conftest.py
    _write_fixtures()
