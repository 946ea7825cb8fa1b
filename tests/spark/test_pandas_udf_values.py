"""PandasAggregate: a grouped-aggregate pandas UDF's arguments and value converted as Spark's
Python worker converts them (no Spark session: the conversions are Arrow's)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pandas as pd
import pytest
from pyspark.sql.types import (
    DateType,
    DoubleType,
    LongType,
    MapType,
    StringType,
    TimestampType,
)

from windowing.spark.columns.pandas_udfs import PandasAggregate, PandasConf

pytestmark = pytest.mark.spark  # (no session: pyspark's types only)

UTC_CONF, NEW_YORK = PandasConf(), PandasConf(timezone="America/New_York")


def _seen(*series: pd.Series) -> Any:
    _seen.last = series  # type: ignore[attr-defined]
    return 1


def test_integers_with_nulls_arrive_as_floats_with_nan() -> None:
    f = PandasAggregate(_seen, (LongType(), StringType()), LongType(), UTC_CONF)
    assert f([(1, "a"), (None, None), (3, "c")]) == 1
    ints, strings = _seen.last  # type: ignore[attr-defined]
    assert str(ints.dtype) == "float64" and ints.isna().tolist() == [False, True, False]
    assert strings.tolist() == ["a", None, "c"]


def test_timestamps_arrive_as_naive_wall_clock_times_of_the_session_time_zone() -> None:
    f = PandasAggregate(_seen, (TimestampType(), DateType()), LongType(), NEW_YORK)
    instant = datetime(2024, 7, 1, 16, 30, tzinfo=UTC)
    f([(instant, date(2024, 7, 1))])
    times, dates = _seen.last  # type: ignore[attr-defined]
    assert times.tolist() == [pd.Timestamp("2024-07-01 12:30:00")]  # EDT, UTC-4, naive
    assert dates.tolist() == [date(2024, 7, 1)]


def test_a_timestamp_value_is_a_wall_clock_time_of_the_session_time_zone() -> None:
    """A naive time the UDF returns is read in the session time zone, as Spark reads it."""
    latest = PandasAggregate(lambda t: t.max(), (TimestampType(),), TimestampType(), NEW_YORK)
    instant = datetime(2024, 7, 1, 16, 30, tzinfo=UTC)
    assert latest([(instant,)]).astimezone(UTC) == instant


def test_maps_arrive_as_dicts_and_times_in_nanoseconds() -> None:
    f = PandasAggregate(
        _seen, (MapType(StringType(), LongType()), TimestampType()), LongType(), UTC_CONF
    )
    f([({"a": 1}, datetime(2024, 1, 1, tzinfo=UTC))])
    maps, times = _seen.last  # type: ignore[attr-defined]
    assert maps.tolist() == [{"a": 1}]
    assert str(times.dtype) == "datetime64[ns]"


def test_the_value_is_cast_as_spark_casts_it() -> None:
    """Spark's default (``convertToArrowArraySafely`` true) refuses a fraction declared
    ``long``; with the setting off, it is truncated."""
    mean = lambda v: v.mean()  # noqa: E731
    assert PandasAggregate(mean, (LongType(),), DoubleType(), UTC_CONF)([]) is None  # NaN
    with pytest.raises(Exception, match="unsafe conversions"):
        PandasAggregate(mean, (LongType(),), LongType(), UTC_CONF)([(1,), (2,)])
    lenient = PandasConf(safecheck=False)
    assert PandasAggregate(mean, (LongType(),), LongType(), lenient)([(1,), (2,)]) == 1
