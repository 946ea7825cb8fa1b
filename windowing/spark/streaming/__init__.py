"""The streaming query: the window operator in ``transformWithStateInPandas``, one state value
and one timer per key group, and the sinks that publish what the checkpoint committed.

- ``query.py``: the query's plan (:func:`run_streaming`) and its result;
- ``processor.py``: the stateful processor Spark calls, a key group's call on the executors,
  composed of the parts below;
- ``config.py``: what the processor is built with (``ProcessorConfig``);
- ``clocks.py``: the micro-batch's clocks and each key's own (idle timeouts);
- ``state_io.py``: a key group's state in and out of a call (its entries, its one timer);
- ``key_calls.py``: the operator's calls, one key at a time;
- ``columnar_calls.py``: the calls on whole columns (built-in aggregations);
- ``call_output.py``: a call's tagged output (results, late rows, metrics, key columns);
- ``checkpoint.py``: a key group's state in the state store, bound to its query;
- ``job_record.py``: the job's definition kept in the checkpoint (every stage's);
- ``stages.py``: consecutive windows in one query (the earlier stages a plan holds, each
  stage's metrics name);
- ``quiet_stop.py``: a stop during a micro-batch without Spark's reports of the interrupted
  work;
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
    StreamingJob,
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
    "StreamingJob",
    "StreamingWindowedResult",
    "TableSink",
    "WindowedQuery",
    "check_sink_paths",
    "run_streaming",
    "stopped_error",
    "write_results_and_late",
]
