"""The job record across versions: a columnar state shape is recorded by its name
(``tumbling``, ``hopping``, ``sessions``), a record naming it as an earlier version did (its
plan's class) describes the same state, and the digests of earlier records stay accepted
until every key group could have been written again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from windowing.definition import JobDefinition
from windowing.spark.columnar.core import ColumnarShape
from windowing.spark.io.files import Files
from windowing.spark.io.ownership import windowing_folder
from windowing.spark.streaming.checkpoint import STATE_VERSION, JobChangedError
from windowing.spark.streaming.job_record import (
    JobRecord,
    check_job,
    read_job_record,
    record_job,
    write_job_record,
)


def definition(
    columnar: str | None, *, size: int = 1_000, aggregates: Any = None, function: Any = None
) -> JobDefinition:
    parts: dict[str, Any] = {
        "function": function,
        "assigner": {"class": "TumblingEventTimeWindows", "size": size, "offset": 0},
        "function_kind": "aggregate",
        "aggregates": aggregates,
        "state_shape": {"strategy": "aligned", "columnar": columnar},
        "state_layout": STATE_VERSION,
        "windowing": "test",
    }
    return JobDefinition(parts)


def test_columnar_shapes_have_one_name_each() -> None:
    assert sorted(s.value for s in ColumnarShape) == [
        "count-trigger",
        "hopping",
        "kip450",
        "sessions",
        "tumbling",
    ]


@pytest.mark.parametrize("earlier", ["ColumnarAggregation", "TumblingAggregation", "tumbling"])
def test_a_record_naming_the_shape_as_an_earlier_version_did_is_the_same_job(
    earlier: str,
) -> None:
    assert check_job(definition("tumbling"), definition(earlier), "/chk") == []


def test_another_columnar_shape_is_still_a_breaking_change() -> None:
    with pytest.raises(JobChangedError, match=r"state_shape: .*tumbling.* -> .*hopping"):
        check_job(definition("hopping"), definition("ColumnarAggregation"), "/chk")


AGG = {"class": "ColumnAggregates", "aggregates": [{"class": "ColumnAggregate", "kind": "SUM"}]}
MAX = {"class": "ColumnAggregates", "aggregates": [{"class": "ColumnAggregate", "kind": "MAX"}]}
SUM = {"class": "FieldAggregation", "aggregation": "SUM", "field": "amount"}


@pytest.mark.parametrize("shape", ["tumbling", "hopping", "sessions", "kip450", "count-trigger"])
def test_an_agg_an_earlier_version_ran_in_the_operator_continues_on_columns(shape: str) -> None:
    """Its accumulators (per window, per session, per pane) convert to the columns: the same
    job, not a new state shape."""
    earlier = definition(None, aggregates=AGG)
    assert check_job(definition(shape, aggregates=AGG), earlier, "/chk") == []


VECTORIZED = {"class": "VectorizedAdapter", "function": {"class": "MeanVar"}}


def test_a_vectorized_aggregate_an_earlier_version_ran_in_the_operator_continues() -> None:
    """Tumbling windows, sessions and hopping panes on columns: the operator's key states
    stay entries of the operator; other shapes, or a function that is not vectorized, still
    break."""
    earlier = definition(None, function=VECTORIZED)
    for shape in ("tumbling", "sessions", "hopping"):
        assert check_job(definition(shape, function=VECTORIZED), earlier, "/chk") == []
    for now, before in [
        (definition("kip450", function=VECTORIZED), earlier),
        (definition("tumbling", function={"class": "SumAmount"}), definition(None)),
    ]:
        with pytest.raises(JobChangedError, match="state_shape"):
            check_job(now, before, "/chk")


def test_a_parameter_an_earlier_version_did_not_describe_is_no_change() -> None:
    """As every part compares: a parameter only one side names is not a change."""
    now = {**AGG, "order": None}
    assert (
        check_job(definition("tumbling", aggregates=now), definition(None, aggregates=AGG), "/chk")
        == []
    )


def test_other_changes_of_the_columnar_shape_still_break() -> None:
    """Built-in aggregations, other aggregates: the shape is the state's."""
    cases = [
        (definition("tumbling", aggregates=SUM), definition(None, aggregates=SUM)),
        (definition("tumbling", aggregates=AGG), definition(None, aggregates=MAX)),
        (definition("hopping", aggregates=SUM), definition(None, aggregates=SUM)),
    ]
    for now, earlier in cases:
        with pytest.raises(JobChangedError, match="state_shape"):
            check_job(now, earlier, "/chk")


def test_earlier_digests_stay_accepted_across_restarts(tmp_path: Path) -> None:
    """A key group keeps the digest it was written with until it is written again: the
    digest of a record an earlier version wrote is accepted on every later restart, not only
    the first."""
    files, chk = Files(None), str(tmp_path / "chk")
    (tmp_path / "chk" / "commits").mkdir(parents=True)
    (tmp_path / "chk" / "commits" / "0").write_text("v1\n")
    earlier = definition("ColumnarAggregation")
    write_job_record(files, chk, JobRecord(earlier, STATE_VERSION))
    now = definition("tumbling")
    assert now.digest != earlier.digest
    first, changes, accepted = record_job(files, chk, now)
    assert changes == [] and earlier.digest in accepted
    write_job_record(files, chk, first)
    assert Path(windowing_folder(chk), "job.json").exists()
    second, _, accepted = record_job(files, chk, now)
    assert earlier.digest in accepted
    write_job_record(files, chk, second)
    reread = read_job_record(files, chk)
    assert reread is not None and reread.earlier_digests == (earlier.digest,)
    assert reread.definition.parts == now.parts


def test_a_query_of_several_stages_records_each(tmp_path: Path) -> None:
    """Consecutive windows in one query: the record keeps every stage (the last as the job,
    as a query of one stage has it), a restart checks each stage against its own record,
    and a query with another number of stages is refused."""
    files, chk = Files(None), str(tmp_path / "chk")
    first, second = definition(None), definition(None, size=5_000)
    record, _, _ = record_job(files, chk, second, [first])
    assert record.stages[0].definition == first and record.definition == second
    assert [s.definition for s in record.all_stages] == [first, second]
    assert [record.operator_id(i) for i in range(2)] == [1, 0]  # Spark numbers from the sink
    write_job_record(files, chk, record)
    (tmp_path / "chk" / "commits").mkdir(parents=True)
    (tmp_path / "chk" / "commits" / "0").write_text("v1\n")
    reread = read_job_record(files, chk)
    assert reread is not None and reread.stages == record.stages
    again, changes, accepted = record_job(files, chk, second, [first])
    assert changes == [] and set(accepted) == {first.digest, second.digest}
    assert again.stages == record.stages
    with pytest.raises(JobChangedError, match=r"stage 1 of 2.*\n  - assigner"):
        record_job(files, chk, second, [definition(None, size=2_000)])
    with pytest.raises(
        JobChangedError, match=r"a query of 2 windowing stage\(s\), this query has 1"
    ):
        record_job(files, chk, second)


def test_a_record_of_one_stage_is_written_as_before(tmp_path: Path) -> None:
    record = JobRecord(definition(None), STATE_VERSION)
    text = record.to_json()
    assert "stages" not in json.loads(text)
    assert JobRecord.from_json(text) == record and record.operator_id(0) == 0
