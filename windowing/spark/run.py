"""Running a terminal call on Spark: the job is planned once
(:func:`~windowing.spark.planning.plan_spark`), and :data:`RUNNERS`, a table from route to
runner, builds the Spark plan of that route. No Spark job runs here: the result's DataFrames
are lazy."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from windowing.functions.aggregations import FieldAggregation
from windowing.functions.spec import Reduce, WindowFunctionSpec
from windowing.job import Job
from windowing.records import OutputTag
from windowing.spark.batch.replay_plan import WindowedResult, build_layout, run_batch
from windowing.spark.columns.aggregates import CompiledAggregates
from windowing.spark.columns.field_aggregates import compile_field_aggregation, describe
from windowing.spark.jobs import without_call_sites
from windowing.spark.native.hopping import disjoint_parts, hopping_parts
from windowing.spark.native.processing import processing_time_parts
from windowing.spark.native.sliding import run_sliding
from windowing.spark.native.window_join import JoinSelect, run_window_join
from windowing.spark.native.windows import (
    PartsBuilder,
    arrival_order_parts,
    count_parts,
    event_time_parts,
    hopping_arrival_parts,
    run_native,
)
from windowing.spark.planning import Route, SparkPlan, as_tumbling, plan_spark, plan_window_join
from windowing.spark.streaming.query import run_streaming

__all__ = ["RUNNERS", "Terminal", "plan_function", "plan_terminal", "run_terminal"]


@dataclass(frozen=True, eq=False)
class Terminal:
    """A terminal call: the job the window operator would run, its function and output
    schemas; for ``WindowedStream.agg``, the compiled aggregates (whose job carries their
    argument columns) and the user's own job (which a native plan reads); for a built-in
    aggregation (``.sum`` ...), its reduce, and in batch its aggregate calls with how they
    compute it (``computes``) or why it has no native plan (``why_not_native``)."""

    job: Job
    spec: WindowFunctionSpec | None
    output_schema: Any = None
    side_output_schemas: Mapping[OutputTag, Any] | None = None
    aggregates: CompiledAggregates | None = None
    user_job: Job | None = None
    computes: str | None = None
    why_not_native: str | None = None
    join_select: JoinSelect | None = None

    @classmethod
    def of_aggregates(cls, compiled: CompiledAggregates, user_job: Job) -> Terminal:
        spec = None if compiled.function is None else compiled.spec
        return cls(compiled.job, spec, compiled.schema, None, compiled, user_job)

    @classmethod
    def of_field_aggregation(cls, job: Job, fn: FieldAggregation) -> Terminal:
        """A built-in aggregation: the window operator's reduce (or its columnar form), and
        in batch its aggregate calls for a native plan
        (:func:`~windowing.spark.columns.field_aggregates.compile_field_aggregation`)."""
        spec = Reduce(fn)
        if job.source.df.isStreaming:
            return cls(job, spec)
        compiled = compile_field_aggregation(job, fn)
        if isinstance(compiled, str):
            return cls(job, spec, why_not_native=compiled)
        build_layout(job, spec, None, None)  # the reduce's checks, whichever path runs
        return cls(job, spec, None, None, compiled, job, computes=describe(job, fn))


def plan_terminal(terminal: Terminal) -> SparkPlan:
    """The plan of a terminal call (the one decision: :func:`plan_spark`, or for a window
    join's ``select`` :func:`~windowing.spark.planning.plan_window_join`)."""
    if terminal.join_select is not None:
        assert terminal.spec is not None  # the operator's join function
        return plan_window_join(terminal.job, terminal.spec)
    compiled = terminal.aggregates
    calls, why_no_spec = (None, None) if compiled is None else (compiled.calls, compiled.why_not)
    return plan_spark(
        terminal.job,
        terminal.spec,
        calls,
        native_job=terminal.user_job,
        why_no_spec=why_no_spec,
        computes=terminal.computes,
        why_not_native=terminal.why_not_native,
    )


def plan_function(job: Job, spec: WindowFunctionSpec) -> SparkPlan:
    """The plan of a terminal call of ``job`` with ``spec`` (``WindowedStream.plan``): a
    built-in aggregation's as its builder method (``.sum`` ...) plans it."""
    fn = spec.function if isinstance(spec, Reduce) and spec.window_function is None else None
    if (
        type(fn) is FieldAggregation
        and fn.field in job.source.df.columns
        and fn.field not in (job.keys or ())
    ):
        return plan_terminal(Terminal.of_field_aggregation(job, fn))
    return plan_spark(job, spec)


def _native(parts_of: PartsBuilder) -> Callable[[SparkPlan, Terminal], Any]:
    def run(plan: SparkPlan, terminal: Terminal) -> Any:
        assert terminal.aggregates is not None and terminal.user_job is not None
        return run_native(plan, terminal.aggregates, as_tumbling(terminal.user_job), parts_of)

    return run


def _kip450(*, framed: bool) -> Callable[[SparkPlan, Terminal], Any]:
    def run(plan: SparkPlan, terminal: Terminal) -> Any:
        assert terminal.aggregates is not None and terminal.user_job is not None
        return run_sliding(plan, terminal.aggregates, terminal.user_job, framed=framed)

    return run


def _window_join(plan: SparkPlan, terminal: Terminal) -> Any:
    assert terminal.join_select is not None
    return run_window_join(plan, terminal.job, terminal.join_select)


def _batch(plan: SparkPlan, terminal: Terminal) -> Any:
    t = terminal
    assert t.spec is not None  # the planner chose the operator
    return run_batch(plan, t.job, t.spec, t.output_schema, t.side_output_schemas)


def _streaming(plan: SparkPlan, terminal: Terminal) -> Any:
    t = terminal
    assert t.spec is not None  # the planner chose the operator
    return run_streaming(plan, t.job, t.spec, t.output_schema, t.side_output_schemas)


#: The runner of each route: it builds the Spark plan of the route it is given.
RUNNERS: dict[Route, Callable[[SparkPlan, Terminal], Any]] = {
    Route.NATIVE_TUMBLING: _native(event_time_parts),
    Route.NATIVE_TUMBLING_ARRIVAL: _native(arrival_order_parts),
    Route.NATIVE_TUMBLING_PROCESSING: _native(processing_time_parts),
    Route.NATIVE_TUMBLING_COUNTS: _native(count_parts),
    Route.NATIVE_HOPPING_COUNTS: _native(count_parts),
    Route.NATIVE_HOPPING_CONTINUOUS: _native(event_time_parts),
    Route.NATIVE_TUMBLING_CONTINUOUS: _native(event_time_parts),
    Route.NATIVE_SESSIONS: _native(event_time_parts),
    Route.NATIVE_HOPPING: _native(hopping_parts),
    Route.NATIVE_HOPPING_DISJOINT: _native(disjoint_parts),
    Route.NATIVE_HOPPING_ARRIVAL: _native(hopping_arrival_parts),
    Route.NATIVE_KIP450: _kip450(framed=True),
    Route.NATIVE_KIP450_JOINED: _kip450(framed=False),
    Route.NATIVE_WINDOW_JOIN: _window_join,
    Route.BATCH_REPLAY: _batch,
    Route.STREAMING: _streaming,
}


def run_terminal(terminal: Terminal) -> Any:
    """Plan ``terminal`` once and build the Spark plan of its route (a
    ``WindowedResult``, or a ``StreamingWindowedResult`` for a streaming DataFrame)."""
    with without_call_sites():  # (the plan's columns are the library's, not the user's)
        plan = plan_terminal(terminal)
        result = RUNNERS[plan.route](plan, terminal)
        select = terminal.join_select
        if select is None or plan.route.native:
            return result
        # the operator gave each pair as (left, right): the selected columns in their place
        if isinstance(result, WindowedResult):
            return dataclasses.replace(result, built_results=select.project(result.results))
        return dataclasses.replace(result, project=select.project)
