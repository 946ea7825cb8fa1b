"""One test per transcript spec and executor (Beam's transcript tests, pytest-parametrized).

Specs live in ``tests/transcripts/*.yaml``; the format is described in ``runner.py``. Set
``TRANSCRIPT_SEED`` to replay the shuffles of a failed run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from runner import (
    EXECUTORS,
    REGISTRY,
    SpecError,
    TranscriptMismatchError,
    concrete_evictors,
    load_specs,
    parse_expression,
    run_spec,
    shuffle_seed,
)

from windowing import assigners, triggers
from windowing.time import MAX_TIMESTAMP

SPECS = load_specs()

# Spark executors join EXECUTORS later; their tests need a SparkSession.
EXECUTOR_PARAMS = [
    pytest.param(name, id=name, marks=[pytest.mark.spark] if name.startswith("spark") else [])
    for name in EXECUTORS
]


@pytest.mark.parametrize("executor_name", EXECUTOR_PARAMS)
@pytest.mark.parametrize("spec", SPECS, ids=[s["name"] for s in SPECS])
def test_transcript(spec: dict[str, Any], executor_name: str) -> None:
    if "evictor" in spec and not concrete_evictors():
        pytest.skip("no evictor implementations exist yet")
    executor = EXECUTORS[executor_name]
    seed = shuffle_seed()
    print(f"{spec['_file']}: {spec['name']} on {executor_name}; reproduce with seed: {seed}")
    if executor_name in spec.get("broken_on", []):
        try:
            run_spec(spec, executor, seed)
        except Exception as exc:
            pytest.xfail(f"broken_on {executor_name}: {exc}")
        pytest.fail(f"{spec['name']} passes on {executor_name}: remove it from broken_on")
    run_spec(spec, executor, seed)


def test_specs_cover_the_families() -> None:
    positive = [s for s in SPECS if "error" not in s]
    negative = [s for s in SPECS if "error" in s]
    assert len(positive) >= 15 and len(negative) >= 5
    assigner_names = {s["assigner"].split("(")[0] for s in positive}
    assert {
        "TumblingEventTimeWindows",
        "HoppingEventTimeWindows",
        "EventTimeSessionWindows",
        "GlobalWindows",
        "TumblingProcessingTimeWindows",
    } <= assigner_names
    assert {s["function"] for s in positive} == {"sum", "count", "collect", "min"}
    assert any(s.get("order_agnostic") for s in positive)
    assert any(s.get("late_output") for s in positive)


def test_registry_holds_every_assigner_and_trigger() -> None:
    assert set(assigners.__all__) | set(triggers.__all__) <= set(REGISTRY)
    assert parse_expression("MAX_TIMESTAMP") == MAX_TIMESTAMP
    assert parse_expression("PurgingTrigger(CountTrigger(max_count=2))") == (
        triggers.PurgingTrigger(triggers.CountTrigger(2))
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("open('/etc/passwd')", "unknown name 'open'", id="builtin"),
        pytest.param("CountTrigger(**{'max_count': 1})", r"\*\*kwargs", id="double-star"),
        pytest.param("[GlobalWindows()]", "List is not allowed", id="list"),
        pytest.param("-'x'", "unary minus needs a number", id="minus-str"),
        pytest.param("not 1", "UnaryOp is not allowed", id="not"),
        pytest.param("CountTrigger(", "cannot parse expression", id="syntax"),
    ],
)
def test_parser_rejects(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_expression(text)


def test_load_specs_rejects_duplicates_and_unknown_keys(tmp_path: Path) -> None:
    spec = "name: a\nassigner: GlobalWindows()\nfunction: sum\ntranscript: [{input: [1]}]\n"
    (tmp_path / "x.yaml").write_text(f"{spec}---\n{spec}")
    with pytest.raises(SpecError, match="duplicate spec name 'a'"):
        load_specs(tmp_path)
    (tmp_path / "x.yaml").write_text(spec + "expected_output: []\n")
    with pytest.raises(SpecError, match="unknown keys"):
        load_specs(tmp_path)


def test_negative_spec_that_passes_is_reported() -> None:
    spec = {
        "name": "passes",
        "assigner": "GlobalWindows()",
        "function": "sum",
        "error": "anything",
        "transcript": [{"input": [1]}],
    }
    with pytest.raises(TranscriptMismatchError, match="passed, but should fail"):
        run_spec(spec, EXECUTORS["memory"], seed=0)
