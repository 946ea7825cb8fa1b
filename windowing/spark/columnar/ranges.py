"""Numpy kernels over keyed, sorted arrays for the columnar window paths
(:mod:`windowing.spark.columnar.hopping`, :mod:`windowing.spark.columnar.sessions`).

Keys are integer codes. An array "sorted by (code, value)" holds each key's entries
contiguously and ascending by value; the keys themselves may come in any order
(:func:`by_code` puts them in ascending order). Nothing here depends on Spark.

Examples
--------
>>> import numpy as np
>>> codes = np.array([0, 0, 1, 1])
>>> starts = np.array([10, 20, 5, 30])
>>> keyed_search(codes, starts, np.array([0, 1]), np.array([15, 31]), "left").tolist()
[1, 4]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "Picker",
    "by_code",
    "keyed_search",
    "range_pick",
    "range_reduce",
    "runs",
    "window_count_of",
    "window_ranges",
    "window_starts_of",
]

_Array = np.ndarray[Any, Any]
#: ``better(a, b)``: where the entry ``b`` comes strictly before ``a`` in a strict total order
#: (index arrays of equal length).
Picker = Callable[[_Array, _Array], _Array]

# Keyed searches map (code, value) to one int64; the keys' value spans must fit together.
_SPAN_LIMIT = float(2**62)


def by_code(codes: _Array | None) -> _Array | None:
    """The stable permutation that sorts ``codes`` ascending, ``None`` when it is sorted
    already (or there are no codes)."""
    if codes is None or len(codes) < 2 or bool((codes[1:] >= codes[:-1]).all()):
        return None
    return np.argsort(codes, kind="stable")


def runs(codes: _Array | None, values: _Array, breaks: _Array | None = None) -> _Array:
    """The first index of each run of equal ``codes`` (then ``breaks[i - 1]`` True starts a
    run at ``i``), for arrays grouped by code."""
    n = len(values)
    if n == 0:
        return np.empty(0, np.int64)
    cut = np.zeros(n - 1, np.bool_) if breaks is None else breaks.copy()
    if codes is not None:
        cut |= codes[1:] != codes[:-1]
    return np.flatnonzero(np.concatenate(([True], cut)))


def keyed_search(
    codes_a: _Array | None,
    a: _Array,
    codes_q: _Array | None,
    q: _Array,
    side: str,
) -> _Array | None:
    """``np.searchsorted`` on (code, value) pairs: for each query ``(codes_q[i], q[i])`` the
    position in ``a`` (sorted by code, then value, codes ascending) where it would go.
    ``None`` when the keys' value spans are too wide to map to one int64 (values spread over
    most of the time line)."""
    if len(q) == 0:
        return np.empty(0, np.int64)
    if codes_a is None or codes_q is None or _one_code(codes_a, codes_q):
        return np.searchsorted(a, q, side=side)  # type: ignore[call-overload,no-any-return]
    k = int(max(codes_a.max(initial=0), codes_q.max(initial=0))) + 1
    lo = np.full(k, np.iinfo(np.int64).max, np.int64)
    hi = np.full(k, np.iinfo(np.int64).min, np.int64)
    for codes, values in ((codes_a, a), (codes_q, q)):
        if len(values):
            np.minimum.at(lo, codes, values)
            np.maximum.at(hi, codes, values)
    present = lo <= hi
    spans = np.where(present, hi.astype(np.float64) - lo.astype(np.float64) + 1.0, 0.0)
    if float(spans.sum()) >= _SPAN_LIMIT:
        return None
    width = np.where(present, hi - np.where(present, lo, 0) + 1, 0)
    base = np.concatenate(([0], np.cumsum(width)[:-1]))
    lo = np.where(present, lo, 0)
    ka = base[codes_a] + (a - lo[codes_a])  # each term below 2**62: no overflow
    kq = base[codes_q] + (q - lo[codes_q])
    return np.searchsorted(ka, kq, side=side)  # type: ignore[call-overload,no-any-return]


def _one_code(codes_a: _Array, codes_q: _Array) -> bool:
    """Whether every entry and query has the same code."""
    code = codes_q[0]
    return bool((codes_q == code).all() and (codes_a == code).all())


def _levels(lo: _Array, hi: _Array) -> _Array:
    """``floor(log2(hi - lo))`` for non-empty ranges."""
    lengths = hi - lo
    k = np.floor(np.log2(np.maximum(lengths, 1))).astype(np.int64)
    k -= (np.left_shift(1, k) > lengths).astype(np.int64)  # rounding of log2 near powers
    k += (np.left_shift(1, k + 1) <= lengths).astype(np.int64)
    return k  # type: ignore[no-any-return]


def range_pick(n: int, better: Picker, lo: _Array, hi: _Array) -> _Array:
    """For each non-empty range ``[lo[i], hi[i])`` of ``0 .. n - 1``, the index that comes
    first in the strict total order ``better`` (a sparse table: ``n log(longest range)``
    comparisons to build, two per range)."""
    out = np.empty(len(lo), np.int64)
    if len(lo) == 0:
        return out
    levels = _levels(lo, hi)
    table = [np.arange(n, dtype=np.int64)]
    top = int(levels.max())
    for j in range(1, top + 1):
        prev, half = table[-1], 1 << (j - 1)
        m = n - (1 << j) + 1
        if m <= 0:
            break
        a, b = prev[:m], prev[half : half + m]
        table.append(np.where(better(a, b), b, a))
    for j in np.unique(levels).tolist():
        mask = levels == j
        a = table[j][lo[mask]]
        b = table[j][hi[mask] - (1 << j)]
        out[mask] = np.where(better(a, b), b, a)
    return out


def range_reduce(values: _Array, ufunc: np.ufunc, lo: _Array, hi: _Array) -> _Array:
    """``ufunc`` (an idempotent one: ``np.minimum`` / ``np.maximum``) over each non-empty
    range ``[lo[i], hi[i])`` of ``values``."""
    out = np.empty(len(lo), values.dtype)
    if len(lo) == 0:
        return out
    levels = _levels(lo, hi)
    table = [values]
    n = len(values)
    for j in range(1, int(levels.max()) + 1):
        prev, half = table[-1], 1 << (j - 1)
        m = n - (1 << j) + 1
        if m <= 0:
            break
        table.append(ufunc(prev[:m], prev[half : half + m]))
    for j in np.unique(levels).tolist():
        mask = levels == j
        out[mask] = ufunc(table[j][lo[mask]], table[j][hi[mask] - (1 << j)])
    return out


def window_starts_of(
    codes: _Array | None,
    first: _Array,
    last: _Array,
    slide: int,
) -> tuple[_Array, _Array]:
    """The union, per key, of the window starts ``first[i], first[i] + slide, ..., last[i]``
    (empty where ``first[i] > last[i]``), for entries sorted by code and with ``first`` and
    ``last`` non-decreasing within each key: ``(codes, starts)`` sorted by (code, start)."""
    keep = first <= last
    if not keep.all():
        first, last = first[keep], last[keep]
        codes = None if codes is None else codes[keep]
    found = _window_runs(codes, first, last, slide)
    return found[0], found[1]


def window_count_of(codes: _Array | None, first: _Array, last: _Array, slide: int) -> int:
    """How many windows :func:`window_starts_of` gives, without listing them."""
    keep = first <= last
    if not keep.all():
        first, last = first[keep], last[keep]
        codes = None if codes is None else codes[keep]
    n = len(first)
    if n == 0:
        return 0
    head = runs(codes, first, first[1:] > last[:-1] + slide)
    tail = np.append(head[1:], n) - 1
    return int(((last[tail] - first[head]) // slide + 1).sum())


def window_ranges(
    codes: _Array | None, first: _Array, last: _Array, slide: int
) -> tuple[_Array, _Array, _Array, _Array]:
    """:func:`window_starts_of` for entries that each hold at least one window
    (``first <= last``), with, per window, the range ``[lo, hi)`` of the entries whose
    windows include it (``lo``: the first entry whose last window is at or after it, ``hi``:
    the first entry whose first window is after it): ``(codes, starts, lo, hi)``, without a
    search (each window's range follows from where the entries' windows start and end)."""
    wcodes, starts, head, counts = _window_runs(codes, first, last, slide)
    n = len(first)
    if n == 0:
        return wcodes, starts, np.empty(0, np.int64), np.empty(0, np.int64)
    # each entry's first and last window, as positions in the output
    offsets = np.cumsum(counts) - counts
    run_of = np.repeat(np.arange(len(head)), np.diff(np.append(head, n)))
    base = offsets[run_of] - first[head][run_of] // slide
    begin = first // slide + base
    end = last // slide + base
    total = len(starts)
    lo = np.repeat(np.arange(n, dtype=np.int64), np.diff(np.concatenate(([-1], end))))
    hi = np.repeat(np.arange(1, n + 1, dtype=np.int64), np.diff(np.append(begin, total)))
    return wcodes, starts, lo, hi


def _window_runs(
    codes: _Array | None, first: _Array, last: _Array, slide: int
) -> tuple[_Array, _Array, _Array, _Array]:
    """The windows of entries each holding one (see :func:`window_ranges`), and where the
    runs of overlapping entries start and how many windows each run has."""
    n = len(first)
    if n == 0:
        empty = np.empty(0, np.int64)
        return empty, empty, empty, empty
    # a new run where the key changes or the entry's first window is past the run's last
    head = runs(codes, first, first[1:] > last[:-1] + slide)
    tail = np.append(head[1:], n) - 1
    run_first, run_last = first[head], last[tail]
    counts = (run_last - run_first) // slide + 1
    total = int(counts.sum())
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    starts = np.repeat(run_first, counts) + within * slide
    run_codes = np.zeros(len(head), np.int64) if codes is None else codes[head]
    return np.repeat(run_codes, counts), starts, head, counts
