"""The tagged operator output shared by the batch replay and the streaming processor.

Each run of the operator on the executors (one key in the batch replay; one key and
micro-batch in streaming) returns ONE Arrow table holding the window results, the side
outputs of ``context.output(tag, value)``, the late rows and one metrics row, told apart by the
``__pw_kind`` column. :class:`OutputLayout` names its columns, builds it on the executors and
splits it on the driver, so the stateful work runs once however many outputs are read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    ByteType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from windowing.records import OutputTag
from windowing.spark.columns.failures import (
    DEAD_LETTER_COLUMNS,
    DeadRows,
    failing_window,
)
from windowing.spark.columns.metrics import (
    COUNTER_NAMES,
    METRIC_NAMES,
    counter_values,
    default_value,
)
from windowing.spark.columns.operator_rows import (
    REASON_LATE,
    REASON_NULL_ARRIVAL_ORDER,
    REASON_NULL_EVENT_TIME,
    Encoders,
    LateRows,
    windowed_columns,
)
from windowing.spark.columns.schema import (
    INTERNAL_PREFIX,
    make_columns_encoder,
    make_row_encoder,
)
from windowing.spark.columns.side_outputs import no_side_output
from windowing.spark.columns.sql import cast_as, col, quoted, type_sql
from windowing.spark.columns.units import unit_sql
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP, TimeUnit
from windowing.windows import window_text

__all__ = [
    "LATE_COLUMNS",
    "PANE_COLUMNS",
    "REASON_LATE",
    "REASON_NULL_ARRIVAL_ORDER",
    "REASON_NULL_EVENT_TIME",
    "RESULT_COLUMNS",
    "LateRows",
    "OutputLayout",
    "col",
    "counter_sql",
    "instant_time",
    "ms_to_time",
]


#: Result (and side output) columns added around the function's output columns.
RESULT_COLUMNS = ("window_start", "window_end", "max_timestamp")
#: Result columns added by ``WindowedStream.pane_info()``.
PANE_COLUMNS = ("pane_index", "timing")
#: Columns added to the late rows.
LATE_COLUMNS = ("late_watermark", "late_reason")


# Internal column names (the prefix is reserved, see schema.INTERNAL_PREFIX).
KIND = "__pw_kind"
_WS = "__pw_ws"
_WE = "__pw_we"
_MT = "__pw_mt"
_PI = "__pw_pi"
_PT = "__pw_pt"
_LWM = "__pw_lwm"
_LREASON = "__pw_lreason"
_DCLASS = "__pw_dclass"
_DMSG = "__pw_dmsg"

# __pw_kind values: side output j (in declaration order) is _SIDE + j.
_RESULT, _LATE, _METRICS, _SIDE = 0, 1, 2, 3
_DEAD = 120  # dead letters (after the last side output)

# Epoch milliseconds representable as a Spark timestamp (years 1 to 9999), and the first and
# last instants of that range in microseconds (the bounds window bounds are clamped to).
_SPARK_MIN_MS = -62_135_596_800_000
_SPARK_MAX_MS = 253_402_300_799_999
_SPARK_MIN_US = _SPARK_MIN_MS * 1_000
_SPARK_MAX_US = 253_402_300_799_999_999
_MS = TimeUnit.MILLISECONDS


# The metrics row's counters and gauges (COUNTER_NAMES order) in one array column: one column
# instead of one per counter keeps the (mostly null) tagged output narrow, and a streaming
# runtime converts every column of every output it yields.
_COUNTERS = "__pw_metrics"
_COUNTERS_TYPE = ArrayType(LongType(), False)
_COUNTERS_ARROW = to_arrow_type(_COUNTERS_TYPE)


def counter_sql(name: str) -> str:
    """SQL text reading the counter or gauge ``name`` of a tagged output's metrics rows."""
    return f"{_COUNTERS}[{COUNTER_NAMES.index(name)}]"


def ms_to_time(column: Column, kind: str, *, clamp: bool = False) -> Column:
    """Epoch milliseconds as a ``timestamp`` (``kind == "timestamp"``) or unchanged ``bigint``.

    A time outside Spark's timestamps (years 1 to 9999) is null, or with ``clamp`` (window
    bounds) the first or last instant Spark holds, as the window operator clamps a window end
    past the end of ``long`` (``docs/failures.md``, "The ends of time")."""
    if kind != "timestamp":
        return column
    if clamp:
        return (
            F.when(column < F.lit(_SPARK_MIN_MS), F.timestamp_micros(F.lit(_SPARK_MIN_US)))
            .when(column > F.lit(_SPARK_MAX_MS), F.timestamp_micros(F.lit(_SPARK_MAX_US)))
            .otherwise(F.timestamp_millis(column))
        )
    return F.when(
        column.between(_SPARK_MIN_MS, _SPARK_MAX_MS), F.timestamp_millis(column)
    ).otherwise(F.lit(None).cast(TimestampType()))


def bound_sql(
    name: str, alias: str | None = None, *, kind: str, unit: TimeUnit = _MS, bound: bool = False
) -> str:
    """:func:`ms_to_time` of the window bound or max timestamp in column ``name`` (clamped) as
    SQL text (``AS alias`` if given; one JVM call per projection); integral: ``units.unit_sql``."""
    as_alias = "" if alias is None else f" AS {alias}"
    if kind != "timestamp":
        return f"{unit_sql(name, unit, bound=bound)}{as_alias}"
    return (
        f"CASE WHEN {name} < {_SPARK_MIN_MS} THEN timestamp_micros({_SPARK_MIN_US}) "
        f"WHEN {name} > {_SPARK_MAX_MS} THEN timestamp_micros({_SPARK_MAX_US}) "
        f"ELSE timestamp_millis({name}) END{as_alias}"
    )


def instant_time(name: str, kind: str, unit: TimeUnit) -> Column:
    """The instant (max timestamp, watermark) in ``name``: :func:`ms_to_time`, or in ``unit``."""
    if kind == "timestamp":
        return ms_to_time(F.col(name), kind)
    return F.expr(unit_sql(name, unit))


@dataclass(frozen=True, eq=False)
class OutputLayout:
    """The columns of the tagged output, and how to build and split it.

    Shipped to the executors with the replay function / stateful processor.

    Attributes
    ----------
    keys
        The key columns (empty for ``window_all``).
    input_schema
        The input columns (late rows keep them).
    out_schema
        The function's output fields.
    reduced_rows
        Whether the results are reduced input rows (then ``out_schema`` is the input minus the
        key and window columns).
    ts_kind
        ``"timestamp"`` or ``"integral"``: the type of the time columns on the driver.
    time_unit
        The unit of an integral event-time column, and so of the result times.
    late_output_tag
        The tag of ``side_output_late_data``, if any.
    side_outputs
        ``(tag, schema)`` of each side output written by ``context.output``.
    timezone
        The session time zone: Spark's Arrow input carries it on timestamp columns, and the
        values functions see are in it. Output columns are always ``timestamp[us, tz=UTC]``,
        the type Spark expects back from Python whatever the session time zone (the instants
        are the same).
    dead_letter
        Whether the output carries dead letters (``on_error("dead_letter")``): they keep the
        input columns as late rows do, and add the error's class and message.
    show_values
        Whether error notes show row and result values.
    window_struct
        The results' window as Spark's ``window`` struct column of this name, if any
        (``WindowedStream.window_struct``).
    pane_info
        Whether results carry their pane (``pane_index``, ``timing``;
        ``WindowedStream.pane_info``).
    """

    keys: tuple[str, ...]
    input_schema: StructType
    out_schema: StructType
    reduced_rows: bool
    ts_kind: str
    late_output_tag: OutputTag | None
    side_outputs: tuple[tuple[OutputTag, StructType], ...] = ()
    timezone: str = "UTC"
    dead_letter: bool = False
    show_values: bool = False
    window_struct: str | None = None
    pane_info: bool = False
    time_unit: TimeUnit = _MS

    # -- columns ---------------------------------------------------------------------------
    @property
    def side_tags(self) -> tuple[OutputTag, ...]:
        return tuple(t for t, _ in self.side_outputs)

    @property
    def result_cols(self) -> list[str]:
        return [f"__pw_r{i}" for i in range(len(self.out_schema.fields))]

    @property
    def has_late(self) -> bool:
        """Whether the output carries late rows (only with ``side_output_late_data``;
        without it, late rows are dropped and counted, and the late columns are left out)."""
        return self.late_output_tag is not None

    @property
    def has_input_rows(self) -> bool:  # late rows or dead letters
        return self.has_late or self.dead_letter

    @property
    def late_cols(self) -> list[str]:
        if not self.has_input_rows:
            return []
        return [f"__pw_l{i}" for i in range(len(self.input_schema.fields))]

    def side_cols(self, j: int) -> list[str]:
        return [f"__pw_s{j}_{i}" for i in range(len(self.side_outputs[j][1].fields))]

    @functools.cached_property
    def schema(self) -> StructType:
        """The Spark schema of the tagged output."""

        def nullable(names: list[str], schema: StructType) -> list[StructField]:
            return [
                StructField(c, f.dataType, True) for c, f in zip(names, schema.fields, strict=True)
            ]

        return StructType(
            [
                StructField(KIND, ByteType(), False),
                *[StructField(k, self.input_schema[k].dataType, True) for k in self.keys],
                StructField(_WS, LongType(), True),
                StructField(_WE, LongType(), True),
                StructField(_MT, LongType(), True),
                *(
                    [StructField(_PI, LongType(), True), StructField(_PT, StringType(), True)]
                    if self.pane_info
                    else []
                ),
                *nullable(self.result_cols, self.out_schema),
                *[
                    f
                    for j, (_, schema) in enumerate(self.side_outputs)
                    for f in nullable(self.side_cols(j), schema)
                ],
                *(
                    [
                        *nullable(self.late_cols, self.input_schema),
                        StructField(_LWM, LongType(), True),
                        StructField(_LREASON, StringType(), True),
                    ]
                    if self.has_input_rows
                    else []
                ),
                *(
                    [
                        StructField(_DCLASS, StringType(), True),
                        StructField(_DMSG, StringType(), True),
                    ]
                    if self.dead_letter
                    else []
                ),
                StructField(_COUNTERS, _COUNTERS_TYPE, True),
            ]
        )

    # -- driver side: split the output -----------------------------------------------------
    def _windowed(
        self, rows: DataFrame, cols: list[str], fields: StructType, struct: str | None, panes: bool
    ) -> DataFrame:
        time = functools.partial(bound_sql, kind=self.ts_kind, unit=self.time_unit)
        values = [f"{c} AS {quoted(f.name)}" for c, f in zip(cols, fields.fields, strict=True)]
        keys = [quoted(k) for k in self.keys]
        # SQL text: one call to the JVM for the whole projection
        pane_items = [f"{_PI} AS pane_index", f"{_PT} AS timing"] if panes else []
        if struct is not None:  # Spark's groupBy(window(...)) columns
            start, end = time(_WS, bound=True), time(_WE, bound=True)
            window = f"named_struct('start', {start}, 'end', {end}) AS {quoted(struct)}"
            return rows.selectExpr(*keys, window, *values, *pane_items)
        return rows.selectExpr(
            *keys,
            time(_WS, "window_start", bound=True),
            time(_WE, "window_end", bound=True),
            *values,
            time(_MT, "max_timestamp"),
            *pane_items,
        )

    def select_results(self, df: DataFrame, *, tagged: bool = True) -> DataFrame:
        """Key column(s), ``window_start``, ``window_end`` (or :attr:`window_struct`),
        function outputs, ``max_timestamp`` (not with :attr:`window_struct`), and with
        :attr:`pane_info` ``pane_index`` and ``timing`` (``tagged=False``: ``df`` holds
        result rows only)."""
        rows = df.where(f"{KIND} = {_RESULT}") if tagged else df
        struct = self.window_struct
        return self._windowed(rows, self.result_cols, self.out_schema, struct, self.pane_info)

    def select_late(self, df: DataFrame) -> DataFrame:
        """The input columns plus ``late_watermark`` and ``late_reason`` (no rows without a
        late-data tag)."""
        # The runtime's own input columns (``WindowedStream.agg``'s arguments) stay inside.
        user = [not f.name.startswith(INTERNAL_PREFIX) for f in self.input_schema.fields]
        if not self.has_late:
            return df.where(F.lit(False)).select(
                *[
                    cast_as(F.lit(None), f.dataType).alias(f.name)
                    for f, keep in zip(self.input_schema.fields, user, strict=True)
                    if keep
                ],
                ms_to_time(F.lit(None).cast("long"), self.ts_kind).alias("late_watermark"),
                F.lit(None).cast("string").alias("late_reason"),
            )
        return df.where(F.col(KIND) == _LATE).select(
            *[
                F.col(c).alias(f.name)
                for c, f, keep in zip(self.late_cols, self.input_schema.fields, user, strict=True)
                if keep
            ],
            instant_time(_LWM, self.ts_kind, self.time_unit).alias("late_watermark"),
            F.col(_LREASON).alias("late_reason"),
        )

    def select_dead_letters(self, df: DataFrame) -> DataFrame:
        """The dead letters: the input columns (the key columns always; the others null
        unless an element failed), ``error_phase``, ``error_class``, ``error_message``,
        ``window_start``, ``window_end`` (no rows without ``on_error("dead_letter")``)."""
        layout = self
        fields = [f for f in layout.input_schema.fields if not f.name.startswith(INTERNAL_PREFIX)]
        if not layout.dead_letter:
            return df.where(F.lit(False)).select(
                *[cast_as(F.lit(None), f.dataType).alias(f.name) for f in fields],
                *[F.lit(None).cast("string").alias(n) for n in DEAD_LETTER_COLUMNS[:3]],
                *[
                    ms_to_time(F.lit(None).cast("long"), layout.ts_kind).alias(n)
                    for n in DEAD_LETTER_COLUMNS[3:]
                ],
            )
        late = dict(zip(layout.input_schema.names, layout.late_cols, strict=True))
        phase, error_class, message, start, end = DEAD_LETTER_COLUMNS
        return df.where(f"{KIND} = {_DEAD}").selectExpr(
            *[
                f"{quoted(f.name) if f.name in layout.keys else late[f.name]} AS {quoted(f.name)}"
                for f in fields
            ],
            f"{_LREASON} AS {phase}",
            f"{_DCLASS} AS {error_class}",
            f"{_DMSG} AS {message}",
            bound_sql(_WS, start, kind=layout.ts_kind, unit=layout.time_unit, bound=True),
            bound_sql(_WE, end, kind=layout.ts_kind, unit=layout.time_unit, bound=True),
        )

    def select_side_output(self, df: DataFrame, tag: OutputTag) -> DataFrame:
        """The late rows for the late tag; for a declared tag: key column(s),
        ``window_start``, ``window_end``, the tag's fields, ``max_timestamp``."""
        j = self.side_index(tag)
        if j is None:
            return self.select_late(df)
        rows = df.where(f"{KIND} = {_SIDE + j}")
        return self._windowed(rows, self.side_cols(j), self.side_outputs[j][1], None, False)

    def side_index(self, tag: OutputTag) -> int | None:
        """``None`` for the late tag, the index of a declared side output; ``ValueError``
        naming ``tag`` otherwise."""
        if not isinstance(tag, OutputTag):
            msg = f"tag must be an OutputTag, got {type(tag).__name__} {tag!r}"
            raise ValueError(msg)
        if tag == self.late_output_tag:
            return None
        for j, t in enumerate(self.side_tags):
            if t == tag:
                return j
        raise no_side_output(tag, [self.late_output_tag, *self.side_tags])

    def select_metrics(self, df: DataFrame) -> DataFrame:
        """The metrics rows (one per key in batch, per key and micro-batch in streaming)."""
        return df.where(F.col(KIND) == _METRICS).select(
            *[F.col(_COUNTERS)[i].alias(n) for i, n in enumerate(METRIC_NAMES)]
        )

    def metric_totals(self, names: Sequence[str] = METRIC_NAMES) -> list[Column]:
        """Aggregate expressions summing the counters ``names`` over a tagged output
        (``bigint`` columns named after the counters; 0 without metrics rows)."""
        index = {n: i for i, n in enumerate(METRIC_NAMES)}
        # SQL text: one call to the JVM per column (building them from Columns takes ~7)
        return [
            F.expr(f"CAST(COALESCE(SUM({_COUNTERS}[{index[n]}]), 0) AS BIGINT) AS {quoted(n)}")
            for n in names
        ]

    def select_metric_totals(self, df: DataFrame) -> DataFrame:
        """One row: every counter summed over the metrics rows of ``df``."""
        return df.where(F.col(KIND) == _METRICS).agg(*self.metric_totals())

    # -- native plans ----------------------------------------------------------------------
    @functools.cached_property
    def sql(self) -> SqlBranches:
        """The output's rows built with Spark SQL (native plans)."""
        return SqlBranches(self)

    # -- executor side: build the output ---------------------------------------------------
    @functools.cached_property
    def writers(self) -> tuple[Encoders, list[Encoders]]:
        """Encoders (one value, all values in bulk) of the results and of each side output."""
        encode: Callable[[Any], list[Any]]
        if self.reduced_rows:
            encode_row = make_row_encoder(self.input_schema)
            kept = set(self.out_schema.names)
            keep = [i for i, n in enumerate(self.input_schema.names) if n in kept]

            def encode_kept(value: Any) -> list[Any]:
                values = encode_row(value)
                return [values[i] for i in keep]

            encode = encode_kept
            encode_all = make_columns_encoder(self.out_schema, source=self.input_schema)
        else:
            encode = make_row_encoder(self.out_schema)
            encode_all = make_columns_encoder(self.out_schema)
        sides = [(make_row_encoder(s), make_columns_encoder(s)) for _, s in self.side_outputs]
        return (encode, encode_all), sides

    def check_result(self, value: Any) -> None:
        """Raise when the result ``value`` is not a row of the output schema."""
        encode = self.writers[0][0]
        for v, arrow_type in zip(encode(value), self._arrow_types[0], strict=True):
            pa.array([v], arrow_type)

    @functools.cached_property
    def _arrow_types(self) -> tuple[list[pa.DataType], list[list[pa.DataType]], list[pa.DataType]]:
        """Arrow types of the result fields, of each side output's fields, of the inputs, as
        output columns (timestamps in UTC)."""

        def types(schema: StructType) -> list[pa.DataType]:
            return [to_arrow_type(f.dataType, timezone="UTC") for f in schema.fields]

        return (
            types(self.out_schema),
            [types(s) for _, s in self.side_outputs],
            types(self.input_schema),
        )

    @functools.cached_property
    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the tagged tables :meth:`tagged_table` and
        :meth:`tagged_result_batches` build (every field nullable)."""
        out_types, side_types, input_types = self._arrow_types
        panes = [_PI, _PT] if self.pane_info else []
        names = [KIND, *self.keys, _WS, _WE, _MT, *panes, *self.result_cols]
        types = [pa.int8(), *[input_types[self.input_schema.names.index(k)] for k in self.keys]]
        types += [pa.int64()] * 3 + [pa.int64(), pa.string()][: len(panes)] + out_types
        for j, s_types in enumerate(side_types):
            names += self.side_cols(j)
            types += s_types
        if self.has_input_rows:
            names += [*self.late_cols, _LWM, _LREASON]
            types += [*input_types, pa.int64(), pa.string()]
        if self.dead_letter:
            names += [_DCLASS, _DMSG]
            types += [pa.string(), pa.string()]
        names.append(_COUNTERS)
        types.append(_COUNTERS_ARROW)
        return pa.schema([pa.field(n, t) for n, t in zip(names, types, strict=True)])

    @functools.cached_property
    def _metrics_row_nulls(self) -> dict[int, pa.Array]:
        """One-row null arrays of the columns a metrics row leaves null, by position."""
        schema = self.arrow_schema
        first = 1 + len(self.keys)
        return {i: pa.nulls(1, schema.field(i).type) for i in range(first, len(schema) - 1)}

    def tagged_result_batches(
        self,
        *,
        key_columns: Callable[[int], list[pa.Array]],
        bounds: tuple[pa.Array, pa.Array, pa.Array],
        columns: Sequence[pa.Array],
        counters: Mapping[str, int],
        late_source: pa.Table | None = None,
        late: LateRows | None = None,
        other_key_columns: Callable[[int], list[pa.Array]] | None = None,
    ) -> list[pa.RecordBatch]:
        """One call's tagged output from results computed on whole columns, as two record
        batches of :attr:`arrow_schema` (nothing concatenated): the results (``bounds`` are
        the window starts, ends and result timestamps in int64 ms, ``columns`` the result
        columns, ``key_columns(n)`` their key columns), then the rows ``late.rows`` of
        ``late_source`` and one metrics row with ``counters`` (their key columns, which
        nothing reads, from ``other_key_columns``, by default ``key_columns``); no side
        outputs. The rows :meth:`tagged_table` builds for them."""
        schema = self.arrow_schema
        n = len(bounds[0])
        assert not self.pane_info, "firings counted per window run the window operator"
        first = 1 + len(self.keys) + 3  # the first result column
        results = [pa.array(np.zeros(n, np.int8)), *key_columns(n), *bounds]
        for i, array in enumerate(columns, start=first):
            arrow_type = schema.field(i).type
            results.append(array if array.type == arrow_type else array.cast(arrow_type))
        results += [pa.nulls(n, schema.field(i).type) for i in range(len(results), len(schema))]
        return [
            pa.RecordBatch.from_arrays(results, schema=schema),
            self._late_and_metrics_batch(
                other_key_columns or key_columns, counters, late_source, late
            ),
        ]

    def _late_and_metrics_batch(
        self,
        key_columns: Callable[[int], list[pa.Array]],
        counters: Mapping[str, int],
        late_source: pa.Table | None,
        late: LateRows | None,
    ) -> pa.RecordBatch:
        """The late rows and the metrics row of :meth:`tagged_result_batches`."""
        assert not self.dead_letter, "dead letters run the window operator"
        schema = self.arrow_schema
        if late is None or not late.rows:  # the common case: cached nulls
            nulls = self._metrics_row_nulls
            metrics = [pa.array([_METRICS], pa.int8()), *key_columns(1)]
            metrics += [nulls[i] for i in range(len(metrics), len(schema) - 1)]
            counts = counter_values(dict(counters))
            metrics.append(pa.array([counts], _COUNTERS_ARROW))
            return pa.RecordBatch.from_arrays(metrics, schema=schema)
        m = len(late.rows) + 1
        arrays = [pa.array([_LATE] * (m - 1) + [_METRICS], pa.int8()), *key_columns(m)]
        first_late = len(schema) - 1 - (len(self.late_cols) + 2)  # late columns, then counters
        arrays += [pa.nulls(m, schema.field(i).type) for i in range(len(arrays), first_late)]
        names = list(schema.names[:first_late])
        _late_and_metrics(self, arrays, names, 0, late_source, late, counters)
        table = pa.Table.from_arrays(arrays, names=names).cast(schema).combine_chunks()
        return table.to_batches()[0]  # the late columns are taken (chunked) from late_source

    def check_side_output(self, tag: OutputTag, records: Sequence[Any], key: Any) -> None:
        """Raise ``ValueError`` when a window function of ``key`` wrote ``records`` to a side
        output without a declared schema."""
        if records and tag != self.late_output_tag and tag not in self.side_tags:
            msg = (
                f"context.output({tag!r}, ...) of key {key!r}: side output {tag!r} has no "
                f"schema; pass side_output_schemas={{{tag!r}: '<schema>'}} to the terminal "
                "call (.process(...), .aggregate(...), ...)"
            )
            raise ValueError(msg)

    def tagged_table(
        self,
        *,
        key: Any,
        key_columns: Callable[[int], list[pa.Array]],
        results: Sequence[Any],
        side_outputs: Mapping[OutputTag, Sequence[Any]],
        late_source: pa.Table | None,
        late: LateRows,
        counters: Mapping[str, int],
        dead: DeadRows | None = None,
    ) -> pa.Table:
        """One key's tagged output: ``results`` (``WindowResult``), the side outputs
        (``side_outputs`` as the operator collects them; the late tag is skipped), the rows
        ``late.rows`` of ``late_source`` (which has the input columns by name), the dead
        letters ``dead`` (their rows of ``late_source`` too), one metrics row with
        ``counters``. ``key_columns(n)`` gives the key column(s) for ``n`` rows.

        Raises ``ValueError`` for a side output tag without a declared schema, and the
        conversion's error, naming the key, window and field, for a result that is not a row
        of the output schema."""
        encode, side_encoders = self.writers
        out_types, side_types, _ = self._arrow_types
        for tag, records in side_outputs.items():
            self.check_side_output(tag, records, key)
        sides = [list(side_outputs.get(tag, ())) for tag in self.side_tags]
        n_res, n_late, n_dead = len(results), len(late.rows), 0 if dead is None else len(dead)
        n_side = sum(len(s) for s in sides)
        total = n_res + n_side + n_late + n_dead + 1
        blocks = [(results, encode, self.out_schema, "result", self.result_cols, out_types)]
        for j, (tag, schema) in enumerate(self.side_outputs):
            what = f"side output {tag.name!r} value"
            blocks.append(
                (sides[j], side_encoders[j], schema, what, self.side_cols(j), side_types[j])
            )

        kinds: list[int] = []
        ws: list[int | None] = []
        we: list[int | None] = []
        mt: list[int | None] = []
        value_arrays: list[tuple[str, pa.Array]] = []
        start = 0
        for kind, (records, enc, schema, what, cols, types) in zip(
            [_RESULT, *range(_SIDE, _SIDE + len(sides))], blocks, strict=True
        ):
            columns, b_ws, b_we, b_mt = windowed_columns(
                records, enc, schema, what, self.show_values
            )
            kinds += [kind] * len(records)
            ws += b_ws
            we += b_we
            mt += b_mt
            after = [None] * (total - start - len(records))
            for values, name, field, arrow_type in zip(
                columns, cols, schema.fields, types, strict=True
            ):
                try:
                    array = pa.array([None] * start + values + after, arrow_type)
                except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
                    window = failing_window(records, values, arrow_type)
                    exc.add_note(
                        f"while writing output column {field.name!r} "
                        f"({field.dataType.simpleString()}) of window {window_text(window)} "
                        f"of key {key!r}"
                    )
                    raise
                value_arrays.append((name, array))
            start += len(records)
        kinds += [_LATE] * n_late + [_DEAD] * n_dead + [_METRICS]
        late_tail = [None] * n_late
        tail_ws = [*late_tail, *(dead.starts if dead else ()), None]
        tail_we = [*late_tail, *(dead.ends if dead else ()), None]
        tail_mt = [None] * (n_late + n_dead + 1)

        arrays: list[pa.Array] = [pa.array(kinds, pa.int8()), *key_columns(total)]
        names: list[str] = [KIND, *self.keys]
        for name, values, tail in ((_WS, ws, tail_ws), (_WE, we, tail_we), (_MT, mt, tail_mt)):
            arrays.append(pa.array(values + tail, pa.int64()))
            names.append(name)
        if self.pane_info:
            rest = [None] * (total - n_res)
            indexes = [r.pane.index for r in results]
            timings = [r.pane.timing.name for r in results]
            arrays += [pa.array(indexes + rest, pa.int64()), pa.array(timings + rest, pa.string())]
            names += [_PI, _PT]
        for name, array in value_arrays:
            arrays.append(array)
            names.append(name)
        _late_and_metrics(self, arrays, names, n_res + n_side, late_source, late, counters, dead)
        return pa.Table.from_arrays(arrays, names=names)


@dataclass(frozen=True, eq=False)
class SqlBranches:
    """The rows of a tagged output built with Spark SQL (a native plan computes the results,
    late rows and metrics without the window operator): one ``select`` per row shape."""

    layout: OutputLayout

    def _branch(self, kind: int, values: Mapping[str, Column | str]) -> list[Column]:
        """One tagged-output row shape: ``values`` by internal column name (a Column or SQL
        text), cast to the layout's types, nullable but the tag (as in the branches' union
        by name, :func:`~windowing.spark.batch.replay_plan.tagged_union`, which makes the
        columns a branch leaves out null: an output read from its own branches has the
        schema it has in the union; the optimizer folds ``IF(true, c, NULL)`` back to
        ``c``). SQL text where it can be (a call to the JVM each: plans have dozens)."""
        out, never = [], None
        for f in self.layout.schema.fields:
            value = values.get(f.name) if f.name != KIND else str(kind)
            if value is None:
                continue
            if f.name == KIND:
                out.append(F.expr(f"CAST({value} AS {f.dataType.simpleString()}) AS {KIND}"))
            elif isinstance(value, Column):
                # (not CASE WHEN true: Spark takes its value's nullability; made once)
                never = F.when(F.lit(False), F.lit(None)) if never is None else never
                out.append(never.otherwise(cast_as(value, f.dataType)).alias(f.name))
            else:
                cast = f"CAST({value} AS {f.dataType.simpleString()})"
                out.append(F.expr(f"IF(true, {cast}, NULL) AS {quoted(f.name)}"))
        return out

    def result_branch(
        self,
        bounds: tuple[Column, Column, Column],
        values: Sequence[Column],
        pane: tuple[Column, Column] | None = None,
    ) -> list[Column]:
        """The columns of result rows: the key columns (by name), window start, end and max
        timestamp in ms, the output fields' ``values``, and with pane info the ``pane``
        (index, timing name).

        The native plans' windows all have bounds: a null start is one below
        ``MIN_TIMESTAMP``, a null end one past ``MAX_TIMESTAMP``; both are clamped to the ends
        of ``long`` here, as :func:`~windowing.spark.columns.failures.window_bounds` clamps the
        operator's."""
        ws, we, mt = bounds
        named = self._keys()
        named.update(
            {
                _WS: F.coalesce(ws, F.expr(f"{MIN_TIMESTAMP}L")),
                _WE: F.coalesce(we, F.expr(f"{MAX_TIMESTAMP}L")),
                _MT: mt,
            }
        )
        if self.layout.pane_info:
            assert pane is not None, "a native plan with pane info gives each result its pane"
            named.update({_PI: pane[0], _PT: pane[1]})
        named.update(dict(zip(self.layout.result_cols, values, strict=True)))
        return self._branch(_RESULT, named)

    def late_branch(self, watermark: Column, reason: str | Column) -> list[Column]:
        """The columns of late rows read from the input (by name); ``reason`` a value or a
        column."""
        layout = self.layout
        named = self._keys()
        fields = layout.input_schema.fields
        named.update({c: col(f.name) for c, f in zip(layout.late_cols, fields, strict=True)})
        named.update(
            {_LWM: watermark, _LREASON: F.lit(reason) if isinstance(reason, str) else reason}
        )
        return self._branch(_LATE, named)

    def _keys(self) -> dict[str, Column | str]:
        """The key columns by name: SQL text where their type's name reads back."""
        types = {f.name: type_sql(f.dataType) for f in self.layout.schema.fields}
        return {k: quoted(k) if types.get(k) else col(k) for k in self.layout.keys}

    def metrics_branch(self, counters: Mapping[str, str]) -> list[Column]:
        """The columns of a metrics row: each counter from the column named in ``counters``,
        0 for the others."""
        unknown = set(counters) - set(METRIC_NAMES)
        assert not unknown, unknown
        items = [
            f"CAST({quoted(counters[n])} AS BIGINT)" if n in counters else f"{default_value(n)}L"
            for n in COUNTER_NAMES
        ]
        return self._branch(_METRICS, {_COUNTERS: f"array({', '.join(items)})"})


def _late_and_metrics(
    layout: OutputLayout,
    arrays: list[pa.Array],
    names: list[str],
    before: int,
    late_source: pa.Table | None,
    late: LateRows,
    counters: Mapping[str, int],
    dead: DeadRows | None = None,
) -> None:
    """Append the late-row columns (with ``side_output_late_data`` or dead letters), the
    dead letters' error columns and the metrics column of a tagged output whose first
    ``before`` rows are results and side outputs, followed by the late rows, the dead
    letters and the metrics row."""
    dead = DeadRows() if dead is None else dead
    n_dead = len(dead)
    total = before + len(late.rows) + n_dead + 1
    if layout.has_input_rows:
        input_types = layout._arrow_types[2]
        late_take = pa.array([None] * before + late.rows + dead.rows + [None], pa.int64())
        for name, field, arrow_type in zip(
            layout.late_cols, layout.input_schema.fields, input_types, strict=True
        ):
            if late_source is None:
                arrays.append(pa.nulls(total, arrow_type))
            else:
                arrays.append(late_source.column(field.name).take(late_take))
            names.append(name)
        head = [None] * before
        watermarks = [None if w is None or w == MIN_TIMESTAMP else w for w in late.watermarks]
        arrays.append(pa.array([*head, *watermarks, *[None] * n_dead, None], pa.int64()))
        names.append(_LWM)
        arrays.append(pa.array([*head, *late.reasons, *dead.phases, None], pa.string()))
        names.append(_LREASON)
    elif late.rows:
        msg = "late rows without a late-data tag: they are dropped and counted"
        raise AssertionError(msg)
    if layout.dead_letter:
        head = [None] * (before + len(late.rows))
        for name, values in ((_DCLASS, dead.classes), (_DMSG, dead.messages)):
            arrays.append(pa.array([*head, *values, None], pa.string()))
            names.append(name)
    else:
        assert not n_dead, "dead letters without on_error('dead_letter')"
    counts = counter_values({**counters, **dead.counters()})
    arrays.append(pa.array([None] * (total - 1) + [counts], _COUNTERS_ARROW))
    names.append(_COUNTERS)
