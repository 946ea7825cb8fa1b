"""The column expressions of Nexmark's events (:class:`EventColumns`): each field of a person,
auction or bid as a Spark expression of ``event_number``.

The reference seeds ``java.util.Random`` with each event's number and draws the fields in
turn; column expressions cannot replay that generator. Each draw here is instead
``xxhash64(seed, event number, draw)`` reduced to the draw's range: the fields have the
reference's distributions (the same choices, bounds and probabilities) and a seed gives the
same events every time, but they are not the reference's numbers. Random strings are windows
of a pool of random characters drawn once from the seed (:func:`~windowing.nexmark.text_pool`,
:func:`~windowing.nexmark.letters_pool`) rather than characters drawn one by one: their
lengths and character frequencies are the reference's, but strings at neighbouring offsets
share characters.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from windowing.nexmark import (
    AUCTION_ID_LEAD,
    AUCTION_PROPORTION,
    FIRST_AUCTION_ID,
    FIRST_CATEGORY_ID,
    FIRST_NAMES,
    FIRST_PERSON_ID,
    HOT_CHANNELS,
    HOT_CHANNELS_RATIO,
    HOT_GROUP,
    LAST_NAMES,
    NUM_CATEGORIES,
    NUM_CHANNELS,
    PERSON_ID_LEAD,
    PERSON_PROPORTION,
    PROPORTION_DENOMINATOR,
    TEXT_POOL_LENGTH,
    US_CITIES,
    US_STATES,
    NexmarkConfig,
    channel_urls,
    extra_length_range,
    hot_urls,
    letters_pool,
    text_pool,
)

__all__ = ["EventColumns", "Projections", "integral_div"]


class _Draw(enum.IntEnum):
    """What a draw is for: the last input of its hash, so that an event's draws are
    independent. Part of what a seed means: never renumber."""

    FIRST_NAME = 1
    LAST_NAME = 2
    EMAIL_USER = 3
    EMAIL_DOMAIN = 4
    CARD_1 = 5
    CARD_2 = 6
    CARD_3 = 7
    CARD_4 = 8
    CITY = 9
    STATE = 10
    PERSON_EXTRA = 11
    HOT_SELLER = 12
    SELLER = 13
    CATEGORY = 14
    INITIAL_BID = 15
    AUCTION_LENGTH = 16
    ITEM_NAME = 17
    DESCRIPTION = 18
    RESERVE = 19
    AUCTION_EXTRA = 20
    HOT_AUCTION = 21
    AUCTION = 22
    HOT_BIDDER = 23
    BIDDER = 24
    PRICE = 25
    HOT_CHANNEL = 26
    CHANNEL = 27
    BID_EXTRA = 28


def integral_div(value: Column, divisor: int) -> Column:
    """Integral division of a non-negative ``bigint``, exact (SQL ``div``)."""
    return F.call_function("div", value, F.lit(divisor))


# Where the pool's letters start (after the text pool), and the channels table's urls (after
# the channels' names).
_LETTERS = TEXT_POOL_LENGTH
_CHANNELS = len(HOT_CHANNELS) + NUM_CHANNELS


def _letters_length(config: NexmarkConfig) -> int:
    """The length of the letters pool: twice the longest ``extra``, at least the text
    pool's."""
    return max(TEXT_POOL_LENGTH, 2 * config.max_extra_length)


def _window(pool: Column, start: Column, length: Column) -> Column:
    """The ``length`` characters of the binary ``pool`` from offset ``start``, as a string."""
    return pool.substr((start + 1).cast("int"), length.cast("int")).cast("string")


def _lit(value: int | Column) -> Column:
    return F.lit(value) if isinstance(value, int) else value


def _pick(values: Sequence[str], index: Column) -> Column:
    """``values[index]``."""
    return F.element_at(F.array(*[F.lit(v) for v in values]), (index + 1).cast("int"))


class EventColumns:
    """The column expressions of the events of ``config``, over a frame with
    ``event_number``; ``pool`` and ``channels`` are the constants of :meth:`of`."""

    def __init__(self, config: NexmarkConfig, pool: Column, channels: Column) -> None:
        self.config = config
        self.pool = pool
        self.channels = channels
        self.number = F.col("event_number")
        self.offset = F.pmod(self.number, F.lit(PROPORTION_DENOMINATOR))

    @classmethod
    def of(cls, spark: SparkSession, config: NexmarkConfig) -> EventColumns:
        """The expressions of ``config``'s events in ``spark``.

        Their constants are scalar subqueries of one-row tables, so that the plans name them
        instead of spelling out their characters and the generated code holds them as
        constants: the pool random strings are windows of (the text pool then the letters
        pool), binary since a window of bytes is cut at its offset (a string's at its
        character offset, found by scanning from the start); and the channels table, the
        channels' names (the hot ones first) then their urls."""
        seed = config.seed
        characters = text_pool(seed) + letters_pool(seed, _letters_length(config))
        pool = spark.createDataFrame([(characters.encode("ascii"),)], "pool binary")
        names = [*HOT_CHANNELS, *[f"channel-{n}" for n in range(NUM_CHANNELS)]]
        # One string to ship, split once per query.
        text = "\n".join([*names, *hot_urls(seed), *channel_urls(seed)])
        channels = spark.createDataFrame([(text,)], "channels string")
        table = channels.select(F.split("channels", "\n").alias("channels"))
        return cls(config, pool.select("pool").scalar(), table.scalar())

    # --------------------------------------------------------------------------- draws
    def hash(self, draw: _Draw) -> Column:
        """64 random bits of ``draw`` for the event."""
        return F.xxhash64(F.lit(self.config.seed), self.number, F.lit(int(draw)))

    def below(self, draw: _Draw, bound: int | Column) -> Column:
        """A uniform ``bigint`` in ``[0, bound)`` (the reference's ``nextInt(bound)``; the
        bias, ``bound / 2**64``, is nil)."""
        return F.pmod(self.hash(draw), _lit(bound))

    def halves(self, draw: _Draw, first: int | Column, second: int) -> tuple[Column, Column]:
        """Two uniform draws in ``[0, first)`` and ``[0, second)`` from the two 32-bit halves
        of one hash (small bounds: the bias, ``bound / 2**32``, is negligible)."""
        h = self.hash(draw)
        low = F.pmod(h.bitwiseAND(F.lit(0xFFFFFFFF)), _lit(first))
        high = F.pmod(F.shiftrightunsigned(h, 32), F.lit(second))
        return low, high

    def unit(self, draw: _Draw) -> Column:
        """A uniform ``double`` in ``[0, 1)`` (53 random bits)."""
        return F.shiftrightunsigned(self.hash(draw), 11).cast("double") * (2.0**-53)

    def price(self, draw: _Draw) -> Column:
        """The reference's price: ``round(10 ** (6 u) * 100)``, u uniform in [0, 1)."""
        return F.floor(F.pow(F.lit(10.0), self.unit(draw) * 6.0) * 100.0 + 0.5).cast("bigint")

    def string(self, draw: _Draw, max_length: int) -> Column:
        """The reference's ``nextString(max_length)``: 3 to ``max_length - 1`` characters,
        a space one time in 13, trimmed."""
        length, start = self.halves(draw, max_length - 3, TEXT_POOL_LENGTH - max_length)
        return F.trim(_window(self.pool, start, length + 3))

    def extra(self, draw: _Draw, current: Column | int, average: int) -> Column:
        """The reference's ``nextExtra``: letters bringing the event to ``average`` bytes on
        average, give or take 20%."""
        starts = _letters_length(self.config) - self.config.max_extra_length
        if isinstance(current, int):
            shortest, longest = extra_length_range(current, average)
            spread, start = self.halves(draw, longest - shortest + 1, starts)
            return _window(self.pool, start + _LETTERS, spread + shortest)
        desired = F.lit(average) - current
        delta = F.floor(desired * 0.2 + 0.5).cast("bigint")
        spread, start = self.halves(draw, F.greatest(2 * delta, F.lit(1)), starts)
        text = _window(self.pool, start + _LETTERS, desired - delta + spread)
        return F.when(current > average, F.lit("")).otherwise(text)

    # ---------------------------------------------------------------------- id spaces
    def last_person(self) -> Column:
        """:func:`~windowing.nexmark.last_base0_person_id`."""
        epoch = integral_div(self.number, PROPORTION_DENOMINATOR)
        return epoch * PERSON_PROPORTION + F.least(self.offset, F.lit(PERSON_PROPORTION - 1))

    def last_auction(self) -> Column:
        """:func:`~windowing.nexmark.last_base0_auction_id`."""
        epoch = integral_div(self.number, PROPORTION_DENOMINATOR)
        in_epoch = F.least(self.offset - PERSON_PROPORTION, F.lit(AUCTION_PROPORTION - 1))
        return epoch * AUCTION_PROPORTION + F.greatest(in_epoch, F.lit(-1))

    def some_person(self, draw: _Draw) -> Column:
        """The reference's ``nextBase0PersonId``: one of the active people or the next
        :data:`~windowing.nexmark.PERSON_ID_LEAD`."""
        people = self.last_person() + 1
        active = F.least(people, F.lit(self.config.num_active_people))
        return people - active + self.below(draw, active + PERSON_ID_LEAD)

    def some_auction(self, draw: _Draw) -> Column:
        """The reference's ``nextBase0AuctionId``: one of the auctions in flight or the next
        :data:`~windowing.nexmark.AUCTION_ID_LEAD`."""
        last = self.last_auction()
        first = F.greatest(last - self.config.num_in_flight_auctions, F.lit(0))
        return first + self.below(draw, last - first + 1 + AUCTION_ID_LEAD)

    def hot(self, draw: _Draw, ratio: int) -> Column:
        """Whether the event takes the hot one: ``nextInt(ratio) > 0``."""
        return self.below(draw, ratio) > 0

    # ---------------------------------------------------------------------------- time
    def millis(self, number: Column | None = None) -> Column:
        """The event time of the event (or of ``number``), epoch milliseconds."""
        key = self.number if number is None else number
        delay = self.config.inter_event_delay_us
        return F.lit(self.config.base_time) + integral_div(key * delay, 1000)

    def date_time(self) -> Column:
        return F.timestamp_millis(self.millis())

    # -------------------------------------------------------------------------- events
    # Each kind's columns come in two projections: first the parts used more than once, each
    # computed once, then the columns from them (Spark inlines an expression at each use).
    # Built once: in classic PySpark each operation on a column is a call into the JVM.
    @functools.cached_property
    def person(self) -> Projections:
        """The columns of a person event."""
        name = F.concat(
            _pick(FIRST_NAMES, self.below(_Draw.FIRST_NAME, len(FIRST_NAMES))),
            F.lit(" "),
            _pick(LAST_NAMES, self.below(_Draw.LAST_NAME, len(LAST_NAMES))),
        )
        email = F.concat(
            self.string(_Draw.EMAIL_USER, 7),
            F.lit("@"),
            self.string(_Draw.EMAIL_DOMAIN, 5),
            F.lit(".com"),
        )
        groups = (_Draw.CARD_1, _Draw.CARD_2, _Draw.CARD_3, _Draw.CARD_4)
        card = F.concat_ws(
            " ", *[F.lpad(self.below(d, 10_000).cast("string"), 4, "0") for d in groups]
        )
        city = _pick(US_CITIES, self.below(_Draw.CITY, len(US_CITIES)))
        state = _pick(US_STATES, self.below(_Draw.STATE, len(US_STATES)))
        parts = {
            "name": name,
            "email_address": email,
            "credit_card": card,
            "city": city,
            "state": state,
        }
        named = Projections.prefixed("_person_", parts)
        size = F.lit(8) + sum(F.length(named.part(n)) for n in parts)
        extra = self.extra(_Draw.PERSON_EXTRA, size, self.config.avg_person_byte_size)
        named.columns = [
            (self.last_person() + FIRST_PERSON_ID).alias("id"),
            *[named.part(n).alias(n) for n in parts],
            self.date_time().alias("date_time"),
            extra.alias("extra"),
        ]
        return named

    @functools.cached_property
    def auction(self) -> Projections:
        """The columns of an auction event."""
        config = self.config
        hot_seller = integral_div(self.last_person(), HOT_GROUP) * HOT_GROUP
        seller = F.when(self.hot(_Draw.HOT_SELLER, config.hot_sellers_ratio), hot_seller)
        seller = seller.otherwise(self.some_person(_Draw.SELLER))
        horizon = self.millis(self.number + config.auction_horizon_events) - self.millis()
        length = 1 + self.below(_Draw.AUCTION_LENGTH, F.greatest(2 * horizon, F.lit(1)))
        named = Projections.prefixed(
            "_auction_",
            {
                "item_name": self.string(_Draw.ITEM_NAME, 20),
                "description": self.string(_Draw.DESCRIPTION, 100),
                "initial_bid": self.price(_Draw.INITIAL_BID),
            },
        )
        item_name, description = named.part("item_name"), named.part("description")
        initial_bid = named.part("initial_bid")
        size = F.lit(8 + 5 * 8) + F.length(item_name) + F.length(description)
        extra = self.extra(_Draw.AUCTION_EXTRA, size, config.avg_auction_byte_size)
        named.columns = [
            (self.last_auction() + FIRST_AUCTION_ID).alias("id"),
            item_name.alias("item_name"),
            description.alias("description"),
            initial_bid.alias("initial_bid"),
            (initial_bid + self.price(_Draw.RESERVE)).alias("reserve"),
            self.date_time().alias("date_time"),
            F.timestamp_millis(self.millis() + length).alias("expires"),
            (seller + FIRST_PERSON_ID).alias("seller"),
            (self.below(_Draw.CATEGORY, NUM_CATEGORIES) + FIRST_CATEGORY_ID).alias("category"),
            extra.alias("extra"),
        ]
        return named

    @functools.cached_property
    def bid(self) -> Projections:
        """The columns of a bid event."""
        config = self.config
        hot_auction = integral_div(self.last_auction(), HOT_GROUP) * HOT_GROUP
        auction = F.when(self.hot(_Draw.HOT_AUCTION, config.hot_auction_ratio), hot_auction)
        auction = auction.otherwise(self.some_auction(_Draw.AUCTION))
        hot_bidder = integral_div(self.last_person(), HOT_GROUP) * HOT_GROUP + 1
        bidder = F.when(self.hot(_Draw.HOT_BIDDER, config.hot_bidders_ratio), hot_bidder)
        bidder = bidder.otherwise(self.some_person(_Draw.BIDDER))
        # The channel: a hot one, or channel-<n>, n < 10,000 (channels and urls are looked
        # up in the channels table, the hot ones first).
        hot_channel = self.below(_Draw.CHANNEL, len(HOT_CHANNELS))
        other = len(HOT_CHANNELS) + self.below(_Draw.CHANNEL, NUM_CHANNELS)
        index = F.when(self.hot(_Draw.HOT_CHANNEL, HOT_CHANNELS_RATIO), hot_channel)
        named = Projections.prefixed("_bid_", {"channel": (index.otherwise(other) + 1).cast("int")})
        index = named.part("channel")
        channel = F.element_at(self.channels, index)
        url = F.element_at(self.channels, index + _CHANNELS)
        extra = self.extra(_Draw.BID_EXTRA, 4 * 8, config.avg_bid_byte_size)
        named.columns = [
            (auction + FIRST_AUCTION_ID).alias("auction"),
            (bidder + FIRST_PERSON_ID).alias("bidder"),
            self.price(_Draw.PRICE).alias("price"),
            channel.alias("channel"),
            url.alias("url"),
            self.date_time().alias("date_time"),
            extra.alias("extra"),
        ]
        return named


@dataclass
class Projections:
    """A kind's columns in two projections: ``parts`` (name to expression) computed first,
    then ``columns`` computed from them (:meth:`part`) and ``event_number``."""

    parts: dict[str, Column]
    columns: list[Column] = field(default_factory=list)
    prefix: str = ""

    @classmethod
    def prefixed(cls, prefix: str, parts: dict[str, Column]) -> Projections:
        return cls({prefix + name: part for name, part in parts.items()}, prefix=prefix)

    def part(self, name: str) -> Column:
        """The part ``name`` computed in the first projection."""
        return F.col(self.prefix + name)

    def named_parts(self) -> list[Column]:
        """The first projection's columns (beside ``event_number``)."""
        return [part.alias(name) for name, part in self.parts.items()]
