"""Consecutive windows in one streaming query (``windowing.spark.streaming.stages``): each
stage's metrics name, what a plan tells of earlier stages, and the later stage's checks."""

from __future__ import annotations

import pytest

from windowing.assigners import TumblingEventTimeWindows
from windowing.job import (
    BoundedOutOfOrderness,
    Job,
    MonotonousTimestamps,
    StreamSource,
    WindowConfig,
)
from windowing.spark.streaming.stages import (
    ALLOW_MULTIPLE,
    WATERMARK_COPY,
    Observed,
    PlanFacts,
    check_later_stage,
    stage_metrics_name,
)


def job(watermark: object = None, idle_timeout: int | None = None) -> Job:
    source = StreamSource(None, "at", watermark or MonotonousTimestamps())  # type: ignore[arg-type]
    config = WindowConfig(TumblingEventTimeWindows(5_000), idle_timeout=idle_timeout)
    return Job(source, None, config)


def test_each_stage_of_a_query_gets_its_own_metrics_name() -> None:
    taken: set[str] = set()
    names = []
    for _ in range(3):
        names.append(stage_metrics_name("windowing", taken))
        taken.add(names[-1])
    assert names == ["windowing", "windowing_2", "windowing_3"]
    assert stage_metrics_name("clicks", {"windowing"}) == "clicks"  # a name of the user's own
    assert stage_metrics_name("windowing", {"windowing", "windowing_3"}) == "windowing_2"


def test_a_plan_with_a_stages_watermark_is_an_earlier_stage() -> None:
    assert PlanFacts((), (WATERMARK_COPY,), ("EventTime",)).after_a_stage
    assert not PlanFacts((), ("ts",), ()).after_a_stage  # the user's own watermark
    facts = PlanFacts((Observed("windowing", 3), Observed("mine", None)))
    assert facts.metric_names == {"windowing", "mine"}


def test_a_later_stage_follows_the_first_stages_watermark() -> None:
    facts = PlanFacts((), (WATERMARK_COPY,), ("EventTime",))
    check_later_stage(job(), facts, "true")  # the default watermark: fine
    check_later_stage(job(BoundedOutOfOrderness(0)), facts, None)
    with pytest.raises(ValueError, match=r"watermark=BoundedOutOfOrderness.*leave watermark= out"):
        check_later_stage(job(BoundedOutOfOrderness(1_000)), facts, "true")
    with pytest.raises(ValueError, match=r"idle_timeout\(10000 ms\).*first stage"):
        check_later_stage(job(idle_timeout=10_000), facts, "true")
    with pytest.raises(ValueError, match=r"ProcessingTime mode .* pass no watermark on"):
        check_later_stage(job(), PlanFacts((), (WATERMARK_COPY,), ("ProcessingTime",)), "true")
    with pytest.raises(ValueError, match=rf"{ALLOW_MULTIPLE}=false"):
        check_later_stage(job(), facts, "false")
