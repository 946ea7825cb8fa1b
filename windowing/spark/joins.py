"""Joins of two streams on Spark.

Window joins and coGroups run as Flink runs them (``CoGroupedStreams``): :func:`tagged_union`
makes one stream of both inputs, each row tagged with its side and carrying the side's row
as a struct (Flink's ``TaggedUnion``), keyed by the join key; the builder windows it like any
stream and a :class:`~windowing.functions.joins.CoGroupWindowFunction` splits each window's
rows by side. The union's watermark is the smallest of the two inputs' watermarks
(:class:`~windowing.job.InputWatermarks`): in a batch replay with an arrival order, computed
per input; in streaming, each input carries its own ``withWatermark`` and Spark takes the
minimum (``spark.sql.streaming.multipleWatermarkPolicy=min``, its default). An input that is
an earlier window's results in the same query defines none: it has that window's (a later
stage's rule, :mod:`~windowing.spark.streaming.stages`), and the join's processor takes its
rows of a micro-batch before the watermark moves (``ProcessorConfig.later_sides``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import DataType, LongType, StructType

from windowing.functions.joins import LEFT, RIGHT, SIDE
from windowing.job import InputWatermarks, StreamSource
from windowing.spark.columns.inputs import time_millis
from windowing.spark.columns.output import col
from windowing.spark.columns.schema import INTERNAL_PREFIX, column_time_kind
from windowing.spark.columns.units import StreamingUnitCheck
from windowing.spark.streaming.query import watermark_source
from windowing.spark.streaming.stages import ALLOW_MULTIPLE, check_stage_input, plan_facts
from windowing.time import TimeUnit

__all__ = [
    "UNION_ARRIVAL_ORDER",
    "UNION_EVENT_TIME",
    "UNION_PROCESSING_TIME",
    "TaggedUnion",
    "tagged_union",
]

#: The tagged union's time columns (the inputs' own, converted to one type).
UNION_EVENT_TIME = "event_time"
UNION_ARRIVAL_ORDER = "arrival_order"
UNION_PROCESSING_TIME = "processing_time"

_WM = "__pw_wm"  # a copy of an input's event time its own watermark is defined on (streaming)
_MULTIPLE_WATERMARKS = "spark.sql.streaming.multipleWatermarkPolicy"


@dataclass(frozen=True, eq=False)
class TaggedUnion:
    """Both inputs of a join as one stream: ``source`` reads the union DataFrame, whose
    columns are the key column(s) ``keys`` (named as the left input's), ``side``
    (``"left"`` / ``"right"``), ``left`` and ``right`` (the row of its side as a struct; null
    on the other side's rows), ``event_time`` and, when the inputs have them,
    ``arrival_order`` and ``processing_time`` (the inputs' own values, in the unit both
    inputs have, which ``source`` declares)."""

    source: StreamSource
    keys: tuple[str, ...]
    left_type: StructType
    right_type: StructType


def _key_columns(df: DataFrame, columns: Sequence[Any], parameter: str) -> list[tuple[str, Column]]:
    """The key columns ``columns`` (names or ``Column`` expressions) of ``df`` as (name,
    column); ``ValueError`` naming ``parameter`` for an unknown name or another type."""
    if not columns:
        msg = f"{parameter}: give at least one key column"
        raise ValueError(msg)
    keys: list[tuple[str, Column]] = []
    for c in columns:
        if isinstance(c, str):
            if c not in df.columns:
                msg = f"{parameter}: unknown column {c!r}; the DataFrame has columns {df.columns}"
                raise ValueError(msg)
            keys.append((c, col(c)))
            continue
        if not isinstance(c, Column):
            msg = (
                f"{parameter}: keys must be column names (str) or Columns, got "
                f"{type(c).__name__} {c!r}"
            )
            raise ValueError(msg)
        try:
            name = df.select(c).columns[0]
        except Exception as exc:
            msg = f"{parameter}: cannot evaluate {c} on the DataFrame: {exc}"
            raise ValueError(msg) from exc
        keys.append((name, c))
    names = [n for n, _ in keys]
    if len(set(names)) != len(names):
        msg = f"{parameter}: a column is given twice in {tuple(names)!r}"
        raise ValueError(msg)
    return keys


def _same_kind(
    left: StreamSource,
    right: StreamSource,
    names: tuple[str | None, str | None],
    parameter: str,
    units: tuple[TimeUnit, TimeUnit] | None = None,
) -> str | None:
    """The kind (``timestamp`` / ``integral``) of the time column ``parameter`` of both
    inputs, ``None`` when neither has one; ``ValueError`` when one has it and the other not,
    when their kinds differ, or when integral columns differ in their ``units`` (the
    joined stream's column holds both inputs' values, read in one unit)."""
    a, b = names
    if a is None and b is None:
        return None
    if a is None or b is None:
        which = "left" if a is None else "right"
        msg = (
            f"join: the {which} input has no {parameter} column and the other has one; give "
            f"both inputs a {parameter} (from_dataframe(..., {parameter}=...)) or neither"
        )
        raise ValueError(msg)
    kinds = column_time_kind(left.df, a, parameter), column_time_kind(right.df, b, parameter)
    if kinds[0] != kinds[1]:
        msg = (
            f"join: the {parameter} columns differ in type: {a!r} of the left input is "
            f"{left.df.schema[a].dataType.simpleString()}, {b!r} of the right input is "
            f"{right.df.schema[b].dataType.simpleString()}; convert one "
            "(F.timestamp_millis(...) or F.unix_millis(...)) so that both are timestamps or "
            "both integral epoch times"
        )
        raise ValueError(msg)
    if kinds[0] == "integral" and units is not None and units[0] is not units[1]:
        msg = (
            f"join: the {parameter} columns differ in unit: {a!r} of the left input is epoch "
            f"{units[0].words}, {b!r} of the right input epoch {units[1].words}; the joined "
            f"stream reads both in one unit and gives its result times in it: declare the "
            f"unit of each column ({parameter}_unit=... in from_dataframe) and convert one "
            f"column to the other's unit (e.g. F.col({b!r}) * 1000 for seconds as "
            "milliseconds)"
        )
        raise ValueError(msg)
    return kinds[0]


def _time(df: DataFrame, name: str, kind: str, alias: str) -> Column:
    """The time column ``name`` as the union's column ``alias`` (timestamps as they are,
    integral ones as ``bigint``)."""
    c = col(name)
    return (c if kind == "timestamp" else c.cast(LongType())).alias(alias)


def _with_own_watermark(source: StreamSource, name: str) -> DataFrame:
    """A streaming input with its own watermark, defined on a copy of its event time (read
    in its unit) that is projected away, as the streaming query does for one input; and,
    without a declared unit, its own unit check, which names the ``name`` input."""
    df = source.df
    if not df.isStreaming:
        return df
    if source.event_time_unit is None:
        df, _ = StreamingUnitCheck.observe(df, source.event_time, f"the {name} input")
    ts = time_millis(df, source.event_time, "event_time", source.event_unit)
    delay = source.watermark.delay
    return (
        df.withColumn(_WM, watermark_source(ts))
        .withWatermark(_WM, f"{delay} milliseconds")
        .drop(_WM)
    )


def tagged_union(
    left: StreamSource,
    right: StreamSource,
    left_keys: Sequence[Any],
    right_keys: Sequence[Any],
    *,
    calls: tuple[str, str] = ("where", "equal_to"),
    window_join: bool = True,
) -> TaggedUnion:
    """Both inputs as one stream of tagged rows keyed by the join key (see
    :class:`TaggedUnion`). Checked before any Spark job: both inputs batch or both streaming
    (an input holding an earlier window's results of the same streaming query, for a window
    join only, ``window_join``: no watermark of its own, :func:`~windowing.spark.streaming.
    stages.check_stage_input`; it is named in the watermark's ``following``), as many keys
    on each side
    with equal types, time columns of the same kind (and unit, when integral) on both sides,
    no union column named like a key.
    """
    if left.df.isStreaming != right.df.isStreaming:
        which = "left" if left.df.isStreaming else "right"
        msg = (
            f"join: the {which} input is a streaming DataFrame and the other is not; join two "
            "static DataFrames (a batch job) or two streaming ones (one streaming query)"
        )
        raise ValueError(msg)
    following: list[str] = []  # the sides holding an earlier window's results
    if left.df.isStreaming:
        for which, source in ((LEFT, left), (RIGHT, right)):
            facts = plan_facts(source.df)
            if not facts.after_a_stage:
                continue
            if not window_join:
                msg = (
                    f"{calls[1]}: the {which} input holds an earlier window's results in this "
                    "streaming query, which an interval join does not take (a window join or "
                    "coGroup does). Write the earlier window's results to a sink "
                    "(write_results_and_late, a table) and join a stream read from it in "
                    "another query, or join in a batch job"
                )
                raise ValueError(msg)
            allow_multiple = source.df.sparkSession.conf.get(ALLOW_MULTIPLE, "true")
            check_stage_input(source, facts, allow_multiple, f"join: the {which} input")
            following.append(which)
        policy = left.df.sparkSession.conf.get(_MULTIPLE_WATERMARKS) or "min"
        if policy.lower() != "min":
            msg = (
                f"join: {_MULTIPLE_WATERMARKS} is {policy!r}; a join's watermark is the "
                "smaller of its inputs' (Flink's rule), which Spark follows with 'min'"
            )
            raise ValueError(msg)
    first, second = calls  # the calls that gave each side's keys (for messages)
    lk = _key_columns(left.df, left_keys, first)
    rk = _key_columns(right.df, right_keys, second)
    if len(lk) != len(rk):
        msg = (
            f"{second}: {len(rk)} key column(s) {tuple(n for n, _ in rk)!r} for the "
            f"{len(lk)} of {first} {tuple(n for n, _ in lk)!r}; give as many on each side"
        )
        raise ValueError(msg)
    for (ln, lc), (rn, rc) in zip(lk, rk, strict=True):
        lt: DataType = left.df.select(lc).schema.fields[0].dataType
        rt: DataType = right.df.select(rc).schema.fields[0].dataType
        if lt != rt:
            msg = (
                f"{second}: the key {rn!r} ({rt.simpleString()}) of the right input has "
                f"another type than the key {ln!r} ({lt.simpleString()}) of the left input; "
                f"cast one, e.g. key the right input by "
                f"F.col({rn!r}).cast({lt.simpleString()!r}).alias({rn!r})"
            )
            raise ValueError(msg)
    keys = tuple(n for n, _ in lk)
    ts_units = (left.event_unit, right.event_unit)
    ts_kind = _same_kind(left, right, (left.event_time, right.event_time), "event_time", ts_units)
    assert ts_kind is not None  # every input has an event time
    for which, source in (("left", left), ("right", right)):
        if len(source.arrival_columns) > 1:
            msg = (
                f"{first}: the {which} input's arrival_order={list(source.arrival_columns)!r} "
                "has several columns, which a joined stream does not take yet: give each input "
                "one arrival-order column (e.g. a number computed from those columns)"
            )
            raise ValueError(msg)
    arr_kind = _same_kind(left, right, (left.arrival_order, right.arrival_order), "arrival_order")
    pt_kind = _same_kind(
        left,
        right,
        (left.processing_time, right.processing_time),
        "processing_time",
        (left.processing_time_unit, right.processing_time_unit),
    )
    union_columns = [SIDE, LEFT, RIGHT, UNION_EVENT_TIME]
    union_columns += [UNION_ARRIVAL_ORDER] if arr_kind else []
    union_columns += [UNION_PROCESSING_TIME] if pt_kind else []
    for name in keys:
        if name in union_columns or name.startswith(INTERNAL_PREFIX):
            msg = (
                f"{first}: the key {name!r} is named as a column of the joined stream "
                f"{union_columns}; rename it, e.g. {first}(F.col({name!r}).alias('{name}_key'))"
            )
            raise ValueError(msg)
    left_type = left.df.schema
    right_type = right.df.schema

    def side(source: StreamSource, name: str, key_cols: list[tuple[str, Column]]) -> DataFrame:
        df = source.df if name in following else _with_own_watermark(source, name)
        own = F.struct(*[col(c) for c in source.df.columns])
        rows = {
            LEFT: own if name == LEFT else F.lit(None).cast(left_type),
            RIGHT: own if name == RIGHT else F.lit(None).cast(right_type),
        }
        columns = [c.alias(k) for k, (_, c) in zip(keys, key_cols, strict=True)]
        columns += [F.lit(name).alias(SIDE), rows[LEFT].alias(LEFT), rows[RIGHT].alias(RIGHT)]
        columns.append(_time(df, source.event_time, ts_kind, UNION_EVENT_TIME))
        if arr_kind is not None and source.arrival_order is not None:
            columns.append(_time(df, source.arrival_order, arr_kind, UNION_ARRIVAL_ORDER))
        if pt_kind is not None and source.processing_time is not None:
            columns.append(_time(df, source.processing_time, pt_kind, UNION_PROCESSING_TIME))
        return df.select(*columns)

    union = side(left, LEFT, lk).unionByName(side(right, RIGHT, rk))
    watermark = InputWatermarks(
        SIDE,
        ((LEFT, left.watermark), (RIGHT, right.watermark)),  # type: ignore[arg-type]
        tuple(following),
    )
    # the inputs' units (equal, see _same_kind), declared: each input was checked on its own
    source = StreamSource(
        union,
        UNION_EVENT_TIME,
        watermark,
        UNION_ARRIVAL_ORDER if arr_kind else None,
        UNION_PROCESSING_TIME if pt_kind else None,
        event_time_unit=left.event_unit,
        processing_time_unit=left.processing_time_unit,
    )
    return TaggedUnion(source, keys, left_type, right_type)
