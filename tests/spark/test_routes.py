"""Every route of the Spark planner, and every columnar shape in batch and in streaming, has a
differential test against the window operator: a test marked ``differential(...)`` that runs
it (the ``spark`` conftest checks that each marked test ran a route it names)."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

from windowing.spark.planning import ColumnarShape, Route


def _declared() -> dict[Any, list[str]]:
    found: dict[Any, list[str]] = {}
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        module = importlib.import_module(f"tests.spark.{path.stem}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            for mark in getattr(fn, "pytestmark", []):
                if mark.name == "differential":
                    for route in mark.args:
                        found.setdefault(route, []).append(f"{path.name}::{name}")
    return found


def test_every_route_and_columnar_shape_has_a_differential_test() -> None:
    declared = _declared()
    missing = [r for r in (*Route, *ColumnarShape) if r not in declared]
    assert not missing, f"no differential test runs {missing}"
