"""The ``WindowedStream`` builder: Flink's DataStream windowing API over a Spark DataFrame.

Known elsewhere as: Flink ``DataStream.keyBy(...).window(...)`` / ``windowAll(...)``; PyFlink
``key_by`` / ``window`` / ``window_all``.

Every builder object is an immutable (frozen) dataclass, and every call returns a new one
(``dataclasses.replace``), so a half-configured stream can be shared and reused::

    from windowing.assigners import TumblingEventTimeWindows
    from windowing import OutputTag
    from windowing.stream import BoundedOutOfOrderness, WindowedStream

    late = OutputTag("late")
    result = (
        WindowedStream.from_dataframe(
            events,                                   # a pyspark.sql.DataFrame
            event_time="ts",                          # timestamp, or bigint epoch ms
            # event_time_unit="s",                    # for a bigint of epoch seconds
            watermark=BoundedOutOfOrderness("5 seconds"),
            arrival_order="ingested_at",              # optional: replay as a stream would
        )
        .key_by("user")
        .window(TumblingEventTimeWindows("1 minute"))
        .allowed_lateness("30 seconds")
        .side_output_late_data(late)
        .reduce(lambda a, b: a if a.amount >= b.amount else b)
    )
    result.results.show()                  # user, window_start, window_end, ..., max_timestamp
    result.get_side_output(late).show()    # the late input rows + late_watermark, late_reason

This module does not import pyspark; the terminal calls hand the stream to the Spark runtime
(:mod:`windowing.spark.batch.replay_plan`). See ``docs/spark.md`` for how the builder maps to Spark.

Examples
--------
>>> BoundedOutOfOrderness("5 seconds").current_watermark(60_000)
54999
>>> MonotonousTimestamps().current_watermark(60_000)
59999
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from windowing.assigners import is_processing_time_assigner
from windowing.assigners.base import WindowAssigner
from windowing.count_windows import count_window
from windowing.errors import ErrorPolicy
from windowing.evictors.base import Evictor
from windowing.functions.aggregations import AggregationType, FieldAggregation
from windowing.functions.spec import (
    Aggregate,
    Apply,
    Fold,
    Process,
    Reduce,
    WindowFunctionSpec,
    as_spec,
)
from windowing.job import (
    MAX_KEY_GROUPS,
    BoundedOutOfOrderness,
    Job,
    MonotonousTimestamps,
    StreamSource,
    WatermarkStrategy,
    WindowConfig,
)
from windowing.joins import CoGroupedStreams, IntervalJoin, JoinedStreams
from windowing.records import OutputTag
from windowing.results import WindowingResult
from windowing.time import Duration, TimeUnit, to_millis
from windowing.triggers.base import Trigger

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame  # noqa: TID251 - type-only, never imported at runtime

    from windowing.spark.planning import SparkPlan

__all__ = [
    "BoundedOutOfOrderness",
    "DataStream",
    "KeyedStream",
    "MonotonousTimestamps",
    "StreamSource",
    "WatermarkStrategy",
    "WindowConfig",
    "WindowedStream",
    "WindowingResult",
    "is_processing_time_assigner",
]


def _check_assigner(source: StreamSource, assigner: Any, method: str) -> None:
    if not isinstance(assigner, WindowAssigner):
        msg = (
            f"{method}: assigner must be a WindowAssigner, "
            f"got {type(assigner).__name__} {assigner!r}"
        )
        raise ValueError(msg)
    if (
        is_processing_time_assigner(assigner)
        and source.processing_time is None
        and not source.df.isStreaming
    ):
        msg = (
            f"{method}: {assigner!r} is a processing-time assigner, but the stream has no "
            "processing-time column; pass processing_time='<column>' to from_dataframe (a "
            "streaming DataFrame without one uses the wall clock)"
        )
        raise ValueError(msg)


@dataclass(frozen=True, eq=False)
class DataStream:
    """A DataFrame read as a stream of rows with event times (Flink ``DataStream``).

    Create it with :meth:`from_dataframe`; then :meth:`key_by` (per-key windows) or
    :meth:`window_all` (one window operator over all rows).
    """

    source: StreamSource

    @staticmethod
    def from_dataframe(
        df: DataFrame,
        *,
        event_time: str,
        watermark: WatermarkStrategy | None = None,
        arrival_order: str | Sequence[str] | None = None,
        processing_time: str | None = None,
        event_time_unit: TimeUnit | str | None = None,
        processing_time_unit: TimeUnit | str | None = None,
    ) -> DataStream:
        """Read ``df`` as a stream.

        Parameters
        ----------
        df
            The input rows: a static DataFrame (batch replay) or a streaming one (Structured
            Streaming; terminal calls then return a ``StreamingWindowedResult``, see
            ``docs/spark.md``).
        event_time
            Column with each row's event time: a ``timestamp``, or an integral epoch time
            (milliseconds unless ``event_time_unit`` says otherwise). Rows where it is null go
            to the late side output with reason ``null_event_time`` (event-time assigners;
            others accept rows without time).
        watermark
            How watermarks follow the event times: :class:`BoundedOutOfOrderness` or
            :class:`MonotonousTimestamps` (the default). Used only together with
            ``arrival_order``: without it the batch is replayed in event-time order with no
            watermark until the end of input, so nothing is late (Flink's batch mode).
        arrival_order
            Optional column giving the order in which rows arrived (integral, or a timestamp),
            or a list of such columns compared in order, lexicographically (e.g. a Kafka
            topic's ``["timestamp", "partition", "offset"]``: offsets alone order only one
            partition): the replay then sees the watermark a streaming run would have seen.
            Rows equal in every arrival-order column arrived together (like one micro-batch)
            and see the same watermark, computed from all rows that arrived strictly earlier,
            over all keys. Null in any of them -> late side output with reason
            ``null_arrival_order``.
        processing_time
            Optional column with the processing time at which each row arrived (timestamp or
            integral epoch time, milliseconds unless ``processing_time_unit`` says otherwise):
            drives the operator's processing-time clock (processing-time assigners require
            it). Without ``arrival_order``, rows are replayed in processing-time order.
        event_time_unit
            The unit of an integral ``event_time`` column: ``"s"``, ``"ms"``, ``"us"`` or
            ``"ns"`` (a :class:`~windowing.time.TimeUnit`). The operator's clock is
            milliseconds, as Flink's: seconds are multiplied by 1,000, microseconds and
            nanoseconds floored to their millisecond (the sub-millisecond part is dropped).
            Result times (``window_start``, ``window_end``, ``max_timestamp``,
            ``late_watermark``) come back in this unit, so they compare with the column.
            Durations (window sizes, lateness, delays) stay durations (``"10 seconds"``,
            or ``int`` milliseconds). Left out, the column is epoch milliseconds, and when its
            first values look like another unit (epoch seconds of 1973-2286 are 1e8-1e10,
            as milliseconds the first months of 1970) an
            :class:`~windowing.errors.EventTimeUnitWarning` names the column; give the unit,
            ``"ms"`` included, to skip that check. Not for a timestamp column.
        processing_time_unit
            The unit of an integral ``processing_time`` column, as ``event_time_unit``
            (default milliseconds, not checked). Its own parameter: a processing time often
            comes from another system than the event time (a Kafka record's milliseconds for
            events stamped in seconds).

        Raises
        ------
        ValueError
            When a column is missing or has an unsupported type, a unit is unknown or
            given for a timestamp column, or ``arrival_order`` is an empty list or
            names a column twice (no Spark job runs).

        Warns
        -----
        EventTimeUnitWarning
            When ``event_time_unit`` is left out and the values of an integral ``event_time``
            look like epoch seconds, microseconds or nanoseconds (see ``docs/spark.md``,
            "Time", for which inputs are checked and how).

        Examples
        --------
        Replaying a Kafka topic read in batch, in the order its partitions were written::

            kafka = spark.read.format("kafka").option("subscribe", "clicks").load()
            stream = DataStream.from_dataframe(
                kafka.select("timestamp", "partition", "offset", ...),
                event_time="timestamp",
                watermark=BoundedOutOfOrderness("5 seconds"),
                arrival_order=["timestamp", "partition", "offset"],
            )
        """
        from windowing.spark.columns.schema import arrival_order_columns, validate_source

        if watermark is None:
            watermark = MonotonousTimestamps()
        if not isinstance(watermark, BoundedOutOfOrderness | MonotonousTimestamps):
            msg = (
                "watermark must be BoundedOutOfOrderness(delay) or MonotonousTimestamps(), got "
                f"{type(watermark).__name__} {watermark!r}"
            )
            raise ValueError(msg)
        event_unit, processing_unit = validate_source(
            df,
            event_time=event_time,
            arrival_order=arrival_order,
            processing_time=processing_time,
            event_time_unit=event_time_unit,
            processing_time_unit=processing_time_unit,
        )
        arrival = arrival_order_columns(df, arrival_order)
        source = StreamSource(
            df, event_time, watermark, arrival, processing_time, event_unit, processing_unit
        )
        if event_unit is None and not df.isStreaming:
            from windowing.spark.columns.units import check_event_time_unit

            check_event_time_unit(df, event_time, stacklevel=3)  # warns at the caller
        return DataStream(source)

    def key_by(self, *columns: str | Column) -> KeyedStream:
        """Partition the stream by the values of ``columns`` (Flink ``keyBy``): column names,
        or ``Column`` expressions as in ``groupBy`` (``F.lower("country")``,
        ``F.col("device.id").alias("device")``), which become columns of the input named as
        Spark names them (in results, late rows and dead letters too).

        Each key has its own windows, triggers and state. User functions receive the key as
        the column's value (one column) or a tuple of values (several).
        """
        if not columns:
            msg = "key_by: give at least one column name"
            raise ValueError(msg)
        from windowing.spark.columns.inputs import key_columns

        df, keys = key_columns(self.source.df, columns)
        source = self.source if df is self.source.df else dataclasses.replace(self.source, df=df)
        return KeyedStream(source, keys)

    def window_all(self, assigner: WindowAssigner[Any, Any]) -> WindowedStream:
        """Window the whole, non-keyed stream (Flink ``windowAll``).

        Notes
        -----
        All rows are processed by one task (parallelism 1, as in Flink), and the key handed to
        functions is ``None``. Prefer :meth:`key_by` when the data has a natural key.
        """
        _check_assigner(self.source, assigner, "window_all")
        return WindowedStream(self.source, None, WindowConfig(assigner))

    def join(self, other: DataStream) -> JoinedStreams:
        """Join with ``other`` in windows (Flink ``DataStream.join``): give each side's key
        with ``.where(...).equal_to(...)``, the windows with ``.window(assigner)``, and the
        function with ``.apply(...)`` (:mod:`windowing.joins`).

        Example::

            orders.join(payments).where("order_id").equal_to("order_id")
                  .window(TumblingEventTimeWindows("1 minute"))
                  .apply(lambda o, p: (o.amount, p.method),
                         output_schema="amount double, method string")
        """
        return JoinedStreams(self, _other_stream(other, "join"))

    def co_group(self, other: DataStream) -> CoGroupedStreams:
        """Group with ``other`` in windows (Flink ``DataStream.coGroup``): as :meth:`join`,
        but the function gets all rows of a window of each side at once
        (:mod:`windowing.joins`)."""
        return CoGroupedStreams(self, _other_stream(other, "co_group"))

    def window(self, assigner: WindowAssigner[Any, Any]) -> WindowedStream:
        """Not available on a non-keyed stream: use ``key_by(...).window(...)`` or
        :meth:`window_all`."""
        msg = (
            "window: the stream is not keyed; call .key_by(<columns>).window(...) for per-key "
            "windows, or .window_all(...) to window all rows together"
        )
        raise TypeError(msg)


@dataclass(frozen=True, eq=False)
class KeyedStream:
    """A stream partitioned by key columns (Flink ``KeyedStream``)."""

    source: StreamSource
    keys: tuple[str, ...]

    def window(self, assigner: WindowAssigner[Any, Any]) -> WindowedStream:
        """Assign each key's rows to windows (Flink ``KeyedStream.window``)."""
        _check_assigner(self.source, assigner, "window")
        return WindowedStream(self.source, self.keys, WindowConfig(assigner))

    def interval_join(self, other: KeyedStream) -> IntervalJoin:
        """Join with the keyed stream ``other`` over a time interval (Flink
        ``KeyedStream.intervalJoin``): each row at ``t`` with the rows of ``other`` of its key
        at ``t + lower`` to ``t + upper``, ``.between(lower, upper)`` (:mod:`windowing.joins`).

        Example::

            orders.key_by("order_id").interval_join(payments.key_by("order_id"))
                  .between("-1 minute", "1 hour")
                  .process(lambda o, p: (o.amount, p.method),
                           output_schema="amount double, method string")
        """
        if not isinstance(other, KeyedStream):
            msg = (
                "interval_join: other must be a KeyedStream (other_stream.key_by(...)), got "
                f"{type(other).__name__} {other!r}"
            )
            raise ValueError(msg)
        return IntervalJoin(self, other)

    def count_window(self, size: int, slide: int | None = None) -> WindowedStream:
        """Windows of ``size`` rows per key, sliding by ``slide`` rows (Flink
        ``KeyedStream.countWindow``): global windows with a count trigger (and a count
        evictor when sliding). Rows count in replay order (arrival order when given)."""
        spec = count_window(size, slide)
        stream = self.window(spec.assigner).trigger(spec.trigger)
        return stream if spec.evictor is None else stream.evictor(spec.evictor)


@dataclass(frozen=True, eq=False)
class WindowedStream:
    """A keyed (or non-keyed) stream with a window assigner, ready for a window function.

    Configure with :meth:`trigger`, :meth:`evictor`, :meth:`allowed_lateness` and
    :meth:`side_output_late_data`; finish with :meth:`reduce`, :meth:`aggregate`,
    :meth:`fold`, :meth:`process` or :meth:`apply`, which return a
    :class:`~windowing.spark.batch.replay_plan.WindowedResult`.

    Known elsewhere as: Flink ``WindowedStream`` / ``AllWindowedStream``.

    Attributes
    ----------
    source
        The input and its time columns.
    keys
        The key columns, or ``None`` for a non-keyed (``window_all``) stream.
    config
        Assigner, trigger, evictor, allowed lateness, late-data tag.
    """

    source: StreamSource
    keys: tuple[str, ...] | None
    config: WindowConfig

    #: ``WindowedStream.from_dataframe(...)`` is :meth:`DataStream.from_dataframe`.
    from_dataframe = staticmethod(DataStream.from_dataframe)

    def _with(self, **changes: Any) -> WindowedStream:
        return dataclasses.replace(self, config=dataclasses.replace(self.config, **changes))

    # -- configuration -------------------------------------------------------------------
    def trigger(self, trigger: Trigger[Any, Any]) -> WindowedStream:
        """Replace the assigner's default *window* trigger (Flink ``WindowedStream.trigger``).

        This is the window trigger, deciding when a window is evaluated and purged
        (``EventTimeTrigger``, ``CountTrigger``, your own ``Trigger`` subclass). It is *not*
        Spark's ``DataStreamWriter.trigger``, which sets the micro-batch cadence of a
        streaming query.
        """
        if not isinstance(trigger, Trigger):
            msg = f"trigger must be a Trigger, got {type(trigger).__name__} {trigger!r}"
            raise ValueError(msg)
        return self._with(trigger=trigger)

    def evictor(self, evictor: Evictor[Any, Any]) -> WindowedStream:
        """Evict elements before and/or after the window function (Flink ``evictor``).

        Notes
        -----
        With an evictor every element of a window is buffered until the window is cleaned
        up, so incremental aggregation cannot be used and performance degrades noticeably.
        """
        if not isinstance(evictor, Evictor):
            msg = f"evictor must be an Evictor, got {type(evictor).__name__} {evictor!r}"
            raise ValueError(msg)
        return self._with(evictor=evictor)

    def allowed_lateness(self, lateness: Duration) -> WindowedStream:
        """Keep windows for ``lateness`` after their end so late elements still update them
        (late firings); elements later than that go to the late side output."""
        ms = to_millis(lateness, "allowed_lateness")
        if ms < 0:
            msg = f"allowed_lateness must be >= 0, got {lateness!r}"
            raise ValueError(msg)
        return self._with(allowed_lateness=ms)

    def slicing(self, enabled: bool | None) -> WindowedStream:
        """Whether hopping and sliding-distinct windows may share partial results between
        windows (see ``WindowOperator``'s ``slicing``).

        By default (``None``) they do only for a function that declares
        ``order_insensitive = True``, so the results are always Flink's (Kafka's for sliding
        windows). Shared partials combine a window's records in time order instead of arrival
        order: ``slicing(True)`` opts in for any reduce or aggregate you know to be
        associative and commutative (one partial per pane or record instead of one per
        window); ``slicing(False)`` opts out even for declared functions.
        """
        if enabled is not None and not isinstance(enabled, bool):
            msg = (
                f"slicing: enabled must be a bool or None, got {type(enabled).__name__} {enabled!r}"
            )
            raise ValueError(msg)
        return self._with(slicing=enabled)

    def max_parallelism(self, key_groups: int) -> WindowedStream:
        """The number of key groups of a streaming query (Flink ``setMaxParallelism``;
        default 128, as in Flink; at most 32768).

        Structured Streaming keeps the operator state per key group: every key hashes into
        one of ``key_groups`` groups, and each micro-batch reads and writes a group's state
        once and keeps one timer for it, however many keys it holds. The number is also the
        largest number of tasks the stateful step runs in, so raise it above
        ``spark.sql.shuffle.partitions`` on a large cluster. As in Flink, it is fixed by the
        first run: restarting from a checkpoint with another value fails. Each call on a key
        group rewrites that group's state, so with very many keys and little data per
        micro-batch, more groups write less. The batch replay also calls Python once per key
        group, replaying its keys one after another, with as many groups as the input's size
        needs, at most ``max(key_groups, spark.sql.shuffle.partitions)``; the results never
        depend on the grouping.

        Example::

            stream.key_by("user").window(TumblingEventTimeWindows("1 minute"))
                  .max_parallelism(1024).sum("amount")
        """
        if isinstance(key_groups, bool) or not isinstance(key_groups, int):
            msg = (
                "max_parallelism: key_groups must be an int, "
                f"got {type(key_groups).__name__} {key_groups!r}"
            )
            raise ValueError(msg)
        if not 1 <= key_groups <= MAX_KEY_GROUPS:
            msg = f"max_parallelism: key_groups must be in [1, {MAX_KEY_GROUPS}], got {key_groups}"
            raise ValueError(msg)
        return self._with(max_parallelism=key_groups)

    def idle_timeout(self, timeout: Duration | None) -> WindowedStream:
        """Close a key's windows when its input goes quiet: once a key has received no rows
        for ``timeout`` of processing time, its watermark moves as if a row at its largest
        event time plus the quiet time had arrived (``max_event_time + elapsed - delay - 1``
        with ``BoundedOutOfOrderness(delay)``), so its pending windows fire, and a row that
        comes later for a window closed that way is late, as after any watermark
        (``windowing.idleness``). ``None`` turns it off (the default: the watermark moves
        only with data, as in Flink and Spark).

        Streaming measures the quiet time on the micro-batch clock: the query runs in
        Spark's ``ProcessingTime`` mode, where a micro-batch runs every trigger interval
        even without input, so give the query a processing-time trigger (e.g.
        ``processing_time="1 second"`` in ``write_results_and_late``). The key's clock is
        kept in the checkpoint, so a restart neither fires a window again nor loses one.
        The batch replay measures it on the ``processing_time`` column, which it then
        requires (the time each row arrived). Event-time windows only.

        Example::

            stream.key_by("sensor").window(TumblingEventTimeWindows("1 minute"))
                  .idle_timeout("30 seconds").sum("reading")
        """
        if timeout is None:
            return self._with(idle_timeout=None)
        ms = to_millis(timeout, "idle_timeout")
        if ms <= 0:
            msg = f"idle_timeout: timeout must be > 0, got {timeout!r}"
            raise ValueError(msg)
        if is_processing_time_assigner(self.config.assigner):
            msg = (
                f"idle_timeout: {type(self.config.assigner).__name__} windows run on "
                "processing time, which never stops; idleness moves event time"
            )
            raise ValueError(msg)
        if not self.source.df.isStreaming and self.source.processing_time is None:
            msg = (
                f"idle_timeout={timeout!r} on a batch DataFrame needs "
                "from_dataframe(..., processing_time=<column>): the replay measures how long "
                "a key was quiet on the time its rows arrived"
            )
            raise ValueError(msg)
        return self._with(idle_timeout=ms)

    def side_output_late_data(self, tag: OutputTag) -> WindowedStream:
        """Send late input rows (and rows without event time or arrival order) to the side
        output ``tag``; read it with ``result.get_side_output(tag)``."""
        if not isinstance(tag, OutputTag):
            msg = f"side_output_late_data: tag must be an OutputTag, got {tag!r}"
            raise ValueError(msg)
        return self._with(late_output_tag=tag)

    def window_struct(self, name: str | None = "window") -> WindowedStream:
        """Give the results' window as Spark's ``groupBy(window(...))`` does: one struct
        column ``name`` with fields ``start`` and ``end``, in place of ``window_start``,
        ``window_end`` and ``max_timestamp`` (which is ``end`` minus 1 ms), so the results
        can replace those of Spark's own windowed aggregation. ``None``: the three columns
        (the default). Side outputs keep their columns.

        Example::

            stream.key_by("user").window(TumblingEventTimeWindows("10 seconds"))
                  .window_struct().agg(F.sum("amount").alias("total"))
            # user, window{start, end}, total: as df.groupBy("user", F.window("ts", "10
            # seconds")).agg(F.sum("amount").alias("total"))
        """
        if name is not None and (not isinstance(name, str) or not name):
            msg = f"window_struct: name must be a non-empty str or None, got {name!r}"
            raise ValueError(msg)
        return self._with(window_struct=name)

    def pane_info(self, enabled: bool = True) -> WindowedStream:
        """Say in each result row which firing of its window it is: two more result columns,
        ``pane_index`` (``bigint``: 0 for a window's first firing, 1 for the next, ...) and
        ``timing`` (``string``: ``EARLY`` before the watermark reached the window's end,
        ``ON_TIME`` for the firing when it did, ``LATE`` for firings after that, e.g. late
        rows within the allowed lateness), as Beam's PaneInfo (:class:`~windowing.PaneInfo`,
        :mod:`windowing.engine.pane_info`). A sink can keep the last row per key and window
        (the largest ``pane_index``: ``windowing.spark.final_values(result.results)``, or
        of a streaming query's results folder) or upsert on it. Batch and streaming give the
        same panes.

        Example::

            stream.key_by("user").window(TumblingEventTimeWindows("10 seconds"))
                  .allowed_lateness("1 minute").pane_info().agg(F.sum("amount").alias("total"))
            # user, window_start, window_end, total, max_timestamp, pane_index, timing
        """
        if not isinstance(enabled, bool):
            msg = f"pane_info: enabled must be a bool, got {type(enabled).__name__} {enabled!r}"
            raise ValueError(msg)
        return self._with(pane_info=enabled)

    def on_error(self, policy: ErrorPolicy | str, *, show_values: bool = False) -> WindowedStream:
        """What an error raised by your code (assigner, trigger, evictor, window function)
        or by writing a result does: ``"fail"`` (the default, as Flink) fails the job with
        the error, noted with the key, window and element's event time; ``"dead_letter"``
        routes the failing element, firing or result to the dead-letter output
        (``result.dead_letters``; a third output of ``write_results_and_late``) and goes on.

        With ``"dead_letter"``, a row whose processing raises is left out exactly: its key
        is replayed without it, so every window is as if it had never arrived (its event time
        still moved the watermark). A window whose firing raises emits nothing for that
        firing; a result that is not a row of the output schema is left out. Each goes to
        the dead-letter output with ``error_phase`` (``element``, ``window``, ``result``),
        ``error_class``, ``error_message`` and the window, and is counted in the metrics
        (``num_dead_letter_elements``, ``num_dead_letter_firings``,
        ``num_dead_letter_results``). A window whose reduce or ``get_result`` gave ``None``
        (no row, Flink's rule; counted in ``num_null_results``) is a dead letter too, with
        ``error_phase`` ``null_result``. The operator then runs element by element
        (``explain()`` says so) and no native or columnar plan applies.

        Error notes name the key, window, element's event time and output field, but not
        row or result values, which may be sensitive: ``show_values=True`` adds them.

        Example::

            result = stream.key_by("user").window(TumblingEventTimeWindows("1 minute"))
                           .on_error("dead_letter").reduce(merge)
            result.dead_letters.show()
        """
        if not isinstance(show_values, bool):
            msg = f"on_error: show_values must be a bool, got {show_values!r}"
            raise ValueError(msg)
        return self._with(on_error=ErrorPolicy.of(policy), show_values=show_values)

    # -- terminal calls --------------------------------------------------------------------
    def _run(
        self, spec: WindowFunctionSpec, output_schema: Any, side_output_schemas: Any
    ) -> WindowingResult:
        """Build the Spark plan: batch replay for a static DataFrame, a stateful streaming
        query plan (``transformWithStateInPandas``) for a streaming one."""
        from windowing.spark.run import Terminal, run_terminal

        terminal = Terminal(self.job(), spec, output_schema, side_output_schemas)
        return run_terminal(terminal)  # type: ignore[no-any-return]

    def job(self) -> Job:
        """The compiled job description the runtime receives."""
        return Job(self.source, self.keys, self.config)

    def explain(self, function: Any = None) -> None:
        """Print how a terminal call with ``function`` (a reduce callable, an
        ``AggregateFunction``, a ``ProcessWindowFunction``, ...; a plain reduce by default)
        would run: the runtime, a columnar path if any, and the operator's strategy.

        The result of a terminal call has the exact plan (``result.explain()``)::

            stream.key_by("user").window(TumblingEventTimeWindows("1 minute")).explain()
        """
        print(self.plan(function))

    def plan(self, function: Any = None) -> SparkPlan:
        """The plan :meth:`explain` prints (no Spark job runs)."""
        from windowing.spark.run import plan_function

        spec = as_spec(function if function is not None else _reduce_placeholder)
        return plan_function(self.job(), spec)

    def reduce(
        self,
        function: Any,
        window_function: Any = None,
        *,
        output_schema: Any = None,
        side_output_schemas: Mapping[OutputTag, Any] | None = None,
    ) -> WindowingResult:
        """Reduce each window's rows pairwise, incrementally (Flink ``reduce``).

        ``function(a, b)`` gets two rows (``pyspark.sql.Row``) and returns one row of the same
        schema (a ``Row``, ``dict`` or tuple). The results have the reduced row's columns
        (except the key columns, which come first). With a ``window_function``
        (``ProcessWindowFunction`` / ``WindowFunction``) that receives the reduced row, the
        results have that function's outputs and ``output_schema`` describes them.

        ``side_output_schemas`` maps each :class:`OutputTag` that a ``ProcessWindowFunction``
        writes with ``context.output(tag, value)`` to the schema of its values (as
        ``output_schema``); read them with ``result.get_side_output(tag)``. The same
        parameter exists on every terminal call.
        """
        return self._run(Reduce(function, window_function), output_schema, side_output_schemas)

    def _aggregate_field(
        self, aggregation: AggregationType, field: str | int, first: bool = True
    ) -> WindowingResult:
        """A built-in aggregation of ``field`` (a column name or position), checked against
        the DataFrame's schema before any job runs."""
        from windowing.spark.columns.schema import aggregation_column
        from windowing.spark.run import Terminal, run_terminal

        name = aggregation_column(
            self.source.df, field, aggregation.value, keys=tuple(self.keys or ())
        )
        fn = FieldAggregation(aggregation, name, first)
        return run_terminal(Terminal.of_field_aggregation(self.job(), fn))  # type: ignore[no-any-return]

    def sum(self, field: str | int) -> WindowingResult:
        """Sum the numeric column ``field`` over each window (Flink ``sum``).

        The results have the input columns: those of the window's first row, with ``field``
        replaced by the sum. Nulls are skipped (a window of nulls sums to null). In batch, the
        built-ins run as native Spark plans where ``.agg`` would (but a float sum), else on
        whole Arrow columns or in the operator; ``explain()`` says which (``docs/spark.md``)::

            totals = stream.key_by("shop").window(TumblingEventTimeWindows("1 min")).sum("amount")
        """
        return self._aggregate_field(AggregationType.SUM, field)

    def min(self, field: str | int) -> WindowingResult:
        """The smallest value of ``field`` per window (Flink ``min``): the window's first row
        with ``field`` replaced by the minimum (nulls skipped). See :meth:`min_by` for the
        row holding the minimum."""
        return self._aggregate_field(AggregationType.MIN, field)

    def max(self, field: str | int) -> WindowingResult:
        """The largest value of ``field`` per window (Flink ``max``); as :meth:`min`."""
        return self._aggregate_field(AggregationType.MAX, field)

    def min_by(self, field: str | int, first: bool = True) -> WindowingResult:
        """The row with the smallest value of ``field`` per window (Flink ``minBy``); on a
        tie the first such row (``first=True``) or the last one. Rows whose ``field`` is
        null are picked only when every row's is."""
        return self._aggregate_field(AggregationType.MIN_BY, field, first)

    def max_by(self, field: str | int, first: bool = True) -> WindowingResult:
        """The row with the largest value of ``field`` per window (Flink ``maxBy``); as
        :meth:`min_by`."""
        return self._aggregate_field(AggregationType.MAX_BY, field, first)

    def agg(self, *columns: Any) -> WindowingResult:
        """Aggregate each window with Spark's own aggregate functions (``Column`` objects),
        as ``DataFrame.groupBy(...).agg(...)`` does.

        The results have the key column(s), ``window_start``, ``window_end``, one column per
        aggregate (Spark's name, or the alias) and ``max_timestamp``. Where the job's shape
        allows (batch; tumbling or hopping event-time windows, sessions or KIP-450 windows;
        default trigger, no evictor; arrival order or not; tumbling windows of a
        ``processing_time`` column: docs/spark.md) Spark computes it natively and no
        row reaches Python (``explain()`` names the plan); anywhere else the window operator
        computes the aggregates of ``docs/spark.md`` (count, sum, avg, min, max, first, last,
        min_by, max_by, count_if, bool_and, bool_or, grouped-aggregate pandas UDFs)::

            from pyspark.sql import functions as F

            stream.key_by("shop").window(TumblingEventTimeWindows("1 minute")).agg(
                F.sum("amount").alias("total"), F.count("*").alias("n"), F.avg("price")
            )
        """
        from windowing.spark.columns.aggregates import compile_aggregates
        from windowing.spark.run import Terminal, run_terminal

        compiled = compile_aggregates(self.job(), columns)
        terminal = Terminal.of_aggregates(compiled, self.job())
        return run_terminal(terminal)  # type: ignore[no-any-return]

    def count(self) -> WindowingResult:
        """The number of rows of each window, in a ``count`` column (``bigint``).

        The same as ``agg(F.count("*").alias("count"))``::

            stream.key_by("user").window(EventTimeSessionWindows("30 min")).count()
        """
        from windowing.spark.columns.aggregates import count_all

        return self.agg(count_all())

    def aggregate(
        self,
        function: Any,
        window_function: Any = None,
        *,
        output_schema: Any = None,
        side_output_schemas: Mapping[OutputTag, Any] | None = None,
    ) -> WindowingResult:
        """Aggregate each window incrementally with an ``AggregateFunction`` (an ``add`` per
        row) or a ``VectorizedAggregateFunction`` (``add_batch`` over many rows at once; in
        batch, many windows a record batch at a time: ``explain()`` says so; ``docs/spark.md``).

        ``output_schema`` (DDL string or ``StructType``) describes ``get_result``'s value (or
        the window function's outputs); it may be left out when the return annotation is a
        simple type (``-> float`` gives one ``value double`` column; a ``NamedTuple`` or
        dataclass of simple fields gives one column per field).
        """
        return self._run(Aggregate(function, window_function), output_schema, side_output_schemas)

    def fold(
        self,
        initial_value: Any,
        function: Any,
        window_function: Any = None,
        *,
        output_schema: Any = None,
        side_output_schemas: Mapping[OutputTag, Any] | None = None,
    ) -> WindowingResult:
        """Fold each window's rows into a copy of ``initial_value`` (not for merging
        windows); ``output_schema`` as in :meth:`aggregate`."""
        return self._run(
            Fold(initial_value, function, window_function), output_schema, side_output_schemas
        )

    def process(
        self,
        function: Any,
        *,
        output_schema: Any = None,
        side_output_schemas: Mapping[OutputTag, Any] | None = None,
    ) -> WindowingResult:
        """Evaluate each window with a ``ProcessWindowFunction`` over all its rows.

        ``output_schema`` describes one output (the function returns or yields any number);
        it may be left out when ``process`` is annotated ``-> Iterable[X]`` of a simple ``X``.
        Values the function writes with ``context.output(tag, value)`` need the tag's schema
        in ``side_output_schemas`` (see :meth:`reduce`).
        """
        return self._run(Process(function), output_schema, side_output_schemas)

    def apply(
        self,
        function: Any,
        *,
        output_schema: Any = None,
        side_output_schemas: Mapping[OutputTag, Any] | None = None,
    ) -> WindowingResult:
        """Evaluate each window with a legacy ``WindowFunction``; as :meth:`process`."""
        return self._run(Apply(function), output_schema, side_output_schemas)


def _other_stream(other: Any, method: str) -> DataStream:
    """The other input of a join: a :class:`DataStream` (not yet keyed)."""
    if not isinstance(other, DataStream):
        msg = (
            f"{method}: other must be a DataStream (DataStream.from_dataframe(...), not keyed: "
            f"give its key with .equal_to(...)), got {type(other).__name__} {other!r}"
        )
        raise ValueError(msg)
    return other


def _reduce_placeholder(a: Any, b: Any) -> Any:
    """The reduce :meth:`WindowedStream.explain` plans for when given no function."""
    return a
