"""Spark SQL text for the plans the runtime builds: quoted names and casts by type name.

A plan built from SQL text makes fewer calls to the JVM than one built from ``Column``
objects (``docs/design.md``, "Small jobs and ``.agg``")."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

__all__ = ["cast_as", "col", "int_sql", "quoted", "type_sql"]

#: The types whose ``simpleString()`` Spark's SQL parser reads back as the same type.
_NAMED_TYPES = (
    BooleanType,
    ByteType,
    ShortType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    BinaryType,
    DateType,
    TimestampType,
    TimestampNTZType,
)


def quoted(name: str) -> str:
    """A column name as SQL text (backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


def int_sql(value: int) -> str:
    """An integer literal as SQL text, typed as ``F.lit(value)`` types it: ``int`` where it
    fits, else ``bigint`` (negative values in parentheses, so that any operator may precede
    them)."""
    text = str(value) if -(2**31) <= value < 2**31 else f"{value}L"
    return f"({text})" if value < 0 else text


def col(name: str) -> Column:
    """A column by exact name, from SQL text (a quarter of ``F.col``'s calls to the JVM)."""
    return F.expr(quoted(name))


def type_sql(dtype: DataType) -> str | None:
    """``dtype`` as the SQL text Spark parses back to it (a cast by name is one call to the
    JVM where a cast to a ``DataType`` object is eight: it is sent as JSON through the active
    session), or ``None`` for the types whose text does not round-trip (nested types, whose
    field names may need quoting; collated strings)."""
    if isinstance(dtype, StringType):
        return "string" if dtype == StringType() else None
    if isinstance(dtype, _NAMED_TYPES):
        return dtype.simpleString()
    return None


def cast_as(column: Column, dtype: DataType) -> Column:
    """``column`` cast to ``dtype``, by name where :func:`type_sql` gives one."""
    text = type_sql(dtype)
    return column.cast(text if text is not None else dtype)
