"""Schemas at the Spark edge: validating input columns, resolving output schemas, and
converting values between Arrow columns and the Python objects user functions see.

Elements reach user code as :class:`pyspark.sql.Row` objects, the same shape ``collect()``
returns: nested structs are ``Row`` objects, maps are ``dict``, arrays are ``list``.
Timestamps are timezone-aware :class:`~datetime.datetime` values in the session time zone
(this is what Arrow hands over; ``collect()`` would give naive local times).

Function outputs are written back with :func:`make_row_encoder`, which accepts a ``Row``, a
``dict``, a named tuple, a dataclass instance, a plain tuple or list (by position), or, for a
one-field schema, the bare value.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import functools
import gc
import operator
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from numbers import Integral, Real
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, Row
from pyspark.sql.types import (
    ArrayType,
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
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    _parse_datatype_string,
)

from windowing.time import TimeUnit

__all__ = [
    "INTERNAL_PREFIX",
    "TimeKind",
    "aggregation_column",
    "arrival_order_columns",
    "arrow_to_python",
    "column_time_kind",
    "contains_map",
    "gc_paused",
    "make_columns_encoder",
    "make_row_encoder",
    "parse_output_schema",
    "row_class",
    "rows_of",
    "schema_from_annotation",
    "table_rows",
    "validate_source",
]

#: Columns the runtime adds while it works; user columns must not start with this.
INTERNAL_PREFIX = "__pw_"


# ---------------------------------------------------------------------------- Row classes
try:  # the C descriptor of namedtuple fields: reads the item without __getitem__
    from _collections import _tuplegetter as _field  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - other Python implementations

    def _field(index: int, doc: str) -> Any:
        return property(lambda row: tuple.__getitem__(row, index), doc=doc)


@functools.lru_cache(maxsize=256)
def row_class(names: tuple[str, ...]) -> type[Row]:
    """A subclass of :class:`pyspark.sql.Row` for rows with the fields ``names``.

    Its instances are ``Row`` objects in every respect (``isinstance``, ``==``, ``repr``,
    ``asDict``, ``row["name"]``, pickling, which gives a plain ``Row``), built without
    ``Row.__new__`` and with the field names on the class: ``row.name`` is a C-level item
    lookup (as for named tuples), not ``Row.__getattr__``'s search of the field list. Names that
    ``Row`` or ``tuple`` already define (``count``, ``index``, ``asDict``) keep their
    ``Row`` meaning, as on a plain ``Row``.
    """
    attributes: dict[str, Any] = {"__fields__": list(names), "__slots__": ()}
    for i, name in enumerate(names):
        if name not in attributes and not hasattr(Row, name) and not name.startswith("__"):
            attributes[name] = _field(i, name)
    return type("Row", (Row,), attributes)


def rows_of(names: Sequence[str], columns: Sequence[Sequence[Any]]) -> list[Row]:
    """The rows of equally long ``columns`` (one per name) as ``Row`` objects."""
    make = functools.partial(tuple.__new__, row_class(tuple(names)))
    return list(map(make, zip(*columns, strict=True)))


def table_rows(table: pa.Table, names: Sequence[str]) -> list[Row]:
    """The rows of ``table``'s columns ``names`` as the ``Row`` objects user functions see
    (values as :func:`arrow_to_python` gives them)."""
    with gc_paused():
        return rows_of(names, [arrow_to_python(table.column(n)) for n in names])


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while many objects without cycles (rows,
    their values) are built: the collections their allocations trigger would scan the heap
    again and again (about 40 % of the time of building a million rows). It is enabled
    again after, as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)

#: How a time column is stored: ``"timestamp"`` (Spark ``TimestampType``) or ``"integral"``
#: (an integer count of epoch milliseconds, or for arrival order any integer).
TimeKind = str


def _type_name(dt: DataType) -> str:
    return dt.simpleString()


def column_time_kind(df: DataFrame, column: str, parameter: str) -> TimeKind:
    """The kind of time column ``column`` of ``df``; raises ``ValueError`` naming
    ``parameter`` when it is missing or of an unsupported type."""
    if not isinstance(column, str) or not column:
        msg = f"{parameter} must be a column name (a non-empty str), got {column!r}"
        raise ValueError(msg)
    fields = {f.name: f for f in df.schema.fields}
    if column not in fields:
        msg = f"{parameter}: unknown column {column!r}; the DataFrame has columns {df.columns}"
        raise ValueError(msg)
    dtype = fields[column].dataType
    if isinstance(dtype, TimestampType):
        return "timestamp"
    if isinstance(dtype, _INTEGRAL):
        return "integral"
    if isinstance(dtype, TimestampNTZType):
        msg = (
            f"{parameter}: column {column!r} is timestamp_ntz, which has no time zone; cast it "
            "to a timestamp (e.g. F.to_utc_timestamp(F.col(c).cast('timestamp'), 'UTC')) or to "
            "epoch milliseconds (F.unix_millis(...))"
        )
        raise ValueError(msg)
    msg = (
        f"{parameter}: column {column!r} has type {_type_name(dtype)}; it must be a timestamp "
        "or an integral epoch time (tinyint, smallint, int or bigint; milliseconds unless a "
        "unit is given)"
    )
    raise ValueError(msg)


def validate_source(
    df: DataFrame,
    *,
    event_time: str,
    arrival_order: Any,
    processing_time: str | None,
    event_time_unit: TimeUnit | str | None = None,
    processing_time_unit: TimeUnit | str | None = None,
) -> tuple[TimeUnit | None, TimeUnit]:
    """Check the columns named by ``WindowedStream.from_dataframe`` and their declared units
    (:meth:`TimeUnit.of`; a unit is only for an integral column), and return the units: the
    event time's, ``None`` when not declared (then checked), and the processing time's
    (milliseconds when not declared). No Spark job runs."""
    event_unit = (
        None if event_time_unit is None else TimeUnit.of(event_time_unit, "event_time_unit")
    )
    processing_unit = (
        None
        if processing_time_unit is None
        else TimeUnit.of(processing_time_unit, "processing_time_unit")
    )
    if not isinstance(df, DataFrame):
        msg = f"df must be a pyspark.sql.DataFrame, got {type(df).__name__} {df!r}"
        raise ValueError(msg)
    for name in df.columns:
        if name.startswith(INTERNAL_PREFIX):
            msg = (
                f"df: column {name!r} starts with {INTERNAL_PREFIX!r}, which is reserved for "
                "the window runtime; rename it"
            )
            raise ValueError(msg)
    if len(set(df.columns)) != len(df.columns):
        dupes = sorted({c for c in df.columns if df.columns.count(c) > 1})
        msg = f"df: duplicate column names {dupes}; window input columns must be unique"
        raise ValueError(msg)
    event_kind = column_time_kind(df, event_time, "event_time")
    arrival_order_columns(df, arrival_order)
    processing_kind = None
    if processing_time is not None:
        processing_kind = column_time_kind(df, processing_time, "processing_time")
    elif processing_unit is not None:
        msg = (
            f"processing_time_unit={processing_unit.value!r} is given without a "
            "processing_time column"
        )
        raise ValueError(msg)
    for column, kind, unit, parameter in (
        (event_time, event_kind, event_unit, "event_time_unit"),
        (processing_time, processing_kind, processing_unit, "processing_time_unit"),
    ):
        if unit is not None and kind == "timestamp":
            msg = (
                f"{parameter}={unit.value!r}: column {column!r} is a timestamp, which has no "
                "unit to declare; a unit is only for an integral column of epoch time"
            )
            raise ValueError(msg)
    return event_unit, processing_unit or TimeUnit.MILLISECONDS


def arrival_order_columns(df: DataFrame, arrival_order: Any) -> str | tuple[str, ...] | None:
    """``arrival_order`` checked against ``df`` and normalized: ``None``, one column name,
    or a tuple of two or more (a list of one column is that column). ``ValueError`` naming
    the parameter and the value for another type, an empty list, a column named twice, and
    (through :func:`column_time_kind`, as ``arrival_order[i]``) a missing column or one of
    an unsupported type."""
    if arrival_order is None:
        return None
    if isinstance(arrival_order, str):
        column_time_kind(df, arrival_order, "arrival_order")
        return arrival_order
    if not isinstance(arrival_order, list | tuple):
        msg = (
            "arrival_order must be a column name or a list of column names, got "
            f"{type(arrival_order).__name__} {arrival_order!r}"
        )
        raise ValueError(msg)
    columns = list(arrival_order)
    if not columns:
        msg = f"arrival_order: give at least one column name, got {arrival_order!r}"
        raise ValueError(msg)
    for i, name in enumerate(columns):
        column_time_kind(df, name, f"arrival_order[{i}]")
    twice = sorted({c for c in columns if columns.count(c) > 1})
    if twice:
        msg = f"arrival_order: column {twice[0]!r} appears twice in {arrival_order!r}"
        raise ValueError(msg)
    return columns[0] if len(columns) == 1 else tuple(columns)


_NUMERIC = (ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, DecimalType)
_ORDERED = (
    *_NUMERIC,
    StringType,
    BinaryType,
    BooleanType,
    DateType,
    TimestampType,
    TimestampNTZType,
)


def aggregation_column(df: DataFrame, field: Any, aggregation: str, *, keys: Sequence[str]) -> str:
    """The column a built-in aggregation (``"sum"``, ``"min"``, ...) of ``field`` (a column
    name or position of ``df``) works on; ``ValueError`` naming ``field`` when it is missing,
    a key column, or of a type the aggregation cannot use (numbers for ``sum``, numbers,
    strings, binary, booleans, dates and timestamps for the others)."""
    columns = df.columns
    if isinstance(field, int) and not isinstance(field, bool):
        if not 0 <= field < len(columns):
            msg = (
                f"{aggregation}: field position {field} is out of range; the DataFrame has "
                f"{len(columns)} columns {columns}"
            )
            raise ValueError(msg)
        name = columns[field]
    elif isinstance(field, str) and field:
        name = field
    else:
        msg = (
            f"{aggregation}: field must be a column name or position, "
            f"got {type(field).__name__} {field!r}"
        )
        raise ValueError(msg)
    if name not in columns:
        msg = f"{aggregation}: unknown column {name!r}; the DataFrame has columns {columns}"
        raise ValueError(msg)
    if name in keys:
        msg = f"{aggregation}: field {name!r} is a key column; key columns are not aggregated"
        raise ValueError(msg)
    dtype = df.schema[name].dataType
    allowed = _NUMERIC if aggregation == "sum" else _ORDERED
    if not isinstance(dtype, allowed):
        what = (
            "a numeric"
            if aggregation == "sum"
            else "an ordered atomic (number, string, date, timestamp, ...)"
        )
        msg = (
            f"{aggregation}: field {name!r} has type {dtype.simpleString()}; {aggregation} "
            f"needs {what} column"
        )
        raise ValueError(msg)
    return name


def contains_map(dtype: DataType) -> bool:
    """Whether ``dtype`` is or contains a map (Spark cannot hash those)."""
    if isinstance(dtype, MapType):
        return True
    if isinstance(dtype, ArrayType):
        return contains_map(dtype.elementType)
    if isinstance(dtype, StructType):
        return any(contains_map(f.dataType) for f in dtype.fields)
    return False


# ---------------------------------------------------------------------------- output schemas
def parse_output_schema(value: Any, parameter: str) -> StructType:
    """A ``StructType`` from a ``StructType``, a DDL string (``"total double, n long"``), or a
    single type (``"double"`` or ``DoubleType()``, read as one column named ``value``)."""
    if isinstance(value, StructType):
        schema = value
    elif isinstance(value, DataType):
        schema = StructType([StructField("value", value, True)])
    elif isinstance(value, str):
        try:
            parsed = _parse_datatype_string(value)
        except Exception as exc:
            msg = f"{parameter}: cannot parse {value!r} as a schema: {exc}"
            raise ValueError(msg) from exc
        schema = (
            parsed
            if isinstance(parsed, StructType)
            else StructType([StructField("value", parsed, True)])
        )
    else:
        msg = (
            f"{parameter} must be a StructType or a DDL string such as 'total double, n long', "
            f"got {type(value).__name__} {value!r}"
        )
        raise ValueError(msg)
    if not schema.fields:
        msg = f"{parameter} must have at least one field, got {value!r}"
        raise ValueError(msg)
    names = [f.name for f in schema.fields]
    if len(set(names)) != len(names):
        msg = f"{parameter}: duplicate field names in {value!r}"
        raise ValueError(msg)
    # Outputs are nullable: a function may return None for a field.
    return StructType([StructField(f.name, f.dataType, True) for f in schema.fields])


_SCALARS: dict[Any, DataType] = {
    int: LongType(),
    float: DoubleType(),
    str: StringType(),
    bool: BooleanType(),
    bytes: BinaryType(),
    _dt.datetime: TimestampType(),
    _dt.date: DateType(),
}

_CONTAINERS = {
    Iterable,
    Iterator,
    typing.Generator,
    list,
    tuple,
    Sequence,
    typing.Iterable,
    typing.Iterator,
    typing.List,  # noqa: UP006 - annotations written with typing.List are accepted too
}


def _scalar_type(tp: Any) -> tuple[DataType | None, bool]:
    """The Spark type of a simple annotation, and whether it is nullable."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, _UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _scalar_type(rest[0])[0], True
        return None, True
    if tp in _SCALARS:
        return _SCALARS[tp], False
    return None, False


_UnionType: Any = type(int | str)


def _struct_from_class(cls: Any) -> StructType | None:
    """A struct for a NamedTuple or dataclass whose fields all have simple annotations."""
    if not isinstance(cls, type):
        return None
    if dataclasses.is_dataclass(cls) or (issubclass(cls, tuple) and hasattr(cls, "_fields")):
        try:
            hints = typing.get_type_hints(cls)
        except Exception:
            return None
        names = (
            [f.name for f in dataclasses.fields(cls)]
            if dataclasses.is_dataclass(cls)
            else list(cls._fields)
        )
        fields = []
        for name in names:
            dtype, _ = _scalar_type(hints.get(name))
            if dtype is None:
                return None
            fields.append(StructField(name, dtype, True))
        return StructType(fields) if fields else None
    return None


def schema_from_annotation(method: Any, *, many: bool) -> StructType | None:
    """Infer an output schema from ``method``'s return annotation, or ``None`` when it is
    missing or not simple.

    Simple means: ``int`` (``bigint``), ``float`` (``double``), ``str``, ``bool``, ``bytes``,
    ``datetime`` (``timestamp``), ``date``, ``Optional`` of those (one column named ``value``),
    or a ``NamedTuple`` / dataclass whose fields are all simple (one column per field). With
    ``many=True`` (process and apply functions) the annotation must be ``Iterable[X]``,
    ``Iterator[X]``, ``Generator[X, ...]`` or ``list[X]`` of such an ``X``.
    """
    try:
        hints = typing.get_type_hints(method)
    except Exception:
        return None
    tp = hints.get("return")
    if tp is None:
        return None
    if many:
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin is None or not args:
            return None
        if origin not in _CONTAINERS and not (
            isinstance(origin, type) and issubclass(origin, Iterable)
        ):
            return None
        tp = args[0]
    struct = _struct_from_class(tp)
    if struct is not None:
        return struct
    dtype, _ = _scalar_type(tp)
    if dtype is None:
        return None
    return StructType([StructField("value", dtype, True)])


# ---------------------------------------------------------------------------- Arrow -> Python
def _arrow_converter(pa_type: pa.DataType) -> Callable[[Any], Any] | None:
    """A function turning ``to_pylist()`` values of ``pa_type`` into what ``collect()``
    returns (``Row`` for structs, ``dict`` for maps); ``None`` when nothing changes."""
    if pa.types.is_struct(pa_type):
        names = [pa_type.field(i).name for i in range(pa_type.num_fields)]
        convs = [_arrow_converter(pa_type.field(i).type) for i in range(pa_type.num_fields)]
        make = row_class(tuple(names))

        def struct(value: Any) -> Any:
            if value is None:
                return None
            values = [
                value[n] if c is None else c(value[n]) for n, c in zip(names, convs, strict=True)
            ]
            return tuple.__new__(make, values)

        return struct
    if pa.types.is_map(pa_type):
        kconv = _arrow_converter(pa_type.key_type)
        vconv = _arrow_converter(pa_type.item_type)

        def mapping(value: Any) -> Any:
            if value is None:
                return None
            return {
                (k if kconv is None else kconv(k)): (v if vconv is None else vconv(v))
                for k, v in value
            }

        return mapping
    if pa.types.is_list(pa_type) or pa.types.is_large_list(pa_type):
        econv = _arrow_converter(pa_type.value_type)
        if econv is None:
            return None

        def array(value: Any) -> Any:
            return None if value is None else [econv(v) for v in value]

        return array
    return None


_EPOCH = _dt.datetime(1970, 1, 1)  # noqa: DTZ001 - naive, as for TIMESTAMP_NTZ columns
_UTC_NAMES = frozenset({"UTC", "Etc/UTC", "+00:00", "Z", "GMT", "Etc/GMT"})
_NAT = -(2**63)  # numpy's "not a time" among int64 timedeltas


def _timestamps_to_python(column: pa.ChunkedArray | pa.Array) -> list[Any] | None:
    """Microsecond timestamps (naive or UTC) as ``to_pylist()`` gives them, about 25 times
    faster without nulls (five with): the epoch plus a ``timedelta`` per value, with the same
    ``tzinfo`` object. ``None`` for other units and zones (wall-clock arithmetic would be
    wrong across DST changes)."""
    pa_type = column.type
    if not pa.types.is_timestamp(pa_type) or pa_type.unit != "us":
        return None
    if pa_type.tz is None:
        epoch = _EPOCH
    elif pa_type.tz in _UTC_NAMES:
        zero = pa.scalar(0, type=pa_type).as_py()
        epoch = _EPOCH.replace(tzinfo=zero.tzinfo)
    else:
        return None
    ints = column.cast(pa.int64())
    if not ints.null_count:
        values = (ints.combine_chunks() if isinstance(ints, pa.ChunkedArray) else ints).to_numpy()
        if not len(values) or int(values.min()) > _NAT:
            # numpy makes the timedelta objects in C: about five times faster again
            return list(map(epoch.__add__, values.astype("timedelta64[us]").astype(object)))
    micros = _dt.timedelta
    return [None if v is None else epoch + micros(microseconds=v) for v in ints.to_pylist()]


def arrow_to_python(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """The Python values of an Arrow column, shaped as ``collect()`` shapes them."""
    fast = _timestamps_to_python(column)
    if fast is not None:
        return fast
    values: list[Any] = column.to_pylist()
    conv = _arrow_converter(column.type)
    if conv is None:
        return values
    return [conv(v) for v in values]


# ---------------------------------------------------------------------------- Python -> Arrow
def value_encoder(dtype: DataType) -> Callable[[Any], Any] | None:
    """A checker/converter from a user value to what ``pa.array`` accepts for ``dtype``;
    ``None`` when values pass unchanged (Arrow itself rejects wrong types there)."""
    if isinstance(dtype, _INTEGRAL):

        def integral(value: Any) -> Any:
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, Integral):
                msg = f"expected an int for {dtype.simpleString()}, got {type(value).__name__}"
                raise TypeError(msg)
            return int(value)

        return integral
    if isinstance(dtype, DoubleType | FloatType):

        def fractional(value: Any) -> Any:
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, Real):
                msg = f"expected a float for {dtype.simpleString()}, got {type(value).__name__}"
                raise TypeError(msg)
            return float(value)

        return fractional
    if isinstance(dtype, StructType):
        encoder = make_row_encoder(dtype)
        names = dtype.names

        def struct(value: Any) -> Any:
            if value is None:
                return None
            return dict(zip(names, encoder(value), strict=True))

        return struct
    if isinstance(dtype, ArrayType):
        econv = value_encoder(dtype.elementType)

        def array(value: Any) -> Any:
            if value is None:
                return None
            if isinstance(value, str | bytes | dict) or not isinstance(value, Iterable):
                msg = f"expected a list for {dtype.simpleString()}, got {type(value).__name__}"
                raise TypeError(msg)
            return list(value) if econv is None else [econv(v) for v in value]

        return array
    if isinstance(dtype, MapType):
        kconv = value_encoder(dtype.keyType)
        vconv = value_encoder(dtype.valueType)

        def mapping(value: Any) -> Any:
            if value is None:
                return None
            if not isinstance(value, dict):
                msg = f"expected a dict for {dtype.simpleString()}, got {type(value).__name__}"
                raise TypeError(msg)
            return [
                (k if kconv is None else kconv(k), v if vconv is None else vconv(v))
                for k, v in value.items()
            ]

        return mapping
    if isinstance(dtype, TimestampType):

        def timestamp(value: Any) -> Any:
            if value is None or isinstance(value, _dt.datetime):
                return value
            msg = f"expected a datetime for timestamp, got {type(value).__name__}"
            raise TypeError(msg)

        return timestamp
    if isinstance(dtype, DateType):

        def date(value: Any) -> Any:
            if value is None or (
                isinstance(value, _dt.date) and not isinstance(value, _dt.datetime)
            ):
                return value
            msg = f"expected a date for date, got {type(value).__name__}"
            raise TypeError(msg)

        return date
    if isinstance(dtype, StringType):

        def string(value: Any) -> Any:
            if value is None or isinstance(value, str):
                return value
            msg = f"expected a str for string, got {type(value).__name__}"
            raise TypeError(msg)

        return string
    if isinstance(dtype, BooleanType):

        def boolean(value: Any) -> Any:
            if value is None or isinstance(value, bool):
                return value
            msg = f"expected a bool for boolean, got {type(value).__name__}"
            raise TypeError(msg)

        return boolean
    if isinstance(dtype, BinaryType):
        return None
    if type(dtype).__name__ == "DecimalType":

        def decimal(value: Any) -> Any:
            if value is None or isinstance(value, Decimal | int):
                return value
            msg = f"expected a Decimal for {dtype.simpleString()}, got {type(value).__name__}"
            raise TypeError(msg)

        return decimal
    return None


def make_row_encoder(schema: StructType) -> Callable[[Any], list[Any]]:
    """A function mapping one output value to the list of its field values for ``schema``.

    Accepted values: a ``Row`` with field names, a ``dict``, a named tuple or a dataclass
    instance (by field name; every field must be present and no other), a tuple or list (by
    position; the length must match), or, when ``schema`` has exactly one field, any other
    value, which becomes that field. ``None`` (Flink's null record, e.g. a reduce whose
    evictor evicted every element) is a row of nulls.
    """
    names = list(schema.names)
    index = {n: i for i, n in enumerate(names)}
    encoders = [value_encoder(f.dataType) for f in schema.fields]
    width = len(names)

    def by_name(items: Iterable[tuple[str, Any]]) -> list[Any]:
        out: list[Any] = [_UNSET] * width
        for name, value in items:
            i = index.get(name)
            if i is None:
                msg = f"unexpected field {name!r}; the output schema has fields {names}"
                raise ValueError(msg)
            out[i] = value
        missing = [names[i] for i, v in enumerate(out) if v is _UNSET]
        if missing:
            msg = f"missing fields {missing}; the output schema has fields {names}"
            raise ValueError(msg)
        return out

    def encode(value: Any) -> list[Any]:
        if value is None:
            return [None] * width
        if isinstance(value, Row) and hasattr(value, "__fields__"):
            raw = by_name(zip(value.__fields__, value, strict=True))
        elif isinstance(value, dict):
            raw = by_name(value.items())
        elif isinstance(value, tuple) and hasattr(value, "_fields"):
            raw = by_name(zip(value._fields, value, strict=True))
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            raw = by_name((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
        elif width == 1:
            raw = [value]
        elif isinstance(value, tuple | list):
            if len(value) != width:
                msg = (
                    f"a {type(value).__name__} of {len(value)} values for an output schema of "
                    f"{width} fields {names}"
                )
                raise ValueError(msg)
            raw = list(value)
        else:
            msg = (
                f"cannot write a {type(value).__name__} as a row of fields {names}; "
                "return a Row, dict, tuple or dataclass"
            )
            raise TypeError(msg)
        for i, enc in enumerate(encoders):
            if enc is not None:
                try:
                    raw[i] = enc(raw[i])
                except (TypeError, ValueError) as exc:
                    msg = f"field {names[i]!r}: {exc}"  # no value: it may be sensitive
                    raise type(exc)(msg) from exc
        return raw

    return encode


_UNSET: Any = object()


_NONE_TYPE = type(None)


def _exact_types(dtype: DataType) -> frozenset[type] | None:
    """The Python types whose values the encoder of ``dtype`` passes unchanged (besides
    ``None``), for a bulk check by exact type; ``None`` for types always encoded per value."""
    if isinstance(dtype, _INTEGRAL):
        return frozenset({int})
    if isinstance(dtype, DoubleType | FloatType):
        return frozenset({float})
    if isinstance(dtype, StringType):
        return frozenset({str})
    if isinstance(dtype, BooleanType):
        return frozenset({bool})
    if isinstance(dtype, TimestampType | TimestampNTZType):
        return frozenset({_dt.datetime})
    if isinstance(dtype, DateType):
        return frozenset({_dt.date})
    if isinstance(dtype, BinaryType):
        return frozenset({bytes})
    return None


def make_columns_encoder(
    schema: StructType, *, source: StructType | None = None
) -> Callable[[Sequence[Any]], list[list[Any]] | None]:
    """A bulk form of :func:`make_row_encoder` for the common cases: a function mapping output
    values to the columns of ``schema`` (one list per field), or to ``None`` when the values
    need encoding value by value.

    The bulk form applies to values of plain types (int, float, str, bool, datetime, date,
    bytes; for a one-field schema) and to ``Row`` objects of :func:`row_class` (or plain ones
    with those fields, in that order) holding such values: their types are checked in bulk
    (exact type, as the value encoders would accept them unchanged) and the values passed
    through. ``source`` is the schema of such rows when ``schema`` keeps some of their fields
    (a reduce returns input rows)."""
    names = tuple(schema.names)
    wide = tuple(source.names) if source is not None else names
    keep = [wide.index(n) for n in names]
    exact = [_exact_types(f.dataType) for f in schema.fields]
    if any(t is None for t in exact):
        return lambda values: None
    allowed = [frozenset({_NONE_TYPE}) | t for t in exact if t is not None]
    cls, fields = row_class(wide), list(wide)
    single = len(names) == 1 and source is None
    scalars = frozenset().union(*allowed) if single else frozenset()

    def encode(values: Sequence[Any]) -> list[list[Any]] | None:
        if not values:
            return [[] for _ in names]
        kinds = set(map(type, values))
        if single and kinds <= scalars:
            return [list(values)]
        if not kinds <= {cls, Row} or (
            Row in kinds and any(getattr(v, "__fields__", None) != fields for v in values)
        ):
            return None
        columns = [list(map(operator.itemgetter(i), values)) for i in keep]
        for column, ok in zip(columns, allowed, strict=True):
            if not set(map(type, column)) <= ok:
                return None
        return columns

    return encode
