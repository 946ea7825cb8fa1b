"""The final value of each window: the last firing among a job's result rows.

A window that fires more than once (early triggers, late rows within the allowed lateness)
gives one result row per firing; with ``.pane_info()`` each row says which firing it is
(``pane_index``: 0, 1, ...). :func:`final_values` keeps, for each key and window, the rows
of the largest ``pane_index``, from a results DataFrame or from the folder a streaming
query's results were written to.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import StructType

from windowing.spark.columns.output import col

__all__ = ["final_values"]

_LAST = "__pw_last"


def final_values(
    results: DataFrame | str | os.PathLike[str],
    keys: Sequence[str] | None = None,
    *,
    format: str = "parquet",
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """Each window's last firing: for each key and window, the result rows with the largest
    ``pane_index`` (late firings included; one row per firing, or the rows a process
    function emitted in it), all their columns kept.

    Parameters
    ----------
    results
        A static DataFrame of results built with ``.pane_info()`` (``result.results``), or
        the folder the results were written to (``write_results_and_late``'s results path,
        read with ``format`` and ``options``). Of two copies of a firing (an at-least-once
        sink writes a replayed micro-batch again), the later ``batch_id``'s.
    keys
        The key columns; by default the columns before the window's (``window_start``, or
        the ``window`` struct of ``.window_struct()``), as every result is laid out.

    Returns
    -------
    DataFrame
        The last firing's rows of each key and window, the columns of ``results``.

    Raises
    ------
    ValueError
        Without a ``pane_index`` column (the job needs ``.pane_info()``), without window
        columns, with unknown ``keys``, or for a streaming DataFrame (write it to a folder
        first). No Spark job runs.

    Notes
    -----
    The last firing is the window's value when the trigger accumulates (Flink's
    accumulating mode: every trigger that fires without purging, the default). A purging
    trigger (``PurgingTrigger``, a discarding mode) emits at each firing only the rows
    since the previous one: the last firing is then that last part, which is also what an
    upsert of the firings would keep; sum the firings to total such a window. Session
    windows merged after they fired are a new window (new bounds, panes from 0): the
    windows they absorbed keep their own last firing. A firing that emitted no row (a
    process function may) leaves the one before it as the last.

    Example::

        result = stream.key_by("user").window(TumblingEventTimeWindows("1 minute"))
                       .allowed_lateness("10 minutes").pane_info().agg(F.sum("amount"))
        final_values(result.results)          # batch: one row per user and minute
        final_values("/out/results")          # the folder of a streaming query's results
    """
    df = _read(results, format, options)
    columns = df.columns
    if "pane_index" not in columns:
        msg = (
            f"final_values: the results have no 'pane_index' column (columns {columns}); "
            "build them with .pane_info() before the terminal call, e.g. "
            "stream.key_by(...).window(...).pane_info().agg(...): it numbers each window's "
            "firings"
        )
        raise ValueError(msg)
    window = _window_columns(df)
    if keys is None:
        keys = columns[: columns.index(window[0])]
    elif isinstance(keys, str) or not all(isinstance(k, str) for k in keys):
        msg = f"final_values: keys must be a list of column names, got {keys!r}"
        raise ValueError(msg)
    else:
        unknown = [k for k in keys if k not in columns]
        if unknown:
            msg = f"final_values: unknown key columns {unknown}; the results have {columns}"
            raise ValueError(msg)
    # the firing with the largest pane index (all its rows); of two copies of it, the later
    # micro-batch's
    order = F.struct(col("pane_index"), *([col("batch_id")] if "batch_id" in columns else []))
    by_window = Window.partitionBy(*[col(c) for c in (*keys, *window)])
    return (
        df.withColumn(_LAST, F.max(order).over(by_window))
        .where(order == col(_LAST))
        .select(*[col(c) for c in columns])
    )


def _read(
    results: DataFrame | str | os.PathLike[str],
    format: str,
    options: Mapping[str, str] | None,
) -> DataFrame:
    """The results as a static DataFrame (a folder read with ``format``)."""
    if isinstance(results, DataFrame):
        if results.isStreaming:
            msg = (
                "final_values: results is a streaming DataFrame; write it with "
                "write_results_and_late(...) and pass the results folder, or apply "
                "final_values to each micro-batch in foreachBatch (docs/spark.md)"
            )
            raise ValueError(msg)
        return results
    if not isinstance(results, str | os.PathLike):
        msg = (
            "final_values: results must be a DataFrame or the path of a results folder, got "
            f"{type(results).__name__} {results!r}"
        )
        raise ValueError(msg)
    spark = SparkSession.active()
    return spark.read.format(format).options(**dict(options or {})).load(os.fspath(results))


def _window_columns(df: DataFrame) -> list[str]:
    """The window's columns: ``window_start`` and ``window_end``, or the first struct
    column with the fields ``start`` and ``end`` (``.window_struct()``)."""
    if "window_start" in df.columns and "window_end" in df.columns:
        return ["window_start", "window_end"]
    for field in df.schema.fields:
        if isinstance(field.dataType, StructType) and field.dataType.names == ["start", "end"]:
            return [field.name]
    msg = (
        "final_values: the results have no window columns (window_start and window_end, or "
        f"a window struct of start and end); columns {df.columns}"
    )
    raise ValueError(msg)
