"""Arrow -> Python values of the Spark runtime, checked against pyarrow's own conversion."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from windowing.spark.columns.schema import arrow_to_python

MICROS = [0, 1, -1, 1_700_000_000_123_456, -62_135_596_800_000_000, None, 253_402_300_799_999_999]


@pytest.mark.parametrize("nulls", [True, False], ids=["nulls", "no-nulls"])
@pytest.mark.parametrize("tz", [None, "UTC", "Etc/UTC", "+00:00"])
def test_timestamps_equal_pyarrow_values_and_zone(tz: str | None, nulls: bool) -> None:
    """With and without nulls (without: numpy's timedelta objects, each added to the epoch)."""
    micros = MICROS if nulls else [m for m in MICROS if m is not None]
    column = pa.chunked_array([pa.array(micros[:3], pa.int64()), pa.array(micros[3:], pa.int64())])
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


# ------------------------------------------------------------------------------- Row classes
def test_row_class_rows_behave_as_rows() -> None:
    import pickle

    from pyspark.sql import Row

    from windowing.spark.columns.schema import rows_of

    names = ["user", "count", "amount", "__hidden"]
    rows = rows_of(names, [["ann", "bob"], [1, 2], [3.5, None], [7, 8]])
    plain = Row(user="ann", count=1, amount=3.5, __hidden=7)
    row = rows[0]
    assert isinstance(row, Row) and row == plain and hash(row) == hash(plain)
    assert repr(row) == repr(plain) and row.asDict() == plain.asDict()
    assert (row.user, row["amount"], row[0], rows[1].amount) == ("ann", 3.5, "ann", None)
    assert row.count(1) == 1  # a tuple method stays a method, as on a plain Row
    with pytest.raises(AttributeError):
        _ = row.__hidden
    with pytest.raises(AttributeError):
        _ = row.missing
    back = pickle.loads(pickle.dumps(row))
    assert back == plain and type(back) is Row and back.user == "ann"


# ------------------------------------------------------------------------------- bulk encoding
def test_columns_encoder_bulk_and_fallback() -> None:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from windowing.spark.columns.schema import make_columns_encoder, rows_of

    one = make_columns_encoder(StructType([StructField("n", LongType())]))
    assert one([1, None, 3]) == [[1, None, 3]]
    assert one([1, 2.5]) is None  # a float for bigint: encoded one by one (and rejected there)
    assert one([True]) is None
    source = StructType([StructField("k", StringType()), StructField("n", LongType())])
    kept = make_columns_encoder(StructType([StructField("n", LongType())]), source=source)
    rows = rows_of(["k", "n"], [["a", "b"], [1, 2]])
    assert kept(rows) == [[1, 2]]
    assert kept([rows[0], {"k": "c", "n": 3}]) is None
    assert kept(rows_of(["k", "n"], [["a"], ["x"]])) is None  # a str where bigint is due
    # plain Rows (a reduce's own) with the source's fields in its order, among the rows
    from pyspark.sql import Row

    assert kept([rows[0], Row(k="c", n=3)]) == [[1, 3]]
    assert kept([Row(n=3, k="c")]) is None  # another order: encoded one by one, by name
    assert kept([Row("c", 3)]) is None  # no field names
    assert kept([Row(k="c", n=3.5)]) is None


# ------------------------------------------------------------------------------- error notes
def test_element_error_notes() -> None:
    from windowing.operator import END_OF_INPUT_NOTE
    from windowing.spark.columns.failures import note_element_error

    elements = [("r0", 1, "k"), ("r1", 2, "k")]
    while_adding = ValueError("add")
    note_element_error(while_adding, 1, elements, "k", "the Spark batch replay")
    assert while_adding.__notes__ == [
        "while processing the element <row values hidden; on_error(..., show_values=True) shows "
        "them> (event time 2) of key 'k' in the Spark batch replay"
    ]
    shown = ValueError("add")
    note_element_error(shown, 1, elements, "k", "the batch replay", show_values=True)
    assert shown.__notes__ == [
        "while processing the element 'r1' (event time 2) of key 'k' in the batch replay"
    ]
    # Raised at the end of input, after every element was processed: no element is blamed.
    at_end = ValueError("timer")
    at_end.add_note(END_OF_INPUT_NOTE)
    note_element_error(at_end, 1, elements, "k", "the Spark batch replay")
    assert at_end.__notes__ == [END_OF_INPUT_NOTE, "of key 'k' in the Spark batch replay"]
