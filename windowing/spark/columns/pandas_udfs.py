"""Spark's grouped-aggregate pandas UDFs in ``WindowedStream.agg``.

A ``@pandas_udf`` taking ``pandas.Series`` and returning a scalar is an aggregate function to
Spark (``PythonEvalType.SQL_GROUPED_AGG_PANDAS_UDF``). In ``.agg`` it runs:

* natively, in Spark's own ``groupBy(keys, window).agg(...)``, where every aggregate of the
  job is such a UDF and the job is a native tumbling (or non-overlapping hopping) plan with
  the default trigger (Spark cannot mix them with its other aggregates in one ``agg``);
* everywhere else in the window operator (:class:`~windowing.functions.columns.ColumnAggregate`
  of kind ``PANDAS_UDF``): once per firing, on the window's argument values as ``pandas``
  Series in the replay order (event time, then arrival order, then the row's content),
  converted by pyspark's own conversions as Spark's Python worker converts them, with the
  session's settings (integers with nulls as floats with ``NaN``, timestamps as naive times
  in the session time zone, ...), and its value converted back the same way.

``windowing.spark.columns.aggregates`` reads such a UDF out of a classic PySpark column (its
pickled function, as Spark ships it to the workers) or a Spark Connect column (the function
the client pickles for the server).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import DataType, StructField, StructType

from windowing.spark.columns.schema import arrow_to_python

try:  # (pyspark's own conversions of its Python worker, in pyspark.sql.conversion since 4.1)
    from pyspark.sql.conversion import ArrowBatchTransformer, PandasToArrowConversion
except ImportError:  # pragma: no cover - an older pyspark: pandas UDFs run natively only
    ArrowBatchTransformer = PandasToArrowConversion = None

__all__ = ["CONVERTS", "GROUPED_AGG", "PandasAggregate", "PandasConf"]

#: ``PythonEvalType.SQL_GROUPED_AGG_PANDAS_UDF``.
GROUPED_AGG = 202

#: Whether this pyspark has its worker's conversions for the window operator to call.
CONVERTS = ArrowBatchTransformer is not None


@dataclass(frozen=True)
class PandasConf:
    """The session's settings of the conversions to and from pandas (read on the driver, as
    Spark hands them to its Python workers)."""

    timezone: str = "UTC"
    safecheck: bool = True
    prefer_int_ext_dtype: bool = False
    large_var_types: bool = False
    int_to_decimal: bool = False

    @classmethod
    def of(cls, spark: SparkSession) -> PandasConf:
        def flag(name: str) -> bool:
            try:  # (the setting's value, or Spark's default for it)
                return (spark.conf.get(name) or "false").lower() == "true"
            except PySparkException:  # (a setting this Spark does not know)
                return False

        return cls(
            spark.conf.get("spark.sql.session.timeZone") or "UTC",
            flag("spark.sql.execution.pandas.convertToArrowArraySafely"),
            flag("spark.sql.execution.pythonUDF.pandas.preferIntExtensionDtype"),
            flag("spark.sql.execution.arrow.useLargeVarTypes"),
            flag("spark.sql.execution.pythonUDF.pandas.intToDecimalCoercionEnabled"),
        )


@dataclass(frozen=True)
class PandasAggregate:
    """A grouped-aggregate pandas UDF's function as the window operator calls it: with the
    rows (tuples of argument values) of one firing, giving the value. Its arguments become
    Series and its value a column value through pyspark's own conversions, with the
    session's settings, as in Spark's Python worker.

    Examples
    --------
    >>> from pyspark.sql.types import DoubleType, LongType
    >>> mean = PandasAggregate(lambda v: v.mean(), (LongType(),), DoubleType(), PandasConf())
    >>> mean([(1,), (None,), (4,)])
    2.5
    """

    function: Callable[..., Any]
    arg_types: tuple[DataType, ...]
    result_type: DataType
    conf: PandasConf

    def __call__(self, rows: list[tuple[Any, ...]]) -> Any:
        conf = self.conf
        columns = list(zip(*rows, strict=True)) if rows else [()] * len(self.arg_types)
        arrays = [
            pa.array(list(values), type=to_arrow_type(dtype, timezone=conf.timezone))
            for values, dtype in zip(columns, self.arg_types, strict=True)
        ]
        table = pa.Table.from_arrays(arrays, names=[f"_{i}" for i in range(len(arrays))])
        series = ArrowBatchTransformer.to_pandas(
            table, timezone=conf.timezone, prefer_int_ext_dtype=conf.prefer_int_ext_dtype
        )
        value = self.function(*series)
        batch = PandasToArrowConversion.convert(
            [pd.Series([value])],
            StructType([StructField("_0", self.result_type)]),
            timezone=conf.timezone,
            safecheck=conf.safecheck,
            arrow_cast=True,
            prefers_large_types=conf.large_var_types,
            int_to_decimal_coercion_enabled=conf.int_to_decimal,
        )
        return arrow_to_python(batch.column(0))[0]
