"""The interval join in streaming (``IntervalJoined.process`` on streaming DataFrames): one
Structured Streaming query, on the window join's machinery.

The plan::

    both inputs ──► the tagged union (windowing.spark.joins.tagged_union): each input with
                    its own withWatermark, Spark's watermark the smaller
                ──► the runtime's columns (prepared_input) and the key group
                ──► groupBy(key group).transformWithStateInPandas(IntervalJoinProcessor,
                    Append, EventTime)
                ──► the tagged output (results, each side's late rows, a metrics row per
                    call; IntervalJoinLayout), observed as summed counters and gauges

A call handles one key group: each key's rows of the micro-batch (in arrival order) go
through Flink's operator (:class:`~windowing.spark.interval_join.output.KeyRun`), restored
from the key's entry in the group's state and kept there again: the operator's watermark and
its buffers (:meth:`~windowing.interval_join.IntervalJoinOperator.snapshot`, plain data in
the state encoding), due when its earliest cleanup timer is. All rows of a micro-batch see
its watermark, Spark's in Flink's terms (``clocks.flink_watermark``), so a row is late when
its event time is below it, as in the batch replay with the micro-batch as arrival order. The
group keeps one Spark timer, at its keys' earliest cleanup time: a call of the group (with
rows, or its timer) cleans up every key whose time has come.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from windowing._version import __version__
from windowing.definition import JobDefinition, describe
from windowing.engine.encoding import StateWriter, open_state
from windowing.interval_join import IntervalJoinOperator
from windowing.records import OutputTag
from windowing.spark.columns.frames import input_table, key_ranges, pack, restore_nans
from windowing.spark.columns.inputs import TS as _TS
from windowing.spark.columns.inputs import arrival_count, replay_order
from windowing.spark.columns.units import StreamingUnitCheck, unit_checks_in
from windowing.spark.interval_join.output import IntervalJoinLayout, KeyRun
from windowing.spark.joins import TaggedUnion
from windowing.spark.streaming.checkpoint import STATE_VERSION, Entry, GroupState
from windowing.spark.streaming.clocks import BatchClocks
from windowing.spark.streaming.query import (
    METRICS_NAME,
    gauge_totals,
    prepared_input,
    stateful_output,
    use_rocksdb,
)
from windowing.spark.streaming.stages import plan_facts, stage_metrics_name
from windowing.spark.streaming.state_io import keep_timer
from windowing.time import MIN_TIMESTAMP, TimeUnit

__all__ = [
    "IntervalJoinConfig",
    "IntervalJoinProcessor",
    "StreamingIntervalJoinResult",
    "run_streaming",
]

#: The key groups of a streaming interval join (Flink's default maximum parallelism).
KEY_GROUPS = 128


@dataclass(frozen=True, eq=False)
class IntervalJoinConfig:
    """What :class:`IntervalJoinProcessor` is built with (shipped to the executors).

    Attributes
    ----------
    function
        The :class:`~windowing.functions.joins.ProcessJoinFunction`.
    layout
        The tagged output's layout, with the bounds and late output tags.
    input_arrow
        The Arrow schema of the tagged union's columns (timestamps in the session time
        zone), which the processor's frames hold first, by position.
    internal
        The runtime's columns after them (event time in ms, content hash, arrival order,
        NaN masks).
    key_groups
        The number of key groups (Spark's grouping key).
    nan_masks
        ``(mask column, float columns)``: which of the union's float values are NaN.
    job_digest
        The digest of the job's definition, kept with the state.
    """

    function: Any
    layout: IntervalJoinLayout
    input_arrow: pa.Schema
    internal: tuple[str, ...]
    key_groups: int
    nan_masks: tuple[tuple[str, tuple[str, ...]], ...] = ()
    job_digest: str | None = None

    @property
    def input_table_schema(self) -> pa.Schema:
        """The Arrow schema of a call's rows: the union's columns, then the internal ones."""
        return pa.schema([*self.input_arrow, *[pa.field(n, pa.int64()) for n in self.internal]])


class IntervalJoinProcessor(StatefulProcessor):
    """The interval join's stateful processor: Spark's grouping key is a key group, with one
    ValueState (:class:`~windowing.spark.streaming.checkpoint.GroupState`: each key's entry,
    its state an operator snapshot) and one timer."""

    def __init__(self, config: IntervalJoinConfig) -> None:
        self.config = config

    def init(self, handle: StatefulProcessorHandle) -> None:
        c = self.config
        self.handle = handle
        self.group = GroupState(handle, c.key_groups, c.job_digest)
        self.clocks = BatchClocks(wall_clock=False)

    def handleInputRows(  # noqa: N802 - Spark's name
        self,
        key: Any,
        rows: Iterator[pd.DataFrame],
        timerValues: Any,  # noqa: N803
    ) -> Any:
        c = self.config
        frames = list(rows)
        pdf = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        # the batch replay's order inside a key: arrival order, event time, content hash
        order = replay_order(arrival=arrival_count(c.internal), processing_time=False)
        table = input_table(pdf, c.input_table_schema, order)
        newest = pc.max(table.column(_TS)).as_py()
        if c.nan_masks:
            table = restore_nans(table, c.nan_masks)
        registered, entries, _ = self.group.load(key)
        self.clocks.advance(timerValues)
        table, _ = key_ranges(table, c.layout.keys)
        run = _GroupRun(self, entries)
        watermark = self.clocks.stream_watermark
        batches = [run.run(b, [watermark] * b.num_rows) for b in table.to_batches()]
        run.finish()
        run.clean_up(self.clocks.due_clock())
        gauges = self._save(registered, entries, alive=True, newest=newest)
        yield pack([*batches, run.metrics_batch(gauges)])

    def handleExpiredTimer(  # noqa: N802 - Spark's name; called with keyword arguments
        self,
        key: Any,
        timerValues: Any,  # noqa: N803
        expiredTimerInfo: Any,  # noqa: N803
    ) -> Any:
        registered, entries, _ = self.group.load(key)
        self.clocks.advance(timerValues)
        run = _GroupRun(self, entries)
        run.clean_up(max(self.clocks.due_clock(), int(expiredTimerInfo.getExpiryTimeInMs())))
        yield pack([run.metrics_batch(self._save(registered, entries, alive=False))])

    def close(self) -> None:
        pass

    def _save(
        self, registered: int | None, entries: dict[Any, Entry], *, alive: bool, newest: Any = None
    ) -> dict[str, int]:
        """Write the group's state (clear it when no key buffers anything) with one Spark
        timer at its earliest due time; the call's gauges."""
        due = [e[1] for e in entries.values() if e[1] is not None]
        timer = min(due) if due else None
        keep_timer(self.handle, registered, timer, alive=alive)
        gauges = {
            "state_bytes": self.group.store(timer, entries, None),
            "buffered_rows": sum(e[4] for e in entries.values()),
        }
        if newest is not None:
            gauges["max_event_time"] = newest
        if self.clocks.stream_watermark > MIN_TIMESTAMP:
            gauges["watermark"] = self.clocks.stream_watermark
        return gauges


class _GroupRun(KeyRun):
    """A call's keys: each key's operator restored from its entry in ``entries`` and kept
    there again (an operator snapshot in the state encoding, due at its earliest cleanup
    time as a Spark timer); a key that buffers nothing leaves."""

    def __init__(self, processor: IntervalJoinProcessor, entries: dict[Any, Entry]) -> None:
        super().__init__(processor.config.function, processor.config.layout)
        self.group = processor.group
        self.clocks = processor.clocks
        self.entries = entries
        self.called: set[Any] = set()

    def open_key(self, skey: Any, key: Any) -> IntervalJoinOperator:
        op = super().open_key(skey, key)
        entry = self.entries.get(skey)
        if entry is not None:
            op.restore(open_state(entry[2], self.group.scope)[0])
        return op

    def close_key(self, skey: Any, key: Any, op: IntervalJoinOperator) -> None:
        super().close_key(skey, key, op)
        self.called.add(skey)
        buffered = op.num_buffered()
        if not buffered:
            self.entries.pop(skey, None)
            return
        timer = self.clocks.spark_timer(op.next_timer(), op.watermark)
        blob = StateWriter().finish(op.snapshot(), self.group.scope)
        self.entries[skey] = (key, timer, blob, None, buffered, None)

    def clean_up(self, due: int) -> None:
        """Clean up the keys not called yet whose entry is due by the Spark clock ``due``:
        their buffers at the micro-batch's watermark."""
        watermark = self.clocks.stream_watermark
        for skey, entry in list(self.entries.items()):
            if skey in self.called or entry[1] is None or entry[1] > due:
                continue
            op = self.open_key(skey, entry[0])
            op.process_watermark(watermark)
            self.close_key(skey, entry[0], op)


@dataclass(frozen=True, eq=False)
class StreamingIntervalJoinResult:
    """The outcome of an interval join of streaming DataFrames: one query's tagged output,
    which :func:`~windowing.spark.streaming.write_results_and_late` writes (results, and
    each side's late rows with ``side_output_paths={left_tag: ..., right_tag: ...}``).

    Example::

        result = orders.key_by("id").interval_join(payments.key_by("id")) \\
            .between("-1 minute", "1 hour").side_output_right_late_data(late) \\
            .process(pair, output_schema="amount double, method string")
        query = write_results_and_late(result, "/out/pairs", None, "/chk/pairs",
                                       side_output_paths={late: "/out/late_payments"})
        query.stage_metrics()["windowing"]["num_pairs"]

    Attributes
    ----------
    output
        The streaming tagged output (results, each side's late rows, a metrics row per key
        group and micro-batch); with ``metrics_name``, observed.
    layout
        How to split ``output`` (or one ``foreachBatch`` batch of it).
    plan
        How the join runs, in words (:meth:`explain` prints it).
    metrics_name
        The name of the observed metrics in ``query.lastProgress["observedMetrics"]``
        (``None``: not observed): the counters of
        :class:`~windowing.spark.interval_join.IntervalJoinResult` per micro-batch, and
        ``watermark_lag_ms``, ``state_bytes``, ``max_key_group_state_bytes`` and
        ``buffered_rows`` (rows in the buffers of the key groups the micro-batch called).
    definition
        The job's definition, which its checkpoint records (a restart with a job whose
        state-shaping parts differ, e.g. other bounds or another input, is refused).
    config
        The stateful processor's configuration.
    unit_checks
        The checks of the inputs' integral event times without a declared unit.
    """

    output: DataFrame
    layout: IntervalJoinLayout
    plan: str
    metrics_name: str | None = METRICS_NAME
    definition: JobDefinition | None = None
    config: IntervalJoinConfig | None = None
    unit_checks: tuple[StreamingUnitCheck, ...] = ()
    #: The query's time mode (an interval join runs in event time).
    time_mode = "EventTime"
    #: No windowing stage feeds it in its query.
    upstream = ()
    #: One late output per side (:attr:`left_late_tag`, :attr:`right_late_tag`).
    late_output_tag = None

    @property
    def stages(self) -> tuple[StreamingIntervalJoinResult, ...]:
        """The query's stateful stages: this one."""
        return (self,)

    @property
    def left_late_tag(self) -> OutputTag | None:
        """The tag of the left side's late output, if any."""
        return self.layout.bounds.left_late_tag

    @property
    def right_late_tag(self) -> OutputTag | None:
        """The tag of the right side's late output, if any."""
        return self.layout.bounds.right_late_tag

    @property
    def results(self) -> DataFrame:
        """The results as a streaming DataFrame (its own query; prefer
        ``write_results_and_late``, which runs the join once for every output)."""
        return self.layout.select_results(self.output)

    def get_side_output(self, tag: OutputTag) -> DataFrame:
        """The late rows of the side whose late output ``tag`` is, as a streaming DataFrame
        (its own query): the input's columns, ``late_watermark`` and ``late_reason``."""
        return self.layout.select_side_output(self.output, tag)

    def select_results(self, df: DataFrame) -> DataFrame:
        """The results of a tagged output ``df`` (streaming, or a ``foreachBatch`` batch)."""
        return self.layout.select_results(df)

    def select_side_output(self, df: DataFrame, tag: OutputTag) -> DataFrame:
        """The late rows of ``tag``'s side in a tagged output ``df``."""
        return self.layout.select_side_output(df, tag)

    def select_late(self, df: DataFrame) -> DataFrame:
        """Refused: each side has its late output (:meth:`select_side_output`)."""
        raise ValueError(self._per_side("select_late"))

    def select_dead_letters(self, df: DataFrame) -> DataFrame:
        """Refused: an interval join has no dead letters."""
        msg = "an interval join has no dead letters (no on_error policy): its errors fail the query"
        raise ValueError(msg)

    def check_late_path(self, late_path: object) -> None:
        """Refuse a ``late_path``: each side's late rows have their own output."""
        if late_path is not None:
            raise ValueError(self._per_side(f"late_path={late_path!r}"))

    def _per_side(self, what: str) -> str:
        tags = ", ".join(
            f"{t!r}: ..." for t in (self.left_late_tag, self.right_late_tag) if t is not None
        )
        return (
            f"{what}: an interval join has a late output per side; write them with "
            f"side_output_paths={{{tags or 'left_tag: ..., right_tag: ...'}}} (the tags of "
            "side_output_left_late_data / side_output_right_late_data) and late_path=None"
        )

    def observed_metrics(self, progress: Any) -> dict[str, Any] | None:
        """The join's metrics in one progress of its query (``query.lastProgress`` or an item
        of ``query.recentProgress``); ``None`` when the progress has none."""
        if progress is None or self.metrics_name is None:
            return None
        found = progress["observedMetrics"].get(self.metrics_name)
        return None if found is None else found.asDict()

    def explain(self) -> None:
        """Print how the join runs."""
        print(self.plan)


def run_streaming(
    union: TaggedUnion,
    function: Any,
    layout: IntervalJoinLayout,
    *,
    metrics_name: str | None = METRICS_NAME,
    key_groups: int = KEY_GROUPS,
) -> StreamingIntervalJoinResult:
    """The streaming query of the interval join of the tagged union's two streaming sides
    with ``function``; no Spark job runs here. Its metrics are observed under
    ``metrics_name`` (or the first free suffix of it in the query, as for consecutive
    windows; ``None``: not observed). Sets the session's state store provider to RocksDB."""
    source = union.source
    df = source.df
    spark = df.sparkSession
    if metrics_name is not None and (not isinstance(metrics_name, str) or not metrics_name):
        msg = f"metrics_name must be a non-empty str or None, got {metrics_name!r}"
        raise ValueError(msg)
    facts = plan_facts(df)
    if metrics_name is not None:
        metrics_name = stage_metrics_name(metrics_name, facts.metric_names)
    use_rocksdb(spark)
    # each input observes its own unit check (tagged_union)
    unit_checks = unit_checks_in(o.name for o in reversed(facts.observed))
    prepared, nan_masks = prepared_input(df, source)
    tz = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    definition = _definition(union, function, layout, key_groups)
    config = IntervalJoinConfig(
        function,
        layout,
        to_arrow_schema(df.schema, timezone=tz),
        tuple(prepared.columns[len(df.columns) :]),
        key_groups,
        nan_masks,
        definition.digest,
    )
    processor = IntervalJoinProcessor(config)
    output = stateful_output(
        prepared, union.keys, key_groups, processor, layout.schema, "EventTime"
    )
    if metrics_name is not None:
        totals = [*layout.metric_totals(), *gauge_totals(layout.gauge_sql, "buffered_rows")]
        output = output.observe(metrics_name, *totals)
    bounds = layout.bounds
    plan = (
        "interval join: streaming, one query (transformWithStateInPandas, EventTime): both "
        "inputs as one tagged stream, each with its own watermark, the join's the smaller "
        f"(Spark's multipleWatermarkPolicy=min); rows grouped into {key_groups} key groups, "
        "each key's rows of a micro-batch through Flink's interval join operator "
        f"({bounds.low} <= right - left event time <= {bounds.high} ms) restored from the "
        "checkpoint (its buffers and watermark), late rows to each side's late output, one "
        "Spark timer per key group for the buffers' cleanup"
    )
    return StreamingIntervalJoinResult(
        output=output,
        layout=layout,
        plan=plan,
        metrics_name=metrics_name,
        definition=definition,
        config=config,
        unit_checks=unit_checks,
    )


def _definition(
    union: TaggedUnion, function: Any, layout: IntervalJoinLayout, key_groups: int
) -> JobDefinition:
    """The definition of the streaming interval join (``windowing.definition``): its state
    is each key's buffered rows of both inputs, cleaned up by the bounds."""
    source = union.source
    schema = [[f.name, f.dataType.simpleString()] for f in source.df.schema.fields]
    bounds = layout.bounds
    unit = source.event_unit
    tags = {"left_late": bounds.left_late_tag, "right_late": bounds.right_late_tag}
    parts: dict[str, Any] = {
        "function_kind": "interval_join",
        "keys": [[k, t.simpleString()] for k, t in zip(layout.keys, layout.key_types, strict=True)],
        "input_rows": schema,
        "allowed_lateness": 0,
        "max_parallelism": key_groups,
        "time_mode": "EventTime",
        "state_shape": {"strategy": "interval_join", "lower": bounds.low, "upper": bounds.high},
        # allowed to change: listed, the query goes on
        "function": describe(function),
        "input": schema,
        "output": layout.out.simpleString(),
        "side_outputs": {side: None if t is None else t.name for side, t in tags.items()},
        "event_time": source.event_time,
        "event_time_unit": None if unit is TimeUnit.MILLISECONDS else unit.value,
        "watermark": describe(source.watermark),
        "arrival_order": source.arrival_order,
        "state_layout": STATE_VERSION,
        "windowing": __version__,
    }
    return JobDefinition(parts)
