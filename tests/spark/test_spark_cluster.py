"""A job on a multi-process cluster (``local-cluster[2,1,1024]``, started by the job itself
in ``cluster_job.py``): a user's own trigger and evictor, defined in the job's script, run
in executors that are separate JVMs and Python workers, in batch and in streaming, with the
in-memory harness's results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from windowing.assigners import TumblingEventTimeWindows
from windowing.testing import WindowOperatorHarness

pytestmark = pytest.mark.spark

JOB = Path(__file__).with_name("cluster_job.py")


def _run_job() -> dict[str, object]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env["PYTHONPATH"] = os.pathsep.join([str(JOB.parents[2]), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(JOB)], capture_output=True, text=True, env=env, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_user_trigger_and_evictor_on_a_multi_process_cluster() -> None:
    sys.path.insert(0, str(JOB.parent))
    try:
        import cluster_job as job
    finally:
        sys.path.pop(0)
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10_000),
        job.Pids(),
        trigger=job.EveryTwo(),
        evictor=job.DropSmallest(),
    )
    for user, amount, ts in job.ROWS:
        h.process_element(_Row(user, amount, ts), ts, user)
    h.process_watermark(2**62)
    want = sorted([r.key, r.window.start, r.value[0]] for r in h.extract_output())
    out = _run_job()
    assert out["batch"] == want
    assert out["streaming"] == want
    assert out["executors"] == 3  # two executors and the driver's block manager
    assert out["driver_pid"] not in out["pids"]  # the functions ran in the executors' workers


class _Row:
    def __init__(self, user: str, amount: int, ts: int) -> None:
        self.user, self.amount, self.ts = user, amount, ts
