"""The interval join on Spark (``IntervalJoined.process``): in batch, a range join or, with
an arrival order, the replay of Flink's operator per key (``batch.py``); in streaming, one
Structured Streaming query with the operator's buffers in the checkpoint (``streaming.py``);
one tagged output for both (``output.py``).

Example::

    from windowing.spark.interval_join import run_interval_join
"""

from __future__ import annotations

from typing import Any

from windowing.spark.columns.output import LATE_COLUMNS
from windowing.spark.columns.schema import column_time_kind, parse_output_schema
from windowing.spark.columns.side_outputs import check_names
from windowing.spark.interval_join.batch import IntervalJoinResult, run_batch
from windowing.spark.interval_join.output import METRIC_NAMES, IntervalBounds, IntervalJoinLayout
from windowing.spark.interval_join.streaming import StreamingIntervalJoinResult, run_streaming
from windowing.spark.joins import UNION_EVENT_TIME, TaggedUnion

__all__ = [
    "METRIC_NAMES",
    "IntervalBounds",
    "IntervalJoinLayout",
    "IntervalJoinResult",
    "StreamingIntervalJoinResult",
    "run_interval_join",
]


def run_interval_join(
    union: TaggedUnion, function: Any, output_schema: Any, bounds: IntervalBounds
) -> IntervalJoinResult | StreamingIntervalJoinResult:
    """The interval join of the tagged union's two sides with ``function`` (a
    ``ProcessJoinFunction``) and ``output_schema``; no Spark job runs here. Static inputs:
    ``batch.run_batch``; streaming ones: ``streaming.run_streaming``. Output
    columns named like the results' or the late rows' other columns are refused
    (``ValueError``)."""
    df = union.source.df
    out = parse_output_schema(output_schema, "output_schema")
    check_names([*union.keys, *out.names, "max_timestamp"], "results")
    for tag, row_type in (
        (bounds.left_late_tag, union.left_type),
        (bounds.right_late_tag, union.right_type),
    ):
        if tag is not None:
            check_names([*row_type.names, *LATE_COLUMNS], f"late side output {tag.name!r}")
    layout = IntervalJoinLayout(
        keys=union.keys,
        key_types=tuple(df.schema[k].dataType for k in union.keys),
        out=out,
        left_type=union.left_type,
        right_type=union.right_type,
        bounds=bounds,
        ts_kind=column_time_kind(df, UNION_EVENT_TIME, "event_time"),
        time_unit=union.source.event_unit,
    )
    if df.isStreaming:
        return run_streaming(union, function, layout)
    return run_batch(union, function, layout)
