"""Everything the operator keeps for one key (:class:`KeyState`), its timers, and where key
states live between calls (:class:`StateBackend`)."""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable
from typing import Any, Protocol

from windowing.sliding import Timeline
from windowing.state import StateTable
from windowing.time import MIN_TIMESTAMP

__all__ = [
    "InMemoryStateBackend",
    "KafkaWindowStore",
    "KeyState",
    "Slices",
    "StateBackend",
    "count_row",
    "merge_row_counts",
    "register_timer",
]

_MISSING: Any = object()


class KeyState:
    """Everything the operator keeps for one key.

    ``contents`` maps a state namespace (the window, or for merging windows the window's state
    window) to the window contents: a reduced value, an accumulator, or a list of elements.
    Timers are a set of ``(time, window)`` plus a heap for time order (lazy deletion).
    ``row_counts`` (an operator that counts rows, :func:`count_row`) maps a namespace to the
    rows its contents took in since they were created; a namespace with contents but no
    count took rows in before they were counted (a state of an earlier version).
    """

    __slots__ = (
        "_global_state",
        "_trigger_state",
        "_window_state",
        "contents",
        "evt_heap",
        "evt_timers",
        "kafka",
        "merging",
        "panes",
        "proc_heap",
        "proc_timers",
        "recent",
        "row_counts",
        "seq",
        "slices",
        "timeline",
    )

    def __init__(self, merging: bool = False) -> None:
        self.contents: dict[Any, Any] = {}
        # Partitioned state tables, created on first use (most keys never need them).
        self._trigger_state: StateTable | None = None
        self._window_state: StateTable | None = None
        self._global_state: StateTable | None = None
        self.evt_timers: set[tuple[int, Any]] = set()
        self.evt_heap: list[tuple[int, int, Any]] = []
        self.proc_timers: set[tuple[int, Any]] = set()
        self.proc_heap: list[tuple[int, int, Any]] = []
        self.seq = 0
        self.merging: dict[Any, Any] | None = {} if merging else None
        # Aligned windows of the key's latest element: (last start, first start, smallest
        # max_timestamp, windows); lets the next element in the same windows skip the timer
        # bookkeeping.
        self.recent: tuple[int, int, int, tuple[Any, ...]] | None = None
        # Records of the key by timestamp, for KIP-450 sliding windows (shared layout).
        self.timeline: Timeline | None = None
        # The key's KIP-450 windows as Kafka's window store holds them (per-window layout).
        self.kafka: KafkaWindowStore | None = None
        # Pane bookkeeping of sliced hopping windows (the panes are in ``contents``).
        self.slices: Slices | None = None
        # Firings counted per window, with pane info (windowing.engine.pane_info): window ->
        # (next pane index, a non-early pane was emitted, kept without a cleanup time).
        self.panes: dict[Any, tuple[int, bool, bool]] | None = None
        # Rows each namespace's contents took in (count_row), when the operator counts them.
        self.row_counts: dict[Any, int] | None = None

    def __setstate__(self, state: Any) -> None:
        """A key state pickled by an earlier version (checkpoint layouts 2 and 3): the slots
        added since take their defaults."""
        _restore(self, KeyState(), state)

    def _table(self, slot: str) -> StateTable:
        table: StateTable | None = getattr(self, slot)
        if table is None:
            table = StateTable()
            setattr(self, slot, table)
        return table

    @property
    def trigger_state(self) -> StateTable:
        """Trigger state, by window."""
        return self._table("_trigger_state")

    @property
    def window_state(self) -> StateTable:
        """Per-window state of the process function, by window."""
        return self._table("_window_state")

    @property
    def global_state(self) -> StateTable:
        """Per-key state of the process function (namespace ``None``)."""
        return self._table("_global_state")

    @property
    def state_tables(self) -> tuple[StateTable | None, StateTable | None, StateTable | None]:
        """The trigger, per-window and per-key state tables (``None``: never used)."""
        return (self._trigger_state, self._window_state, self._global_state)

    def set_state_tables(
        self,
        trigger: StateTable | None,
        window: StateTable | None,
        global_: StateTable | None,
    ) -> None:
        """Replace the state tables (a decoded state)."""
        self._trigger_state, self._window_state, self._global_state = trigger, window, global_

    def is_empty(self) -> bool:
        """Whether nothing at all is kept for this key (it can be dropped)."""
        if self.contents or self.evt_timers or self.proc_timers or self.merging:
            return False
        if self.timeline is not None and not self.timeline.is_empty():
            return False
        if self.kafka is not None and len(self.kafka):
            return False
        for table in (self._trigger_state, self._window_state, self._global_state):
            if table is not None and not table.is_empty():
                return False
        # a window without a cleanup time can fire again: its pane count stays
        return not (self.panes and any(entry[2] for entry in self.panes.values()))

    def num_state_entries(self, window: Any = _MISSING) -> int:
        """Live state entries: window contents, trigger state and per-window function state
        (all windows, or one window's), plus global function state when counting all."""
        if window is _MISSING:
            return (
                (0 if self.timeline is None else len(self.timeline))
                + (0 if self.kafka is None else len(self.kafka))
                + len(self.contents)
                + self.trigger_state.num_entries()
                + self.window_state.num_entries()
                + self.global_state.num_entries()
            )
        ns = self.merging.get(window, window) if self.merging else window
        return (
            (1 if ns in self.contents else 0)
            + self.trigger_state.num_entries(window)
            + self.window_state.num_entries(window)
        )

    def next_event_time(self) -> int | None:
        """The earliest pending event-time timer, if any."""
        if self.slices is not None:
            return self.slices.due  # sliced windows: the key's one timer
        if self.timeline is not None and self.timeline.due is not None:
            return self.timeline.due  # derived sliding-distinct windows: the key's one timer
        return _next_time(self.evt_heap, self.evt_timers)

    def next_processing_time(self) -> int | None:
        """The earliest pending processing-time timer, if any."""
        return _next_time(self.proc_heap, self.proc_timers)


def count_row(ks: KeyState, namespace: Any, fresh: bool) -> None:
    """Count one row added to the contents of ``namespace`` of ``ks``: the first of new
    contents (``fresh``: the namespace had none), or one more of counted ones (contents
    without a count stay uncounted)."""
    counts = ks.row_counts
    if counts is None:
        counts = ks.row_counts = {}
    if fresh:
        counts[namespace] = 1
    elif namespace in counts:
        counts[namespace] += 1


def merge_row_counts(ks: KeyState, target: Any, sources: Iterable[Any]) -> None:
    """The row counts of the contents of ``sources`` and ``target`` of ``ks``, about to be
    merged into ``target``'s (call it first): their sum, or no count when one of them had
    contents without a count."""
    counts = ks.row_counts
    if counts is None:
        return
    contents = ks.contents
    parts = [(target, counts.pop(target, None))]
    parts += [(ns, counts.pop(ns, None)) for ns in sources]
    known = [n for ns, n in parts if ns in contents]
    if known and None not in known:
        counts[target] = sum(n for n in known if n is not None)


def _next_time(heap: list[tuple[int, int, Any]], live: set[tuple[int, Any]]) -> int | None:
    while heap:
        time, _, window = heap[0]
        if (time, window) in live:
            return time
        heapq.heappop(heap)
    return None


class StateBackend(Protocol):
    """Where :class:`KeyState` values live between calls (a dict, or Spark's state store)."""

    def get(self, key: Any) -> KeyState | None: ...

    def put(self, key: Any, state: KeyState) -> None: ...

    def remove(self, key: Any) -> None: ...

    def items(self) -> Iterable[tuple[Any, KeyState]]: ...


class InMemoryStateBackend:
    """A dict of key -> :class:`KeyState`."""

    def __init__(self) -> None:
        self.states: dict[Any, KeyState] = {}

    def get(self, key: Any) -> KeyState | None:
        return self.states.get(key)

    def put(self, key: Any, state: KeyState) -> None:
        self.states[key] = state

    def remove(self, key: Any) -> None:
        self.states.pop(key, None)

    def items(self) -> Iterable[tuple[Any, KeyState]]:
        return list(self.states.items())


def register_timer(
    timers: set[tuple[int, Any]], heap: list[tuple[int, int, Any]], ks: KeyState, time: int, w: Any
) -> None:
    """Register a timer at ``time`` for window ``w`` (deduplicated per time and window)."""
    entry = (time, w)
    if entry in timers:
        return
    timers.add(entry)
    ks.seq = seq = ks.seq + 1
    heapq.heappush(heap, (time, seq, w))


# ------------------------------------------------------------ the strategies' per-key data
class Slices:
    """Per-key slicing state; the pane partials themselves live in ``KeyState.contents``
    (pane start -> partial)."""

    __slots__ = ("due", "starts", "upto")

    def __init__(self, upto: int) -> None:
        self.starts: list[int] = []  # pane starts with contents, ascending
        # Windows with max_timestamp <= upto have been fired (or were late and fired on
        # arrival of their elements); the next firing starts after it.
        self.upto = upto
        self.due: int | None = None  # time of the key's live slicing timer


class KafkaWindowStore:
    """One key's windows as Kafka's window store holds them: by start, the aggregate and the
    largest record timestamp (Kafka's ``ValueAndTimestamp``).

    ``irregular_upto``: windows starting at or before it may hold what only Kafka's edge cases
    give (a record some of whose windows were closed, records near 0); the windows above it
    hold exactly the records of their range, as KIP-450 defines them
    (:meth:`~windowing.engine.kafka.KafkaSliding.add` keeps it)."""

    __slots__ = ("expiry_at", "irregular_upto", "max_ts", "starts", "values")

    def __init__(self) -> None:
        self.starts: list[int] = []  # ascending
        self.values: dict[int, Any] = {}
        self.max_ts: dict[int, int] = {}
        self.expiry_at: int | None = None  # the key's store-expiry timer, when registered
        self.irregular_upto = MIN_TIMESTAMP

    def __setstate__(self, state: Any) -> None:
        """A store pickled by an earlier version: the slots added since take their defaults;
        without ``irregular_upto`` any of its windows may differ from the definition (as a
        store of an earlier encoding reads)."""
        _restore(self, KafkaWindowStore(), state)
        if "irregular_upto" not in _slot_values(state):
            self.irregular_upto = max(self.max_ts.values(), default=MIN_TIMESTAMP - 1) + 1

    def __len__(self) -> int:
        return len(self.starts)

    def put(self, start: int, value: Any, max_ts: int) -> None:
        if start not in self.values:
            insort(self.starts, start)
        self.values[start] = value
        self.max_ts[start] = max_ts

    def fetch(self, lo: int, hi: int) -> list[int]:
        """Starts in ``[lo, hi]``, ascending."""
        starts = self.starts
        return starts[bisect_left(starts, lo) : bisect_right(starts, hi)]

    def expire(self, upto: int) -> None:
        """Forget the windows starting at or before ``upto``."""
        starts = self.starts
        n = bisect_right(starts, upto)
        for s in starts[:n]:
            del self.values[s]
            del self.max_ts[s]
        del starts[:n]


def _slot_values(state: Any) -> dict[str, Any]:
    """The slot values of a pickled object's ``state`` (``(dict, slots)`` as pickle writes a
    slotted object's state, or a plain ``dict``)."""
    if isinstance(state, tuple):
        return {**(state[0] or {}), **(state[1] or {})}
    return dict(state or {})


def _restore(obj: object, fresh: object, state: Any) -> None:
    """Unpickle ``obj``: the slots of ``fresh`` (a new one: the defaults), then the stored
    ones."""
    for slot in type(obj).__slots__:  # type: ignore[attr-defined]
        setattr(obj, slot, getattr(fresh, slot))
    for slot, value in _slot_values(state).items():
        setattr(obj, slot, value)
