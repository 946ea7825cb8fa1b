"""What one run of the window operator gives a runtime, as rows of the tagged output: its late
input rows (:class:`LateRows`), its counters, and its window results as columns."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import StructType

from windowing.spark.failures import SHOW_VALUES_HINT, window_bounds
from windowing.windows import TimeWindow

__all__ = [
    "REASON_LATE",
    "REASON_NULL_ARRIVAL_ORDER",
    "REASON_NULL_EVENT_TIME",
    "Encoders",
    "LateRows",
    "operator_counters",
    "windowed_columns",
]

#: Reasons in the ``late_reason`` column of the late side output.
REASON_LATE = "late"
REASON_NULL_EVENT_TIME = "null_event_time"
REASON_NULL_ARRIVAL_ORDER = "null_arrival_order"

_INT64_MAX = 2**63 - 1


@dataclass
class LateRows:
    """Input rows of one key routed to the late side output: their row indexes, the
    watermark that made each late (``None``: no watermark applies) and the reason."""

    rows: list[int] = dataclasses.field(default_factory=list)
    watermarks: list[int | None] = dataclasses.field(default_factory=list)
    reasons: list[str] = dataclasses.field(default_factory=list)

    def add(self, row: int, watermark: int | None, reason: str) -> None:
        self.rows.append(row)
        self.watermarks.append(watermark)
        self.reasons.append(reason)

    def add_late_elements(self, elements: Sequence[Any], index: Mapping[int, int]) -> None:
        """The operator's late elements (``LateElement``), whose values are input rows;
        ``index`` maps ``id(row)`` to the row's index."""
        for e in elements:
            self.add(index[id(e.value)], e.watermark, REASON_LATE)


def operator_counters(op: Any, n_input: int, null_ts: int, null_arr: int) -> dict[str, int]:
    """The metrics row's counters of one operator call (``op`` a ``WindowOperator``)."""
    m = op.metrics
    return {
        "num_input_rows": n_input,
        "num_elements": m.num_elements,
        "num_late_records_side_output": m.num_late_records_side_output,
        "num_late_records_dropped": m.num_late_records_dropped,
        "num_null_event_time": null_ts,
        "num_null_arrival_order": null_arr,
        "num_records_in_no_window": m.num_records_in_no_window,
        "num_windows_fired": m.num_windows_fired,
        "num_null_results": m.num_null_results,
        "num_orphaned_state_windows": m.num_orphaned_state_windows,
        "num_results": len(op.output),
    }


#: Encoders of a window function's values: one value, or all values in bulk.
Encoders = tuple[Callable[[Any], list[Any]], Callable[[Sequence[Any]], list[list[Any]] | None]]


def windowed_columns(
    records: Sequence[Any],
    encoders: Encoders,
    schema: StructType,
    what: str,
    show_values: bool,
) -> tuple[list[list[Any]], list[int | None], list[int | None], list[int | None]]:
    """``WindowResult`` records as columns: the encoded value fields, then window start,
    window end and the record's timestamp. ``encoders`` encode one value, or all values in
    bulk (``None`` when they need the one-value encoder)."""
    encode, encode_all = encoders
    columns = encode_all([r.value for r in records])
    if columns is None:
        columns = [[] for _ in schema.fields]
        for r in records:
            try:
                values = encode(r.value)
            except Exception as exc:
                shown = repr(r.value) if show_values else f"<{SHOW_VALUES_HINT}>"
                exc.add_note(
                    f"while writing the {what} {shown} of window {r.window!r} of key "
                    f"{r.key!r} as a row of {schema.simpleString()}"
                )
                raise
            for column, v in zip(columns, values, strict=True):
                column.append(v)
    windows = [r.window for r in records]
    ws: list[int | None] = []
    we: list[int | None] = []
    if set(map(type, windows)) == {TimeWindow}:
        starts = [w[0] for w in windows]
        ends = [w[1] for w in windows]
        if min(starts) >= -_INT64_MAX - 1 and max(ends) <= _INT64_MAX:
            ws, we = starts, ends
    if windows and not ws:
        for w in windows:
            start, end = window_bounds(w)
            ws.append(start)
            we.append(end)
    mt: list[int | None] = [r.timestamp for r in records]
    return columns, ws, we, mt
