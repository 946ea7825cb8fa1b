"""The Nexmark queries written with the library (windowing.nexmark_queries) on 10,000
generated events (100 a second: 100 s of event time, ten 10 s windows): equal to Spark's own
versions (windowing.spark.nexmark.native) row for row where the semantics agree, and to a
per-row brute force in plain Python; q7_late (early, on-time and late firings, a late side
output) against a brute-force model of the trigger and the watermark; a stream of the
generator's micro-batch files equal to the batch replay with the micro-batch as arrival order
(q7_late here; the other queries under the ``slow`` marker).

The generator's out-of-order groups (300 events: 3 s) and a 0.5 s watermark delay make late
bids when the stream is replayed in order of arrival."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from windowing import BoundedOutOfOrderness
from windowing.nexmark_queries import (
    Q7_LATE_BIDS,
    q5_hot_items,
    q7_highest_bid,
    q7_late,
    q8_new_users,
    q11_user_sessions,
    q12_processing_time_windows,
)
from windowing.spark.nexmark import NexmarkConfig, NexmarkGenerator
from windowing.spark.nexmark.native import native_q5, native_q7, native_q8, native_q11, native_q12
from windowing.spark.nexmark.tables import events_of_kind, with_arrival
from windowing.spark.streaming import write_results_and_late

pytestmark = pytest.mark.spark

CONFIG = NexmarkConfig(
    num_events=10_000, events_per_second=100, out_of_order_group_size=300, num_partitions=2
)
EVENTS_PER_BATCH = 2_000  # not a multiple of the group size: groups straddle micro-batches
DELAY = 500
WATERMARK = BoundedOutOfOrderness(DELAY)
LATENESS = 500
EARLY = 2_000
TEN_S = 10_000
MIN = -(2**63)

BID = ("auction", "bidder", "price")


def _ms(frame: DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    """The rows' ``columns``, timestamps as epoch milliseconds."""
    times = {n for n, t in frame.dtypes if t == "timestamp"}
    return [
        tuple(r)
        for r in frame.select(
            *[F.unix_millis(c).alias(c) if c in times else F.col(c) for c in columns]
        ).collect()
    ]


@pytest.fixture(scope="module")
def tables(spark: SparkSession) -> Iterable[dict[str, DataFrame]]:
    generator = NexmarkGenerator(spark, CONFIG)
    events = with_arrival(
        generator.events(with_event_number=True), CONFIG, events_per_batch=EVENTS_PER_BATCH
    )
    frames = {
        kind: events_of_kind(events, kind).cache() for kind in ("persons", "auctions", "bids")
    }
    yield frames
    for frame in frames.values():
        frame.unpersist()


@pytest.fixture(scope="module")
def bids(tables: dict[str, DataFrame]) -> list[dict[str, Any]]:
    """The bids in stream order: auction, bidder, price, ts, arrival (ms), position."""
    columns = (*BID, "date_time", "arrival_time", "stream_position", "micro_batch")
    rows = _ms(tables["bids"], *columns)
    keys = (*BID, "ts", "arrival", "position", "batch")
    return sorted((dict(zip(keys, r, strict=True)) for r in rows), key=lambda b: b["position"])


def _start(ts: int, size: int = TEN_S) -> int:
    return ts - ts % size


# --------------------------------------------------------------------------- brute forces
def brute_q5(bids: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    counts: Counter[tuple[int, int]] = Counter()
    for b in bids:
        last = _start(b["ts"], 2_000)
        for start in range(last - 8_000, last + 1, 2_000):
            counts[(start + TEN_S, b["auction"])] += 1
    largest: dict[int, int] = defaultdict(int)
    for (end, _), n in counts.items():
        largest[end] = max(largest[end], n)
    return Counter((end, a, n) for (end, a), n in counts.items() if n == largest[end])


def brute_q7(bids: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    largest: dict[int, int] = defaultdict(int)
    for b in bids:
        largest[_start(b["ts"])] = max(largest[_start(b["ts"])], b["price"])
    return Counter(
        (_start(b["ts"]), *(b[c] for c in BID), b["ts"])
        for b in bids
        if b["price"] == largest[_start(b["ts"])]
    )


def brute_q8(persons: list[tuple[Any, ...]], auctions: list[tuple[Any, ...]]) -> Counter[Any]:
    sellers = {(seller, _start(ts)) for seller, ts in auctions}
    return Counter((i, _start(ts), name) for i, name, ts in persons if (i, _start(ts)) in sellers)


def brute_q11(bids: list[dict[str, Any]]) -> tuple[Counter[Any], set[int]]:
    """Flink's sessions: windows ``[t, t + gap)`` that overlap or touch merge, so a bid
    exactly ``gap`` after the previous one continues its session; and the bidders that have
    such a bid (Spark's ``session_window`` starts a new session there)."""
    times: dict[int, list[int]] = defaultdict(list)
    for b in bids:
        times[b["bidder"]].append(b["ts"])
    sessions: Counter[Any] = Counter()
    touching = set()
    for bidder, ts in times.items():
        ts.sort()
        first = last = ts[0]
        n = 1
        for t in ts[1:]:
            if t - last == TEN_S:
                touching.add(bidder)
            if t - last > TEN_S:
                sessions[(bidder, first, last + TEN_S, n)] += 1
                first, n = t, 0
            last, n = t, n + 1
        sessions[(bidder, first, last + TEN_S, n)] += 1
    return sessions, touching


def brute_q12(bids: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    counts = Counter((b["bidder"], _start(b["arrival"])) for b in bids)
    return Counter((bidder, start, n) for (bidder, start), n in counts.items())


def brute_q7_late(
    bids: list[dict[str, Any]], arrival: Callable[[dict[str, Any]], int]
) -> tuple[Counter[Any], Counter[Any]]:
    """q7_late row by row: bids in order of ``arrival`` (bids arriving together see the
    watermark of the bids before them), tumbling 10 s windows of all bids,
    ContinuousEventTimeTrigger every 2 s, allowed lateness; the firings (window start,
    pane, timing, bid) and the late bids."""
    windows: dict[int, dict[str, Any]] = {}
    timers: set[tuple[int, int]] = set()  # (time, window start)
    firings: Counter[Any] = Counter()
    late: Counter[Any] = Counter()

    def fire(start: int, timing: str) -> None:
        w = windows[start]
        best = max(r[2] for r in w["rows"])
        for r in w["rows"]:
            if r[2] == best:
                firings[(start, w["panes"], timing, *r)] += 1
        w["panes"] += 1
        w["fired_on_time"] = w["fired_on_time"] or timing != "EARLY"

    def advance(watermark: int) -> None:
        # timers due in order, those registered meanwhile included (Flink's timer service)
        while any(t[0] <= watermark for t in timers):
            time, start = min(timers)
            timers.discard((time, start))
            if start not in windows:
                continue
            w, max_ts = windows[start], start + TEN_S - 1
            if time == max_ts:
                fire(start, "LATE" if w["fired_on_time"] else "ON_TIME")
            elif time == w["fire_time"]:
                fire(start, "EARLY")
                w["fire_time"] = min(time + EARLY, max_ts)
                timers.add((w["fire_time"], start))
            if time == max_ts + LATENESS:
                del windows[start]

    groups: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for b in bids:
        groups[arrival(b)].append(b)
    largest = None
    for key in sorted(groups):
        watermark = MIN if largest is None else largest - DELAY - 1
        advance(watermark)
        for b in sorted(groups[key], key=lambda b: b["ts"]):
            start = _start(b["ts"])
            max_ts = start + TEN_S - 1
            row = (*(b[c] for c in BID), b["ts"])
            if max_ts + LATENESS <= watermark:
                late[row] += 1
                continue
            w = windows.setdefault(
                start, {"rows": [], "panes": 0, "fire_time": None, "fired_on_time": False}
            )
            w["rows"].append(row)
            timers.add((max_ts + LATENESS, start))
            if max_ts <= watermark:
                fire(start, "LATE")
                continue
            timers.add((max_ts, start))
            if w["fire_time"] is None:
                w["fire_time"] = min(b["ts"] - b["ts"] % EARLY + EARLY, max_ts)
                timers.add((w["fire_time"], start))
        largest = max([largest or MIN, *(b["ts"] for b in groups[key])])
    advance(2**63 - 1)
    return firings, late


# ------------------------------------------------------------------------------- batch
def test_arrival_columns_follow_the_stream_and_bad_inputs_are_refused(
    spark: SparkSession, tables: dict[str, DataFrame], stream_files: Any
) -> None:
    rows = _ms(tables["bids"], "event_number", "stream_position", "arrival_time", "micro_batch")
    for number, position, arrival, batch in rows:
        assert position == CONFIG.stream_position(number)
        assert arrival == CONFIG.arrival_time(number)
        assert batch == position // EVENTS_PER_BATCH
    assert any(number != position for number, position, _, _ in rows)  # out of order
    # refused before any Spark job
    with pytest.raises(ValueError, match="events_of_kind: events must be the unified"):
        events_of_kind(tables["bids"], "bids")
    with pytest.raises(ValueError, match="events_of_kind: kind must be one of"):
        events_of_kind(stream_files.read_stream(spark), "people")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="with_arrival: frame needs the event_number"):
        with_arrival(tables["bids"].drop("event_number"), CONFIG)
    with pytest.raises(ValueError, match="native_q5: Spark cannot run it on a stream"):
        native_q5(_stream_tables(spark, stream_files)["bids"])
    with pytest.raises(ValueError, match="native_q11: a stream needs watermark_delay"):
        native_q11(_stream_tables(spark, stream_files)["bids"])


def test_q5_and_q7_equal_spark_and_a_brute_force(
    tables: dict[str, DataFrame], bids: list[dict[str, Any]]
) -> None:
    frame = tables["bids"]
    q5 = Counter(_ms(q5_hot_items(frame).results, "window_end", "auction", "num"))
    assert q5 == brute_q5(bids)
    assert q5 == Counter(_ms(native_q5(frame), "window_end", "auction", "num"))
    assert len(q5) >= 50  # five hopping windows end in each 10 s

    columns = ("window_start", *BID, "date_time")
    q7 = Counter(_ms(q7_highest_bid(frame).results, *columns))
    assert q7 == brute_q7(bids)
    assert q7 == Counter(_ms(native_q7(frame), *columns))
    assert len({r[0] for r in q7}) >= 10


def test_q8_q11_q12_equal_spark_and_a_brute_force(
    tables: dict[str, DataFrame], bids: list[dict[str, Any]]
) -> None:
    persons, auctions = tables["persons"], tables["auctions"]
    columns = ("id", "window_start", "name")
    q8 = Counter(_ms(q8_new_users(persons, auctions).results, *columns))
    expected = brute_q8(
        _ms(persons, "id", "name", "date_time"), _ms(auctions, "seller", "date_time")
    )
    assert q8 == expected
    assert q8 == Counter(_ms(native_q8(persons, auctions), *columns))
    assert len(q8) > 5

    frame = tables["bids"]
    columns = ("bidder", "window_start", "window_end", "count")
    q11 = Counter(_ms(q11_user_sessions(frame).results, *columns))
    sessions, touching = brute_q11(bids)
    assert q11 == sessions
    # Spark's session_window splits a session at a bid exactly 10 s after the last one
    native = Counter(_ms(native_q11(frame), *columns))
    assert Counter(r for r in q11.elements() if r[0] not in touching) == Counter(
        r for r in native.elements() if r[0] not in touching
    )
    assert max(r[3] for r in q11) > 100 and min(r[3] for r in q11) == 1

    columns = ("bidder", "window_start", "count")
    q12 = Counter(
        _ms(q12_processing_time_windows(frame, processing_time="arrival_time").results, *columns)
    )
    assert q12 == brute_q12(bids)
    assert q12 == Counter(_ms(native_q12(frame, processing_time="arrival_time"), *columns))


def test_q7_late_fires_early_on_time_and_late_as_the_trigger_and_the_watermark_say(
    tables: dict[str, DataFrame], bids: list[dict[str, Any]]
) -> None:
    result = q7_late(
        tables["bids"],
        watermark=WATERMARK,
        arrival_order="stream_position",
        allowed_lateness=LATENESS,
        early_firing_interval=EARLY,
    )
    with result:
        firings = Counter(
            _ms(result.results, "window_start", "pane_index", "timing", *BID, "date_time")
        )
        late = Counter(_ms(result.get_side_output(Q7_LATE_BIDS), *BID, "date_time"))
    expected_firings, expected_late = brute_q7_late(bids, lambda b: b["position"])
    assert firings == expected_firings
    assert late == expected_late
    timings = Counter(r[2] for r in firings)
    assert timings["EARLY"] > 10 and timings["ON_TIME"] >= 10 and timings["LATE"] > 0
    assert 0 < sum(late.values()) < len(bids) // 10


# --------------------------------------------------------------------------- streaming
@pytest.fixture(scope="module")
def stream_files(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("nexmark") / "events"
    return NexmarkGenerator(spark, CONFIG).write_micro_batches(
        str(folder), events_per_batch=EVENTS_PER_BATCH, with_event_number=True
    )


def _stream_tables(spark: SparkSession, stream_files: Any) -> dict[str, DataFrame]:
    events = with_arrival(
        stream_files.read_stream(spark), CONFIG, events_per_batch=EVENTS_PER_BATCH
    )
    return {kind: events_of_kind(events, kind) for kind in ("persons", "auctions", "bids")}


def _run_stream(result: Any, out: Path, late: bool = False) -> tuple[DataFrame, DataFrame | None]:
    spark = result.results.sparkSession
    query = write_results_and_late(
        result,
        str(out / "results"),
        str(out / "late") if late else None,
        str(out / "checkpoint"),
        available_now=True,
    )
    query.awaitTermination()
    results = spark.read.parquet(str(out / "results"))
    return results, (spark.read.parquet(str(out / "late")) if late else None)


def _final_watermark(bids: list[dict[str, Any]]) -> int:
    return max(b["ts"] for b in bids) - DELAY - 1


def test_q7_late_streams_as_its_batch_replay_by_micro_batch(
    spark: SparkSession,
    stream_files: Any,
    tables: dict[str, DataFrame],
    bids: list[dict[str, Any]],
    tmp_path: Path,
) -> None:
    def query(frames: dict[str, DataFrame], arrival: str | None) -> Any:
        return q7_late(
            frames["bids"],
            watermark=WATERMARK,
            arrival_order=arrival,
            allowed_lateness=LATENESS,
            early_firing_interval=EARLY,
        )

    results, late_rows = _run_stream(
        query(_stream_tables(spark, stream_files), None), tmp_path, True
    )
    columns = ("window_start", "pane_index", "timing", *BID, "date_time")
    streamed = Counter(_ms(results, *columns))
    replay = query(tables, "micro_batch")
    with replay:
        batch = Counter(_ms(replay.results, *columns))
        batch_late = Counter(_ms(replay.get_side_output(Q7_LATE_BIDS), *BID, "date_time"))
    assert late_rows is not None
    assert Counter(_ms(late_rows, *BID, "date_time")) == batch_late
    assert sum(batch_late.values()) > 0
    # the stream fires what its last watermark reached; the batch then fires the rest
    closed = _final_watermark(bids) - TEN_S + 1
    assert Counter(r for r in batch.elements() if r[0] <= closed) == Counter(
        r for r in streamed.elements() if r[0] <= closed
    )
    assert not streamed - batch
    # and both are the brute force of a stream arriving micro-batch by micro-batch
    expected, expected_late = brute_q7_late(bids, lambda b: b["batch"])
    assert batch == expected and batch_late == expected_late


QUERIES: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] = {
    "q5": (lambda t, **kw: q5_hot_items(t["bids"], **kw), ("window_end", "auction", "num")),
    "q7": (lambda t, **kw: q7_highest_bid(t["bids"], **kw), ("window_start", *BID, "date_time")),
    "q8": (
        lambda t, **kw: q8_new_users(t["persons"], t["auctions"], **kw),
        ("window_start", "id", "name"),
    ),
    "q11": (
        lambda t, **kw: q11_user_sessions(t["bids"], **kw),
        ("window_start", "bidder", "count"),
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_queries_stream_as_their_batch_replay_by_micro_batch(
    spark: SparkSession,
    stream_files: Any,
    tables: dict[str, DataFrame],
    bids: list[dict[str, Any]],
    tmp_path: Path,
    name: str,
) -> None:
    make, columns = QUERIES[name]
    results, _ = _run_stream(
        make(_stream_tables(spark, stream_files), watermark=WATERMARK), tmp_path
    )
    streamed = Counter(_ms(results, *columns, "window_end"))
    batch = Counter(
        _ms(
            make(tables, watermark=WATERMARK, arrival_order="micro_batch").results,
            *columns,
            "window_end",
        )
    )
    # the windows the stream's last watermark closed; the batch fires the rest at its end
    closed = _final_watermark(bids) + 1
    assert streamed == Counter(r for r in batch.elements() if r[-1] <= closed)
    assert len(streamed) > 0.6 * len(batch)


@pytest.mark.slow
def test_q12_streams_as_its_batch_replay(
    spark: SparkSession,
    stream_files: Any,
    tables: dict[str, DataFrame],
    bids: list[dict[str, Any]],
    tmp_path: Path,
) -> None:
    frames = _stream_tables(spark, stream_files)
    results, _ = _run_stream(
        q12_processing_time_windows(frames["bids"], processing_time="arrival_time"), tmp_path
    )
    columns = ("bidder", "window_start", "window_end", "count")
    streamed = Counter(_ms(results, *columns))
    batch = Counter(
        _ms(
            q12_processing_time_windows(tables["bids"], processing_time="arrival_time").results,
            *columns,
        )
    )
    # each bidder's clock is its own: a window fires once a later bid of its bidder arrives
    clock: dict[int, int] = defaultdict(lambda: MIN)
    for b in bids:
        clock[b["bidder"]] = max(clock[b["bidder"]], b["arrival"])
    assert streamed == Counter(r for r in batch.elements() if clock[r[0]] >= r[2] - 1)
    assert len(streamed) > 0.6 * len(batch)
