"""The planner's columnar plan of a window configuration, as the columnar tests build it:
``columnar_plan(assigner, spec, trigger, evictor, lateness, schema, streaming=...,
slicing=..., keys=..., folds=...)`` (:func:`windowing.spark.planning.columnar_shape`)."""

from __future__ import annotations

from typing import Any

from windowing.job import WindowConfig
from windowing.spark.columnar.row_fold import RowFold
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
    folds: bool = False,
) -> Any:
    """The columnar plan of this window configuration with ``spec`` (the job's key columns
    ``keys``), or ``None``; also ``None`` for the fold a per-row function gets in batch
    where no other plan applies (:mod:`windowing.spark.columnar.row_fold`) unless
    ``folds``."""
    config = WindowConfig(assigner, trigger, evictor, lateness, slicing=slicing)
    plan = columnar_shape(config, spec, schema, streaming=streaming, keys=keys)
    if not folds and isinstance(getattr(plan, "function", None), RowFold):
        return None
    return plan
