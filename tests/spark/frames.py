"""DataFrames of the Spark tests whose size Spark knows (a batch replay of a small input then
runs in one task, without a shuffle); rows from a Python list have no size estimate."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType


def sized_frame(spark: SparkSession, rows: list[tuple[Any, ...]], schema: str) -> DataFrame:
    """``rows`` as a DataFrame made from an Arrow table (a local relation, sized)."""
    struct = StructType.fromDDL(schema)
    table = pa.Table.from_pylist(
        [dict(zip(struct.names, row, strict=True)) for row in rows],
        schema=to_arrow_schema(struct),
    )
    return spark.createDataFrame(table)
