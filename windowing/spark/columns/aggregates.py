"""``WindowedStream.agg``: Spark's own aggregate functions over each window.

:func:`compile_aggregates` reads the user's aggregate columns (``F.sum("amount")``,
``F.count("*").alias("n")``, ...) once, on the driver, before any job runs:

* their output names and types, from Spark's analyzer (``df.groupBy().agg(*columns)``);
* for each column Spark's function name and argument expressions (classic PySpark's column
  nodes or Spark Connect's expressions), mapped to a
  :class:`~windowing.functions.columns.ColumnAggregate` when the window operator can compute
  it (:mod:`windowing.functions.columns`); the arguments become internal input columns
  (``__pw_agg_<i>``) that Spark evaluates before the rows reach the operator;
* the columns a native plan runs (:mod:`windowing.spark.native.windows`): the user's own, with
  ``first`` / ``last`` / ``min_by`` / ``max_by`` made deterministic by the replay order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pyspark import SparkContext
from pyspark.errors import PySparkException
from pyspark.serializers import CloudPickleSerializer
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import (
    ArrayType,
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
    StructType,
    TimestampNTZType,
    TimestampType,
    VariantType,
)

from windowing.functions.columns import AggKind, ColumnAggregate, ColumnAggregates, ValueKind
from windowing.functions.spec import Aggregate
from windowing.job import Job
from windowing.spark.columns.inputs import arrival_micros, content_hash, time_millis
from windowing.spark.columns.output import col
from windowing.spark.columns.pandas_udfs import (
    CONVERTS,
    GROUPED_AGG,
    PandasAggregate,
    PandasConf,
)
from windowing.spark.columns.schema import INTERNAL_PREFIX

__all__ = [
    "FIXED_WIDTH",
    "SUPPORTED",
    "AggregateCall",
    "CompiledAggregates",
    "ValuePick",
    "ansi_enabled",
    "compile_aggregates",
    "count_all",
    "order_key",
]

#: The types Spark's hash aggregate keeps in an aggregate's state (fixed width, updated in
#: place); an aggregate with another type of state (a struct, a string) makes Spark sort every
#: row of the aggregation instead.
FIXED_WIDTH = (
    BooleanType,
    ByteType,
    ShortType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    DateType,
    TimestampType,
    TimestampNTZType,
)

#: Spark function names the window operator computes (``docs/spark.md``), by kind.
SUPPORTED: dict[str, AggKind] = {
    "count": AggKind.COUNT,
    "sum": AggKind.SUM,
    "avg": AggKind.AVG,
    "mean": AggKind.AVG,
    "min": AggKind.MIN,
    "max": AggKind.MAX,
    "first": AggKind.FIRST,
    "first_value": AggKind.FIRST,
    "last": AggKind.LAST,
    "last_value": AggKind.LAST,
    "min_by": AggKind.MIN_BY,
    "max_by": AggKind.MAX_BY,
    "count_if": AggKind.COUNT_IF,
    "bool_and": AggKind.BOOL_AND,
    "every": AggKind.BOOL_AND,
    "bool_or": AggKind.BOOL_OR,
    "some": AggKind.BOOL_OR,
    "any": AggKind.BOOL_OR,
}

#: How a star argument was read: ``*`` (all rows for ``count``) or ``s.*`` (expanded).
_STAR, _QUALIFIED_STAR = "*", "<qualified *>"

#: The order key column: (event time ms[, arrival order], content hash) of each row.
ORDER = "__pw_agg_order"
_ARG = "__pw_agg_"


@dataclass(frozen=True)
class ValuePick:
    """A built-in ``min_by`` / ``max_by`` of ``field`` (``smallest``: ``min_by``) as one
    aggregate call of the picked row (a struct of ``fields``): the row with the extreme
    value, ties to the first (``first``) or last row in the replay order, a window of nulls
    its first row. Set where the value and every field have a fixed width and no arrival
    order is given: native plans of tumbling windows then pick the row by hash, grouped by
    the value (:func:`~windowing.spark.native.parts.grouped_aggregates`)."""

    field: str
    fields: tuple[str, ...]
    smallest: bool
    first: bool


@dataclass(frozen=True, eq=False)
class AggregateCall:
    """One aggregate column as read: the output ``name`` and ``dtype``, Spark's function
    name (lower case; ``None`` when the column is not one function call, e.g.
    ``F.sum("a") + 1``), its arguments (``None`` for ``*``), literal argument values, and
    ``kind`` when the window operator can compute it; ``value_pick``: a built-in ``min_by``
    / ``max_by`` that may be picked by hash (:class:`ValuePick`)."""

    column: Column
    name: str
    dtype: DataType
    function: str | None
    args: tuple[Column | None, ...] = ()
    literals: tuple[Any, ...] = ()
    distinct: bool = False
    kind: AggKind | None = None
    expression: Column | None = None  # the column without its alias (for ``over``)
    value_pick: ValuePick | None = None
    udf: Callable[..., Any] | None = None  # a grouped-aggregate pandas UDF's function
    python_udf: bool = False  # a Python aggregate UDF (Spark runs it alone in an ``agg``)

    def __post_init__(self) -> None:
        if self.expression is None:
            object.__setattr__(self, "expression", self.column)


@dataclass(frozen=True, eq=False)
class CompiledAggregates:
    """The user's aggregate columns, compiled (see the module docstring).

    Attributes
    ----------
    calls
        Each column as read.
    schema
        The output fields (Spark's names and types).
    job
        The job the window operator runs: its DataFrame has the argument columns (and the
        order key) added.
    function
        The window operator's aggregate function, or ``None`` when a column has no Python
        equivalent (:attr:`why_not` says which): then only a native plan runs the job.
    outputs
        The output fields' values, read from the calls' columns (by the calls' names) in a
        native plan's results; ``None``: each call's column is an output field (``.agg``).
        A built-in aggregation rebuilds its row from its calls
        (:mod:`windowing.spark.columns.field_aggregates`).
    """

    calls: tuple[AggregateCall, ...]
    schema: StructType
    job: Job
    function: ColumnAggregates | None
    why_not: str | None
    outputs: tuple[Column, ...] | None = None

    def values(self) -> list[Column]:
        """The output fields' values in a native plan's results (:attr:`outputs`)."""
        if self.outputs is not None:
            return list(self.outputs)
        return [col(c.name) for c in self.calls]

    @property
    def spec(self) -> Aggregate:
        """The window function spec of the operator path (``ValueError`` when none)."""
        if self.function is None:
            assert self.why_not is not None
            raise ValueError(self.why_not)
        return Aggregate(self.function)


# -- reading a Column --------------------------------------------------------------------------
@dataclass(frozen=True)
class _Node:
    function: str | None
    args: tuple[Column | None, ...]
    literals: tuple[Any, ...]
    distinct: bool
    expression: Column | None = None
    udf: Callable[..., Any] | None = None
    python_udf: bool = False


def _read_pandas_udf(column: Column, node: Any, expression: Column) -> _Node:
    """A classic column node that is not a function call: a Python aggregate UDF's (a
    grouped-aggregate pandas UDF with its function unpickled as Spark ships it to the
    workers and its arguments as columns; any other only flagged), or an unknown
    expression."""
    unknown = _Node(None, (), (), False, expression)
    if node.getClass().getSimpleName() != "ExpressionColumnNode":
        return unknown
    aggregate = node.expression()
    if aggregate.getClass().getSimpleName() != "AggregateExpression":
        return unknown
    udf = aggregate.aggregateFunction()
    if udf.getClass().getSimpleName() != "PythonUDAF":
        return unknown
    name = f"pandas_udf {udf.name()}"
    python = udf.func()
    children = udf.children()
    named = any(
        children.apply(i).getClass().getSimpleName() == "NamedArgumentExpression"
        for i in range(children.size())
    )
    if (
        udf.evalType() != GROUPED_AGG
        or named
        or not python.broadcastVars().isEmpty()
        or not CONVERTS
    ):
        # (another kind of Python aggregate, keyword arguments, a function pickled over
        # 1 MB, which Spark broadcasts, or a pyspark without its worker's conversions)
        return _Node(name, (), (), False, expression, python_udf=True)
    function, _ = CloudPickleSerializer().loads(bytes(python.command().unsafeArray()))
    jvm = SparkContext._jvm
    assert jvm is not None
    args = tuple(
        type(column)(jvm.org.apache.spark.sql.classic.ExpressionUtils.column(children.apply(i)))
        for i in range(children.size())
    )
    return _Node(name, args, (None,) * len(args), False, expression, function, True)


def _read_connect_udf(column: Column, expr: Any, expression: Column) -> _Node:
    """A Spark Connect Python UDF: a grouped-aggregate pandas UDF with its function (the one
    Connect pickles for the server) and its arguments as columns; any other only flagged."""
    name = f"pandas_udf {expr._function_name}"
    python = expr._function
    arguments = list(expr._arguments)
    if (
        type(python).__name__ != "PythonUDF"
        or python._eval_type != GROUPED_AGG
        or any(type(a).__name__ == "NamedArgumentExpression" for a in arguments)
        or not CONVERTS
    ):
        # (a Java UDF, another kind of Python aggregate, keyword arguments, or a pyspark
        # without its worker's conversions)
        return _Node(name, (), (), False, expression, python_udf=True)
    args = tuple(type(column)(a) for a in arguments)
    return _Node(name, args, (None,) * len(args), False, expression, python._func, True)


def _read_classic(column: Column) -> _Node | None:
    # (a Column's unknown attributes are fields: look at its class, not its attributes)
    if not type(column).__module__.startswith("pyspark.sql.classic"):
        return None
    node = cast(Any, column)._jc.node()
    while node.getClass().getSimpleName() == "Alias":
        node = node.child()
    jvm_column = SparkContext._jvm.org.apache.spark.sql.Column  # type: ignore[union-attr]
    expression = type(column)(jvm_column(node))
    if node.getClass().getSimpleName() != "UnresolvedFunction":
        return _read_pandas_udf(column, node, expression)
    args: list[Column | None] = []
    literals: list[Any] = []
    arguments = node.arguments()
    for i in range(arguments.size()):
        arg = arguments.apply(i)
        kind = arg.getClass().getSimpleName()
        if kind == "UnresolvedStar":
            args.append(None)
            literals.append(_STAR if arg.unparsedTarget().isEmpty() else _QUALIFIED_STAR)
            continue
        args.append(type(column)(jvm_column(arg)))
        literals.append(arg.value() if kind == "Literal" else None)
    return _Node(
        str(node.functionName()).lower(),
        tuple(args),
        tuple(literals),
        bool(node.isDistinct()),
        expression,
    )


def _read_connect(column: Column) -> _Node | None:
    if not type(column).__module__.startswith("pyspark.sql.connect"):
        return None
    expr: Any = cast(Any, column)._expr
    while type(expr).__name__ == "ColumnAlias":
        expr = getattr(expr, "_child", None) or expr._parent
    expression = type(column)(expr)
    if type(expr).__name__ == "CommonInlineUserDefinedFunction":
        return _read_connect_udf(column, expr, expression)
    if type(expr).__name__ != "UnresolvedFunction":
        return _Node(None, (), (), False, expression)
    args: list[Column | None] = []
    literals: list[Any] = []
    for arg in expr._args:
        kind = type(arg).__name__
        if kind == "UnresolvedStar":
            args.append(None)
            target = getattr(arg, "_unparsed_target", None)
            literals.append(_STAR if target is None else _QUALIFIED_STAR)
            continue
        args.append(type(column)(arg))
        literals.append(getattr(arg, "_value", None) if kind == "LiteralExpression" else None)
    return _Node(
        str(expr._name).lower(),
        tuple(args),
        tuple(literals),
        bool(getattr(expr, "_is_distinct", False)),
        expression,
    )


def _read(column: Column) -> _Node:
    for reader in (_read_connect, _read_classic):
        node = reader(column)
        if node is not None:
            return node
    return _Node(None, (), (), False)


# -- compiling ---------------------------------------------------------------------------------
def _value_kind(dtype: DataType) -> ValueKind:
    if isinstance(dtype, DecimalType):
        return ValueKind.DECIMAL
    if isinstance(dtype, FloatType | DoubleType):
        return ValueKind.FLOATING
    if dtype.typeName() in ("byte", "short", "integer", "long"):
        return ValueKind.INTEGRAL
    if isinstance(dtype, ArrayType | MapType | StructType | VariantType):
        return ValueKind.OTHER
    return ValueKind.ORDERED


#: The arguments each kind takes (``count`` any number, or ``*``).
_ARITY = {AggKind.MIN_BY: (2,), AggKind.MAX_BY: (2,), AggKind.FIRST: (1, 2), AggKind.LAST: (1, 2)}


def _why_not(
    call: AggregateCall, kinds: Sequence[ValueKind], types: Sequence[DataType]
) -> str | None:
    """Why the window operator cannot compute ``call`` (``None`` when it can); ``kinds`` and
    ``types`` describe its arguments (a star's kind is ``OTHER``, its type is not listed)."""
    label = f"aggregate column {call.name!r} ({call.column!r})"
    if call.function is None:
        return f"{label} is not one aggregate function call"
    if call.udf is not None:
        return None  # (any arguments: Spark's analyzer took them)
    if call.python_udf:
        return (
            f"{label}: the window operator runs grouped-aggregate pandas UDFs (pandas Series "
            "in, a scalar out) called with positional arguments (in a classic session, "
            "with a function pickled in under 1 MB)"
        )
    kind = SUPPORTED.get(call.function)
    if kind is not None and any(a is None for a in call.args):
        star = kind is AggKind.COUNT and not call.distinct and call.literals == (_STAR,)
        if not star:
            return f"{label}: a star argument other than count(*)"
    if kind is not None and len(call.args) not in _ARITY.get(kind, (len(call.args),)):
        return f"{label}: {call.function} with {len(call.args)} arguments"
    if kind in (AggKind.COUNT_IF, AggKind.BOOL_AND, AggKind.BOOL_OR) and not all(
        isinstance(t, BooleanType) for t in types
    ):
        return f"{label}: {call.function} of a non-boolean argument (Spark casts it)"
    if kind is None:
        return (
            f"{label}: {call.function!r} has no window-operator equivalent; this job needs "
            f"the window operator (see WindowedStream.explain()), which computes one call of "
            f"{', '.join(sorted(set(SUPPORTED)))} per column"
        )
    if call.distinct and kind is not AggKind.COUNT:
        return f"{label}: DISTINCT is supported with count only"
    values = [k for a, k in zip(call.args, kinds, strict=True) if a is not None]
    if (
        kind in (AggKind.SUM, AggKind.AVG)
        and values
        and values[0]
        not in (
            ValueKind.INTEGRAL,
            ValueKind.FLOATING,
            ValueKind.DECIMAL,
        )
    ):
        return f"{label}: {call.function} of a non-numeric argument"
    compared = values[:1] if kind in (AggKind.MIN, AggKind.MAX) else values[1:2]
    if kind in (AggKind.MIN, AggKind.MAX, AggKind.MIN_BY, AggKind.MAX_BY) and (
        ValueKind.OTHER in compared
    ):
        return f"{label}: {call.function} compares arrays, maps or structs"
    if call.distinct and ValueKind.OTHER in values:
        return f"{label}: count(DISTINCT ...) of arrays, maps or structs"
    return None


def _check_columns(columns: Sequence[Any]) -> None:
    if not columns:
        msg = "agg: give at least one aggregate column, e.g. .agg(F.sum('amount'))"
        raise ValueError(msg)
    for i, c in enumerate(columns):
        if not isinstance(c, Column):
            msg = (
                f"agg: argument {i} must be a pyspark Column of an aggregate function "
                f"(e.g. F.sum('amount')), got {type(c).__name__} {c!r}"
            )
            raise ValueError(msg)


def compile_aggregates(job: Job, columns: Sequence[Any]) -> CompiledAggregates:
    """Read ``columns`` against the job's DataFrame (no Spark job runs); ``ValueError``
    naming the column for anything Spark's analyzer rejects."""
    _check_columns(columns)
    df = job.source.df
    try:
        schema = df.groupBy().agg(*columns).schema
    except PySparkException as exc:
        msg = (
            f"agg: Spark cannot aggregate {list(columns)!r} over the input columns "
            f"{df.columns}: {exc}"
        )
        raise ValueError(msg) from exc
    for name in schema.names:
        if name.startswith(INTERNAL_PREFIX):
            msg = (
                f"agg: the output column {name!r} starts with {INTERNAL_PREFIX!r}, which is "
                "reserved for the window runtime; alias it"
            )
            raise ValueError(msg)
    ansi = ansi_enabled(df.sparkSession)
    conf: PandasConf | None = None  # (the session's pandas settings, read for a first UDF)
    calls: list[AggregateCall] = []
    arg_columns: list[Column] = []
    aggregates: list[ColumnAggregate] = []
    why_not: str | None = None
    for column, field in zip(columns, schema.fields, strict=True):
        node = _read(column)
        call = AggregateCall(
            column,
            field.name,
            field.dataType,
            node.function,
            node.args,
            node.literals,
            node.distinct,
            expression=node.expression,
            udf=node.udf,
            python_udf=node.python_udf,
        )
        args = [a for a in node.args if a is not None]
        try:
            arg_types = [f.dataType for f in df.select(*args).schema.fields] if args else []
        except PySparkException:
            arg_types = []
        kinds = iter(_value_kind(t) for t in arg_types)
        arg_kinds = [next(kinds) if a is not None else ValueKind.OTHER for a in node.args]
        reason = (
            _why_not(call, arg_kinds, arg_types)
            if len(arg_types) == len(args)
            else (f"aggregate column {field.name!r}: its arguments are not row expressions")
        )
        if reason is not None:
            why_not = why_not or reason
            calls.append(call)
            continue
        kind = AggKind.PANDAS_UDF if node.udf else SUPPORTED[node.function]  # type: ignore[index]
        calls.append(dataclasses.replace(call, kind=kind))
        runner = None
        if node.udf is not None:
            conf = conf or PandasConf.of(df.sparkSession)
            runner = PandasAggregate(node.udf, tuple(arg_types), field.dataType, conf)
        aggregate, used = _aggregate(
            call, kind, arg_kinds, len(df.columns) + len(arg_columns), ansi, runner
        )
        arg_columns.extend(used)
        aggregates.append(aggregate)
    if why_not is not None:
        return CompiledAggregates(tuple(calls), schema, job, None, why_not)
    ordered = any(a.kind.needs_order for a in aggregates)
    extra = [c.alias(f"{_ARG}{i}") for i, c in enumerate(arg_columns)]
    if ordered:
        extra.append(order_key(df, job).alias(ORDER))
    extended = df.select(*[col(c) for c in df.columns], *extra)
    order = len(df.columns) + len(arg_columns) if ordered else None
    function = ColumnAggregates(tuple(aggregates), order, tuple(schema.names))
    source = dataclasses.replace(job.source, df=extended)
    return CompiledAggregates(
        tuple(calls), schema, dataclasses.replace(job, source=source), function, None
    )


def _aggregate(
    call: AggregateCall,
    kind: AggKind,
    arg_kinds: Sequence[ValueKind],
    first_position: int,
    ansi: bool,
    udf: PandasAggregate | None = None,
) -> tuple[ColumnAggregate, list[Column]]:
    """The operator's aggregate for ``call``, and the argument columns it reads (placed
    from ``first_position`` on)."""
    args = list(call.args)
    literals = list(call.literals)
    ignore_nulls = False
    if kind in (AggKind.FIRST, AggKind.LAST) and len(args) == 2:
        ignore_nulls = bool(literals[1])
        args, arg_kinds = args[:1], arg_kinds[:1]
    used = [a for a in args if a is not None]
    inputs = tuple(range(first_position, first_position + len(used)))
    value = arg_kinds[0] if arg_kinds else ValueKind.OTHER
    dtype = call.dtype
    precision = dtype.precision if isinstance(dtype, DecimalType) else None
    scale = dtype.scale if isinstance(dtype, DecimalType) else None
    if kind is AggKind.COUNT_IF or kind in (AggKind.BOOL_AND, AggKind.BOOL_OR):
        value = ValueKind.ORDERED
    aggregate = ColumnAggregate(
        kind,
        inputs,
        distinct=call.distinct,
        ignore_nulls=ignore_nulls,
        value=value,
        precision=precision,
        scale=scale,
        ansi=ansi,
        name=call.name,
        udf=udf,
    )
    return aggregate, used


def ansi_enabled(spark: SparkSession) -> bool:
    """Whether the session runs Spark SQL's ANSI mode (its default): an integer or decimal
    overflow raises instead of wrapping or giving null."""
    return (spark.conf.get("spark.sql.ansi.enabled") or "true").lower() == "true"


def count_all() -> Column:
    """``count(*)`` named ``count`` (``WindowedStream.count``)."""
    return F.count("*").alias("count")


def order_key(df: DataFrame, job: Job) -> Column:
    """The replay order of rows with one event time: ``struct(event time ms[, arrival
    order column(s)], content hash)``; ``first`` / ``last`` and ties of ``min_by`` / ``max_by``
    follow it. Where rows without event time are in windows (assigners other than event-time
    ones), the key starts with whether the event time is null: such rows come last, as in
    the replay order (nulls last), and never compare their null with a time."""
    source = job.source
    ts = time_millis(df, source.event_time, "event_time", source.event_unit)
    parts = [ts] if job.config.assigner.is_event_time() else [ts.isNull(), ts]
    parts += [arrival_micros(df, name) for name in source.arrival_columns]
    parts.append(content_hash(df))
    return F.struct(*parts)
