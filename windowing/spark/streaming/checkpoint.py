"""A key group's state in Spark's state store (the streaming checkpoint): its layout, written
in the versioned state encoding (:mod:`windowing.engine.encoding`) and bound to its query and
key group (:class:`~windowing.engine.encoding.StateScope`), with the digest of the job that
wrote it; and the earlier layouts, which still load."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from pyspark import TaskContext
from pyspark.sql.types import BinaryType, Row, StructField, StructType

from windowing.engine.encoding import (
    FORMAT,
    MAGIC,
    NO_SCOPE,
    StateAuthenticationError,
    StateCorruptError,
    StateFormatError,
    StateScope,
    StateWriter,
    encode_key_state,
    legacy_loads,
    legacy_pickle_allowed,
    open_state,
    register_plain_type,
)
from windowing.spark.columnar.core import OpenWindows, decode_open_windows, encode_open_windows
from windowing.spark.columns.keys import NAN_KEY

__all__ = [
    "CHECKPOINT_PROPERTY",
    "STATE_PROPERTY",
    "STATE_SCHEMA",
    "STATE_VERSION",
    "UNKNOWN_WINDOWS",
    "Entry",
    "GroupState",
    "JobChangedError",
    "StateOwner",
    "decode_entry",
    "decode_group",
    "encode_entry",
    "encode_group",
    "load_group",
    "query_of_task",
]

# Spark's rows (input rows, structs, reduced rows) are plain data: a Row pickles as a call of
# ``_create_row(fields, values)``, and the row classes of ``schema.row_class`` as a plain Row.
register_plain_type(Row, ("pyspark.sql.types", "_create_row"), subclasses=True)
# A NaN in a key as the keys of a key group's entries hold it (one value for every NaN, as
# Spark groups them): an instance of a class without fields.
register_plain_type(type(NAN_KEY))

#: The local property ``write_results_and_late`` sets to the query's checkpoint (its stream
#: thread and tasks inherit it), for errors that name the checkpoint.
CHECKPOINT_PROPERTY = "windowing.checkpoint"
#: The local property ``write_results_and_late`` sets to what the driver knows of the
#: checkpoint's state (JSON: ``accepted`` digests, whether it is ``bound``; see
#: :class:`StateOwner`).
STATE_PROPERTY = "windowing.state"
#: The local property Spark's stream execution sets to the query's id (kept in the
#: checkpoint's ``metadata`` file: the same across restarts of one checkpoint).
QUERY_ID_PROPERTY = "sql.streaming.queryId"


@dataclass(frozen=True)
class StateOwner:
    """The query a key group's state belongs to: its id and, when known, its checkpoint.

    Examples
    --------
    >>> StateOwner("q1", "/chk").scope(3).where
    "the state of key group 3 of checkpoint '/chk'"
    """

    query_id: str = ""
    checkpoint: str | None = None
    #: Digests of the job's state-shaping parts the driver found compatible with this job
    #: (the checkpoint's record, written by an earlier version that described a part
    #: otherwise).
    accepted: tuple[str, ...] = ()
    #: Whether the checkpoint was created by this layout or a later one (every group value
    #: is then bound to its query and key group).
    bound: bool = False

    def scope(self, key_group: int) -> StateScope:
        if self.checkpoint:
            of = f"checkpoint {self.checkpoint!r}"
        else:
            of = f"query {self.query_id}" if self.query_id else "the query"
        return StateScope(self.query_id, key_group, f"the state of key group {key_group} of {of}")


def query_of_task() -> StateOwner:
    """The query of the running task (a streaming micro-batch's), from its local properties;
    an empty owner outside a task."""
    task = TaskContext.get()
    if task is None:
        return StateOwner()
    known = json.loads(task.getLocalProperty(STATE_PROPERTY) or "{}")
    return StateOwner(
        task.getLocalProperty(QUERY_ID_PROPERTY) or "",
        task.getLocalProperty(CHECKPOINT_PROPERTY) or None,
        tuple(known.get("accepted", ())),
        bool(known.get("bound", False)),
    )


#: The schema of a key group's one state value.
STATE_SCHEMA = StructType([StructField("state", BinaryType(), True)])

#: One key of a key group: ``(key, Spark timer due, encoded key state, clock, open windows,
#: idle)``: ``UNKNOWN_WINDOWS`` open windows for a key stored by a layout before 5; ``idle``
#: with an idle timeout, else ``None``: ``(max event time, last arrival, watermark)``
#: (:class:`~windowing.idleness.KeyIdleness`). An empty key state (``b""``): the key only
#: keeps its clock, which is ahead of the stream's watermark.
Entry = tuple[Any, int | None, bytes, int | None, int, tuple[int | None, int, int] | None]
#: The layout of a key group's state value (bumped when it changes; 2: Spark timers in the
#: shifted watermark domain; 3: the group's columnar windows; 4: the versioned encoding of
#: :mod:`windowing.engine.encoding`; 5: each key's number of open windows; 6: each key's idle
#: clock; 7: columnar windows of other kinds than tumbling ones: hopping panes, sessions; 8:
#: values in the encoding's format 3, bound to the query and key group, and the digest of the
#: job that wrote them). Layouts 2 and 3 (pickles), 4, 5, 6 and 7 still load.
STATE_VERSION = 8
#: The open windows of a key stored by a layout that did not count them.
UNKNOWN_WINDOWS = -1


class JobChangedError(ValueError):
    """The checkpoint's state was written by another job (another window, function, key or
    input schema, ...): it cannot continue with this one."""


def encode_group(
    key_groups: int,
    timer: int | None,
    entries: dict[Any, Entry],
    windows: OpenWindows | None,
    scope: StateScope = NO_SCOPE,
    job: str | None = None,
) -> bytes:
    """A key group's state for ``scope``: plain data, each key's state as its own encoded
    value (decoded only when a call touches the key); ``job``: the digest of the job's
    definition (:attr:`~windowing.spark.streaming.job_record.JobDefinition.digest`)."""
    plain = (
        "group",
        STATE_VERSION,
        key_groups,
        timer,
        [
            (skey, key, due, blob, clock, n, idle)
            for skey, (key, due, blob, clock, n, idle) in entries.items()
        ],
        None if windows is None else encode_open_windows(windows, scope),
        job,
    )
    return StateWriter().finish(plain, scope)


def decode_group(data: bytes, scope: StateScope = NO_SCOPE) -> tuple[Any, ...]:
    """``(layout, key groups, timer, entries, columnar windows, job digest)`` of a stored key
    group (layout 4 or later)."""
    plain, reader = open_state(data, scope)
    if not (isinstance(plain, tuple) and len(plain) in (6, 7) and plain[0] == "group"):
        msg = f"{scope.where}: the checkpoint's state is not a key group's state"
        raise StateFormatError(msg)
    _, version, key_groups, timer, items, windows = plain[:6]
    entries = {
        reader.value(item[0]): (reader.value(item[1]), *item[2:5], _windows(item), _idle(item))
        for item in items
    }
    return (
        version,
        key_groups,
        timer,
        entries,
        None if windows is None else decode_entry(windows, scope),
        plain[6] if len(plain) > 6 else None,
    )


def _windows(item: tuple[Any, ...]) -> int:
    """An entry's open windows (layout 5), else ``UNKNOWN_WINDOWS``."""
    return int(item[5]) if len(item) > 5 else UNKNOWN_WINDOWS


def _idle(item: tuple[Any, ...]) -> tuple[int | None, int, int] | None:
    """An entry's idle clock (layout 6), else ``None``."""
    return None if len(item) <= 6 or item[6] is None else tuple(item[6])


def encode_entry(ks: Any, scope: StateScope = NO_SCOPE) -> bytes:
    """A key's state: the operator's ``KeyState`` or the key's ``OpenWindows``."""
    if isinstance(ks, OpenWindows):
        return encode_open_windows(ks, scope)
    return encode_key_state(ks, scope)


def decode_entry(blob: bytes, scope: StateScope = NO_SCOPE) -> Any:
    """A key's state (``None`` for an empty one: a key that only keeps its clock)."""
    if not blob:
        return None
    if bytes(blob[:4]) != MAGIC:
        legacy_pickle_allowed(f"{scope.where}: a key state of layout 2 or 3", blob)
        return legacy_loads(blob)  # a key state of layout 2 or 3
    plain, reader = open_state(blob, scope)
    windows = decode_open_windows(plain)
    return windows if windows is not None else reader.key_state(plain)


def load_group(
    data: bytes,
    expected_key_groups: int,
    scope: StateScope = NO_SCOPE,
    job: str | None = None,
    *,
    accepted: Collection[str] = (),
    bound: bool = False,
) -> tuple[int | None, dict[Any, Entry], OpenWindows | None]:
    """``(registered timer, entries, columnar windows)`` of a stored key group of ``scope``;
    earlier layouts still load. A state of another number of key groups, of a newer layout,
    or written by a job whose digest is neither ``job`` nor one of ``accepted`` (digests the
    driver found compatible with this job) is refused with an error saying so; ``bound``: the
    checkpoint was created by this layout, so a value of an earlier one (which carries no
    scope to check) was put there from elsewhere, and is refused."""
    if bound and bytes(data[:5]) != MAGIC + bytes((FORMAT,)):
        msg = (
            f"{scope.where} is a value of an earlier state layout, but the checkpoint was "
            f"created with layout {STATE_VERSION} or later: it was copied there from another "
            "checkpoint; nothing of it was loaded"
        )
        raise StateAuthenticationError(msg)
    if bytes(data[:4]) == MAGIC:
        stored = decode_group(data, scope)
    else:
        legacy_pickle_allowed(f"{scope.where}: a key group's state of layout 2 or 3", data)
        stored = legacy_loads(data)
    if isinstance(stored, tuple) and len(stored) == 4 and stored[0] == 2:
        stored = (3, *stored[1:], None)  # layout 2: no columnar windows of the group
    if isinstance(stored, tuple) and len(stored) == 5:
        stored = (*stored, None)  # layouts 2 and 3: no job digest
    if not (isinstance(stored, tuple) and len(stored) == 6):
        msg = (
            f"{scope.where}: the checkpoint's state was not written by this version of the "
            "streaming runtime; start the query with a new checkpoint location"
        )
        raise ValueError(msg)
    version, key_groups, timer, entries, windows, digest = stored
    if version == 3:  # pickled entries of four fields
        entries = {k: (*e[:4], UNKNOWN_WINDOWS, None) for k, e in entries.items()}
    if not (isinstance(version, int) and 3 <= version <= STATE_VERSION):
        msg = (
            f"{scope.where} has state layout {version}, written by a newer version of "
            f"windowing; this version reads layouts 2 to {STATE_VERSION}: run the version "
            "that wrote the checkpoint, or start with a new checkpoint location"
        )
        raise ValueError(msg)
    if key_groups != expected_key_groups:
        msg = (
            f"{scope.where}: the checkpoint's state has {key_groups} key groups, but the "
            f"query has max_parallelism {expected_key_groups}; restart with the "
            "max_parallelism the checkpoint was written with"
        )
        raise ValueError(msg)
    if bound and digest is None:
        msg = f"{scope.where} carries no job digest, as no value of this checkpoint's layout"
        raise StateCorruptError(msg)
    if job is not None and digest is not None and digest != job and digest not in accepted:
        msg = (
            f"{scope.where} was written by another job (definition {digest}, this job's "
            f"{job}): a changed window, trigger, evictor, function kind, key or input "
            "schema, allowed lateness or time mode cannot continue from it. Run the job the "
            "checkpoint was written with, or start with a new checkpoint location "
            "(write_results_and_late names the change before the query starts)"
        )
        raise JobChangedError(msg)
    return timer, entries, windows


class GroupState:
    """A key group's one state value in Spark's state store (``handle``'s ``key_group``
    value state): read and written in this module's layout, bound to the group's query and
    key group, with the job's digest.

    Example::

        state = GroupState(handle, key_groups=128, job=config.job_digest)
        timer, entries, windows = state.load(key)  # key: Spark's grouping key (the group)
    """

    def __init__(self, handle: Any, key_groups: int, job: str | None) -> None:
        self.value = handle.getValueState("key_group", STATE_SCHEMA)
        self.key_groups = key_groups
        self.job = job
        self.owner = query_of_task()
        self.scope = NO_SCOPE  # the key group's, set by load

    def load(self, key: Any) -> tuple[int | None, dict[Any, Entry], OpenWindows | None]:
        """``(registered timer, entries, columnar windows)`` of the key group ``key``."""
        owner = self.owner
        self.scope = owner.scope(int(key[0]))
        value = self.value.get()
        if value is None or value[0] is None:
            return None, {}, None
        return load_group(
            value[0],
            self.key_groups,
            self.scope,
            self.job,
            accepted=owner.accepted,
            bound=owner.bound,
        )

    def store(
        self, timer: int | None, entries: dict[Any, Entry], windows: OpenWindows | None
    ) -> int:
        """Write the group's state (clear it when nothing is left); its size in bytes."""
        if not entries and windows is None:
            self.value.clear()
            return 0
        blob = encode_group(self.key_groups, timer, entries, windows, self.scope, self.job)
        self.value.update((blob,))
        return len(blob)

    def decode_entry(self, blob: bytes) -> Any:
        """A key's state of this group (:func:`decode_entry`)."""
        return decode_entry(blob, self.scope)

    def encode_entry(self, ks: Any) -> bytes:
        """A key's state of this group (:func:`encode_entry`)."""
        return encode_entry(ks, self.scope)
