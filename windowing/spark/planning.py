"""The Spark planner: how a job runs on Spark, decided once.

:func:`plan_spark` looks at a job (its assigner, trigger, evictor, function, lateness, input
order, runtime) and returns a frozen :class:`SparkPlan`: the :class:`Route` (which runner
builds the Spark plan), the reason in words, the window operator's own
:class:`~windowing.plan.Plan` (``None`` on a native route, which runs no operator) and the
columnar shape of a built-in aggregation computed on whole Arrow columns (``None``: the
operator computes every window). ``windowing.spark.run`` dispatches on ``plan.route``
through one table; every runner takes the plan it was given, and ``result.explain()`` prints
that same object. No Spark job runs here.

=========================  ============================================================
route                      when
=========================  ============================================================
``NATIVE_TUMBLING``        batch ``.agg`` of tumbling event-time windows, event-time order
``NATIVE_TUMBLING_ARRIVAL`` the same in arrival order (running aggregates for lateness)
``NATIVE_TUMBLING_PROCESSING`` batch ``.agg`` of tumbling processing-time windows of a
                           ``processing_time`` column (each key's clock, as the replay's)
``NATIVE_TUMBLING_COUNTS`` batch ``.agg`` of tumbling event-time windows with a count
                           trigger (purging or not), a count evictor or (default trigger) a
                           time evictor: firings are ranks in each window's sorted rows (a
                           count trigger in arrival order too)
``NATIVE_TUMBLING_CONTINUOUS`` the same in event-time order with a
                           ``ContinuousEventTimeTrigger``: each window's firings from its rows
``NATIVE_HOPPING_COUNTS``, ``NATIVE_HOPPING_CONTINUOUS``: the two above of hopping windows in
                           event-time order, each row first copied into its windows
``NATIVE_SESSIONS``        batch ``.agg`` of event-time sessions, event-time order
``NATIVE_HOPPING``         batch ``.agg`` of hopping windows from pane partials
``NATIVE_HOPPING_DISJOINT`` hopping windows no longer than their slide (one window a row)
``NATIVE_HOPPING_ARRIVAL`` hopping windows in arrival order, exact (invertible) aggregates
``NATIVE_KIP450``          batch ``.agg`` of KIP-450 sliding windows over range frames
``NATIVE_KIP450_JOINED``   the same, each window joined to its rows (no window function)
``NATIVE_WINDOW_JOIN``     batch window join's ``select`` of tumbling or hopping event-time
                           windows, event-time order: Spark's equi-join on key and window
``BATCH_REPLAY``           any other batch job: the window operator per key group
``STREAMING``              a streaming job: the operator in ``transformWithStateInPandas``
=========================  ============================================================

The native routes need the default trigger and no evictor (but the two above), no idle
timeout, no dead letters, and no ``processing_time`` column but for tumbling processing-time
windows; each native reason below says what else. A built-in aggregation (``.sum`` /
``.min`` / ``.max`` / ``.min_by`` / ``.max_by``) takes them as the ``.agg`` of its aggregate
calls (:mod:`windowing.spark.columns.field_aggregates`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_schema

from windowing.assigners.hopping import HoppingEventTimeWindows
from windowing.assigners.session import EventTimeSessionWindows
from windowing.assigners.sliding_distinct import SlidingDistinctAssigner
from windowing.assigners.tumbling import (
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowStagger,
)
from windowing.errors import ErrorPolicy
from windowing.functions.spec import WindowFunctionSpec
from windowing.job import (
    BoundedOutOfOrderness,
    Job,
    MonotonousTimestamps,
    StreamSource,
    WindowConfig,
)
from windowing.plan import Plan, Strategy, plan_operator
from windowing.spark.columnar.accumulators import aggregate_items
from windowing.spark.columnar.core import (
    ColumnarPlan,
    ColumnarShape,
    FieldItems,
    describe,
    field_aggregation_of,
)
from windowing.spark.columnar.count_trigger import counted_plan
from windowing.spark.columnar.hopping import HoppingAggregation
from windowing.spark.columnar.hopping_accumulators import HoppingAccumulators
from windowing.spark.columnar.kip450 import KafkaAccumulators
from windowing.spark.columnar.sessions import SessionAggregation
from windowing.spark.columnar.tumbling import TumblingAggregation, tumbling_size
from windowing.spark.columnar.vectorized import VectorizedWindows, fold_plan, vectorized_plan
from windowing.spark.columnar.vectorized_items import vectorized_rows
from windowing.spark.columns.aggregates import AggregateCall, ansi_enabled
from windowing.spark.jobs import (
    SMALL_INPUT_BYTES,
    SMALL_INPUT_CONF,
    batch_key_groups,
    estimated_bytes,
    one_task,
    small_input_bytes,
    streaming_key_groups,
    streaming_time_mode,
    uses_wall_clock,
)
from windowing.spark.native.continuous import continuous_interval, describe_continuous, planned
from windowing.spark.native.counts import ARRIVAL_RANKS, CountFirings
from windowing.spark.native.hopping import HoppingGrid, exact_running_sums, invertible
from windowing.spark.native.parts import by_event_time, framed, has_min_window, windowable
from windowing.spark.native.window_join import describe_native as describe_native_join
from windowing.spark.native.window_join import why_not_native as why_not_native_join
from windowing.spark.native.windows import describe_hopping_firings, describe_sessions
from windowing.spark.streaming.stages import plan_facts
from windowing.time import MAX_TIMESTAMP
from windowing.triggers.event_time import EventTimeTrigger
from windowing.triggers.processing_time import ProcessingTimeTrigger

__all__ = [
    "SMALL_INPUT_BYTES",
    "SMALL_INPUT_CONF",
    "ColumnarShape",
    "Route",
    "SparkPlan",
    "as_tumbling",
    "columnar_shape",
    "plan_spark",
    "small_input_bytes",
]


class Route(enum.Enum):
    """Which runner builds a job's Spark plan (see the module docstring)."""

    NATIVE_TUMBLING = "native-tumbling"
    NATIVE_TUMBLING_ARRIVAL = "native-tumbling-arrival"
    NATIVE_TUMBLING_PROCESSING = "native-tumbling-processing"
    NATIVE_TUMBLING_COUNTS = "native-tumbling-counts"
    NATIVE_HOPPING_COUNTS = "native-hopping-counts"
    NATIVE_HOPPING_CONTINUOUS = "native-hopping-continuous"
    NATIVE_TUMBLING_CONTINUOUS = "native-tumbling-continuous"
    NATIVE_SESSIONS = "native-sessions"
    NATIVE_HOPPING = "native-hopping"
    NATIVE_HOPPING_DISJOINT = "native-hopping-disjoint"
    NATIVE_HOPPING_ARRIVAL = "native-hopping-arrival"
    NATIVE_KIP450 = "native-kip450"
    NATIVE_KIP450_JOINED = "native-kip450-joined"
    NATIVE_WINDOW_JOIN = "native-window-join"
    BATCH_REPLAY = "batch-replay"
    STREAMING = "streaming"

    @property
    def native(self) -> bool:
        """Whether Spark computes the job without the window operator."""
        return self.value.startswith("native")


@dataclass(frozen=True)
class SparkPlan:
    """How a job runs on Spark: decided once by :func:`plan_spark`, dispatched on by the
    runner, printed by ``result.explain()``.

    Attributes
    ----------
    route
        Which runner builds the Spark plan.
    reason
        The route in words: the native plan, or the runtime and its order of rows.
    operator
        The window operator's plan (``None`` on a native route).
    columnar
        The built-in aggregation computed on whole Arrow columns, or the vectorized function
        computed a record batch at a time, if any.
    element_order
        The order in which the runtime feeds a key's rows to the operator, in words.
    watermarks
        Whether the runtime moves the watermark between a key's rows (an arrival order, a
        processing-time column, streaming), or feeds a key's whole input first.
    key_groups
        The key groups of a batch replay (one Python call each), sized to the input.
    one_task
        Whether the batch replay runs in one task without a shuffle (one key group of a
        small input: :func:`~windowing.spark.jobs.one_task`).

    Examples
    --------
    >>> plan = SparkPlan(Route.NATIVE_TUMBLING, "native Spark plan: ...", None)
    >>> plan.native, plan.columnar_shape is None
    (True, True)
    """

    route: Route
    reason: str
    operator: Plan | None
    columnar: ColumnarPlan | VectorizedWindows | None = None
    element_order: str = "arrival order, as Flink"
    watermarks: bool = True
    key_groups: int | None = None
    one_task: bool = False

    @property
    def native(self) -> bool:
        """Whether Spark computes the job without the window operator (a native route)."""
        return self.route.native

    @property
    def columnar_shape(self) -> ColumnarShape | None:
        """The shape of :attr:`columnar`, if any."""
        return None if self.columnar is None else self.columnar.shape

    def __str__(self) -> str:
        lines = ["== windowing plan ==", f"route: {self.route.value}", f"runtime: {self.reason}"]
        if self.columnar is not None:
            lines.append(f"columnar: {describe(self.columnar)}")
        operator = self.operator
        lines.append(
            "operator: none"
            if operator is None
            else operator.describe(self.element_order, watermarks=self.watermarks)
        )
        return "\n".join(lines)


# ---------------------------------------------------------------------------- the planner
def plan_spark(
    job: Job,
    spec: WindowFunctionSpec | None,
    calls: Sequence[AggregateCall] | None = None,
    *,
    native_job: Job | None = None,
    why_no_spec: str | None = None,
    computes: str | None = None,
    why_not_native: str | None = None,
) -> SparkPlan:
    """The plan of ``job`` with the window function ``spec``. ``calls``: the aggregates of a
    ``WindowedStream.agg`` (a batch one may run as a native Spark plan of ``native_job``, the
    user's own job without the operator's argument columns; default ``job``), or of a
    built-in aggregation (``computes`` says how, in words, for the plan's reason). ``spec`` is
    ``None`` when only a native plan can run the job (``why_no_spec`` says why: the error
    when the job has none). ``why_not_native``: why a batch job has no native plan whatever
    its shape (said in the reason of the plan it gets)."""
    small = why_columns = why_operator = ""
    size: int | None = None  # Spark's estimate of a batch input's size, asked once
    if calls is not None and not job.source.df.isStreaming:
        native = _native(native_job or job, calls)
        if native is None:
            why_operator = _why_not_native(native_job or job) + _why_udfs_not_native(calls)
        if native is not None and computes is not None:
            native = native[0], native[1].replace(_AGG, computes, 1)
            assert spec is not None  # (a built-in is a reduce)
            on_columns, why = _builtin_path(job, spec, native[0], calls)
            if on_columns:
                native, why_columns = None, why
            else:
                native = native[0], native[1] + why
        if native is not None:
            most = 0 if spec is None else small_input_bytes(job.source.df.sparkSession)
            size = estimated_bytes(job.source.df) if most > 0 else None
            if size is None or size > most:
                return SparkPlan(native[0], native[1], None)
            small = (
                f"; the input is small (Spark estimates {size:,} bytes, at most "
                f"{SMALL_INPUT_CONF} = {most:,}): the window operator, which starts faster "
                f"than the native plan ({native[0].value}) and gives the same outcome"
            )
    if spec is None:
        raise ValueError(why_no_spec or "a job without a native plan needs a window function")
    source, config = job.source, job.config
    operator = plan_operator(
        config.assigner,
        config.trigger,
        config.evictor,
        spec,
        config.allowed_lateness,
        config.slicing,
        guarded=config.on_error is ErrorPolicy.DEAD_LETTER,
        pane_info=config.pane_info,
    )
    spark = source.df.sparkSession
    timezone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    columnar = _columnar(job, spec, to_arrow_schema(source.df.schema, timezone=timezone))
    if source.df.isStreaming:
        mode = streaming_time_mode(job)
        later = not uses_wall_clock(job) and plan_facts(source.df).after_a_stage
        watermark = (
            "the watermark of the query's first stage (this stream is an earlier window's "
            "results), each micro-batch's rows taken before it moves, key by key"
            if later
            else f"the watermark of {source.watermark!r} across micro-batches"
        )
        runtime = (
            f"streaming: transformWithStateInPandas over {streaming_key_groups(job)} key groups, "
            f"time mode {mode}, {watermark}{_idle_text(job)}"
        )
        # a later stage's calls run key by key (rows first, then the due windows)
        columnar = None if later else columnar
        return SparkPlan(Route.STREAMING, runtime, operator, columnar, _element_order(source))
    order = _element_order(source)
    if not small:
        size = estimated_bytes(source.df)
    groups = batch_key_groups(job, size)
    single = one_task(groups, size)
    runtime = _batch_text(source, order, groups, single) + _idle_text(job)
    runtime += small + why_columns + why_operator
    if why_not_native is not None:
        runtime += f"; no native plan: {why_not_native}"
    # In event-time order a key's whole input comes first (the replay's deferred keys).
    watermarks = source.arrival_order is not None or source.processing_time is not None
    return SparkPlan(
        Route.BATCH_REPLAY, runtime, operator, columnar, order, watermarks, groups, single
    )


# ---------------------------------------------------------------------------- built-ins' path
#: The Spark configuration choosing the path of a batch built-in aggregation (``.sum`` ...)
#: that both a native plan and whole columns can run: ``auto`` (default: the faster, by
#: :func:`_builtin_path`'s rule: the native plan), ``native`` or ``columnar``.
BUILTIN_PATH_CONF = "spark.windowing.builtinPath"
_BUILTIN_PATHS = ("auto", "native", "columnar")
#: The routes whose plans group rows by key and window with hash aggregates
#: (:func:`~windowing.spark.native.parts.grouped_aggregates`); the other routes sort every
#: row (window functions: sessions, KIP-450 frames; panes; arrival order).
_HASHED_ROUTES = (
    Route.NATIVE_TUMBLING,
    Route.NATIVE_HOPPING_DISJOINT,
    Route.NATIVE_TUMBLING_CONTINUOUS,
    Route.NATIVE_HOPPING_CONTINUOUS,
)


def _hashed(route: Route, calls: Sequence[AggregateCall]) -> bool:
    """Whether the native plan of ``route`` aggregates ``calls`` by hash, without a sort."""
    return route in _HASHED_ROUTES and all(
        by_event_time(c) is not None or c.value_pick is not None for c in calls
    )


def builtin_path(spark: SparkSession) -> str:
    """The value of :data:`BUILTIN_PATH_CONF`."""
    value = (spark.conf.get(BUILTIN_PATH_CONF, None) or "auto").strip().lower()
    if value not in _BUILTIN_PATHS:
        msg = f"{BUILTIN_PATH_CONF} must be one of {', '.join(_BUILTIN_PATHS)}, got {value!r}"
        raise ValueError(msg)
    return value


def _builtin_path(
    job: Job, spec: WindowFunctionSpec, route: Route, calls: Sequence[AggregateCall]
) -> tuple[bool, str]:
    """Whether a batch built-in aggregation with the native route ``route`` runs on whole
    columns instead, and why (the tail of the plan's reason). The rule, from the keys
    benchmark (``docs/benchmarks.md``: tumbling windows, 1 M events): the native plan, by
    hash or sorting, ran within a few percent of whole columns at 1,000 keys and about twice
    as fast at 100,000 and 1,000,000 keys, with no Python. So the native plan, unless
    :data:`BUILTIN_PATH_CONF` is ``columnar``."""
    spark = job.source.df.sparkSession
    path = builtin_path(spark)
    how = (
        "by hash aggregates in steps after one shuffle (no sort)"
        if _hashed(route, calls)
        else "Spark sorts every row of a window (firings by rank)"
        if route in (Route.NATIVE_TUMBLING_COUNTS, Route.NATIVE_HOPPING_COUNTS)
        else "Spark sorts every row for it (a pick by a struct key)"
    )
    if path == "native":
        return False, f"; {how} ({BUILTIN_PATH_CONF} = native)"
    if path == "columnar":
        timezone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
        if _columnar(job, spec, to_arrow_schema(job.source.df.schema, timezone=timezone)):
            return True, (
                f"; on whole columns ({BUILTIN_PATH_CONF} = columnar; native: {route.value})"
            )
        return False, f"; {how} (whole columns do not apply)"
    return False, f"; {how}: measured as fast as whole columns or faster"


# ---------------------------------------------------------------------------- native routes
_NATIVE_TAIL = "; rows without event time to the late side output; Python never sees the rows"


def as_tumbling(job: Job) -> Job:
    """``job`` with hopping event-time windows whose slide equals their size given as the
    tumbling windows they are (each row in the one window ``[N * size + offset, ...)``, as
    Flink's ``SlidingEventTimeWindows`` assigns it), so the native plans of tumbling windows
    run it; any other job as it is."""
    assigner = job.config.assigner
    if type(assigner) is HoppingEventTimeWindows and assigner.slide == assigner.size:
        tumbling = TumblingEventTimeWindows(assigner.size, assigner.offset)
        return replace(job, config=replace(job.config, assigner=tumbling))
    return job


def _native(job: Job, calls: Sequence[AggregateCall]) -> tuple[Route, str] | None:
    """The native route of a batch ``.agg`` and why, or ``None`` when the operator runs it."""
    hopping = job.config.assigner
    job = as_tumbling(job)
    native = _native_route(job, calls)
    udfs = [call.python_udf for call in calls]
    if native is not None and any(udfs) and (not all(udfs) or native[0] not in _GROUPED):
        return None  # (see _why_udfs_not_native)
    if native is None or job.config.assigner is hopping:
        return native
    route, text = native
    return route, f"{hopping!r} has its slide equal to its size: tumbling windows; {text}"


def plan_window_join(job: Job, spec: WindowFunctionSpec) -> SparkPlan:
    """The plan of a window join's ``select`` (``JoinWithWindow.select``): the native join
    (:mod:`windowing.spark.native.window_join`) where it gives the window operator's outcome,
    else the operator's plan with ``spec`` (a join function giving each pair), whose reason
    says why not natively."""
    why = why_not_native_join(job)
    if why is None:
        return SparkPlan(Route.NATIVE_WINDOW_JOIN, describe_native_join(job), None)
    plan = plan_spark(job, spec)
    if job.source.df.isStreaming:
        return plan
    return replace(plan, reason=f"{plan.reason}; no native join: {why}")


def _native_route(job: Job, calls: Sequence[AggregateCall]) -> tuple[Route, str] | None:
    source, config = job.source, job.config
    assigner = config.assigner
    if config.on_error is ErrorPolicy.DEAD_LETTER:
        return None  # dead letters: every element goes through the guarded operator
    if type(assigner) is TumblingProcessingTimeWindows:
        native = _tumbling_processing(job)
        return None if isinstance(native, str) else native
    counts = CountFirings.of(config.trigger, config.evictor)
    interval = continuous_interval(config.trigger, config.evictor)
    default = config.trigger is None or type(config.trigger) is EventTimeTrigger
    if counts is None and interval is None and not (default and config.evictor is None):
        return None
    if source.processing_time is not None or config.idle_timeout is not None:
        return None  # replayed in processing-time order / keys with their own clocks
    if counts is not None or interval is not None:
        return _tumbling_firings(job, calls, counts, interval)
    if type(assigner) is SlidingDistinctAssigner:
        return _kip450(job, calls)
    if type(assigner) is HoppingEventTimeWindows:
        return _hopping(job, calls)
    if type(assigner) is TumblingEventTimeWindows:
        if assigner.stagger is not WindowStagger.ALIGNED:
            return None  # the operator's assigner draws the offset
        if source.arrival_order is not None:
            return _tumbling_in_arrival_order(job, calls)
        shape, route = (
            "tumbling event-time windows: groupBy(keys, window start)",
            (Route.NATIVE_TUMBLING),
        )
    elif type(assigner) is EventTimeSessionWindows:
        if source.arrival_order is not None:
            return None  # sessions merge on arrival: the window operator
        shape, route = describe_sessions(calls), Route.NATIVE_SESSIONS
    else:
        return None
    if config.allowed_lateness > 0 and has_min_window(assigner) and not windowable(calls):
        return None  # the window at the start of time fires per row: running aggregates
    return route, _native_text(shape, _EVENT_TIME_ORDER)


_EVENT_TIME_ORDER = (
    ", event-time order (nothing is late; each window fires once at the end of input)"
)


#: What a native plan computes, in its reason (a built-in aggregation says how it does).
_AGG = ".agg(...)"


def _tumbling_processing(job: Job) -> tuple[Route, str] | str:
    """The native route of tumbling processing-time windows, or why the operator runs them."""
    source, config = job.source, job.config
    assigner = config.assigner
    assert isinstance(assigner, TumblingProcessingTimeWindows)
    if config.on_error is ErrorPolicy.DEAD_LETTER:
        return "errors go to dead letters: every row goes through the guarded window operator"
    if config.trigger is not None and type(config.trigger) is not ProcessingTimeTrigger:
        return f"the trigger {config.trigger!r} is not the default ProcessingTimeTrigger"
    if config.evictor is not None:
        return f"the evictor {config.evictor!r}"
    if source.processing_time is None:
        return "no processing_time column"
    if source.arrival_order is not None:
        return (
            "rows in arrival order: each row's clock is the largest processing time of its "
            "key's rows that arrived before it, not its own"
        )
    if config.idle_timeout is not None:
        return "an idle timeout: keys' idle clocks"
    if assigner.stagger is not WindowStagger.ALIGNED:
        return "a stagger: the window operator's assigner draws the offset"
    text = (
        f"native Spark plan: tumbling processing-time windows of the processing_time column "
        f"{source.processing_time!r}, .agg(...); default trigger, no evictor; each row in the "
        "window of its key's clock (its processing time, at least 0; a row without one: the "
        "key's largest), groupBy(keys, window start, clock at the window's max timestamp): "
        "the rows before it fire once when the clock reaches it (ON_TIME), the rows at it "
        "once more when the clock moves on (LATE), the rows at MAX_TIMESTAMP never (their "
        "window is left); nothing is late; Python never sees the rows"
    )
    return Route.NATIVE_TUMBLING_PROCESSING, text


#: The native routes that run the user's aggregate columns alone in one ``groupBy().agg()``.
_GROUPED = (Route.NATIVE_TUMBLING, Route.NATIVE_HOPPING_DISJOINT)


def _why_udfs_not_native(calls: Sequence[AggregateCall]) -> str:
    """Why a batch ``.agg`` with pandas UDFs runs in the window operator (empty without)."""
    if not any(call.python_udf for call in calls):
        return ""
    return (
        "; pandas UDF aggregates run natively only alone (Spark runs no other aggregate "
        "beside them), over tumbling or non-overlapping hopping event-time windows with the "
        "default trigger: the window operator calls each once per firing"
    )


def _why_not_native(job: Job) -> str:
    """Why a batch ``.agg`` of tumbling processing-time windows runs in the window operator,
    for the plan's runtime text (empty for other jobs)."""
    if type(job.config.assigner) is not TumblingProcessingTimeWindows:
        return ""
    why = _tumbling_processing(job)
    if not isinstance(why, str):
        return ""
    route = Route.NATIVE_TUMBLING_PROCESSING.value
    return f"; the window operator, not the native plan ({route}): {why}"


def _native_text(shape: str, order: str) -> str:
    head = f"native Spark plan: {shape}, {_AGG}; default trigger, no evictor"
    return head + order + _NATIVE_TAIL


def _watermark_in_columns(job: Job) -> bool:
    """Whether the native plans compute the job's watermark in columns (the built-in
    strategies; a subclass may compute its watermark otherwise)."""
    return type(job.source.watermark) in (BoundedOutOfOrderness, MonotonousTimestamps)


def _tumbling_in_arrival_order(
    job: Job, calls: Sequence[AggregateCall]
) -> tuple[Route, str] | None:
    if not _watermark_in_columns(job):
        return None
    lateness = job.config.allowed_lateness
    if lateness > 0 and not windowable(calls):
        return None  # late firings are running aggregates: Spark's window functions
    firings = (
        "each window's rows added before the watermark passed its end fire once (groupBy)"
        if lateness == 0
        else "the states of each window's on-time rows and of each later row, merged in replay "
        "order by a window function, fire once for the on-time rows and again at each later row"
    )
    order = (
        "; in arrival order: each window's arrival cutoffs (when the watermark passed its "
        "end and its cleanup time; one small aggregate, broadcast), rows of windows past "
        f"their cleanup time to the late side output, {firings}"
    )
    shape = "tumbling event-time windows: groupBy(keys, window start)"
    return Route.NATIVE_TUMBLING_ARRIVAL, _native_text(shape, order)


def _tumbling_firings(
    job: Job, calls: Sequence[AggregateCall], counts: CountFirings | None, interval: int | None
) -> tuple[Route, str] | None:
    """The native route of tumbling windows with a count trigger or evictor (``counts``,
    :mod:`windowing.spark.native.counts`) or a ``ContinuousEventTimeTrigger`` of
    ``interval`` (:mod:`windowing.spark.native.continuous`), or ``None``."""
    source, assigner = job.source, job.config.assigner
    if type(assigner) is HoppingEventTimeWindows:
        text = describe_hopping_firings(job, counts, interval, windowable(calls))
        route = Route.NATIVE_HOPPING_COUNTS if counts else Route.NATIVE_HOPPING_CONTINUOUS
        return None if text is None else (route, text + _NATIVE_TAIL)
    if type(assigner) is not TumblingEventTimeWindows:
        return None
    if assigner.stagger is not WindowStagger.ALIGNED or has_min_window(assigner):
        return None  # a drawn offset; a window behind the first watermark fires per row
    arrival = source.arrival_order is not None
    if arrival and not _watermark_in_columns(job):
        return None  # a watermark strategy of the user's own
    order = ", event-time order (nothing is late; the watermark moves at the end of input)"
    if counts is not None:
        if not counts.native(windowable(calls), arrival=arrival):
            return None
        route, shape = Route.NATIVE_TUMBLING_COUNTS, counts.describe()
        order = ARRIVAL_RANKS if arrival else order
    else:
        assert interval is not None
        if arrival or not planned(assigner.size, interval):
            return None  # the watermark moves between rows; too many firings a window
        route, shape = Route.NATIVE_TUMBLING_CONTINUOUS, describe_continuous(interval)
        order = ", event-time order (nothing is late; every timer fires at the end of input)"
    text = f"native Spark plan: tumbling event-time windows with {shape}, {_AGG}{order}"
    return route, text + _NATIVE_TAIL


def _hopping(job: Job, calls: Sequence[AggregateCall]) -> tuple[Route, str] | None:
    assigner = job.config.assigner
    assert isinstance(assigner, HoppingEventTimeWindows)
    grid, lateness = HoppingGrid.of(assigner), job.config.allowed_lateness
    exact = exact_running_sums(calls, ansi_enabled(job.source.df.sparkSession))
    if job.source.arrival_order is not None:
        if not _watermark_in_columns(job) or not exact:
            return None
        if grid.size <= grid.slide or not windowable(calls):
            return None  # windows no longer than the slide in arrival order: the operator
        if not invertible(calls):
            return None  # not a count or an exact sum: see windowing.spark.native.hopping_arrival
        shape = (
            f"hopping event-time windows from panes of gcd(size, slide) = {grid.g} ms: rows "
            "grouped by (key, pane, pane of max(event time, watermark + 1)) enter the windows "
            "ending after the watermark they saw and leave after their pane (running sums per "
            "key in window-start order, windows generated per run of equal contents: the "
            "on-time firings); rows copied into their late windows only, running sums in "
            "replay order per window (one late firing each)"
        )
        order = (
            "; in arrival order: the watermark each row sees (a prefix maximum of event "
            "time), rows of windows past their cleanup time to the late side output"
        )
        return Route.NATIVE_HOPPING_ARRIVAL, _native_text(shape, order)
    if grid.size <= grid.slide:
        if lateness > 0 and grid.min_window_start is not None and not windowable(calls):
            return None  # the window at the start of time fires per row: running aggregates
        shape = (
            "hopping event-time windows no longer than their slide: a row is in at most one "
            "window (rows between windows count in num_records_in_no_window), "
            "groupBy(keys, window start)"
        )
        return Route.NATIVE_HOPPING_DISJOINT, _native_text(shape, _EVENT_TIME_ORDER)
    if not windowable(calls) or not exact:
        return None  # DISTINCT or a column the window operator cannot read: no partials
    if grid.m >= 2**61 or grid.size > MAX_TIMESTAMP:
        return None  # pane arithmetic would overflow a long (a slide of 2**61 ms and more)
    shape = (
        f"hopping event-time windows from panes of gcd(size, slide) = {grid.g} ms: partial "
        "aggregates per key and pane (groupBy), suffix aggregates per block of size / gcd "
        f"= {grid.n} panes (a window function), each window as a block's suffix plus the "
        "next block's prefix (van Herk / Gil-Werman), windows generated per run of equal "
        "contents (no row copied per window)"
    )
    return Route.NATIVE_HOPPING, _native_text(shape, _EVENT_TIME_ORDER)


def _kip450(job: Job, calls: Sequence[AggregateCall]) -> tuple[Route, str] | None:
    source, config = job.source, job.config
    assigner = config.assigner
    assert isinstance(assigner, SlidingDistinctAssigner)
    if assigner.size > MAX_TIMESTAMP:
        return None  # (a size beyond bigint: every window reaches past the ends of time)
    if config.slicing:
        return None  # the record timeline: KIP-450's definition, not Kafka's algorithm
    if source.arrival_order is not None:
        # Kafka's algorithm seeds a late record's new windows from other windows' aggregates
        # as they are at its arrival, and closes windows on the watermark: the contents
        # depend on the order of arrival, which the window operator replays.
        return None
    route, how = (
        (
            Route.NATIVE_KIP450,
            "each aggregated by Spark window functions over range frames of the key's rows "
            "(no copy of a row per window)",
        )
        if framed(assigner, calls)
        else (
            Route.NATIVE_KIP450_JOINED,
            "each window's rows joined to it by time range and grouped (a copy of a row per "
            "window: an aggregate without a window-function form, or a size from 2**62)",
        )
    )
    shape = (
        "KIP-450 sliding windows as Kafka's algorithm leaves them in event-time order (per "
        "key and sign of the time, a left window [t - size; t] per distinct record time t, "
        "Kafka's shared window [0; size] for times in [0, size), a right window [t + 1; t + 1 "
        f"+ size] when a later record falls in it), {how}"
    )
    return route, _native_text(shape, _EVENT_TIME_ORDER)


# ---------------------------------------------------------------------------- columnar shapes
def _columnar(
    job: Job, spec: WindowFunctionSpec, input_arrow: pa.Schema
) -> ColumnarPlan | VectorizedWindows | None:
    """The aggregation the runtime computes on whole columns, if any
    (:func:`columnar_shape`), when the rows are not replayed by a processing-time column, nor
    in arrival order (batch), nor on the wall clock (streaming), errors are not dead-lettered
    (every element goes through the guarded operator), keys have no idle clock of their own
    and firings are not counted (``pane_info``)."""
    source, config = job.source, job.config
    streaming = source.df.isStreaming
    if source.processing_time is not None or config.on_error is ErrorPolicy.DEAD_LETTER:
        return None
    if config.idle_timeout is not None or config.pane_info:
        return None  # keys with clocks of their own / firings counted per window
    if uses_wall_clock(job) if streaming else source.arrival_order is not None:
        return None
    keys = job.keys or ()
    return columnar_shape(config, spec, input_arrow, streaming=streaming, keys=keys)


def columnar_shape(
    config: WindowConfig,
    spec: WindowFunctionSpec,
    input_arrow: pa.Schema | None,
    *,
    streaming: bool,
    keys: Sequence[str] = (),
) -> ColumnarPlan | VectorizedWindows | None:
    """The columnar plan of a window configuration with the function ``spec`` (``input_arrow``,
    the input's Arrow schema when known, rules out fields numpy cannot reduce), or ``None``: a
    vectorized function's; a built-in aggregation of tumbling, hopping (``slide <= size``) or
    session windows; in streaming ``.agg`` columns of those, of KIP-450 windows, of tumbling
    windows under a count trigger, windows holding rows (:func:`vectorized_rows`); a fold."""
    found = vectorized_plan(config, spec, streaming=streaming, keys=keys, input_arrow=input_arrow)
    if streaming and found is None:
        found = counted_plan(config, spec, keys, input_arrow)
        found = found or vectorized_rows(config, spec, keys, input_arrow)
    if found is not None:
        return found
    assigner, lateness = config.assigner, config.allowed_lateness
    tumbling = tumbling_size(assigner)
    # .agg columns: tumbling windows, sessions, and (the operator's state converting) hopping
    # windows kept as panes, KIP-450 windows in Kafka's store
    aggregates = aggregate_items(config, spec, keys, input_arrow) if streaming else None
    if aggregates and tumbling and type(assigner) is TumblingEventTimeWindows:
        return TumblingAggregation(aggregates, *tumbling, lateness)
    if aggregates is not None and type(assigner) is EventTimeSessionWindows:
        return SessionAggregation(aggregates, assigner.gap, lateness)
    if aggregates is not None:  # (no evictor here)
        kept = plan_operator(assigner, config.trigger, None, spec, lateness, config.slicing)
        if kept.strategy is Strategy.PANES and type(assigner) is HoppingEventTimeWindows:
            size, slide, offset = assigner.size, assigner.slide, assigner.offset
            return HoppingAccumulators(aggregates, size, slide, offset, lateness)
        if kept.strategy is Strategy.KAFKA_SLIDING and type(assigner) is SlidingDistinctAssigner:
            return KafkaAccumulators(aggregates, assigner.size, assigner.lateness(lateness))
    fn = field_aggregation_of(spec, config.trigger, config.evictor, lateness, input_arrow)
    if fn is None:
        return fold_plan(config, spec, streaming=streaming)
    assert isinstance(fn.field, str)
    items = FieldItems(fn.aggregation, fn.field, fn.first)
    if tumbling is not None:
        return TumblingAggregation(items, *tumbling, lateness)
    if type(assigner) is HoppingEventTimeWindows:
        size, slide, offset = assigner.size, assigner.slide, assigner.offset
        if slide > size or (streaming and config.slicing is True and slide < size):
            return None
        return HoppingAggregation(fn.aggregation, fn.field, fn.first, size, slide, offset, lateness)
    if type(assigner) is EventTimeSessionWindows:
        return SessionAggregation(items, assigner.gap, lateness)
    return None


def _idle_text(job: Job) -> str:
    """The idle rule, in words (empty without one)."""
    timeout = job.config.idle_timeout
    if timeout is None:
        return ""
    clock = (
        "the micro-batch clock"
        if job.source.df.isStreaming
        else f"the processing_time column {job.source.processing_time!r}"
    )
    return (
        f"; a key quiet for {timeout} ms on {clock} moves its own watermark with the quiet "
        "time (idle_timeout)"
    )


def _element_order(source: StreamSource) -> str:
    """The order in which a runtime feeds a key's rows to the operator, in words (the
    replay's order: :func:`~windowing.spark.batch.replay_plan.replay_order`)."""
    if source.arrival_order is not None:
        order = f"arrival order ({source.arrival_text()})"
    elif source.processing_time is not None:
        order = f"processing-time order ({source.processing_time!r})"
    else:
        order = "event-time order"
    if source.df.isStreaming:
        return f"micro-batch by micro-batch, {order} within one"
    return order


def _batch_text(source: StreamSource, order: str, groups: int, single: bool) -> str:
    """The batch replay of rows fed in ``order`` (:func:`_element_order`), in words."""
    if source.arrival_order is not None:
        replayed = (
            f"in arrival order ({source.arrival_text()}) with the watermark a streaming run "
            f"would have seen ({source.watermark!r}), then the end of input"
        )
    else:
        replayed = (
            f"in {order}, then the end of input: without an arrival order "
            f"the watermark strategy ({source.watermark!r}) has no order to follow, so the "
            "watermark goes from the start straight to the end of input and nothing is late "
            "(Flink's batch mode)"
        )
    grouped = (
        "rows of a small input in one task, without a shuffle (coalesce(1) + mapInArrow)"
        if single
        else f"rows grouped into {groups} key groups (groupBy + applyInArrow)"
    )
    return f"batch replay: {grouped}, each key's rows replayed {replayed}"
