"""The interval join's tagged output, one layout for the batch replay and the streaming query
(:class:`IntervalJoinLayout`: results, each side's late rows and metrics rows in one table,
told apart by a kind column), and the run of a key group's rows through Flink's operator,
one operator per key (:class:`KeyRun`), which builds it."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ByteType,
    DataType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from windowing.functions.joins import LEFT, RIGHT, SIDE
from windowing.interval_join import IntervalJoinOperator
from windowing.records import OutputTag
from windowing.spark.columns.inputs import ARR as _ARR
from windowing.spark.columns.inputs import TS as _TS
from windowing.spark.columns.keys import key_value, state_key
from windowing.spark.columns.output import (
    LATE_COLUMNS,
    REASON_LATE,
    REASON_NULL_ARRIVAL_ORDER,
    REASON_NULL_EVENT_TIME,
    col,
    instant_time,
)
from windowing.spark.columns.schema import arrow_to_python, make_row_encoder
from windowing.spark.columns.side_outputs import no_side_output
from windowing.time import TimeUnit, instant_text

__all__ = [
    "GAUGE_NAMES",
    "METRIC_NAMES",
    "IntervalBounds",
    "IntervalJoinLayout",
    "KeyRun",
    "PairOutputs",
]

#: The interval join's counters (:class:`~windowing.interval_join.IntervalJoinMetrics`).
METRIC_NAMES = ("num_elements", "num_pairs", "num_results", "num_late_left", "num_late_right")
#: The gauges of a streaming call's metrics row (null in batch): the newest event time of
#: its rows (ms) and the watermark, and its key group's state bytes and buffered rows after
#: it.
GAUGE_NAMES = ("max_event_time", "watermark", "state_bytes", "buffered_rows")

# The tagged output: results, each side's late rows, metrics rows, told apart by the kind.
_KIND = "__pw_kind"
_MT = "__pw_mt"  # a result's event time (ms)
_LWM = "__pw_lwm"  # a late row's watermark (ms)
_LREASON = "__pw_lreason"
_RESULT, _LATE_LEFT, _LATE_RIGHT, _METRICS = 0, 1, 2, 3
_LATE_ROW = {LEFT: "__pw_lrow", RIGHT: "__pw_rrow"}  # a late row of each side
_LATE_KIND = {LEFT: _LATE_LEFT, RIGHT: _LATE_RIGHT}
_COUNTER = "__pw_n_"


@dataclass(frozen=True)
class IntervalBounds:
    """An interval join's bounds and late outputs (what ``between`` and the configuration
    calls gave)."""

    lower: int
    upper: int
    lower_inclusive: bool = True
    upper_inclusive: bool = True
    left_late_tag: OutputTag | None = None
    right_late_tag: OutputTag | None = None

    @property
    def low(self) -> int:
        """The lower bound, inclusive (Flink moves an exclusive bound by one)."""
        return self.lower if self.lower_inclusive else self.lower + 1

    @property
    def high(self) -> int:
        """The upper bound, inclusive."""
        return self.upper if self.upper_inclusive else self.upper - 1

    def new_operator(self, function: Any) -> IntervalJoinOperator:
        """Flink's operator with these bounds, ``function`` and a late output of each side
        (:data:`LATE_TAGS`: the runtime's own; the rows go to the user's tags, if any)."""
        return IntervalJoinOperator(
            self.lower,
            self.upper,
            function,
            lower_inclusive=self.lower_inclusive,
            upper_inclusive=self.upper_inclusive,
            left_late_tag=LATE_TAGS[LEFT],
            right_late_tag=LATE_TAGS[RIGHT],
        )


#: The operator's late outputs in the runtime (a late row's side is its tag's).
LATE_TAGS = {LEFT: OutputTag("__pw_left_late"), RIGHT: OutputTag("__pw_right_late")}


@dataclass(frozen=True, eq=False)
class IntervalJoinLayout:
    """The columns of the interval join's tagged output, how to split it, and its time type.

    Attributes
    ----------
    keys, key_types
        The key columns (named as the left input's) and their types.
    out
        The function's output fields.
    left_type, right_type
        The columns of each input (a late row keeps them).
    bounds
        The bounds and the late output tags.
    ts_kind, time_unit
        ``"timestamp"`` or ``"integral"``, and the unit of an integral event time: the type
        of the results' ``max_timestamp`` and the late rows' ``late_watermark``.
    """

    keys: tuple[str, ...]
    key_types: tuple[DataType, ...]
    out: StructType
    left_type: StructType
    right_type: StructType
    bounds: IntervalBounds
    ts_kind: str
    time_unit: TimeUnit = TimeUnit.MILLISECONDS

    #: No dead letters.
    dead_letter = False

    @functools.cached_property
    def schema(self) -> StructType:
        """The Spark schema of the tagged output."""
        fields = [StructField(_KIND, ByteType(), True)]
        fields += [StructField(k, t, True) for k, t in zip(self.keys, self.key_types, strict=True)]
        fields += [StructField(f.name, f.dataType, True) for f in self.out.fields]
        fields.append(StructField(_MT, LongType(), True))
        fields.append(StructField(_LATE_ROW[LEFT], self.left_type, True))
        fields.append(StructField(_LATE_ROW[RIGHT], self.right_type, True))
        fields += [StructField(_LWM, LongType(), True), StructField(_LREASON, StringType(), True)]
        names = (*METRIC_NAMES, *GAUGE_NAMES)
        fields += [StructField(_COUNTER + n, LongType(), True) for n in names]
        return StructType(fields)

    @functools.cached_property
    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the tagged output (timestamps in UTC)."""
        return to_arrow_schema(self.schema, timezone="UTC")

    # -- driver side: split the output -------------------------------------------------
    def select_results(self, df: DataFrame) -> DataFrame:
        """The key column(s), the output's columns and ``max_timestamp``."""
        return df.where(col(_KIND) == F.lit(_RESULT)).select(
            *[col(k) for k in self.keys],
            *[col(n) for n in self.out.names],
            instant_time(_MT, self.ts_kind, self.time_unit).alias("max_timestamp"),
        )

    def select_late(self, df: DataFrame, side: str) -> DataFrame:
        """The late rows of ``side``: its input's columns, ``late_watermark`` and
        ``late_reason``."""
        return df.where(col(_KIND) == F.lit(_LATE_KIND[side])).select(
            f"{_LATE_ROW[side]}.*",
            instant_time(_LWM, self.ts_kind, self.time_unit).alias(LATE_COLUMNS[0]),
            col(_LREASON).alias(LATE_COLUMNS[1]),
        )

    def side_of(self, tag: OutputTag) -> str:
        """The side whose late output ``tag`` is; ``ValueError`` naming it otherwise."""
        if not isinstance(tag, OutputTag):
            msg = f"tag must be an OutputTag, got {type(tag).__name__} {tag!r}"
            raise ValueError(msg)
        bounds = self.bounds
        if tag == bounds.left_late_tag:
            return LEFT
        if tag == bounds.right_late_tag:
            return RIGHT
        raise no_side_output(tag, [t for t in (bounds.left_late_tag, bounds.right_late_tag) if t])

    def side_index(self, tag: OutputTag) -> int:
        """The side output ``tag`` (``0``: the left's late rows, ``1``: the right's);
        ``ValueError`` naming it for any other tag."""
        return 0 if self.side_of(tag) == LEFT else 1

    def select_side_output(self, df: DataFrame, tag: OutputTag) -> DataFrame:
        """The late rows of the side whose late output ``tag`` is."""
        return self.select_late(df, self.side_of(tag))

    def metric_totals(self) -> list[Column]:
        """Aggregates summing each counter of the metrics rows (``bigint``, 0 without)."""
        return [
            F.coalesce(F.sum(col(_COUNTER + n)), F.lit(0)).cast(LongType()).alias(n)
            for n in METRIC_NAMES
        ]

    def select_metric_totals(self, df: DataFrame) -> DataFrame:
        """One row: every counter summed over the metrics rows of ``df``."""
        return df.where(col(_KIND) == F.lit(_METRICS)).agg(*self.metric_totals())

    @staticmethod
    def gauge_sql(name: str) -> str:
        """SQL text reading the gauge ``name`` (:data:`GAUGE_NAMES`) of a metrics row."""
        return f"`{_COUNTER}{name}`"


class PairOutputs:
    """The outputs of a call's pairs, as columns: each output's field values, the row of
    the call's input its key comes from, its event time (ms)."""

    def __init__(self, out: StructType) -> None:
        self.encode = make_row_encoder(out)
        self.fields = [[] for _ in out.names]  # type: list[list[Any]]
        self.rows: list[int] = []
        self.times: list[int] = []

    def add(self, values: Iterable[Any], row: int, time: int, note: str) -> None:
        try:
            for value in values:
                for field, v in zip(self.fields, self.encode(value), strict=True):
                    field.append(v)
                self.rows.append(row)
                self.times.append(time)
        except Exception as exc:
            exc.add_note(note)
            raise


_NO_KEY = object()


class KeyRun:
    """A key group's rows through Flink's operator, one operator per key: record batches of
    the tagged union (the key columns, ``side``, ``left``, ``right``, the event time in ms
    and the arrival order), each key's rows together and in arrival order, in; the tagged
    output (:class:`IntervalJoinLayout`) out. A batch replay starts each key from nothing;
    the streaming runtime restores it (:meth:`open_key`) and keeps it (:meth:`close_key`).

    Example::

        run = KeyRun(function, layout)
        tagged = [run.run(batch, watermarks) for batch, watermarks in batches]
        run.finish()
        tagged.append(run.metrics_batch())
    """

    def __init__(self, function: Any, layout: IntervalJoinLayout) -> None:
        self.function = function
        self.layout = layout
        self.skey: Any = _NO_KEY
        self.key: Any = None
        self.op: IntervalJoinOperator | None = None
        self.totals = dict.fromkeys(METRIC_NAMES, 0)

    def open_key(self, skey: Any, key: Any) -> IntervalJoinOperator:
        """The operator of the key ``key`` (its state key ``skey``): a new one."""
        return self.layout.bounds.new_operator(self.function)

    def close_key(self, skey: Any, key: Any, op: IntervalJoinOperator) -> None:
        """The key's rows are done: count its operator's work (late rows are counted as
        they go to the output)."""
        m = op.metrics
        for name in ("num_elements", "num_pairs", "num_results"):
            self.totals[name] += getattr(m, name)

    def finish(self) -> None:
        """Close the last key."""
        if self.op is not None:
            self.close_key(self.skey, self.key, self.op)
            self.skey, self.op = _NO_KEY, None

    def run(self, batch: pa.RecordBatch, watermarks: Sequence[int | None]) -> pa.RecordBatch:
        """The tagged output of ``batch``, each row after the watermark moved to its entry in
        ``watermarks`` (``None``: where it was)."""
        layout = self.layout
        keys = layout.keys
        key_lists = [batch.column(k).to_pylist() for k in keys]
        sides = batch.column(SIDE).to_pylist()
        times = batch.column(_TS).to_pylist()
        arrivals = (
            batch.column(_ARR).to_pylist() if _ARR in batch.schema.names else [0] * batch.num_rows
        )
        lefts = arrow_to_python(batch.column(LEFT))
        rights = arrow_to_python(batch.column(RIGHT))
        outputs = PairOutputs(layout.out)
        late = _LateRows()

        def count_late(i: int, side: str, mark: int | None, reason: str) -> None:
            self.totals["num_late_left" if side == LEFT else "num_late_right"] += 1
            tag = layout.bounds.left_late_tag if side == LEFT else layout.bounds.right_late_tag
            if tag is not None:
                late.add(i, side, mark, reason)

        for i in range(batch.num_rows):
            skey = tuple(state_key(values[i]) for values in key_lists)
            if self.op is None or skey != self.skey:
                self.finish()
                key = key_value([values[i] for values in key_lists])
                self.skey, self.key, self.op = skey, key, self.open_key(skey, key)
            op = self.op
            side = sides[i]
            if arrivals[i] is None:
                count_late(i, side, None, REASON_NULL_ARRIVAL_ORDER)
                continue
            wm = watermarks[i]
            if wm is not None and wm > op.watermark:
                op.process_watermark(wm)
            t = times[i]
            if t is None:
                count_late(i, side, op.watermark, REASON_NULL_EVENT_TIME)
                continue
            try:
                if side == LEFT:
                    op.process_left(lefts[i], t, skey)
                else:
                    op.process_right(rights[i], t, skey)
                for r in op.extract_output():
                    outputs.add((r.value,), i, r.timestamp, "")
            except Exception as exc:
                exc.add_note(
                    f"while joining the {side} row at {instant_text(t)} of key {self.key!r} "
                    f"(watermark {instant_text(op.watermark)})"
                )
                raise
            for s, tag in LATE_TAGS.items():  # the row itself, when late
                for e in op.extract_side_output(tag):
                    count_late(i, s, e.watermark, REASON_LATE)
        return self._tagged(batch, outputs, late)

    def _tagged(
        self, batch: pa.RecordBatch, outputs: PairOutputs, late: _LateRows
    ) -> pa.RecordBatch:
        schema = self.layout.arrow_schema
        n_res, n_late = len(outputs.rows), len(late.rows)
        n = n_res + n_late
        kinds = [_RESULT] * n_res + late.kinds
        rows = pa.array(outputs.rows + late.rows, pa.int64())
        arrays: dict[str, pa.Array] = {_KIND: pa.array(kinds, pa.int8())}
        for k in self.layout.keys:
            arrays[k] = batch.column(k).take(rows)
        for name, values in zip(self.layout.out.names, outputs.fields, strict=True):
            arrays[name] = pa.array(values + [None] * n_late, schema.field(name).type)
        arrays[_MT] = pa.array(outputs.times + [None] * n_late, pa.int64())
        late_take = pa.array([None] * n_res + late.rows, pa.int64())
        for side, kind in _LATE_KIND.items():
            taken = batch.column(side).take(late_take)
            mask = pa.array([k != kind for k in kinds], pa.bool_())
            arrays[_LATE_ROW[side]] = pc.if_else(mask, pa.nulls(n, taken.type), taken)
        arrays[_LWM] = pa.array([None] * n_res + late.marks, pa.int64())
        arrays[_LREASON] = pa.array([None] * n_res + late.reasons, pa.string())
        for f in schema:
            if f.name.startswith(_COUNTER):
                arrays[f.name] = pa.nulls(n, pa.int64())
        return pa.RecordBatch.from_arrays(
            [arrays[f.name].cast(f.type) for f in schema], schema=schema
        )

    def metrics_batch(self, gauges: Mapping[str, int] | None = None) -> pa.RecordBatch:
        """One metrics row: the counters so far, and ``gauges`` (:data:`GAUGE_NAMES`; the
        others null)."""
        values = {**self.totals, **(gauges or {})}
        arrays = []
        for f in self.layout.arrow_schema:
            if f.name == _KIND:
                arrays.append(pa.array([_METRICS], pa.int8()))
            elif f.name.startswith(_COUNTER):
                arrays.append(pa.array([values.get(f.name[len(_COUNTER) :])], pa.int64()))
            else:
                arrays.append(pa.nulls(1, f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.layout.arrow_schema)


class _LateRows:
    """A batch's late rows: their row, the output they go to, watermark and reason."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.kinds: list[int] = []
        self.marks: list[int | None] = []
        self.reasons: list[str] = []

    def add(self, row: int, side: str, mark: int | None, reason: str) -> None:
        self.rows.append(row)
        self.kinds.append(_LATE_KIND[side])
        self.marks.append(mark)
        self.reasons.append(reason)
