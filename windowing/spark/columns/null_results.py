"""Windows whose incremental result was ``None``, reported to the driver: the warning of
:class:`~windowing.errors.NullResultWarning`, once per job.

Such a window emits nothing (Flink's rule) and is counted in ``num_null_results``, on the
executors. An executor cannot warn the driver's user, so each Python call of a job (a batch
key group, a streaming key group's micro-batch) adds a :class:`NullResultReport` (how many
windows, and the key and window of its first one, as text) to a Spark accumulator. Spark
merges a task's accumulator updates on the driver when the task ends, before the action or
micro-batch that ran it returns; the driver's :class:`NullResultParam` then warns once, at
the first report with a ``None`` result (:class:`NullResultNotice`).

Spark Connect has no accumulators: there, a batch job warns when its metrics are collected
(``WindowedResult.collect_metrics``), with the count only.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from dataclasses import dataclass
from typing import Any

from pyspark.accumulators import Accumulator, AccumulatorParam
from pyspark.sql import SparkSession

from windowing.engine.metrics import OperatorMetrics
from windowing.errors import NullResultWarning, null_result_message, window_text
from windowing.functions.spec import WindowFunctionSpec, result_source

__all__ = [
    "NullResultNotice",
    "NullResultParam",
    "NullResultReport",
    "null_result_accumulator",
    "report_null_results",
]


@dataclass(frozen=True)
class NullResultReport:
    """How many windows gave a ``None`` result, and the key and window of the first one (as
    text: ``repr`` of the key, :func:`~windowing.errors.window_text` of the window)."""

    count: int = 0
    key: str | None = None
    window: str | None = None

    @classmethod
    def of(cls, metrics: OperatorMetrics) -> NullResultReport:
        """The report of an operator's counters."""
        first = metrics.first_null_result
        if first is None or not metrics.num_null_results:
            return cls()
        return cls(metrics.num_null_results, repr(first.key), window_text(first.window))

    def merged(self, other: NullResultReport) -> NullResultReport:
        """Both reports' windows; the first one of this report, else of ``other``."""
        if not other.count:
            return self
        if not self.count:
            return other
        return NullResultReport(self.count + other.count, self.key, self.window)


class NullResultNotice:
    """The driver's side of a job's ``None`` results: warns once per job."""

    def __init__(self, function: str, *, dead_letter: bool) -> None:
        self.function = function
        self.dead_letter = dead_letter
        self.warned = False
        self._lock = threading.Lock()

    def warn(self, report: NullResultReport, *, stacklevel: int = 2) -> None:
        """Warn about ``report`` (nothing for a report without ``None`` results, or when
        this job warned already); ``stacklevel`` as :func:`warnings.warn`'s, from the
        caller."""
        if not report.count:
            return
        with self._lock:
            if self.warned:
                return
            self.warned = True
        if report.key is None or report.window is None:
            key, window = "(not reported: Spark Connect has no accumulators)", "(not reported)"
        else:
            key, window = report.key, report.window
        message = null_result_message(
            self.function, key, window, report.count, dead_letter=self.dead_letter
        )
        warnings.warn(message, NullResultWarning, stacklevel=stacklevel + 1)


class NullResultParam(AccumulatorParam[NullResultReport]):
    """Merges :class:`NullResultReport` values; on the driver (the object the job was built
    with) it warns through its notice when a ``None`` result is first reported. Executors get
    a copy without the notice."""

    def __init__(self, notice: NullResultNotice | None) -> None:
        self.notice = notice

    def __getstate__(self) -> dict[str, Any]:
        return {}  # the notice stays on the driver

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.notice = None

    def zero(self, value: NullResultReport) -> NullResultReport:
        return NullResultReport()

    def addInPlace(  # noqa: N802 - PySpark's name
        self, value1: NullResultReport, value2: NullResultReport
    ) -> NullResultReport:
        merged = value1.merged(value2)
        if self.notice is not None and value2.count:
            # PySpark's accumulator server thread merges the updates: an error here (warnings
            # turned into errors) would fail the update, not reach the user
            with contextlib.suppress(Exception):
                self.notice.warn(merged)
        return merged


def null_result_accumulator(
    spark: SparkSession, spec: WindowFunctionSpec, *, dead_letter: bool
) -> tuple[NullResultNotice | None, Accumulator[NullResultReport] | None]:
    """The driver's notice of a job with ``spec`` and the accumulator its executors report
    to (``None`` under Spark Connect); ``(None, None)`` for a function without an
    incremental result (process, apply)."""
    function = result_source(spec)
    if function is None:
        return None, None
    notice = NullResultNotice(function, dead_letter=dead_letter)
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return notice, None
    return notice, spark.sparkContext.accumulator(NullResultReport(), NullResultParam(notice))


def report_null_results(
    accumulator: Accumulator[NullResultReport] | None, report: NullResultReport
) -> None:
    """Add the ``None`` results of an executor's call to the job's accumulator."""
    if accumulator is not None and report.count:
        accumulator.add(report)
