"""Keys on Spark: key groups, Spark's grouping equality, and a key's rows in a group's table.

Both runtimes hand Python one *key group* at a time (Flink's key groups): the rows whose keys
hash to the same group, ``pmod(hash(key columns), groups)``. A group's table is split into its
keys here, with Spark's grouping equality (nulls equal, NaNs equal, ``-0.0 == 0.0``), and each
key is then replayed on its own, so the results never depend on how keys were grouped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from windowing.spark.columns.output import col
from windowing.spark.columns.schema import arrow_to_python

__all__ = [
    "KEY_GROUP",
    "NAN_KEY",
    "KeySegments",
    "group_codes",
    "key_group",
    "key_segments",
    "key_value",
    "keys_at",
    "state_key",
]

#: The key group column: Spark's grouping column of both runtimes.
KEY_GROUP = "__pw_kg"


def key_group(keys: Sequence[str], groups: int) -> Column:
    """The key group of each row: Spark's hash of its key modulo ``groups`` (``0`` without
    keys). Spark's hash gives the rows its grouping puts together one value (it hashes
    ``-0.0`` as ``0.0`` and every NaN alike), so one key stays in one group."""
    if not keys:
        return F.lit(0)
    return F.pmod(F.hash(*[col(k) for k in keys]), F.lit(groups))


@dataclass(frozen=True)
class _NaNKey:
    """A float NaN in a key, as a dictionary key (NaN is not equal to itself; Spark groups
    all NaNs together)."""


NAN_KEY = _NaNKey()


def state_key(value: Any) -> Any:
    """``value`` (a key as functions see it) as a dictionary key with Spark's grouping
    equality: NaNs equal, ``-0.0 == 0.0``, lists and rows as tuples."""
    if isinstance(value, float):
        return NAN_KEY if value != value else value  # -0.0 == 0.0 as dictionary keys
    if isinstance(value, tuple | list):  # a Row is a tuple
        return tuple(state_key(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((repr(k), state_key(v)) for k, v in value.items()))
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def key_value(values: Sequence[Any]) -> Any:
    """The key as functions see it from its column values: the value of the one key column, a
    tuple for several, ``None`` without key columns. Spark groups ``-0.0`` with ``0.0``: the
    key is ``0.0`` whichever row comes first."""
    if not values:
        return None
    values = [v + 0.0 if type(v) is float else v for v in values]
    return values[0] if len(values) == 1 else tuple(values)


def keys_at(
    data: pa.Table | pa.RecordBatch, names: Sequence[str], rows: Sequence[int]
) -> tuple[list[Any], list[Any]]:
    """The keys (:func:`key_value`) and state keys (:func:`state_key`) of ``rows`` of
    ``data``, from its key columns ``names``."""
    take = pa.array(rows, pa.int64())
    columns = [arrow_to_python(data.column(k).take(take)) for k in names]
    keys = [key_value([c[j] for c in columns]) for j in range(len(take))]
    return keys, [state_key(k) for k in keys]


def group_codes(table: pa.Table, keys: Sequence[str]) -> np.ndarray[Any, Any]:
    """For each row of ``table``, a dense code of its key (the values of ``keys``) with
    Spark's grouping equality (nulls equal, NaNs equal, ``-0.0 == 0.0``); all ``0`` without
    keys."""
    codes: np.ndarray[Any, Any] | None = None
    for k in keys:
        column = table.column(k).combine_chunks()
        if pa.types.is_floating(column.type):
            column = pc.add(column, pa.scalar(0.0, column.type))  # -0.0 + 0.0 == 0.0
        try:
            encoded = pc.dictionary_encode(column, null_encoding="encode")
        except pa.ArrowNotImplementedError:  # e.g. a struct or list column
            found: dict[Any, int] = {}
            columns = [arrow_to_python(table.column(name)) for name in keys]
            values = zip(*columns, strict=True)
            return np.fromiter(
                (found.setdefault(state_key(v), len(found)) for v in values),
                np.int64,
                table.num_rows,
            )
        indices = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        if codes is None:
            codes = indices
        else:
            _, codes = np.unique(codes * len(encoded.dictionary) + indices, return_inverse=True)
    return np.zeros(table.num_rows, np.int64) if codes is None else codes


@dataclass(frozen=True)
class KeySegments:
    """A group's table sorted by key (then by the sort keys given), and where each key's rows
    start: key ``i`` holds rows ``starts[i]`` to ``starts[i + 1]``."""

    table: pa.Table
    codes: np.ndarray[Any, Any]  # the key code of each (sorted) row
    starts: list[int]  # the first row of each key, then the number of rows

    def __len__(self) -> int:
        return len(self.starts) - 1


def key_segments(
    table: pa.Table, keys: Sequence[str], order: Sequence[tuple[str, str, str]] = ()
) -> KeySegments:
    """``table`` sorted by key and then by the pyarrow sort keys ``order`` (nulls last; stable
    otherwise), split into keys."""
    n = table.num_rows
    codes = group_codes(table, keys)
    if n > 1:
        if order:
            ordered = table.select([name for name, _, _ in order]).append_column(
                "__pw_code", pa.array(codes)
            )
            sort_keys = [("__pw_code", "ascending", "at_end"), *order]
            perm = pc.sort_indices(ordered, sort_keys=sort_keys).to_numpy()
        else:
            perm = np.argsort(codes, kind="stable")
        if not bool((perm[1:] > perm[:-1]).all()):
            table = table.take(perm)
            codes = codes[perm]
    cuts = np.flatnonzero(codes[1:] != codes[:-1]) + 1 if n > 1 else np.empty(0, np.int64)
    starts = [0, *cuts.tolist(), n] if n else [0]
    return KeySegments(table, codes, starts)
