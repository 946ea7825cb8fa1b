"""A stop during a micro-batch leaves the console quiet (``WindowedQuery.stop``,
``windowing.spark.streaming.quiet_stop``), and a real failure still reports its error.

``stop_job.py`` runs in a process and a Spark of its own at Spark's default log levels; its
standard output and standard error are read as one console, split by its markers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from windowing.spark.streaming.quiet_stop import STOP_REPORTS

pytestmark = pytest.mark.spark

JOB = Path(__file__).with_name("stop_job.py")
JAVA_FRAME = "\tat org.apache"


def between(lines: list[str], first: str, last: str) -> list[str]:
    """The lines after the marker ``first`` and before the marker ``last``."""
    return lines[lines.index(first) + 1 : lines.index(last)]


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, dict]]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env["PYTHONPATH"] = os.pathsep.join([str(JOB.parents[2]), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(JOB), str(tmp_path_factory.mktemp("stop_job"))],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one console, in order
        text=True,
        env=env,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    lines = done.stdout.splitlines()
    return lines, json.loads(lines[-1])


def test_a_stop_during_a_micro_batch_prints_at_most_one_line(
    console: tuple[list[str], dict[str, dict]],
) -> None:
    lines, out = console
    stopping = between(lines, "stop: stopping", "stop: stopped")
    assert len(stopping) <= 1, "\n".join(stopping[:40])
    assert not any(JAVA_FRAME in line for line in between(lines, "stop: started", "stop: stopped"))
    # the query was stopped in its second micro-batch, without an error
    assert out["stopped"] == {"active": False, "exception": None, "committed": ["0"]}


def test_a_failing_micro_batch_still_reports_its_error(
    console: tuple[list[str], dict[str, dict]],
) -> None:
    lines, out = console
    failing = between(lines, "stop: stopped", "fail: ended")  # it may fail before started
    reported = [line for line in failing if "the count cannot take row 107" in line]
    assert reported, "\n".join(failing[:40])
    assert any(JAVA_FRAME in line for line in failing)  # Spark's report, with its trace
    assert "the count cannot take row 107" in out["failing"]["error"]
    assert out["failing"]["active"] is False and out["failing"]["exception"] is not None


@pytest.mark.parametrize(
    ("message", "dropped"),
    [
        ("Aborting job 4645f841-711c-4a9a-9f21-ee11a37f6b3a.", True),
        ("Aborting task", True),
        (
            "Job: job_1_0003, Task: task_1_0003_m_000000, Task attempt "
            "attempt_1_0003_m_000000_3 aborted.",
            True,
        ),
        ("Incomplete task interrupted: Attempting to kill Python Worker - task 0.0", True),
        ("Lost task 0.0 in stage 3.0 (TID 3) (host executor driver): TaskKilled (Stage", True),
        ("Failed to cancel job group 41bd94cb. Cannot find active jobs for it.", True),
        ("No more data to read from the socket", True),
        ("Could not delete file:/out/_staging/batch_id=1/_temporary/0/_temporary/a", True),
        ("Lost task 0.0 in stage 3.0 (TID 3): org.apache.spark.api.python.PythonException", False),
        ("Query [id = 1, runId = 2] terminated with error", False),
        ("Exception in task 0.0 in stage 3.0 (TID 3)", False),
    ],
)
def test_the_filter_drops_the_reports_of_an_interruption_only(message: str, dropped: bool) -> None:
    """The expression log4j's filter matches (Java's ``matches``: the whole message)."""
    assert bool(re.fullmatch(STOP_REPORTS, message)) is dropped
