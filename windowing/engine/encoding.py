"""The versioned encoding of operator state: snapshots and streaming checkpoints.

A key's state is written as *plain data*: ``None``, ``bool``, ``int``, ``float``, ``str``,
``bytes``, tuples, lists, dicts and sets of them, and the values of a short list of types whose
loading runs no code of the checkpoint's choosing (``datetime`` values, ``Decimal``, windows,
Spark's ``Row``; :func:`register_plain_type`). Built-in state (window contents of built-in
functions, trigger state, timers, clocks, window bounds, keys of Spark's types) is always
plain data, and unsigned state is read by an unpickler that refuses any other class or
function: loading it can never run code. Objects of other classes (a user's accumulator, a
process function's state object) are *user objects*: cloudpickled as Spark ships user code,
and loaded only from signed state (a state key, below) or under the explicit opt-in
:data:`TRUST_ENV`, which trusts whoever can write the checkpoint; without either, writing
them fails at once with :class:`UntrustedStateError`, naming their classes.

Layout (format 3): ``MAGIC`` (4 bytes), the format version (1 byte), flags (1 byte: 1 =
signed, 2 = holds user objects), a 32-byte tag, then the pickled plain data. The tag covers
the header, the payload and *where the value belongs* (:class:`StateScope`: the streaming
query's id, the key group, the kind of value): an HMAC-SHA256 with the state key
(:func:`state_key`: the environment variable ``WINDOWING_STATE_KEY``, the same secret on the
driver and the executors), else a BLAKE2b checksum. A value moved to another key group or
query, or changed by a single bit, is refused before anything of it is unpickled: with a key
as :class:`StateAuthenticationError`, without one as :class:`StateCorruptError`, each naming
the value's place. With a key, unsigned state is refused; signed state without the key too.
Formats 1 and 2 (earlier versions: plain part and a pickled list of user objects) still load:
their plain part through the same refusing unpickler, their user objects only when the key
authenticates them (format 2) or through the refusing unpickler (plain values), else under
:data:`TRUST_ENV`. A later version of this module must read every earlier format, or fail
with a clear error naming both versions.

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

import datetime
import decimal
import hashlib
import hmac
import importlib
import io
import os
import pickle
import types
import zoneinfo
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import cloudpickle

from windowing.engine.kafka import KafkaWindowStore
from windowing.engine.keystate import KeyState
from windowing.engine.panes import Slices
from windowing.sliding import _EMPTY, _MISSING, RangeCursor, Timeline, TimelineExpiry
from windowing.state import _DESCRIPTOR_TYPES, StateTable
from windowing.time import MIN_TIMESTAMP
from windowing.windows import GLOBAL_WINDOW, GlobalWindow, TimestampedValue, TimeWindow

__all__ = [
    "FORMAT",
    "MAGIC",
    "NO_SCOPE",
    "STATE_KEY_ENV",
    "TRUST_ENV",
    "StateAuthenticationError",
    "StateCorruptError",
    "StateFormatError",
    "StateReader",
    "StateScope",
    "StateWriter",
    "UntrustedStateError",
    "decode_key_state",
    "decode_snapshot",
    "encode_key_state",
    "encode_snapshot",
    "legacy_loads",
    "legacy_pickle_allowed",
    "open_state",
    "register_plain_type",
    "state_key",
    "state_trusted",
]

#: The first bytes of every encoded state.
MAGIC = b"PWST"
#: The format this version writes (and the newest it reads).
FORMAT = 3
#: The environment variable holding the key that signs and authenticates state.
STATE_KEY_ENV = "WINDOWING_STATE_KEY"
#: The environment variable that, set to ``1``, lets unsigned state hold user objects (which
#: are then unpickled on loading: whoever can write the checkpoint can run code in the job).
TRUST_ENV = "WINDOWING_TRUST_UNSIGNED_STATE"
_TAG = 32  # HMAC-SHA256 / BLAKE2b-256
_SIGNED, _USER_OBJECTS = 1, 2  # format 3 flags

_SENTINELS = {"_MISSING": _MISSING, "_EMPTY": _EMPTY}
_SENTINEL_NAMES = {id(v): k for k, v in _SENTINELS.items()}
_DESCRIPTORS = {cls.__name__: cls for cls in _DESCRIPTOR_TYPES}
_TIMELINE_EXPIRY = TimelineExpiry()


class StateFormatError(ValueError):
    """Encoded state this version cannot read (another format, or not state at all)."""


class StateAuthenticationError(ValueError):
    """State that a configured state key does not authenticate: tampered with, written with
    another key or without one, or moved from another query or key group. Nothing of it was
    unpickled."""


class StateCorruptError(StateFormatError):
    """Unsigned state whose checksum does not match: corrupted, or moved from another query
    or key group. Nothing of it was unpickled."""


class UntrustedStateError(ValueError):
    """State that holds (or would hold) user objects, unsigned and without the opt-in
    :data:`TRUST_ENV`: user objects are unpickled only from signed state."""


def state_key() -> bytes | None:
    """The key that signs and authenticates state (``WINDOWING_STATE_KEY``), if set."""
    key = os.environ.get(STATE_KEY_ENV)
    return key.encode() if key else None


def state_trusted() -> bool:
    """Whether unsigned state may hold user objects (``WINDOWING_TRUST_UNSIGNED_STATE=1``)."""
    return os.environ.get(TRUST_ENV, "") == "1"


_HOW_TO_TRUST = (
    f"set {STATE_KEY_ENV} (the same secret on the driver and the executors) to sign state, "
    f"or {TRUST_ENV}=1 to trust whoever can write the checkpoint to run code in this job "
    "(docs/scale-and-failure.md, 'State that cannot be replayed or run')"
)


@dataclass(frozen=True)
class StateScope:
    """Where an encoded value belongs; its tag covers it, so a value is refused anywhere else.

    Attributes
    ----------
    query
        The streaming query's id (``""``: none, e.g. an operator snapshot).
    key_group
        The key group (``None``: none).
    where
        How errors name the value, e.g. ``"key group 3 of checkpoint '/chk'"``.

    Examples
    --------
    >>> StateScope("q1", 3).context()
    b'query=q1;key_group=3'
    """

    query: str = ""
    key_group: int | None = None
    where: str = "operator state"

    def context(self) -> bytes:
        return f"query={self.query};key_group={self.key_group}".encode()


#: The scope of a value that belongs to no query (a snapshot of an operator).
NO_SCOPE = StateScope()


# ---------------------------------------------------------------------------- plain types
#: ``(module, name)`` -> the object an unsigned state may name: classes whose construction
#: from pickled arguments runs no code of the checkpoint's choosing.
_ALLOWED: dict[tuple[str, str], Any] = {}
#: Types whose instances are plain (with their subclasses when registered so).
_PLAIN_TYPES: dict[type, bool] = {}
_PLAIN_BASES: list[type] = []


def register_plain_type(cls: type, *names: tuple[str, str], subclasses: bool = False) -> None:
    """Declare the instances of ``cls`` plain data: unsigned state may hold them, and loading
    it may look up the globals ``names`` (``(module, qualified name)``: the class and the
    functions its pickles call). Only for types whose pickles construct a value from plain
    arguments (no code of the data's choosing runs); ``subclasses``: their subclasses too
    (e.g. Spark's ``Row`` classes, which pickle as a plain ``Row``)."""
    _PLAIN_TYPES[cls] = True
    if subclasses:
        _PLAIN_BASES.append(cls)
    for module, name in (*names, (cls.__module__, cls.__qualname__)):
        _ALLOWED[(module, name)] = None  # resolved when first named


def _is_plain(obj: Any) -> bool:
    """Whether ``obj`` is plain data: an instance of a plain type, or a class or function
    the refusing unpickler looks up (a plain value's pickle names it)."""
    if isinstance(obj, _NAMED):
        return _global_name(obj) in _ALLOWED
    cls = type(obj)
    known = _PLAIN_TYPES.get(cls)
    if known is None:
        known = any(issubclass(cls, base) for base in _PLAIN_BASES)
        _PLAIN_TYPES[cls] = known
    return known


_NAMED = (type, types.FunctionType, types.BuiltinFunctionType)


def _global_name(obj: Any) -> tuple[str | None, str | None]:
    """``(module, qualified name)`` of a class or function (a built-in class method, which
    has no module of its own: its class's)."""
    module = getattr(obj, "__module__", None)
    owner = getattr(obj, "__self__", None)
    if module is None and isinstance(owner, type):
        module = owner.__module__
    return module, getattr(obj, "__qualname__", None)


def _class_method_getattr(owner: Any, name: str) -> Any:
    """``getattr`` as a pickle of a built-in class method calls it, for the class methods
    plain types pickle through only (``ZoneInfo._unpickle``)."""
    if (getattr(owner, "__module__", None), f"{getattr(owner, '__qualname__', '')}.{name}") not in (
        _CLASS_METHODS
    ):
        msg = f"encoded state asks for {owner!r}.{name}, which no plain type pickles through"
        raise StateFormatError(msg)
    return getattr(owner, name)


#: The class methods plain types pickle through (as ``getattr(class, name)``).
_CLASS_METHODS = {("zoneinfo", "ZoneInfo._unpickle")}


for _cls in (
    datetime.datetime,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    datetime.timezone,
    decimal.Decimal,
    complex,
    bytearray,
    TimeWindow,
    GlobalWindow,
    TimestampedValue,
):
    register_plain_type(_cls)
register_plain_type(
    type(_MISSING), ("windowing.sliding", "_MISSING"), ("windowing.sliding", "_EMPTY")
)
# time zones of Spark's timestamps (pyarrow gives ``ZoneInfo`` objects, even for UTC): a
# ``ZoneInfo`` pickles as ``getattr(ZoneInfo, "_unpickle")(key, from_cache)``, which looks a
# zone up by name; the only ``getattr`` a plain value needs, so the only one allowed
register_plain_type(zoneinfo.ZoneInfo)
_ALLOWED[("builtins", "getattr")] = _class_method_getattr
for _module, _method in _CLASS_METHODS:
    _ALLOWED[(_module, _method)] = None  # named by the writer's check, never looked up
# a Row without field names pickles through ``copyreg._reconstructor(cls, tuple, values)``
# (``cls`` a plain class, looked up as any other)
_ALLOWED[("copyreg", "_reconstructor")] = None
# the built-in types themselves (``defaultdict(list)``'s factory, ``complex``'s pickle)
for _name in ("list", "dict", "set", "frozenset", "tuple", "int", "float", "str", "bytes", "bool"):
    _ALLOWED[("builtins", _name)] = None


def _allowed_global(module: str, name: str, where: str) -> Any:
    if (module, name) not in _ALLOWED:
        msg = (
            f"{where} holds an object of {module}.{name}, a user object: unsigned state is "
            f"read without running code, so user objects load only from signed state; "
            + _HOW_TO_TRUST
        )
        raise UntrustedStateError(msg)
    found = _ALLOWED[(module, name)]
    if found is None:
        found = importlib.import_module(module)
        for part in name.split("."):
            found = getattr(found, part)
        _ALLOWED[(module, name)] = found
    return found


class _PlainUnpickler(pickle.Unpickler):
    """Reads plain data only: a global is looked up only when it is a registered plain type
    (:func:`register_plain_type`), anything else is refused before it is called."""

    def __init__(self, data: bytes | memoryview, where: str) -> None:
        super().__init__(io.BytesIO(data))
        self.where = where

    def find_class(self, module: str, name: str) -> Any:
        return _allowed_global(module, name, self.where)


class _NoGlobalsUnpickler(pickle.Unpickler):
    """The plain part of formats 1 and 2: no global at all."""

    def find_class(self, module: str, name: str) -> Any:
        msg = f"encoded state names {module}.{name}; the plain part of state holds no objects"
        raise StateFormatError(msg)


class _Pickler(pickle.Pickler):
    """Pickles state, noting the classes of the user objects in it."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=5)
        self.user_classes: set[str] = set()

    def reducer_override(self, obj: Any) -> Any:
        if _PLAIN_TYPES.get(type(obj)) is not True and not _is_plain(obj):
            self.user_classes.add(_class_name(obj))
        return NotImplemented


class _CloudPickler(cloudpickle.Pickler):  # type: ignore[misc]
    """:class:`_Pickler` for objects only cloudpickle writes (classes of a driver's
    ``__main__``, lambdas)."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=5)
        self.user_classes: set[str] = set()

    def reducer_override(self, obj: Any) -> Any:
        if not _is_plain(obj):
            self.user_classes.add(_class_name(obj))
            return super().reducer_override(obj)
        return NotImplemented


def _class_name(obj: Any) -> str:
    """How an error names a user object: its class (or the class or function itself)."""
    if isinstance(obj, type) or (callable(obj) and hasattr(obj, "__qualname__")):
        return f"{getattr(obj, '__module__', '?')}.{obj.__qualname__}"
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _dumps(plain: Any) -> tuple[bytes, set[str]]:
    """The pickle of ``plain`` and the classes of the user objects it holds (cloudpickle
    from the first value only it could write on: the process's state holds such objects)."""
    global _cloudpickle_first
    pickler: _Pickler | _CloudPickler
    for make in (_CloudPickler,) if _cloudpickle_first else (_Pickler, _CloudPickler):
        buffer = io.BytesIO()
        pickler = make(buffer)
        try:
            pickler.dump(plain)
        except (pickle.PicklingError, TypeError, AttributeError):
            if make is _CloudPickler:
                raise
            _cloudpickle_first = True
            continue
        return buffer.getvalue(), pickler.user_classes
    raise AssertionError  # pragma: no cover - the loop returns or raises


_cloudpickle_first = False


def _tag(key: bytes | None, scope: StateScope, header: bytes, payload: bytes | memoryview) -> bytes:
    context = scope.context()
    prefix = len(context).to_bytes(4, "big") + context + header
    if key is None:
        digest = hashlib.blake2b(prefix, digest_size=_TAG)
        digest.update(payload)
        return digest.digest()
    mac = hmac.new(key, prefix, hashlib.sha256)
    mac.update(payload)
    return mac.digest()


def legacy_pickle_allowed(what: str, data: bytes) -> None:
    """Allow unpickling ``data``, a whole pickle of an earlier version (it names internal
    classes, so the refusing unpickler cannot read it): refused with a key, else only under
    :data:`TRUST_ENV`; bytes that are not a pickle at all (a corrupt value of this format)
    are corrupt."""
    if bytes(data[:1]) != b"\x80":  # every such pickle starts with its protocol
        msg = f"{what} is corrupt: it is neither encoded state nor a pickle of an earlier version"
        raise StateCorruptError(msg)
    if state_key() is not None:
        msg = (
            f"{what} is a pickle of an earlier version, which cannot be authenticated, and "
            f"{STATE_KEY_ENV} is set: refusing to unpickle it. Such a checkpoint loads only "
            f"without the key and with {TRUST_ENV}=1 (and is then rewritten unsigned); to sign "
            "state, start with a new checkpoint location"
        )
        raise StateAuthenticationError(msg)
    if not state_trusted():
        msg = (
            f"{what} is a pickle of an earlier version, whose loading can run code: set "
            f"{TRUST_ENV}=1 to load it if you trust whoever could write it (what the query "
            "writes again is then plain data, read without running code)"
        )
        raise UntrustedStateError(msg)


#: Modules that earlier versions pickled internal classes from, and where those live now
#: (for the whole pickles of earlier versions, :func:`legacy_loads`).
_MOVED = {
    "windowing.kip450": "windowing.engine.kafka",
    "windowing.slicing": "windowing.engine.panes",
}


class _LegacyUnpickler(pickle.Unpickler):
    """A full unpickler (the caller allowed it) that finds moved modules where they are now."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(_MOVED.get(module, module), name)


def legacy_loads(data: bytes) -> Any:
    """A whole pickle of an earlier version (once :func:`legacy_pickle_allowed` allowed it),
    with the internal classes of modules that moved since found where they are now."""
    return _LegacyUnpickler(io.BytesIO(data)).load()


# ---------------------------------------------------------------------------- writing
class StateWriter:
    """Writes one encoded value: plain data built with :meth:`value`, :meth:`window` and
    :meth:`key_state`, then :meth:`finish`."""

    __slots__ = ()

    def value(self, value: Any) -> Any:
        """A user value (a key, a window's contents, a state value), kept as it is: the
        pickle says whether it is plain data (:func:`register_plain_type`)."""
        return value

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
                kafka.irregular_upto,
            ),
            None if slices is None else (list(slices.starts), slices.upto, slices.due),
        )
        # Optional fields after these, written only when kept (states without them read the
        # same, and versions that do not know them skip them): pane info, then row counts.
        panes = ks.panes
        counts = ks.row_counts
        if panes or counts is not None:
            plain += ([(self.window(w), *entry) for w, entry in (panes or {}).items()],)
        if counts is not None:  # the counts of the namespaces that still have contents
            contents = ks.contents
            plain += ([(self.window(ns), n) for ns, n in counts.items() if ns in contents],)
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

    def finish(self, plain: Any, scope: StateScope = NO_SCOPE, *, trusted: bool = False) -> bytes:
        """The encoded value of ``plain``, signed with the state key (else checksummed) for
        ``scope``. User objects in it need the key, :data:`TRUST_ENV` or ``trusted`` (the
        caller's own process reads it back): :class:`UntrustedStateError` otherwise."""
        payload, user_classes = _dumps(plain)
        key = state_key()
        if user_classes and key is None and not (trusted or state_trusted()):
            names = ", ".join(sorted(user_classes)[:5])
            msg = (
                f"{scope.where} holds user objects ({names}), which unsigned state cannot "
                f"hold: loading them would run whatever code the checkpoint holds; " + _HOW_TO_TRUST
            )
            raise UntrustedStateError(msg)
        flags = (_SIGNED if key is not None else 0) | (_USER_OBJECTS if user_classes else 0)
        header = MAGIC + bytes((FORMAT, flags))
        return header + _tag(key, scope, header, payload) + payload


def encode_key_state(ks: KeyState, scope: StateScope = NO_SCOPE) -> bytes:
    """One key's state, encoded for ``scope``."""
    writer = StateWriter()
    return writer.finish(writer.key_state(ks), scope)


def encode_snapshot(
    watermark: int,
    processing_time: int,
    states: Iterable[tuple[Any, KeyState]],
    *,
    trusted: bool = False,
) -> bytes:
    """An operator's clocks and every key's state, encoded (``trusted``: user objects may be
    in it unsigned, for a snapshot this process reads back)."""
    writer = StateWriter()
    plain = (
        "snapshot",
        watermark,
        processing_time,
        [(writer.value(key), writer.key_state(ks)) for key, ks in states],
    )
    return writer.finish(plain, trusted=trusted)


# ---------------------------------------------------------------------------- reading
class StateReader:
    """Reads the plain data of :func:`open_state` back: user values, windows, key states.

    ``users``: the user objects of a format 1 or 2 value, which its plain part names by
    index; ``None`` for format 3, whose values are in the plain data itself."""

    __slots__ = ("users",)

    def __init__(self, users: list[Any] | None = None) -> None:
        self.users = users

    def value(self, ref: Any) -> Any:
        if self.users is None:
            return ref
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
            starts, values, max_ts, expiry_at = kafka[:4]
            store = KafkaWindowStore()
            store.starts = list(starts)
            store.values = {s: self.value(v) for s, v in values}
            store.max_ts = dict(max_ts)
            store.expiry_at = expiry_at
            # a state of an earlier version: any window may differ from the definition
            latest = max(store.max_ts.values(), default=MIN_TIMESTAMP - 1)
            store.irregular_upto = kafka[4] if len(kafka) > 4 else latest + 1
            ks.kafka = store
        if slices is not None:
            starts, upto, due = slices
            sl = Slices(upto)
            sl.starts = list(starts)
            sl.due = due
            ks.slices = sl
        if len(plain) > 11 and plain[11]:
            ks.panes = {self.window(w): (i, settled, keep) for w, i, settled, keep in plain[11]}
        if len(plain) > 12:
            ks.row_counts = {self.window(ns): n for ns, n in plain[12]}
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


def open_state(
    data: bytes, scope: StateScope = NO_SCOPE, *, trusted: bool = False
) -> tuple[Any, StateReader]:
    """The plain data of an encoded value that belongs to ``scope`` and a reader of it.

    Its tag is checked first (the state key's HMAC, else the checksum); nothing is unpickled
    when it does not match. Unsigned data is then read by an unpickler that refuses all but
    the plain types, unless :data:`TRUST_ENV` or ``trusted`` (a value this process wrote)."""
    if not isinstance(data, bytes | bytearray | memoryview) or bytes(data[:4]) != MAGIC:
        msg = f"{scope.where} is not encoded operator state (no format header)"
        raise StateFormatError(msg)
    data = bytes(data)
    version = data[4]
    if version in (1, 2):
        return _open_legacy(data, scope, trusted=trusted)
    if version != FORMAT:
        msg = (
            f"{scope.where} is operator state in format {version}, but this version of "
            f"windowing reads formats 1 to {FORMAT}; use the version that wrote it"
        )
        raise StateFormatError(msg)
    flags, tag, payload = data[5], data[6 : 6 + _TAG], memoryview(data)[6 + _TAG :]
    key = state_key()
    signed = bool(flags & _SIGNED)
    if signed and key is None:
        msg = (
            f"{scope.where} is signed, and {STATE_KEY_ENV} is not set: set it to the key the "
            "state was written with (on the driver and the executors)"
        )
        raise StateAuthenticationError(msg)
    if not signed and key is not None:
        msg = (
            f"{scope.where} is not signed, and {STATE_KEY_ENV} is set: refusing to load it "
            "(it was tampered with, or written without a key; load state written without a "
            "key only without the key set)"
        )
        raise StateAuthenticationError(msg)
    if not hmac.compare_digest(tag, _tag(key, scope, data[:6], payload)):
        if signed:
            msg = (
                f"{scope.where} does not match {STATE_KEY_ENV}: it was tampered with, written "
                "with another key, or belongs to another query or key group; nothing of it "
                "was loaded"
            )
            raise StateAuthenticationError(msg)
        msg = (
            f"{scope.where} is corrupt: its checksum does not match (a changed byte, or a value "
            "of another query or key group); nothing of it was loaded. Restore the checkpoint "
            "from a copy, or start the query with a new checkpoint location"
        )
        raise StateCorruptError(msg)
    trust = signed or trusted or state_trusted()
    if flags & _USER_OBJECTS and not trust:
        msg = f"{scope.where} holds user objects, which load only from signed state; " + (
            _HOW_TO_TRUST
        )
        raise UntrustedStateError(msg)
    plain = pickle.loads(payload) if trust else _PlainUnpickler(payload, scope.where).load()
    return plain, StateReader()


def _open_legacy(data: bytes, scope: StateScope, *, trusted: bool) -> tuple[Any, StateReader]:
    """A value of format 1 (no tag) or 2 (a tag of 0 or 32 bytes without the scope): its
    plain part, and its user objects, unpickled only when the key authenticates them or the
    refusing unpickler reads them."""
    key = state_key()
    trust = trusted or state_trusted()
    if data[4] == 1:
        payload, size = data[5:], 0
    else:
        size = data[5]
        tag, payload = data[6 : 6 + size], data[6 + size :]
    if size == 0 and key is not None:
        msg = (
            f"{scope.where} (format {data[4]}) is not authenticated, and {STATE_KEY_ENV} is set: "
            "refusing to load it (it was tampered with, written with another key, or written "
            "without one; load state written without a key only without the key set)"
        )
        raise StateAuthenticationError(msg)
    if size:
        if key is None:
            msg = f"{scope.where} is signed, and {STATE_KEY_ENV} is not set: set it to its key"
            raise StateAuthenticationError(msg)
        if not hmac.compare_digest(tag, hmac.new(key, data[:5] + payload, "sha256").digest()):
            msg = (
                f"{scope.where} does not match {STATE_KEY_ENV}: it was tampered with or "
                "written with another key; nothing of it was loaded"
            )
            raise StateAuthenticationError(msg)
        trust = True
    try:
        plain, users = _NoGlobalsUnpickler(io.BytesIO(payload)).load()
    except StateFormatError:
        raise
    except Exception as exc:  # a format 1 or 2 value has no checksum: garbage fails here
        msg = f"{scope.where} is corrupt: it cannot be read ({exc})"
        raise StateCorruptError(msg) from exc
    loaded = pickle.loads(users) if trust else _PlainUnpickler(users, scope.where).load()
    return plain, StateReader(loaded)


def decode_key_state(data: bytes, scope: StateScope = NO_SCOPE) -> KeyState:
    """One key's state from :func:`encode_key_state`."""
    plain, reader = open_state(data, scope)
    return reader.key_state(plain)


def decode_snapshot(
    data: bytes, *, trusted: bool = False
) -> tuple[int, int, list[tuple[Any, KeyState]]]:
    """``(watermark, processing_time, [(key, state)])`` from :func:`encode_snapshot`."""
    plain, reader = open_state(data, trusted=trusted)
    if not (isinstance(plain, tuple) and plain and plain[0] == "snapshot"):
        msg = "encoded state is not an operator snapshot"
        raise StateFormatError(msg)
    _, watermark, processing_time, states = plain
    return watermark, processing_time, [(reader.value(k), reader.key_state(s)) for k, s in states]
