"""Arrow -> Python values of the Spark runtime, checked against pyarrow's own conversion."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from windowing.spark.schema import arrow_to_python

MICROS = [0, 1, -1, 1_700_000_000_123_456, -62_135_596_800_000_000, None, 253_402_300_799_999_999]


@pytest.mark.parametrize("tz", [None, "UTC", "Etc/UTC", "+00:00"])
def test_timestamps_equal_pyarrow_values_and_zone(tz: str | None) -> None:
    column = pa.chunked_array([pa.array(MICROS[:3], pa.int64()), pa.array(MICROS[3:], pa.int64())])
    column = column.cast(pa.timestamp("us", tz=tz))
    expected = column.to_pylist()
    got = arrow_to_python(column)
    assert got == expected
    for g, e in zip(got, expected, strict=True):
        if e is None:
            assert g is None
        else:
            assert g.tzinfo is e.tzinfo and g.isoformat() == e.isoformat()


def test_other_zones_keep_pyarrow_conversion() -> None:
    column = pa.array([0, 1_700_000_000_000_000], pa.int64()).cast(
        pa.timestamp("us", tz="America/Los_Angeles")
    )
    got = arrow_to_python(column)
    assert got == column.to_pylist()
    assert got[0].utcoffset() == dt.timedelta(hours=-8)
