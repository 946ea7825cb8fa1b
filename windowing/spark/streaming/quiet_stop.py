"""A stop of a query during a micro-batch without Spark's reports of the interrupted work
(:func:`quiet_stop`, used by ``WindowedQuery.stop``).

``query.stop()`` interrupts the micro-batch: the stream execution thread waiting for the
micro-batch's write job, and the job's tasks. Spark reports each interruption as a failure
at its default log levels, although the query then ends without an error:

- the driver's ``FileFormatWriter`` logs ``ERROR ... Aborting job <id>`` with the
  ``InterruptedException``'s stack trace, about 160 lines (the write job of a file sink);
- each killed task logs ``ERROR Utils: Aborting task`` with the ``TaskKilledException``'s
  trace and ``ERROR FileFormatWriter: ... Task attempt ... aborted``, the Python runners
  warn ``Incomplete task interrupted: Attempting to kill Python Worker``, the state server
  of a ``transformWithStateInPandas`` task warns ``No more data to read from the socket``,
  Hadoop's ``FileOutputCommitter`` that it ``Could not delete`` the aborted attempt, and the
  ``TaskSetManager`` that it lost the task (``TaskKilled``); on the console in local mode,
  in the executors' logs on a cluster;
- the ``DAGScheduler`` warns ``Failed to cancel job group`` when the interrupt ended the
  job before the stop's own cancel.

While the query stops, and until the tasks of its jobs have ended (at most
:data:`SETTLE_SECONDS`), a filter of the JVM's log4j configuration drops exactly these
reports (:data:`STOP_REPORTS`, whichever logger sends them); then it is removed. A
micro-batch that fails on its own, without a stop, reports as before. The filter is the
JVM's: for those seconds (usually under one) it drops these messages of any query of the
driver, and of the executors of a local session.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["SETTLE_SECONDS", "STOP_REPORTS", "quiet_stop"]

#: The reports of a stopped micro-batch's interrupted work (log4j message texts, as a
#: regular expression).
STOP_REPORTS = (
    r"(?s).*(?:Aborting job |Aborting task|Task attempt \S+ aborted|Could not delete .*_temporary"
    r"|No more data to read from the socket|Failed to cancel job group"
    r"|Incomplete task interrupted|TaskKilled).*"
)
#: The longest a stop waits for the tasks of the query's jobs to end before the filter goes.
SETTLE_SECONDS = 30.0


@contextlib.contextmanager
def quiet_stop(query: Any, spark: Any) -> Iterator[None]:
    """Around ``query.stop()`` (a classic PySpark ``StreamingQuery`` of the session
    ``spark``): the reports of :data:`STOP_REPORTS` dropped until the query's tasks have
    ended. Does nothing without a JVM (Spark Connect: the query stops on the server)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        yield
        return
    try:
        quiet = _Filter(jvm, STOP_REPORTS)
        tracker = spark.sparkContext.statusTracker()
        run_id = str(query.runId)
    except Exception:  # no log4j 2 core, or the session is going away: stop as Spark does
        yield
        return
    try:
        quiet.add()
        yield
        _settle(tracker, run_id)
    finally:
        quiet.remove()


def _settle(tracker: Any, run_id: str) -> None:
    """Wait until the tasks of the jobs of ``run_id`` (the query run's job group) have ended,
    at most :data:`SETTLE_SECONDS`."""
    deadline = time.monotonic() + SETTLE_SECONDS
    with contextlib.suppress(Exception):  # the context may be stopping
        jobs = list(tracker.getJobIdsForGroup(run_id))
        while time.monotonic() < deadline and _running_tasks(tracker, jobs):
            time.sleep(0.1)


def _running_tasks(tracker: Any, jobs: list[int]) -> bool:
    for job in jobs:
        info = tracker.getJobInfo(job)
        for stage in () if info is None else info.stageIds:
            found = tracker.getStageInfo(stage)
            if found is not None and found.numActiveTasks > 0:
                return True
    return False


class _Filter:
    """A log4j 2 filter of the whole configuration that drops the events whose message
    matches ``regex``, added for a while and then removed."""

    def __init__(self, jvm: Any, regex: str) -> None:
        log4j = jvm.org.apache.logging.log4j
        result = log4j.core.Filter.Result
        self.context = log4j.LogManager.getContext(False)
        self.filter = log4j.core.filter.RegexFilter.createFilter(
            regex, None, False, result.DENY, result.NEUTRAL
        )
        self.added = False

    def add(self) -> None:
        self.context.getConfiguration().addFilter(self.filter)
        self.added = True
        self.context.updateLoggers()

    def remove(self) -> None:
        if self.added:
            with contextlib.suppress(Exception):  # the JVM may be going away
                self.context.getConfiguration().removeFilter(self.filter)
                self.context.updateLoggers()
            self.added = False
