"""The planner's columnar plan of a window configuration, as the columnar tests build it:
``columnar_plan(assigner, spec, trigger, evictor, lateness, schema, streaming=...,
slicing=..., keys=...)`` (:func:`windowing.spark.planning.columnar_shape`)."""

from __future__ import annotations

from typing import Any

from windowing.job import WindowConfig
from windowing.spark.planning import columnar_shape


def columnar_plan(
    assigner: Any,
    spec: Any,
    trigger: Any,
    evictor: Any,
    lateness: int = 0,
    schema: Any = None,
    *,
    streaming: bool = False,
    slicing: bool | None = None,
    keys: tuple[str, ...] = (),
) -> Any:
    """The columnar plan of this window configuration with ``spec`` (the job's key columns
    ``keys``), or ``None``."""
    config = WindowConfig(assigner, trigger, evictor, lateness, slicing=slicing)
    return columnar_shape(config, spec, schema, streaming=streaming, keys=keys)
