"""The Spark test suite: one local SparkSession for the whole session.

Every test collected here is marked ``spark``; the default run (``-m "not spark and not
slow"``) does not even import these modules, so the fast suite never imports pyspark. Run
them with ``.venv/bin/python -m pytest -q -m spark tests/spark``.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_HERE = Path(__file__).parent


def _spark_selected(config: pytest.Config) -> bool:
    """Whether the ``-m`` expression keeps some test marked ``spark``: true for ``spark``
    with some choice of the expression's other markers (``spark and slow`` as ``spark and
    not slow``; ``not spark and not slow`` never)."""
    markexpr = config.getoption("markexpr", "") or ""
    if not markexpr:
        return True
    try:
        from _pytest.mark.expression import Expression

        expression = Expression.compile(markexpr)
        words = set(re.findall(r"[A-Za-z_]\w*", markexpr))
        others = sorted(words - {"and", "or", "not", "spark"})[:8]

        def selects(marked: dict[str, bool]) -> bool:
            def matcher(name: str, /, **kwargs: str | int | bool | None) -> bool:
                return name == "spark" or marked.get(name, False)

            return bool(expression.evaluate(matcher))

        choices = itertools.product((False, True), repeat=len(others))
        return any(selects(dict(zip(others, values, strict=True))) for values in choices)
    except Exception:  # an unknown pytest internals change: collect, -m still deselects
        return True


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # Every module here imports pyspark, which --doctest-modules would import in the fast run.
    if collection_path.suffix == ".py" and collection_path.name != "conftest.py":
        return None if _spark_selected(config) else True
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("pyspark-windowing-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        # the native plans are what the .agg tests check, on inputs of any size (the rule that
        # runs small inputs in the window operator: test_agg.py::test_a_small_input_...)
        .config("spark.windowing.smallInputBytes", "0")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _planned_routes(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Records the plan of every terminal call of the test; a test marked
    ``differential(*routes)`` must run one of the routes (or columnar shapes) it names, and
    no native route it does not name (``test_routes.py`` holds every route to one)."""
    marker = request.node.get_closest_marker("differential")
    if marker is None:
        yield
        return
    from windowing.spark import run

    planned: list[Any] = []
    plan_terminal = run.plan_terminal

    def recording(terminal: Any) -> Any:
        plan = plan_terminal(terminal)
        planned.append(plan)
        return plan

    monkeypatch.setattr(run, "plan_terminal", recording)
    yield
    declared = set(marker.args)
    seen = {p.route for p in planned} | {p.columnar_shape for p in planned if p.columnar}
    assert declared & seen, f"declared {sorted(map(str, declared))}, ran {sorted(map(str, seen))}"
    undeclared = {p.route for p in planned if p.native} - declared
    assert not undeclared, f"native routes {sorted(map(str, undeclared))} not declared"


BATCH_ROWS = "spark.sql.execution.arrow.maxRecordsPerBatch"


@pytest.fixture
def small_batches(spark: SparkSession) -> Iterator[None]:
    """Record batches of 128 rows: keys and windows span batches (carried rows)."""
    previous = spark.conf.get(BATCH_ROWS)
    spark.conf.set(BATCH_ROWS, "128")
    yield
    spark.conf.set(BATCH_ROWS, previous)


@pytest.fixture
def tiny_batches(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Record batches of 7 rows, and at most 150 carried rows: a key's rows go on in the next
    batches, those of a key of more rows (hopping windows) to the operator."""
    from windowing.spark.batch import replay

    previous = spark.conf.get(BATCH_ROWS)
    spark.conf.set(BATCH_ROWS, "7")
    monkeypatch.setattr(replay, "CARRY_ROWS", 150)
    yield
    spark.conf.set(BATCH_ROWS, previous)
