"""A key's open windows in and out of its state, for a runtime that computes some windows
itself (the Spark runtime's columnar engine, which keeps a built-in aggregation's windows as
whole columns) and for one that lists them (``read_state``).

Only the engine knows how a key's windows live in its state: which timers the default trigger
keeps (``EventTimeTrigger``: the end-of-window timer until it fires, then the cleanup timer),
how the merging-window set maps a session to its state window, what a window's contents are.
So the conversions live here, and runtimes call
:meth:`~windowing.operator.WindowOperator.export_reduced_windows`,
:meth:`~windowing.operator.WindowOperator.import_reduced_windows` and
:meth:`~windowing.operator.WindowOperator.window_summaries`; none touches a ``KeyState`` field.

Examples
--------
>>> from windowing.engine.keystate import KeyState
>>> ks = KeyState()
>>> import_reduced(ks, ReducedWindows((TimeWindow(0, 10),), (5,), MIN_TIMESTAMP), lateness=0)
>>> export_reduced(ks, lateness=0, merging=False).records
(5,)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from windowing.engine.keystate import KafkaWindowStore, KeyState, Slices, register_timer
from windowing.plan import StateForm
from windowing.sliding import TIMELINE_EXPIRY
from windowing.state import ReducingStateDescriptor
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.triggers.count import COUNT_STATE
from windowing.windows import TimeWindow

__all__ = [
    "CountedWindows",
    "KafkaWindows",
    "ReducedPanes",
    "ReducedWindows",
    "WindowSummary",
    "export_counted",
    "export_kafka",
    "export_panes",
    "export_reduced",
    "import_counted",
    "import_kafka",
    "import_panes",
    "import_reduced",
    "summaries",
]


@dataclass(frozen=True)
class ReducedWindows:
    """A key's in-flight windows, each with one reduced value and the default trigger:
    ``windows`` (time windows; sessions for a merging assigner), their ``records`` (the
    reduced values), and the watermark up to which their end-of-window firings happened
    (``fired_upto``; ``MIN_TIMESTAMP``: none has fired). A window that fired is kept for its
    allowed lateness."""

    windows: tuple[TimeWindow, ...]
    records: tuple[Any, ...]
    fired_upto: int


@dataclass(frozen=True)
class ReducedPanes:
    """A key's hopping windows kept as panes (:mod:`windowing.engine.panes`): the pane
    ``starts`` (ascending), each pane's partial (``partials``), and the watermark up to which
    the key's windows have fired (``upto``)."""

    starts: tuple[int, ...]
    partials: tuple[Any, ...]
    upto: int


@dataclass(frozen=True)
class CountedWindows:
    """A key's windows under a count trigger (``CountTrigger``, also in a
    ``PurgingTrigger``): per window (``windows``) its contents, one reduced value
    (``records``), and the trigger's count of elements since its last firing (``counts``);
    each window has its cleanup timer and no other."""

    windows: tuple[TimeWindow, ...]
    records: tuple[Any, ...]
    counts: tuple[int, ...]


@dataclass(frozen=True)
class KafkaWindows:
    """A key's KIP-450 windows in Kafka's window store (:mod:`windowing.engine.kafka`) with
    the default trigger: per window its ``start`` (ascending; the window is
    ``[start; start + size]``), its aggregate (``values``) and its largest record timestamp
    (``max_ts``); the key's store-expiry timer (``expiry_at``), the store's
    ``irregular_upto``, and the watermark up to which the windows have fired
    (``fired_upto``). A window that fired is kept in the store; its contents only for its
    allowed lateness."""

    starts: tuple[int, ...]
    values: tuple[Any, ...]
    max_ts: tuple[int, ...]
    expiry_at: int | None
    irregular_upto: int
    fired_upto: int


@dataclass(frozen=True)
class WindowSummary:
    """One open window of a key as a runtime lists it.

    Attributes
    ----------
    window
        The window.
    state_form
        How the job's windows hold their contents: the elements, or one accumulator.
    num_rows_in
        The rows its contents took in since they were created (0 without contents: a
        trigger purged them, or none came yet); ``None`` when not counted (an operator that
        does not count rows, KIP-450 sliding windows, contents of an earlier version's
        state).
    num_stored_elements
        The elements it keeps (``ELEMENTS`` form: fewer than it took in once an evictor
        removed some); ``None`` for an accumulator.
    event_timers, processing_timers
        Its pending timers.
    """

    window: Any
    state_form: StateForm
    num_rows_in: int | None
    num_stored_elements: int | None
    event_timers: tuple[int, ...]
    processing_timers: tuple[int, ...]


def export_reduced(ks: KeyState, *, lateness: int, merging: bool) -> ReducedWindows | None:
    """The windows of ``ks`` (sorted by start) when it holds nothing but one reduced value per
    window with the default trigger's timers and their cleanup timers (for a merging
    assigner: each in-flight session its own state window, no two touching); ``None`` when it
    holds anything else (other timers, trigger or function state, panes, timelines)."""
    if not _windows_only(ks):
        return None
    if merging:
        mapping = ks.merging
        if not mapping or len(ks.contents) != len(mapping):
            return None
        windows = sorted(mapping)
        state_windows = [mapping[w] for w in windows]
        if len(set(state_windows)) != len(windows):
            return None
        if any(s not in ks.contents for s in state_windows):
            return None
        if any(a.end >= b.start for a, b in itertools.pairwise(windows)):
            return None
    else:
        if ks.merging:
            return None
        windows = sorted(ks.contents)
        state_windows = windows
    if any(type(w) is not TimeWindow for w in windows):
        return None
    fired_upto = _fired_upto(ks, windows, lateness)
    if fired_upto is None:
        return None
    return ReducedWindows(tuple(windows), tuple(ks.contents[s] for s in state_windows), fired_upto)


def import_reduced(ks: KeyState, reduced: ReducedWindows, *, lateness: int) -> None:
    """Put the windows of ``reduced`` into the new key state ``ks``, in their order: each
    one's reduced value (a merging assigner's sessions, ``ks.merging`` set, as their own state
    windows), its end-of-window timer while it has not fired, its cleanup timer."""
    mapping = ks.merging
    for window, record in zip(reduced.windows, reduced.records, strict=True):
        if mapping is not None:
            mapping[window] = window
        ks.contents[window] = record
        end = window.end - 1
        if end > reduced.fired_upto:
            register_timer(ks.evt_timers, ks.evt_heap, ks, end, window)
        register_timer(ks.evt_timers, ks.evt_heap, ks, end + lateness, window)


def export_panes(ks: KeyState) -> ReducedPanes | None:
    """The panes of ``ks`` when it holds nothing but pane partials and its slicing timer;
    ``None`` otherwise (no panes, other timers, trigger or function state). The partials are
    the key state's own objects: a runtime copies them (or stops using ``ks``)."""
    sl = ks.slices
    if sl is None or not sl.starts or sl.due is None:
        return None
    if ks.proc_timers or ks.evt_timers or ks.timeline is not None or ks.kafka is not None:
        return None
    if ks.merging or ks.panes or ks.num_state_entries() != len(ks.contents):
        return None
    if len(ks.contents) != len(sl.starts) or any(p not in ks.contents for p in sl.starts):
        return None
    return ReducedPanes(tuple(sl.starts), tuple(ks.contents[p] for p in sl.starts), sl.upto)


def import_panes(ks: KeyState, reduced: ReducedPanes) -> None:
    """Put the panes of ``reduced`` into the new key state ``ks`` (the key's timer is the
    pane strategy's to set: :meth:`~windowing.engine.panes.HoppingPanes.import_panes`)."""
    sl = Slices(reduced.upto)
    sl.starts = list(reduced.starts)
    for p, partial in zip(reduced.starts, reduced.partials, strict=True):
        ks.contents[p] = partial
    ks.slices = sl


def export_counted(ks: KeyState, *, lateness: int) -> CountedWindows | None:
    """The windows of ``ks`` when it holds nothing but one reduced value per window, a count
    trigger's counts and cleanup timers (a window a purging trigger emptied keeps only its
    cleanup timer, which changes nothing: it is left out); ``None`` otherwise. The values are
    the key state's own objects: a runtime copies them (or stops using ``ks``)."""
    if ks.merging is not None or not _windows_only(ks, trigger=True):
        return None
    trigger = ks.trigger_state
    if set(trigger.tables) - {COUNT_STATE.name}:
        return None
    if trigger.kinds.get(COUNT_STATE.name, ReducingStateDescriptor) is not ReducingStateDescriptor:
        return None
    counts = trigger.tables.get(COUNT_STATE.name, {})
    windows = sorted(ks.contents)
    if any(type(w) is not TimeWindow for w in windows) or any(w not in ks.contents for w in counts):
        return None
    if any(type(w) is not TimeWindow or t != w.end - 1 + lateness for t, w in ks.evt_timers):
        return None
    if any((w.end - 1 + lateness, w) not in ks.evt_timers for w in windows):
        return None
    return CountedWindows(
        tuple(windows),
        tuple(ks.contents[w] for w in windows),
        tuple(counts.get(w, 0) for w in windows),
    )


def import_counted(ks: KeyState, windows: CountedWindows, *, lateness: int) -> None:
    """Put the windows of ``windows`` into the new key state ``ks``: each one's reduced
    value (the object itself, which the operator then updates: a runtime passes fresh ones),
    its count (when not 0) and its cleanup timer."""
    for w, record, count in zip(windows.windows, windows.records, windows.counts, strict=True):
        ks.contents[w] = record
        if count:
            ks.trigger_state.state(COUNT_STATE, w).add(count)
        register_timer(ks.evt_timers, ks.evt_heap, ks, w.end - 1 + lateness, w)


def export_kafka(ks: KeyState, *, size: int, lateness: int) -> KafkaWindows | None:
    """The KIP-450 windows of ``ks`` when it holds nothing but Kafka's window store, each
    window's contents equal to its aggregate until its cleanup, the default trigger's timers,
    the cleanup timers and the store-expiry timer; ``None`` otherwise. The values are the
    key state's own objects: a runtime copies them (or stops using ``ks``)."""
    store = ks.kafka
    if store is None or not store.starts or ks.merging is not None:
        return None
    if not _windows_only(ks, kafka=True):
        return None
    timers = ks.evt_timers
    windows = [TimeWindow(s, s + size + 1) for s in store.starts]
    fired_upto = MIN_TIMESTAMP
    pending_from = MAX_TIMESTAMP
    expected = 0 if store.expiry_at is None else 1
    if store.expiry_at is not None and (store.expiry_at, TIMELINE_EXPIRY) not in timers:
        return None
    for s, w in zip(store.starts, windows, strict=True):
        end = s + size
        has_contents = w in ks.contents
        if has_contents and ks.contents[w] != store.values[s]:
            return None  # contents that restarted apart from Kafka's aggregate
        if (end, w) in timers:  # not fired: the trigger's timer, contents, cleanup timer
            pending_from = min(pending_from, end)
            if not has_contents or (lateness and (end + lateness, w) not in timers):
                return None
            expected += 2 if lateness else 1
        else:  # fired; without contents, cleaned up too
            fired_upto = max(fired_upto, end if has_contents else end + lateness)
            if has_contents != ((end + lateness, w) in timers) or (has_contents and not lateness):
                return None
            expected += has_contents
    if len(timers) != expected or fired_upto >= pending_from:
        return None
    if len(ks.contents) != sum(w in ks.contents for w in windows):
        return None  # contents of a window the store no longer holds
    return KafkaWindows(
        tuple(store.starts),
        tuple(store.values[s] for s in store.starts),
        tuple(store.max_ts[s] for s in store.starts),
        store.expiry_at,
        store.irregular_upto,
        fired_upto,
    )


def import_kafka(ks: KeyState, windows: KafkaWindows, *, size: int, lateness: int) -> None:
    """Put the KIP-450 windows of ``windows`` into the new key state ``ks``: Kafka's store,
    each window's contents (the store's aggregate) and its cleanup timer until its cleanup,
    its end-of-window timer until it fires, the store-expiry timer."""
    store = KafkaWindowStore()
    store.starts = list(windows.starts)
    store.expiry_at = windows.expiry_at
    store.irregular_upto = windows.irregular_upto
    upto = windows.fired_upto
    for s, value, max_ts in zip(windows.starts, windows.values, windows.max_ts, strict=True):
        store.values[s] = value
        store.max_ts[s] = max_ts
        w = TimeWindow(s, s + size + 1)
        end = s + size
        if end > upto:
            register_timer(ks.evt_timers, ks.evt_heap, ks, end, w)
        if end + lateness > upto:
            ks.contents[w] = value
            register_timer(ks.evt_timers, ks.evt_heap, ks, end + lateness, w)
    if windows.expiry_at is not None:
        register_timer(ks.evt_timers, ks.evt_heap, ks, windows.expiry_at, TIMELINE_EXPIRY)
    ks.kafka = store


def summaries(
    ks: KeyState,
    windows: Sequence[Any],
    form: StateForm,
    rows_in: Callable[[KeyState, Any, Any], int | None],
    event_timers: Callable[[KeyState, Any], tuple[int, ...] | None] = lambda ks, w: None,
) -> list[WindowSummary]:
    """A summary of each of ``windows`` (a key's open windows) of ``ks``, whose job keeps
    its windows' contents in ``form``; ``rows_in(ks, window, namespace)``: the rows a window
    took in (the strategy's); ``event_timers(ks, window)``: a window's event-time timers
    where the key state keeps others (``None``: those of ``ks``)."""
    out = []
    elements = form is StateForm.ELEMENTS
    for window in windows:
        timers = event_timers(ks, window)
        if timers is None:
            timers = tuple(sorted(t for t, w in ks.evt_timers if w == window))
        namespace = ks.merging.get(window, window) if ks.merging is not None else window
        stored = None
        if elements:
            contents = ks.contents.get(namespace)
            stored = len(contents) if isinstance(contents, list) else 0
        out.append(
            WindowSummary(
                window,
                form,
                rows_in(ks, window, namespace),
                stored,
                timers,
                tuple(sorted(t for t, w in ks.proc_timers if w == window)),
            )
        )
    return out


def _windows_only(ks: KeyState, *, kafka: bool = False, trigger: bool = False) -> bool:
    """Whether ``ks`` holds nothing but window contents and event-time timers (no
    processing-time timers, KIP-450 (unless ``kafka``: Kafka's store) or pane state, trigger
    (unless ``trigger``) or function state)."""
    return not (
        ks.proc_timers
        or ks.timeline is not None
        or (ks.kafka is not None and not kafka)
        or ks.slices is not None
        or ks.panes
        or ks.num_state_entries()
        != len(ks.contents)
        + (0 if ks.kafka is None or not kafka else len(ks.kafka))
        + (ks.trigger_state.num_entries() if trigger else 0)
    )


def _fired_upto(ks: KeyState, windows: Sequence[TimeWindow], lateness: int) -> int | None:
    """The watermark up to which the ``windows`` of ``ks`` have fired (``MIN_TIMESTAMP``:
    none has), when its event-time timers are exactly ``EventTimeTrigger``'s and the cleanup
    timers of these windows: each window's cleanup timer, and its end-of-window timer until
    it fires; ``None`` otherwise (or when a window that fired ends after one that has not)."""
    timers = ks.evt_timers
    fired_upto = MIN_TIMESTAMP
    pending_from = MAX_TIMESTAMP
    expected = 0
    for w in windows:
        end = w.end - 1
        if (end + lateness, w) not in timers:
            return None
        expected += 1
        if lateness and (end, w) in timers:
            expected += 1
            pending_from = min(pending_from, end)
        elif not lateness:
            pending_from = min(pending_from, end)  # one timer: trigger and cleanup
        else:
            fired_upto = max(fired_upto, end)
    if len(timers) != expected or fired_upto >= pending_from:
        return None
    return fired_upto
