"""Native Spark plans for hopping event-time windows (``WindowedStream.agg``), in event-time
order: no row is copied per window.

Spark's own ``window(ts, size, slide)`` copies every row into its ``size / slide`` windows.
Here rows are aggregated once, into panes of ``g = gcd(size, slide)`` (partial aggregates
per key and pane); a window is ``n = size / g`` consecutive panes and windows start every
``m = slide / g`` panes. Two cases:

* ``size <= slide``: windows do not overlap, a row is in at most one of them (the others are
  between windows: ``num_records_in_no_window``), so ``groupBy(keys, window start)``, with
  Spark's own aggregates, as for tumbling windows.
* ``size > slide``: the pane axis is cut into blocks of ``n`` panes. A window starting at
  pane ``a`` of block ``b`` is the *suffix* of block ``b`` from ``a`` and the *prefix* of
  block ``b + 1`` up to ``a + n - 1`` (van Herk / Gil-Werman), so any aggregate whose
  partials merge (sum, count, avg's parts, min, max, picks by order, boolean and / or) needs
  only running aggregates, which Spark's window functions compute in O(1) a row::

      rows ──► panes: groupBy(keys, block, pane).agg(partials)
           ──► per (keys, block), panes in descending order: suffix aggregates (running)
           ──► events per pane, by the block of the window starts they concern: its suffix
               takes over after the previous pane of its block leaves; it leaves after
               itself; it enters the windows of the previous block at pane - n + 1
           ──► per (keys, block) in order: the current suffix (the last one still inside)
               and the prefix (running aggregate of the entered panes): between two events
               every window has the same contents (a *run*)
           ──► each non-empty run generates its window starts (sequence + explode: the
               output, the one cost that grows with size / slide)

  Spark sorts panes and events (at most three per pane), never windows: the cost is
  O(rows + panes + output windows).

Windows at the ends of time follow the assigner: a start below ``MIN_TIMESTAMP`` is null, an
end past ``MAX_TIMESTAMP`` is clamped (null), and the window ending at ``MIN_TIMESTAMP + 1``
(behind the first watermark) is late without allowed lateness, and with it fires once per
row (:func:`~windowing.spark.native.parts.firings_at_min`). Positions are (block, pane in block)
pairs, so nothing overflows near the ends of time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.types import DataType, DecimalType, LongType

from windowing.assigners.hopping import HoppingEventTimeWindows
from windowing.functions.columns import AggKind
from windowing.job import Job
from windowing.spark.columns.aggregates import AggregateCall, CompiledAggregates
from windowing.spark.columns.inputs import TS
from windowing.spark.columns.output import REASON_LATE, REASON_NULL_EVENT_TIME, OutputLayout, col
from windowing.spark.columns.sql import int_sql
from windowing.spark.native.parts import (
    NativeParts,
    NativeRest,
    firings_at_min,
    grouped_aggregates,
    input_counters,
    late_counter,
    long_literal,
    pick,
)
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP

__all__ = [
    "HB",
    "HBX",
    "HEB",
    "HEND",
    "HER",
    "HFIRST",
    "HIN",
    "HNEXT",
    "HPROBE",
    "HR",
    "HRX",
    "HSTART",
    "HoppingGrid",
    "Partials",
    "disjoint_parts",
    "exact_running_sums",
    "hopping_parts",
    "invertible",
    "sweep",
]

# Internal columns (the reserved prefix), shared with the arrival-order plan
# (native_hopping_arrival.py).
HB, HR = "__pw_hb", "__pw_hr"  # block, pane in block
_PREV, _LASTP = "__pw_hprev", "__pw_hlast"
_EV, HEB, HER, _S = "__pw_hev", "__pw_heb", "__pw_her", "__pw_hs"
HNEXT, HSTART, HEND, _W = "__pw_hnext", "__pw_hstart", "__pw_hend", "__pw_hw"
HIN, HFIRST, HPROBE = "__pw_hin", "__pw_hfirst", "__pw_hprobe"
HBX, HRX = "__pw_hbx", "__pw_hrx"  # the pane a group enters from (arrival order)


@dataclass(frozen=True)
class HoppingGrid:
    """A hopping assigner's windows as panes: ``g = gcd(size, slide)``, windows of ``n``
    panes every ``m`` panes, blocks of ``n`` panes; the pane grid starts at ``o_g = offset mod
    g``; plan-time constants only.

    Examples
    --------
    >>> grid = HoppingGrid.of(HoppingEventTimeWindows(10, 4, 1))
    >>> grid.g, grid.n, grid.m, grid.o_g
    (2, 5, 2, 1)
    """

    size: int
    slide: int
    offset: int
    g: int
    n: int
    m: int
    o_g: int

    @classmethod
    def of(cls, assigner: HoppingEventTimeWindows) -> HoppingGrid:
        size, slide, offset = assigner.size, assigner.slide, assigner.offset
        g = math.gcd(size, slide)
        return cls(size, slide, offset, g, size // g, slide // g, offset % g)

    @property
    def min_window_start(self) -> int | None:
        """The start of the window ending at ``MIN_TIMESTAMP + 1`` (its only valid time is
        ``MIN_TIMESTAMP``), or ``None`` when no window ends there."""
        start = MIN_TIMESTAMP + 1 - self.size
        return start if (start - self.offset) % self.slide == 0 else None

    def block_and_pane(self, ts: str) -> tuple[str, str]:
        """SQL text: block ``floor((ts - o_g) / size)`` and pane in block ``floor(((ts -
        o_g) mod size) / g)`` of the event times ``ts`` (SQL text), without overflow."""
        size, o_g, ts = int_sql(self.size), int_sql(self.o_g), f"({ts})"
        rem = f"pmod({ts}, {size})"  # ts = size * q + rem
        q = f"div({ts}, {size}) - CASE WHEN {ts} % {size} < 0 THEN 1 ELSE 0 END"
        block = f"({q} - CASE WHEN {rem} < {o_g} THEN 1 ELSE 0 END)"
        pane = f"div(pmod({rem} - {o_g}, {size}), {int_sql(self.g)})"
        return block, pane

    def first_start(self, block: str, pane: str) -> str:
        """SQL text: the first window start at or after ``pane`` of ``block`` (as a pane of
        the block, possibly ``n`` or more: then in a later block); window starts are every
        ``m`` panes, at pane ``c`` modulo ``m`` (``offset = o_g + c * g``)."""
        m, block, pane = self.m, f"({block})", f"({pane})"
        if m == 1:
            return pane
        c = (self.offset - self.o_g) // self.g
        ms = int_sql(m)
        if m < 2**31:  # (block mod m) * (n mod m) fits a long
            at = f"pmod({int_sql(c % m)} - pmod({block}, {ms}) * {int_sql(self.n % m)}, {ms})"
        else:
            exact = (
                f"CAST({int_sql(c)} AS DECIMAL(38,0)) - CAST({block} AS DECIMAL(38,0)) "
                f"* CAST({int_sql(self.n)} AS DECIMAL(38,0))"
            )
            at = f"CAST(pmod({exact}, CAST({ms} AS DECIMAL(38,0))) AS BIGINT)"
        # `at`: the first window start of the block (at - pmod(pane, m) fits a long where
        # at - pane would not, for a pane below 0 and huge n and m)
        return f"({pane} + pmod({at} - pmod({pane}, {ms}), {ms}))"

    def starts_of(self, block: str, pane: str, last: str | None = None) -> str:
        """SQL text: the starts (panes of ``block``, every ``m``) of the windows holding
        pane ``pane`` of ``block``: from pane ``pane - n + 1`` up to ``last`` (default
        ``pane``); null when there are none."""
        last = f"({pane})" if last is None else f"({last})"
        first = self.first_start(block, f"({pane}) - {int_sql(self.n - 1)}")
        return f"CASE WHEN {first} <= {last} THEN {self.starts_between(first, last)} END"

    def bounds(self, block: str, pane: str) -> tuple[str, str]:
        """SQL text: start and end (ms) of the window starting at ``pane`` of ``block``: null
        below ``MIN_TIMESTAMP`` / past ``MAX_TIMESTAMP`` (an end clamped at the end of
        time)."""
        size, g, o_g, block, pane = self.size, self.g, self.o_g, f"({block})", f"({pane})"
        lo = -((MIN_TIMESTAMP + size) // -size)  # from here to hi, longs do not overflow
        hi = (MAX_TIMESTAMP - 3 * size) // size
        safe = f"{block} BETWEEN {int_sql(lo)} AND {int_sql(hi)}" if lo <= hi else "false"
        offset = f"{pane} * {int_sql(g)} + {int_sql(o_g)}"
        start = f"{block} * {int_sql(size)} + ({offset})"
        exact = (
            f"CAST({block} AS DECIMAL(20,0)) * CAST({int_sql(size)} AS DECIMAL(20,0)) "
            f"+ CAST({offset} AS DECIMAL(20,0))"
        )
        end_exact = f"{exact} + CAST({int_sql(size)} AS DECIMAL(20,0))"
        window_start = (
            f"CASE WHEN {safe} THEN {start} WHEN {exact} >= "
            f"CAST({int_sql(MIN_TIMESTAMP)} AS DECIMAL(20,0)) THEN CAST({exact} AS BIGINT) END"
        )
        window_end = (
            f"CASE WHEN {safe} THEN {start} + {int_sql(size)} WHEN {end_exact} <= "
            f"CAST({int_sql(MAX_TIMESTAMP)} AS DECIMAL(20,0)) THEN CAST({end_exact} AS BIGINT) "
            "END"
        )
        return window_start, window_end

    def window_starts(self, first: str, end: str) -> str:
        """SQL text: every window start from pane ``first`` (a window start) to before pane
        ``end``, one per row (``explode``)."""
        return f"explode({self.starts_between(first, f'({end}) - 1')})"

    def normalized(self, block: str, pane: str) -> tuple[str, str]:
        """SQL text: ``pane`` of ``block`` (``-n < pane < 2n``) as a block and a pane in
        it."""
        n, block, pane = int_sql(self.n), f"({block})", f"({pane})"
        shift = f"CASE WHEN {pane} >= {n} THEN 1 WHEN {pane} < 0 THEN -1 ELSE 0 END"
        return f"({block} + {shift})", f"({pane} - {shift} * {n})"

    def starts_between(self, first: str, last: str) -> str:
        """SQL text: the panes from ``first`` to ``last`` (SQL text), every ``m``."""
        return f"sequence({first}, {last}, CAST({int_sql(self.m)} AS BIGINT))"

    def position(self, start: int) -> tuple[int, int]:
        """The (block, pane in block) of the window starting at ``start`` (ms)."""
        pane = (start - self.o_g) // self.g
        return pane // self.n, pane % self.n


def invertible(calls: Sequence[AggregateCall]) -> bool:
    """Whether every aggregate's partials can be subtracted again (a count, an exact sum):
    the arrival-order plan of hopping windows needs it
    (:mod:`windowing.spark.native.hopping_arrival`)."""
    return all(_decompose(call, lambda i: DataType()).invertible for call in calls)


#: The widest decimal's digits: a sum of ``decimal(p, s)`` is ``decimal(min(p + 10, 38), s)``,
#: an average ``decimal(min(p + 4, 38), s + 4)``.
_WIDEST = 38


def exact_running_sums(calls: Sequence[AggregateCall], ansi: bool) -> bool:
    """Whether running sums of pane partials give each window's exact result: not for a
    decimal ``sum`` / ``avg`` whose partial sums are ``decimal(38, s)`` without ANSI (an
    overflowed pane or running sum is null there, which later sums would skip or keep,
    where the window operator sums exactly and fits the result)."""
    if ansi:
        return True  # an overflow raises
    for call in calls:
        dtype = call.dtype
        if isinstance(dtype, DecimalType) and (
            (call.kind is AggKind.SUM and dtype.precision == _WIDEST)
            or (call.kind is AggKind.AVG and dtype.precision >= _WIDEST - 6)
        ):
            return False
    return True


def hopping_parts(
    job: Job,
    prepared: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    layout: OutputLayout,
) -> NativeParts:
    """The native plan's pieces for hopping windows longer than their slide in event-time
    order, from pane partials (its late branches include the firings of the window at the
    start of time)."""
    grid = _grid(job)
    assert grid.size > grid.slide
    return _overlapping(grid, job, prepared, keys, compiled, layout)


def disjoint_parts(
    job: Job,
    prepared: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    layout: OutputLayout,
) -> NativeParts:
    """The native plan's pieces for hopping windows no longer than their slide in event-time
    order: a row is in at most one window."""
    grid = _grid(job)
    assert grid.size <= grid.slide
    return _disjoint(grid, job, prepared, keys, compiled, layout)


def _grid(job: Job) -> HoppingGrid:
    assigner = job.config.assigner
    assert isinstance(assigner, HoppingEventTimeWindows)
    return HoppingGrid.of(assigner)


def _firings(
    grid: HoppingGrid,
    job: Job,
    rows: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    layout: OutputLayout,
) -> list[DataFrame]:
    """With allowed lateness, the window ending at ``MIN_TIMESTAMP + 1`` fires once per row
    at ``MIN_TIMESTAMP``; no branches otherwise."""
    start = grid.min_window_start
    if start is None or job.config.allowed_lateness == 0:
        return []
    at_min = rows.where(F.col(TS) == F.lit(MIN_TIMESTAMP))
    return firings_at_min(at_min, keys, compiled, layout, start if start >= MIN_TIMESTAMP else None)


def _disjoint(
    grid: HoppingGrid,
    job: Job,
    prepared: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    layout: OutputLayout,
) -> NativeParts:
    """``size <= slide``: each row in at most one window, grouped as tumbling windows of
    the slide are, then cut to ``size``."""
    size, slide, offset = grid.size, grid.slide, grid.offset
    lateness = job.config.allowed_lateness
    ts = F.col(TS)
    # distance from the window start at or before ts: (ts - offset) mod slide, no overflow
    d = F.pmod(F.pmod(ts, F.lit(slide)) - F.lit(offset % slide), F.lit(slide))
    lowest = MIN_TIMESTAMP - (MIN_TIMESTAMP - offset) % slide  # the first start (<= MIN)
    min_window = grid.min_window_start is not None
    at_min = ts == F.lit(MIN_TIMESTAMP)
    between = d >= F.lit(size)  # in no window
    # Flink: a row added to no window is late when the row is (ts + lateness <= watermark,
    # MIN here, in Java's long arithmetic: it wraps at the end of time).
    row_late = (
        at_min if lateness == 0 else ts == F.lit(MAX_TIMESTAMP - lateness + 1)  # wraps to MIN
    )
    is_late = between & row_late
    if min_window and lateness == 0:
        is_late = is_late | at_min  # its only window is late
    no_window = between & ~row_late
    valid = prepared.where(ts.isNotNull())
    start = F.when(ts >= F.lit(MIN_TIMESTAMP) + d, ts - d).otherwise(F.lit(MIN_TIMESTAMP))
    added = valid.where(~between & (~at_min if min_window else F.lit(True)))
    grouped = grouped_aggregates(added, keys, start, _W, compiled)
    w = F.col(_W)
    end = (
        # (the window below the start of time, if one holds it: ending after MIN_TIMESTAMP)
        F.when(w == F.lit(MIN_TIMESTAMP), long_literal(max(lowest + size, MIN_TIMESTAMP)))
        .when(w > F.lit(MAX_TIMESTAMP - size), F.lit(None))
        .otherwise(w + F.lit(size))
    )
    window_start = w if lowest >= MIN_TIMESTAMP else F.when(w != F.lit(MIN_TIMESTAMP), w)
    counters = prepared.agg(
        *input_counters(layout),
        F.count(F.when(ts.isNotNull() & is_late, 1)).alias(late_counter(layout)),
        F.count(F.when(ts.isNotNull() & no_window, 1)).alias("num_records_in_no_window"),
    )
    late = _firings(grid, job, valid, keys, compiled, layout)
    late += _late_branches(prepared, layout, is_late)
    return NativeParts(grouped, window_start, end, F.lit(True), lambda: NativeRest(counters, late))


def _late_branches(prepared: DataFrame, layout: OutputLayout, is_late: Column) -> list[DataFrame]:
    """Rows without event time, and the late rows ``is_late`` (event-time order: no
    watermark yet), to the late side output."""
    if not layout.has_late:
        return []
    ts = F.col(TS)
    return [
        prepared.where(ts.isNull()).select(
            *layout.sql.late_branch(F.lit(None), REASON_NULL_EVENT_TIME)
        ),
        prepared.where(ts.isNotNull() & is_late).select(
            *layout.sql.late_branch(F.lit(None), REASON_LATE)
        ),
    ]


# -- aggregates as partials ---------------------------------------------------------------------
@dataclass(frozen=True)
class _Decomposed:
    """One aggregate column as partials per pane: ``rows`` aggregate a pane's rows,
    ``merge`` aggregates partials (running, over a window frame), ``pair`` merges two
    partials (null when absent) and ``result`` reads the final value; all by column.
    ``invertible``: the partials are sums that subtracting undoes exactly (counts, integer
    and decimal sums), so contents can be running sums of panes in minus panes out."""

    rows: list[Column]
    merge: Callable[[list[Column]], list[Column]]
    pair: Callable[[list[Column], list[Column]], list[Column]]
    result: Callable[[list[Column]], Column]
    invertible: bool = False


def _added(a: Column, b: Column) -> Column:
    return F.coalesce(a + b, a, b)


def _sums(p: list[Column]) -> list[Column]:
    return [F.sum(c) for c in p]


def _pairs(a: list[Column], b: list[Column]) -> list[Column]:
    return [_added(x, y) for x, y in zip(a, b, strict=True)]


def _decompose(call: AggregateCall, types: Callable[[int], DataType]) -> _Decomposed:
    """``call`` as partials (``types(i)``: the Spark type of its ``i``-th partial column,
    read from the pane plan: a merged sum is cast back to it, as Spark's own sum is)."""
    kind = call.kind
    assert kind is not None and not call.distinct and call.expression is not None
    x = call.args[0] if call.args else None
    exact = isinstance(call.dtype, LongType | DecimalType)
    if kind in (AggKind.COUNT, AggKind.COUNT_IF):
        return _Decomposed([call.expression], _sums, _pairs, lambda p: p[0], invertible=True)
    if kind is AggKind.SUM:
        assert x is not None

        def total(p: list[Column]) -> Column:
            return F.when(p[1] > F.lit(0), p[0].cast(call.dtype))

        return _Decomposed([call.expression, F.count(x)], _sums, _pairs, total, exact)
    if kind is AggKind.AVG:
        assert x is not None
        decimal = isinstance(call.dtype, DecimalType)

        def average(p: list[Column]) -> Column:
            total, count = p[0].cast(types(0)), p[1]
            if decimal:  # as Spark's avg: the sum divided by the count as decimal(20, 0)
                value = (total / count.cast("decimal(20,0)")).cast(call.dtype)
            else:
                value = total / count
            return F.when(count > F.lit(0), value)

        # Spark's avg sums integers and floats as doubles
        rows = [F.sum(x if decimal else x.cast("double")), F.count(x)]
        return _Decomposed(rows, _sums, _pairs, average, invertible=decimal)
    if kind in (AggKind.MIN, AggKind.MAX, AggKind.BOOL_AND, AggKind.BOOL_OR):
        smallest = kind in (AggKind.MIN, AggKind.BOOL_AND)
        merge = F.min if smallest else F.max
        pair = F.least if smallest else F.greatest
        return _Decomposed(
            [call.expression],
            lambda p: [merge(p[0])],
            lambda a, b: [pair(a[0], b[0])],
            lambda p: p[0].cast(call.dtype),
        )
    value, key, smallest = pick(call, arrival=0)
    by, best = (F.min_by, F.min) if smallest else (F.max_by, F.max)

    def pair_picks(a: list[Column], b: list[Column]) -> list[Column]:
        before = (a[1] <= b[1]) if smallest else (a[1] >= b[1])
        first = b[1].isNull() | (a[1].isNotNull() & before)
        return [F.when(first, a[0]).otherwise(b[0]), F.when(first, a[1]).otherwise(b[1])]

    return _Decomposed(
        [by(value, key), best(key)],
        lambda p: [by(p[0], p[1]), best(p[1])],
        pair_picks,
        lambda p: p[0].cast(call.dtype),
    )


@dataclass(frozen=True)
class Partials:
    """The job's aggregate columns as partials, with the internal names of their columns."""

    calls: tuple[AggregateCall, ...]
    parts: list[_Decomposed]
    names: list[list[str]]

    @classmethod
    def of(cls, calls: Sequence[AggregateCall]) -> Partials:
        parts = [_decompose(call, lambda i: DataType()) for call in calls]
        names = [[f"__pw_hx{j}_{i}" for i in range(len(d.rows))] for j, d in enumerate(parts)]
        return cls(tuple(calls), parts, names)

    @property
    def flat(self) -> list[str]:
        return [x for group in self.names for x in group]

    @property
    def invertible(self) -> bool:
        return all(d.invertible for d in self.parts)

    def expressions(self) -> list[Column]:
        """The partials' aggregates over rows, in the order of :attr:`flat`."""
        return [c for d in self.parts for c in d.rows]

    def rows(self) -> list[Column]:
        """The pane aggregates (named)."""
        return [c.alias(x) for c, x in zip(self.expressions(), self.flat, strict=True)]

    def typed(self, panes: DataFrame) -> Partials:
        """The same, reading the partials' types from the pane plan (no job runs)."""
        schema = panes.schema
        parts = [
            _decompose(call, lambda i, group=group: schema[group[i]].dataType)  # type: ignore[misc]
            for call, group in zip(self.calls, self.names, strict=True)
        ]
        return Partials(self.calls, parts, self.names)

    def merged(self, column: Callable[[str], Column]) -> list[Column]:
        """The merge aggregates of every partial column, in order (``column``: by name)."""
        out: list[Column] = []
        for d, group in zip(self.parts, self.names, strict=True):
            out += d.merge([column(x) for x in group])
        return out

    def results(
        self, first: Callable[[str], Column | None], second: Callable[[str], Column]
    ) -> list[Column]:
        """Each call's value from two merged parts (``first`` may be ``None``: one part)."""
        out = []
        for d, group, call in zip(self.parts, self.names, self.calls, strict=True):
            b = [second(x) for x in group]
            a = [first(x) for x in group]
            merged = b if a[0] is None else d.pair(a, b)  # type: ignore[arg-type]
            out.append(d.result(merged).alias(call.name))
        return out


# -- size > slide ------------------------------------------------------------------------------
def _overlapping(
    grid: HoppingGrid,
    job: Job,
    prepared: DataFrame,
    keys: list[Column],
    compiled: CompiledAggregates,
    layout: OutputLayout,
) -> NativeParts:
    """``size > slide``: panes, then runs of windows with equal contents (the module
    docstring), then the runs' window starts."""
    ts = F.col(TS)
    valid = prepared.where(ts.isNotNull())
    # One shuffle, by key: panes, blocks and events of a key stay in its partition.
    rows = valid.repartition(*keys) if keys else valid
    block, pane = grid.block_and_pane(TS)
    partials = Partials.of(compiled.calls)
    panes = rows.groupBy(*keys, F.expr(block).alias(HB), F.expr(pane).alias(HR)).agg(
        *partials.rows()
    )
    partials = partials.typed(panes)
    if partials.invertible:
        groups = panes.withColumn(HBX, F.col(HB)).withColumn(HRX, F.col(HR))
        swept = sweep(grid, groups, keys, partials)
        nonempty = F.col(HIN) > F.lit(0)
        runs = swept.where(nonempty & (F.col(HFIRST) < F.col(HNEXT))).select(
            *keys,
            F.col(HEB),
            F.col(HFIRST),
            F.col(HNEXT),
            *partials.results(lambda x: None, F.col),
        )
    else:
        runs = _blocks(grid, panes, keys, partials)
    shift = grid.window_starts(HFIRST, HNEXT)
    windows = runs.select(
        *keys, col(HEB), F.expr(shift).alias(_W), *[col(c.name) for c in compiled.calls]
    )
    eb, w = grid.normalized(HEB, _W)
    min_start = grid.min_window_start
    if min_start is not None:  # behind the first watermark: late, or fired per row
        mb, mr = grid.position(min_start)
        windows = windows.where(f"{eb} != {int_sql(mb)} OR {w} != {int_sql(mr)}")
    start, end = grid.bounds(eb, w)
    results = windows.select(
        *keys,
        F.expr(start).alias(HSTART),
        F.expr(end).alias(HEND),
        *[col(c.name) for c in compiled.calls],
    )
    counters = prepared.agg(*input_counters(layout), F.lit(0).alias(late_counter(layout)))
    late = _firings(grid, job, valid, keys, compiled, layout)
    late += _late_branches(prepared, layout, F.lit(False))
    return NativeParts(
        results, F.col(HSTART), F.col(HEND), F.lit(True), lambda: NativeRest(counters, late)
    )


def sweep(
    grid: HoppingGrid,
    groups: DataFrame,
    keys: list[Column],
    partials: Partials,
    probes: DataFrame | None = None,
) -> DataFrame:
    """Running sums in window-start order, per key: a group of rows enters at ``pane - n +
    1`` of its pane ``(HBX, HRX)`` (its partials added) and leaves after its pane ``(HB,
    HR)`` (subtracted); in event-time order both are the rows' pane. Every event starts a
    run up to the next one (``HFIRST``, ``HNEXT``: window starts as panes of block ``HEB``;
    the next event counted from this block), holding ``HIN`` groups and the running sums.
    ``probes`` (keys, ``HEB``, ``HER``, ``HPROBE`` true and columns of their own) read the
    sums at their position, after the groups' events there."""
    n = grid.n
    flat = partials.flat

    def event(block: str, pane: str, sign: int, enter: bool) -> str:
        last = f"{pane} = {int_sql(n - 1)}"  # the next pane is the next block's first
        if enter:  # at pane - n + 1: the previous block's pane + 1, or this block's 0
            eb = f"CASE WHEN {last} THEN {block} ELSE {block} - 1 END"
        else:  # after the pane
            eb = f"CASE WHEN {last} THEN {block} + 1 ELSE {block} END"
        er = f"CASE WHEN {last} THEN 0 ELSE {pane} + 1 END"
        values = [f"{x} AS {x}" if sign > 0 else f"(-{x}) AS {x}" for x in flat]
        return f"struct({eb} AS {HEB}, {er} AS {HER}, {sign} AS {HIN}, {', '.join(values)})"

    enter = event(HBX, HRX, 1, True)
    leave = event(HB, HR, -1, False)
    # (one select per step: Spark analyzes each DataFrame operation as it is made)
    flag = [] if probes is None else [F.expr(f"false AS {HPROBE}")]
    events = groups.select(*keys, F.expr(f"inline(array({enter}, {leave}))"), *flag)
    order_by = [col(HEB), col(HER)]
    if probes is not None:  # (flagged true: HPROBE)
        events = events.unionByName(probes, allowMissingColumns=True)
        order_by.append(col(HPROBE))
    order = Window.partitionBy(*(keys or [F.lit(0)])).orderBy(*order_by)
    so_far = order.rowsBetween(Window.unboundedPreceding, 0)
    eb, er = col(HEB), col(HER)
    next_b, next_r = F.lead(eb).over(order), F.lead(er).over(order)
    running = [F.sum(col(HIN)).over(so_far).alias(HIN)]
    running += [c.over(so_far).alias(x) for c, x in zip(partials.merged(F.col), flat, strict=True)]
    others = [c for c in events.columns if c not in (*flat, HIN, HEB, HER)]
    return events.select(
        *[col(c) for c in others],
        eb,
        er,
        F.expr(grid.first_start(HEB, HER)).alias(HFIRST),
        # a non-empty run is at most n long: it ends in this block or the next
        F.when(next_b == eb, next_r).when(next_b == eb + F.lit(1), next_r + F.lit(n)).alias(HNEXT),
        *running,
    )


def _blocks(
    grid: HoppingGrid, panes: DataFrame, keys: list[Column], partials: Partials
) -> DataFrame:
    """Runs from block suffixes and prefixes (van Herk / Gil-Werman, the module
    docstring); the columns of :func:`sweep`'s."""
    n = grid.n
    b, r = F.col(HB), F.col(HR)
    flat = partials.flat
    # suffix aggregates per block: its panes in descending order, running
    desc = Window.partitionBy(*keys, b).orderBy(r.desc())
    suffix = [f"{x}_s" for x in flat]
    panes = panes.select(
        *keys,
        b,
        r,
        *[F.col(x) for x in flat],
        *[
            c.over(desc.rowsBetween(Window.unboundedPreceding, 0)).alias(x)
            for c, x in zip(partials.merged(F.col), suffix, strict=True)
        ],
        F.lead(r).over(desc).alias(_PREV),
        F.lag(r).over(desc).isNull().alias(_LASTP),
    )
    # Events: the kind (HIN: 1 a pane entering, 0 a suffix from the pane _S, null neither),
    # and partial values (a suffix's, or an entering pane's).
    inside = r + F.lit(1) < F.lit(n)

    def event(eb: Column, er: Column, kind: int | None, values: list[str] | None) -> Column:
        fields = [eb.alias(HEB), er.alias(HER), F.lit(kind).cast("int").alias(HIN)]
        fields.append((r if kind == 0 else F.lit(None).cast("long")).alias(_S))
        cols = [F.col(v) for v in values] if values else [F.lit(None)] * len(flat)
        return F.struct(*fields, *[c.alias(x) for c, x in zip(cols, flat, strict=True)])

    events = (
        panes.select(
            *keys,
            F.explode(
                F.array(
                    # this pane's suffix, from the pane after the previous one of its block
                    event(b, F.coalesce(F.col(_PREV) + F.lit(1), F.lit(0)), 0, suffix),
                    # after the block's last pane, no suffix (a run boundary)
                    F.when(F.col(_LASTP) & inside, event(b, r + F.lit(1), None, None)),
                    # the pane enters the windows of the previous block at pane - n + 1
                    F.when(inside, event(b - F.lit(1), r + F.lit(1), 1, flat)),
                )
            ).alias(_EV),
        )
        .where(F.col(_EV).isNotNull())
        .select(*keys, f"{_EV}.*")
    )
    order = Window.partitionBy(*keys, F.col(HEB)).orderBy(F.col(HER))
    so_far = order.rowsBetween(Window.unboundedPreceding, 0)
    er, kind = F.col(HER), F.col(HIN)
    is_suffix = kind == F.lit(0)
    suffix_state = F.struct(F.col(_S).alias("r"), *[F.col(x).alias(x) for x in flat])
    runs = events.select(
        *keys,
        F.col(HEB),
        er,
        F.expr(grid.first_start(HEB, HER)).alias(HFIRST),
        F.coalesce(F.lead(er).over(order), F.lit(n)).alias(HNEXT),
        F.last(F.when(is_suffix, suffix_state), ignorenulls=True).over(so_far).alias(_S),
        F.count(F.when(kind == F.lit(1), 1)).over(so_far).alias(HIN),
        *[
            c.over(so_far).alias(x)
            for c, x in zip(
                partials.merged(lambda x: F.when(kind == F.lit(1), F.col(x))), flat, strict=True
            )
        ],
    )
    # the suffix is inside while its pane is not before the run; the prefix: entered panes
    s_in = F.col(f"{_S}.r") >= er
    nonempty = s_in | (F.col(HIN) > F.lit(0))
    return runs.where(nonempty & (F.col(HFIRST) < F.col(HNEXT))).select(
        *keys,
        F.col(HEB),
        F.col(HFIRST),
        F.col(HNEXT),
        *partials.results(lambda x: F.when(s_in, F.col(f"{_S}.{x}")), F.col),
    )
