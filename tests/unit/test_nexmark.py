"""The Nexmark generator's arithmetic (windowing.nexmark) against a plain transcription of the
reference's formulas (Beam's Nexmark ``GeneratorConfig``, ``PersonGenerator``,
``AuctionGenerator``, ``StringsGenerator``, ``NexmarkUtils``), its configuration's validation,
and the random pools and urls."""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone

import pytest

from windowing.nexmark import (
    BASE_TIME,
    HOT_CHANNELS,
    NUM_CHANNELS,
    TEXT_POOL_LENGTH,
    EventType,
    NexmarkConfig,
    auction_id_range,
    channel_id,
    channel_urls,
    event_type,
    extra_length_range,
    hot_auction,
    hot_bidder,
    hot_seller,
    hot_urls,
    last_base0_auction_id,
    last_base0_person_id,
    letters_pool,
    person_id_range,
    text_pool,
)

# ------------------------------------------------------- the reference, transcribed plainly


def ref_last_base0_person_id(event_id: int) -> int:
    epoch = event_id // 50
    offset = event_id % 50
    if offset >= 1:
        offset = 0
    return epoch * 1 + offset


def ref_last_base0_auction_id(event_id: int) -> int:
    epoch = event_id // 50
    offset = event_id % 50
    if offset < 1:
        epoch -= 1
        offset = 3 - 1
    elif offset >= 1 + 3:
        offset = 3 - 1
    else:
        offset -= 1
    return epoch * 3 + offset


def ref_kind(event_id: int) -> str:
    rem = event_id % 50
    if rem < 1:
        return "person"
    if rem < 1 + 3:
        return "auction"
    return "bid"


def ref_adjusted_event_number(n: int, events_so_far: int) -> int:
    event_number = events_so_far
    base = (event_number // n) * n
    offset = (event_number * 953) % n
    return base + offset


def ref_rate_to_period_us(rate: int) -> int:
    return (1_000_000 + rate // 2) // rate


def ref_timestamp(base_time: int, delay_us: int, event_number: int) -> int:
    return base_time + (event_number * delay_us) // 1000


def ref_person_choices(event_id: int, active_people: int) -> range:
    """Every value ``nextBase0PersonId`` can return (``nextLong(n)`` is ``[0, n)``)."""
    num_people = ref_last_base0_person_id(event_id) + 1
    active = min(num_people, active_people)
    return range(num_people - active, num_people - active + active + 10)


def ref_auction_choices(event_id: int, in_flight: int) -> range:
    min_auction = max(ref_last_base0_auction_id(event_id) - in_flight, 0)
    max_auction = ref_last_base0_auction_id(event_id)
    return range(min_auction, min_auction + max_auction - min_auction + 1 + 10)


def ref_extra_sizes(current_size: int, desired_average_size: int) -> range:
    if current_size > desired_average_size:
        return range(1)
    desired_average_size -= current_size
    delta = int(desired_average_size * 0.2 + 0.5)  # Java's Math.round of a positive double
    min_size = desired_average_size - delta
    return range(min_size, min_size + (1 if delta == 0 else 2 * delta))


def ref_abs_reverse(i: int) -> int:
    """``Math.abs(Integer.reverse(i))`` on Java ints."""
    reversed_bits = 0
    for b in range(32):
        if i >> b & 1:
            reversed_bits |= 1 << (31 - b)
    as_int = reversed_bits - (1 << 32) if reversed_bits & (1 << 31) else reversed_bits
    return as_int if as_int == -(2**31) else abs(as_int)


NUMBERS = [*range(5000), *range(10**9 - 500, 10**9 + 500), 2**40 + 17]


# -------------------------------------------------------------------------- kinds and ids


def test_kinds_are_the_references_one_person_three_auctions_46_bids_per_50() -> None:
    expected = {"person": EventType.PERSON, "auction": EventType.AUCTION, "bid": EventType.BID}
    for n in NUMBERS:
        assert event_type(n) is expected[ref_kind(n)], n
    counts = Counter(event_type(n) for n in range(50 * 7))
    assert counts == {EventType.PERSON: 7, EventType.AUCTION: 21, EventType.BID: 322}


def test_last_ids_are_the_references() -> None:
    for n in NUMBERS:
        assert last_base0_person_id(n) == ref_last_base0_person_id(n), n
        assert last_base0_auction_id(n) == ref_last_base0_auction_id(n), n


def test_new_ids_are_consecutive() -> None:
    people = [last_base0_person_id(n) for n in range(5000) if event_type(n) is EventType.PERSON]
    auctions = [last_base0_auction_id(n) for n in range(5000) if event_type(n) is EventType.AUCTION]
    assert people == list(range(100))
    assert auctions == list(range(300))


def test_hot_people_and_auctions_are_the_references() -> None:
    for n in NUMBERS:
        if event_type(n) is EventType.BID:
            assert hot_auction(n) == (ref_last_base0_auction_id(n) // 100) * 100
            assert hot_bidder(n) == (ref_last_base0_person_id(n) // 100) * 100 + 1
        if event_type(n) is EventType.AUCTION:
            assert hot_seller(n) == (ref_last_base0_person_id(n) // 100) * 100


@pytest.mark.parametrize(("active", "in_flight"), [(1000, 100), (1, 1), (7, 3000)])
def test_person_and_auction_ranges_are_the_references_choices(active: int, in_flight: int) -> None:
    for n in NUMBERS:
        people = ref_person_choices(n, active)
        assert person_id_range(n, active) == (people[0], people[-1]), n
        if event_type(n) is EventType.BID:
            auctions = ref_auction_choices(n, in_flight)
            assert auction_id_range(n, in_flight) == (auctions[0], auctions[-1]), n


# ---------------------------------------------------------------------------------- time


@pytest.mark.parametrize("rate", [1, 3, 7, 1000, 10_000, 33_333, 400_000, 1_000_000])
def test_timestamps_are_the_references(rate: int) -> None:
    config = NexmarkConfig(num_events=10**6, events_per_second=rate)
    delay = ref_rate_to_period_us(rate)
    assert config.inter_event_delay_us == delay
    base = 1_436_918_400_000  # Beam's 2015-07-15T00:00:00Z
    assert config.base_time == base
    for n in NUMBERS[:3000]:
        assert config.timestamp(n) == ref_timestamp(base, delay, n)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 10, 100, 952, 1000, 12_345])
def test_event_numbers_are_the_references_adjusted_numbers(size: int) -> None:
    config = NexmarkConfig(num_events=10**6, out_of_order_group_size=size)
    for position in NUMBERS:
        assert config.event_number(position) == ref_adjusted_event_number(size, position)


@pytest.mark.parametrize("size", [3, 10, 100, 1000])
def test_an_out_of_order_group_is_a_permutation_of_its_numbers(size: int) -> None:
    config = NexmarkConfig(num_events=10**6, out_of_order_group_size=size)
    for group in (0, 1, 17):
        positions = range(group * size, (group + 1) * size)
        numbers = [config.event_number(p) for p in positions]
        assert sorted(numbers) == list(positions)
        assert numbers != list(positions)  # scrambled
        # Outside groups the time only goes forward: every event of a group is at or before
        # every event of the next.
        following = [config.event_number(p + size) for p in positions]
        assert max(config.timestamp(n) for n in numbers) <= min(
            config.timestamp(n) for n in following
        )


@pytest.mark.parametrize("size", [1, 2, 3, 10, 100, 1000, 12_345])
def test_stream_positions_invert_event_numbers(size: int) -> None:
    config = NexmarkConfig(num_events=10**6, out_of_order_group_size=size)
    for position in [*NUMBERS, *range(3 * size)]:
        number = config.event_number(position)
        assert config.stream_position(number) == position
        # the reference's wall-clock time of the event: its position's, not its number's
        assert config.arrival_time(number) == ref_timestamp(
            config.base_time, config.inter_event_delay_us, position
        )


@pytest.mark.parametrize("size", [2, 4, 7, 8, 952])
def test_group_sizes_dividing_952_keep_the_order_as_in_the_reference(size: int) -> None:
    config = NexmarkConfig(num_events=10**6, out_of_order_group_size=size)
    assert [config.event_number(p) for p in range(3000)] == list(range(3000))


def test_auction_lengths_are_the_references_bounds() -> None:
    config = NexmarkConfig(num_events=10**6, events_per_second=7_000, num_in_flight_auctions=40)
    events_for_auctions = 40 * 50 // 3
    for n in NUMBERS[:2000]:
        horizon = config.timestamp(n + events_for_auctions) - config.timestamp(n)
        # 1 + nextLong(max(horizon * 2, 1)): 1 to max(2 horizon, 1)
        assert config.auction_length_range(n) == (1, max(horizon * 2, 1))


def test_extra_lengths_are_the_references() -> None:
    for average in (0, 1, 4, 5, 100, 200, 500, 1000):
        for current in range(0, 600, 7):
            sizes = ref_extra_sizes(current, average)
            assert extra_length_range(current, average) == (sizes[0], sizes[-1])
    assert extra_length_range(32, 100) == (54, 81)  # a bid's extra with the defaults


def test_channel_ids_are_java_abs_of_integer_reverse() -> None:
    for channel in [*range(NUM_CHANNELS), 2**20 + 5]:
        assert channel_id(channel) == ref_abs_reverse(channel), channel
    assert channel_id(1) == -(2**31)  # Math.abs(Integer.MIN_VALUE)


# ------------------------------------------------------------------------- configuration


def test_defaults_are_the_references() -> None:
    config = NexmarkConfig()
    assert config.events_per_second == 10_000
    assert config.inter_event_delay_us == 100
    assert (config.hot_auction_ratio, config.hot_sellers_ratio, config.hot_bidders_ratio) == (
        2,
        4,
        4,
    )
    assert (config.num_active_people, config.num_in_flight_auctions) == (1000, 100)
    assert (
        config.avg_person_byte_size,
        config.avg_auction_byte_size,
        config.avg_bid_byte_size,
    ) == (200, 500, 100)
    assert config.first_event_time == BASE_TIME == datetime(2015, 7, 15, tzinfo=UTC)
    assert config.auction_horizon_events == 1666


def test_first_event_time_takes_datetimes_and_millis() -> None:
    eastern = timezone(timedelta(hours=-5))
    aware = NexmarkConfig(first_event_time=datetime(2020, 1, 1, 5, tzinfo=eastern))
    naive = NexmarkConfig(first_event_time=datetime(2020, 1, 1, 10))  # noqa: DTZ001 - UTC
    millis = NexmarkConfig(first_event_time=1_577_872_800_000)
    assert aware.base_time == naive.base_time == millis.base_time == 1_577_872_800_000
    assert millis.timestamp(25) == 1_577_872_800_002


@pytest.mark.parametrize(
    ("field", "value", "error", "message"),
    [
        ("num_events", 0, ValueError, "num_events must be an int >= 1, got 0"),
        ("num_events", 2.5, TypeError, "num_events must be an int >= 1, got 2.5"),
        ("num_events", True, TypeError, "num_events must be an int >= 1, got True"),
        ("events_per_second", 0, ValueError, "events_per_second must be an int in"),
        ("events_per_second", 2_000_000, ValueError, "got 2000000"),
        ("out_of_order_group_size", 0, ValueError, "out_of_order_group_size must be"),
        ("out_of_order_group_size", 1906, ValueError, "not be a multiple of 953, got 1906"),
        ("hot_auction_ratio", 0, ValueError, "hot_auction_ratio must be an int >= 1, got 0"),
        ("hot_sellers_ratio", -1, ValueError, "hot_sellers_ratio must be an int >= 1, got -1"),
        ("hot_bidders_ratio", "4", TypeError, "hot_bidders_ratio must be an int >= 1, got '4'"),
        ("num_active_people", 0, ValueError, "num_active_people must be an int >= 1, got 0"),
        ("num_in_flight_auctions", 0, ValueError, "num_in_flight_auctions must be"),
        ("avg_bid_byte_size", -1, ValueError, "avg_bid_byte_size must be an int in [0, 65536]"),
        ("avg_person_byte_size", 70_000, ValueError, "got 70000"),
        ("seed", 2**63, ValueError, "seed must be an int in"),
        ("num_partitions", 0, ValueError, "num_partitions must be an int >= 1, got 0"),
        ("first_event_time", "2020-01-01", TypeError, "first_event_time must be a datetime"),
        ("first_event_time", 2**60, ValueError, "first_event_time must be between year 1"),
    ],
)
def test_bad_parameters_are_refused_naming_them(
    field: str, value: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        NexmarkConfig(**{field: value})  # type: ignore[arg-type]


def test_events_running_past_year_9999_are_refused() -> None:
    with pytest.raises(ValueError, match="run past year 9999"):
        NexmarkConfig(
            num_events=10**12,
            events_per_second=1,
            first_event_time=datetime(9000, 1, 1, tzinfo=UTC),
        )
    NexmarkConfig(num_events=10**12, events_per_second=1_000_000)  # 11.6 days: fine


def test_the_config_is_frozen() -> None:
    config = NexmarkConfig()
    with pytest.raises(AttributeError):
        config.seed = 3  # type: ignore[misc]


# --------------------------------------------------------------------------------- pools


def test_the_text_pool_has_the_references_characters() -> None:
    pool = text_pool(7)
    assert len(pool) == TEXT_POOL_LENGTH
    assert set(pool) <= set("abcdefghijklmnopqrstuvwxyz ")
    counts = Counter(pool)
    assert abs(counts[" "] / len(pool) - 1 / 13) < 0.01
    letters = [counts[c] / (len(pool) - counts[" "]) for c in "abcdefghijklmnopqrstuvwxyz"]
    assert max(letters) < 1 / 26 * 1.3 and min(letters) > 1 / 26 * 0.7


def test_the_letters_pool_is_letters() -> None:
    pool = letters_pool(7, 26_000)
    assert len(pool) == 26_000
    counts = Counter(pool)
    assert set(counts) == set("abcdefghijklmnopqrstuvwxyz")
    assert max(counts.values()) < 1000 * 1.15 and min(counts.values()) > 1000 * 0.85


def test_pools_are_fixed_by_the_seed() -> None:
    assert text_pool(1) == text_pool(1)
    assert text_pool(1) != text_pool(2)
    assert letters_pool(1, 500) == letters_pool(1, 1000)[:500]
    assert letters_pool(1, 500) != letters_pool(2, 500)
    assert hot_urls(3) == hot_urls(3) != hot_urls(4)
    assert channel_urls(3)[:50] != channel_urls(4)[:50]


def test_urls_are_the_references_shape() -> None:
    shape = r"https://www\.nexmark\.com/[a-z_]{3,4}/[a-z_]{3,4}/[a-z_]{3,4}/item\.htm\?query=1"
    urls = channel_urls(0)
    assert len(urls) == NUM_CHANNELS
    assert len(hot_urls(0)) == len(HOT_CHANNELS)
    for url in hot_urls(0):
        assert re.fullmatch(shape, url), url
    with_id = 0
    for channel, url in enumerate(urls):
        match = re.fullmatch(f"({shape})(&channel_id=(-?[0-9]+))?", url)
        assert match, url
        if match.group(2):
            with_id += 1
            assert int(match.group(3)) == channel_id(channel)
    assert abs(with_id / NUM_CHANNELS - 0.9) < 0.02
