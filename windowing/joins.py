"""Joins of two streams: Flink's window join and window coGroup (``JoinedStreams``,
``CoGroupedStreams``) and interval join (``KeyedStream.IntervalJoin``).

Known elsewhere as: Flink ``DataStream.join`` / ``coGroup`` and ``KeyedStream.intervalJoin``;
PyFlink has neither; Spark's stream-stream joins (an equality and a time range).

Start from :meth:`DataStream.join <windowing.stream.DataStream.join>`,
:meth:`DataStream.co_group <windowing.stream.DataStream.co_group>` or
:meth:`KeyedStream.interval_join <windowing.stream.KeyedStream.interval_join>`::

    from windowing import OutputTag, TumblingEventTimeWindows, WindowedStream

    orders = WindowedStream.from_dataframe(orders_df, event_time="ts")
    payments = WindowedStream.from_dataframe(payments_df, event_time="paid_at")
    result = (
        orders.join(payments)
        .where("order_id")
        .equal_to("order_id")
        .window(TumblingEventTimeWindows("1 minute"))
        .apply(lambda o, p: (o.amount, p.method), output_schema="amount double, method string")
    )
    result.results.show()  # order_id, window_start, window_end, amount, method, max_timestamp

A window join is windowed as Flink windows it: both inputs become one stream of tagged rows
(``side``, and the row of that side as a struct ``left`` or ``right``), keyed by the join
key and windowed with the assigner, trigger, evictor and allowed lateness given; each firing
calls the function with the window's rows of each side. Everything a windowed stream does
holds: results per firing, late firings within the allowed lateness, late rows (of either
side, ``side`` naming it) in the late side output, batch and streaming. The watermark is the
smaller of the two inputs' watermarks (Flink's rule for operators with two inputs).

This module does not import pyspark; the terminal calls hand the join to the Spark runtime
(:mod:`windowing.spark.joins`, :mod:`windowing.spark.interval_join`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from windowing.assigners.base import WindowAssigner
from windowing.evictors.base import Evictor
from windowing.functions.joins import (
    CoGroupWindowFunction,
    as_co_group,
    as_process_join,
    output_annotation,
)
from windowing.functions.spec import Apply
from windowing.records import OutputTag
from windowing.results import WindowingResult
from windowing.time import Duration, to_millis
from windowing.triggers.base import Trigger

if TYPE_CHECKING:
    from pyspark.sql import Column  # noqa: TID251 - type-only, never imported at runtime

    from windowing.spark.interval_join import IntervalJoinResult, StreamingIntervalJoinResult
    from windowing.spark.joins import TaggedUnion
    from windowing.stream import DataStream, KeyedStream, WindowedStream

__all__ = [
    "CoGroupedStreams",
    "IntervalJoin",
    "IntervalJoined",
    "JoinEqualTo",
    "JoinWhere",
    "JoinWithWindow",
    "JoinedStreams",
]

_JOIN, _CO_GROUP = "join", "co_group"


def _output_schema(function: Any, output_schema: Any, *, many: bool, call: str) -> Any:
    """``output_schema``, or the schema the return annotation of ``function`` gives;
    ``ValueError`` naming ``call`` when neither says it."""
    if output_schema is not None:
        return output_schema
    from windowing.spark.columns.schema import schema_from_annotation

    method, returns_many = output_annotation(function, many=many)
    inferred = schema_from_annotation(method, many=returns_many)
    if inferred is None:
        msg = (
            f"{call}: output_schema is required: the function's return annotation is missing "
            "or not a simple type; pass e.g. output_schema='amount double, method string' (a "
            "DDL string or a StructType)"
        )
        raise ValueError(msg)
    return inferred


@dataclass(frozen=True, eq=False)
class JoinedStreams:
    """Two streams to join by key in windows (Flink ``JoinedStreams``): ``first.join(second)``.

    Give the key of each side with :meth:`where` (the first) and
    :meth:`JoinWhere.equal_to` (the second), then the windows.

    Examples
    --------
    ::

        orders.join(payments).where("order_id").equal_to("order_id")
              .window(TumblingEventTimeWindows("1 minute"))
              .apply(lambda order, payment: (order.amount, payment.method),
                     output_schema="amount double, method string")
    """

    first: DataStream
    second: DataStream

    def where(self, *keys: str | Column) -> JoinWhere:
        """The key columns of the first (left) input: names, or ``Column`` expressions (as
        ``key_by`` takes them). The results' key columns have these names."""
        return JoinWhere(self.first, self.second, keys, _JOIN)


@dataclass(frozen=True, eq=False)
class CoGroupedStreams:
    """Two streams to group by key in windows (Flink ``CoGroupedStreams``):
    ``first.co_group(second)``. Like :class:`JoinedStreams`, but the function gets all rows
    of a window of each side at once, also when a side has none there.

    Examples
    --------
    ::

        orders.co_group(payments).where("order_id").equal_to("order_id")
              .window(EventTimeSessionWindows("10 minutes"))
              .apply(lambda orders, payments: [(len(orders), len(payments))],
                     output_schema="orders bigint, payments bigint")
    """

    first: DataStream
    second: DataStream

    def where(self, *keys: str | Column) -> JoinWhere:
        """The key columns of the first (left) input (see :meth:`JoinedStreams.where`)."""
        return JoinWhere(self.first, self.second, keys, _CO_GROUP)


@dataclass(frozen=True, eq=False)
class JoinWhere:
    """A join or coGroup with the first input's key (Flink ``JoinedStreams.Where``); give the
    second's with :meth:`equal_to`."""

    first: DataStream
    second: DataStream
    first_keys: tuple[Any, ...]
    kind: str

    def equal_to(self, *keys: str | Column) -> JoinEqualTo:
        """The key columns of the second (right) input, as many as :meth:`JoinedStreams.where`
        gave and of the same types. Rows join when all key values are equal; a null key
        value is a key like any other (``key_by``'s rule), so rows whose keys are null join
        each other: filter them out first for SQL's rule.

        Raises
        ------
        ValueError
            Unknown columns, another number of keys or other types, inputs whose time
            columns differ in kind, a batch and a streaming input (no Spark job runs).
        """
        from windowing.spark.joins import tagged_union

        union = tagged_union(self.first.source, self.second.source, self.first_keys, keys)
        return JoinEqualTo(self.first, union, self.kind)


@dataclass(frozen=True, eq=False)
class JoinEqualTo:
    """A join or coGroup with both keys (Flink ``JoinedStreams.Where.EqualTo``); give its
    windows with :meth:`window`."""

    first: DataStream
    union: TaggedUnion
    kind: str

    def window(self, assigner: WindowAssigner[Any, Any]) -> JoinWithWindow:
        """Window both inputs together, by key, with ``assigner`` (any assigner: tumbling,
        sliding, sessions, which merge over the rows of both sides, global windows, ...)."""
        # The tagged union is windowed by the builder of the inputs (Flink keys and windows
        # its TaggedUnion stream as any stream).
        stream = dataclasses.replace(self.first, source=self.union.source)
        windowed = stream.key_by(*self.union.keys).window(assigner)
        return JoinWithWindow(windowed, self.kind)


@dataclass(frozen=True, eq=False)
class JoinWithWindow:
    """A windowed join or coGroup (Flink ``JoinedStreams.WithWindow``): configure it as a
    :class:`~windowing.stream.WindowedStream`, finish it with :meth:`apply`.

    A trigger, evictor or dynamic session gap sees the tagged rows: fields ``side``
    (``"left"`` / ``"right"``), ``left`` and ``right`` (the row of its side, the other
    null), ``event_time`` and the join key columns.

    Attributes
    ----------
    windowed
        The windowed stream of the tagged rows of both inputs.
    kind
        ``"join"`` or ``"co_group"``.
    """

    windowed: WindowedStream
    kind: str

    def _with(self, windowed: WindowedStream) -> JoinWithWindow:
        return dataclasses.replace(self, windowed=windowed)

    def trigger(self, trigger: Trigger[Any, Any]) -> JoinWithWindow:
        """Replace the assigner's default window trigger (Flink ``WithWindow.trigger``)."""
        return self._with(self.windowed.trigger(trigger))

    def evictor(self, evictor: Evictor[Any, Any]) -> JoinWithWindow:
        """Evict rows of either side before and/or after the function (Flink
        ``WithWindow.evictor``)."""
        return self._with(self.windowed.evictor(evictor))

    def allowed_lateness(self, lateness: Duration) -> JoinWithWindow:
        """Keep windows ``lateness`` after their end: a late row of either side within it
        fires its window again (with all its rows so far), later rows are late."""
        return self._with(self.windowed.allowed_lateness(lateness))

    def side_output_late_data(self, tag: OutputTag) -> JoinWithWindow:
        """Send the late rows of both sides to the side output ``tag``
        (``result.get_side_output(tag)``): the key column(s), ``side`` (``"left"`` /
        ``"right"``), ``left`` and ``right`` (the late row as a struct of its side's columns,
        the other null), ``event_time`` (and ``arrival_order``, ``processing_time`` when the
        inputs have them), ``late_watermark`` and ``late_reason``. One side's rows as they
        were: ``late.where("side = 'left'").select("left.*")``."""
        return self._with(self.windowed.side_output_late_data(tag))

    def max_parallelism(self, key_groups: int) -> JoinWithWindow:
        """The key groups of a streaming query (see
        :meth:`~windowing.stream.WindowedStream.max_parallelism`)."""
        return self._with(self.windowed.max_parallelism(key_groups))

    def apply(self, function: Any, *, output_schema: Any = None) -> WindowingResult:
        """Evaluate each firing of each window with ``function``.

        For a join: a :class:`~windowing.functions.joins.JoinFunction` or a callable
        ``(left, right) -> row``, called once per pair of the window's left and right rows
        (left rows in the outer loop), or a
        :class:`~windowing.functions.joins.FlatJoinFunction`, whose ``join`` returns any
        number of rows per pair. A window without rows on one side gives nothing (an inner
        join). For a coGroup: a :class:`~windowing.functions.joins.CoGroupFunction` or a
        callable ``(left_rows, right_rows) -> iterable of rows``, called once per firing
        with both lists (one may be empty), in the order the window received them.

        Rows are ``pyspark.sql.Row`` objects of each input's columns. ``output_schema`` (a
        DDL string or ``StructType``) describes one output; it may be left out when the
        function's return annotation says it (as for ``WindowedStream.process``). The results
        have the key column(s), ``window_start``, ``window_end``, the output's columns and
        ``max_timestamp`` (the window's max timestamp, Flink's timestamp of the outputs).
        """
        call = "join(...).apply" if self.kind == _JOIN else "co_group(...).apply"
        co_group = as_co_group(function, self.kind)
        schema = _output_schema(function, output_schema, many=self.kind == _CO_GROUP, call=call)
        return self.windowed.apply(CoGroupWindowFunction(co_group), output_schema=schema)

    def select(self, *columns: str | Column) -> WindowingResult:
        """Each pair of a window's left and right rows as ``columns``: names or ``Column``
        expressions over ``left`` and ``right`` (each side's row as a struct) and the key
        columns, e.g. ``select("left.name", (F.col("right.price") * 2).alias("double"))``.

        The outcome is :meth:`apply`'s with a join function returning those columns, per
        firing, with every option of the window (trigger, evictor, lateness, late rows). A
        batch join of tumbling event-time windows in event-time order with the default
        trigger and no evictor runs as Spark's own join of the two sides on the key and the
        window, without Python (``result.explain()`` says which;
        :mod:`windowing.spark.native.window_join`)::

            bids.join(highest).where("price").equal_to("price")
                .window(TumblingEventTimeWindows("10 seconds"))
                .select("left.auction", "left.bidder", "left.date_time")

        Results: the key column(s), ``window_start``, ``window_end``, ``columns``,
        ``max_timestamp``.

        Raises
        ------
        ValueError
            For a coGroup (its function sees lists, not pairs), no column, a column that
            does not resolve over a pair, or one named like another column of the results
            (a key, window or pane column; no Spark job runs).
        """
        if self.kind != _JOIN:
            msg = (
                "co_group(...).select: a coGroup has no pairs; use join(...).select(...), or "
                "co_group(...).apply(function)"
            )
            raise ValueError(msg)
        from windowing.spark.native.window_join import JoinSelect
        from windowing.spark.run import Terminal, run_terminal

        job = self.windowed.job()
        spec = Apply(CoGroupWindowFunction(as_co_group(_pair, _JOIN)))
        pairs = JoinSelect.pair_schema(job.source.df)
        terminal = Terminal(job, spec, pairs, join_select=JoinSelect.of(job, columns))
        return run_terminal(terminal)  # type: ignore[no-any-return]

    def explain(self) -> None:
        """Print how the join runs with a join function (:meth:`apply`'s plan); the result
        of :meth:`select` explains its own, which may be the native join."""
        self.windowed.explain(CoGroupWindowFunction(as_co_group(_pair, _JOIN)))


def _pair(left: Any, right: Any) -> Any:
    """The join function :meth:`JoinWithWindow.explain` plans with."""
    return (left, right)


# ---------------------------------------------------------------------------- interval join
@dataclass(frozen=True, eq=False)
class IntervalJoin:
    """Two keyed streams to join over a time interval (Flink ``KeyedStream.IntervalJoin``):
    ``left.interval_join(right)``; give the interval with :meth:`between`."""

    left: KeyedStream
    right: KeyedStream

    def between(self, lower_bound: Duration, upper_bound: Duration) -> IntervalJoined:
        """Join each left row at ``t`` with the right rows of its key at ``t + lower_bound``
        to ``t + upper_bound`` (both inclusive by default; negative bounds reach before
        ``t``). ``lower_bound <= upper_bound``."""
        lower = to_millis(lower_bound, "between: lower_bound")
        upper = to_millis(upper_bound, "between: upper_bound")
        if lower > upper:
            msg = (
                f"between: lower_bound must be <= upper_bound, got {lower_bound!r} ({lower} ms) "
                f"and {upper_bound!r} ({upper} ms)"
            )
            raise ValueError(msg)
        return IntervalJoined(self.left, self.right, lower, upper)


@dataclass(frozen=True, eq=False)
class IntervalJoined:
    """An interval join with its bounds (Flink ``KeyedStream.IntervalJoined``): make a bound
    exclusive, ask for the late rows of each side, finish with :meth:`process`.

    Attributes
    ----------
    lower, upper
        The bounds in milliseconds.
    lower_inclusive, upper_inclusive
        Whether a right row exactly at the bound joins.
    left_late_tag, right_late_tag
        The late outputs of each side, if any.
    """

    left: KeyedStream
    right: KeyedStream
    lower: int
    upper: int
    lower_inclusive: bool = True
    upper_inclusive: bool = True
    left_late_tag: OutputTag | None = None
    right_late_tag: OutputTag | None = None

    def lower_bound_exclusive(self) -> IntervalJoined:
        """A right row exactly at ``t + lower_bound`` does not join."""
        return dataclasses.replace(self, lower_inclusive=False)

    def upper_bound_exclusive(self) -> IntervalJoined:
        """A right row exactly at ``t + upper_bound`` does not join."""
        return dataclasses.replace(self, upper_inclusive=False)

    def _tag(self, tag: Any, method: str) -> OutputTag:
        if not isinstance(tag, OutputTag):
            msg = f"{method}: tag must be an OutputTag, got {type(tag).__name__} {tag!r}"
            raise ValueError(msg)
        return tag

    def side_output_left_late_data(self, tag: OutputTag) -> IntervalJoined:
        """Send the late left rows (event time below the watermark when they arrived, or
        without event time or arrival order) to the side output ``tag``: the left input's
        columns, ``late_watermark`` and ``late_reason``."""
        tag = self._tag(tag, "side_output_left_late_data")
        if tag == self.right_late_tag:
            msg = f"side_output_left_late_data: {tag!r} is the right side's late output tag"
            raise ValueError(msg)
        return dataclasses.replace(self, left_late_tag=tag)

    def side_output_right_late_data(self, tag: OutputTag) -> IntervalJoined:
        """Send the late right rows to the side output ``tag`` (as
        :meth:`side_output_left_late_data`, with the right input's columns)."""
        tag = self._tag(tag, "side_output_right_late_data")
        if tag == self.left_late_tag:
            msg = f"side_output_right_late_data: {tag!r} is the left side's late output tag"
            raise ValueError(msg)
        return dataclasses.replace(self, right_late_tag=tag)

    def process(
        self, function: Any, *, output_schema: Any = None
    ) -> IntervalJoinResult | StreamingIntervalJoinResult:
        """Call ``function`` once per joined pair: a
        :class:`~windowing.functions.joins.ProcessJoinFunction` (``process_element(left,
        right, context)`` returns or yields any number of rows; ``context`` gives the
        left, right and result event times), or a callable ``(left, right) -> row``.

        ``output_schema`` (DDL or ``StructType``) describes one output; it may be left out
        when the return annotation says it. The results have the key column(s), the output's
        columns and ``max_timestamp``, the outputs' event time: the larger of the two rows'
        (Flink's). Static inputs give an
        :class:`~windowing.spark.interval_join.IntervalJoinResult`; streaming ones a
        :class:`~windowing.spark.interval_join.StreamingIntervalJoinResult`, one query
        whose state survives a restart from its checkpoint (write it with
        :func:`~windowing.spark.streaming.write_results_and_late`).

        Raises
        ------
        ValueError
            As :meth:`JoinWhere.equal_to`, and for a missing output schema (no Spark job
            runs).
        """
        from windowing.spark.interval_join import IntervalBounds, run_interval_join
        from windowing.spark.joins import tagged_union

        joined = as_process_join(function)
        schema = _output_schema(function, output_schema, many=False, call="interval_join")
        union = tagged_union(
            self.left.source,
            self.right.source,
            self.left.keys,
            self.right.keys,
            calls=("key_by", "interval_join"),
            window_join=False,
        )
        bounds = IntervalBounds(
            self.lower,
            self.upper,
            self.lower_inclusive,
            self.upper_inclusive,
            self.left_late_tag,
            self.right_late_tag,
        )
        return run_interval_join(union, joined, schema, bounds)
