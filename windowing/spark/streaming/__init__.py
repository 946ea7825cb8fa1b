"""The streaming query: the window operator in ``transformWithStateInPandas``, one state value
and one timer per key group, and the sinks that publish what the checkpoint committed.

- ``query.py``: the query's plan (:func:`run_streaming`) and its result;
- ``processor.py``: the stateful processor, a key group's call on the executors;
- ``columnar_calls.py``: the processor's calls on whole columns (built-in aggregations);
- ``key_clocks.py``: each key's clock (processing time, idle timeouts);
- ``checkpoint.py``: a key group's state in the state store, bound to its query;
- ``job_record.py``: the job's definition kept in the checkpoint;
- ``state_reader.py``: the state of a checkpoint as a DataFrame (``read_state``);
- ``sinks.py``: :func:`write_results_and_late` and its sinks (folders, tables, writers).

Example::

    from windowing.spark.streaming import FileSink, write_results_and_late
"""

from windowing.spark.streaming.query import (
    METRICS_NAME,
    ROCKSDB_PROVIDER,
    StreamingWindowedResult,
    run_streaming,
)
from windowing.spark.streaming.sinks import (
    STAGING,
    FileSink,
    FormatSink,
    QueryStoppedError,
    Sink,
    TableSink,
    WindowedQuery,
    check_sink_paths,
    stopped_error,
    write_results_and_late,
)

__all__ = [
    "METRICS_NAME",
    "ROCKSDB_PROVIDER",
    "STAGING",
    "FileSink",
    "FormatSink",
    "QueryStoppedError",
    "Sink",
    "StreamingWindowedResult",
    "TableSink",
    "WindowedQuery",
    "check_sink_paths",
    "run_streaming",
    "stopped_error",
    "write_results_and_late",
]
