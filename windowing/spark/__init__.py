"""The Spark runtime adapter: the only package that imports pyspark.

* :mod:`windowing.spark.batch`: batch replay of a :class:`~windowing.stream.WindowedStream`
  over a static DataFrame (``groupBy(keys).applyInArrow``), and its
  :class:`~windowing.spark.batch.WindowedResult`.
* :mod:`windowing.spark.streaming`: the same over a streaming DataFrame
  (``transformWithStateInPandas``).
* :mod:`windowing.spark.output`: the one tagged operator output (results, side outputs, late
  rows, metrics) both runtimes build and split.
* :mod:`windowing.spark.watermark`: the arrival-order watermark, computed without moving all
  rows to one partition.
* :mod:`windowing.spark.schema`: input validation, output schemas, Arrow <-> Python values.
"""

from windowing.spark.batch import BatchMetrics, WindowedResult, run_batch

__all__ = ["BatchMetrics", "WindowedResult", "run_batch"]
