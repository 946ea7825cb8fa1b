"""The library is one namespace, ``windowing``: a user's own modules named like our subpackages
cannot shadow anything, and the common names import from ``windowing`` itself."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import windowing

ROOT = Path(__file__).resolve().parents[2]

_JOB = textwrap.dedent(
    """
    from windowing import TumblingEventTimeWindows, WindowOperator, count_window
    from windowing.stream import DataStream
    from windowing.testing import WindowOperatorHarness
    import windowing.assigners, windowing.triggers, windowing.evictors, windowing.functions

    op = WindowOperator(TumblingEventTimeWindows(10), lambda a, b: a + b)
    for ts in (1, 5, 12):
        op.process_element(1, ts, key="k")
    op.process_watermark(100)
    print(sorted((r.window.start, r.value) for r in op.output))
    """
)


def test_user_modules_named_like_subpackages_shadow_nothing(tmp_path: Path) -> None:
    for name in ("functions", "triggers", "assigners", "evictors", "operator", "stream"):
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('the user module {name}')\n")
    (tmp_path / "job.py").write_text(_JOB)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "job.py"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[(0, 2), (10, 1)]"


def test_subpackages_are_windowing_subpackages() -> None:
    from windowing import assigners, evictors, functions, triggers

    for package in (assigners, evictors, functions, triggers):
        assert package.__name__.startswith("windowing.")
    assert windowing.TumblingEventTimeWindows is assigners.TumblingEventTimeWindows
    assert windowing.EventTimeTrigger is triggers.EventTimeTrigger


def test_every_exported_name_resolves() -> None:
    missing = [name for name in windowing.__all__ if not hasattr(windowing, name)]
    assert missing == []
    assert windowing.__version__.count(".") == 2


def test_importing_any_layer_first_works() -> None:
    # No import order may fail (no lazy imports hide cycles): each module first, in a fresh
    # interpreter.
    modules = [
        "windowing.time",
        "windowing.assigners.base",
        "windowing.triggers",
        "windowing.functions.spec",
        "windowing.evictors.time",
        "windowing.operator",
        "windowing.stream",
        "windowing.testing",
    ]
    for module in modules:
        done = subprocess.run(
            [sys.executable, "-c", f"import {module}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, (module, done.stderr)
