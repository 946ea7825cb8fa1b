"""The counters of a batch run and of a streaming query's micro-batches."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = [
    "COUNTER_NAMES",
    "GAUGE_NAMES",
    "METRIC_NAMES",
    "NO_VALUE",
    "STREAMING_GAUGES",
    "STREAMING_METRICS",
    "BatchMetrics",
    "counter_values",
    "default_value",
]


@dataclass(frozen=True)
class BatchMetrics:
    """What happened to every input row of a batch run (sums over all keys).

    Every input row is counted once in ``num_elements``, ``num_null_event_time``,
    ``num_null_arrival_order`` or ``num_dead_letter_elements``; every element ends in a
    window, in ``num_late_records_side_output``, ``num_late_records_dropped`` or
    ``num_records_in_no_window``.

    Attributes
    ----------
    num_input_rows
        Rows of the input DataFrame.
    num_elements
        Rows handed to the window operator.
    num_late_records_side_output
        Late elements (added to no window) written to the late side output.
    num_late_records_dropped
        Late elements dropped because no late side output was requested.
    num_null_event_time
        Rows without event time under an event-time assigner; in the late side output (reason
        ``null_event_time``) when it is requested, otherwise only counted here.
    num_null_arrival_order
        Rows without arrival order; like ``num_null_event_time`` (reason
        ``null_arrival_order``).
    num_records_in_no_window
        Elements added to no window although not late (e.g. all their windows had closed).
    num_windows_fired
        Window evaluations with contents.
    num_null_results
        Firings whose reduce or ``AggregateFunction.get_result`` gave ``None``: no result row
        (as in Flink), counted here.
    num_orphaned_state_windows
        Merging windows (dynamic session gaps): a new window equal to an in-flight merged
        window left the merged contents unreached, as in Flink.
    num_results
        Rows of the results DataFrame.
    num_windows_left_at_end
        Windows still holding contents after the end of input (e.g. global windows whose
        trigger did not purge, or never fired).
    num_keys
        Distinct keys (1 for ``window_all``).
    num_dead_letter_elements
        Input rows whose processing raised, in the dead-letter output
        (``on_error("dead_letter")``; not in ``num_elements``).
    num_dead_letter_firings
        Window firings that raised (window function, evictor, trigger timers), in the
        dead-letter output.
    num_dead_letter_results
        Result rows that could not be written as the output schema, in the dead-letter
        output.
    """

    num_input_rows: int = 0
    num_elements: int = 0
    num_late_records_side_output: int = 0
    num_late_records_dropped: int = 0
    num_null_event_time: int = 0
    num_null_arrival_order: int = 0
    num_records_in_no_window: int = 0
    num_windows_fired: int = 0
    num_null_results: int = 0
    num_orphaned_state_windows: int = 0
    num_results: int = 0
    num_windows_left_at_end: int = 0
    num_keys: int = 0
    num_dead_letter_elements: int = 0
    num_dead_letter_firings: int = 0
    num_dead_letter_results: int = 0


METRIC_NAMES = tuple(f.name for f in dataclasses.fields(BatchMetrics))
#: The counters a streaming query reports (the others are always 0 there).
STREAMING_METRICS = tuple(
    n for n in METRIC_NAMES if n not in ("num_windows_left_at_end", "num_keys")
)

#: Streaming gauges a metrics row carries after the counters (not summed): the newest event
#: time of a key call's rows and the operator's watermark then (``NO_VALUE``: none), and the
#: state bytes and open windows of a key group as its call left them (0 in other rows).
GAUGE_NAMES = ("max_event_time", "watermark", "state_bytes", "open_windows")
#: A gauge without a value (the smallest bigint).
NO_VALUE = -(2**63)
#: The metrics row's array: the counters, then the gauges.
COUNTER_NAMES = METRIC_NAMES + GAUGE_NAMES
_DEFAULTS = {"max_event_time": NO_VALUE, "watermark": NO_VALUE}

#: What a streaming query reports from the gauges per micro-batch, in
#: ``lastProgress["observedMetrics"]``, with what each is (``OutputLayout.gauge_totals``).
STREAMING_GAUGES = (
    "watermark_lag_ms",  # newest event time of the micro-batch minus the watermark
    "state_bytes",  # state written by the micro-batch's key group calls
    "max_key_group_state_bytes",  # the largest of them
    "open_windows",  # windows open in the key groups the micro-batch called
)


def counter_values(counters: dict[str, int] | None) -> list[int]:
    """A metrics row's array from ``counters`` (by name; the others 0, or ``NO_VALUE`` for
    the time gauges)."""
    got = counters or {}
    return [got.get(n, _DEFAULTS.get(n, 0)) for n in COUNTER_NAMES]


def default_value(name: str) -> int:
    """The value of counter or gauge ``name`` in a row that does not set it."""
    return _DEFAULTS.get(name, 0)
