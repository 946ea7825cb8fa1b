"""Built-in aggregations of tumbling event-time windows computed on whole Arrow columns.

For ``sum`` / ``min`` / ``max`` / ``min_by`` / ``max_by``
(:class:`~windowing.functions.aggregations.FieldAggregation`) of tumbling event-time windows with
the default trigger and no evictor, a window's reduced record is a function of its rows in
replay order: the rows of a window form one group, and each aggregation is a per-group
reduction. This module computes those reductions with numpy on the Arrow buffers, without
building a ``Row`` per input row, in two places:

* the batch replay without an arrival order (:func:`columnar_results`): nothing is late and
  every window fires once, at the end of input, over all its rows in event-time order
  (``WindowOperator.process_to_end``);
* the streaming runtime (:func:`step_open_windows`): per key and micro-batch, the watermark
  advance fires and cleans up windows, then the rows are added; the key's state is its open
  windows' reduced records (:class:`OpenWindows`), the operator's reduce state.

Every function returns ``None`` whenever the column values could make the result differ from
the operator's (nulls, NaNs, ``-0.0``, float sums, integer overflow, timestamps near the ends
of time, an element that would fire a window on arrival), and the runtime then runs the
operator. ``tests/property`` and ``tests/spark`` hold the paths equal.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from windowing.engine.encoding import NO_SCOPE, StateScope, StateWriter
from windowing.engine.keystate import KeyState
from windowing.functions.aggregations import AggregationType, FieldAggregation
from windowing.functions.spec import Reduce
from windowing.operator import WindowOperator
from windowing.spark.columns.frames import from_ipc, to_ipc
from windowing.spark.columns.schema import table_rows
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.triggers.event_time import EventTimeTrigger

__all__ = [
    "SUM_LIMIT",
    "ColumnarPlan",
    "ColumnarResults",
    "ColumnarShape",
    "ColumnarStep",
    "FieldItems",
    "ItemsOfAField",
    "OpenWindows",
    "StreamingItems",
    "WindowItems",
    "WindowShape",
    "columnar_results",
    "decode_open_windows",
    "default_firing",
    "describe",
    "encode_open_windows",
    "field_aggregation_of",
    "field_items_of",
    "key_state_of",
    "keys_needing_the_operator",
    "near_ends_of_time",
    "null_times",
    "open_windows_of",
    "ordered_floats",
    "reduce_groups",
    "rows_needing_the_operator",
    "step_open_windows",
    "times_near_ends",
    "unordered_floats",
    "usable",
    "value_rows_needing_the_operator",
    "window_groups",
    "window_listing",
]

# int64 accumulation is exact while |sum| < 2**63.
SUM_LIMIT = 2**63


class ColumnarShape(enum.Enum):
    """The window shape a built-in aggregation is computed for on whole columns (each plan
    class names its own: ``TumblingAggregation.shape``, ...)."""

    TUMBLING = "tumbling"
    HOPPING = "hopping"
    SESSIONS = "sessions"
    KIP450 = "kip450"
    COUNT_TRIGGER = "count-trigger"


class WindowShape(Protocol):
    """A columnar plan: the calls the module's functions make of it. Tumbling windows
    (:class:`~windowing.spark.columnar.tumbling.TumblingAggregation`), hopping windows as panes
    (:mod:`windowing.spark.columnar.hopping`), sessions
    (:mod:`windowing.spark.columnar.sessions`)."""

    @property
    def aggregation(self) -> AggregationType: ...

    @property
    def field(self) -> str: ...

    @property
    def first(self) -> bool: ...

    @property
    def allowed_lateness(self) -> int: ...

    @property
    def kind(self) -> str: ...

    @property
    def shape(self) -> ColumnarShape: ...

    def results(
        self,
        times: pa.ChunkedArray,
        values: pa.ChunkedArray,
        codes: np.ndarray[Any, Any] | None,
    ) -> ColumnarResults | None: ...

    def step(
        self,
        state: OpenWindows | None,
        watermark: int,
        rows: pa.Table | None,
        times: np.ndarray[Any, Any] | None,
        codes: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None,
    ) -> ColumnarStep | None: ...

    def rows_needing_the_operator(
        self, watermark: int, rows: pa.Table, times: pa.ChunkedArray
    ) -> np.ndarray[Any, Any]: ...

    def keys_needing_the_operator(
        self,
        state: OpenWindows | None,
        state_codes: np.ndarray[Any, Any],
        watermark: int,
        times: np.ndarray[Any, Any],
        row_codes: np.ndarray[Any, Any],
    ) -> np.ndarray[Any, Any]: ...

    def key_state_of(
        self, op: WindowOperator, state: OpenWindows, records: list[Any]
    ) -> KeyState: ...

    def records_of(self, items: pa.Table) -> list[Any]:
        """The operator's state value of each item of a state (a reduced ``Row``)."""
        ...

    def usable_state(self, items: pa.Table) -> bool:
        """Whether a state's items can be reduced on columns (not of nulls an operator call
        left)."""
        ...

    def open_windows_of(
        self, op: WindowOperator, ks: KeyState, encode: Callable[[list[Any]], pa.Table | None]
    ) -> OpenWindows | None: ...

    def next_event_time(self, state: OpenWindows) -> int | None: ...

    def window_count(self, state: OpenWindows, codes: np.ndarray[Any, Any] | None) -> int: ...

    def listing(self, state: OpenWindows) -> Iterator[tuple[int, int, int, list[int]]]: ...

    def describe(self) -> str: ...

    def carried_from(self, t: np.ndarray[Any, Any], lo: int) -> int:
        """The first of the rows ``lo:`` of a key (event times ``t``, sorted) that may share a
        window with the key's later rows (times ``>= t[-1]``): a batch replay carries them to
        the key's next record batch."""
        ...


#: A columnar plan: one of the window shapes.
ColumnarPlan = WindowShape


def default_firing(trigger: Any, evictor: Any, allowed_lateness: int) -> bool:
    """Whether windows fire as the columnar plans compute them: ``EventTimeTrigger`` (or
    none), no evictor, and a lateness after which windows are cleaned up (not at the end of
    time, where the operator keeps them: a metric)."""
    if evictor is not None or allowed_lateness > MAX_TIMESTAMP // 4:
        return False
    return trigger is None or type(trigger) is EventTimeTrigger


def field_aggregation_of(
    spec: Any,
    trigger: Any,
    evictor: Any,
    allowed_lateness: int = 0,
    input_schema: pa.Schema | None = None,
) -> FieldAggregation | None:
    """The built-in aggregation a columnar plan computes for this window function, trigger,
    evictor and lateness, or ``None`` when the operator must run (another trigger or
    function, an evictor, a lateness so large that windows are never cleaned up; with the
    input's Arrow schema ``input_schema``: a field that is not an input column, or whose type
    numpy cannot reduce as the reduce function does: integers always, floats for all but
    ``sum``)."""
    if not default_firing(trigger, evictor, allowed_lateness):
        return None
    if not isinstance(spec, Reduce) or spec.window_function is not None:
        return None
    fn = spec.function
    if type(fn) is not FieldAggregation or not isinstance(fn.field, str):
        return None
    if input_schema is not None:
        index = input_schema.get_field_index(fn.field)
        if index < 0:
            return None  # the operator names the missing field
        vtype = input_schema.field(index).type
        floats = pa.types.is_floating(vtype) and fn.aggregation is not AggregationType.SUM
        if not (pa.types.is_integer(vtype) or floats):
            return None
    return fn


def usable(kind: AggregationType, values: pa.Array | pa.ChunkedArray) -> bool:
    """Whether numpy reduces ``values`` as the reduce function does: no nulls; integers, or
    floats without NaN and ``-0.0`` (Java's ``Double.compareTo`` orders them, numpy's minimum
    and maximum do not) for all but ``sum`` (a float sum depends on the order of additions)."""
    if values.null_count:
        return False
    vtype = values.type
    if pa.types.is_floating(vtype):
        return kind is not AggregationType.SUM and ordered_floats(values.to_numpy())
    return bool(pa.types.is_integer(vtype))


def ordered_floats(v: np.ndarray[Any, Any]) -> bool:
    """Whether the floats ``v`` hold no NaN and no ``-0.0``."""
    return not unordered_floats(v).any()


def window_groups(
    group: np.ndarray[Any, Any], codes: np.ndarray[Any, Any] | None = None
) -> tuple[np.ndarray[Any, Any] | None, np.ndarray[Any, Any]]:
    """The rows of each window together: ``group`` holds each row's window start, ``codes``
    (when several keys are reduced at once) each row's key. Returns the permutation that
    sorts the rows by key, then window, each window's rows keeping their order (``None``:
    they are sorted already), and the position of each window's first row after it."""
    n = len(group)
    perm = None
    same_key = None if codes is None else codes[1:] == codes[:-1]
    rising = group[1:] >= group[:-1]
    if codes is not None:  # sorted by key code, then window
        assert same_key is not None
        rising = (codes[1:] > codes[:-1]) | (same_key & rising)
    if n > 1 and not bool(rising.all()):
        # a window's rows keep their order
        perm = np.argsort(group, kind="stable") if codes is None else np.lexsort((group, codes))
        group = group[perm]
        if codes is not None:
            ordered = codes[perm]
            same_key = ordered[1:] == ordered[:-1]
    boundary = group[1:] != group[:-1]
    if same_key is not None:
        boundary |= ~same_key
    return perm, np.flatnonzero(np.concatenate(([True], boundary)))


def reduce_groups(
    kind: AggregationType,
    first: bool,
    group: np.ndarray[Any, Any],
    v: np.ndarray[Any, Any],
    codes: np.ndarray[Any, Any] | None = None,
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any] | None] | None:
    """Reduce the rows (each key's in replay order) by window with the aggregation ``kind``
    (``first``: which of equal extremes ``min_by`` / ``max_by`` keep): ``group`` holds each
    row's window start, ``v`` its field value, ``codes`` (when several keys are reduced at
    once) each row's key. Returns the window starts (by key, then ascending), the row each
    window's record is taken from, and the field's values (``None``: taken from those rows),
    or ``None`` when the sum would overflow or not fit the column."""
    perm, first_rows = window_groups(group, codes)
    if perm is not None:
        group = group[perm]
        v = v[perm]
    n = len(group)
    starts = group[first_rows]
    if kind is AggregationType.SUM:
        widest = max(abs(int(v.min())), abs(int(v.max())))
        if widest * n >= SUM_LIMIT:
            return None
        sums = np.add.reduceat(v.astype(np.int64, copy=False), first_rows)
        info = np.iinfo(v.dtype)
        if widest * n > info.max and (int(sums.min()) < info.min or int(sums.max()) > info.max):
            return None  # the operator's result does not fit the column: it raises
        rows = first_rows if perm is None else perm[first_rows]
        return starts, rows, sums
    # min / max / min_by / max_by: the first (or last) row of each group holding the group's
    # extreme value; min / max keep the group's first row and take the value from there
    # (equal values keep the first one seen, as the reduce does).
    lowest = kind in (AggregationType.MIN, AggregationType.MIN_BY)
    extreme = (np.minimum if lowest else np.maximum).reduceat(v, first_rows)
    lengths = np.diff(np.append(first_rows, n))
    run = np.repeat(np.arange(len(first_rows)), lengths)
    hits = np.flatnonzero(v == extreme[run])
    hit_runs = run[hits]
    if kind.picks_element and not first:
        chosen = hits[np.append(hit_runs[1:] != hit_runs[:-1], True)]
    else:
        chosen = hits[np.concatenate(([True], hit_runs[1:] != hit_runs[:-1]))]
    if kind.picks_element:
        return starts, (chosen if perm is None else perm[chosen]), None
    return starts, (first_rows if perm is None else perm[first_rows]), v[chosen]


_Array = np.ndarray[Any, Any]


class WindowItems(Protocol):
    """What a tumbling columnar plan keeps per window (its *item*: a table row holding the
    key columns) and how items combine: a built-in aggregation's reduced input record
    (:class:`FieldItems`), the accumulators of ``.agg`` columns
    (:class:`~windowing.spark.columnar.accumulators.AggregateItems`), or a vectorized
    aggregate's rows (:class:`~windowing.spark.columnar.vectorized_items.VectorizedItems`)."""

    def rows_needing_the_operator(
        self, rows: pa.Table, times: pa.ChunkedArray
    ) -> tuple[_Array, _Array]:
        """The input rows the columns cannot add whatever the windows (a boolean mask), and
        the event times (``0`` for nulls)."""
        ...

    def items_of(self, rows: pa.Table) -> pa.Table | None:
        """Input rows (of the input columns) as one item each, or ``None`` when the columns
        cannot take them."""
        ...

    def reduce(
        self, group: _Array, items: pa.Table, codes: _Array | None
    ) -> tuple[_Array, _Array, pa.Table] | None:
        """Items (each key's in replay order, window labels ``group``, key codes ``codes``;
        ``None``: one key) reduced to one per window: the windows' labels (by key, then
        ascending), the position of an item of each window in ``items``, and their reduced
        items, or ``None`` when the operator must compute them."""
        ...

    def usable_state(self, items: pa.Table) -> bool:
        """Whether a state's items can be reduced on columns (not a state of nulls that an
        operator call left)."""
        ...

    def results_of(self, items: pa.Table) -> pa.Table | None:
        """The key columns and result columns (by output name) of the fired windows' items,
        or ``None`` when the operator must compute them (a vectorized function's ``None``
        result, which the operator counts)."""
        ...

    def records_of(self, items: pa.Table) -> list[Any]:
        """The operator's state value of each item (a reduced ``Row``, an accumulator)."""
        ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class FieldItems:
    """A built-in aggregation's items: each window's reduced input record (the input
    columns, key columns included)."""

    aggregation: AggregationType
    field: str
    first: bool

    def rows_needing_the_operator(
        self, rows: pa.Table, times: pa.ChunkedArray
    ) -> tuple[_Array, _Array]:
        return value_rows_needing_the_operator(self.aggregation, self.field, rows, times)

    def items_of(self, rows: pa.Table) -> pa.Table | None:
        return rows if usable(self.aggregation, rows.column(self.field)) else None

    def reduce(
        self, group: _Array, items: pa.Table, codes: _Array | None
    ) -> tuple[_Array, _Array, pa.Table] | None:
        values = items.column(self.field)
        if values.null_count:
            return None  # a window of null values (state converted from the operator)
        v = values.to_numpy()
        if v.dtype.kind == "f" and not ordered_floats(v):
            return None  # the kept values held them (state converted from the operator)
        found = reduce_groups(self.aggregation, self.first, group, v, codes)
        if found is None:
            return None
        starts, carriers, field_values = found
        records = items.take(carriers)
        if field_values is not None:
            position = records.schema.get_field_index(self.field)
            field = records.schema.field(position)
            try:
                array = pa.array(field_values, field.type)
            except (pa.ArrowInvalid, OverflowError):
                return None  # beyond the column's type: the operator raises
            records = records.set_column(position, field, array)
        return starts, carriers, records

    def usable_state(self, items: pa.Table) -> bool:
        return usable(self.aggregation, items.column(self.field))

    def results_of(self, items: pa.Table) -> pa.Table:
        return items

    def records_of(self, items: pa.Table) -> list[Any]:
        return table_rows(items, items.column_names)

    def describe(self) -> str:
        return f"built-in {self.aggregation.value} of {self.field!r}"


def field_items_of(items: WindowItems) -> FieldItems:
    """A built-in aggregation's items (``TypeError`` for ``.agg`` columns: the batch replay
    never computes them on columns)."""
    if not isinstance(items, FieldItems):
        msg = f"{items.describe()} has no single aggregated field"
        raise TypeError(msg)
    return items


class ItemsOfAField:
    """The built-in aggregation of a shape whose windows keep ``items``: its
    ``aggregation``, ``field`` and ``first`` (``TypeError`` for ``.agg`` columns)."""

    items: WindowItems

    @property
    def aggregation(self) -> AggregationType:
        return field_items_of(self.items).aggregation

    @property
    def field(self) -> str:
        return field_items_of(self.items).field

    @property
    def first(self) -> bool:
        return field_items_of(self.items).first


class StreamingItems(ItemsOfAField):
    """What the shapes computed in streaming only share (``.agg`` accumulator columns of
    hopping, KIP-450 and count-triggered windows): no batch results, each window one item
    converted by its items (:class:`WindowItems`)."""

    def results(
        self, times: pa.ChunkedArray, values: pa.ChunkedArray, codes: _Array | None
    ) -> ColumnarResults | None:
        """Streaming only: a batch replay runs these jobs natively or in the operator."""
        return None

    def carried_from(self, t: _Array, lo: int) -> int:
        return lo  # (no batch results)

    def records_of(self, items: pa.Table) -> list[Any]:
        """Each item's accumulator list."""
        return self.items.records_of(items)

    def usable_state(self, items: pa.Table) -> bool:
        """Whether the items can be reduced on columns."""
        return self.items.usable_state(items)

    def window_count(self, state: OpenWindows, codes: _Array | None) -> int:
        return len(state)


def null_times(times: pa.ChunkedArray) -> tuple[_Array, _Array]:
    """Which rows have no event time (a boolean mask), and the event times (``0`` for
    nulls)."""
    if not times.null_count:
        return np.zeros(len(times), np.bool_), times.to_numpy()
    return times.is_null().to_numpy(zero_copy_only=False), times.fill_null(0).to_numpy()


def unordered_floats(v: _Array) -> _Array:
    """Which of the floats ``v`` are NaN or ``-0.0`` (Spark and Java order them, numpy's
    minimum and maximum do not)."""
    return np.isnan(v) | (np.signbit(v) & (v == 0))  # type: ignore[no-any-return]


def near_ends_of_time(margin: int, lo: int, hi: int) -> bool:
    """Whether times from ``lo`` to ``hi`` come within ``margin`` of the ends of time."""
    return lo <= MIN_TIMESTAMP + margin or hi >= MAX_TIMESTAMP - margin


def times_near_ends(t: _Array, margin: int) -> _Array:
    """Which of the times ``t`` come within ``margin`` of the ends of time (a mask)."""
    return (t <= MIN_TIMESTAMP + margin) | (t >= MAX_TIMESTAMP - margin)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class ColumnarResults:
    """Per window: its start; the input row each result row is taken from; the aggregated
    field's values (``None``: taken from those rows too); its end (the result's timestamp is
    ``end - 1``)."""

    starts: np.ndarray[Any, Any]
    rows: np.ndarray[Any, Any]
    field_values: np.ndarray[Any, Any] | None
    ends: np.ndarray[Any, Any]


def columnar_results(
    plan: ColumnarPlan,
    times: pa.ChunkedArray,
    values: pa.ChunkedArray,
    codes: np.ndarray[Any, Any] | None = None,
) -> ColumnarResults | None:
    """The windows of the keys whose rows are sorted as the replay sorts them (by key
    ``codes``, ``None`` for one key; then event time ``times`` in ms without nulls, then the
    tie-breaker), or ``None`` when the operator must compute them."""
    if len(times) == 0 or not usable(plan.aggregation, values):
        return None
    return plan.results(times, values, codes)


# ---------------------------------------------------------------------------- streaming


@dataclass(frozen=True, eq=False)
class OpenWindows:
    """Open windows in the columnar streaming state, of one key or of a key group's keys: per
    item (a window, a pane or a session, by ``kind``) its start and its reduced record (the
    input columns, key columns included; the operator's reduce state), and the watermark up
    to which windows have fired (a window ending at or before it is kept only for its allowed
    lateness). A key's items are contiguous. ``extra`` holds the int64 arrays of the other
    kinds (per item: a session's end; a pane's arrival sequence and whether the item is a
    whole window taken over from the operator). Tumbling windows (``kind`` ``"tumbling"``)
    are ascending by start within a key."""

    starts: np.ndarray[Any, Any]
    rows: pa.Table
    fired_upto: int
    kind: str = "tumbling"
    extra: dict[str, np.ndarray[Any, Any]] = dataclasses.field(default_factory=dict)

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _open_windows,
            (
                self.starts.tobytes(),
                to_ipc(self.rows),
                self.fired_upto,
                self.kind,
                tuple((name, a.tobytes()) for name, a in sorted(self.extra.items())),
            ),
        )

    def __len__(self) -> int:
        return len(self.starts)

    def next_event_time(self, plan: ColumnarPlan) -> int | None:
        """The earliest operator timer: a window's end (``max_timestamp``) while it has not
        fired, then its cleanup time."""
        if len(self.starts) == 0:
            return None
        return plan.next_event_time(self)

    def window_count(self, plan: ColumnarPlan, codes: np.ndarray[Any, Any] | None = None) -> int:
        """The windows the operator would hold for this state (for panes: every window with
        a pane that is not cleaned up); ``codes``: each item's key (``None``: one key)."""
        if not len(self.starts):
            return 0
        return plan.window_count(self, codes)

    def take(self, index: np.ndarray[Any, Any]) -> OpenWindows:
        """The items at positions ``index``."""
        extra = {name: a[index] for name, a in self.extra.items()}
        return OpenWindows(
            self.starts[index], self.rows.take(index), self.fired_upto, self.kind, extra
        )

    def slice(self, lo: int, hi: int) -> OpenWindows:
        extra = {name: a[lo:hi] for name, a in self.extra.items()}
        rows = self.rows.slice(lo, hi - lo)
        return OpenWindows(self.starts[lo:hi], rows, self.fired_upto, self.kind, extra)

    @staticmethod
    def concat(parts: Sequence[OpenWindows]) -> OpenWindows:
        """The items of ``parts`` (of one kind, fired up to the same watermark, no key in two
        of them) as one state."""
        if len(parts) == 1:
            return parts[0]
        first = parts[0]
        extra = {name: np.concatenate([p.extra[name] for p in parts]) for name in first.extra}
        return OpenWindows(
            np.concatenate([p.starts for p in parts]),
            # an .agg state of an earlier run may hold narrower accumulators (an argument's
            # type changed): widened to the common type
            pa.concat_tables([p.rows for p in parts], promote_options="permissive"),
            first.fired_upto,
            first.kind,
            extra,
        )

    def require_kind(self, kind: str) -> None:
        """Refuse a state of other windows than the query's (a checkpoint of another job)."""
        if self.kind != kind:
            msg = (
                f"the checkpoint's columnar state holds {self.kind} windows but the query "
                f"computes {kind} windows; start the query with a new checkpoint location"
            )
            raise ValueError(msg)


def encode_open_windows(windows: OpenWindows, scope: StateScope = NO_SCOPE) -> bytes:
    """Open windows in the versioned state encoding for ``scope`` (plain bytes: the starts,
    the rows as Arrow IPC, the fired watermark; other kinds than tumbling windows also their
    kind and extra arrays)."""
    plain: tuple[Any, ...] = (
        "open",
        windows.starts.tobytes(),
        to_ipc(windows.rows),
        windows.fired_upto,
    )
    if windows.kind != "tumbling" or windows.extra:
        extra = tuple((name, a.tobytes()) for name, a in sorted(windows.extra.items()))
        plain = (*plain, windows.kind, extra)
    return StateWriter().finish(plain, scope)


def decode_open_windows(plain: Any) -> OpenWindows | None:
    """The open windows of an :func:`encode_open_windows` plain part, else ``None``."""
    if isinstance(plain, tuple) and len(plain) in (4, 6) and plain[0] == "open":
        return _open_windows(*plain[1:])
    return None


def _open_windows(
    starts: bytes,
    rows: bytes,
    fired_upto: int,
    kind: str = "tumbling",
    extra: Sequence[tuple[str, bytes]] = (),
) -> OpenWindows:
    arrays = {str(name): np.frombuffer(data, np.int64) for name, data in extra}
    return OpenWindows(np.frombuffer(starts, np.int64), from_ipc(rows), fired_upto, kind, arrays)


@dataclass(frozen=True, eq=False)
class ColumnarStep:
    """The outcome of one streaming call on whole columns: the records of the windows that
    fired (``fired_rows``, starts ``fired_starts``, ends ``fired_ends``; a key's in firing
    order), the indexes of the late input rows, and the new state (``None``: nothing
    left)."""

    fired_starts: np.ndarray[Any, Any]
    fired_rows: pa.Table | None
    late: np.ndarray[Any, Any]
    state: OpenWindows | None
    fired_ends: np.ndarray[Any, Any]


def rows_needing_the_operator(
    plan: ColumnarPlan, watermark: int, rows: pa.Table, times: pa.ChunkedArray
) -> np.ndarray[Any, Any]:
    """Which input rows :func:`step_open_windows` cannot add on whole columns (a boolean
    mask): no event time, a null or (for a float ``min`` / ``max``) NaN or ``-0.0`` field,
    an event time near the ends of time, or a row that fires its window on arrival (its window
    has ended but is within the allowed lateness: ``EventTimeTrigger`` fires at once)."""
    return plan.rows_needing_the_operator(watermark, rows, times)


def value_rows_needing_the_operator(
    kind: AggregationType, field: str, rows: pa.Table, times: pa.ChunkedArray
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The rows the columns cannot add whatever the windows (a boolean mask: no event time, a
    null or (for a float ``min`` / ``max``) NaN or ``-0.0`` field; every row of a float
    ``sum``), and the event times (``0`` for nulls)."""
    if rows.num_rows == 0:
        return np.zeros(0, np.bool_), np.zeros(0, np.int64)
    mask, t = null_times(times)
    values = rows.column(field)
    if values.null_count:
        mask |= values.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_floating(values.type):
        if kind is AggregationType.SUM:
            mask[:] = True  # a float sum depends on the order of additions
            return mask, t
        mask |= unordered_floats(values.fill_null(1.0).to_numpy())
    return mask, t


def keys_needing_the_operator(
    plan: ColumnarPlan,
    state: OpenWindows | None,
    state_codes: np.ndarray[Any, Any],
    watermark: int,
    times: np.ndarray[Any, Any],
    row_codes: np.ndarray[Any, Any],
) -> np.ndarray[Any, Any]:
    """Which input rows belong to keys whose call the columns cannot take given the keys'
    state (a boolean mask; sessions only: an element that would merge sessions kept in the
    state, or fire a session on arrival). ``state_codes`` / ``row_codes``: the key codes of
    the state's items and of the rows (event times ``times``, without nulls)."""
    return plan.keys_needing_the_operator(state, state_codes, watermark, times, row_codes)


def step_open_windows(
    plan: ColumnarPlan,
    state: OpenWindows | None,
    watermark: int,
    rows: pa.Table | None,
    times: np.ndarray[Any, Any] | None,
    codes: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None = None,
) -> ColumnarStep | None:
    """One streaming call on whole columns, as the operator runs it for each key: advance to
    ``watermark`` (fire the windows it passes, clean up those past their lateness), then add
    ``rows`` (the input columns, each key's in replay order; event times ``times`` in ms
    without nulls); rows whose window is past its cleanup time are late. For several keys,
    ``codes`` holds the key code of each window of ``state`` and of each row (codes common
    to both); without it, all are one key's. ``None`` when the operator must run (see the
    module docstring; :func:`rows_needing_the_operator` tells which rows); nothing is
    changed then."""
    if state is not None:
        state.require_kind(plan.kind)
    return plan.step(state, watermark, rows, times, codes)


# ---------------------------------------------------------------------------- conversions
def key_state_of(plan: ColumnarPlan, op: WindowOperator, state: OpenWindows) -> KeyState:
    """The operator's state for ``state``: each window's reduced record (or accumulator),
    its trigger timer while it has not fired and its cleanup timer
    (:meth:`~windowing.operator.WindowOperator.import_reduced_windows`)."""
    state.require_kind(plan.kind)
    return plan.key_state_of(op, state, plan.records_of(state.rows))


def open_windows_of(
    plan: ColumnarPlan,
    op: WindowOperator,
    ks: KeyState,
    encode: Callable[[list[Any]], pa.Table | None],
) -> OpenWindows | None:
    """The columnar state for the operator's state ``ks``, or ``None`` when ``ks`` holds
    anything else than tumbling windows with a reduced record and their trigger and cleanup
    timers (:meth:`~windowing.operator.WindowOperator.export_reduced_windows`).
    ``encode(records)`` gives the records as a table of the input columns, or ``None`` when
    one is not an input record or a value does not fit its column."""
    return plan.open_windows_of(op, ks, encode)


def window_listing(
    plan: ColumnarPlan, state: OpenWindows
) -> Iterator[tuple[int, int, int, list[int]]]:
    """The windows of a columnar state as the operator would hold them: per window, the
    item whose key columns name its key, its start and end, and its pending event-time
    timers (end of window until it fires, then the cleanup time)."""
    state.require_kind(plan.kind)
    yield from plan.listing(state)


def describe(plan: ColumnarPlan) -> str:
    """A columnar plan, in words."""
    return plan.describe()
