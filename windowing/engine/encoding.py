"""The versioned encoding of operator state: snapshots and streaming checkpoints.

A key's state is written as *plain data* (``None``, ``bool``, ``int``, ``str``, ``bytes``,
tuples and lists of them) plus one blob holding the user's objects: window contents (reduced
values, accumulators, buffered elements), partitioned state values, keys and windows of
custom assigners. The plain part names no class and is read by an unpickler that refuses any
global, so renaming or moving an internal class never breaks a checkpoint, and the plain part
can never run code. The user objects are cloudpickled, as Spark ships user code; they are the
one part whose loading can run code (authenticate them: ``docs/design.md``).

Layout (format 2): ``MAGIC`` (4 bytes), the format version (1 byte), the length of the tag
(1 byte: 0 or 32), the tag, then a pickle of ``(plain, users)`` where ``users`` is the pickled
list of user objects. The tag is an HMAC-SHA256 of the header and payload with the job's
state key (:func:`state_key`: the environment variable ``WINDOWING_STATE_KEY``, the same
secret on the driver and the executors). With a key, state without a valid tag is refused
before anything is unpickled; without one, state loads with an
:class:`UnauthenticatedStateWarning` (once per process). Format 1 (no tag) still loads. A
later version of this module must read every earlier format, or fail with a clear error
naming both versions.

Examples
--------
>>> from windowing.engine.keystate import KeyState
>>> from windowing.windows import TimeWindow
>>> ks = KeyState()
>>> ks.contents[TimeWindow(0, 10)] = 3
>>> decode_key_state(encode_key_state(ks)).contents
{TimeWindow(start=0, end=10): 3}
"""

from __future__ import annotations

import hashlib
import hmac
import io
import os
import pickle
import warnings
from collections.abc import Iterable
from typing import Any

import cloudpickle

from windowing.engine.kafka import KafkaWindowStore
from windowing.engine.keystate import KeyState
from windowing.engine.panes import Slices
from windowing.sliding import _EMPTY, _MISSING, RangeCursor, Timeline, TimelineExpiry
from windowing.state import _DESCRIPTOR_TYPES, StateTable
from windowing.windows import GLOBAL_WINDOW, GlobalWindow, TimeWindow

__all__ = [
    "FORMAT",
    "MAGIC",
    "STATE_KEY_ENV",
    "StateAuthenticationError",
    "StateFormatError",
    "StateReader",
    "StateWriter",
    "UnauthenticatedStateWarning",
    "decode_key_state",
    "decode_snapshot",
    "encode_key_state",
    "encode_snapshot",
    "open_state",
    "require_unauthenticated_allowed",
    "state_key",
]

#: The first bytes of every encoded state.
MAGIC = b"PWST"
#: The format this version writes (and the newest it reads).
FORMAT = 2
#: The environment variable holding the key that authenticates state.
STATE_KEY_ENV = "WINDOWING_STATE_KEY"
_TAG = 32  # HMAC-SHA256

_SENTINELS = {"_MISSING": _MISSING, "_EMPTY": _EMPTY}
_SENTINEL_NAMES = {id(v): k for k, v in _SENTINELS.items()}
_DESCRIPTORS = {cls.__name__: cls for cls in _DESCRIPTOR_TYPES}
_TIMELINE_EXPIRY = TimelineExpiry()


class StateFormatError(ValueError):
    """Encoded state this version cannot read (another format, or not state at all)."""


class StateAuthenticationError(ValueError):
    """State that a configured state key does not authenticate: tampered with, written with
    another key, or written without one. Nothing of it was unpickled."""


class UnauthenticatedStateWarning(UserWarning):
    """State loaded without a state key: its user objects were unpickled unauthenticated."""


_warned = False


def state_key() -> bytes | None:
    """The key that signs and authenticates state (``WINDOWING_STATE_KEY``), if set."""
    key = os.environ.get(STATE_KEY_ENV)
    return key.encode() if key else None


def require_unauthenticated_allowed(what: str) -> None:
    """Allow loading state that carries no tag (written by an earlier version, or without a
    key): refused when a key is configured, a warning (once per process) otherwise."""
    if state_key() is not None:
        msg = (
            f"{what} is not authenticated, and {STATE_KEY_ENV} is set: refusing to unpickle "
            "it (it was tampered with, written with another key, or written without one; "
            "load state written without a key only without the key set)"
        )
        raise StateAuthenticationError(msg)
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            f"loading {what} without authentication: its user objects are unpickled, so "
            "whoever can write the checkpoint or snapshot can run code here; set "
            f"{STATE_KEY_ENV} (the same secret on the driver and executors) to sign and "
            "authenticate state",
            UnauthenticatedStateWarning,
            stacklevel=3,
        )


# ---------------------------------------------------------------------------- writing
class StateWriter:
    """Writes one encoded value: plain data built with :meth:`value`, :meth:`window` and
    :meth:`key_state`, then :meth:`finish`; the user objects are collected and referred to
    by index."""

    __slots__ = ("users",)

    def __init__(self) -> None:
        self.users: list[Any] = []

    def value(self, value: Any) -> Any:
        """A user value: its index in the blob, or a sentinel's name."""
        name = _SENTINEL_NAMES.get(id(value))
        if name is not None:
            return ("s", name)
        self.users.append(value)
        return len(self.users) - 1

    def window(self, window: Any) -> Any:
        """A window or state namespace, as plain data when it is one of ours."""
        if window is None or type(window) is int:
            return window
        if type(window) is TimeWindow:
            return ("t", window.start, window.end)
        if type(window) is GlobalWindow:
            return ("g",)
        if type(window) is TimelineExpiry:
            return ("x",)
        return ("u", self.value(window))

    def table(self, table: StateTable | None) -> Any:
        if table is None or table.is_empty():
            return None
        return (
            [(name, kind.__name__) for name, kind in table.kinds.items()],
            [
                (name, [(self.window(ns), self.value(v)) for ns, v in entries.items()])
                for name, entries in table.tables.items()
            ],
        )

    def timers(self, live: set[tuple[int, Any]], heap: list[tuple[int, int, Any]]) -> Any:
        # A live timer fires in the order of its first (smallest) heap entry.
        order: dict[tuple[int, Any], int] = {}
        for time, seq, window in heap:
            entry = (time, window)
            if entry in live and seq < order.get(entry, seq + 1):
                order[entry] = seq
        ordered = sorted((t, order[(t, w)], w) for t, w in live)
        return [(t, seq, self.window(w)) for t, seq, w in ordered]

    def key_state(self, ks: KeyState) -> Any:
        timeline = ks.timeline
        kafka = ks.kafka
        slices = ks.slices
        plain: tuple[Any, ...] = (
            [(self.window(ns), self.value(v)) for ns, v in ks.contents.items()],
            *(self.table(t) for t in ks.state_tables),
            self.timers(ks.evt_timers, ks.evt_heap),
            self.timers(ks.proc_timers, ks.proc_heap),
            ks.seq,
            None
            if ks.merging is None
            else [(self.window(w), self.window(s)) for w, s in ks.merging.items()],
            None if timeline is None else self.timeline(timeline),
            None
            if kafka is None
            else (
                list(kafka.starts),
                [(s, self.value(v)) for s, v in kafka.values.items()],
                list(kafka.max_ts.items()),
                kafka.expiry_at,
            ),
            None if slices is None else (list(slices.starts), slices.upto, slices.due),
        )
        panes = ks.panes
        if panes:  # pane info (written only when counted: older states read the same)
            plain += ([(self.window(w), *entry) for w, entry in panes.items()],)
        return plain

    def timeline(self, t: Timeline) -> Any:
        c = t.cursor
        cursor = (
            None
            if c is None
            else (
                c.front,
                c.split,
                c.hi,
                [self.value(v) for v in c.suffix],
                self.value(c.back_agg),
                c.back_owned,
            )
        )
        return (
            list(t.stamps),
            [self.value(p) for p in t.partials],
            t.empties,
            sorted(t.live),
            cursor,
            t.offset,
            t.expiry_at,
            t.upto,
            t.due,
        )

    def finish(self, plain: Any) -> bytes:
        payload = pickle.dumps((plain, _dumps_users(self.users)), protocol=5)
        header = MAGIC + bytes((FORMAT,))
        key = state_key()
        if key is None:
            return header + b"\x00" + payload
        tag = hmac.new(key, header + payload, hashlib.sha256).digest()
        return header + bytes((_TAG,)) + tag + payload


def _dumps_users(users: list[Any]) -> bytes:
    try:
        return pickle.dumps(users, protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError):
        # Objects only cloudpickle can write (classes defined in a driver's __main__).
        return bytes(cloudpickle.dumps(users, protocol=5))


def encode_key_state(ks: KeyState) -> bytes:
    """One key's state, encoded."""
    writer = StateWriter()
    return writer.finish(writer.key_state(ks))


def encode_snapshot(
    watermark: int, processing_time: int, states: Iterable[tuple[Any, KeyState]]
) -> bytes:
    """An operator's clocks and every key's state, encoded."""
    writer = StateWriter()
    plain = (
        "snapshot",
        watermark,
        processing_time,
        [(writer.value(key), writer.key_state(ks)) for key, ks in states],
    )
    return writer.finish(plain)


# ---------------------------------------------------------------------------- reading
class _PlainUnpickler(pickle.Unpickler):
    """Reads plain data only: any class or function reference is an error, never a call."""

    def find_class(self, module: str, name: str) -> Any:
        msg = f"encoded state names {module}.{name}; the plain part of state holds no objects"
        raise StateFormatError(msg)


class StateReader:
    """Reads the plain data of :func:`open_state` back: the user objects by index, windows,
    key states."""

    __slots__ = ("users",)

    def __init__(self, users: list[Any]) -> None:
        self.users = users

    def value(self, ref: Any) -> Any:
        if type(ref) is int:
            return self.users[ref]
        return _SENTINELS[ref[1]]

    def window(self, ref: Any) -> Any:
        if ref is None or type(ref) is int:
            return ref
        kind = ref[0]
        if kind == "t":
            return TimeWindow(ref[1], ref[2])
        if kind == "g":
            return GLOBAL_WINDOW
        if kind == "x":
            return _TIMELINE_EXPIRY
        return self.value(ref[1])

    def table(self, plain: Any) -> StateTable | None:
        if plain is None:
            return None
        kinds, tables = plain
        table = StateTable()
        table.kinds = {name: _DESCRIPTORS[kind] for name, kind in kinds}
        table.tables = {
            name: {self.window(ns): self.value(v) for ns, v in entries} for name, entries in tables
        }
        return table

    def timers(
        self, plain: Any, live: set[tuple[int, Any]], heap: list[tuple[int, int, Any]]
    ) -> None:
        for time, seq, ref in plain:
            window = self.window(ref)
            live.add((time, window))
            heap.append((time, seq, window))
        heap.sort(key=lambda entry: (entry[0], entry[1]))

    def key_state(self, plain: Any) -> KeyState:
        (contents, trigger, window, global_, evt, proc, seq, merging, timeline, kafka, slices) = (
            plain[:11]
        )
        ks = KeyState(merging is not None)
        ks.contents = {self.window(ns): self.value(v) for ns, v in contents}
        ks.set_state_tables(self.table(trigger), self.table(window), self.table(global_))
        self.timers(evt, ks.evt_timers, ks.evt_heap)
        self.timers(proc, ks.proc_timers, ks.proc_heap)
        ks.seq = seq
        if merging is not None:
            ks.merging = {self.window(w): self.window(s) for w, s in merging}
        if timeline is not None:
            ks.timeline = self.timeline(timeline)
        if kafka is not None:
            starts, values, max_ts, expiry_at = kafka
            store = KafkaWindowStore()
            store.starts = list(starts)
            store.values = {s: self.value(v) for s, v in values}
            store.max_ts = dict(max_ts)
            store.expiry_at = expiry_at
            ks.kafka = store
        if slices is not None:
            starts, upto, due = slices
            sl = Slices(upto)
            sl.starts = list(starts)
            sl.due = due
            ks.slices = sl
        if len(plain) > 11:
            ks.panes = {self.window(w): (i, settled, keep) for w, i, settled, keep in plain[11]}
        return ks

    def timeline(self, plain: Any) -> Timeline:
        stamps, partials, empties, live, cursor, offset, expiry_at, upto, due = plain
        t = Timeline(upto)
        t.stamps = list(stamps)
        t.partials = [self.value(p) for p in partials]
        t.empties = empties
        t.live = set(live)
        t.offset = offset
        t.expiry_at = expiry_at
        t.due = due
        if cursor is not None:
            c = RangeCursor()
            c.front, c.split, c.hi, suffix, back, c.back_owned = cursor
            c.suffix = [self.value(v) for v in suffix]
            c.back_agg = self.value(back)
            t.cursor = c
        return t


def open_state(data: bytes) -> tuple[Any, StateReader]:
    """The plain part of an encoded value (read without running code) and a reader of its
    user objects (unpickled here)."""
    if not isinstance(data, bytes | bytearray | memoryview) or bytes(data[:4]) != MAGIC:
        msg = "not encoded operator state (no format header)"
        raise StateFormatError(msg)
    data = bytes(data)
    version = data[4]
    if version == 1:  # no tag
        payload = data[5:]
        require_unauthenticated_allowed("operator state of format 1")
    elif version == FORMAT:
        size = data[5]
        tag, payload = data[6 : 6 + size], data[6 + size :]
        key = state_key()
        if size == 0:
            require_unauthenticated_allowed("operator state written without a state key")
        elif key is not None:
            expected = hmac.new(key, data[:5] + payload, hashlib.sha256).digest()
            if not hmac.compare_digest(tag, expected):
                msg = (
                    f"operator state does not match {STATE_KEY_ENV}: it was tampered with or "
                    "written with another key; nothing of it was loaded"
                )
                raise StateAuthenticationError(msg)
        else:
            require_unauthenticated_allowed("signed operator state (no key to check it)")
    else:
        msg = (
            f"operator state in format {version}, but this version of windowing reads formats "
            f"1 to {FORMAT}; use the version that wrote it"
        )
        raise StateFormatError(msg)
    plain, users = _PlainUnpickler(io.BytesIO(payload)).load()
    return plain, StateReader(pickle.loads(users))


def decode_key_state(data: bytes) -> KeyState:
    """One key's state from :func:`encode_key_state`."""
    plain, reader = open_state(data)
    return reader.key_state(plain)


def decode_snapshot(data: bytes) -> tuple[int, int, list[tuple[Any, KeyState]]]:
    """``(watermark, processing_time, [(key, state)])`` from :func:`encode_snapshot`."""
    plain, reader = open_state(data)
    if not (isinstance(plain, tuple) and plain and plain[0] == "snapshot"):
        msg = "encoded state is not an operator snapshot"
        raise StateFormatError(msg)
    _, watermark, processing_time, states = plain
    return watermark, processing_time, [(reader.value(k), reader.key_state(s)) for k, s in states]
