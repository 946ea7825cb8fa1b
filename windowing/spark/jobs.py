"""Facts of a job the runtimes share: its window operator, its key groups, its clocks (no
decision of how it runs: that is :mod:`windowing.spark.planning`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from pyspark.errors import utils as _errors_utils
from pyspark.sql import DataFrame, SparkSession

from windowing.assigners import is_processing_time_assigner
from windowing.functions.spec import WindowFunctionSpec
from windowing.idleness import Idleness
from windowing.job import Job, WindowConfig
from windowing.operator import WindowOperator

__all__ = [
    "BYTES_PER_KEY_GROUP",
    "SMALL_INPUT_BYTES",
    "SMALL_INPUT_CONF",
    "batch_key_groups",
    "estimated_bytes",
    "idleness_of",
    "one_task",
    "shuffle_partitions",
    "small_input_bytes",
    "streaming_key_groups",
    "streaming_time_mode",
    "uses_wall_clock",
    "window_operator",
    "without_call_sites",
]


def window_operator(
    window: WindowConfig, spec: WindowFunctionSpec, *, count_rows: bool = False
) -> WindowOperator:
    """The window operator of ``window`` with the function ``spec`` (validates the
    combination); ``count_rows``: it counts the rows each window takes in (the streaming
    runtime, for ``read_state``)."""
    return WindowOperator(
        window.assigner,
        spec,
        trigger=window.trigger,
        evictor=window.evictor,
        allowed_lateness=window.allowed_lateness,
        late_output_tag=window.late_output_tag,
        slicing=window.slicing,
        on_error=window.on_error,
        pane_info=window.pane_info,
        count_rows=count_rows,
    )


def shuffle_partitions(spark: SparkSession) -> int:
    """``spark.sql.shuffle.partitions`` (8 when it is not a number, e.g. ``auto``)."""
    try:
        return int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    except ValueError:
        return 8


def uses_wall_clock(job: Job) -> bool:
    """Whether a streaming job runs on the wall clock (a processing-time assigner without a
    ``processing_time`` column: Spark's ProcessingTime mode)."""
    return is_processing_time_assigner(job.config.assigner) and job.source.processing_time is None


def idleness_of(job: Job) -> Idleness | None:
    """The job's idle rule (``WindowedStream.idle_timeout``), if any."""
    timeout = job.config.idle_timeout
    return None if timeout is None else Idleness(timeout, job.source.watermark)


def streaming_time_mode(job: Job) -> str:
    """The ``timeMode`` of a streaming job's stateful step: ``ProcessingTime`` on the wall
    clock or with an idle timeout (a micro-batch every trigger interval, even without
    input), else ``EventTime``."""
    return "ProcessingTime" if uses_wall_clock(job) or idleness_of(job) else "EventTime"


def streaming_key_groups(job: Job) -> int:
    """The key groups of a streaming job's state (one for a non-keyed stream)."""
    return job.config.max_parallelism if job.keys else 1


#: Input bytes (Spark's estimate) a key group of the batch replay takes before another one is
#: used: a Python call costs about a millisecond, and tens of thousands of rows are converted
#: in about as long, so smaller groups only add calls (and tasks) to a small job.
BYTES_PER_KEY_GROUP = 4 << 20


def batch_key_groups(job: Job, size: int | None) -> int:
    """The key groups of a batch replay: one Python call each, as many as the input's size
    needs. ``size``, Spark's estimate of the input's size (:func:`estimated_bytes`), gives a
    group per :data:`BYTES_PER_KEY_GROUP`, and at least Spark's default parallelism once
    there is more than one; at most ``max(max_parallelism, spark.sql.shuffle.partitions)``,
    which is also the number when the size is unknown; one for a non-keyed stream (one key).
    The results never depend on the grouping."""
    if not job.keys:
        return 1
    spark = job.source.df.sparkSession
    most = max(job.config.max_parallelism, shuffle_partitions(spark))
    if size is None:
        return most
    needed = -(-size // BYTES_PER_KEY_GROUP)
    if needed > 1:
        needed = max(needed, spark.sparkContext.defaultParallelism)
    return max(1, min(needed, most))


def one_task(groups: int, size: int | None) -> bool:
    """Whether a batch replay of ``groups`` key groups over an input Spark estimates at
    ``size`` bytes runs in one task without a shuffle: one key group of a small input
    (at most :data:`BYTES_PER_KEY_GROUP`; a non-keyed stream of a larger or unknown size
    still shuffles, so that the input is read in parallel). A Spark job costs tens of
    milliseconds to schedule: a small job is mostly that."""
    return groups == 1 and size is not None and size <= BYTES_PER_KEY_GROUP


def estimated_bytes(df: DataFrame) -> int | None:
    """Spark's estimate of the size of ``df``'s rows in bytes (the analyzed plan's
    statistics: the files' sizes, a local relation's rows, a cached frame's size), or
    ``None`` when Spark has none (its default estimate, ``spark.sql.defaultSizeInBytes``,
    or no JVM plan to ask, as in Spark Connect)."""
    try:
        size = int(df._jdf.queryExecution().analyzed().stats().sizeInBytes())
        default = int(df.sparkSession._jsparkSession.sessionState().conf().defaultSizeInBytes())
    except Exception:  # no estimate (e.g. no JVM plan): the default number of groups
        return None
    return None if size >= default else size


@contextlib.contextmanager
def without_call_sites() -> Iterator[None]:
    """Build the library's own Spark plan without recording Python call sites.

    Classic PySpark records the call site of every column operation (``a + b``,
    ``.alias``, ``.cast``: about ten calls to the JVM each, for the ``DataFrame`` context of
    an error message) unless ``spark.python.sql.dataFrameDebugging.enabled`` is false. A
    plan of the library has hundreds of such operations, all inside the library: their
    call sites would only point into it, and recording them costs most of a small job's
    build time. This switches the recording off while the library builds a plan, as that
    setting does, and restores it after (the user's own calls keep their call sites)."""
    name = "_enable_debugging_cache"  # PySpark's cached value of that setting
    with _CALL_SITES_LOCK:  # nested or in several threads: the first in restores it
        if _CALL_SITES_OFF[0] == 0:
            _CALL_SITES_OFF[1] = getattr(_errors_utils, name, None)
            setattr(_errors_utils, name, False)
        _CALL_SITES_OFF[0] += 1
    try:
        yield
    finally:
        with _CALL_SITES_LOCK:
            _CALL_SITES_OFF[0] -= 1
            if _CALL_SITES_OFF[0] == 0:
                setattr(_errors_utils, name, _CALL_SITES_OFF[1])


#: :func:`without_call_sites`: how many builds are under way, and PySpark's value before them.
_CALL_SITES_OFF: list[Any] = [0, None]
_CALL_SITES_LOCK = threading.Lock()


#: The Spark configuration giving the largest input (Spark's estimate, in bytes) whose batch
#: ``.agg`` runs in the window operator rather than a native plan: a native plan is several
#: aggregates and joins (results, late rows, counters), seconds to build and run whatever the
#: input, while the window operator starts in a fraction of that and costs per row.
SMALL_INPUT_CONF = "spark.windowing.smallInputBytes"
#: Its default: tens of thousands of rows of a few columns.
SMALL_INPUT_BYTES = 1 << 20


def small_input_bytes(spark: SparkSession) -> int:
    """The value of :data:`SMALL_INPUT_CONF` (0 turns the rule off)."""
    value = spark.conf.get(SMALL_INPUT_CONF, None)
    if value is None:
        return SMALL_INPUT_BYTES
    try:
        return int(value)
    except ValueError:
        msg = f"{SMALL_INPUT_CONF} must be a number of bytes, got {value!r}"
        raise ValueError(msg) from None
