"""A job's outputs (results, late rows, inputs; Spark or pandas DataFrames) as a picture
(:class:`Tables`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from windowing.plotting.picture import (
    Pane,
    Picture,
    Record,
    Window,
    pick_key,
    row_of,
    short,
    text_of,
)
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP, datetime_to_millis
from windowing.trace import TIMINGS

__all__ = ["Tables"]

_NOT_OUTPUT = frozenset({"window_start", "window_end", "window", "max_timestamp", "pane_index"})


def _rows(table: Any, name: str) -> tuple[list[str], list[dict[str, Any]]]:
    """A Spark or pandas DataFrame's columns and rows (``None`` for nulls)."""
    frame = table.toPandas() if hasattr(table, "toPandas") else table
    if not (hasattr(frame, "to_dict") and hasattr(frame, "columns")):
        msg = (
            f"plot_windows: {name} must be a Spark or pandas DataFrame, got {type(table).__name__}"
        )
        raise ValueError(msg)
    columns = [str(c) for c in frame.columns]
    rows = [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict("records")]
    return columns, rows


def _plain(value: Any) -> Any:
    """A pandas / numpy cell as a plain value: nulls (NaN, NaT) as ``None``."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if type(value).__name__ == "NaTType":
        return None
    if isinstance(value, datetime):
        return value
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and type(value).__module__ == "numpy":
        return _plain(item())
    return value


def _ms(value: Any, column: str) -> int | None:
    """A time cell as epoch ms (``int`` or ``datetime``; naive datetimes are UTC)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return datetime_to_millis(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    msg = f"plot_windows: column {column!r} must hold timestamps or integers, got {value!r}"
    raise ValueError(msg)


def _need(columns: Sequence[str], wanted: str, table: str, parameter: str) -> None:
    if wanted not in columns:
        msg = (
            f"plot_windows: {parameter}={wanted!r} is not a column of the {table}; "
            f"its columns: {list(columns)}"
        )
        raise ValueError(msg)


@dataclass
class Tables:
    """A results table with its late rows and inputs, as plain rows."""

    columns: list[str]
    results: list[dict[str, Any]]
    late_columns: list[str]
    late: list[dict[str, Any]]
    input_columns: list[str]
    inputs: list[dict[str, Any]] | None
    event_time: str | None
    arrival_order: str | None
    watermark: Any

    @classmethod
    def read(
        cls,
        results: Any,
        late: Any,
        inputs: Any,
        event_time: str | None,
        arrival_order: str | None,
        watermark: Any,
    ) -> Tables:
        columns, rows = _rows(results, "source")
        if "window" not in columns:
            for name in ("window_start", "window_end"):
                _need(columns, name, "results", "a window column")
        late_columns, late_rows = _rows(late, "late") if late is not None else ([], [])
        input_columns, input_rows = _rows(inputs, "inputs") if inputs is not None else ([], None)
        if (late is not None or inputs is not None) and event_time is None:
            msg = (
                "plot_windows: event_time= (the input's event-time column) is needed with "
                "late or inputs"
            )
            raise ValueError(msg)
        for name, cols in (("late rows", late_columns), ("inputs", input_columns)):
            if cols and event_time is not None:
                _need(cols, event_time, name, "event_time")
            if cols and arrival_order is not None:
                _need(cols, arrival_order, name, "arrival_order")
        if late is not None:
            _need(late_columns, "late_watermark", "late rows", "a late rows column")
        if watermark is not None:
            if not callable(getattr(watermark, "current_watermark", None)):
                msg = (
                    "plot_windows: watermark must be a watermark strategy "
                    f"(BoundedOutOfOrderness(...)), got {watermark!r}"
                )
                raise ValueError(msg)
            if inputs is None or arrival_order is None:
                msg = (
                    "plot_windows: watermark= needs inputs= and arrival_order= "
                    "(it is computed over arrival)"
                )
                raise ValueError(msg)
        return cls(
            columns,
            rows,
            late_columns,
            late_rows,
            input_columns,
            input_rows,
            event_time,
            arrival_order,
            watermark,
        )

    @property
    def key_columns(self) -> list[str]:
        first = "window" if "window" in self.columns else "window_start"
        return self.columns[: self.columns.index(first)]

    def key_of(self, row: Mapping[str, Any]) -> Any:
        values = tuple(row.get(c) for c in self.key_columns)
        return values[0] if len(values) == 1 else values

    def picture(self, key: Any, label: str | Callable[[Any], object] | None, unit: Any) -> Picture:
        for name, cols, rows in (
            ("late rows", self.late_columns, self.late),
            ("inputs", self.input_columns, self.inputs),
        ):
            missing = [c for c in self.key_columns if c not in cols]
            if rows is not None and cols and missing:
                msg = (
                    f"plot_windows: the {name} have no key column {missing[0]!r} of the "
                    f"results; their columns: {cols}"
                )
                raise ValueError(msg)
        keys = list(dict.fromkeys(self.key_of(r) for r in [*self.results, *self.late]))
        if self.inputs is not None:
            keys += [k for k in dict.fromkeys(map(self.key_of, self.inputs)) if k not in keys]
        key = pick_key(key, keys, "tables") if self.key_columns else None
        mine = [r for r in self.results if self.key_of(r) == key]
        late = [r for r in self.late if self.key_of(r) == key]
        datetimes = any(
            isinstance(r.get(c), datetime)
            for r in [*mine[:1], *late[:1], *(self.inputs or [])[:1]]
            for c in ("window_start", "window", self.event_time or "")
        ) or any(isinstance(r.get("window"), Mapping) for r in mine[:1])
        windows = self.windows(mine)
        records = self.records(key, late, label)
        n_untimed = len(late) - sum(1 for r in records if r.late)
        arrival = self.arrival_order
        y_time = any(isinstance(r.get(arrival or ""), datetime) for r in (self.inputs or late)[:1])
        ys = [r.y for r in records if r.y is not None]
        picture = Picture(
            key=key,
            records=records,
            windows=windows,
            watermark=self.watermark_line(),
            watermark_points=[
                (y, wm)
                for r in late
                if (y := self.arrival(r)) is not None
                and (wm := _ms(r.get("late_watermark"), "late_watermark")) is not None
            ]
            if self.watermark is None
            else [],
            y_label=f"arrival ({arrival}) →" if arrival else "arrival",
            y_time=y_time,
            time_unit=unit or ("datetime" if datetimes else "ms"),
            row=row_of(ys),
        )
        if n_untimed:
            picture.notes.append(f"{n_untimed} late row(s) without event time not drawn")
        if any(p.timing is None for w in windows for p in w.panes):
            picture.notes.append("firing timings unknown (no timing column: ask for .pane_info())")
        return picture

    def arrival(self, row: Mapping[str, Any]) -> float | None:
        if self.arrival_order is None:
            return None
        value = _ms(row.get(self.arrival_order), self.arrival_order)
        return None if value is None else float(value)

    def windows(self, rows: list[dict[str, Any]]) -> list[Window]:
        outputs = [c for c in self.columns if c not in _NOT_OUTPUT and c != "timing"]
        outputs = [c for c in outputs if c not in self.key_columns]
        windows: dict[tuple[int, int], Window] = {}
        for n, row in enumerate(rows):
            struct = row.get("window")
            if isinstance(struct, Mapping):
                start, end = struct.get("start"), struct.get("end")
            else:
                start, end = row.get("window_start"), row.get("window_end")
            s, e = _ms(start, "window_start"), _ms(end, "window_end")
            if s is None or e is None:
                continue
            timing = row.get("timing")
            if timing is not None and timing not in TIMINGS:
                msg = f"plot_windows: column 'timing' must hold one of {TIMINGS}, got {timing!r}"
                raise ValueError(msg)
            index = row.get("pane_index")
            text = ", ".join(t for c in outputs if (t := short(row.get(c))) is not None)
            pane = Pane(n if index is None else int(index), timing, text or None, None)
            windows.setdefault((s, e), Window(s, e)).panes.append(pane)
        for w in windows.values():
            w.panes.sort(key=lambda p: p.index)
        return sorted(windows.values(), key=lambda w: (w.start, w.end))

    def records(
        self, key: Any, late: list[dict[str, Any]], label: str | Callable[[Any], object] | None
    ) -> list[Record]:
        event_time = self.event_time
        if event_time is None:
            return []

        def text(row: dict[str, Any]) -> str | None:
            if label is None:
                return None
            if isinstance(label, str):
                return short(row.get(label), 20)
            return text_of(label(row))

        extra = {"late_watermark", "late_reason"}
        late_left = Counter(
            tuple(sorted((k, repr(v)) for k, v in r.items() if k not in extra)) for r in late
        )
        out: list[Record] = []
        if self.inputs is not None:
            for row in self.inputs:
                if self.key_of(row) != key:
                    continue
                ident = tuple(sorted((k, repr(v)) for k, v in row.items()))
                is_late = late_left[ident] > 0
                if is_late:
                    late_left[ident] -= 1
                t = _ms(row.get(event_time), event_time)
                if t is not None:
                    out.append(Record(t, self.arrival(row), text(row), is_late))
        # late rows not matched to an input row (or no inputs given)
        for row in late:
            ident = tuple(sorted((k, repr(v)) for k, v in row.items() if k not in extra))
            if self.inputs is not None and late_left[ident] <= 0:
                continue
            late_left[ident] -= 1
            t = _ms(row.get(event_time), event_time)
            if t is not None:
                out.append(Record(t, self.arrival(row), text(row), True))
        return out

    def watermark_line(self) -> list[tuple[float, int]]:
        """The watermark each arrival saw: the strategy over the largest event time of the
        rows (all keys) that arrived strictly earlier (``docs/spark.md``, Which watermark)."""
        if self.watermark is None or self.inputs is None or self.event_time is None:
            return []
        by_arrival: dict[float, int | None] = {}
        for row in self.inputs:
            y = self.arrival(row)
            if y is None:
                continue
            t = _ms(row.get(self.event_time), self.event_time)
            seen = by_arrival.get(y)
            by_arrival[y] = t if seen is None else (seen if t is None else max(seen, t))
        # a row's watermark was set before it arrived: half a step earlier, as from a trace
        # (an arrival column of timestamps: at the row)
        before = (
            0.0
            if any(isinstance(r.get(self.arrival_order or ""), datetime) for r in self.inputs[:1])
            else 0.5
        )
        line: list[tuple[float, int]] = []
        newest: int | None = None
        for y in sorted(by_arrival):
            wm = MIN_TIMESTAMP if newest is None else self.watermark.current_watermark(newest)
            line.append((y - before, int(wm)))
            t = by_arrival[y]
            if t is not None:
                newest = t if newest is None else max(newest, t)
        if line:
            line.append((max(by_arrival) + 0.5, MAX_TIMESTAMP))  # the end of input
        return line
