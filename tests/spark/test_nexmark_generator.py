"""The Nexmark generator on Spark (windowing.spark.nexmark): the events the reference derives
from each event number (kinds 1:3:46 per 50, id spaces, hot auctions, bidders and sellers,
times and out-of-order groups, auction lengths), field values distributed as the reference's,
the same events for a seed, and the micro-batch files a stream replays."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from windowing.nexmark import (
    FIRST_AUCTION_ID,
    FIRST_NAMES,
    FIRST_PERSON_ID,
    HOT_CHANNELS,
    LAST_NAMES,
    US_CITIES,
    US_STATES,
    EventType,
    auction_id_range,
    channel_urls,
    event_type,
    extra_length_range,
    hot_auction,
    hot_bidder,
    hot_seller,
    hot_urls,
    last_base0_auction_id,
    last_base0_person_id,
    person_id_range,
)
from windowing.spark.nexmark import NexmarkConfig, NexmarkGenerator

pytestmark = pytest.mark.spark

SMALL = NexmarkConfig(num_events=10_000, num_partitions=2, seed=1)
LARGE = NexmarkConfig(num_events=100_000, num_partitions=2, seed=2)
SKEWED = NexmarkConfig(
    num_events=50_000,
    hot_auction_ratio=10,
    hot_bidders_ratio=1,
    hot_sellers_ratio=2,
    num_active_people=50,
    num_in_flight_auctions=20,
    seed=3,
)


def _rows(df: DataFrame, *columns: Any) -> list[Row]:
    """The rows, timestamps as epoch milliseconds."""
    out = [
        F.unix_millis(c).alias(c) if c in ("date_time", "expires") else c
        for c in (columns or df.columns)
    ]
    return df.select(*out).collect()


@pytest.fixture(scope="module")
def large_bids(spark: SparkSession) -> list[Row]:
    return _rows(NexmarkGenerator(spark, LARGE).bids(with_event_number=True))


@pytest.fixture(scope="module")
def large_auctions(spark: SparkSession) -> list[Row]:
    return _rows(NexmarkGenerator(spark, LARGE).auctions(with_event_number=True))


@pytest.fixture(scope="module")
def large_persons(spark: SparkSession) -> list[Row]:
    return _rows(NexmarkGenerator(spark, LARGE).persons(with_event_number=True))


def _types(df: DataFrame) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


PERSON = [
    ("id", "bigint"),
    ("name", "string"),
    ("email_address", "string"),
    ("credit_card", "string"),
    ("city", "string"),
    ("state", "string"),
    ("date_time", "timestamp"),
    ("extra", "string"),
]
AUCTION = [
    ("id", "bigint"),
    ("item_name", "string"),
    ("description", "string"),
    ("initial_bid", "bigint"),
    ("reserve", "bigint"),
    ("date_time", "timestamp"),
    ("expires", "timestamp"),
    ("seller", "bigint"),
    ("category", "bigint"),
    ("extra", "string"),
]
BID = [
    ("auction", "bigint"),
    ("bidder", "bigint"),
    ("price", "bigint"),
    ("channel", "string"),
    ("url", "string"),
    ("date_time", "timestamp"),
    ("extra", "string"),
]


def _struct(fields: list[tuple[str, str]]) -> str:
    return "struct<" + ",".join(f"{n}:{t}" for n, t in fields) + ">"


def test_the_tables_have_the_nexmark_columns(spark: SparkSession) -> None:
    generator = NexmarkGenerator(spark, SMALL)
    assert _types(generator.persons()) == PERSON
    assert _types(generator.auctions()) == AUCTION
    assert _types(generator.bids()) == BID
    assert _types(generator.events()) == [
        ("event_type", "int"),
        ("person", _struct(PERSON)),
        ("auction", _struct(AUCTION)),
        ("bid", _struct(BID)),
        ("date_time", "timestamp"),
    ]
    assert _types(generator.bids(with_event_number=True)) == [("event_number", "bigint"), *BID]


def test_every_50_events_are_one_person_three_auctions_and_46_bids(spark: SparkSession) -> None:
    events = NexmarkGenerator(spark, SMALL).events(with_event_number=True)
    rows = events.select(
        "event_number",
        "event_type",
        F.col("person").isNotNull().alias("p"),
        F.col("auction").isNotNull().alias("a"),
        F.col("bid").isNotNull().alias("b"),
    ).collect()
    assert sorted(r.event_number for r in rows) == list(range(SMALL.num_events))
    for r in rows:
        assert r.event_type == event_type(r.event_number)
        assert (r.p, r.a, r.b) == tuple(r.event_type == k for k in EventType)
    per_block = Counter((r.event_number // 50, r.event_type) for r in rows)
    for block in range(SMALL.num_events // 50):
        assert [per_block[block, k] for k in EventType] == [1, 3, 46]


def test_new_ids_are_the_references(spark: SparkSession) -> None:
    generator = NexmarkGenerator(spark, SMALL)
    persons = _rows(generator.persons(with_event_number=True), "event_number", "id")
    auctions = _rows(generator.auctions(with_event_number=True), "event_number", "id")
    for r in persons:
        assert r.id == last_base0_person_id(r.event_number) + FIRST_PERSON_ID
    for r in auctions:
        assert r.id == last_base0_auction_id(r.event_number) + FIRST_AUCTION_ID
    assert sorted(r.id for r in persons) == list(range(1000, 1000 + 200))
    assert sorted(r.id for r in auctions) == list(range(1000, 1000 + 600))


def _is_hot_or_within(value: int, hot: int, bounds: tuple[int, int]) -> bool:
    return value == hot or bounds[0] <= value <= bounds[1]


def test_bids_are_for_recent_auctions_by_recent_people(large_bids: list[Row]) -> None:
    config = LARGE
    for r in large_bids:
        e = r.event_number
        auction, bidder = r.auction - FIRST_AUCTION_ID, r.bidder - FIRST_PERSON_ID
        in_flight = auction_id_range(e, config.num_in_flight_auctions)
        assert _is_hot_or_within(auction, hot_auction(e), in_flight), r
        active = person_id_range(e, config.num_active_people)
        assert _is_hot_or_within(bidder, hot_bidder(e), active), r
        # Existing auctions and people, or one of the next few the reference allows.
        assert 0 <= auction <= last_base0_auction_id(e) + 10
        assert 0 <= bidder <= last_base0_person_id(e) + 10


def test_auctions_are_sold_by_recent_people_and_expire_after_their_time(
    large_auctions: list[Row],
) -> None:
    config = LARGE
    lengths = []
    for r in large_auctions:
        e = r.event_number
        seller = r.seller - FIRST_PERSON_ID
        assert _is_hot_or_within(seller, hot_seller(e), person_id_range(e, 1000)), r
        assert r.date_time == config.timestamp(e)
        shortest, longest = config.auction_length_range(e)
        assert shortest <= r.expires - r.date_time <= longest, r
        lengths.append((r.expires - r.date_time) / longest)
    # Uniform lengths: about half the longest on average.
    assert abs(sum(lengths) / len(lengths) - 0.5) < 0.02


def _fraction(rows: list[Row], hot: Any) -> float:
    return sum(1 for r in rows if hot(r)) / len(rows)


def test_hot_fractions_are_the_configured_ratios(
    spark: SparkSession, large_bids: list[Row], large_auctions: list[Row]
) -> None:
    def hot_auctions(r: Row) -> bool:
        return r.auction - FIRST_AUCTION_ID == hot_auction(r.event_number)

    def hot_bidders(r: Row) -> bool:
        return r.bidder - FIRST_PERSON_ID == hot_bidder(r.event_number)

    def hot_sellers(r: Row) -> bool:
        return r.seller - FIRST_PERSON_ID == hot_seller(r.event_number)

    # 1 - 1/ratio, and a little more where a drawn one is the hot one by chance.
    assert 0.49 < _fraction(large_bids, hot_auctions) < 0.52  # hot_auction_ratio 2
    assert 0.74 < _fraction(large_bids, hot_bidders) < 0.77  # hot_bidders_ratio 4
    assert 0.72 < _fraction(large_auctions, hot_sellers) < 0.79  # hot_sellers_ratio 4
    generator = NexmarkGenerator(spark, SKEWED)
    bids = _rows(generator.bids(with_event_number=True), "event_number", "auction", "bidder")
    auctions = _rows(generator.auctions(with_event_number=True), "event_number", "seller")
    assert 0.89 < _fraction(bids, hot_auctions) < 0.92  # 10
    assert _fraction(bids, hot_bidders) < 0.03  # 1: never drawn, sometimes chosen
    assert 0.46 < _fraction(auctions, hot_sellers) < 0.56  # 2
    for r in bids:
        if not hot_bidders(r):
            bounds = person_id_range(r.event_number, SKEWED.num_active_people)
            assert bounds[0] <= r.bidder - FIRST_PERSON_ID <= bounds[1]
        if not hot_auctions(r):
            bounds = auction_id_range(r.event_number, SKEWED.num_in_flight_auctions)
            assert bounds[0] <= r.auction - FIRST_AUCTION_ID <= bounds[1]


def test_times_follow_the_rate_and_out_of_order_groups_as_the_reference(
    spark: SparkSession,
) -> None:
    # 1,000 events a second: one event per millisecond. 10,005 events: the last group of 10
    # is incomplete, and takes numbers from the whole group, as the reference's.
    config = NexmarkConfig(
        num_events=10_005,
        events_per_second=1000,
        out_of_order_group_size=10,
        num_partitions=1,
        first_event_time=1_600_000_000_000,
    )
    rows = _rows(
        NexmarkGenerator(spark, config).events(with_event_number=True),
        "event_number",
        "event_type",
        "date_time",
    )
    numbers = [config.event_number(p) for p in range(config.num_events)]
    assert numbers[:10] == [0, 3, 6, 9, 2, 5, 8, 1, 4, 7]
    assert numbers[-5:] == [10000, 10003, 10006, 10009, 10002]
    # One partition per kind, each in stream order.
    for kind in EventType:
        expected = [n for n in numbers if event_type(n) == kind]
        assert [r.event_number for r in rows if r.event_type == kind] == expected
    for r in rows:
        assert (
            r.date_time == config.timestamp(r.event_number) == 1_600_000_000_000 + (r.event_number)
        )
    # In order, each event one delay after the last; each bid at its number's time.
    in_order = NexmarkConfig(num_events=10_000, events_per_second=400, num_partitions=1)
    bids = _rows(
        NexmarkGenerator(spark, in_order).bids(with_event_number=True),
        "event_number",
        "date_time",
    )
    assert [r.event_number for r in bids] == [n for n in range(10_000) if n % 50 >= 4]
    assert all(r.date_time == in_order.base_time + r.event_number * 2500 // 1000 for r in bids)


def test_a_seed_gives_the_same_events_and_another_seed_others(spark: SparkSession) -> None:
    first = NexmarkGenerator(spark, SMALL).events()
    again = NexmarkGenerator(spark, NexmarkConfig(num_events=10_000, num_partitions=3, seed=1))
    assert first.exceptAll(again.events()).count() == 0
    assert again.events().exceptAll(first).count() == 0
    other = NexmarkConfig(num_events=10_000, num_partitions=2, seed=9)
    one = _rows(NexmarkGenerator(spark, SMALL).bids(with_event_number=True))
    two = _rows(NexmarkGenerator(spark, other).bids(with_event_number=True))
    assert [r.event_number for r in one] == [r.event_number for r in two]
    same = Counter(
        field for a, b in zip(one, two, strict=True) for field in BID if a[field[0]] == b[field[0]]
    )
    assert same["date_time", "timestamp"] == len(one)  # the time is the number's
    assert same["price", "bigint"] < 0.01 * len(one)
    assert same["extra", "string"] < 0.01 * len(one)


def test_people_have_the_references_fields(large_persons: list[Row]) -> None:
    names = {f"{first} {last}" for first in FIRST_NAMES for last in LAST_NAMES}
    for r in large_persons:
        assert r.name in names
        assert re.fullmatch(r"[a-z ]{0,6}@[a-z ]{0,4}\.com", r.email_address), r
        assert re.fullmatch(r"[0-9]{4} [0-9]{4} [0-9]{4} [0-9]{4}", r.credit_card), r
        assert r.city in US_CITIES and r.state in US_STATES
        size = 8 + sum(len(r[c]) for c in ("name", "email_address", "credit_card", "city"))
        shortest, longest = extra_length_range(size + len(r.state), 200)
        assert shortest <= len(r.extra) <= longest and re.fullmatch("[a-z]*", r.extra)
    assert Counter(r.state for r in large_persons).keys() == set(US_STATES)


def test_auctions_have_the_references_fields(large_auctions: list[Row]) -> None:
    for r in large_auctions:
        assert len(r.item_name) <= 19 and len(r.description) <= 99
        assert r.item_name == r.item_name.strip() and re.fullmatch("[a-z ]*", r.description)
        assert 10 <= r.category <= 14
        assert 100 <= r.initial_bid <= 100_000_000 and r.reserve >= r.initial_bid + 100
        size = 8 + len(r.item_name) + len(r.description) + 5 * 8
        shortest, longest = extra_length_range(size, 500)
        assert shortest <= len(r.extra) <= longest
    lengths = Counter(len(r.description) for r in large_auctions)
    assert max(lengths) == 99 and min(lengths) <= 3


def test_bids_have_the_references_prices_and_channels(large_bids: list[Row]) -> None:
    urls, hot = channel_urls(LARGE.seed), hot_urls(LARGE.seed)
    for r in large_bids:
        assert 100 <= r.price <= 100_000_000
        if r.channel in HOT_CHANNELS:
            assert r.url == hot[HOT_CHANNELS.index(r.channel)]
        else:
            number = int(r.channel.removeprefix("channel-"))
            assert r.url == urls[number]
        assert 54 <= len(r.extra) <= 81  # extra_length_range(32, 100)
    # 10 ** (6 u) * 100: a third of the prices below 10,000, a half below 100,000.
    assert abs(_fraction(large_bids, lambda r: r.price < 10_000) - 1 / 3) < 0.01
    assert abs(_fraction(large_bids, lambda r: r.price < 100_000) - 1 / 2) < 0.01
    channels = Counter(r.channel for r in large_bids)
    for name in HOT_CHANNELS:  # half the bids on one of 4 hot channels
        assert abs(channels[name] / len(large_bids) - 1 / 8) < 0.01
    assert len(channels) > 9000


def test_the_end_of_a_large_stream_computes_alone(spark: SparkSession) -> None:
    config = NexmarkConfig(num_events=10**8, out_of_order_group_size=1000)
    generator = NexmarkGenerator(spark, config)
    tail = _rows(
        generator.table("bids", start=10**8 - 1000, with_event_number=True),
        "event_number",
        "auction",
        "date_time",
    )
    assert len(tail) == 920
    for r in tail:
        assert 10**8 - 1000 <= r.event_number < 10**8
        assert r.date_time == config.timestamp(r.event_number)
        last = last_base0_auction_id(r.event_number)
        assert last - 100 <= r.auction - FIRST_AUCTION_ID <= last + 10


def test_bad_arguments_are_refused_before_any_job(spark: SparkSession) -> None:
    generator = NexmarkGenerator(spark, SMALL)
    with pytest.raises(TypeError, match="config must be a NexmarkConfig, got 3"):
        NexmarkGenerator(spark, 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"table must be one of .*, got 'bid'"):
        generator.table("bid")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"must lie in \[0, 10000\], got start=5, end=3"):
        generator.table("bids", start=5, end=3)
    with pytest.raises(ValueError, match="events_per_batch must be an int >= 1, got 0"):
        generator.write_micro_batches("/nonexistent/nexmark", events_per_batch=0)


def _max_method_size(spark: SparkSession, df: DataFrame) -> int:
    adaptive = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        stages = df._jdf.queryExecution().debug().codegenToSeq()
        sizes = [stages.apply(i)._3().maxMethodCodeSize() for i in range(stages.size())]
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", adaptive)
    assert sizes
    return max(sizes)


def test_generated_methods_stay_small_enough_for_the_jit(spark: SparkSession) -> None:
    # The JVM interprets methods above 8,000 bytes of bytecode: several times slower.
    config = NexmarkConfig(num_events=1000, out_of_order_group_size=100)
    generator = NexmarkGenerator(spark, config)
    for table in ("events", "persons", "auctions", "bids"):
        df = generator.table(table, with_event_number=True)  # type: ignore[arg-type]
        assert _max_method_size(spark, df) < 6000, table


# ---------------------------------------------------------------------------- micro-batches


def _files(folder: Path) -> list[Path]:
    """The parquet files, oldest first."""
    files = [p for p in folder.iterdir() if p.suffix == ".parquet"]
    return sorted(files, key=lambda p: p.stat().st_mtime_ns)


def test_micro_batch_files_hold_consecutive_positions(spark: SparkSession, tmp_path: Path) -> None:
    generator = NexmarkGenerator(spark, SMALL)
    folder = tmp_path / "events"
    written = generator.write_micro_batches(
        str(folder), events_per_batch=3000, with_event_number=True
    )
    assert (written.batches, written.events_per_batch, written.table) == (4, 3000, "events")
    files = _files(folder)
    assert len(files) == 4
    for index, path in enumerate(files):
        numbers = sorted(r.event_number for r in spark.read.parquet(str(path)).collect())
        assert numbers == list(range(index * 3000, min((index + 1) * 3000, 10_000)))
    batch = spark.read.schema(written.schema).parquet(str(folder))
    assert batch.exceptAll(generator.events(with_event_number=True)).count() == 0
    assert batch.count() == 10_000


def test_a_stream_replays_the_micro_batches_in_order(spark: SparkSession, tmp_path: Path) -> None:
    config = NexmarkConfig(num_events=2000, out_of_order_group_size=7)
    generator = NexmarkGenerator(spark, config)
    written = generator.write_micro_batches(
        str(tmp_path / "bids"), table="bids", events_per_batch=500, with_event_number=True
    )
    seen: list[list[int]] = []

    def collect(df: DataFrame, batch_id: int) -> None:
        seen.append(sorted(r.event_number for r in df.select("event_number").collect()))

    query = (
        written.read_stream(spark)
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert not query.isActive
    expected = [
        sorted(n for p in range(start, start + 500) if (n := config.event_number(p)) % 50 >= 4)
        for start in range(0, 2000, 500)
    ]
    assert seen == expected


def test_empty_micro_batches_are_files_too(spark: SparkSession, tmp_path: Path) -> None:
    generator = NexmarkGenerator(spark, NexmarkConfig(num_events=200))
    written = generator.write_micro_batches(
        str(tmp_path / "persons"), table="persons", events_per_batch=30
    )
    files = _files(tmp_path / "persons")
    assert written.batches == len(files) == 7
    assert [spark.read.parquet(str(p)).count() for p in files] == [1, 1, 0, 1, 0, 1, 0]


def test_a_folder_with_files_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "old.parquet").write_bytes(b"")
    generator = NexmarkGenerator(spark, NexmarkConfig(num_events=100))
    with pytest.raises(ValueError, match=r"already holds files \(old.parquet\)"):
        generator.write_micro_batches(str(tmp_path))
    assert os.listdir(tmp_path) == ["old.parquet"]


@pytest.fixture(autouse=True)
def _no_stream_left(spark: SparkSession) -> Iterator[None]:
    yield
    for query in spark.streams.active:
        query.stop()
