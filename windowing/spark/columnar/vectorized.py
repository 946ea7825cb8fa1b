"""A :class:`~windowing.functions.vectorized.VectorizedAggregateFunction` of tumbling,
hopping or session event-time windows computed a record batch at a time in the batch replay.

In event-time order (no arrival order: nothing is late, every window fires once, at the end of
input, over all its rows, as :func:`~windowing.spark.columnar.core.columnar_results` assumes)
a window's result is a function of its rows in replay order. The rows of a key group arrive
sorted by key and event time, so the rows of a tumbling window or a session are a run of
consecutive rows, and those of a hopping window are found by taking each row once per window
it belongs to (:meth:`VectorizedWindows.groups`): the replay hands all the windows of a record
batch to one ``add_groups`` call and their accumulators to one ``get_results`` call, and
builds the result columns in Arrow, rather than one operator call per row. The rows of the
last key that later rows may join (its last window or session; all of them for hopping
windows) are carried to the next batch (:meth:`VectorizedWindows.carried_from`), as for the
built-in aggregations.

:meth:`VectorizedWindows.results` returns ``None`` when the operator must compute the rows
(event times near the ends of time, a ``None`` result: the operator counts and reports such
windows), and the replay then runs the operator, through the function's adapter
(:class:`~windowing.functions.vectorized.VectorizedAdapter`), with the same results.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from windowing.assigners.hopping import HoppingEventTimeWindows
from windowing.assigners.session import EventTimeSessionWindows
from windowing.assigners.tumbling import TumblingEventTimeWindows, WindowStagger
from windowing.evictors.vectorized import Clocks, VectorizedEvictor, WindowRows, kept_before
from windowing.functions.spec import Aggregate, Process, WindowFunctionSpec
from windowing.functions.vectorized import (
    VectorizedAggregateFunction,
    describe,
    group_accumulators,
    group_results,
    in_format,
)
from windowing.functions.vectorized_process import (
    VectorizedProcessWindowFunction,
    overrides_clear,
)
from windowing.functions.vectorized_process import describe as describe_process
from windowing.job import WindowConfig
from windowing.plan import Strategy, plan_operator
from windowing.records import OutputTag, WindowResult
from windowing.spark.columnar.accumulators import AggregateItems, spec_items
from windowing.spark.columnar.core import ColumnarShape, near_ends_of_time
from windowing.spark.columnar.row_fold import ProcessFold, RowFold, fold_of, note_group
from windowing.spark.columnar.tumbling import last_window_from, tumbling_starts
from windowing.spark.columnar.vectorized_process import (
    END_OF_INPUT,
    KeyStates,
    encoded_columns,
    process_windows,
    written_columns,
)
from windowing.spark.columns.failures import note_element_error
from windowing.spark.columns.output import OutputLayout
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.triggers.event_time import EventTimeTrigger
from windowing.triggers.vectorized import (
    Firings,
    VectorizedTrigger,
    checked_end_firings,
    checked_results,
    evicting_firings,
    firings,
    on_sessions,
)
from windowing.windows import TimeWindow

__all__ = [
    "Evicted",
    "Groups",
    "VectorizedHopping",
    "VectorizedResults",
    "VectorizedSessions",
    "VectorizedTumbling",
    "VectorizedWindows",
    "aggregate_columns",
    "fold_plan",
    "result_columns",
    "vectorized_plan",
]


@dataclass(frozen=True)
class VectorizedResults:
    """The results of the (key, window) groups of a part of the input, a row each (an
    aggregate) or any number (a window function): per result, its window's start and end, its
    window's first row (the key columns are taken from it), and the result columns; the
    windows fired, and the side outputs (per tag, the first row of the window each came from,
    and the record)."""

    starts: np.ndarray[Any, Any]
    ends: np.ndarray[Any, Any]
    rows: np.ndarray[Any, Any]
    columns: list[pa.Array]
    fired: int
    side_outputs: Mapping[OutputTag, list[tuple[int, WindowResult]]] = field(default_factory=dict)


#: The key values (as functions see them) and state keys of rows of a part of the input.
KeysOf = Callable[[np.ndarray[Any, Any]], tuple[Sequence[Any], Sequence[Any]]]


#: The clocks of rows arriving in the replay in event-time order (Flink's batch mode): no
#: watermark yet, the replay's processing time.
BEFORE_END_OF_INPUT = Clocks(MIN_TIMESTAMP, 0)

#: A trigger's firings may copy each row into at most this many firings on average.
MAX_COPIES = 64


@dataclass(frozen=True)
class Evicted:
    """The rows an evictor keeps of groups of rows (``mask``) and where each group begins
    in them (``offsets``, then their number; a group may be empty)."""

    mask: np.ndarray[Any, Any]
    offsets: np.ndarray[Any, Any]


@dataclass(frozen=True)
class Groups:
    """The (key, window) groups of rows sorted by key and event time: the rows in group
    order (``take``, positions of the input rows; ``None``: the input as it is), where each
    group begins in them (``offsets``, then their number), and each window's start and end."""

    take: np.ndarray[Any, Any] | None
    offsets: np.ndarray[Any, Any]
    starts: np.ndarray[Any, Any]
    ends: np.ndarray[Any, Any]


@dataclass(frozen=True, eq=False)
class VectorizedWindows(ABC):
    """A vectorized aggregate or window function whose windows the batch replay computes a
    record batch at a time, in event-time order (see the module docstring); a subclass per
    window shape says which rows form a window."""

    #: A vectorized function, the accumulator columns of ``.agg`` columns, or a per-row
    #: function's fold.
    function: (
        VectorizedAggregateFunction[Any, Any]
        | VectorizedProcessWindowFunction
        | AggregateItems
        | RowFold
        | ProcessFold
    )
    allowed_lateness: int
    #: An evictor with a form on columns (its masks), or ``None``.
    evictor: VectorizedEvictor[Any, Any] | None = field(default=None, kw_only=True)
    #: A trigger other than the default one with a form on columns (an aggregate's), or
    #: ``None``.
    trigger: VectorizedTrigger[Any, Any] | None = field(default=None, kw_only=True)

    kind: ClassVar[str]
    shape: ClassVar[ColumnarShape]

    @property
    @abstractmethod
    def margin(self) -> int:
        """Times within this distance of the ends of time are left to the operator (it clamps
        window bounds and cleanup times there)."""

    @abstractmethod
    def carried_from(self, t: np.ndarray[Any, Any], lo: int) -> int:
        """The first of the rows ``lo:`` of a key (event times ``t``, sorted) that may share a
        window with the key's later rows: the replay carries them to the next batch."""

    @abstractmethod
    def groups(self, t: np.ndarray[Any, Any], codes: np.ndarray[Any, Any] | None) -> Groups:
        """The windows of rows sorted by key ``codes`` (``None``: one key), then event time
        ``t``, as groups of rows in replay order."""

    @abstractmethod
    def windows(self) -> str:
        """The windows, in words."""

    def results(
        self,
        rows: pa.Table,
        times: pa.ChunkedArray,
        codes: np.ndarray[Any, Any] | None,
        layout: OutputLayout,
        keys_of: KeysOf | None = None,
        states: KeyStates | None = None,
    ) -> VectorizedResults | None:
        """The windows of ``rows`` (the input columns of whole windows of one or more keys,
        sorted by key ``codes``, ``None`` for one key, then event time ``times`` in ms without
        nulls), or ``None`` when the operator must compute them (decided before the
        function's first call; a trigger's or evictor's form on columns may have been
        called). A window function needs ``keys_of`` and the key states ``states``."""
        t = times.to_numpy()
        if len(t) == 0 or near_ends_of_time(self.margin, int(t.min()), int(t.max())):
            return None
        rising = t[1:] >= t[:-1]
        if codes is not None:
            rising = (codes[1:] > codes[:-1]) | ((codes[1:] == codes[:-1]) & rising)
        if not bool(rising.all()):
            return None  # not in replay order: the operator (which checks) takes them
        found = self.groups(t, codes)
        fn = self.function
        grouped = rows if found.take is None else rows.take(found.take)
        first = found.offsets[:-1]
        first_rows = first if found.take is None else found.take[first]
        offsets = found.offsets
        stamps = t if found.take is None else t[found.take]
        sessions = self.kind == "session"
        contents = WindowRows(offsets, stamps, found.starts, found.ends, grouped, sessions)
        if self.trigger is not None:
            assert not isinstance(fn, VectorizedProcessWindowFunction)
            fired = self.fired(contents)
            if fired is None:
                return None
            windows = self.firing_windows(found, fired, stamps)
            return self.fired_results(grouped, fired, windows, first_rows, layout)
        if self.evictor is not None:
            kept = self.evicted(contents)
            if kept is None:
                return None
            grouped, offsets = grouped.filter(pa.array(kept.mask)), kept.offsets
        if isinstance(fn, VectorizedProcessWindowFunction | ProcessFold):
            per_row = isinstance(fn, ProcessFold)
            function = fn.function if isinstance(fn, ProcessFold) else fn
            calls = (grouped, offsets, found, first_rows, layout, keys_of, states)
            return self.per_window(function, self.clears, *calls, per_row=per_row)
        if isinstance(fn, RowFold):
            return self.folded(
                fn, grouped, offsets, found, first_rows, stamps, layout, keys_of, states
            )
        columns = self.aggregated(grouped, offsets, layout)
        if columns is None:
            return None
        return VectorizedResults(found.starts, found.ends, first_rows, columns, len(first))

    def folded(
        self,
        fn: RowFold,
        grouped: pa.Table,
        offsets: np.ndarray[Any, Any],
        found: Groups,
        first_rows: np.ndarray[Any, Any],
        stamps: np.ndarray[Any, Any],
        layout: OutputLayout,
        keys_of: KeysOf | None,
        states: KeyStates | None,
    ) -> VectorizedResults | None:
        """A per-row aggregate's or reduce's fold over the groups, then its window function's
        call per window, if any; ``None`` when a result is ``None`` (or, without a window
        function, not a row of the output schema): the operator takes them."""

        def notes(exc: Exception, g: int, row: int | None, value: Any) -> None:
            key = None if keys_of is None else keys_of(first_rows[g : g + 1])[0][0]
            window = TimeWindow(int(found.starts[g]), int(found.ends[g]))
            element = None if row is None else (value, int(stamps[row]))
            note_group(exc, key, window, element)
            pending = [] if element is None else [(value, element[1], key)]
            note_element_error(
                exc, 0, pending, key, "the Spark batch replay", show_values=layout.show_values
            )

        results = fn.results(grouped, offsets, notes)
        if any(r is None for r in results):
            return None  # (before a window function's first call)
        wf = fn.window_function
        if wf is None:

            def records() -> list[WindowResult]:
                keys = keys_of(first_rows)[0] if keys_of is not None else [None] * len(results)
                bounds = zip(keys, found.starts.tolist(), found.ends.tolist(), results, strict=True)
                return [WindowResult(k, TimeWindow(s, e), v, 0) for k, s, e, v in bounds]

            try:
                columns = written_columns(layout, results, records)
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                return None  # a result that is not a row of the output: the operator names it
            return VectorizedResults(
                found.starts, found.ends, first_rows, columns, len(found.starts)
            )
        calls = (grouped, offsets, found, first_rows, layout, keys_of, states)
        return self.per_window(wf, fn.clears, *calls, per_row=True, results=results)

    @staticmethod
    def per_window(
        function: Any,
        clears: bool,
        grouped: pa.Table,
        offsets: np.ndarray[Any, Any],
        found: Groups,
        first_rows: np.ndarray[Any, Any],
        layout: OutputLayout,
        keys_of: KeysOf | None,
        states: KeyStates | None,
        *,
        per_row: bool,
        results: Sequence[Any] | None = None,
    ) -> VectorizedResults:
        """A window function called once per window of ``found`` (``per_row``: a per-row
        one, on the rows or on each window's incremental result ``results``)."""
        assert keys_of is not None and states is not None
        keys, skeys = keys_of(first_rows)
        done = process_windows(
            function,
            grouped,
            offsets,
            (found.starts, found.ends),
            keys,
            skeys,
            states,
            layout.out_schema,
            clears,
            layout.late_output_tag,
            layout if per_row else None,
            results,
        )
        sides = {
            tag: [(int(first_rows[i]), r) for i, r in records]
            for tag, records in done.side_outputs.items()
        }
        return VectorizedResults(
            np.repeat(found.starts, done.counts),
            np.repeat(found.ends, done.counts),
            np.repeat(first_rows, done.counts),
            [c.combine_chunks() for c in done.table.columns],
            len(found.starts),
            sides,
        )

    def aggregated(
        self, rows: pa.Table, offsets: np.ndarray[Any, Any], layout: OutputLayout
    ) -> list[pa.Array] | None:
        """The result columns of the aggregate over the groups ``offsets`` of ``rows`` (none
        empty), or ``None`` when the operator must compute them: a vectorized function's
        ``add_groups`` and ``get_results``, or ``.agg`` columns' accumulator columns."""
        fn = self.function
        assert not isinstance(fn, VectorizedProcessWindowFunction | RowFold | ProcessFold)
        return aggregate_columns(fn, rows, offsets, layout.out_schema)

    def fired(self, rows: WindowRows) -> Firings | None:
        """The firings of the trigger's form on columns (through the evictor's masks), or
        ``None`` when it has none for these rows, they would copy more than 64 times the
        rows, or an aggregate's firing would evaluate no row (the operator then)."""
        trigger, evictor = self.trigger, self.evictor
        assert trigger is not None
        budget = MAX_COPIES * len(rows)
        try:
            codes = trigger.on_elements(rows, BEFORE_END_OF_INPUT)
            end = None if codes is None else trigger.on_end_of_input(rows, END_OF_INPUT)
            if codes is None or end is None:
                return None
            codes = checked_results(codes, rows, trigger)
            end = checked_end_firings(end, rows, trigger)
            if evictor is None:
                found: Firings | None = firings(rows, codes, end)
            else:
                clocks = (BEFORE_END_OF_INPUT, END_OF_INPUT)
                found = evicting_firings(rows, codes, end, evictor, clocks, budget)
        except Exception as exc:
            exc.add_note(f"while computing the firings{self._evicting()} in the Spark batch replay")
            raise
        if found is None or not found.sizes().all():
            return None
        ranges = isinstance(self.function, AggregateItems) and found.spans is not None
        if int(found.offsets[-1]) > budget and not ranges:
            return None  # copies of rows (accumulator columns reduce ranges without them)
        return found

    def firing_windows(
        self, found: Groups, fired: Firings, stamps: np.ndarray[Any, Any]
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """The window (start, end) of each firing of ``fired``: the fired group's."""
        return found.starts[fired.windows], found.ends[fired.windows]

    def fired_results(
        self,
        grouped: pa.Table,
        fired: Firings,
        windows: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]],
        first_rows: np.ndarray[Any, Any],
        layout: OutputLayout,
    ) -> VectorizedResults | None:
        """The results of the firings ``fired`` of groups of rows ``grouped`` (their first
        rows ``first_rows``), of the windows ``windows``: one ``add_groups`` over all the
        firings' rows, one ``get_results``."""
        w = fired.windows
        if not len(w):
            columns = encoded_columns([], layout.out_schema)
        else:
            fn = self.function
            if isinstance(fn, AggregateItems) and fired.spans is not None:
                found_columns = spans_columns(fn, grouped, fired.spans, layout.out_schema)
            else:
                taken = grouped.take(fired.rows())
                found_columns = self.aggregated(taken, fired.offsets, layout)
            if found_columns is None:
                return None
            columns = found_columns
        return VectorizedResults(windows[0], windows[1], first_rows[w], columns, len(w))

    def evicted(self, rows: WindowRows) -> Evicted | None:
        """The rows the evictor keeps for the window function (its ``keep_before`` at the end
        of input), or ``None`` when an aggregate's window keeps no row (the operator evaluates
        those: ``add_groups`` takes no empty group). ``keep_after`` is not called: it keeps
        rows for later firings, and a window fires once here."""
        evictor = self.evictor
        assert evictor is not None
        mask = kept_before(evictor, rows, END_OF_INPUT, "the Spark batch replay")
        counts = rows.kept_per_window(mask)
        if not isinstance(self.function, VectorizedProcessWindowFunction) and not counts.all():
            return None
        return Evicted(mask, np.concatenate(([0], np.cumsum(counts))).astype(np.int64))

    def _evicting(self) -> str:
        evictor, trigger = self.evictor, self.trigger
        firing = "" if trigger is None else f", firing by {trigger!r} on columns"
        return firing + ("" if evictor is None else f", evicting with {evictor!r} on columns")

    @property
    def clears(self) -> bool:
        """A window function's ``clear`` follows each ``process`` (on the same timer: no
        lateness) because the function has one."""
        fn = self.function
        if isinstance(fn, ProcessFold):
            return fn.clears
        return isinstance(fn, VectorizedProcessWindowFunction) and overrides_clear(fn)

    def describe(self) -> str:
        fn = self.function
        if isinstance(fn, AggregateItems):
            return (
                f"{fn.describe()} on {self.windows()}{self._evicting()}: a window's "
                "rows (a firing's: once per firing) reduced with numpy per Arrow record batch "
                "(keys the columns cannot take, e.g. a sum that could leave 64 bits or a float "
                "min / max meeting NaN, run through the operator)"
            )
        if isinstance(fn, ProcessFold):
            return (
                f"{fn.describe()} on {self.windows()}: a record batch's rows as Row objects, "
                "one process call per window on a slice of them at the end of input, no "
                "operator per key (keys the columns cannot take, e.g. near the ends of time, "
                "run through the operator)"
            )
        if isinstance(fn, RowFold):
            return (
                f"{fn.describe()} on {self.windows()}: a record batch's rows as Row objects, "
                "each window's rows added in replay order in one loop over all its (key, "
                "window) groups, no operator per key (keys the columns cannot take, e.g. "
                "near the ends of time or with a None result, run through the operator)"
            )
        if isinstance(fn, VectorizedProcessWindowFunction):
            return (
                f"{describe_process(fn)} on {self.windows()}{self._evicting()}: one process "
                "call per window on "
                "a slice of the Arrow record batch holding its rows, at the end of input "
                "(keys the columns cannot take, e.g. near the ends of time, run through the "
                "operator, which hands process each window's rows)"
            )
        return (
            f"{describe(fn)} on {self.windows()}{self._evicting()}: one add_groups and one "
            "get_results per Arrow record batch for all its (key, window) groups (keys the "
            "columns cannot take, e.g. near the ends of time, run through the operator, which "
            "hands add_batch each window's rows)"
        )


def _offsets(boundary: np.ndarray[Any, Any], n: int) -> np.ndarray[Any, Any]:
    """Where each group begins (``boundary[i]``: row ``i + 1`` begins one), then ``n``."""
    first = np.flatnonzero(np.concatenate(([True], boundary)))
    return np.append(first, n).astype(np.int64)


def _key_changes(codes: np.ndarray[Any, Any] | None, n: int) -> np.ndarray[Any, Any]:
    if codes is None:
        return np.zeros(max(n - 1, 0), np.bool_)
    return codes[1:] != codes[:-1]  # type: ignore[no-any-return]


@dataclass(frozen=True, eq=False)
class VectorizedTumbling(VectorizedWindows):
    """Tumbling event-time windows (``size``, ``offset`` in ms): a window's rows are
    consecutive."""

    size: int = 1
    offset: int = 0
    kind: ClassVar[str] = "tumbling"
    shape: ClassVar[ColumnarShape] = ColumnarShape.TUMBLING

    @property
    def margin(self) -> int:
        return 2 * self.size + abs(self.offset) + self.allowed_lateness

    def carried_from(self, t: np.ndarray[Any, Any], lo: int) -> int:
        """The rows of the last window."""
        return last_window_from(t, lo, self.size, self.offset)

    def groups(self, t: np.ndarray[Any, Any], codes: np.ndarray[Any, Any] | None) -> Groups:
        starts = tumbling_starts(t, self.size, self.offset)
        offsets = _offsets((starts[1:] != starts[:-1]) | _key_changes(codes, len(t)), len(t))
        first = starts[offsets[:-1]]
        return Groups(None, offsets, first, first + self.size)

    def windows(self) -> str:
        return f"tumbling windows of {self.size} ms"


@dataclass(frozen=True, eq=False)
class VectorizedHopping(VectorizedWindows):
    """Hopping event-time windows (``size``, ``slide < size``, ``offset`` in ms): each row
    is taken once per window it belongs to, the rows of a window in replay order."""

    size: int = 1
    slide: int = 1
    offset: int = 0
    kind: ClassVar[str] = "hopping"
    shape: ClassVar[ColumnarShape] = ColumnarShape.HOPPING

    @property
    def margin(self) -> int:
        return 2 * (self.size + self.slide) + abs(self.offset) + self.allowed_lateness

    def carried_from(self, t: np.ndarray[Any, Any], lo: int) -> int:
        """All of the rows ``lo:``: hopping windows overlap, any may share one with later
        rows."""
        return lo

    def groups(self, t: np.ndarray[Any, Any], codes: np.ndarray[Any, Any] | None) -> Groups:
        n, size, slide = len(t), self.size, self.slide
        last = tumbling_starts(t, slide, self.offset)  # Flink: the last window's start
        k = -(-size // slide)
        starts = last[:, None] - slide * np.arange(k)[None, :]
        member = starts > (t - size)[:, None]  # start <= t < start + size
        rows = np.broadcast_to(np.arange(n)[:, None], (n, k))[member]
        starts = starts[member]
        keys = np.zeros(len(rows), np.int64) if codes is None else codes[rows]
        order = np.lexsort((rows, starts, keys))  # by key, window, then replay order
        rows, starts, keys = rows[order], starts[order], keys[order]
        boundary = (starts[1:] != starts[:-1]) | (keys[1:] != keys[:-1])
        offsets = _offsets(boundary, len(rows))
        first = starts[offsets[:-1]]
        return Groups(rows, offsets, first, first + size)

    def windows(self) -> str:
        return f"hopping windows of {self.size} ms every {self.slide} ms (a row per window)"


@dataclass(frozen=True, eq=False)
class VectorizedSessions(VectorizedWindows):
    """Event-time session windows of a static ``gap`` (ms): a session's rows are
    consecutive, a row at most ``gap`` after the one before it in the same session."""

    gap: int = 1
    kind: ClassVar[str] = "session"
    shape: ClassVar[ColumnarShape] = ColumnarShape.SESSIONS

    @property
    def margin(self) -> int:
        return 2 * self.gap + self.allowed_lateness + 1

    def carried_from(self, t: np.ndarray[Any, Any], lo: int) -> int:
        """The rows of the last session."""
        cut = np.flatnonzero(np.diff(t[lo:]) > self.gap)
        return lo + int(cut[-1]) + 1 if len(cut) else lo

    def groups(self, t: np.ndarray[Any, Any], codes: np.ndarray[Any, Any] | None) -> Groups:
        n = len(t)
        offsets = _offsets((np.diff(t) > self.gap) | _key_changes(codes, n), n)
        return Groups(None, offsets, t[offsets[:-1]], t[offsets[1:] - 1] + self.gap)

    def firing_windows(
        self, found: Groups, fired: Firings, stamps: np.ndarray[Any, Any]
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """A session fires as it was merged up to the firing's last row (a row fires the
        session it has just joined; the end of input, the whole session)."""
        return found.starts[fired.windows], stamps[fired.at] + self.gap

    def windows(self) -> str:
        return f"event-time sessions of gap {self.gap} ms"


def aggregate_columns(
    function: VectorizedAggregateFunction[Any, Any] | AggregateItems,
    rows: pa.Table,
    offsets: np.ndarray[Any, Any],
    out_schema: StructType,
) -> list[pa.Array] | None:
    """The result columns (``out_schema``) of ``function`` over the groups ``offsets`` of
    ``rows`` (none empty), or ``None`` when the operator must compute them: a vectorized
    aggregate's ``add_groups`` and ``get_results`` (a ``None`` result), or ``.agg`` columns'
    accumulator columns (:func:`items_columns`)."""
    if isinstance(function, AggregateItems):
        return items_columns(function, rows, offsets, out_schema)
    batch = in_format(rows, function.batch_format)
    results = group_results(function, group_accumulators(function, batch, offsets))
    return result_columns(function, results, out_schema)


def items_columns(
    items: AggregateItems, rows: pa.Table, offsets: np.ndarray[Any, Any], out_schema: StructType
) -> list[pa.Array] | None:
    """``.agg`` columns over the groups ``offsets`` of ``rows`` as the output columns, or
    ``None`` when the accumulator columns could give another result than the operator (a
    float ``min`` / ``max`` meeting NaN or ``-0.0``, a sum that could leave 64 bits)."""
    return spans_columns(items, rows, (offsets[:-1], offsets[1:]), out_schema)


def spans_columns(
    items: AggregateItems,
    rows: pa.Table,
    spans: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]],
    out_schema: StructType,
) -> list[pa.Array] | None:
    """:func:`items_columns` over the ranges ``spans`` of ``rows`` (non-empty, possibly
    overlapping: prefix sums and a sparse table, no copy of a row)."""
    reduced = items.reduce_ranges(items.items_of(rows), spans[0], spans[1])
    if reduced is None:
        return None
    results = items.results_of(reduced)
    types = to_arrow_schema(out_schema, timezone="UTC").types
    return [
        results.column(name).combine_chunks().cast(t)
        for name, t in zip(out_schema.names, types, strict=True)
    ]


def result_columns(
    function: VectorizedAggregateFunction[Any, Any], results: Any, out_schema: StructType
) -> list[pa.Array] | None:
    """``get_results``' value as the result columns: columns by field name (a ``dict``, an
    Arrow table or record batch, a pandas data frame), one array for an output of one
    field, or a sequence of results (``None`` when one is ``None``: the operator counts such
    windows)."""
    names = list(out_schema.names)
    try:
        if isinstance(results, pd.DataFrame):
            results = pa.Table.from_pandas(results, preserve_index=False)
        if isinstance(results, pa.Table | pa.RecordBatch):
            results = {name: results.column(name) for name in results.column_names}
        if isinstance(results, Mapping):
            if sorted(map(str, results)) != sorted(names):
                msg = f"columns {sorted(map(str, results))} for the output fields {names}"
                raise ValueError(msg)
            return [_array(results[name]) for name in names]
        if len(names) == 1 and isinstance(results, np.ndarray | pa.Array | pa.ChunkedArray):
            return [_array(results)]
        values = list(results)
        if any(v is None for v in values):
            return None
        return encoded_columns(values, out_schema)
    except Exception as exc:
        exc.add_note(
            f"while writing the results of {describe(function)}.get_results as the output "
            f"columns {out_schema.simpleString()}"
        )
        raise


def _array(values: Any) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    if isinstance(values, pa.Array):
        return values
    if isinstance(values, pd.Series):
        return pa.Array.from_pandas(values)
    return pa.array(values)


def vectorized_plan(
    config: WindowConfig,
    spec: WindowFunctionSpec,
    *,
    streaming: bool,
    keys: Sequence[str] = (),
    input_arrow: pa.Schema | None = None,
) -> VectorizedWindows | None:
    """The plan of a vectorized function computed a record batch at a time, or ``None``:
    batch; tumbling or hopping (``slide <= size``) event-time windows, aligned, or
    event-time sessions of a static gap; the default trigger; no evictor or one with a form
    on columns (:class:`~windowing.evictors.vectorized.VectorizedEvictor`); no window
    function; a lateness that lets windows be cleaned up (and none for a window function
    with a ``clear`` of its own); or a trigger with a form on columns (and an evictor with
    one or none), for a vectorized aggregate. ``.agg`` columns exact on accumulator columns
    (``keys``, the key columns, ``input_arrow``, the input's Arrow schema) take the plans of
    a vectorized aggregate with a trigger or an evictor on columns. The caller checks the
    order of rows (event-time order)."""
    if streaming or not isinstance(spec, Aggregate | Process):
        return None
    items = spec_items(spec, keys, input_arrow)
    if spec.vectorized is None and items is None:
        return None
    evictor, trigger = config.evictor, config.trigger
    if evictor is not None and not (isinstance(evictor, VectorizedEvictor) and evictor.vectorized):
        return None  # the operator calls its per-row methods
    if getattr(spec, "window_function", None) is not None:
        return None
    if trigger is not None and type(trigger) is EventTimeTrigger:
        trigger = None  # the default: each window fires once, at its end
    fn: Any = spec.vectorized if items is None else items
    if trigger is not None and not (
        isinstance(trigger, VectorizedTrigger)
        and trigger.vectorized
        and not isinstance(fn, VectorizedProcessWindowFunction)
        and (on_sessions(trigger) or type(config.assigner) is not EventTimeSessionWindows)
    ):
        return None  # the operator: its timers, a window function's state across firings
    if items is not None and trigger is None and evictor is None:
        return None  # the default trigger: a native plan, else the operator's accumulators
    lateness = config.allowed_lateness
    if isinstance(fn, VectorizedProcessWindowFunction) and overrides_clear(fn) and lateness:
        return None  # cleanups interleave with other windows' firings: the operator's timers
    return _windows_plan(fn, config, evictor, trigger, sessions=True)


def fold_plan(
    config: WindowConfig, spec: WindowFunctionSpec, *, streaming: bool
) -> VectorizedWindows | None:
    """The plan of a per-row aggregate or reduce folded a record batch at a time, or of a
    per-row window function called per window on its rows
    (:mod:`~windowing.spark.columnar.row_fold`), or ``None``: batch; tumbling or hopping
    (``slide <= size``) event-time windows, aligned, that the operator keeps per window (not
    as panes), or static-gap event-time sessions (in event-time order a row joins its key's
    last session, added to it without a merge); the default trigger; no evictor, and no
    ``WindowFunction`` after an aggregate (a ``ProcessWindowFunction`` is called per window);
    a lateness that lets windows be cleaned up (and none for a window function with a
    ``clear`` of its own). The caller checks the order of rows (event-time order)."""
    fold = None if streaming else fold_of(spec)
    if fold is None or config.evictor is not None:
        return None
    if fold.clears and config.allowed_lateness:
        return None  # cleanups interleave with other windows' firings: the operator's timers
    if config.trigger is not None and type(config.trigger) is not EventTimeTrigger:
        return None
    assigner = config.assigner
    if type(assigner) is HoppingEventTimeWindows and assigner.slide < assigner.size:
        kept = plan_operator(
            assigner, config.trigger, None, spec, config.allowed_lateness, config.slicing
        )
        if kept.strategy is not Strategy.ALIGNED:
            return None  # partials of panes merged: the operator's order of operations
    return _windows_plan(fold, config, None, None, sessions=True)


def _windows_plan(
    fn: Any,
    config: WindowConfig,
    evictor: VectorizedEvictor[Any, Any] | None,
    trigger: VectorizedTrigger[Any, Any] | None,
    *,
    sessions: bool,
) -> VectorizedWindows | None:
    """The plan of ``fn`` on the config's windows: aligned tumbling, hopping (``slide <=
    size``) or (``sessions``) static-gap session windows, with a lateness that lets windows
    be cleaned up."""
    lateness = config.allowed_lateness
    if lateness > MAX_TIMESTAMP // 4:
        return None  # cleanup at the end of time: the operator keeps the windows (a metric)
    assigner = config.assigner
    if type(assigner) is TumblingEventTimeWindows and assigner.stagger is WindowStagger.ALIGNED:
        return VectorizedTumbling(
            fn,
            lateness,
            assigner.size,
            assigner.offset,
            evictor=evictor,
            trigger=trigger,
        )
    if type(assigner) is HoppingEventTimeWindows and assigner.slide <= assigner.size:
        size, slide, offset = assigner.size, assigner.slide, assigner.offset
        if slide == size:
            return VectorizedTumbling(fn, lateness, size, offset, evictor=evictor, trigger=trigger)
        return VectorizedHopping(
            fn, lateness, size, slide, offset, evictor=evictor, trigger=trigger
        )
    if sessions and type(assigner) is EventTimeSessionWindows:
        return VectorizedSessions(fn, lateness, assigner.gap, evictor=evictor, trigger=trigger)
    return None
