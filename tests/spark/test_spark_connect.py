"""Spark Connect: the same jobs through ``SparkSession.builder.remote("local[2]")`` (run in a
process of its own: ``connect_job.py``) give the classic session's results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

JOB = Path(__file__).with_name("connect_job.py")


def test_jobs_through_spark_connect() -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env["PYTHONPATH"] = os.pathsep.join([str(JOB.parents[2]), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(JOB)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["session"] == "pyspark.sql.connect.session"
    # arrival order: ("b", ts 12_000, seq 2) moves the watermark to 11_999, so ("a", ts 500,
    # seq 3) arrives after its window closed: late (no allowed lateness)
    assert out["agg"] == [["a", 0, 3], ["b", 10_000, 3]]
    assert out["reduce"] == out["agg"]
    assert out["late"] == [["a", 3]]
    # the pandas UDF's function, read from the Connect column, over each window's rows
    assert out["pandas_udf"] == [["a", 1.5, 2], ["b", 3.0, 1]]
    assert out["pandas_udf_late"] == [["a", 3]]
    # streaming: the four rows are one micro-batch, read before any watermark; the next
    # (watermark 11_999) fires a's window, b's stays open (no end of input in streaming)
    assert out["streaming"] == [["a", 0, 7]]
