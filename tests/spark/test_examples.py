"""Every example runs as a user runs it (``./dev example`` runs the first): as a script
(``__main__``), creating and stopping its own local Spark session; exit status 0. All of
them in one process, one after the other (each Python process with Spark costs seconds to
start)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: Runs each script given as ``__main__`` with its own ``sys.argv``, marking its end.
RUNNER = """
import runpy, sys
for path in sys.argv[1:]:
    sys.argv = [path]
    runpy.run_path(path, run_name="__main__")
    print("example done:", path, flush=True)
"""


def test_the_examples_run() -> None:
    scripts = [str(p) for p in sorted(EXAMPLES.glob("*.py"))]
    assert len(scripts) >= 4
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, *scripts],
        capture_output=True,
        text=True,
        timeout=1200,
        env=env,
        check=False,
        cwd=EXAMPLES.parent,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    finished = [
        line.split(": ", 1)[1]
        for line in done.stdout.splitlines()
        if line.startswith("example done: ")
    ]
    assert finished == scripts
