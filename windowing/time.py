"""Time on the operator's clock: integer epoch milliseconds, and conversion at the API edge.

Event time, watermarks, timers and window bounds are ``int`` milliseconds, as in Flink, Kafka
Streams and Spark's stateful-processor timers. Durations given by users may be ``int``
milliseconds, :class:`datetime.timedelta`, or Spark-style interval strings such as
``"10 seconds"`` or ``"1 hour 30 minutes"``.

Examples
--------
>>> to_millis("1 minute 30 seconds")
90000
>>> to_millis(timedelta(seconds=5))
5000
>>> saturating_add(MAX_TIMESTAMP, 1) == MAX_TIMESTAMP
True
"""

from __future__ import annotations

import enum
import re
from datetime import UTC, datetime, timedelta

__all__ = [
    "MAX_TIMESTAMP",
    "MIN_TIMESTAMP",
    "UNIT_BANDS",
    "Duration",
    "TimeUnit",
    "datetime_to_millis",
    "instant_text",
    "iso_text",
    "java_add",
    "java_remainder",
    "millis_to_datetime",
    "saturating_add",
    "suspected_unit",
    "to_millis",
    "unit_warning_text",
]

#: Smallest timestamp on the operator clock (Java ``Long.MIN_VALUE``): "no watermark yet".
MIN_TIMESTAMP: int = -(2**63)
#: Largest timestamp on the operator clock (Java ``Long.MAX_VALUE``): "end of time".
MAX_TIMESTAMP: int = 2**63 - 1

Duration = int | timedelta | str

_UNITS_MS: dict[str, int] = {}
for _names, _ms in (
    (("ms", "milli", "millis", "millisecond", "milliseconds", "msec", "msecs"), 1),
    (("s", "sec", "secs", "second", "seconds"), 1_000),
    (("m", "min", "mins", "minute", "minutes"), 60_000),
    (("h", "hr", "hrs", "hour", "hours"), 3_600_000),
    (("d", "day", "days"), 86_400_000),
    (("w", "week", "weeks"), 604_800_000),
):
    for _name in _names:
        _UNITS_MS[_name] = _ms

_PART = re.compile(r"\s*([+-]?\d+)\s*([a-zA-Z]+)\s*")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _parse_interval(text: str, name: str) -> int:
    stripped = text.strip()
    if stripped.lower().startswith("interval "):
        stripped = stripped[len("interval ") :]
    pos = 0
    total = 0
    matched = False
    while pos < len(stripped):
        m = _PART.match(stripped, pos)
        if m is None:
            break
        unit = m.group(2).lower()
        if unit not in _UNITS_MS:
            msg = f"{name}: unknown time unit {m.group(2)!r} in {text!r}"
            raise ValueError(msg)
        total += int(m.group(1)) * _UNITS_MS[unit]
        pos = m.end()
        matched = True
    if not matched or pos != len(stripped):
        msg = (
            f"{name}: cannot parse duration {text!r}; use an int of milliseconds, a "
            "datetime.timedelta, or a string such as '10 seconds' or '1 hour 30 minutes'"
        )
        raise ValueError(msg)
    return total


def to_millis(duration: Duration, name: str = "duration") -> int:
    """Convert a duration to integer milliseconds.

    Parameters
    ----------
    duration
        ``int`` milliseconds, a :class:`~datetime.timedelta` (whole milliseconds only), or an
        interval string like ``"10 seconds"``, ``"500 ms"``, ``"-8 hours"``.
    name
        The parameter name used in error messages.

    Raises
    ------
    ValueError
        If the value cannot be read as a whole number of milliseconds.
    """
    if isinstance(duration, bool):
        msg = f"{name} must be a duration (int ms, timedelta or str), got bool {duration!r}"
        raise ValueError(msg)
    if isinstance(duration, int):
        return int(duration)
    if isinstance(duration, timedelta):
        micros = (duration.days * 86_400 + duration.seconds) * 1_000_000 + duration.microseconds
        if micros % 1_000:
            msg = f"{name} must be a whole number of milliseconds, got {duration!r}"
            raise ValueError(msg)
        return micros // 1_000
    if isinstance(duration, str):
        return _parse_interval(duration, name)
    msg = (
        f"{name} must be a duration (int ms, timedelta or str), "
        f"got {type(duration).__name__} {duration!r}"
    )
    raise ValueError(msg)


def saturating_add(a: int, b: int) -> int:
    """``a + b`` clamped to ``[MIN_TIMESTAMP, MAX_TIMESTAMP]`` (Java ``long`` saturation)."""
    s = a + b
    if s > MAX_TIMESTAMP:
        return MAX_TIMESTAMP
    if s < MIN_TIMESTAMP:
        return MIN_TIMESTAMP
    return s


def java_add(a: int, b: int) -> int:
    """``a + b`` as Java's ``long`` addition: wrapped to 64 bits on overflow. Flink's
    element-lateness test (``timestamp + allowed_lateness <= watermark``) is written so.

    Examples
    --------
    >>> java_add(MAX_TIMESTAMP, 1) == MIN_TIMESTAMP
    True
    """
    return (a + b + 2**63) % 2**64 - 2**63


def java_remainder(a: int, b: int) -> int:
    """``a % b`` as Java's ``%``: truncated toward zero, so the sign is ``a``'s (Python's
    ``%`` floors). Flink's continuous triggers align their first firing with it.

    Examples
    --------
    >>> java_remainder(-3, 5), -3 % 5
    (-3, 2)
    """
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def datetime_to_millis(value: datetime) -> int:
    """Epoch milliseconds of a datetime; a naive datetime is read as UTC.

    Examples
    --------
    >>> datetime_to_millis(datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC))
    1000
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000 + delta.microseconds // 1_000


def millis_to_datetime(ms: int) -> datetime:
    """The UTC datetime of epoch milliseconds ``ms``."""
    return _EPOCH + timedelta(milliseconds=ms)


def instant_text(ms: int | None) -> str:
    """An instant for an error or explain text: epoch milliseconds, and the UTC date and
    time when there is one (``MIN_TIMESTAMP``: no watermark yet; ``MAX_TIMESTAMP``: the end
    of time).

    Examples
    --------
    >>> instant_text(1_700_000_000_123)
    '1700000000123 (2023-11-14T22:13:20.123Z)'
    >>> instant_text(MIN_TIMESTAMP), instant_text(None)
    ('-9223372036854775808 (no watermark yet)', 'None')
    """
    if ms is None:
        return "None"
    if ms == MIN_TIMESTAMP:
        return f"{ms} (no watermark yet)"
    if ms == MAX_TIMESTAMP:
        return f"{ms} (the end of time)"
    iso = iso_text(ms)
    return str(ms) if iso == str(ms) else f"{ms} ({iso})"


def iso_text(ms: int) -> str:
    """Epoch milliseconds as an ISO 8601 UTC date and time with milliseconds, or the number
    itself outside the dates Python holds (years 1 to 9999).

    Examples
    --------
    >>> iso_text(0), iso_text(-1)
    ('1970-01-01T00:00:00.000Z', '1969-12-31T23:59:59.999Z')
    >>> iso_text(2**62)
    '4611686018427387904'
    """
    try:
        when = millis_to_datetime(ms)
    except OverflowError:
        return str(ms)
    return f"{when.strftime('%Y-%m-%dT%H:%M:%S')}.{when.microsecond // 1000:03d}Z"


class TimeUnit(enum.Enum):
    """The unit of an integral time column (``from_dataframe``'s ``event_time_unit`` and
    ``processing_time_unit``): epoch seconds, milliseconds (the default), microseconds or
    nanoseconds.

    The operator's clock is milliseconds, as Flink's: :meth:`to_millis` reads a value onto
    it (a finer unit is floored, a sub-millisecond part is dropped; seconds are multiplied,
    saturating at the ends of ``long``), and :meth:`from_millis` gives a time of the clock
    back in the column's unit, so results compare with the column: a window ``[0, 10000)``
    of milliseconds is ``[0, 10)`` in seconds, with max timestamp ``9``, and
    ``[0, 10000000)`` in microseconds, with max timestamp ``9999999``.

    Examples
    --------
    >>> TimeUnit.of("s").to_millis(1_700_000_000)
    1700000000000
    >>> TimeUnit.MICROSECONDS.to_millis(-1)  # floored: -1 us is in the millisecond before 0
    -1
    >>> TimeUnit.SECONDS.from_millis(1_500), TimeUnit.SECONDS.from_millis(1_500, bound=True)
    (1, 2)
    >>> us = TimeUnit.MICROSECONDS
    >>> us.from_millis(9_999), us.from_millis(10_000, bound=True)
    (9999999, 10000000)
    """

    SECONDS = "s"
    MILLISECONDS = "ms"
    MICROSECONDS = "us"
    NANOSECONDS = "ns"

    @property
    def words(self) -> str:
        """The unit in words (``"seconds"``)."""
        return _UNIT_WORDS[self]

    @classmethod
    def of(cls, value: TimeUnit | str, parameter: str = "unit") -> TimeUnit:
        """``value`` (``"s"``, ``"ms"``, ``"us"``, ``"ns"`` or a member) as a unit; a
        ``ValueError`` naming ``parameter`` and the value otherwise."""
        if isinstance(value, TimeUnit):
            return value
        for unit in cls:
            if isinstance(value, str) and value == unit.value:
                return unit
        names = ", ".join(repr(u.value) for u in cls)
        msg = f"{parameter} must be one of {names}, got {type(value).__name__} {value!r}"
        raise ValueError(msg)

    def to_millis(self, value: int) -> int:
        """``value`` of this unit in epoch milliseconds: finer units floored (toward the
        past, so a time before 1970 stays in its millisecond, as Flink's), seconds
        multiplied and clamped to ``[MIN_TIMESTAMP, MAX_TIMESTAMP]``."""
        if self is TimeUnit.SECONDS:
            return max(MIN_TIMESTAMP, min(MAX_TIMESTAMP, value * 1_000))
        return value // _PER_MILLI[self]

    def from_millis(self, ms: int, *, bound: bool = False) -> int:
        """Epoch milliseconds ``ms`` of the operator's clock in this unit, clamped to the
        ends of ``long``: for an instant (a max timestamp, a watermark) the last value of
        the unit that :meth:`to_millis` reads as at most ``ms``; for a window ``bound``
        (start or end) the first that it reads as at least ``ms``. So a value ``t`` of the
        column is in a window exactly when ``start <= t < end``, the window's max timestamp
        is ``end - 1``, and a row is behind a watermark exactly when ``t <= watermark``."""
        if self is TimeUnit.SECONDS:
            return -(-ms // 1_000) if bound else ms // 1_000
        per = _PER_MILLI[self]
        plus = 0 if bound else per - 1
        if ms > (MAX_TIMESTAMP - plus) // per:
            return MAX_TIMESTAMP
        if ms < -(MAX_TIMESTAMP // per):
            return MIN_TIMESTAMP
        return ms * per + plus

    def to_datetime_text(self, value: int) -> str:
        """``value`` of this unit as an ISO UTC time to the millisecond (:func:`iso_text`;
        ``about the year N`` outside the years 1 to 9999)."""
        ms = value * 1_000 if self is TimeUnit.SECONDS else value // _PER_MILLI[self]
        text = iso_text(ms)
        if text != str(ms):
            return text
        return f"about the year {1970 + ms / 31_556_952_000:,.0f}"  # the mean Gregorian year


_UNIT_WORDS = {
    TimeUnit.SECONDS: "seconds",
    TimeUnit.MILLISECONDS: "milliseconds",
    TimeUnit.MICROSECONDS: "microseconds",
    TimeUnit.NANOSECONDS: "nanoseconds",
}
#: Units of a finer time unit per millisecond (seconds: coarser, see TimeUnit.to_millis).
_PER_MILLI = {
    TimeUnit.MILLISECONDS: 1,
    TimeUnit.MICROSECONDS: 1_000,
    TimeUnit.NANOSECONDS: 1_000_000,
}
#: The values that, read as milliseconds, are implausible times and, read as another unit,
#: are times from 1973-03-03 to 2286-11-20 (nanoseconds: to the end of ``long``, 2262):
#: ``[low, high)`` per unit. Milliseconds 1e10 to 1e14 (1970-04-26 to the year 5138) are
#: plausible and never suspected; below 1e8 (the first day of 1970: small test times) and
#: 1e16 to 1e17 (ambiguous) neither.
UNIT_BANDS: dict[TimeUnit, tuple[int, int]] = {
    TimeUnit.SECONDS: (10**8, 10**10),
    TimeUnit.MICROSECONDS: (10**14, 10**16),
    TimeUnit.NANOSECONDS: (10**17, MAX_TIMESTAMP + 1),
}


def suspected_unit(low: int, high: int) -> TimeUnit | None:
    """The unit that time values from ``low`` to ``high`` (a column's observed smallest and
    largest, read as epoch milliseconds) look like, if not milliseconds: the unit of
    :data:`UNIT_BANDS` whose band holds both, else ``None``.

    Examples
    --------
    >>> suspected_unit(1_700_000_000, 1_700_086_400)  # seconds of 2023-11-14/15
    <TimeUnit.SECONDS: 's'>
    >>> suspected_unit(0, 100_000) is None  # small test times
    True
    >>> suspected_unit(1_700_000_000_000, 1_700_000_000_000) is None  # milliseconds of 2023
    True
    """
    for unit, (lo, hi) in UNIT_BANDS.items():
        if lo <= low <= high < hi:
            return unit
    return None


def unit_warning_text(
    column: str, low: int, high: int, unit: TimeUnit, *, where: str | None = None
) -> str:
    """The warning that the integral event-time ``column``, read as milliseconds, holds
    values from ``low`` to ``high`` that look like ``unit`` (see :func:`suspected_unit`);
    ``where`` names the input when there are several (``"the left input"`` of a join)."""
    ms = TimeUnit.MILLISECONDS
    of = "" if where is None else f" of {where}"
    return (
        f"event_time column {column!r}{of} holds values from {low} to {high}: read as epoch "
        f"milliseconds (the default) they are {ms.to_datetime_text(low)} to "
        f"{ms.to_datetime_text(high)}, as epoch {unit.words} {unit.to_datetime_text(low)} to "
        f"{unit.to_datetime_text(high)}. If they are {unit.words}, pass "
        f"event_time_unit={unit.value!r} to from_dataframe; event_time_unit='ms' keeps "
        "milliseconds and silences this warning"
    )
