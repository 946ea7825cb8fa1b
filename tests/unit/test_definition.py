"""A job's definition as plain data (``windowing.definition``): what a checkpoint records,
and which changes a restart may make."""

from __future__ import annotations

import json
from typing import Any

import pytest

from windowing.assigners import (
    DynamicEventTimeSessionWindows,
    EventTimeSessionWindows,
    TumblingEventTimeWindows,
)
from windowing.definition import STATE_PARTS, JobDefinition, describe
from windowing.evictors import CountEvictor
from windowing.triggers import AnyOf, CountTrigger, EventTimeTrigger, PurgingTrigger, Trigger


def gap_of(element: Any) -> int:
    return 10


class EveryOther(Trigger[Any, Any]):
    """A user's trigger with a plain ``__init__`` (not a dataclass)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._cache: dict[str, int] = {}

    def on_element(self, element: Any, timestamp: int, window: Any, ctx: Any) -> Any:
        raise NotImplementedError

    def on_event_time(self, time: int, window: Any, ctx: Any) -> Any:
        raise NotImplementedError

    def on_processing_time(self, time: int, window: Any, ctx: Any) -> Any:
        raise NotImplementedError

    def clear(self, window: Any, ctx: Any) -> None:
        pass


def test_describe_names_classes_and_parameters_as_json() -> None:
    described = {
        "assigner": describe(TumblingEventTimeWindows("10 seconds", offset=5)),
        "sessions": describe(DynamicEventTimeSessionWindows(gap_of)),
        "trigger": describe(AnyOf(CountTrigger(3), PurgingTrigger(EventTimeTrigger()))),
        "evictor": describe(CountEvictor(2)),
        "mine": describe(EveryOther(2)),
        "lambda": describe(lambda a, b: a + b),
    }
    assert json.loads(json.dumps(described)) == described  # plain JSON data
    assert described["assigner"]["class"] == "TumblingEventTimeWindows"
    assert described["assigner"]["size"] == 10_000 and described["assigner"]["offset"] == 5
    assert "gap_of" in json.dumps(described["sessions"])  # a function by its qualified name
    assert described["mine"] == {"class": "EveryOther", "n": 2}  # public attributes only
    assert " at 0x" not in json.dumps(described)  # nothing that differs run to run
    assert describe(TumblingEventTimeWindows(10)) == describe(TumblingEventTimeWindows(10))


def _definition(**parts: Any) -> JobDefinition:
    base: dict[str, Any] = {
        "assigner": describe(TumblingEventTimeWindows(1000)),
        "function_kind": "reduce",
        "keys": [["user", "string"]],
        "allowed_lateness": 0,
        "function": {"function": "jobs.add"},
        "side_outputs": {},
    }
    return JobDefinition(base | parts)


def test_state_shaping_changes_are_breaking_and_change_the_digest() -> None:
    old = _definition()
    for part, value in [
        ("assigner", describe(TumblingEventTimeWindows(2000))),
        ("assigner", describe(EventTimeSessionWindows(1000))),
        ("function_kind", "aggregate"),
        ("keys", [["user", "bigint"]]),
        ("allowed_lateness", 5),
        ("trigger", describe(CountTrigger(3))),
    ]:
        new = _definition(**{part: value})
        (change,) = new.changes_from(old)
        assert change.part == part and change.breaking, change
        assert new.digest != old.digest


def test_allowed_changes_are_listed_and_keep_the_digest() -> None:
    old = _definition()
    new = _definition(function={"function": "jobs.add_v2"}, side_outputs={"late": None})
    changes = new.changes_from(old)
    assert {c.part for c in changes} == {"function", "side_outputs"}
    assert not any(c.breaking for c in changes)
    assert new.digest == old.digest


def test_changes_name_before_and_after_state_parts_first() -> None:
    old = _definition()
    new = _definition(
        assigner=describe(TumblingEventTimeWindows(2000)), function={"function": "jobs.max"}
    )
    text = [str(c) for c in new.changes_from(old)]
    assert text[0].startswith("assigner: TumblingEventTimeWindows(size=1000")
    assert "-> TumblingEventTimeWindows(size=2000" in text[0]
    assert text[1] == "function: jobs.add -> jobs.max"


def test_a_definition_round_trips_through_its_record() -> None:
    d = _definition(trigger=describe(CountTrigger(3)))
    again = JobDefinition.from_json(d.to_json())
    assert again == d and again.digest == d.digest
    with pytest.raises(ValueError, match="JSON object"):
        JobDefinition.from_json("[1, 2]")


def test_the_window_function_keys_and_lateness_shape_the_state() -> None:
    for part in ("assigner", "trigger", "evictor", "function_kind", "keys", "allowed_lateness"):
        assert part in STATE_PARTS
    assert "side_outputs" not in STATE_PARTS and "function" not in STATE_PARTS


def test_an_unchanged_nan_parameter_is_no_change() -> None:
    """A parameter that does not equal itself (NaN) read back from the record is no change."""
    from windowing.triggers import DeltaTrigger

    with pytest.warns(UserWarning, match="NaN"):
        trigger = describe(DeltaTrigger(float("nan"), lambda a, b: 0.0))
    old = JobDefinition.from_json(_definition(trigger=trigger).to_json())
    assert _definition(trigger=trigger).changes_from(old) == []


def test_a_parameter_only_one_version_describes_is_no_change() -> None:
    """A newer version's class may describe a parameter more (or less): only the parameters
    both describe are compared."""
    old = _definition(assigner={"class": "TumblingEventTimeWindows", "size": 1000})
    new = _definition(
        assigner={"class": "TumblingEventTimeWindows", "size": 1000, "stagger": "ALIGNED"}
    )
    assert new.changes_from(old) == []
    other = _definition(assigner={"class": "TumblingEventTimeWindows", "size": 2000})
    assert [c.part for c in other.changes_from(old)] == ["assigner"]


def test_input_columns_shape_the_state_only_when_it_keeps_rows() -> None:
    old = _definition(input=[["a", "bigint"]], input_rows=None)
    new = _definition(input=[["a", "bigint"], ["b", "string"]], input_rows=None)
    (change,) = new.changes_from(old)
    assert change.part == "input" and not change.breaking and new.digest == old.digest
    rows = _definition(input=[["a", "bigint"], ["b", "string"]], input_rows=[["b", "string"]])
    assert [c.breaking for c in rows.changes_from(new)] == [True]
