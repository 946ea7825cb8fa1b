"""Pieces several Spark tests share: DataFrames whose size Spark knows (a batch replay of a
small input then runs in one task, without a shuffle; rows from a Python list have no size
estimate) and a user's aggregate function (shipped to the executors by value)."""

from __future__ import annotations

import sys
from typing import Any

import pyarrow as pa
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from windowing.functions import AggregateFunction

spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]


def sized_frame(spark: SparkSession, rows: list[tuple[Any, ...]], schema: str) -> DataFrame:
    """``rows`` as a DataFrame made from an Arrow table (a local relation, sized)."""
    struct = StructType.fromDDL(schema)
    table = pa.Table.from_pylist(
        [dict(zip(struct.names, row, strict=True)) for row in rows],
        schema=to_arrow_schema(struct),
    )
    return spark.createDataFrame(table)


class Total(AggregateFunction[Any, int, int]):
    """A user's aggregate function, the sum of ``amount``: the window operator runs it."""

    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + int(value.amount)

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, a: int, b: int) -> int:
        return a + b
