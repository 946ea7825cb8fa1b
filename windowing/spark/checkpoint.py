"""A key group's state in Spark's state store (the streaming checkpoint): its layout, written
in the versioned state encoding (:mod:`windowing.engine.encoding`), and the earlier pickled
layouts, which still load."""

from __future__ import annotations

import pickle
from typing import Any

from pyspark.sql.types import BinaryType, StructField, StructType

from windowing.engine.encoding import (
    MAGIC,
    StateFormatError,
    StateWriter,
    encode_key_state,
    open_state,
    require_unauthenticated_allowed,
)
from windowing.spark.columnar import OpenWindows, decode_open_windows, encode_open_windows

__all__ = [
    "STATE_SCHEMA",
    "STATE_VERSION",
    "UNKNOWN_WINDOWS",
    "Entry",
    "decode_entry",
    "decode_group",
    "encode_entry",
    "encode_group",
    "load_group",
]

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
#: clock; 7: columnar windows of other kinds than tumbling ones: hopping panes, sessions).
#: Layouts 2 and 3 (pickles), 4, 5 and 6 still load.
STATE_VERSION = 7
#: The open windows of a key stored by a layout that did not count them.
UNKNOWN_WINDOWS = -1


def encode_group(
    key_groups: int, timer: int | None, entries: dict[Any, Entry], windows: OpenWindows | None
) -> bytes:
    """A key group's state: plain data, the keys as user objects, each key's state as its
    own encoded value (decoded only when a call touches the key)."""
    writer = StateWriter()
    plain = (
        "group",
        STATE_VERSION,
        key_groups,
        timer,
        [
            (writer.value(skey), writer.value(key), due, blob, clock, n, idle)
            for skey, (key, due, blob, clock, n, idle) in entries.items()
        ],
        None if windows is None else encode_open_windows(windows),
    )
    return writer.finish(plain)


def decode_group(data: bytes) -> tuple[Any, ...]:
    plain, reader = open_state(data)
    if not (isinstance(plain, tuple) and len(plain) == 6 and plain[0] == "group"):
        msg = "the checkpoint's state is not a key group's state"
        raise StateFormatError(msg)
    _, version, key_groups, timer, items, windows = plain
    entries = {
        reader.value(item[0]): (reader.value(item[1]), *item[2:5], _windows(item), _idle(item))
        for item in items
    }
    return (
        version,
        key_groups,
        timer,
        entries,
        None if windows is None else decode_entry(windows),
    )


def _windows(item: tuple[Any, ...]) -> int:
    """An entry's open windows (layout 5), else ``UNKNOWN_WINDOWS``."""
    return int(item[5]) if len(item) > 5 else UNKNOWN_WINDOWS


def _idle(item: tuple[Any, ...]) -> tuple[int | None, int, int] | None:
    """An entry's idle clock (layout 6), else ``None``."""
    return None if len(item) <= 6 or item[6] is None else tuple(item[6])


def encode_entry(ks: Any) -> bytes:
    """A key's state: the operator's ``KeyState`` or the key's ``OpenWindows``."""
    if isinstance(ks, OpenWindows):
        return encode_open_windows(ks)
    return encode_key_state(ks)


def decode_entry(blob: bytes) -> Any:
    """A key's state (``None`` for an empty one: a key that only keeps its clock)."""
    if not blob:
        return None
    if bytes(blob[:4]) != MAGIC:
        require_unauthenticated_allowed("a key state of layout 2 or 3 (a pickle)")
        return pickle.loads(blob)  # a key state of layout 2 or 3
    plain, reader = open_state(blob)
    windows = decode_open_windows(plain)
    return windows if windows is not None else reader.key_state(plain)


def load_group(
    data: bytes, expected_key_groups: int
) -> tuple[int | None, dict[Any, Entry], OpenWindows | None]:
    """``(registered timer, entries, columnar windows)`` of a stored key group; layouts 2 and
    3 (pickles of earlier versions) still load."""
    if bytes(data[:4]) == MAGIC:
        stored = decode_group(data)
    else:
        require_unauthenticated_allowed("a key group's state of layout 2 or 3 (a pickle)")
        stored = pickle.loads(data)
    if isinstance(stored, tuple) and len(stored) == 4 and stored[0] == 2:
        stored = (3, *stored[1:], None)  # layout 2: no columnar windows of the group
    if not (isinstance(stored, tuple) and len(stored) == 5):
        msg = (
            "the checkpoint's state was not written by this version of the streaming "
            "runtime; start the query with a new checkpoint location"
        )
        raise ValueError(msg)
    version, key_groups, timer, entries, windows = stored
    if version == 3:  # pickled entries of four fields
        entries = {k: (*e[:4], UNKNOWN_WINDOWS, None) for k, e in entries.items()}
    if version not in (3, 4, 5, 6, STATE_VERSION) or key_groups != expected_key_groups:
        msg = (
            f"the checkpoint's state has {key_groups} key groups (state layout {version}), "
            f"but the query has max_parallelism {expected_key_groups} (layout "
            f"{STATE_VERSION}); restart with the max_parallelism the checkpoint was written with"
        )
        raise ValueError(msg)
    return timer, entries, windows
