"""Consecutive windowed operations in one streaming query (Flink's consecutive windows): what
a streaming DataFrame's plan already holds of earlier windowing stages, the name each stage
observes its metrics under, and the stages a later one follows.

A stage's results can feed the next stage
(``DataStream.from_dataframe(first.results..., event_time=<its result time>)``), so one
query may run several window operators, each a ``transformWithStateInPandas`` operator with
its own state. Each observes its metrics (``DataFrame.observe``) under a name of its own,
since Spark refuses two observations of one name in a query (``DUPLICATED_METRICS_NAME``):
the name is derived from the plan alone (:func:`stage_metrics_name`), so the same code gives
the same names on every run and a restart from a checkpoint reports under the same names.

A later stage defines no watermark of its own: Spark allows one watermark definition on a
path (``statefulOperator.allowMultiple``), and the first stage's flows through every
stateful operator in event-time mode, as a watermark flows through Flink's operators.

Example::

    first = stream.key_by("user").window(TumblingEventTimeWindows(5000)).sum("amount")
    sums = first.results.select("user", "amount", F.col("max_timestamp").alias("at"))
    second = (
        DataStream.from_dataframe(sums, event_time="at")
        .window_all(TumblingEventTimeWindows(5000))
        .max("amount")
    )
    first.metrics_name, second.metrics_name, second.upstream  # 'windowing', 'windowing_2', (first,)

A later stage takes each micro-batch's rows before the watermark moves (they are results the
stage before it emitted as the watermark passed them, Flink's order), then fires the windows
the watermark passes: ``KeyCalls`` with ``ProcessorConfig.later_stage``; ``docs/spark.md``,
"Consecutive windows in one query".
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from windowing.job import Job, StreamSource
from windowing.spark.columns.schema import column_time_kind
from windowing.time import TimeUnit

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from windowing.spark.streaming.query import StreamingWindowedResult

__all__ = [
    "ALLOW_MULTIPLE",
    "WATERMARK_COPY",
    "Observed",
    "PlanFacts",
    "check_later_stage",
    "check_stage_input",
    "find_stages",
    "plan_facts",
    "register_stage",
    "stage_metrics_name",
]


#: Spark's setting that allows several stateful operators in one query (default: true).
ALLOW_MULTIPLE = "spark.sql.streaming.statefulOperator.allowMultiple"
#: The copy of the event time a stage defines Spark's watermark on (projected away again).
WATERMARK_COPY = "__pw_wm"


@dataclass(frozen=True)
class Observed:
    """One observation (``CollectMetrics``) in a DataFrame's plan: its name, and the
    identity of the DataFrame that observed it (``None`` where the plan does not say)."""

    name: str
    identity: int | None


@dataclass(frozen=True)
class PlanFacts:
    """What a streaming DataFrame's plan holds that a new windowing stage must know.

    Attributes
    ----------
    observed
        Its observations, the last one applied first.
    watermark_columns
        The columns its ``withWatermark`` calls define the watermark on.
    time_modes
        The time modes of its ``transformWithState`` operators (``"EventTime"``,
        ``"ProcessingTime"``, ``"NoTime"``).

    Examples
    --------
    >>> facts = PlanFacts((Observed("windowing", 7),), ("__pw_wm",), ("EventTime",))
    >>> facts.after_a_stage, sorted(facts.metric_names)
    (True, ['windowing'])
    """

    observed: tuple[Observed, ...] = ()
    watermark_columns: tuple[str, ...] = ()
    time_modes: tuple[str, ...] = ()

    @property
    def after_a_stage(self) -> bool:
        """Whether the plan holds an earlier windowing stage's watermark: a stage built on
        it is a later stage of the same query."""
        return WATERMARK_COPY in self.watermark_columns

    @property
    def metric_names(self) -> set[str]:
        return {o.name for o in self.observed}


#: The windowing stages built in this process, by the identity of their observation.
_STAGES: weakref.WeakValueDictionary[int, StreamingWindowedResult] = weakref.WeakValueDictionary()


def plan_facts(df: DataFrame) -> PlanFacts:
    """The :class:`PlanFacts` of ``df``: classic PySpark's logical plan, or Spark Connect's
    client plan."""
    jdf = getattr(df, "_jdf", None)
    if jdf is not None:
        nodes = _jvm_nodes(jdf.queryExecution().logical())
        return _facts(_jvm_fact(node) for node in nodes)
    plan = getattr(df, "_plan", None)
    if plan is None:
        return PlanFacts()
    return _facts(_connect_fact(node) for node in _connect_nodes(plan, set()))


def _facts(found: Iterator[tuple[str, Any] | None]) -> PlanFacts:
    observed: list[Observed] = []
    watermarks: list[str] = []
    modes: list[str] = []
    for fact in found:
        if fact is None:
            continue
        kind, value = fact
        if kind == "observed":
            observed.append(value)
        elif kind == "watermark":
            watermarks.append(value)
        else:
            modes.append(value)
    return PlanFacts(tuple(observed), tuple(watermarks), tuple(modes))


def _jvm_nodes(root: Any) -> Iterator[Any]:
    """The nodes of a JVM logical plan, top down."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        children = node.children()
        stack.extend(children.apply(i) for i in reversed(range(children.size())))


def _jvm_fact(node: Any) -> tuple[str, Any] | None:
    name = str(node.nodeName())
    if name == "CollectMetrics":
        return "observed", Observed(str(node.name()), int(node.dataframeId()))
    if name == "EventTimeWatermark":
        return "watermark", str(node.eventTime().name())
    if name == "UnresolvedEventTimeWatermark":  # a plan not analyzed yet
        column = node.eventTimeColExpr()
        try:
            return "watermark", str(column.name())
        except Exception:  # not a named column: not a stage's watermark
            return "watermark", str(column)
    if name.startswith("TransformWithState"):
        return "time_mode", str(node.timeMode()).replace("()", "")
    return None


def _connect_nodes(plan: Any, seen: set[int]) -> Iterator[Any]:
    """The nodes of a Spark Connect client plan, top down (its nodes are the classes of
    ``pyspark.sql.connect.plan``, which only a Spark Connect client imports)."""
    if id(plan) in seen:
        return
    seen.add(id(plan))
    yield plan
    for value in vars(plan).values():
        for child in value if isinstance(value, list | tuple) else [value]:
            if type(child).__module__ == _CONNECT_PLAN:
                yield from _connect_nodes(child, seen)


_CONNECT_PLAN = "pyspark.sql.connect.plan"


def _connect_fact(node: Any) -> tuple[str, Any] | None:
    name = type(node).__name__
    if name == "CollectMetrics":
        observation = node._observation
        label = observation if isinstance(observation, str) else observation._name
        return "observed", Observed(str(label), id(node))
    if name == "WithWatermark":
        return "watermark", str(node._event_time)
    if name.startswith("TransformWithState"):
        return "time_mode", str(getattr(node, "_time_mode", ""))
    return None


def stage_metrics_name(requested: str, taken: set[str]) -> str:
    """The name a new stage observes its metrics under: ``requested`` (``"windowing"`` by
    default), or, when an earlier observation of the query has it, ``requested`` with the
    first free suffix ``_2``, ``_3``, ... (the second stage of a query is ``windowing_2``).

    >>> stage_metrics_name("windowing", set())
    'windowing'
    >>> stage_metrics_name("windowing", {"windowing", "windowing_2", "other"})
    'windowing_3'
    """
    if requested not in taken:
        return requested
    n = 2
    while f"{requested}_{n}" in taken:
        n += 1
    return f"{requested}_{n}"


def register_stage(result: StreamingWindowedResult) -> None:
    """Remember ``result`` (observed) as a stage a later stage of its query may follow."""
    if result.metrics_name is None:
        return
    df = result.output
    jdf = getattr(df, "_jdf", None)
    if jdf is not None:  # the observation is the top of the output's plan
        top = jdf.queryExecution().logical()
        identity = int(top.dataframeId()) if str(top.nodeName()) == "CollectMetrics" else None
    else:
        plan = getattr(df, "_plan", None)
        identity = None if plan is None else id(plan)
    if identity is not None:
        _STAGES[identity] = result


def find_stages(facts: PlanFacts) -> tuple[StreamingWindowedResult, ...]:
    """The windowing stages of this process among the observations of ``facts``, the first
    stage first (a stage whose metrics are off is not observed, so not found)."""
    found = [_STAGES.get(o.identity) for o in reversed(facts.observed) if o.identity is not None]
    return tuple(dict.fromkeys(s for s in found if s is not None))


def check_later_stage(job: Job, facts: PlanFacts, allow_multiple: str | None) -> None:
    """Refuse, before the query starts, a later stage that cannot follow the stages of
    ``facts``: its own watermark delay or idle timeout (its watermark is the first stage's),
    and the refusals of :func:`check_stage_input`."""
    if job.config.idle_timeout is not None:
        msg = (
            f"idle_timeout({job.config.idle_timeout} ms): this stream is an earlier window's "
            "results, whose watermark it follows; set idle_timeout on the first stage"
        )
        raise ValueError(msg)
    check_stage_input(job.source, facts, allow_multiple)


def check_stage_input(
    source: StreamSource, facts: PlanFacts, allow_multiple: str | None, what: str = ""
) -> None:
    """Refuse, before the query starts, an input ``source`` (named ``what`` in messages: a
    join's side) that holds the results of the stages of ``facts`` and cannot follow them:
    a watermark delay of its own (its watermark is the first stage's), an earlier stage in
    ``ProcessingTime`` mode (whose results carry no watermark), a session that disallows
    several stateful operators (``allow_multiple``: the value of :data:`ALLOW_MULTIPLE`), or
    an integral event time without the unit of the earlier stage's result times
    (:func:`_check_unit`)."""
    where = f"{what}: " if what else ""
    if source.watermark.delay:
        msg = (
            f"{where}watermark={source.watermark!r}: this stream is an earlier window's "
            "results, and a later stage of a query has the first stage's watermark (Spark "
            "defines one watermark per query path; it flows through each window as in "
            "Flink): leave watermark= out"
        )
        raise ValueError(msg)
    other = [mode for mode in facts.time_modes if mode != "EventTime"]
    if other:
        msg = (
            f"{where}this stream is the results of a stage in {other[0]} mode (idle_timeout, "
            "or a processing-time window on the wall clock), which pass no watermark on: an "
            "event-time window cannot follow it in the same query"
        )
        raise ValueError(msg)
    if str(allow_multiple).strip().lower() == "false":
        msg = (
            f"{where}{ALLOW_MULTIPLE}=false: a window over an earlier window's results is a "
            "second stateful operator in the query; set it to true (Spark's default)"
        )
        raise ValueError(msg)
    _check_unit(source, find_stages(facts))


def _check_unit(source: StreamSource, upstream: tuple[StreamingWindowedResult, ...]) -> None:
    """Refuse a later stage that leaves out the unit of its integral event time after a
    stage whose result times are in another unit than milliseconds: it would read them as
    milliseconds, all far behind the first stage's watermark (every row late). A declared
    unit is taken as given (a column converted by hand)."""
    if not upstream or source.event_time_unit is not None:
        return
    layout = upstream[-1].layout
    unit = layout.time_unit
    if layout.ts_kind != "integral" or unit is TimeUnit.MILLISECONDS:
        return
    if column_time_kind(source.df, source.event_time, "event_time") != "integral":
        return
    msg = (
        f"event_time_unit: this stream is the results of an earlier window, whose times are "
        f"epoch {unit.words} (the event_time_unit={unit.value!r} of its input); read as "
        f"milliseconds, the default, column {source.event_time!r} would be far behind the "
        f"query's watermark and every row late: pass event_time_unit={unit.value!r} (or "
        "'ms' for a column converted to milliseconds)"
    )
    raise ValueError(msg)
