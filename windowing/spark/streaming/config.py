"""What the streaming processor is built with (:class:`ProcessorConfig`): the job's window and
output layout, the input's Arrow types, the time mode, the key groups and the columnar plan;
shipped to the executors with the processor."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from windowing.idleness import Idleness
from windowing.job import WindowConfig
from windowing.spark.columnar.core import ColumnarPlan
from windowing.spark.columns.output import OutputLayout

__all__ = ["ProcessorConfig"]


@dataclass(frozen=True, eq=False)
class ProcessorConfig:
    window: WindowConfig
    spec: Any
    layout: OutputLayout
    internal: tuple[str, ...]  # the internal input columns after the input columns
    input_arrow: pa.Schema
    key_arrow_types: list[pa.DataType]
    wall_clock: bool  # ProcessingTime mode: processing time is the micro-batch's clock
    key_groups: int  # the number of key groups (Spark's grouping key)
    # (mask column, the float columns of its bits): which values are NaN, not null
    nan_masks: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Built-in aggregations of tumbling, hopping or session windows computed on whole
    # columns (event time, no processing_time column); None: the operator alone.
    columnar: ColumnarPlan | None = None
    # Keys' own idle clocks (``idle_timeout``; ProcessingTime mode, event-time windows).
    idleness: Idleness | None = None
    # The digest of the job's definition, kept with the state (a restart with another job is
    # refused); None: not checked.
    job_digest: str | None = None
    # The query's accumulator of windows whose incremental result was None (a driver-side
    # warning: windowing.spark.columns.null_results); None: not reported.
    null_results: Any = None
    # A later stage of its query (its input is an earlier stage's results): a key's rows of
    # a micro-batch are taken before the watermark moves, then its due windows fire
    # (``stages.py``).
    later_stage: bool = False
    # A join with inputs that are earlier stages' results (these sides, the values of the
    # ``side`` column): their rows of a micro-batch are taken before the watermark moves,
    # then the due windows fire, then the other input's rows are taken (``joins.py``).
    later_sides: tuple[str, ...] = ()

    @functools.cached_property
    def input_table_schema(self) -> pa.Schema:
        """The Arrow schema of a key's rows: the input columns, then the internal ones."""
        return pa.schema([*self.input_arrow, *[pa.field(n, pa.int64()) for n in self.internal]])
