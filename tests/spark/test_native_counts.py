"""Count triggers and count evictors (windowing.spark.native.counts) and continuous event-time
triggers (windowing.spark.native.continuous) as native Spark plans, against the window
operator on random data: results, pane info, late rows and metrics."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812

from tests.spark.test_agg import (
    LATE,
    SCHEMA,
    aggregates,
    arrival_rows,
    assert_same_rows,
    random_rows,
    rows_of,
)
from windowing import (
    BoundedOutOfOrderness,
    HoppingEventTimeWindows,
    TumblingEventTimeWindows,
    WindowedStream,
)
from windowing.evictors import CountEvictor, TimeEvictor
from windowing.spark.planning import Route
from windowing.time import MAX_TIMESTAMP
from windowing.triggers import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    PurgingTrigger,
)

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]


class OwnCount(CountTrigger):
    """A count trigger of the user's own: the planner runs the window operator."""


class OwnDefault(EventTimeTrigger):
    """The default trigger of the user's own."""


class OwnEvictor(CountEvictor):
    """A count evictor of the user's own."""


class OwnContinuous(ContinuousEventTimeTrigger):
    """A continuous trigger of the user's own."""


class OwnTimeEvictor(TimeEvictor):
    """A time evictor of the user's own."""


def _operator_twin(trigger: Any, evictor: Any) -> tuple[Any, Any]:
    """The same trigger and evictor as classes of the user's own (the operator runs them)."""
    if trigger is None:
        twin: Any = OwnDefault()
    elif isinstance(trigger, ContinuousEventTimeTrigger):
        twin = OwnContinuous(trigger.interval)
    elif isinstance(trigger, PurgingTrigger):
        twin = PurgingTrigger(OwnCount(trigger.trigger.max_count))
    else:
        twin = OwnCount(trigger.max_count)
    if isinstance(evictor, TimeEvictor):
        evictor = OwnTimeEvictor(evictor.window_size, evictor.do_evict_after)
    elif evictor is not None:
        evictor = OwnEvictor(evictor.max_count, evictor.do_evict_after)
    return twin, evictor


CASES = [
    # (trigger, evictor, size, keyed, lateness, extreme, pane info)
    (CountTrigger(3), None, 10, True, 5, False, True),
    (CountTrigger(3), None, 7, True, 2**62, True, False),
    (PurgingTrigger(CountTrigger(3)), None, 10, True, 2**62, True, True),
    (CountTrigger(3), CountEvictor(2), 10, False, 5, False, False),
    (CountTrigger(2), CountEvictor(5), 10, True, 2**62, True, True),
    (CountTrigger(3), CountEvictor(4, do_evict_after=True), 10, True, 5, False, False),
    (PurgingTrigger(CountTrigger(4)), CountEvictor(2), 25, True, 5, False, False),
    (
        PurgingTrigger(CountTrigger(3)),
        CountEvictor(2, do_evict_after=True),
        10,
        True,
        0,
        False,
        False,
    ),
    (None, CountEvictor(3), 10, True, 5, True, True),
    (None, CountEvictor(3, do_evict_after=True), 10, True, 5, False, False),
    (None, TimeEvictor(4), 10, True, 5, True, True),
    (None, TimeEvictor(4, do_evict_after=True), 25, False, 0, False, False),
]
IDS = [
    "count",
    "count, ends of time",
    "purging count, ends of time",
    "count, evictor keeping fewer",
    "count, evictor keeping more, ends of time",
    "count, evictor after",
    "purging count, evictor",
    "purging count, evictor after",
    "event time, evictor",
    "event time, evictor after",
    "event time, time evictor",
    "event time, time evictor after",
]

#: Cases whose shapes the others cover too (``./dev test-slow`` runs them).
_SLOW = {1, 3, 6, 9, 11}


@pytest.mark.differential(Route.NATIVE_TUMBLING_COUNTS)
@pytest.mark.parametrize(
    ("seed", "trigger", "evictor", "size", "keyed", "lateness", "extreme", "panes"),
    [
        pytest.param(seed, *case, marks=[pytest.mark.slow] if seed in _SLOW else [])
        for seed, case in enumerate(CASES)
    ],
    ids=IDS,
)
def test_count_firings_equal_the_window_operator(
    spark: SparkSession,
    seed: int,
    trigger: Any,
    evictor: Any,
    size: int,
    keyed: bool,
    lateness: int,
    extreme: bool,
    panes: bool,
) -> None:
    df = spark.createDataFrame(random_rows(seed, extreme=extreme), SCHEMA)
    assigner = TumblingEventTimeWindows(size, 2 if keyed else -5)
    setup = Setup(assigner, trigger, evictor, keyed, lateness, panes)
    native = native_equals_the_operator(df, setup, Route.NATIVE_TUMBLING_COUNTS)
    assert native.plan.route is Route.NATIVE_TUMBLING_COUNTS


@dataclass(frozen=True)
class Setup:
    """A windowed ``.agg`` job: its assigner, trigger, evictor, keys, lateness, pane info."""

    assigner: Any
    trigger: Any
    evictor: Any
    keyed: bool
    lateness: int
    panes: bool

    def agg(self, df: Any, trigger: Any, evictor: Any, columns: list[Any]) -> Any:
        source = WindowedStream.from_dataframe(df, event_time="t")
        assigner = self.assigner
        windowed = (
            source.key_by("k").window(assigner) if self.keyed else source.window_all(assigner)
        )
        windowed = windowed.allowed_lateness(self.lateness).side_output_late_data(LATE)
        if trigger is not None:
            windowed = windowed.trigger(trigger)
        if evictor is not None:
            windowed = windowed.evictor(evictor)
        return (windowed.pane_info() if self.panes else windowed).agg(*columns)


def native_equals_the_operator(df: Any, setup: Setup, route: Route) -> Any:
    """The native plan of ``setup`` on ``df`` (route ``route``) against the window operator
    running the same trigger and evictor as classes of the user's own: results, pane info,
    late rows and metrics; each window fires several times (counts) or over fewer rows than
    it has (evictors). Returns the native result."""
    trigger, evictor = setup.trigger, setup.evictor
    running = evictor is None and not isinstance(trigger, PurgingTrigger)
    columns = [c for c in aggregates() if not running or "distinct" not in repr(c)]
    native = setup.agg(df, trigger, evictor, columns)
    operator = setup.agg(df, *_operator_twin(trigger, evictor), columns)
    assert native.plan.route is route, native.plan.reason
    assert not operator.plan.native
    with native, operator:
        assert native.results.schema == operator.results.schema
        got, want = rows_of(native.results), rows_of(operator.results)
        assert_same_rows(got, want)
        assert rows_of(native.get_side_output(LATE)) == rows_of(operator.get_side_output(LATE))
        assert native.collect_metrics() == operator.collect_metrics()
    windows = {r[:3] if setup.keyed else r[:2] for r in want}
    assert len(want) > len(windows) or evictor is not None
    assert len(windows) > 3
    return native


HOPPING_CASES = [
    # (trigger, evictor, keyed, lateness, extreme, pane info)
    (CountTrigger(3), None, True, 5, False, True),
    (PurgingTrigger(CountTrigger(3)), CountEvictor(2), True, 2**62, True, False),
    (CountTrigger(2), CountEvictor(3, do_evict_after=True), False, 0, False, False),
    (None, CountEvictor(3), True, 5, True, True),
    (None, TimeEvictor(4), True, 0, False, False),
]


@pytest.mark.differential(Route.NATIVE_HOPPING_COUNTS)
@pytest.mark.parametrize(
    ("trigger", "evictor", "keyed", "lateness", "extreme", "panes"),
    HOPPING_CASES,
    ids=[
        "count",
        "purging count, evictor, ends of time",
        "count, evictor after, window_all",
        "event time, evictor, ends of time",
        "event time, time evictor",
    ],
)
def test_count_firings_of_hopping_windows_equal_the_window_operator(
    spark: SparkSession,
    trigger: Any,
    evictor: Any,
    keyed: bool,
    lateness: int,
    extreme: bool,
    panes: bool,
) -> None:
    """Hopping windows (10 every 4, offset 1): each row copied into its windows, then the
    firings of tumbling windows; the results, pane info, late rows and metrics equal the
    window operator's, at the ends of time too."""
    df = spark.createDataFrame(random_rows(7, extreme=extreme), SCHEMA)
    setup = Setup(HoppingEventTimeWindows(10, 4, 1), trigger, evictor, keyed, lateness, panes)
    native = native_equals_the_operator(df, setup, Route.NATIVE_HOPPING_COUNTS)
    assert "copied into the windows holding it (up to 3" in native.plan.reason


def test_count_plans_name_their_firings_and_leave_the_rest_to_the_operator(
    spark: SparkSession,
) -> None:
    df = spark.createDataFrame(random_rows(1, n=40), SCHEMA)
    windowed = WindowedStream.from_dataframe(df, event_time="t").key_by("k")
    tumbling = windowed.window(TumblingEventTimeWindows(10))
    plan = tumbling.trigger(CountTrigger(100)).agg(F.sum("i")).plan
    assert plan.route is Route.NATIVE_TUMBLING_COUNTS
    assert "a firing at every 100th row of a window" in plan.reason
    assert "running window aggregates" in plan.reason
    evicting = tumbling.evictor(CountEvictor(10)).agg(F.sum("i")).plan
    assert "the last 10 of them kept first" in evicting.reason
    assert "ranked from the last" in evicting.reason
    assert (
        "grouped into the firings"
        in tumbling.trigger(CountTrigger(5)).evictor(CountEvictor(2)).agg(F.sum("i")).plan.reason
    )
    # DISTINCT has no running window function; a user's own trigger, a session, an
    # evictor keeping nothing: the window operator
    assert not tumbling.trigger(CountTrigger(3)).agg(F.count_distinct("i")).plan.native
    assert tumbling.trigger(PurgingTrigger(CountTrigger(3))).agg(F.count_distinct("i")).plan.native
    assert not tumbling.trigger(OwnCount(3)).agg(F.sum("i")).plan.native
    # an evictor keeping many more rows than the count: a row in over 64 firings
    assert tumbling.trigger(CountTrigger(2)).evictor(CountEvictor(128)).agg(F.sum("i")).plan.native
    assert (
        not tumbling.trigger(CountTrigger(1)).evictor(CountEvictor(65)).agg(F.sum("i")).plan.native
    )
    with pytest.warns(UserWarning, match="evicts every element"):
        nothing = CountEvictor(0)
    assert not tumbling.evictor(nothing).agg(F.sum("i")).plan.native
    # a time evictor: with the event-time trigger only (one firing over a suffix)
    assert tumbling.evictor(TimeEvictor(5)).agg(F.sum("i")).plan.native
    assert not tumbling.trigger(CountTrigger(3)).evictor(TimeEvictor(5)).agg(F.sum("i")).plan.native
    arrival = WindowedStream.from_dataframe(df, event_time="t", arrival_order="i").key_by("k")
    in_arrival = arrival.window(TumblingEventTimeWindows(10))
    assert in_arrival.trigger(CountTrigger(3)).agg(F.sum("i")).plan.native
    # the event-time trigger's firings in arrival order (on time, then per late row)
    assert not in_arrival.evictor(CountEvictor(3)).agg(F.sum("i")).plan.native
    # hopping windows: in event-time order, overlapping or not, without gaps or a window
    # behind the first watermark
    hopping = windowed.window(HoppingEventTimeWindows(10, 5)).trigger(CountTrigger(3))
    assert hopping.agg(F.sum("i")).plan.route is Route.NATIVE_HOPPING_COUNTS
    gaps = windowed.window(HoppingEventTimeWindows(5, 10)).trigger(CountTrigger(3))
    assert not gaps.agg(F.sum("i")).plan.native
    at_min = windowed.window(HoppingEventTimeWindows(9, 4)).trigger(CountTrigger(3))
    assert not at_min.agg(F.sum("i")).plan.native  # a window ends at MIN_TIMESTAMP + 1
    in_order = arrival.window(HoppingEventTimeWindows(10, 5)).trigger(CountTrigger(3))
    assert not in_order.agg(F.sum("i")).plan.native
    # a size past a bigint (the pane grid's arithmetic is in bigint): the operator
    huge = windowed.window(HoppingEventTimeWindows(2**63, 2**62))
    assert not huge.trigger(CountTrigger(3)).agg(F.sum("i")).plan.native
    assert not huge.agg(F.sum("i")).plan.native


@pytest.mark.differential(
    Route.NATIVE_TUMBLING_COUNTS, Route.NATIVE_TUMBLING_CONTINUOUS, Route.NATIVE_HOPPING_COUNTS
)
@pytest.mark.parametrize(
    ("trigger", "evictor"),
    [
        (CountTrigger(3), None),
        (PurgingTrigger(CountTrigger(2)), CountEvictor(1)),
        (ContinuousEventTimeTrigger(4), None),
        (CountTrigger(2), CountEvictor(3)),
    ],
    ids=["count", "purging count, evictor", "continuous", "hopping, count, evictor"],
)
def test_built_in_aggregations_with_counts_equal_the_window_operator(
    spark: SparkSession, trigger: Any, evictor: Any
) -> None:
    """Flink's rows: the first row of what fired, with the field replaced (``sum``), or the
    row holding the largest value (``max_by``); tumbling windows, and hopping ones (the
    last case)."""
    df = spark.createDataFrame(random_rows(21), SCHEMA).drop("d")
    source = WindowedStream.from_dataframe(df, event_time="t")
    hopping = isinstance(evictor, CountEvictor) and evictor.max_count == 3
    assigner = HoppingEventTimeWindows(10, 5) if hopping else TumblingEventTimeWindows(10)

    def stream(trigger: Any, evictor: Any) -> Any:
        windowed = source.key_by("k").window(assigner).trigger(trigger)
        return windowed if evictor is None else windowed.evictor(evictor)

    routes = (
        Route.NATIVE_TUMBLING_COUNTS,
        Route.NATIVE_TUMBLING_CONTINUOUS,
        Route.NATIVE_HOPPING_COUNTS,
    )
    for built_in in ("sum", "max_by"):
        native = getattr(stream(trigger, evictor), built_in)("i")
        operator = getattr(stream(*_operator_twin(trigger, evictor)), built_in)("i")
        assert native.plan.route in routes
        assert not operator.plan.native
        want = rows_of(operator.results)
        assert rows_of(native.results) == want
        assert native.collect_metrics() == operator.collect_metrics()
        assert len(want) > 20


@pytest.mark.differential(Route.NATIVE_TUMBLING_COUNTS)
@pytest.mark.parametrize(
    ("seed", "trigger", "evictor", "lateness", "delay"),
    [
        (31, CountTrigger(3), None, 10, 2),
        (32, PurgingTrigger(CountTrigger(2)), CountEvictor(3, do_evict_after=True), 0, 5),
        pytest.param(33, CountTrigger(2), CountEvictor(3), 2**62, 0, marks=pytest.mark.slow),
    ],
    ids=["count, lateness", "purging count, evictor after, no lateness", "count, evictor"],
)
def test_count_triggers_in_arrival_order_equal_the_window_operator(
    spark: SparkSession, seed: int, trigger: Any, evictor: Any, lateness: int, delay: int
) -> None:
    """Rows in arrival order: late rows (past their window's cleanup time) are never added;
    the others fire by count, EARLY before the watermark passed their window's end, LATE
    after."""
    df = spark.createDataFrame(arrival_rows(seed), SCHEMA + ", a long")
    source = WindowedStream.from_dataframe(
        df, event_time="t", arrival_order="a", watermark=BoundedOutOfOrderness(delay)
    )

    def stream(trigger: Any, evictor: Any) -> Any:
        windowed = (
            source.key_by("k")
            .window(TumblingEventTimeWindows(10, 2))
            .allowed_lateness(lateness)
            .side_output_late_data(LATE)
            .pane_info()
            .trigger(trigger)
        )
        return windowed if evictor is None else windowed.evictor(evictor)

    columns = [c for c in aggregates() if "distinct" not in repr(c)]
    native = stream(trigger, evictor).agg(*columns)
    operator = stream(*_operator_twin(trigger, evictor)).agg(*columns)
    assert native.plan.route is Route.NATIVE_TUMBLING_COUNTS, native.plan.reason
    # persisted: the cutoffs, the late rows, the results, the counters and the firings'
    # count per window (the metrics read none of the input again)
    assert len(native.cached_parts()) == 5
    with native, operator:
        want = rows_of(operator.results)
        assert_same_rows(rows_of(native.results), want)
        assert native.collect_metrics() == operator.collect_metrics()
        late = rows_of(operator.get_side_output(LATE))
        assert rows_of(native.get_side_output(LATE)) == late
    timings = {r[-1] for r in want}
    assert "EARLY" in timings
    assert "LATE" in timings or lateness == 0
    assert any(r[-1] == "late" for r in late) or lateness > 100


@pytest.mark.differential(Route.NATIVE_TUMBLING_COUNTS)
def test_a_window_a_purging_trigger_emptied_is_not_left_at_the_end(spark: SparkSession) -> None:
    """Windows whose cleanup time saturates keep their contents at the end, but a purging
    count trigger empties a window at its last row when its rows are a multiple of the
    count: only key b's window (3 rows, count 2) is left."""
    rows = [("a", MAX_TIMESTAMP - 1, 1), ("a", MAX_TIMESTAMP - 1, 2)]
    rows += [("b", MAX_TIMESTAMP - 1, 1), ("b", MAX_TIMESTAMP - 2, 2), ("b", MAX_TIMESTAMP, 3)]
    df = spark.createDataFrame(rows, "k string, t long, i int")

    def result(trigger: Any) -> Any:
        windowed = WindowedStream.from_dataframe(df, event_time="t").key_by("k")
        return windowed.window(TumblingEventTimeWindows(10)).trigger(trigger).agg(F.sum("i"))

    native = result(PurgingTrigger(CountTrigger(2)))
    operator = result(PurgingTrigger(OwnCount(2)))
    assert native.plan.route is Route.NATIVE_TUMBLING_COUNTS
    assert native.collect_metrics() == operator.collect_metrics()
    assert native.collect_metrics().num_windows_left_at_end == 1
    assert sorted(r[-2] for r in native.results.collect()) == [3, 3]


@pytest.mark.differential(Route.NATIVE_TUMBLING_CONTINUOUS, Route.NATIVE_HOPPING_CONTINUOUS)
@pytest.mark.parametrize(
    ("seed", "size", "interval", "lateness", "extreme", "slide"),
    [
        (41, 10, 3, 5, False, None),
        (42, 25, 7, 2**62, True, None),
        (43, 10, 20, 0, True, None),
        (44, 10, 3, 5, True, 4),
    ],
    ids=[
        "interval 3",
        "interval 7, ends of time",
        "interval past the window",
        "hopping, interval 3, ends of time",
    ],
)
def test_continuous_event_time_firings_equal_the_window_operator(
    spark: SparkSession,
    seed: int,
    size: int,
    interval: int,
    lateness: int,
    extreme: bool,
    slide: int | None,
) -> None:
    """Every timer fires at the end of input, each time over all the window's rows: EARLY at
    the interval boundaries from the first after its earliest row (Java's %: negative times
    round toward zero), ON_TIME at its max timestamp; tumbling windows, and hopping ones
    (``slide``: each row first copied into its windows)."""
    df = spark.createDataFrame(random_rows(seed, extreme=extreme), SCHEMA)
    assigner: Any = (
        TumblingEventTimeWindows(size, 2)
        if slide is None
        else HoppingEventTimeWindows(size, slide, 1)
    )

    def result(trigger: Any) -> Any:
        windowed = WindowedStream.from_dataframe(df, event_time="t").key_by("k")
        windows = windowed.window(assigner).allowed_lateness(lateness)
        stream = windows.side_output_late_data(LATE).pane_info().trigger(trigger)
        return stream.agg(*aggregates())

    native = result(ContinuousEventTimeTrigger(interval))
    operator = result(OwnContinuous(interval))
    route = Route.NATIVE_TUMBLING_CONTINUOUS if slide is None else Route.NATIVE_HOPPING_CONTINUOUS
    assert native.plan.route is route, native.plan.reason
    with native, operator:
        want = rows_of(operator.results)
        assert_same_rows(rows_of(native.results), want)
        assert native.collect_metrics() == operator.collect_metrics()
        assert rows_of(native.get_side_output(LATE)) == rows_of(operator.get_side_output(LATE))
    timings = [r[-1] for r in want]
    assert timings.count("ON_TIME") < len(timings)
    assert "EARLY" in timings or interval > size


def test_continuous_triggers_the_native_plan_leaves_to_the_operator(spark: SparkSession) -> None:
    df = spark.createDataFrame(random_rows(1, n=40), SCHEMA)
    keyed = WindowedStream.from_dataframe(df, event_time="t").key_by("k")
    minute = keyed.window(TumblingEventTimeWindows(60_000))
    assert minute.trigger(ContinuousEventTimeTrigger(1)).agg(F.sum("i")).plan.native
    # over 100,000 firings a window; an evictor; a purge at every firing
    long = keyed.window(TumblingEventTimeWindows(10**6)).trigger(ContinuousEventTimeTrigger(1))
    assert not long.agg(F.sum("i")).plan.native
    with_evictor = minute.trigger(ContinuousEventTimeTrigger(10)).evictor(CountEvictor(2))
    assert not with_evictor.agg(F.sum("i")).plan.native
    purging = PurgingTrigger(ContinuousEventTimeTrigger(10))
    assert not minute.trigger(purging).agg(F.sum("i")).plan.native
