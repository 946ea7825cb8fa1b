"""What one run of the window operator gives a runtime, as rows of the tagged output: its late
input rows (:class:`LateRows`), its counters, and its window results as columns."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.types import StructType

from windowing.spark.columns.failures import (
    SHOW_VALUES_HINT,
    DeadRows,
    split_results,
    window_bounds,
)
from windowing.windows import TimeWindow, window_text

__all__ = [
    "REASON_LATE",
    "REASON_NULL_ARRIVAL_ORDER",
    "REASON_NULL_EVENT_TIME",
    "Encoders",
    "KeyCallRows",
    "LateRows",
    "key_call_tables",
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
                    f"while writing the {what} {shown} of window {window_text(r.window)} of key "
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


@dataclass(eq=False)
class KeyCallRows:
    """One key call's rows of the tagged output (a streaming micro-batch runs many keys in
    one call), before they are packed with the other keys' by :func:`key_call_tables`."""

    key: Any
    results: list[Any]
    side_outputs: dict[Any, list[Any]]  # OutputTag -> records
    source: Any  # pa.Table | None: the key's input rows (late rows and dead letters index them)
    late: LateRows
    counters: dict[str, int]
    dead: DeadRows | None


#: The key column(s) of one key for ``n`` rows; of rows with these keys then null-key rows.
KeyColumns = Callable[[Any], Callable[[int], list[Any]]]
KeysColumns = Callable[[list[Any], int], list[Any]]


def key_call_tables(
    layout: Any,
    parts: Sequence[KeyCallRows],
    key_columns: KeyColumns,
    keys_columns: KeysColumns,
    with_dead: bool,
) -> list[pa.Table]:
    """The tagged output of the key calls ``parts`` (``layout`` an ``OutputLayout``): one
    table with one metrics row (a table per key costs more than the key's own call). When
    that table cannot be built (a result that is not a row of the output schema, a side
    output without a schema), a table per key, which raises the error naming the key, or
    with dead letters (``with_dead``) turns the bad results into dead letters."""
    if len(parts) > 1:
        try:
            return [_group_table(layout, parts, keys_columns, with_dead)]
        except Exception:  # each key again below, for its own error
            pass
    return [_key_table(layout, part, key_columns(part.key)) for part in parts]


def _group_table(
    layout: Any, parts: Sequence[KeyCallRows], keys_columns: KeysColumns, with_dead: bool
) -> pa.Table:
    results: list[Any] = []
    row_keys: list[Any] = []  # the key of each result, side output, late row, dead letter
    sides: dict[Any, list[Any]] = {}
    side_keys: dict[Any, list[Any]] = {}
    late = LateRows()
    late_keys: list[Any] = []
    dead = DeadRows() if with_dead else None
    dead_keys: list[Any] = []
    sources: list[Any] = []
    offset = 0  # of the key's rows in the concatenated sources
    counters: dict[str, int] = {}
    for part in parts:
        key = part.key
        results += part.results
        row_keys += [key] * len(part.results)
        for tag, records in part.side_outputs.items():
            sides.setdefault(tag, []).extend(records)
            side_keys.setdefault(tag, []).extend([key] * len(records))
        d = part.dead
        if part.source is not None and (
            part.late.rows or (d is not None and any(r is not None for r in d.rows))
        ):
            sources.append(part.source)
            late.rows += [offset + r for r in part.late.rows]
            late.watermarks += part.late.watermarks
            late.reasons += part.late.reasons
            late_keys += [key] * len(part.late.rows)
            shift, offset = offset, offset + part.source.num_rows
        else:
            shift = 0
        if d is not None and dead is not None:
            dead.rows += [None if r is None else shift + r for r in d.rows]
            dead.phases += d.phases
            dead.classes += d.classes
            dead.messages += d.messages
            dead.starts += d.starts
            dead.ends += d.ends
            dead_keys += [key] * len(d)
        for name, value in part.counters.items():
            counters[name] = counters.get(name, 0) + value
    for tag in layout.side_tags:
        row_keys += side_keys.get(tag, [])
    row_keys += [*late_keys, *dead_keys]

    def columns(total: int) -> list[Any]:
        assert total == len(row_keys) + 1  # and the metrics row, without a key
        return keys_columns(row_keys, 1)

    return layout.tagged_table(
        key=None,
        key_columns=columns,
        results=results,
        side_outputs=sides,
        late_source=pa.concat_tables(sources) if sources else None,
        late=late,
        counters=counters,
        dead=dead,
    )


def _key_table(layout: Any, part: KeyCallRows, key_columns: Callable[[int], list[Any]]) -> Any:
    """One key call's tagged output."""

    def tagged() -> pa.Table:
        return layout.tagged_table(
            key=part.key,
            key_columns=key_columns,
            results=part.results,
            side_outputs=part.side_outputs,
            late_source=part.source,
            late=part.late,
            counters=part.counters,
            dead=part.dead,
        )

    try:
        return tagged()
    except Exception:
        if part.dead is None:
            raise
    # results that are not rows of the output schema: dead letters
    bad = split_results(part.results, layout.check_result)
    for _, letter in bad:
        part.dead.add(letter)
    drop = {i for i, _ in bad}
    part.results[:] = [r for i, r in enumerate(part.results) if i not in drop]
    part.counters["num_results"] = len(part.results)
    return tagged()
