"""The batch replay: each key group's rows, sorted by Spark in replay order, reach one window
operator in record batches (``groupBy(key group).applyInArrow``).

- ``replay_plan.py``: the Spark plan (key groups, the replay order, the prefix maximum of an
  arrival order), the layout of its tagged output, and :class:`WindowedResult`;
- ``replay.py``: the executor side, a key group's call: keys one after another, or whole
  columns for a built-in aggregation;
- ``replay_keys.py``: one key's replay as its record batches stream in.
"""

from windowing.spark.batch.replay_plan import (
    BatchMetrics,
    WindowedResult,
    build_layout,
    replay_order,
    run_batch,
    streams_record_batches,
)

__all__ = [
    "BatchMetrics",
    "WindowedResult",
    "build_layout",
    "replay_order",
    "run_batch",
    "streams_record_batches",
]
