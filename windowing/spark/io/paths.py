"""The folders of a streaming query compared before it starts: its outputs, its checkpoint
and the folders its file sources read, each resolved to the folder it really is.

Local paths (no scheme, or ``file:``) are resolved by the operating system's rules:
``os.path.realpath`` follows symbolic links and ``..`` steps (a path that does not exist yet
resolves through its longest existing parent). Paths of other schemes (``s3a://``,
``hdfs://``, ...) are compared as normalized strings (``.`` and ``..`` steps and repeated or
trailing slashes removed): symbolic links of those file systems are not followed (Hadoop's
``FileSystem.resolvePath`` would need the path to exist and a round trip per path).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "check_input_folders",
    "check_sink_paths",
    "display_path",
    "glob_root",
    "input_folders",
    "resolve_path",
]

_GLOB = re.compile(r"[*?\[{]")


def resolve_path(path: str) -> str:
    """The folder ``path`` names, as a URI to compare: a local path (``file:`` URIs
    included) made absolute with its symbolic links and ``..`` steps resolved
    (``file:///real/folder``), a URI of another scheme normalized
    (``s3a://bucket/folder``)."""
    scheme, sep, rest = path.partition("://")
    if not sep:
        scheme, rest = ("file", path[len("file:") :]) if path.startswith("file:") else ("", path)
    if scheme in ("", "file"):
        return "file://" + os.path.realpath(rest)
    authority, _, steps = rest.partition("/")
    return f"{scheme}://{authority}{posixpath.normpath('/' + steps.lstrip('/'))}"


def display_path(resolved: str) -> str:
    """A resolved path as a user writes it: the local path without ``file://``."""
    return resolved[len("file://") :] if resolved.startswith("file://") else resolved


def glob_root(path: str) -> str:
    """The folder a file source's ``path`` reads under: the path up to its first step with
    a glob character (``/in/*/x.json`` -> ``/in``), or the path itself."""
    scheme, sep, rest = path.partition("://")
    prefix, body = (scheme + sep, rest) if sep else ("", path)
    steps = body.split("/")
    for i, step in enumerate(steps):
        if _GLOB.search(step):
            root = "/".join(steps[:i]) or ("/" if body.startswith("/") else ".")
            return prefix + root
    return path


def _inside(inner: str, outer: str) -> bool:
    return inner.startswith(outer.rstrip("/") + "/")


@dataclass(frozen=True)
class _Folder:
    """One named folder: the parameter, the path as given, the path resolved."""

    name: str
    path: str
    resolved: str

    def described(self) -> str:
        return f"{self.name}={self.path!r}"

    def resolution(self, other: _Folder) -> str:
        """`` (both are '/real')`` when a given path differs from what it resolves to."""
        shown = display_path(self.resolved)
        if self.path.rstrip("/") == shown and other.path.rstrip("/") == shown:
            return ""
        return f" (both are {shown!r})"


def _folders(paths: Mapping[str, str | None]) -> list[_Folder]:
    found = []
    for name, path in paths.items():
        if path is None:
            continue
        if not isinstance(path, str) or not path.strip():
            msg = f"{name} must be a non-empty path, got {path!r}"
            raise ValueError(msg)
        found.append(_Folder(name, path, resolve_path(path)))
    return found


def check_sink_paths(paths: Mapping[str, str | None], inputs: Sequence[str] = ()) -> None:
    """Raise a ``ValueError`` naming the two parameters when two of ``paths`` (parameter ->
    path or URI; ``None`` is skipped) are the same folder or one lies inside the other: one
    output would overwrite or be read as part of the other. Paths are compared resolved
    (symbolic links and ``..`` of local paths followed: see :func:`resolve_path`).

    ``inputs``: the folders the query's file sources read (:func:`input_folders`), checked
    against ``paths`` by :func:`check_input_folders`."""
    seen: list[_Folder] = []
    for folder in _folders(paths):
        for other in seen:
            if folder.resolved == other.resolved:
                msg = (
                    f"{folder.described()} is the same folder as {other.described()}"
                    f"{folder.resolution(other)}"
                )
                raise ValueError(msg)
            if _inside(folder.resolved, other.resolved) or _inside(other.resolved, folder.resolved):
                inner, outer = (
                    (folder, other) if _inside(folder.resolved, other.resolved) else (other, folder)
                )
                msg = (
                    f"{inner.described()} lies inside {outer.described()}: each output needs a "
                    "folder of its own"
                )
                raise ValueError(msg)
        seen.append(folder)
    check_input_folders(paths, inputs)


def check_input_folders(paths: Mapping[str, str | None], inputs: Iterable[str]) -> None:
    """Raise a ``ValueError`` naming both when one of ``paths`` (outputs and checkpoint) is
    an input folder of the query (``inputs``: paths or glob patterns of its file sources),
    lies inside one, or holds one: the query would read what it writes."""
    folders = _folders(paths)
    for given in inputs:
        source = resolve_path(glob_root(given))
        shown = repr(display_path(source))
        for folder in folders:
            if folder.resolved == source:
                msg = (
                    f"{folder.described()} is the query's input folder {shown}: the query "
                    "would read what it writes; write to a folder outside its input"
                )
            elif _inside(folder.resolved, source):
                msg = (
                    f"{folder.described()} lies inside the query's input folder {shown}: the "
                    "query would read what it writes; write to a folder outside its input"
                )
            elif _inside(source, folder.resolved):
                msg = (
                    f"the query's input folder {shown} lies inside {folder.described()}: the "
                    "query would read what it writes; write to a folder outside its input"
                )
            else:
                continue
            raise ValueError(msg)


def input_folders(df: Any) -> list[str]:
    """The paths (or glob patterns) the file sources of the streaming DataFrame ``df`` read:
    the ``path`` option and the paths of each ``StreamingRelation`` leaf of its logical
    plan (classic PySpark; sources without paths, such as rate, Kafka or memory, add none).
    Under Spark Connect (no JVM plan on the client) none are found."""
    jdf = getattr(df, "_jdf", None)
    jvm = getattr(getattr(df, "sparkSession", None), "_jvm", None)
    if jdf is None or jvm is None:
        return []
    scala = jvm.scala.jdk.javaapi.CollectionConverters
    found: list[str] = []
    for leaf in scala.asJava(jdf.queryExecution().logical().collectLeaves()):
        if leaf.getClass().getSimpleName() != "StreamingRelation":
            continue
        source = leaf.dataSource()
        option = source.options().get("path")
        if option.isDefined():
            found.append(str(option.get()))
        found.extend(str(p) for p in scala.asJava(source.paths()))
    return list(dict.fromkeys(found))
