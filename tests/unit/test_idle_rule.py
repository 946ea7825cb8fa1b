"""The idle rule (``windowing.idleness``): when a quiet key's watermark moves, and that its
clock never goes back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from windowing.idleness import Idleness, KeyIdleness
from windowing.job import BoundedOutOfOrderness, MonotonousTimestamps
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

IDLE = Idleness(timeout=30_000, strategy=BoundedOutOfOrderness(5_000))


def test_not_idle_before_the_timeout() -> None:
    assert IDLE.watermark_at(60_000, last_arrival=1_000, now=30_999) == MIN_TIMESTAMP
    # exactly the timeout: as if a row at 60_000 + 30_000 had arrived
    assert IDLE.watermark_at(60_000, last_arrival=1_000, now=31_000) == 90_000 - 5_000 - 1


def test_the_quiet_time_moves_the_watermark_through_the_strategy() -> None:
    monotonous = Idleness(timeout=10, strategy=MonotonousTimestamps())
    assert monotonous.watermark_at(100, last_arrival=0, now=50) == 149
    assert IDLE.watermark_at(60_000, last_arrival=0, now=100_000) == 60_000 + 100_000 - 5_001


def test_a_key_without_event_times_or_rows_never_idles() -> None:
    assert IDLE.watermark_at(None, last_arrival=0, now=10**9) == MIN_TIMESTAMP
    assert IDLE.watermark_at(5, last_arrival=None, now=10**9) == MIN_TIMESTAMP


def test_the_end_of_time_saturates() -> None:
    assert IDLE.watermark_at(MAX_TIMESTAMP - 10, last_arrival=0, now=10**9) == (
        MAX_TIMESTAMP - 5_001
    )


def test_the_key_clock_is_the_largest_of_its_own_the_streams_and_the_idle_one() -> None:
    key = KeyIdleness(max_event_time=60_000, last_arrival=1_000, watermark=70_000)
    assert key.clock(IDLE, watermark=50_000, now=2_000) == 70_000  # its own, kept
    assert key.clock(IDLE, watermark=80_000, now=2_000) == 80_000  # the stream's
    assert key.clock(IDLE, watermark=50_000, now=61_000) == 60_000 + 60_000 - 5_001
    assert key.as_tuple() == (60_000, 1_000, 70_000)


@given(
    st.lists(
        st.tuples(
            st.integers(0, 5_000),  # processing time step
            st.one_of(st.none(), st.integers(0, 100_000)),  # a row's event time, or a poll
            st.integers(0, 3_000),  # stream watermark step
        ),
        max_size=40,
    )
)
def test_a_keys_clock_never_goes_back_and_is_never_behind_the_stream(
    steps: list[tuple[int, int | None, int]],
) -> None:
    """Calls as the streaming runtime makes them: the clock at each call, then the state it
    stores (the row's event time and arrival, the clock reached)."""
    idle = Idleness(timeout=1_000, strategy=BoundedOutOfOrderness(500))
    state: KeyIdleness | None = None
    now, stream, clock = 0, MIN_TIMESTAMP, MIN_TIMESTAMP
    for dt, ts, dw in steps:
        now += dt
        stream = dw if stream == MIN_TIMESTAMP else stream + dw
        current = stream if state is None else state.clock(idle, stream, now)
        assert current >= clock and current >= stream
        if state is not None and now - state.last_arrival >= 1_000 and state.max_event_time:
            assert current >= state.max_event_time + (now - state.last_arrival) - 501
        clock = current
        if ts is not None:  # a row: the key is no longer quiet
            newest = (
                ts
                if state is None or state.max_event_time is None
                else max(state.max_event_time, ts)
            )
            state = KeyIdleness(newest, now, clock)
        elif state is not None:
            state = KeyIdleness(state.max_event_time, state.last_arrival, clock)
