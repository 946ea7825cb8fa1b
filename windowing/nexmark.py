"""The arithmetic of the Nexmark benchmark's event generator: which event an event number is,
the id spaces of people and auctions, the event time of an event number at a rate, the
out-of-order groups, and the generator's configuration (:class:`NexmarkConfig`).

Nexmark's generator (Apache Beam's ``sdks/java/testing/nexmark`` and the Nexmark project's
Flink source) derives every event from its event number alone. Of each 50 consecutive numbers
the first is a new person, the next three are new auctions and the last 46 are bids; ids are
consecutive per kind (people and auctions both start at 1000); an auction's seller and a bid's
auction and bidder are drawn among the recent ones, "hot" ones most of the time. The event at
position ``k`` of the stream has event number ``k`` unless out-of-order groups are configured,
and the event number gives its time: ``first_event_time`` plus ``number`` inter-event delays.

These are the integer rules. The Spark generator (:mod:`windowing.spark.nexmark`) computes
them with column expressions; this module does not import Spark, so the rules are tested on
their own. Only the random draws differ from the reference
(:mod:`windowing.spark.nexmark.columns`).

Examples
--------
>>> [event_type(n).name for n in (0, 1, 3, 4, 49, 50)]
['PERSON', 'AUCTION', 'AUCTION', 'BID', 'BID', 'PERSON']
>>> last_base0_person_id(120), last_base0_auction_id(120)
(2, 8)
>>> config = NexmarkConfig(num_events=20, out_of_order_group_size=10)
>>> [config.event_number(position) for position in range(10)]
[0, 3, 6, 9, 2, 5, 8, 1, 4, 7]
>>> config.inter_event_delay_us, config.timestamp(25) - config.base_time
(100, 2)
"""

from __future__ import annotations

import enum
import functools
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from windowing.time import datetime_to_millis

__all__ = [
    "AUCTION_ID_LEAD",
    "AUCTION_PROPORTION",
    "BASE_TIME",
    "BID_PROPORTION",
    "FIRST_AUCTION_ID",
    "FIRST_CATEGORY_ID",
    "FIRST_NAMES",
    "FIRST_PERSON_ID",
    "HOT_CHANNELS",
    "HOT_CHANNELS_RATIO",
    "HOT_GROUP",
    "LAST_NAMES",
    "MAX_EVENTS_PER_SECOND",
    "NUM_CATEGORIES",
    "NUM_CHANNELS",
    "OUT_OF_ORDER_MULTIPLIER",
    "PERSON_ID_LEAD",
    "PERSON_PROPORTION",
    "PROPORTION_DENOMINATOR",
    "TEXT_POOL_LENGTH",
    "US_CITIES",
    "US_STATES",
    "EventType",
    "NexmarkConfig",
    "auction_id_range",
    "channel_id",
    "channel_urls",
    "event_type",
    "extra_length_range",
    "hot_auction",
    "hot_bidder",
    "hot_seller",
    "hot_urls",
    "last_base0_auction_id",
    "last_base0_person_id",
    "letters_pool",
    "person_id_range",
    "text_pool",
]

#: Of each :data:`PROPORTION_DENOMINATOR` consecutive event numbers, this many people first,
PERSON_PROPORTION = 1
#: then this many auctions,
AUCTION_PROPORTION = 3
#: then this many bids.
BID_PROPORTION = 46
PROPORTION_DENOMINATOR = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION
#: The first person's id (ids start there so that small runs still join).
FIRST_PERSON_ID = 1000
#: The first auction's id.
FIRST_AUCTION_ID = 1000
#: Auction categories are ``FIRST_CATEGORY_ID`` to ``FIRST_CATEGORY_ID + NUM_CATEGORIES - 1``.
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5
#: A seller or bidder may be one of this many people not created yet.
PERSON_ID_LEAD = 10
#: A bid may be for one of this many auctions not created yet.
AUCTION_ID_LEAD = 10
#: The hot seller is the first person of the last group of this many, the hot bidder the
#: second, the hot auction the first auction of the last group of this many.
HOT_GROUP = 100
#: Position ``k`` of an out-of-order group of ``n`` events has the number
#: ``group start + (k * 953) % n``.
OUT_OF_ORDER_MULTIPLIER = 953
#: A bid's channel is a hot one unless a draw among this many is 0.
HOT_CHANNELS_RATIO = 2
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
#: The other channels are ``channel-0`` to ``channel-9999``.
NUM_CHANNELS = 10_000
US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
US_CITIES = (
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
)
FIRST_NAMES = (
    "Peter",
    "Paul",
    "Luke",
    "John",
    "Saul",
    "Vicky",
    "Kate",
    "Julie",
    "Sarah",
    "Deiter",
    "Walter",
)
LAST_NAMES = (
    "Shultz",
    "Abrams",
    "Spencer",
    "White",
    "Bartels",
    "Walton",
    "Smith",
    "Jones",
    "Noris",
)
#: Beam's fixed time of the first event, so that runs are the same.
BASE_TIME = datetime(2015, 7, 15, tzinfo=UTC)
#: The inter-event delay is whole microseconds: 1 at this rate.
MAX_EVENTS_PER_SECOND = 1_000_000
#: Random strings are windows of a pool this long (:func:`text_pool`).
TEXT_POOL_LENGTH = 8192
_MIN_STRING_LENGTH = 3
_MAX_AVG_BYTE_SIZE = 65_536
# Spark's timestamps, and Python's datetimes: year 1 to year 9999.
_MIN_MILLIS = -62_135_596_800_000
_END_MILLIS = 253_402_300_800_000


class EventType(enum.IntEnum):
    """The kind of an event: the ``event_type`` of the unified event table (Flink Nexmark's
    ``datagen``)."""

    PERSON = 0
    AUCTION = 1
    BID = 2


def event_type(event_number: int) -> EventType:
    """The kind of event ``event_number`` is."""
    offset = event_number % PROPORTION_DENOMINATOR
    if offset < PERSON_PROPORTION:
        return EventType.PERSON
    if offset < PERSON_PROPORTION + AUCTION_PROPORTION:
        return EventType.AUCTION
    return EventType.BID


def last_base0_person_id(event_number: int) -> int:
    """The id, less :data:`FIRST_PERSON_ID`, of the last person created at ``event_number``
    (this event's own when it is a person)."""
    epoch, offset = divmod(event_number, PROPORTION_DENOMINATOR)
    return epoch * PERSON_PROPORTION + min(offset, PERSON_PROPORTION - 1)


def last_base0_auction_id(event_number: int) -> int:
    """The id, less :data:`FIRST_AUCTION_ID`, of the last auction created at
    ``event_number`` (this event's own when it is an auction; ``-1`` before the first)."""
    epoch, offset = divmod(event_number, PROPORTION_DENOMINATOR)
    in_epoch = max(min(offset - PERSON_PROPORTION, AUCTION_PROPORTION - 1), -1)
    return epoch * AUCTION_PROPORTION + in_epoch


def hot_seller(event_number: int) -> int:
    """The hot seller of an auction at ``event_number`` (base 0)."""
    return last_base0_person_id(event_number) // HOT_GROUP * HOT_GROUP


def hot_bidder(event_number: int) -> int:
    """The hot bidder of a bid at ``event_number`` (base 0): the second person of the group,
    so that hot sellers and hot bidders differ."""
    return last_base0_person_id(event_number) // HOT_GROUP * HOT_GROUP + 1


def hot_auction(event_number: int) -> int:
    """The hot auction of a bid at ``event_number`` (base 0)."""
    return last_base0_auction_id(event_number) // HOT_GROUP * HOT_GROUP


def person_id_range(event_number: int, num_active_people: int) -> tuple[int, int]:
    """The smallest and largest person (base 0) a seller or bidder that is not the hot one
    can be at ``event_number``: one of the last ``num_active_people`` people, or one of the
    next :data:`PERSON_ID_LEAD`."""
    people = last_base0_person_id(event_number) + 1
    active = min(people, num_active_people)
    return people - active, people - 1 + PERSON_ID_LEAD


def auction_id_range(event_number: int, num_in_flight_auctions: int) -> tuple[int, int]:
    """The smallest and largest auction (base 0) a bid that is not for the hot auction can be
    for at ``event_number``: one of the last ``num_in_flight_auctions + 1`` auctions, or one
    of the next :data:`AUCTION_ID_LEAD`."""
    last = last_base0_auction_id(event_number)
    return max(last - num_in_flight_auctions, 0), last + AUCTION_ID_LEAD


def extra_length_range(current_size: int, average_size: int) -> tuple[int, int]:
    """The shortest and longest ``extra`` of an event whose other fields take
    ``current_size`` bytes, for events of ``average_size`` bytes on average: the rest, give
    or take 20% (rounded half up, as Java's ``Math.round``); empty when there is no rest."""
    if current_size > average_size:
        return 0, 0
    desired = average_size - current_size
    delta = int(desired * 0.2 + 0.5)
    if delta == 0:
        return desired, desired
    return desired - delta, desired + delta - 1


def channel_id(channel: int) -> int:
    """The ``channel_id`` of a channel's url: the absolute value of Java's
    ``Integer.reverse(channel)`` (its 32 bits in reverse order), as a Java ``int``
    (``Math.abs`` of ``-2**31`` stays ``-2**31``).

    >>> channel_id(0), channel_id(1), channel_id(2), channel_id(3)
    (0, -2147483648, 1073741824, 1073741824)
    """
    reversed_bits = int(f"{channel & 0xFFFFFFFF:032b}"[::-1], 2)
    signed = reversed_bits - (1 << 32) if reversed_bits >= 1 << 31 else reversed_bits
    return signed if signed == -(1 << 31) else abs(signed)


@dataclass(frozen=True)
class NexmarkConfig:
    """What the Nexmark generator makes: how many events, when, and the shape of the data.

    The defaults are the reference's (Beam's ``NexmarkConfiguration``; the Nexmark project's
    Flink source has the same rates and ratios): 10,000 events a second from Beam's fixed
    2015-07-15T00:00:00Z (the Flink source starts at the wall clock), half the bids for a hot
    auction, three quarters of the bids by a hot bidder and of the auctions by a hot seller.
    One generator, its first event number 0: the reference's ``numEventGenerators`` parallel
    timelines and its rate shapes (a rate changing over time) are not modelled; Spark
    computes the one timeline in parallel.

    Parameters
    ----------
    num_events
        How many events (people, auctions and bids together).
    first_event_time
        The time of event number 0: a :class:`~datetime.datetime` (naive: UTC) or epoch
        milliseconds.
    events_per_second
        The rate in event time. Events are ``round(10**6 / events_per_second)`` whole
        microseconds apart (the reference's rounding), so at most 1,000,000 a second.
    out_of_order_group_size
        Each group of this many consecutive events is emitted in a fixed scrambled order
        (position ``k`` has number ``group start + (k * 953) % size``); 1: in order. Sizes
        dividing 952 (2, 4, 7, 8, ...) leave the order unchanged, as in the reference;
        multiples of 953 would repeat events and are refused.
    hot_auction_ratio, hot_bidders_ratio, hot_sellers_ratio
        A bid is for the hot auction, a bid by the hot bidder, an auction by the hot seller,
        with probability ``1 - 1 / ratio`` (1: never).
    num_active_people
        Sellers and bidders that are not the hot one are among the last this many people.
    num_in_flight_auctions
        Bids that are not for the hot auction are for one of the last this many auctions;
        auctions last twice the time of this many auctions at most (on average the time
        until this many more auctions are created).
    avg_person_byte_size, avg_auction_byte_size, avg_bid_byte_size
        The ``extra`` string pads events to these sizes on average.
    seed
        The seed of every draw: the same seed gives the same events.
    num_partitions
        Spark partitions of the generated events (``None``: Spark's default parallelism).

    Examples
    --------
    >>> NexmarkConfig(num_events=1_000_000, events_per_second=50_000).inter_event_delay_us
    20
    >>> NexmarkConfig(num_events=0)
    Traceback (most recent call last):
    ...
    ValueError: NexmarkConfig: num_events must be an int >= 1, got 0
    """

    num_events: int = 100_000
    first_event_time: datetime | int = BASE_TIME
    events_per_second: int = 10_000
    out_of_order_group_size: int = 1
    hot_auction_ratio: int = 2
    hot_sellers_ratio: int = 4
    hot_bidders_ratio: int = 4
    num_active_people: int = 1000
    num_in_flight_auctions: int = 100
    avg_person_byte_size: int = 200
    avg_auction_byte_size: int = 500
    avg_bid_byte_size: int = 100
    seed: int = 0
    num_partitions: int | None = None

    def __post_init__(self) -> None:
        _require_int("num_events", self.num_events, 1)
        _require_int("events_per_second", self.events_per_second, 1, MAX_EVENTS_PER_SECOND)
        _require_int("out_of_order_group_size", self.out_of_order_group_size, 1)
        if self.out_of_order_group_size % OUT_OF_ORDER_MULTIPLIER == 0:
            msg = (
                f"NexmarkConfig: out_of_order_group_size must not be a multiple of "
                f"{OUT_OF_ORDER_MULTIPLIER}, got {self.out_of_order_group_size} (the "
                "reference's scrambling would repeat events and drop others)"
            )
            raise ValueError(msg)
        for name in ("hot_auction_ratio", "hot_sellers_ratio", "hot_bidders_ratio"):
            _require_int(name, getattr(self, name), 1)
        _require_int("num_active_people", self.num_active_people, 1)
        _require_int("num_in_flight_auctions", self.num_in_flight_auctions, 1)
        for name in ("avg_person_byte_size", "avg_auction_byte_size", "avg_bid_byte_size"):
            _require_int(name, getattr(self, name), 0, _MAX_AVG_BYTE_SIZE)
        _require_int("seed", self.seed, -(2**63), 2**63 - 1)
        if self.num_partitions is not None:
            _require_int("num_partitions", self.num_partitions, 1)
        self._check_time()

    def _check_time(self) -> None:
        start = self.first_event_time
        if not isinstance(start, datetime):
            if isinstance(start, bool) or not isinstance(start, int):
                msg = (
                    "NexmarkConfig: first_event_time must be a datetime or int epoch "
                    f"milliseconds, got {start!r}"
                )
                raise TypeError(msg)
            if not _MIN_MILLIS <= start < _END_MILLIS:
                msg = (
                    "NexmarkConfig: first_event_time must be between year 1 and year 9999, "
                    f"got {start} ms"
                )
                raise ValueError(msg)
        # The largest event number a position can have (a last, incomplete out-of-order
        # group takes its numbers from the whole group), and when its auction would end.
        last = self.num_events - 1 + self.out_of_order_group_size
        end = self.timestamp(last) + self.auction_length_range(last)[1]
        if end >= _END_MILLIS:
            msg = (
                f"NexmarkConfig: num_events={self.num_events} at events_per_second="
                f"{self.events_per_second} from {self.first_event_time!r} run past year 9999"
            )
            raise ValueError(msg)

    @property
    def base_time(self) -> int:
        """The time of event number 0, epoch milliseconds."""
        start = self.first_event_time
        return datetime_to_millis(start) if isinstance(start, datetime) else start

    @property
    def inter_event_delay_us(self) -> int:
        """Microseconds between consecutive event numbers: ``10**6 / events_per_second``
        rounded half up, as the reference's ``rateToPeriodUs``."""
        rate = self.events_per_second
        return (1_000_000 + rate // 2) // rate

    @property
    def auction_horizon_events(self) -> int:
        """How many events it takes to create ``num_in_flight_auctions`` auctions (the
        reference's ``numEventsForAuctions``)."""
        return self.num_in_flight_auctions * PROPORTION_DENOMINATOR // AUCTION_PROPORTION

    def timestamp(self, event_number: int) -> int:
        """The event time (epoch milliseconds) of ``event_number``: the first event's time
        plus ``event_number`` inter-event delays, whole milliseconds rounded down."""
        return self.base_time + event_number * self.inter_event_delay_us // 1000

    def event_number(self, position: int) -> int:
        """The event number of the event at ``position`` of the stream (the reference's
        ``nextAdjustedEventNumber``): ``position`` itself unless out-of-order groups
        scramble it within its group."""
        size = self.out_of_order_group_size
        return position // size * size + position * OUT_OF_ORDER_MULTIPLIER % size

    def stream_position(self, event_number: int) -> int:
        """The position in the stream of the event ``event_number`` (the inverse of
        :meth:`event_number`): in its own out-of-order group, at the offset ``k`` with
        ``(k * 953) % size`` equal to the number's offset in the group.

        The reference generator emits the event at position ``k`` at the wall-clock time of
        :meth:`timestamp` ``(k)`` (relative to its start), while the event carries the time of
        its number: a replay's arrival time (:meth:`arrival_time`)."""
        size = self.out_of_order_group_size
        group = event_number // size * size
        return group + (event_number - group) * self.out_of_order_inverse % size

    def arrival_time(self, event_number: int) -> int:
        """When the event ``event_number`` arrives in a replay at the configured rate (epoch
        ms): the time of its stream position, the reference generator's wall-clock time for
        it; its own event time is :meth:`timestamp` ``(event_number)``."""
        return self.timestamp(self.stream_position(event_number))

    @property
    def out_of_order_inverse(self) -> int:
        """The inverse of 953 modulo ``out_of_order_group_size`` (0 for groups of one):
        ``(n * inverse) % size`` is the offset in its group of the position of the number
        at offset ``n``."""
        size = self.out_of_order_group_size
        return 0 if size == 1 else pow(OUT_OF_ORDER_MULTIPLIER, -1, size)

    def auction_length_range(self, event_number: int) -> tuple[int, int]:
        """The shortest and longest time (ms) an auction created at ``event_number`` lasts:
        1 to twice the time until ``num_in_flight_auctions`` more auctions are created."""
        horizon = self.timestamp(event_number + self.auction_horizon_events)
        horizon -= self.timestamp(event_number)
        return 1, max(2 * horizon, 1)

    @property
    def max_extra_length(self) -> int:
        """The longest ``extra`` any event can have."""
        longest = max(self.avg_person_byte_size, self.avg_auction_byte_size)
        return max(longest, self.avg_bid_byte_size) * 6 // 5 + 1


def _require_int(name: str, value: Any, low: int, high: int | None = None) -> None:
    """A ``TypeError`` or ``ValueError`` naming the parameter and the value unless it is an
    int in ``[low, high]``."""
    bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"NexmarkConfig: {name} must be an int {bounds}, got {value!r}"
        raise TypeError(msg)
    if value < low or (high is not None and value > high):
        msg = f"NexmarkConfig: {name} must be an int {bounds}, got {value!r}"
        raise ValueError(msg)


class _Stream:
    """Uniform draws from a seed and a purpose (BLAKE2b in counter mode): the same on every
    Python version and machine."""

    def __init__(self, seed: int, purpose: str) -> None:
        self._prefix = f"{seed}:{purpose}:".encode()
        self._counter = 0
        self._buffer = b""

    def _bytes(self, n: int) -> bytes:
        while len(self._buffer) < n:
            block = hashlib.blake2b(self._prefix + str(self._counter).encode()).digest()
            self._buffer += block
            self._counter += 1
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def below(self, bound: int) -> int:
        """A uniform int in ``[0, bound)``, ``bound <= 2**16`` (rejection sampling)."""
        limit = (1 << 16) // bound * bound
        while True:
            value = int.from_bytes(self._bytes(2), "big")
            if value < limit:
                return value % bound


def _letter(stream: _Stream, special: str) -> str:
    """One character of the reference's ``nextString``: ``special`` one time in 13, else a
    letter ``a`` to ``z``."""
    value = stream.below(13 * 26)
    return special if value % 13 == 0 else chr(ord("a") + value // 13)


def text_pool(seed: int, length: int = TEXT_POOL_LENGTH) -> str:
    """The characters random strings (item names, descriptions, emails) are windows of:
    each a space one time in 13, else a letter ``a`` to ``z``, independent, as each
    character of the reference's ``nextString``."""
    stream = _Stream(seed, "text")
    return "".join(_letter(stream, " ") for _ in range(length))


def letters_pool(seed: int, length: int) -> str:
    """The characters ``extra`` strings are windows of: letters ``a`` to ``z``, uniform
    (the reference's ``nextExactString``; the Nexmark project's Flink source also takes
    ``extra`` as a window of one long random string)."""
    stream = _Stream(seed, "letters")
    return "".join(chr(ord("a") + stream.below(26)) for _ in range(length))


def _url(stream: _Stream) -> str:
    """A channel's url without its ``channel_id``: three path parts of 3 or 4 characters,
    ``_`` one time in 13 (the reference's ``getBaseUrl``)."""

    def part() -> str:
        size = _MIN_STRING_LENGTH + stream.below(5 - _MIN_STRING_LENGTH)
        return "".join(_letter(stream, "_") for _ in range(size))

    return f"https://www.nexmark.com/{part()}/{part()}/{part()}/item.htm?query=1"


@functools.lru_cache(maxsize=4)
def hot_urls(seed: int) -> tuple[str, ...]:
    """The url of each of the :data:`HOT_CHANNELS` (random per run in the reference, fixed
    by the seed here)."""
    stream = _Stream(seed, "hot-urls")
    return tuple(_url(stream) for _ in HOT_CHANNELS)


@functools.lru_cache(maxsize=4)
def channel_urls(seed: int) -> tuple[str, ...]:
    """The url of each channel ``channel-0`` to ``channel-9999``: drawn once (the
    reference's ``CHANNEL_URL_CACHE``, random per run there, fixed by the seed here), and
    for 9 channels in 10 followed by ``&channel_id=`` and :func:`channel_id`."""
    stream = _Stream(seed, "channel-urls")
    urls = []
    for channel in range(NUM_CHANNELS):
        url = _url(stream)
        if stream.below(10) > 0:
            url += f"&channel_id={channel_id(channel)}"
        urls.append(url)
    return tuple(urls)
