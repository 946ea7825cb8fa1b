"""The versioned state encoding (``windowing.engine.encoding``).

``tests/fixtures/state/format1-*.bin`` (unsigned), ``format2-*.bin`` and ``format3-*.bin``
(signed with the test suite's state key, ``TEST_KEY``) are snapshots taken mid-way
through the scenarios below. Restoring one and running the rest of its scenario must give
exactly what a run that never stopped gives: a later change must keep these files loading (or
bump the format with a clear error). Regenerate the current format's files only when adding a
scenario:

    .venv/bin/python -m tests.unit.test_state_encoding
"""

from __future__ import annotations

import copy
import datetime
import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    TRUST_ENV,
    StateAuthenticationError,
    StateCorruptError,
    StateFormatError,
    StateScope,
    UntrustedStateError,
    decode_key_state,
    decode_snapshot,
    encode_key_state,
)
from windowing.engine.keystate import KafkaWindowStore, KeyState, count_row
from windowing.evictors import CountEvictor
from windowing.functions import AggregateFunction, ProcessWindowFunction, ReduceFunction
from windowing.state import ValueStateDescriptor
from windowing.testing import WindowOperatorHarness
from windowing.triggers import ContinuousEventTimeTrigger, CountTrigger
from windowing.windows import TimeWindow

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


TEST_KEY = "the test suite's state key"  # the key the format 2 and 3 fixtures are signed with


@pytest.fixture(autouse=True)
def state_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Signed state by default in these tests (``no_state_key`` removes the key)."""
    monkeypatch.setenv(STATE_KEY_ENV, TEST_KEY)


@pytest.fixture
def no_state_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No state key (state is checksummed, not signed) and no opt-in."""
    monkeypatch.delenv(STATE_KEY_ENV)
    monkeypatch.delenv(TRUST_ENV, raising=False)


@pytest.mark.parametrize("version", [1, 2, 3])
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
    if version == 1:  # unsigned: refused with a key; plain values load without one, quietly
        with pytest.raises(StateAuthenticationError, match="not authenticated"):
            restored.operator.restore(data)
        monkeypatch.delenv(STATE_KEY_ENV)
        restored.operator.restore(data)  # warnings are errors in the tests: none is given
    else:
        assert data[5] == (32 if version == 2 else 1)  # signed
        restored.operator.restore(data)
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


class Boom:
    """An object whose unpickling would create ``marker``: proof of code run from state."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


def _forged(plain: Any, *, flags: int, scope: StateScope = encoding.NO_SCOPE) -> bytes:
    """A format 3 value with a valid tag for ``scope`` (the key's HMAC if one is set, else
    the checksum): what whoever can write the checkpoint (and knows the key) could write."""
    payload = pickle.dumps(plain, protocol=5)
    header = MAGIC + bytes((FORMAT, flags))
    return header + encoding._tag(encoding.state_key(), scope, header, payload) + payload


def test_unsigned_state_never_runs_code(tmp_path: Path, no_state_key: None) -> None:
    """Unsigned state naming a callable is refused before anything is called, even with a
    valid checksum and the user-objects flag cleared; so is a format 2 plain part."""
    marker = tmp_path / "ran"
    crafted = _forged(("snapshot", 0, 0, [("k", Boom(marker))]), flags=0)
    with pytest.raises(UntrustedStateError, match=r"pathlib\.Path\.touch.*WINDOWING_STATE_KEY"):
        decode_snapshot(crafted)
    flagged = _forged(("snapshot", 0, 0, [("k", Boom(marker))]), flags=2)
    with pytest.raises(UntrustedStateError, match="user objects"):
        decode_snapshot(flagged)
    legacy = MAGIC + bytes((2, 0)) + pickle.dumps((Boom(marker), pickle.dumps([])))
    with pytest.raises(StateFormatError, match="holds no objects"):
        decode_key_state(legacy)
    legacy_users = MAGIC + bytes((2, 0)) + pickle.dumps(((), pickle.dumps([Boom(marker)])))
    with pytest.raises(UntrustedStateError, match=r"pathlib\.Path\.touch"):
        decode_key_state(legacy_users)
    assert not marker.exists()


def test_tampered_signed_state_is_refused_before_unpickling(tmp_path: Path) -> None:
    """With a state key, state the key does not authenticate is never unpickled: a changed
    payload or a flipped bit raises a clear error instead."""
    marker = tmp_path / "ran"
    op = SCENARIOS["tumbling-process-state"]().operator
    good = op.snapshot()
    assert good[5] == 1  # signed
    evil = good[: 6 + 32] + pickle.dumps(("snapshot", 0, 0, [("k", Boom(marker))]), protocol=5)
    with pytest.raises(StateAuthenticationError, match="tampered"):
        decode_snapshot(evil)
    flipped = good[:-3] + bytes((good[-3] ^ 1,)) + good[-2:]
    with pytest.raises(StateAuthenticationError, match="tampered"):
        decode_snapshot(flipped)
    assert not marker.exists()


@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
def test_a_value_moved_to_another_key_group_or_query_is_refused(
    signed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tag covers where a value belongs: a key group's value copied into another key
    group, or into another query's checkpoint, is refused, naming where it was found."""
    if not signed:
        monkeypatch.delenv(STATE_KEY_ENV)
    ks = KeyState()
    ks.contents[TimeWindow(0, 10)] = 42
    data = encode_key_state(ks, StateScope("query-a", 3, "key group 3"))
    assert decode_key_state(data, StateScope("query-a", 3, "key group 3")).contents == {
        TimeWindow(0, 10): 42
    }
    error = StateAuthenticationError if signed else StateCorruptError
    for elsewhere in (StateScope("query-a", 4, "key group 4"), StateScope("query-b", 3, "kg 3")):
        with pytest.raises(error, match=rf"{elsewhere.where}.*(another query or key group)"):
            decode_key_state(data, elsewhere)


def test_every_single_bit_flip_of_unsigned_state_is_refused(no_state_key: None) -> None:
    """Unsigned state is checksummed: no single-bit corruption loads as other state."""
    ks = KeyState()
    ks.contents[TimeWindow(0, 10)] = [1, 2.5, "three", None]
    ks.evt_timers.add((9, TimeWindow(0, 10)))
    ks.evt_heap.append((9, 0, TimeWindow(0, 10)))
    data = encode_key_state(ks)
    for bit in range(len(data) * 8):
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises((StateFormatError, StateAuthenticationError)):
            decode_key_state(bytes(flipped))


def test_other_formats_and_foreign_bytes_are_refused_clearly() -> None:
    good = encode_key_state(KeyState())
    newer = good[:4] + bytes((FORMAT + 1,)) + good[5:]
    with pytest.raises(
        StateFormatError, match=rf"format {FORMAT + 1}.*reads formats 1 to {FORMAT}"
    ):
        decode_key_state(newer)
    with pytest.raises(StateFormatError, match="no format header"):
        decode_key_state(pickle.dumps({"version": 1}))


def test_state_of_another_key_or_none_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    op = SCENARIOS["kip450-kafka"]().operator
    signed = op.snapshot()
    monkeypatch.setenv(STATE_KEY_ENV, "another key")
    with pytest.raises(StateAuthenticationError, match="another key"):
        decode_snapshot(signed)
    monkeypatch.delenv(STATE_KEY_ENV)
    with pytest.raises(StateAuthenticationError, match=r"is signed.*not set"):
        decode_snapshot(signed)
    unsigned = op.snapshot()
    assert unsigned[5] == 0
    monkeypatch.setenv(STATE_KEY_ENV, TEST_KEY)
    with pytest.raises(StateAuthenticationError, match="not signed"):
        decode_snapshot(unsigned)


def test_plain_part_names_no_internal_class() -> None:
    """Renaming an internal class cannot break state: only user objects are pickled."""
    h = SCENARIOS["kip450-timeline"]()
    script = _events(3)
    _drive(h, script[: _cut(script)])
    data = h.snapshot()
    for internal in (b"KeyState", b"StateTable", b"Timeline", b"Slices", b"RangeCursor"):
        assert internal not in data


@dataclass
class Mean:
    """A user's accumulator class: a user object in state."""

    total: int = 0
    count: int = 0


class MeanOf(AggregateFunction[int, Mean, float]):
    def create_accumulator(self) -> Mean:
        return Mean()

    def add(self, value: int, acc: Mean) -> Mean:
        return Mean(acc.total + value, acc.count + 1)

    def get_result(self, acc: Mean) -> float:
        return acc.total / acc.count

    def merge(self, a: Mean, b: Mean) -> Mean:
        return Mean(a.total + b.total, a.count + b.count)


def _with_means() -> WindowOperatorHarness:
    h = WindowOperatorHarness(TumblingEventTimeWindows(10), MeanOf())
    h.process_element(4, 1, "k")
    h.process_element(6, 2, "k")
    return h


def test_user_objects_need_a_key_or_the_opt_in(
    no_state_key: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a key, state holding a user's class fails to be written, naming the class and
    both ways on; under the opt-in it is written and loads; with a key it is signed."""
    op = _with_means().operator
    with pytest.raises(
        UntrustedStateError, match=rf"{__name__}.Mean.*{STATE_KEY_ENV}.*{TRUST_ENV}"
    ):
        op.snapshot()
    monkeypatch.setenv(TRUST_ENV, "1")
    trusted = op.snapshot()
    assert trusted[5] == 2  # unsigned, holds user objects
    assert decode_snapshot(trusted)[2][0][1].contents == {TimeWindow(0, 10): Mean(10, 2)}
    monkeypatch.delenv(TRUST_ENV)
    with pytest.raises(UntrustedStateError, match="user objects"):
        decode_snapshot(trusted)  # refused before anything is unpickled
    monkeypatch.setenv(STATE_KEY_ENV, "a key")
    signed = op.snapshot()
    assert signed[5] == 3  # signed, holds user objects
    assert decode_snapshot(signed)[2][0][1].contents == {TimeWindow(0, 10): Mean(10, 2)}


def test_the_harness_trusts_its_own_snapshots(no_state_key: None) -> None:
    """A test's snapshots hold user objects without a key (the bytes are the test's own)."""
    h = _with_means()
    again = WindowOperatorHarness(TumblingEventTimeWindows(10), MeanOf())
    again.restore(h.snapshot())
    again.process_watermark(20)
    assert [r.value for r in again.extract_output()] == [5.0]


PLAIN_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=5)
    | st.binary(max_size=5)
    | st.datetimes(timezones=st.none() | st.just(datetime.UTC) | st.timezones())
    | st.dates()
    | st.timedeltas()
    | st.decimals(allow_nan=False)
    | st.builds(TimeWindow, st.integers(-50, 50), st.integers(51, 99)),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        | st.frozensets(st.integers(), max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60)
@given(value=PLAIN_VALUES)
def test_plain_values_round_trip_unsigned_and_untrusted(value: Any) -> None:
    """Every plain value (Spark's column values, windows, containers) is written without a
    key or the opt-in and reads back equal through the refusing unpickler."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(STATE_KEY_ENV)
        mp.delenv(TRUST_ENV, raising=False)
        ks = KeyState()
        ks.contents[TimeWindow(0, 10)] = value
        data = encode_key_state(ks)
        assert data[5] == 0  # unsigned, no user objects
        assert decode_key_state(data).contents == {TimeWindow(0, 10): value}


def test_time_zones_of_spark_timestamps_are_plain_and_no_other_getattr_is(
    no_state_key: None, tmp_path: Path
) -> None:
    """pyarrow gives timestamps ``ZoneInfo`` zones, which pickle through
    ``getattr(ZoneInfo, "_unpickle")``: that one ``getattr`` loads (also from a format 2
    value's user objects), any other is refused before it is called."""
    from zoneinfo import ZoneInfo

    paris = datetime.datetime(2024, 3, 31, 1, 30, tzinfo=ZoneInfo("Europe/Paris"))
    ks = KeyState()
    ks.contents[TimeWindow(0, 10)] = [paris, datetime.datetime(2024, 1, 1, tzinfo=ZoneInfo("UTC"))]
    data = encode_key_state(ks)
    assert data[5] == 0  # unsigned, no user objects
    assert decode_key_state(data).contents[TimeWindow(0, 10)][0] == paris
    users = pickle.dumps([paris], protocol=5)  # format 2: user objects pickled apart
    legacy = MAGIC + bytes((2, 0)) + pickle.dumps(([(("t", 0, 10), 0)], users), protocol=5)
    _, reader = encoding.open_state(legacy)
    assert reader.value(0) == paris

    class Sneaky:
        def __reduce__(self) -> tuple[Any, ...]:
            return (getattr, (ZoneInfo, "__init_subclass__"))

    with pytest.raises(StateFormatError, match="no plain type pickles through"):
        decode_snapshot(_forged(("snapshot", 0, 0, [("k", Sneaky())]), flags=0))


def test_pickled_snapshots_of_earlier_versions_load_only_under_the_opt_in(
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
    restored = SCENARIOS["tumbling-process-state"]().operator
    with pytest.raises(StateAuthenticationError, match="pickled snapshot"):
        restored.restore(legacy)  # a pickle cannot be authenticated: refused with a key
    monkeypatch.delenv(STATE_KEY_ENV)
    with pytest.raises(UntrustedStateError, match=f"pickled snapshot.*{TRUST_ENV}=1"):
        restored.restore(legacy)
    monkeypatch.setenv(TRUST_ENV, "1")
    with pytest.warns(DeprecationWarning, match="pickled snapshot"):
        restored.restore(legacy)
    monkeypatch.setenv(STATE_KEY_ENV, TEST_KEY)
    assert restored.snapshot() == h.snapshot()


def _write_fixtures() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, factory in SCENARIOS.items():
        script = _events(len(name))
        h = factory()
        _drive(h, script[: _cut(script)])
        (FIXTURES / f"format{FORMAT}-{name}.bin").write_bytes(h.snapshot())


if __name__ == "__main__":
    os.environ.setdefault(STATE_KEY_ENV, TEST_KEY)  # the key the fixtures are signed with
    _write_fixtures()


def test_pickles_of_earlier_versions_find_classes_where_they_moved() -> None:
    """Whole pickles of earlier versions name modules that moved since (the KIP-450 store of
    ``windowing.kip450``, the panes of ``windowing.slicing``): they load from the new places."""
    from windowing.engine.kafka import KafkaWindowStore
    from windowing.engine.panes import Slices

    old = pickle.dumps([Slices(7), KafkaWindowStore()], protocol=2)
    for now, then in ((Slices, b"windowing.slicing"), (KafkaWindowStore, b"windowing.kip450")):
        name = now.__name__.encode()
        old = old.replace(now.__module__.encode() + b"\n" + name, then + b"\n" + name)
    assert b"windowing.slicing\n" in old and b"windowing.kip450\n" in old
    slices, store = encoding.legacy_loads(old)
    assert type(slices) is Slices and slices.upto == 7
    assert type(store) is KafkaWindowStore


def _pickled_without(monkeypatch: pytest.MonkeyPatch, obj: Any, missing: set[str]) -> bytes:
    """``obj`` pickled as a version without the slots ``missing`` wrote it."""

    def older(self: Any) -> tuple[None, dict[str, Any]]:
        return None, {s: getattr(self, s) for s in type(self).__slots__ if s not in missing}

    with monkeypatch.context() as m:
        m.setattr(KeyState, "__getstate__", older)
        m.setattr(KafkaWindowStore, "__getstate__", older)
        return pickle.dumps(obj, protocol=2)


def test_pickled_key_states_of_earlier_versions_get_the_slots_added_since(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Checkpoint layouts 2 and 3 pickle key states whole: one written before a slot existed
    (the rows counted per window, a KIP-450 store's irregular mark) loads with the slot's
    default, and the operator's bookkeeping goes on with it."""
    ks = KeyState()
    w = TimeWindow(0, 10)
    ks.contents[w] = 5
    ks.kafka = store = KafkaWindowStore()
    store.put(0, 3, 7)
    store.put(5, 4, 9)
    store.expiry_at = 40
    old = _pickled_without(monkeypatch, ks, {"row_counts", "panes", "slices", "irregular_upto"})
    loaded = encoding.legacy_loads(old)
    assert loaded.contents == {w: 5} and loaded.row_counts is None and loaded.panes is None
    count_row(loaded, w, fresh=False)  # contents counted before rows were: stay uncounted
    count_row(loaded, TimeWindow(10, 20), fresh=True)
    assert loaded.row_counts == {TimeWindow(10, 20): 1}
    kafka = loaded.kafka
    assert (kafka.starts, kafka.values, kafka.max_ts, kafka.expiry_at) == (
        [0, 5],
        {0: 3, 5: 4},
        {0: 7, 5: 9},
        40,
    )
    # without the mark, any of its windows may differ from the definition (as a store of an
    # earlier encoding reads): up to its latest record
    assert kafka.irregular_upto == 10
    # the slots a pickle has are kept as they are
    again = copy.deepcopy(loaded)
    assert again.row_counts == {TimeWindow(10, 20): 1} and again.kafka.irregular_upto == 10
