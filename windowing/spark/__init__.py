"""The Spark runtime: the only package that imports pyspark.

A terminal call of a :class:`~windowing.stream.WindowedStream` is planned once
(:mod:`~windowing.spark.planning`) and run by the runner of its route (:mod:`~windowing.spark.run`).
The folders, from the top of the imports down (``./dev lint`` enforces the order)::

    run.py        a terminal call: plan it, then the runner of its route (RUNNERS)
    planning.py   the one decision: Route, SparkPlan, the columnar shape, and why
    native/       native Spark plans of a batch .agg: Python never sees the rows
    streaming/    the streaming query: transformWithStateInPandas, its state, its sinks
    batch/        the batch replay: the window operator per key group (applyInArrow)
    columnar/     built-in aggregations on whole Arrow columns (tumbling, hopping, sessions)
    io/           files, resolved paths and the ownership of output folders
    columns/      the columns and tables every route shares: internal input columns, keys,
                  schemas, the tagged output, metrics, failures, packed frames, the
                  arrival-order watermark, .agg's compiled aggregates
    jobs.py       facts of a job the runtimes share (its operator, key groups, clocks)
"""

from windowing.spark.batch import BatchMetrics, WindowedResult, run_batch
from windowing.spark.columns.final_values import final_values

__all__ = ["BatchMetrics", "WindowedResult", "final_values", "run_batch"]
