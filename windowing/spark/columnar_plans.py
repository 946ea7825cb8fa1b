"""Which window shapes a built-in aggregation runs on whole columns for: tumbling windows
(:mod:`windowing.spark.columnar`), hopping windows as panes
(:mod:`windowing.spark.columnar_hopping`) and session windows as gaps and islands
(:mod:`windowing.spark.columnar_sessions`)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from windowing.assigners.hopping import HoppingEventTimeWindows
from windowing.assigners.session import EventTimeSessionWindows
from windowing.spark.columnar import (
    ColumnarAggregation,
    ColumnarPlan,
    field_aggregation_of,
)
from windowing.spark.columnar import (
    columnar_plan as tumbling_plan,
)
from windowing.spark.columnar_hopping import HoppingAggregation
from windowing.spark.columnar_sessions import SessionAggregation

__all__ = ["columnar_plan"]


def columnar_plan(
    assigner: Any,
    spec: Any,
    trigger: Any,
    evictor: Any,
    allowed_lateness: int = 0,
    input_schema: pa.Schema | None = None,
    *,
    streaming: bool = False,
    slicing: bool | None = None,
) -> ColumnarPlan | None:
    """The columnar plan of a built-in aggregation
    (:func:`~windowing.spark.columnar.field_aggregation_of`) for tumbling, hopping
    (``slide <= size``) or event-time session windows (static gap), or ``None`` when the
    operator runs the job. In ``streaming``, hopping windows with ``slicing=True`` keep the
    operator (it combines panes in time order, not in arrival order)."""
    if type(assigner) is HoppingEventTimeWindows:
        size, slide, offset = assigner.size, assigner.slide, assigner.offset
        if slide > size or (streaming and slicing is True and slide < size):
            return None
        fn = field_aggregation_of(spec, trigger, evictor, allowed_lateness, input_schema)
        if fn is None:
            return None
        assert isinstance(fn.field, str)
        if slide == size:  # tumbling windows
            return ColumnarAggregation(
                fn.aggregation, fn.field, fn.first, size, offset, allowed_lateness
            )
        return HoppingAggregation(
            fn.aggregation, fn.field, fn.first, size, slide, offset, allowed_lateness
        )
    if type(assigner) is EventTimeSessionWindows:
        fn = field_aggregation_of(spec, trigger, evictor, allowed_lateness, input_schema)
        if fn is None:
            return None
        assert isinstance(fn.field, str)
        return SessionAggregation(
            fn.aggregation, fn.field, fn.first, assigner.gap, allowed_lateness
        )
    return tumbling_plan(assigner, spec, trigger, evictor, allowed_lateness, input_schema)
