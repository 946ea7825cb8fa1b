"""The few file operations the streaming outputs and their checkpoint records need: local
paths (no scheme, or ``file:``) through ``os``, any other scheme through Hadoop's
``FileSystem`` of the session (classic PySpark only)."""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from typing import Any

from pyspark.sql import SparkSession

__all__ = ["Files", "committed_batches", "join"]


def join(path: str, name: str) -> str:
    """``name`` inside the folder ``path`` (a local path or a URI)."""
    return path.rstrip("/") + "/" + name


class Files:
    """File operations on local paths and on any scheme Hadoop reads (``spark`` is the
    session whose Hadoop configuration reaches them; ``None``: local paths only).

    Example::

        Files(spark).create_exclusive("/chk/windowing/query.json", "{...}")
    """

    def __init__(self, spark: SparkSession | None) -> None:
        self.spark = spark

    @staticmethod
    def local(path: str) -> str | None:
        """The local path of ``path`` (no scheme or ``file:``), else ``None``."""
        if "://" not in path:
            return path[len("file:") :] if path.startswith("file:") else path
        scheme, _, rest = path.partition("://")
        return ("/" + rest.lstrip("/")) if scheme == "file" else None

    def reaches(self, path: str) -> bool:
        """Whether ``path`` can be reached: a local path, or a session's Hadoop."""
        return self.local(path) is not None or getattr(self.spark, "_jvm", None) is not None

    def _hadoop(self, path: str) -> tuple[Any, Any, Any]:
        """``(FileSystem, Path, JVM)`` of ``path``."""
        spark = self.spark
        jvm = getattr(spark, "_jvm", None) if spark is not None else None
        if spark is None or jvm is None:
            msg = (
                f"{path!r}: a non-local path needs classic PySpark (Hadoop's FileSystem) to "
                "publish committed micro-batches and record a folder's owner; under Spark "
                "Connect use a local path or a TableSink"
            )
            raise ValueError(msg)
        jpath = jvm.org.apache.hadoop.fs.Path(path)
        conf = spark._jsc.hadoopConfiguration()
        return jpath.getFileSystem(conf), jpath, jvm

    def names(self, folder: str) -> list[str]:
        """The names in ``folder`` (none when it does not exist)."""
        local = self.local(folder)
        if local is not None:
            return os.listdir(local) if os.path.isdir(local) else []
        fs, jpath, _ = self._hadoop(folder)
        if not fs.exists(jpath):
            return []
        return [status.getPath().getName() for status in fs.listStatus(jpath)]

    def exists(self, path: str) -> bool:
        local = self.local(path)
        if local is not None:
            return os.path.exists(local)
        fs, jpath, _ = self._hadoop(path)
        return bool(fs.exists(jpath))

    def mkdirs(self, folder: str) -> None:
        """Create ``folder`` and its missing parents."""
        local = self.local(folder)
        if local is not None:
            os.makedirs(local, exist_ok=True)
            return
        fs, jpath, _ = self._hadoop(folder)
        fs.mkdirs(jpath)

    def read_text(self, path: str) -> str | None:
        """The text of the file ``path`` (UTF-8), ``None`` when it does not exist."""
        local = self.local(path)
        if local is not None:
            try:
                with open(local, encoding="utf-8") as f:
                    return f.read()
            except FileNotFoundError:
                return None
        fs, jpath, jvm = self._hadoop(path)
        if not fs.exists(jpath):
            return None
        stream = fs.open(jpath)
        try:
            return str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def create_exclusive(self, path: str, text: str) -> bool:
        """Create the file ``path`` holding ``text`` unless a file is there already (its
        folder is created if missing): ``True`` if this call created it, ``False`` if it
        existed. Locally the file appears whole (written aside, then linked into place,
        which fails if the name exists); through Hadoop it is ``create(path,
        overwrite=false)``, whose atomicity is the file system's."""
        local = self.local(path)
        if local is not None:
            folder, name = os.path.split(local)
            os.makedirs(folder or ".", exist_ok=True)
            aside = os.path.join(folder, f"{name}.{uuid.uuid4().hex}.tmp")
            with open(aside, "x", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(aside, local)
            except FileExistsError:
                return False
            except OSError:  # a file system without hard links: an exclusive create
                return _create_exclusive_in_place(local, text)
            finally:
                os.unlink(aside)
            return True
        fs, jpath, _ = self._hadoop(path)
        fs.mkdirs(jpath.getParent())
        try:
            out = fs.create(jpath, False)
        except Exception:
            if fs.exists(jpath):
                return False
            raise
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()
        return True

    def write_text(self, path: str, text: str) -> None:
        """Write the file ``path`` (its folder created if missing), replacing it whole:
        written aside, then renamed over it (locally one atomic rename; through Hadoop a
        delete and a rename)."""
        aside = f"{path}.{uuid.uuid4().hex}.tmp"
        local, local_aside = self.local(path), self.local(aside)
        if local is not None and local_aside is not None:
            os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
            with open(local_aside, "x", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(local_aside, local)
            return
        if not self.create_exclusive(aside, text):
            msg = f"{aside!r} exists: another process is writing {path!r}"
            raise ValueError(msg)
        fs, jaside, _ = self._hadoop(aside)
        _, jpath, _ = self._hadoop(path)
        fs.delete(jpath, False)
        fs.rename(jaside, jpath)

    def remove(self, path: str) -> None:
        """Delete the file ``path`` (nothing if it is gone)."""
        local = self.local(path)
        if local is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(local)
            return
        fs, jpath, _ = self._hadoop(path)
        fs.delete(jpath, False)

    def replace(self, source: str, target: str) -> None:
        """Move the folder ``source`` to ``target`` (one rename; a folder already at
        ``target`` is removed first). Nothing happens when ``source`` is gone (moved by
        another publisher).

        Removing ``target`` destroys no one else's data: the caller owns the folder both
        live in (:mod:`windowing.spark.io.ownership` refuses a query another query's folder
        before it starts), so a ``target`` already there is a micro-batch of this same
        query: one whose earlier publication was interrupted (on an object store the
        rename is a copy, which can stop midway) or one the checkpoint ran again after a
        failure, whose staged attempt is the one the commit log vouches for."""
        local_source, local_target = self.local(source), self.local(target)
        if local_source is not None and local_target is not None:
            if not os.path.isdir(local_source):
                return
            if os.path.isdir(local_target):
                shutil.rmtree(local_target)
            with contextlib.suppress(FileNotFoundError):  # published meanwhile
                os.rename(local_source, local_target)
            return
        fs, jsource, _ = self._hadoop(source)
        if not fs.exists(jsource):
            return
        _, jtarget, _ = self._hadoop(target)
        if fs.exists(jtarget):
            fs.delete(jtarget, True)
        fs.rename(jsource, jtarget)


def _create_exclusive_in_place(path: str, text: str) -> bool:
    try:
        with open(path, "x", encoding="utf-8") as f:
            f.write(text)
    except FileExistsError:
        return False
    return True


def committed_batches(files: Files, checkpoint: str) -> set[int]:
    """The micro-batches in the checkpoint's commit log."""
    return {int(n) for n in files.names(join(checkpoint, "commits")) if n.isdigit()}
