"""Nexmark on Spark: the window queries written with the library (``windowing.nexmark_queries``)
next to Spark's own versions (``windowing.spark.nexmark.native``) and Flink's published
throughput per core, in one table (``./dev nexmark``).

The events (people, auctions and bids, ``windowing.spark.nexmark``) are generated once with
the given seed into a temporary folder (not timed): in batch one parquet table of the unified
events, read back and persisted (``DataFrame.cache()``'s level); in streaming the generator's
micro-batch files, one file per micro-batch. Each query then reads its kind of events out of
that table (Flink's Nexmark reads its ``datagen`` events table the same way) and is timed
until its whole result is written to Spark's ``noop`` sink:

* batch: ``results.write.format("noop")`` of our query and of Spark's, no watermark (nothing is
  late: Flink's batch mode), building the query included; ``--runs`` times each, in
  alternating order (neither always on a colder JVM), and the table shows the medians;
* streaming: ``results.writeStream.format("noop")`` with ``availableNow`` for ours (a 1 s
  ``BoundedOutOfOrderness`` watermark; the queries of two stages run as one streaming query);
  Spark's own streaming version where Spark can express it on a stream (q11 and q12, with a
  1 s ``withWatermark``); the others have no native streaming form (an aggregate joined back to
  its input) and show ``n/a``.

q12's processing time is the generator's arrival time of each event (``with_arrival``: when the
reference generator emits it at the configured rate), in batch and in streaming, so both modes
give the same windows; Flink's q12 uses the wall clock. q7_late has out-of-order events only
when ``--out-of-order`` is given (the generator's groups of that many events).

Throughput per core = all events of the stream (people, auctions and bids: Flink's Nexmark
counts its source's events) / seconds / the cores of ``local[N]``. Flink's figures: the Nexmark
project's README, Flink 1.13, 8 workers, RocksDB state, 100 million events; q7_late is our own.
The machine's load average is printed before and after: on a shared machine the figures move
with it.

Usage::

    ./dev nexmark --events 100000 --queries q5,q7 --mode batch
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyspark import StorageLevel  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402

from windowing import BoundedOutOfOrderness  # noqa: E402
from windowing.nexmark_queries import (  # noqa: E402
    QUERIES,
    q5_hot_items,
    q7_highest_bid,
    q7_late,
    q8_new_users,
    q11_user_sessions,
    q12_processing_time_windows,
)
from windowing.spark.nexmark import NexmarkConfig, NexmarkGenerator  # noqa: E402
from windowing.spark.nexmark.native import (  # noqa: E402
    native_q5,
    native_q7,
    native_q8,
    native_q11,
    native_q12,
)
from windowing.spark.nexmark.tables import events_of_kind, with_arrival  # noqa: E402

#: Flink 1.13's throughput per core (events a second), from the Nexmark project's README.
FLINK_PER_CORE: dict[str, float] = {
    "q5": 22_140,
    "q7": 12_330,
    "q8": 146_140,
    "q11": 39_700,
    "q12": 75_670,
}

DELAY = "1 second"

Tables = dict[str, DataFrame]


@dataclass(frozen=True)
class Query:
    """How to build a query's result over the event tables: ours (a ``WindowingResult``) and
    Spark's own (a DataFrame), in batch and on a stream."""

    ours: Callable[[Tables, bool], Any]
    native: Callable[[Tables, bool], DataFrame | None]


def _watermark(streaming: bool) -> BoundedOutOfOrderness | None:
    return BoundedOutOfOrderness(DELAY) if streaming else None


def _batch_only(build: Callable[[Tables], DataFrame]) -> Callable[[Tables, bool], DataFrame | None]:
    return lambda t, streaming: None if streaming else build(t)


QUERY_PLANS: dict[str, Query] = {
    "q5": Query(
        lambda t, s: q5_hot_items(t["bids"], watermark=_watermark(s)),
        _batch_only(lambda t: native_q5(t["bids"])),
    ),
    "q7": Query(
        lambda t, s: q7_highest_bid(t["bids"], watermark=_watermark(s)),
        _batch_only(lambda t: native_q7(t["bids"])),
    ),
    "q8": Query(
        lambda t, s: q8_new_users(t["persons"], t["auctions"], watermark=_watermark(s)),
        _batch_only(lambda t: native_q8(t["persons"], t["auctions"])),
    ),
    "q11": Query(
        lambda t, s: q11_user_sessions(t["bids"], watermark=_watermark(s)),
        lambda t, s: native_q11(t["bids"], watermark_delay=DELAY if s else None),
    ),
    "q12": Query(
        lambda t, s: q12_processing_time_windows(t["bids"], processing_time="arrival_time"),
        lambda t, s: native_q12(
            t["bids"], processing_time="arrival_time", watermark_delay=DELAY if s else None
        ),
    ),
    "q7_late": Query(
        lambda t, s: q7_late(
            t["bids"],
            watermark=BoundedOutOfOrderness(DELAY),
            arrival_order=None if s else "stream_position",
        ),
        lambda t, s: None,
    ),
}


@dataclass
class Row:
    query: str
    mode: str
    events: int
    ours_seconds: float | None
    native_seconds: float | None


def session(cores: int) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # The executors import this checkout (the one the driver imports), however it is installed.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("pyspark-windowing-nexmark")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.default.parallelism", str(cores))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "6g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def kinds(events: DataFrame) -> Tables:
    return {k: events_of_kind(events, k) for k in ("persons", "auctions", "bids")}


def timed_batch(frame: DataFrame | None) -> float | None:
    """Seconds to write the whole batch ``frame`` to Spark's ``noop`` sink (``None``: none)."""
    if frame is None:
        return None
    start = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def timed_stream(frame: DataFrame | None, checkpoint: Path) -> float | None:
    """Seconds to run the streaming ``frame`` over every file into Spark's ``noop`` sink."""
    if frame is None:
        return None
    start = time.perf_counter()
    query = (
        frame.writeStream.format("noop")
        .outputMode("append")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return time.perf_counter() - start


def run_batch(
    spark: SparkSession,
    config: NexmarkConfig,
    work: Path,
    names: list[str],
    runs: int,
    warmup: int = 1,
) -> list[Row]:
    folder = str(work / "events")
    generator = NexmarkGenerator(spark, config)
    with_arrival(generator.events(with_event_number=True), config).write.parquet(folder)
    # DataFrame.cache()'s level: in memory as column batches, spilling to disk; a filter
    # skips the batches whose statistics rule it out without reading them (q12's rows
    # without processing time), which a serialized level would have to deserialize first
    events = spark.read.parquet(folder).persist(StorageLevel.MEMORY_AND_DISK_DESER)
    events.count()
    tables = kinds(events)
    rows = []
    for name in names:
        plan = QUERY_PLANS[name]
        seconds, native_seconds = paired(
            lambda p=plan: timed_batch(p.ours(tables, False).results),
            lambda p=plan: timed_batch(p.native(tables, False)),
            runs,
            warmup,
        )
        rows.append(Row(name, "batch", config.num_events, seconds, native_seconds))
    events.unpersist()
    return rows


def paired(
    ours: Callable[[], float | None],
    native: Callable[[], float | None],
    runs: int,
    warmup: int = 1,
) -> tuple[float | None, float | None]:
    """The medians of ``runs`` timings of each, in alternating order (ours first in even
    rounds, Spark's first in odd ones), so that neither always runs on a colder JVM, after
    ``warmup`` untimed rounds of both (the JVM compiles each plan's code on its first runs:
    a first run took up to twice as long as the next ones)."""
    for _ in range(warmup):
        ours()
        native()
    times: tuple[list[float], list[float]] = ([], [])
    for r in range(runs):
        order = ((0, ours), (1, native)) if r % 2 == 0 else ((1, native), (0, ours))
        for i, run in order:
            seconds = run()
            if seconds is not None:
                times[i].append(seconds)
    return (
        statistics.median(times[0]) if times[0] else None,
        statistics.median(times[1]) if times[1] else None,
    )


def run_streaming(
    spark: SparkSession, config: NexmarkConfig, work: Path, names: list[str], per_batch: int
) -> list[Row]:
    generator = NexmarkGenerator(spark, config)
    replay = generator.write_micro_batches(
        str(work / "stream"), events_per_batch=per_batch, with_event_number=True
    )

    def stream() -> Tables:
        return kinds(with_arrival(replay.read_stream(spark), config))

    rows = []
    for name in names:
        plan = QUERY_PLANS[name]
        seconds = timed_stream(plan.ours(stream(), True).results, work / f"ckpt-{name}-ours")
        native_seconds = timed_stream(plan.native(stream(), True), work / f"ckpt-{name}-native")
        rows.append(Row(name, "streaming", config.num_events, seconds, native_seconds))
    return rows


def _per_core(events: int, seconds: float | None, cores: int) -> float | None:
    return None if seconds is None else events / seconds / cores


def _k(value: float | None) -> str:
    return "n/a" if value is None else f"{value / 1000:,.1f} K"


def print_table(rows: list[Row], cores: int) -> None:
    header = (
        "query",
        "mode",
        "events",
        "ours ev/s/core",
        "Spark ev/s/core",
        "ours / Spark",
        "Flink 1.13 ev/s/core",
        "ours s",
        "Spark s",
    )
    table = [header]
    for r in rows:
        ours = _per_core(r.events, r.ours_seconds, cores)
        native = _per_core(r.events, r.native_seconds, cores)
        ratio = "n/a" if ours is None or native is None else f"{ours / native:.2f}x"
        table.append(
            (
                r.query,
                r.mode,
                f"{r.events:,}",
                _k(ours),
                _k(native),
                ratio,
                _k(FLINK_PER_CORE.get(r.query)),
                "n/a" if r.ours_seconds is None else f"{r.ours_seconds:.2f}",
                "n/a" if r.native_seconds is None else f"{r.native_seconds:.2f}",
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
        if i == 0:
            print("-+-".join("-" * w for w in widths))


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="events (default 100,000)")
    parser.add_argument(
        "--queries",
        default=",".join(QUERIES),
        help=f"comma-separated, of {', '.join(QUERIES)} (default all)",
    )
    parser.add_argument("--mode", choices=("batch", "streaming"), default="batch")
    parser.add_argument("--cores", type=int, default=2, help="local[N] (default 2)")
    parser.add_argument(
        "--events-per-batch",
        type=int,
        default=None,
        help="streaming: events per micro-batch file (default events / 10)",
    )
    parser.add_argument(
        "--out-of-order", type=int, default=1, help="the generator's out-of-order group size"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--runs",
        type=int,
        default=3,
        help="batch: timings of each side, in alternating order; the median (default 3)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="batch: untimed runs of each side before the timed ones (default 1)",
    )
    args = parser.parse_args(argv)
    names = [q.strip() for q in args.queries.split(",") if q.strip()]
    unknown = [q for q in names if q not in QUERIES]
    if unknown or not names:
        parser.error(f"--queries: unknown {unknown or names}; choose among {', '.join(QUERIES)}")
    if args.events < 1 or args.cores < 1 or args.runs < 1:
        parser.error("--events, --cores and --runs must be >= 1")
    if args.warmup < 0:
        parser.error(f"--warmup must be >= 0, got {args.warmup}")
    args.names = names
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    config = NexmarkConfig(
        num_events=args.events,
        out_of_order_group_size=args.out_of_order,
        seed=args.seed,
        num_partitions=args.cores,
    )
    print(f"command: {' '.join(['./dev nexmark', *argv])}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    spark = session(args.cores)
    try:
        with tempfile.TemporaryDirectory(prefix="nexmark-") as tmp:
            work = Path(tmp)
            if args.mode == "batch":
                rows = run_batch(spark, config, work, args.names, args.runs, args.warmup)
            else:
                per_batch = args.events_per_batch or max(1, args.events // 10)
                rows = run_streaming(spark, config, work, args.names, per_batch)
    finally:
        spark.stop()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print_table(rows, args.cores)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
