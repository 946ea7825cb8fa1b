"""The built-in aggregations (``.sum`` / ``.min`` / ``.max`` / ``.min_by`` / ``.max_by``) on
the path they take without a native plan: computed on whole columns where the columnar path
applies, else by the window operator (tests of those paths; the suite's session plans every
batch input natively, ``spark.windowing.smallInputBytes`` = 0)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def without_native_builtins() -> Iterator[None]:
    """Terminal calls inside the block plan the built-ins without a native plan."""
    from windowing.spark import run

    def no_native_plan(job: object, fn: object) -> str:
        return "a test of the columnar and operator paths"

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run, "compile_field_aggregation", no_native_plan)
        yield
