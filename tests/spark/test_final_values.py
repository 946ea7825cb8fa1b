"""``windowing.spark.final_values``: each window's last firing, from a batch result with
early and late firings and from a streaming query's results folder, against a brute force
(every row a window added, summed); its errors and layouts; and the ``foreachBatch`` upsert
recipe of ``docs/spark.md``, run as written there."""

from __future__ import annotations

import json
import os
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle as spark_cloudpickle
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from windowing import BoundedOutOfOrderness, OutputTag, TumblingEventTimeWindows, WindowedStream
from windowing.functions import ProcessWindowFunction
from windowing.spark import final_values
from windowing.spark.streaming import write_results_and_late
from windowing.triggers import AfterWatermark, CountTrigger

pytestmark = pytest.mark.spark
spark_cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]

LATE = OutputTag("late")
SCHEMA = "id bigint, user string, amount bigint, ts bigint, arrived bigint"
SIZE = 100
DOCS = Path(__file__).resolve().parents[2] / "docs" / "spark.md"


class TwoRows(ProcessWindowFunction[Any, Any, Any, Any]):
    """Two rows per firing: the final value of a window is both."""

    def process(self, key: Any, context: Any, elements: Iterable[Row]) -> Iterable[Any]:
        total = sum(r.amount for r in elements)
        yield (total, "sum")
        yield (len(list(elements)), "count")


def events(seed: int, n: int = 240) -> list[tuple[Any, ...]]:
    """Rows in arrival order ``arrived``, event times mostly rising, some far behind (late
    firings within the lateness, or late)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ts = i * 2 + rng.randint(-10, 10)
        if rng.random() < 0.12:
            ts -= rng.choice([120, 400])
        out.append((i, rng.choice("ab"), rng.randint(1, 9), ts, i))
    return out


def totals(
    rows: Iterable[dict[str, Any]], late_ids: set[int], size: int = SIZE
) -> dict[tuple[str, int], tuple[int, int]]:
    """The brute force: per (user, window start), the sum and count of the rows added (all
    rows but the late ones); the last firing of an accumulating trigger holds all of them."""
    out: dict[tuple[str, int], tuple[int, int]] = {}
    for row in rows:
        if row["id"] in late_ids:
            continue
        key = (row["user"], row["ts"] - row["ts"] % size)
        total, n = out.get(key, (0, 0))
        out[key] = (total + row["amount"], n + 1)
    return out


def test_final_values_of_a_batch_result(spark: SparkSession) -> None:
    """Early firings (every 2 rows), the on-time one and late firings (a row within the
    lateness fires at once): the last firing of each window holds every row it added."""
    data = events(seed=4)
    df = spark.createDataFrame(data, SCHEMA)
    stream = (
        WindowedStream.from_dataframe(
            df, event_time="ts", arrival_order="arrived", watermark=BoundedOutOfOrderness(20)
        )
        .key_by("user")
        .window(TumblingEventTimeWindows(SIZE))
        .trigger(AfterWatermark(early=CountTrigger(2)))
        .allowed_lateness(250)
        .side_output_late_data(LATE)
        .pane_info()
    )
    result = stream.agg(F.sum("amount").alias("total"), F.count("*").alias("n"))
    process = stream.process(TwoRows(), output_schema="value bigint, what string")
    with result, process:
        firings = result.results.collect()
        late_ids = {r.id for r in result.get_side_output(LATE).collect()}
        final = final_values(result.results).collect()
        final_process = final_values(process.results).collect()
    assert {r.timing for r in firings} == {"EARLY", "ON_TIME", "LATE"}
    assert late_ids
    named = [dict(zip(("id", "user", "amount", "ts"), r, strict=False)) for r in data]
    expected = totals(named, late_ids)
    assert {(r.user, r.window_start): (r.total, r.n) for r in final} == expected
    last: dict[tuple[str, int], int] = defaultdict(int)
    for r in firings:
        last[(r.user, r.window_start)] = max(last[(r.user, r.window_start)], r.pane_index)
    assert {(r.user, r.window_start): r.pane_index for r in final} == last
    assert len(final) == len(last) and Counter(r.timing for r in final)["LATE"] > 0
    assert final[0].asDict().keys() == firings[0].asDict().keys()
    # a process function's two rows per firing: both rows of the last one
    by_window: dict[tuple[str, int], dict[str, int]] = defaultdict(dict)
    for r in final_process:
        by_window[(r.user, r.window_start)][r.what] = r.value
        assert r.pane_index == last[(r.user, r.window_start)]
    assert {k: (v["sum"], v["count"]) for k, v in by_window.items()} == expected
    assert len(final_process) == 2 * len(expected)


def test_final_values_layouts_and_errors(spark: SparkSession, tmp_path: Path) -> None:
    """Keys are the columns before the window's (two here, a null one included), or the
    ``window`` struct; ``keys=`` names them; of two copies of one firing in a folder, the
    later micro-batch's; no pane_index, a streaming DataFrame, another type, unknown keys
    and no window columns are errors naming the fix."""
    rows = [
        ("a", None, 0, 10, 1, 0, "EARLY"),
        ("a", None, 0, 10, 3, 1, "ON_TIME"),
        ("a", "x", 0, 10, 2, 0, "ON_TIME"),
        ("b", "x", 0, 10, 5, 0, "ON_TIME"),
        ("b", "x", 0, 10, 7, 2, "LATE"),
        ("b", "x", 10, 20, 4, 0, "ON_TIME"),
    ]
    schema = "k string, k2 string, window_start bigint, window_end bigint, total bigint, "
    schema += "pane_index bigint, timing string"
    df = spark.createDataFrame(rows, schema)
    expected = [("a", None, 0, 3), ("a", "x", 0, 2), ("b", "x", 0, 7), ("b", "x", 10, 4)]

    def short(frame: DataFrame, *columns: str) -> list[tuple[Any, ...]]:
        return sorted((tuple(r[c] for c in columns) for r in frame.collect()), key=repr)

    assert short(final_values(df), "k", "k2", "window_start", "total") == sorted(expected, key=repr)
    assert final_values(df).columns == df.columns
    # one key named: k2 is then a value column, the last firing of k's window
    assert short(final_values(df, keys=["k"]), "k", "window_start", "total") == [
        ("a", 0, 3),
        ("b", 0, 7),
        ("b", 10, 4),
    ]
    struct = df.select(
        "k",
        F.struct(F.col("window_start").alias("start"), F.col("window_end").alias("end")).alias(
            "window"
        ),
        "total",
        "pane_index",
        "timing",
    )
    assert short(final_values(struct), "k", "total") == [("a", 3), ("b", 4), ("b", 7)]
    # a folder with a copy of a firing written again by a later micro-batch
    folder = tmp_path / "results"
    copies = [("a", 0, 10, 1, 0, 0), ("a", 0, 10, 9, 0, 1), ("a", 0, 10, 5, 1, 0)]
    spark.createDataFrame(
        copies,
        "k string, window_start bigint, window_end bigint, total bigint, "
        "pane_index bigint, batch_id int",
    ).write.partitionBy("batch_id").parquet(str(folder))
    assert short(final_values(str(folder)), "total", "pane_index", "batch_id") == [(5, 1, 0)]
    assert short(final_values(folder.as_posix()), "total") == [(5,)]

    with pytest.raises(ValueError, match=re.escape("build them with .pane_info()")):
        final_values(df.drop("pane_index"))
    stream_dir = tmp_path / "in"
    stream_dir.mkdir()
    streaming = spark.readStream.schema(schema).json(str(stream_dir))
    with pytest.raises(ValueError, match="results is a streaming DataFrame; write it with"):
        final_values(streaming)
    with pytest.raises(ValueError, match="must be a DataFrame or the path of a results folder"):
        final_values(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=re.escape("unknown key columns ['user']")):
        final_values(df, keys=["user"])
    with pytest.raises(ValueError, match="keys must be a list of column names, got 'k'"):
        final_values(df, keys="k")
    with pytest.raises(ValueError, match="the results have no window columns"):
        final_values(df.drop("window_start"))


# ---------------------------------------------------------------------------- streaming
T0 = 1_700_000_000_000
STREAM_SCHEMA = "id bigint, user string, amount bigint, ts bigint"


def micro_batches() -> list[list[dict[str, Any]]]:
    """Four micro-batches: each window's rows, then rows of earlier windows within the
    allowed lateness (late firings in later micro-batches) and one past it (late); then a
    row far ahead that closes every window."""
    rng = random.Random(8)
    batches = []
    ident = 0
    for b in range(4):
        rows = []
        for _ in range(8):
            ts = T0 + b * 3_000 + rng.randint(0, 2_999)
            if b and rng.random() < 0.3:
                ts -= 3_000 * rng.randint(1, b) + (30_000 if rng.random() < 0.2 else 0)
            rows.append(
                {"id": ident, "user": rng.choice("ab"), "amount": rng.randint(1, 9), "ts": ts}
            )
            ident += 1
        batches.append(rows)
    batches.append([{"id": ident, "user": "~", "amount": 0, "ts": T0 + 1_000_000}])
    return batches


def recipe() -> str:
    """The ``foreachBatch`` upsert recipe's code, as ``docs/spark.md`` shows it."""
    text = DOCS.read_text()
    section = text[text.index("##### Keeping only the last firing as it arrives") :]
    return section[section.index("```python\n") + len("```python\n") : section.index("```\n\n")]


def test_final_values_of_a_streaming_folder_and_the_upsert_recipe(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A query's results folder holds several firings of some windows, in several
    micro-batches; ``final_values`` of the folder, and the table the docs' upsert recipe
    keeps, are each window's every row added."""
    batches = micro_batches()
    src = tmp_path / "src"
    src.mkdir()
    for i, rows in enumerate(batches):
        path = src / f"part-{i:04d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(path, (1_600_000_000 + i * 10, 1_600_000_000 + i * 10))

    def build() -> Any:
        df = spark.readStream.schema(STREAM_SCHEMA).option("maxFilesPerTrigger", 1).json(str(src))
        return (
            WindowedStream.from_dataframe(
                df, event_time="ts", watermark=BoundedOutOfOrderness(1_000)
            )
            .key_by("user")
            .window(TumblingEventTimeWindows(3_000))
            .allowed_lateness(10_000)
            .side_output_late_data(LATE)
            .pane_info()
            .agg(F.sum("amount").alias("total"), F.count("*").alias("n"))
        )

    out = tmp_path / "out"
    query = write_results_and_late(
        build(), str(out / "results"), str(out / "late"), str(out / "chk"), available_now=True
    )
    query.awaitTermination()
    assert query.exception() is None
    firings = spark.read.parquet(str(out / "results")).where("user != '~'")
    late_ids = {r.id for r in spark.read.parquet(str(out / "late")).collect()}
    assert late_ids
    assert firings.where("timing = 'LATE'").select("batch_id").distinct().count() > 1
    all_rows = [r for b in batches for r in b if r["user"] != "~"]
    expected = {(u, s - T0): v for (u, s), v in totals(all_rows, late_ids, 3_000).items()}
    final = final_values(str(out / "results")).where("user != '~'").collect()
    assert {(r.user, r.window_start - T0): (r.total, r.n) for r in final} == expected
    assert max(r.pane_index for r in final) >= 1

    # the recipe, as written in the docs, on a query of its own
    code = recipe()
    final_dir, checkpoint = tmp_path / "final", tmp_path / "final_chk"
    code = code.replace('"/data/final_clicks"', repr(str(final_dir)))
    code = code.replace('"/data/checkpoints/final_clicks"', repr(str(checkpoint)))
    namespace: dict[str, Any] = {"result": build()}
    exec(compile(code, str(DOCS), "exec"), namespace)
    recipe_query = namespace["query"]
    try:
        recipe_query.processAllAvailable()
    finally:
        recipe_query.stop()
    latest = namespace["versions"](final_dir)[-1]
    table = spark.read.parquet(str(final_dir / f"v={latest}")).where("user != '~'").collect()
    assert sorted(tuple(r) for r in table) == sorted(
        tuple(r) for r in final_values(firings.drop("batch_id")).collect()
    )
    assert len(namespace["versions"](final_dir)) >= len(batches)  # one per micro-batch
