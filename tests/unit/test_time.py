"""Unit tests for windowing.time: durations, saturation and datetime conversion."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from windowing.time import (
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    datetime_to_millis,
    instant_text,
    millis_to_datetime,
    saturating_add,
    to_millis,
)

# --------------------------------------------------------------------------- constants


def test_timestamp_bounds_are_java_long_bounds() -> None:
    assert MAX_TIMESTAMP == 9_223_372_036_854_775_807
    assert MIN_TIMESTAMP == -9_223_372_036_854_775_808
    assert MIN_TIMESTAMP == -MAX_TIMESTAMP - 1


# --------------------------------------------------------------------------- to_millis: int


@pytest.mark.parametrize("value", [0, 1, -1, 5_000, -28_800_000, MAX_TIMESTAMP, MIN_TIMESTAMP])
def test_to_millis_int_is_identity(value: int) -> None:
    result = to_millis(value)
    assert result == value
    assert type(result) is int


def test_to_millis_int_subclass_returns_plain_int() -> None:
    class Millis(int):
        pass

    result = to_millis(Millis(42))
    assert result == 42
    assert type(result) is int


# --------------------------------------------------------------------------- to_millis: timedelta


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (timedelta(0), 0),
        (timedelta(milliseconds=1), 1),
        (timedelta(milliseconds=-1), -1),
        (timedelta(seconds=5), 5_000),
        (timedelta(minutes=1, seconds=30), 90_000),
        (timedelta(hours=-8), -28_800_000),
        (timedelta(days=1), 86_400_000),
        (timedelta(days=-1, milliseconds=1), -86_399_999),
        (timedelta(weeks=2), 1_209_600_000),
        (timedelta(microseconds=3_000), 3),
        (timedelta(days=10_000, milliseconds=7), 864_000_000_007),
    ],
)
def test_to_millis_timedelta(value: timedelta, expected: int) -> None:
    result = to_millis(value)
    assert result == expected
    assert type(result) is int


@pytest.mark.parametrize(
    "value",
    [
        timedelta(microseconds=1),
        timedelta(microseconds=999),
        timedelta(microseconds=1_500),
        timedelta(microseconds=-1),
        timedelta(microseconds=-500),
        timedelta(seconds=1, microseconds=1),
    ],
)
def test_to_millis_sub_millisecond_timedelta_raises(value: timedelta) -> None:
    with pytest.raises(ValueError, match=r"window_size must be a whole number of milliseconds"):
        to_millis(value, "window_size")


# --------------------------------------------------------------------------- to_millis: strings


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10 seconds", 10_000),
        ("1 second", 1_000),
        ("1 hour 30 minutes", 5_400_000),
        ("1 minute 30 seconds", 90_000),
        ("500 ms", 500),
        ("500ms", 500),
        ("1 millisecond", 1),
        ("7 milliseconds", 7),
        ("3 msec", 3),
        ("-8 hours", -28_800_000),
        ("+5 s", 5_000),
        ("interval 5 minutes", 300_000),
        ("INTERVAL 5 MINUTES", 300_000),
        ("Interval 1 day", 86_400_000),
        ("2 days", 172_800_000),
        ("1 week", 604_800_000),
        ("3 hrs", 10_800_000),
        ("1h30m", 5_400_000),
        ("  10 Seconds  ", 10_000),
        ("1 hour -30 minutes", 1_800_000),
        ("0 seconds", 0),
    ],
)
def test_to_millis_strings(text: str, expected: int) -> None:
    result = to_millis(text)
    assert result == expected
    assert type(result) is int


@pytest.mark.parametrize("unit", ["parsecs", "months", "years", "fortnights", "us", "ns"])
def test_to_millis_unknown_unit_names_parameter_and_unit(unit: str) -> None:
    with pytest.raises(ValueError, match=rf"gap: unknown time unit '{unit}'"):
        to_millis(f"10 {unit}", "gap")


def test_to_millis_unknown_unit_after_valid_part() -> None:
    with pytest.raises(ValueError, match=r"unknown time unit 'furlongs' in '1 hour 2 furlongs'"):
        to_millis("1 hour 2 furlongs")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "abc",
        "10",
        "seconds",
        "ten seconds",
        "1.5 seconds",
        "10 seconds garbage",
        "10 s 5",
        "interval",
        "interval ",
        "5 minutes; drop table",
        "--5 s",
    ],
)
def test_to_millis_garbage_string_raises_naming_parameter(text: str) -> None:
    with pytest.raises(ValueError, match=r"^size: cannot parse duration") as info:
        to_millis(text, "size")
    assert repr(text) in str(info.value)


def test_to_millis_default_name_in_message() -> None:
    with pytest.raises(ValueError, match=r"^duration: cannot parse duration 'x'"):
        to_millis("x")


# --------------------------------------------------------------------------- to_millis: bad types


@pytest.mark.parametrize("value", [True, False])
def test_to_millis_rejects_bool(value: bool) -> None:
    with pytest.raises(ValueError, match=rf"^slide must be a duration .*got bool {value}$"):
        to_millis(value, "slide")


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        (1.5, "float"),
        (10.0, "float"),
        (None, "NoneType"),
        ([10], "list"),
        (b"10 seconds", "bytes"),
        (object(), "object"),
    ],
)
def test_to_millis_rejects_other_types(value: object, type_name: str) -> None:
    with pytest.raises(ValueError, match=rf"^offset must be a duration .*got {type_name} "):
        to_millis(value, "offset")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- saturating_add


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (1, 2, 3),
        (-5, 3, -2),
        (MAX_TIMESTAMP, 0, MAX_TIMESTAMP),
        (MAX_TIMESTAMP, 1, MAX_TIMESTAMP),
        (MAX_TIMESTAMP, MAX_TIMESTAMP, MAX_TIMESTAMP),
        (MAX_TIMESTAMP - 10, 10, MAX_TIMESTAMP),
        (MAX_TIMESTAMP - 10, 9, MAX_TIMESTAMP - 1),
        (MAX_TIMESTAMP, -1, MAX_TIMESTAMP - 1),
        (MIN_TIMESTAMP, 0, MIN_TIMESTAMP),
        (MIN_TIMESTAMP, -1, MIN_TIMESTAMP),
        (MIN_TIMESTAMP, MIN_TIMESTAMP, MIN_TIMESTAMP),
        (MIN_TIMESTAMP + 10, -11, MIN_TIMESTAMP),
        (MIN_TIMESTAMP, 1, MIN_TIMESTAMP + 1),
        (MIN_TIMESTAMP, MAX_TIMESTAMP, -1),
    ],
)
def test_saturating_add(a: int, b: int, expected: int) -> None:
    assert saturating_add(a, b) == expected
    assert saturating_add(b, a) == expected


# --------------------------------------------------------------------------- datetime conversion


def test_datetime_to_millis_epoch_is_zero() -> None:
    assert datetime_to_millis(datetime(1970, 1, 1, tzinfo=UTC)) == 0


def test_datetime_to_millis_naive_is_utc() -> None:
    naive = datetime(2024, 3, 1, 12, 30, 15, 250_000)  # noqa: DTZ001 - naive on purpose
    aware = naive.replace(tzinfo=UTC)
    assert datetime_to_millis(naive) == datetime_to_millis(aware) == 1_709_296_215_250


def test_datetime_to_millis_respects_timezone() -> None:
    plus_one = timezone(timedelta(hours=1))
    assert datetime_to_millis(datetime(1970, 1, 1, 1, 0, tzinfo=plus_one)) == 0
    minus_eight = timezone(timedelta(hours=-8))
    assert datetime_to_millis(datetime(1970, 1, 1, tzinfo=minus_eight)) == 28_800_000


def test_datetime_to_millis_truncates_microseconds_towards_minus_infinity() -> None:
    utc = UTC
    assert datetime_to_millis(datetime(1970, 1, 1, 0, 0, 0, 1_999, tzinfo=utc)) == 1
    # 0.5 ms before the epoch is in millisecond -1 (floor), not 0.
    before = datetime(1969, 12, 31, 23, 59, 59, 999_500, tzinfo=utc)
    assert datetime_to_millis(before) == -1


def test_datetime_to_millis_before_epoch() -> None:
    assert datetime_to_millis(datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC)) == -1_000


def test_millis_to_datetime_is_utc_aware() -> None:
    dt = millis_to_datetime(1_500)
    assert dt == datetime(1970, 1, 1, 0, 0, 1, 500_000, tzinfo=UTC)
    assert dt.tzinfo is not None
    assert dt.utcoffset() == timedelta(0)


def test_millis_to_datetime_negative() -> None:
    assert millis_to_datetime(-1) == datetime(1969, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC)


@pytest.mark.parametrize(
    "ms",
    [0, 1, -1, 999, -999, 1_000, -86_400_001, 1_709_296_215_250, 253_402_300_799_999],
)
def test_millis_datetime_round_trip(ms: int) -> None:
    assert datetime_to_millis(millis_to_datetime(ms)) == ms


def test_datetime_millis_round_trip_from_naive() -> None:
    naive = datetime(2000, 1, 2, 3, 4, 5, 6_000)  # noqa: DTZ001 - naive on purpose
    back = millis_to_datetime(datetime_to_millis(naive))
    assert back == naive.replace(tzinfo=UTC)


def test_instant_text_shows_the_utc_time_next_to_the_milliseconds() -> None:
    assert instant_text(0) == "0 (1970-01-01T00:00:00.000Z)"
    assert instant_text(-1) == "-1 (1969-12-31T23:59:59.999Z)"
    assert instant_text(MAX_TIMESTAMP).endswith("(the end of time)")
    assert instant_text(MIN_TIMESTAMP).endswith("(no watermark yet)")
    assert instant_text(10**17) == str(10**17)  # beyond year 9999: the milliseconds only


def test_a_user_error_names_the_element_time_in_utc() -> None:
    from windowing.assigners import TumblingEventTimeWindows
    from windowing.operator import WindowOperator

    def fails(a: int, b: int) -> int:
        raise ZeroDivisionError

    op = WindowOperator(TumblingEventTimeWindows(10), fails)
    op.process_element(1, 1_700_000_000_000, key="k")
    with pytest.raises(ZeroDivisionError) as caught:
        op.process_element(2, 1_700_000_000_001, key="k")
    notes = "\n".join(caught.value.__notes__)
    assert "timestamp 1700000000001 (2023-11-14T22:13:20.001Z)" in notes
