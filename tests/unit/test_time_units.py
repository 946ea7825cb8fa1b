"""Unit tests for the units of integral time columns (``windowing.time.TimeUnit``) and the
check that an event-time column read as milliseconds holds another unit."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowing.errors import EventTimeUnitWarning
from windowing.time import (
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    UNIT_BANDS,
    TimeUnit,
    suspected_unit,
    unit_warning_text,
)

S, MS, US, NS = (
    TimeUnit.SECONDS,
    TimeUnit.MILLISECONDS,
    TimeUnit.MICROSECONDS,
    TimeUnit.NANOSECONDS,
)
#: 2023-11-14T22:13:20Z in each unit.
NOW = {
    S: 1_700_000_000,
    MS: 1_700_000_000_000,
    US: 1_700_000_000_000_000,
    NS: 1_700_000_000 * 10**9,
}
#: Values whose conversions stay inside ``long`` for every unit (about +-292 years of ns).
SAFE = st.integers(-(2**62) // 10**6, 2**62 // 10**6)


# --------------------------------------------------------------------------- the unit table


@pytest.mark.parametrize("text", ["s", "ms", "us", "ns"])
def test_of_reads_each_unit_and_keeps_a_member(text: str) -> None:
    unit = TimeUnit.of(text, "event_time_unit")
    assert unit.value == text
    assert TimeUnit.of(unit) is unit


@pytest.mark.parametrize("value", ["sec", "seconds", "MS", "", 1000, None])
def test_of_an_unknown_unit_names_the_parameter_and_value(value: object) -> None:
    with pytest.raises(
        ValueError, match="event_time_unit must be one of 's', 'ms', 'us', 'ns'"
    ) as e:
        TimeUnit.of(value, "event_time_unit")  # type: ignore[arg-type]
    assert repr(value) in str(e.value)


def test_to_millis_multiplies_seconds_and_floors_finer_units() -> None:
    assert S.to_millis(NOW[S]) == MS.to_millis(NOW[MS]) == NOW[MS]
    assert US.to_millis(NOW[US] + 999) == NOW[MS]
    assert NS.to_millis(NOW[NS] + 999_999) == NOW[MS]
    assert S.to_millis(-3) == -3_000


@pytest.mark.parametrize(
    ("unit", "value", "ms"),
    [
        (US, -1, -1),  # 1 us before the epoch is in the millisecond before it
        (US, -1_000, -1),
        (US, -1_001, -2),
        (NS, -1, -1),
        (NS, -1_000_000, -1),
        (NS, -1_000_001, -2),
        (US, 999, 0),
        (NS, 999_999, 0),
    ],
)
def test_to_millis_floors_negative_values_toward_the_past(
    unit: TimeUnit, value: int, ms: int
) -> None:
    assert unit.to_millis(value) == ms


def test_seconds_beyond_the_millisecond_clock_saturate() -> None:
    hi = MAX_TIMESTAMP // 1_000
    assert S.to_millis(hi) == hi * 1_000
    assert S.to_millis(hi + 1) == MAX_TIMESTAMP
    assert S.to_millis(-hi) == -hi * 1_000
    assert S.to_millis(-hi - 1) == MIN_TIMESTAMP


@pytest.mark.parametrize("unit", [US, NS])
def test_finer_units_of_the_ends_of_time_stay_there(unit: TimeUnit) -> None:
    assert unit.from_millis(MAX_TIMESTAMP) == MAX_TIMESTAMP
    assert unit.from_millis(MAX_TIMESTAMP, bound=True) == MAX_TIMESTAMP
    assert unit.from_millis(MIN_TIMESTAMP) == MIN_TIMESTAMP
    assert unit.from_millis(MIN_TIMESTAMP, bound=True) == MIN_TIMESTAMP


@given(unit=st.sampled_from(list(TimeUnit)), start=SAFE, size=st.integers(1, 10**7), t=SAFE)
def test_a_value_is_in_a_window_exactly_when_its_bounds_in_the_unit_say_so(
    unit: TimeUnit, start: int, size: int, t: int
) -> None:
    end = start + size
    t = t * 1_000 if unit is NS else t  # values near the window for every unit
    ms = unit.to_millis(t)
    lo, hi = unit.from_millis(start, bound=True), unit.from_millis(end, bound=True)
    assert (lo <= t < hi) == (start <= ms < end)
    # the max timestamp (end - 1 ms) is the window's last value of the unit
    assert unit.from_millis(end - 1) == hi - 1


@given(unit=st.sampled_from(list(TimeUnit)), watermark=SAFE, t=SAFE)
def test_a_value_is_behind_a_watermark_exactly_when_it_is_at_most_the_watermark_in_the_unit(
    unit: TimeUnit, watermark: int, t: int
) -> None:
    assert (t <= unit.from_millis(watermark)) == (unit.to_millis(t) <= watermark)


@given(unit=st.sampled_from(list(TimeUnit)), ms=SAFE)
def test_an_instant_goes_back_to_its_millisecond_or_the_second_holding_it(
    unit: TimeUnit, ms: int
) -> None:
    back = unit.to_millis(unit.from_millis(ms))
    if unit is S:
        assert back <= ms < back + 1_000
        assert back % 1_000 == 0
    else:
        assert back == ms


def test_iso_text_of_each_unit() -> None:
    for unit, value in NOW.items():
        assert unit.to_datetime_text(value) == "2023-11-14T22:13:20.000Z"
    assert NS.to_datetime_text(-1) == "1969-12-31T23:59:59.999Z"  # floored
    assert MS.to_datetime_text(NOW[US]) == "about the year 55,841"


# --------------------------------------------------------------------------- the check


@pytest.mark.parametrize("unit", [S, US, NS])
def test_values_of_another_unit_are_suspected(unit: TimeUnit) -> None:
    day = {S: 86_400, US: 86_400 * 10**6, NS: 86_400 * 10**9}[unit]
    assert suspected_unit(NOW[unit], NOW[unit] + day) is unit
    assert suspected_unit(NOW[unit], NOW[unit]) is unit


@pytest.mark.parametrize(
    ("low", "high"),
    [
        (0, 100_000),  # the small millisecond times of tests
        (-5_000, 60_000),
        (NOW[MS], NOW[MS] + 3_600_000),  # milliseconds of 2023
        (1, NOW[S]),  # mixed: a value that is no second of 1973-2286
        (NOW[S], NOW[MS]),  # seconds and milliseconds
        (-NOW[S], -NOW[S] + 10),  # negative values are never suspected
        (10**16, 5 * 10**16),  # microseconds of 2286-5138 or nanoseconds of 1970-1973
        (99_999_999, 10**9),  # below the seconds' band
        (10**8, 10**10),  # its top is outside
    ],
)
def test_plausible_or_ambiguous_values_are_not_suspected(low: int, high: int) -> None:
    assert suspected_unit(low, high) is None


def test_the_bands_are_1973_to_2286_in_their_unit_and_implausible_as_milliseconds() -> None:
    as_ms = {S: ("1970-01-02", "1970-04-26"), US: ("5138-11-16", "about the year 318,857")}
    for unit, (lo, hi) in UNIT_BANDS.items():
        assert unit.to_datetime_text(lo).startswith("1973-03-03")
        assert unit.to_datetime_text(min(hi, MAX_TIMESTAMP))[:4] in ("2286", "2262")
        first, last = as_ms.get(unit, ("about the year 3,170,", "about the year 292,"))
        assert MS.to_datetime_text(lo).startswith(first)
        assert MS.to_datetime_text(min(hi, MAX_TIMESTAMP)).startswith(last)


def test_the_warning_names_the_column_both_readings_and_the_parameter() -> None:
    text = unit_warning_text("sent_at", NOW[S], NOW[S] + 100, S)
    assert "event_time column 'sent_at'" in text
    assert f"from {NOW[S]} to {NOW[S] + 100}" in text
    assert "1970-01-20T16:13:20.000Z to 1970-01-20T16:13:20.100Z" in text
    assert "epoch seconds 2023-11-14T22:13:20.000Z to 2023-11-14T22:15:00.000Z" in text
    assert "event_time_unit='s'" in text
    assert "event_time_unit='ms'" in text
    joined = unit_warning_text("sent_at", NOW[S], NOW[S] + 100, S, where="the left input")
    assert "event_time column 'sent_at' of the left input holds values" in joined


def test_the_warning_is_a_user_warning() -> None:
    assert issubclass(EventTimeUnitWarning, UserWarning)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("x", EventTimeUnitWarning, stacklevel=1)
    assert [w.category for w in caught] == [EventTimeUnitWarning]
