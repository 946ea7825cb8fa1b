"""The Nexmark benchmark's events as Spark DataFrames: people, auctions and bids derived from
the event number as the reference generator derives them (Apache Beam's Nexmark
``Generator``, which the Nexmark project's Flink source follows), computed in parallel from
``spark.range`` with column expressions.

Example::

    from windowing.spark.nexmark import NexmarkConfig, NexmarkGenerator

    generator = NexmarkGenerator(spark, NexmarkConfig(num_events=10_000_000, seed=7))
    bids = generator.bids()               # a batch DataFrame
    replay = generator.write_micro_batches("/data/nexmark", table="bids",
                                           events_per_batch=1_000_000)
    stream = replay.read_stream(spark)    # the same bids, one file per micro-batch

The random draws are hashes of the seed and the event number, not the reference's
``java.util.Random``: the values have the reference's distributions, not its numbers
(:mod:`windowing.spark.nexmark.generator`).
"""

from windowing.nexmark import EventType, NexmarkConfig
from windowing.spark.nexmark.generator import NexmarkGenerator, NexmarkTable
from windowing.spark.nexmark.micro_batches import NexmarkMicroBatches

__all__ = ["EventType", "NexmarkConfig", "NexmarkGenerator", "NexmarkMicroBatches", "NexmarkTable"]
