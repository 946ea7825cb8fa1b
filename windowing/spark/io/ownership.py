"""Which query a checkpoint belongs to, which query each output folder belongs to, and which
process runs a query now: checked before a query of
:func:`~windowing.spark.streaming.sinks.write_results_and_late` starts, so that an output never
destroys another query's published data.

- **The query's identity**: a token kept in the checkpoint, ``<checkpoint>/windowing/
  query.json`` (:func:`query_token`), created before the query first starts. The
  ``windowing/`` folder of a checkpoint holds what this library keeps there.
- **A folder's owner**: ``<folder>/_windowing_owner.json`` records the token of the query
  that writes the folder, its checkpoint and the output (Spark's readers skip names that
  start with ``_``). A query claims a folder that is missing or empty, keeps writing one
  that records its own token, adopts a folder without a record whose ``batch_id=N``
  micro-batches are all committed in its checkpoint (written by an earlier version of this
  library), and refuses any other folder (:func:`take_ownership`).
- **Live writers** (local file systems only): the driver holds an exclusive ``flock`` on
  ``<checkpoint>/windowing/query.lock`` and on ``<folder>/_windowing_lock`` of each local
  output folder while the query runs; the operating system releases them when the process
  dies, so a killed driver restarts at once. On other file systems there is no lock: the
  owner records still refuse another checkpoint, and within one driver Spark stops the
  active run of a checkpoint when another run of it starts
  (``spark.sql.streaming.stopActiveRunOnRestart``); two drivers on one checkpoint are not
  detected there.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Literal

from windowing.spark.io.files import Files, committed_batches, join
from windowing.spark.io.paths import display_path, resolve_path

__all__ = [
    "FOLDER_LOCK",
    "OWNER_FILE",
    "QUERY_FILE",
    "QUERY_LOCK",
    "STAGING",
    "WINDOWING",
    "Output",
    "OwnerRecord",
    "Ownership",
    "QueryIdentity",
    "batch_of",
    "query_token",
    "read_owner",
    "read_query_identity",
    "take_ownership",
    "windowing_folder",
]

#: The folder of a checkpoint where this library keeps its own files.
WINDOWING = "windowing"
#: The query's identity, in the checkpoint's ``windowing/`` folder.
QUERY_FILE = "query.json"
#: The lock the running driver holds, in the checkpoint's ``windowing/`` folder.
QUERY_LOCK = "query.lock"
#: The owner record of an output folder.
OWNER_FILE = "_windowing_owner.json"
#: The lock the running driver holds in each local output folder.
FOLDER_LOCK = "_windowing_lock"
#: The folder inside a file sink's path where micro-batches wait for their commit.
STAGING = "_staging"
_OURS = "_windowing_"  # the prefix of every name this library puts into an output folder
_BATCH = re.compile(r"^batch_id=(\d+)$")
_READ_ATTEMPTS = 5  # a record being written through Hadoop may be read half-written


def windowing_folder(checkpoint: str) -> str:
    """The folder of ``checkpoint`` where this library keeps its files."""
    return join(checkpoint, WINDOWING)


def batch_of(name: str) -> int | None:
    """The micro-batch of a folder name ``batch_id=N``, else ``None``."""
    match = _BATCH.match(name)
    return int(match.group(1)) if match else None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _read_json(files: Files, path: str, what: str) -> dict[str, str] | None:
    """The JSON object in ``path`` (``None`` when missing) with string fields ``what``
    needs; a ``ValueError`` naming the file when it is not one."""
    for attempt in range(_READ_ATTEMPTS):
        text = files.read_text(path)
        if text is None:
            return None
        with contextlib.suppress(ValueError):
            data = json.loads(text)
            if isinstance(data, dict) and all(isinstance(v, str) for v in data.values()):
                return data
        if attempt + 1 < _READ_ATTEMPTS:
            time.sleep(0.2)
    msg = f"{path!r} is not {what} (a JSON object of strings): restore or delete it"
    raise ValueError(msg)


# ---------------------------------------------------------------------------- the query
@dataclass(frozen=True)
class QueryIdentity:
    """``<checkpoint>/windowing/query.json``: the query's token, its checkpoint (resolved)
    and when the identity was created (ISO 8601, UTC)."""

    token: str
    checkpoint: str
    created: str

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"


def read_query_identity(files: Files, checkpoint: str) -> QueryIdentity | None:
    """The identity kept in ``checkpoint``, ``None`` before the query's first start."""
    path = join(windowing_folder(checkpoint), QUERY_FILE)
    data = _read_json(files, path, "a query identity of pyspark-windowing")
    if data is None:
        return None
    if not data.get("token"):
        msg = f"{path!r} holds no token: restore it from a copy of the checkpoint"
        raise ValueError(msg)
    return QueryIdentity(data["token"], data.get("checkpoint", ""), data.get("created", ""))


def query_token(files: Files, checkpoint: str) -> str:
    """The token of the query whose checkpoint is ``checkpoint``, created (a new
    ``uuid4``, with the file written whole and never overwritten) if absent; of two
    processes creating it at once, both get the first one's."""
    found = read_query_identity(files, checkpoint)
    if found is not None:
        return found.token
    identity = QueryIdentity(uuid.uuid4().hex, display_path(resolve_path(checkpoint)), _now())
    path = join(windowing_folder(checkpoint), QUERY_FILE)
    if files.create_exclusive(path, identity.to_json()):
        return identity.token
    winner = read_query_identity(files, checkpoint)
    if winner is None:
        msg = f"{path!r} was created and removed while this query started: start it again"
        raise ValueError(msg)
    return winner.token


# ---------------------------------------------------------------------------- the folders
@dataclass(frozen=True)
class OwnerRecord:
    """``<folder>/_windowing_owner.json``: the token of the query that writes the folder,
    its checkpoint (resolved), the output parameter and when it claimed the folder."""

    token: str
    checkpoint: str
    output: str
    created: str

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"


def read_owner(files: Files, folder: str) -> OwnerRecord | None:
    """The owner record of ``folder``, ``None`` when it has none."""
    path = join(folder, OWNER_FILE)
    data = _read_json(files, path, "an owner record of pyspark-windowing")
    if data is None:
        return None
    return OwnerRecord(
        data.get("token", ""),
        data.get("checkpoint", "?"),
        data.get("output", "?"),
        data.get("created", "?"),
    )


@dataclass(frozen=True)
class Output:
    """An output folder of a query: the parameter that names it and its path."""

    name: str
    folder: str

    def described(self) -> str:
        return f"{self.name}={self.folder!r}"


_Action = Literal["ours", "claim", "adopt"]


def _listing(names: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(sorted(names)[:limit])
    return shown if len(names) <= limit else f"{shown}, ... ({len(names)} entries)"


def _decide(
    files: Files,
    output: Output,
    identity: QueryIdentity | None,
    checkpoint: str,
    committed: set[int],
) -> _Action:
    """What this query may do with ``output``'s folder; a ``ValueError`` naming both
    queries when it belongs to another."""
    names = files.names(output.folder)
    record = read_owner(files, output.folder) if OWNER_FILE in names else None
    if record is not None:
        if identity is not None and record.token == identity.token:
            return "ours"
        raise _foreign(files, output, record, checkpoint)
    batches = {b for b in map(batch_of, names) if b is not None}
    others = [
        n
        for n in names
        if batch_of(n) is None and n != STAGING and not n.startswith((_OURS, "." + _OURS))
    ]
    if STAGING in names:
        staged = files.names(join(output.folder, STAGING))
        others += [f"{STAGING}/{n}" for n in staged if batch_of(n) is None]
    if others:
        msg = (
            f"{output.described()} holds files this query did not write ({_listing(others)}) "
            f"and no owner record ({OWNER_FILE}): write to another folder, or empty it first"
        )
        raise ValueError(msg)
    if not batches:
        return "claim"
    foreign = sorted(batches - committed)
    if not foreign:
        return "adopt"  # written by this checkpoint before owner records existed
    msg = (
        f"{output.described()} has no owner record ({OWNER_FILE}) and holds micro-batches "
        f"that checkpoint={checkpoint!r} has not committed "
        f"({_listing([f'batch_id={b}' for b in foreign])}): another query wrote them; write "
        "to another folder, or delete it to start it afresh"
    )
    raise ValueError(msg)


def _foreign(files: Files, output: Output, record: OwnerRecord, checkpoint: str) -> ValueError:
    """The error for a folder another query owns."""
    if record.checkpoint == display_path(resolve_path(checkpoint)):
        owner = (
            f"names this checkpoint {record.checkpoint!r} as it was before it was created "
            f"anew (its {WINDOWING}/{QUERY_FILE} no longer holds the token that wrote the "
            "folder)"
        )
    else:
        owner = f"names the checkpoint {record.checkpoint!r}"
    live = ""
    local = files.local(output.folder)
    holder = _holder(os.path.join(local, FOLDER_LOCK)) if local is not None else None
    if holder is not None:
        live = f"; that query is running now ({holder})"
    return ValueError(
        f"{output.described()} belongs to another query: its owner record "
        f"{join(output.folder, OWNER_FILE)!r} {owner} (output {record.output}, since "
        f"{record.created}), and this query's checkpoint is {checkpoint!r}{live}. A folder "
        "holds the micro-batches of one query: write to another folder, or delete "
        f"{output.folder!r} to start it afresh (its published micro-batches go with it)"
    )


# ---------------------------------------------------------------------------- the locks
def _holder(path: str) -> str | None:
    """Who holds the lock file ``path`` (its text), ``None`` when no one does."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder_text(fd)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _holder_text(fd: int) -> str:
    with contextlib.suppress(OSError):
        text = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        if text:
            return text
    return "a process that wrote no details"


def _lock(path: str, holder: str) -> int | str:
    """The descriptor of the lock file ``path``, locked exclusively with ``holder``
    written into it; the text of the holder when another one holds it."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        text = _holder_text(fd)
        os.close(fd)
        return text
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, holder.encode("utf-8"), 0)
    return fd


@dataclass
class Ownership:
    """The locks a running query holds (descriptors of locked files); :meth:`release`
    drops them (once; from any thread)."""

    fds: list[int] = field(default_factory=list)
    _guard: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def release(self) -> None:
        with self._guard:
            fds, self.fds = self.fds, []
        for fd in fds:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)  # no holder any more
            with contextlib.suppress(OSError):
                os.close(fd)  # closing the last descriptor releases the flock


def _take_locks(files: Files, checkpoint: str, outputs: Sequence[Output]) -> Ownership:
    """Lock the checkpoint and each output folder on a local file system; a ``ValueError``
    naming the folder and the holder when another process (or query) holds one."""
    holder = f"pid {os.getpid()} on {socket.gethostname()} since {_now()}, checkpoint {checkpoint}"
    ownership = Ownership()
    wanted: list[tuple[str, str]] = []
    local_checkpoint = files.local(checkpoint)
    if local_checkpoint is not None:
        path = os.path.join(local_checkpoint, WINDOWING, QUERY_LOCK)
        wanted.append((path, f"checkpoint={checkpoint!r} is in use by a running query"))
    for output in outputs:
        local = files.local(output.folder)
        if local is not None:
            path = os.path.join(local, FOLDER_LOCK)
            wanted.append((path, f"{output.described()} is being written by a running query"))
    for path, busy in wanted:
        got = _lock(path, holder)
        if isinstance(got, str):
            ownership.release()
            msg = (
                f"{busy} ({got}), which holds the lock {path!r}: one query runs per "
                "checkpoint and one writes each folder; stop that query first, or use "
                "another checkpoint and other folders"
            )
            raise ValueError(msg)
        ownership.fds.append(got)
    return ownership


# ---------------------------------------------------------------------------- all together
def take_ownership(files: Files, checkpoint: str, outputs: Sequence[Output]) -> Ownership:
    """Check and claim the output folders of the query of ``checkpoint`` before it starts:
    every folder is checked first (a folder of another query, or holding files of no query:
    a ``ValueError`` naming both, and nothing is written), then the locks are taken (local
    file systems), then the query's token is created if new and each folder it does not own
    yet gets its owner record (an exclusive create: of two queries claiming one folder, the
    second is refused). The returned :class:`Ownership` holds the locks until
    :meth:`Ownership.release`."""
    identity = read_query_identity(files, checkpoint) if outputs else None
    committed = committed_batches(files, checkpoint) if outputs else set()
    actions = [(o, _decide(files, o, identity, checkpoint, committed)) for o in outputs]
    ownership = _take_locks(files, checkpoint, outputs)
    created: list[str] = []
    try:
        if not (outputs or files.reaches(checkpoint)):
            return ownership  # Spark Connect, a remote checkpoint and tables only
        token = query_token(files, checkpoint)
        resolved = display_path(resolve_path(checkpoint))
        for output, action in actions:
            if action == "ours":
                continue
            record = OwnerRecord(token, resolved, output.name, _now())
            path = join(output.folder, OWNER_FILE)
            if files.create_exclusive(path, record.to_json()):
                created.append(path)
                continue
            # another query claimed it since it was checked: ours only with our token
            now = read_query_identity(files, checkpoint)
            if _decide(files, output, now, checkpoint, committed) != "ours":
                msg = (
                    f"{output.described()}: its owner record {path!r} changed while this "
                    "query started: start it again"
                )
                raise ValueError(msg)
    except BaseException:
        for path in created:
            files.remove(path)
        ownership.release()
        raise
    return ownership
