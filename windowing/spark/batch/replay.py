"""The executor side of the batch replay: a key group's rows, streamed in record batches in
replay order, replayed key by key on one window operator.

Spark hands a key group's rows to Python as record batches (``applyInArrow`` over an
iterator, PySpark 4.1+) of at most ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows,
sorted by the plan (``repartition(__pw_kg)`` then ``sortWithinPartitions(__pw_kg, keys,
replay order)``; :mod:`windowing.spark.batch.replay_plan`). A key's rows are replayed as they stream
in: the key's operator state, its watermark and clock are carried from one batch to the
next, and the outputs of each batch leave as record batches before the next one is read, so
a worker holds one input batch, the keys' open windows and the outputs of one batch, however
many rows a key has:

* a key's rows go to the group's window operator as they come
  (:mod:`windowing.spark.batch.replay_keys`: in arrival order with the watermark moving between
  them; in event-time order in one pass, or chunk by chunk for a large key, its windows no
  later row reaches fired early, so it keeps only its open windows);
* built-in aggregations of tumbling, hopping or session windows in event-time order are
  reduced on whole columns (:mod:`windowing.spark.columnar.core`), and a vectorized function
  of tumbling, hopping or session windows takes all the windows of a batch in one call
  (:mod:`windowing.spark.columnar.vectorized`), many keys at once; the rows of
  the last key of a batch that the next batch may continue are carried over: those of its
  last window or session, all of them for hopping windows (which overlap); carried rows
  beyond ``CARRY_ROWS`` go to the operator instead.

The input order is checked, not assumed: a key's rows out of replay order, or a key whose
rows are not contiguous, raise :class:`InputOrderError` rather than give other results.

A key whose open windows outgrow ``spark.executor.pyspark.memory`` fails with
:class:`WindowStateTooLargeError`, naming the key and its largest window.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DateType,
    IntegralType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from windowing.functions.spec import WindowFunctionSpec
from windowing.idleness import Idleness
from windowing.job import WindowConfig
from windowing.operator import WindowOperator
from windowing.records import OutputTag
from windowing.spark.batch import replay_keys
from windowing.spark.batch.replay_keys import Chunk, OperatorRun, OutputBlock, as_batch
from windowing.spark.columnar.core import ColumnarPlan, columnar_results
from windowing.spark.columnar.vectorized import VectorizedWindows
from windowing.spark.columnar.vectorized_process import KeyStates
from windowing.spark.columns.inputs import TS, replay_order
from windowing.spark.columns.keys import group_codes, keys_at, state_key
from windowing.spark.columns.null_results import NullResultReport, report_null_results
from windowing.spark.columns.operator_rows import operator_counters
from windowing.spark.columns.output import OutputLayout
from windowing.spark.jobs import window_operator

__all__ = ["CARRY_ROWS", "InputOrderError", "Replay", "WindowStateTooLargeError"]

#: The rows of a key a columnar aggregation carries from batch to batch (its last window or
#: session; all its rows with hopping windows); beyond them the key's carried rows go to the
#: operator (one reduced value per window). The default of ``Replay.carry_rows``.
CARRY_ROWS = 65_536
#: The share of ``spark.executor.pyspark.memory`` a worker may reach before a key whose
#: windows hold it fails with :class:`WindowStateTooLargeError`.
_MEMORY_SHARE = 0.9


class InputOrderError(RuntimeError):
    """A key group's rows did not reach Python in replay order (the plan sorts them; a plan
    that lost the sort would give other results, so the replay stops)."""


class WindowStateTooLargeError(MemoryError):
    """A key's open windows do not fit the Python worker's memory
    (``spark.executor.pyspark.memory``): the message names the key and its largest window."""


# ---------------------------------------------------------------------------- input order
def _in_order(batch: pa.RecordBatch, names: list[str]) -> np.ndarray[Any, Any]:
    """For each row but the first: whether it comes at or after the row before it in the
    order of the int64 columns ``names`` (ascending, nulls last)."""
    n = batch.num_rows
    ok = np.ones(n - 1, np.bool_)
    for name in reversed(names):
        column = batch.column(name)
        if column.null_count:
            null = column.is_null().to_numpy(zero_copy_only=False)
            v = column.fill_null(0).to_numpy()
        else:
            null = np.zeros(n, np.bool_)
            v = column.to_numpy()
        a, b, na, nb = v[:-1], v[1:], null[:-1], null[1:]
        both = ~na & ~nb
        less = (both & (a < b)) | (~na & nb)
        same = (both & (a == b)) | (na & nb)
        ok = less | (same & ok)
    return ok


def _order_key(values: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    return tuple((v is None, 0 if v is None else v) for v in values)


class _OrderGuard:
    """Checks that a call's rows come by key, each key's rows contiguous and in replay order
    (the order columns ``names``, nulls last), across its batches: :meth:`check` with the
    keys as Python values (a set of the keys seen), or, where Arrow compares the key columns
    ``keys`` as Spark sorts them (``sorted_keys``), :meth:`check_sorted` on the columns."""

    def __init__(
        self, names: list[str], keys: Sequence[str] = (), *, sorted_keys: bool = False
    ) -> None:
        self.names = names
        self.keys = list(keys)
        self.sorted_keys = sorted_keys
        self.seen: set[Any] = set()
        self.last_key: Any = _NO_KEY
        self.last_values: tuple[Any, ...] = ()
        self.last_row: list[pa.Array] | None = None  # check_sorted: the last row's keys

    def check(
        self, batch: pa.RecordBatch, codes: np.ndarray[Any, Any], skeys: list[Any], keys: list[Any]
    ) -> None:
        n = batch.num_rows
        self._rows_in_order(batch, codes, keys)
        if skeys[0] == self.last_key:
            first = tuple(batch.column(name)[0].as_py() for name in self.names)
            if _order_key(first) < _order_key(self.last_values):
                self._fail("the first row of a batch comes before the last one", codes, 0, keys)
        for j, skey in enumerate(skeys):
            if j == 0 and skey == self.last_key:
                continue
            if skey in self.seen:
                self._not_contiguous(keys[j])
            self.seen.add(skey)
        self.last_key = skeys[-1]
        self.last_values = tuple(batch.column(name)[n - 1].as_py() for name in self.names)

    def check_sorted(
        self, batch: pa.RecordBatch, codes: np.ndarray[Any, Any], starts: list[int], keys: Any
    ) -> bool:
        """:meth:`check` from the key columns' order (``starts``: where each key's rows
        begin, then the rows; ``keys``: the keys, read for a message only): the plan sorts a
        key group's rows by key, so each key's rows are contiguous when the keys ascend from
        one key to the next and across batches. ``False`` (nothing checked) where Arrow does
        not compare the key columns as Spark sorts them."""
        if not self.sorted_keys:
            return False
        n = batch.num_rows
        self._rows_in_order(batch, codes, keys)
        heads = [batch.column(k).take(pa.array(starts[:-1], pa.int64())) for k in self.keys]
        if len(starts) > 2:
            rising = _ascending(
                [h.slice(0, len(h) - 1) for h in heads], [h.slice(1) for h in heads]
            )
            if not rising.all():
                self._not_contiguous(keys[int(np.flatnonzero(~rising)[0]) + 1])
        first = [h.slice(0, 1) for h in heads]
        if self.last_row is not None:
            if not _ascending(self.last_row, first, strict=False).all():
                self._not_contiguous(keys[0])
            if _ascending(first, self.last_row, strict=False).all():  # the same key goes on
                values = tuple(batch.column(name)[0].as_py() for name in self.names)
                if _order_key(values) < _order_key(self.last_values):
                    self._fail("the first row of a batch comes before the last one", codes, 0, keys)
        self.last_row = [batch.column(k).slice(n - 1, 1) for k in self.keys]
        self.last_values = tuple(batch.column(name)[n - 1].as_py() for name in self.names)
        return True

    def _rows_in_order(self, batch: pa.RecordBatch, codes: np.ndarray[Any, Any], keys: Any) -> None:
        """Each key's rows of the batch in replay order."""
        if batch.num_rows > 1:
            bad = np.flatnonzero((codes[1:] == codes[:-1]) & ~_in_order(batch, self.names))
            if bad.size:
                row = int(bad[0]) + 1
                self._fail(f"row {row} of a batch comes before the row above it", codes, row, keys)

    def _not_contiguous(self, key: Any) -> None:
        msg = (
            f"the rows of key {key!r} are not contiguous in their key group; the batch "
            "replay needs them sorted by key (a plan that lost the sort)"
        )
        raise InputOrderError(msg)

    def _fail(self, what: str, codes: np.ndarray[Any, Any], row: int, keys: Any) -> None:
        key = keys[int(np.count_nonzero(codes[1 : row + 1] != codes[:row]))]
        msg = (
            f"the rows of key {key!r} did not reach Python in replay order ({what}, by "
            f"{', '.join(self.names)}); the batch replay needs them sorted (a plan that lost "
            "the sort)"
        )
        raise InputOrderError(msg)


_NO_KEY: Any = object()


def _ascending(
    a: list[pa.Array], b: list[pa.Array], *, strict: bool = True
) -> np.ndarray[Any, Any]:
    """Per row, whether the key columns ``a`` come before those of ``b`` (or are equal, not
    ``strict``) in Spark's ascending order of the columns, nulls first."""
    n = len(a[0]) if a else 1
    result = np.full(n, not strict)  # equal keys
    for x, y in zip(reversed(a), reversed(b), strict=True):
        xn = x.is_null().to_numpy(zero_copy_only=False)
        yn = y.is_null().to_numpy(zero_copy_only=False)
        less = pc.fill_null(pc.less(x, y), False).to_numpy(zero_copy_only=False)
        equal = pc.fill_null(pc.equal(x, y), False).to_numpy(zero_copy_only=False)
        less = less | (xn & ~yn)
        equal = equal | (xn & yn)
        result = less | (equal & result)
    return result


def sorted_as_in_arrow(dtype: DataType) -> bool:
    """Whether Arrow compares values of the Spark type ``dtype`` as Spark sorts them:
    integers, booleans, dates, timestamps, strings of the binary collation."""
    if isinstance(dtype, StringType):
        return getattr(dtype, "collation", "UTF8_BINARY") == "UTF8_BINARY"
    return isinstance(
        dtype, IntegralType | BooleanType | DateType | TimestampType | TimestampNTZType
    )


class _RunKeys:
    """The keys (:func:`~windowing.spark.columns.keys.key_value`) and state keys of the key
    runs of a batch (their first rows ``rows``), computed when asked for: the first and the
    last one alone, all of them at once for any other (as the operator's keys need them)."""

    def __init__(self, batch: pa.RecordBatch, names: Sequence[str], rows: list[int]) -> None:
        self.batch, self.names, self.rows = batch, names, rows
        self.ends: dict[int, tuple[Any, Any]] = {}
        self.every: tuple[list[Any], list[Any]] | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def pair(self, j: int) -> tuple[Any, Any]:
        n = len(self.rows)
        j = j + n if j < 0 else j
        if not 0 <= j < n:
            raise IndexError(j)
        if self.every is None and j in (0, n - 1):
            if j not in self.ends:
                keys, skeys = keys_at(self.batch, self.names, [self.rows[j]])
                self.ends[j] = (keys[0], skeys[0])
            return self.ends[j]
        every = self.all()
        return every[0][j], every[1][j]

    def all(self) -> tuple[list[Any], list[Any]]:
        """Every run's key and state key."""
        if self.every is None:
            self.every = keys_at(self.batch, self.names, self.rows)
        return self.every


@dataclass(frozen=True)
class _RunKeysView(Sequence[Any]):
    """The keys (``part`` 0) or the state keys (1) of :class:`_RunKeys`, as a sequence."""

    runs: _RunKeys
    part: int

    def __len__(self) -> int:
        return len(self.runs)

    @overload
    def __getitem__(self, j: int) -> Any: ...
    @overload
    def __getitem__(self, j: slice) -> list[Any]: ...
    def __getitem__(self, j: int | slice) -> Any:
        if isinstance(j, slice):
            return [self[i] for i in range(*j.indices(len(self)))]
        return self.runs.pair(j)[self.part]


# ---------------------------------------------------------------------------- one key group
class _GroupStream:
    """One key group's call: its record batches replayed key by key."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.op = replay.operator()
        self.late_tag = replay.window.late_output_tag
        self.guarded = self.op.dead_letters is not None
        self.deferred = not replay.has_arrival and not replay.has_processing_time
        order = replay_order(
            arrival=replay.arrival_parts, processing_time=replay.has_processing_time
        )
        fields = replay.layout.input_schema
        self.guard = _OrderGuard(
            [name for name, _, _ in order],
            replay.keys,
            sorted_keys=all(
                k in fields.names and sorted_as_in_arrow(fields[k].dataType) for k in replay.keys
            ),
        )
        self.batch_id = 0
        self.current: OperatorRun | None = None
        # columnar: the rows of the last window of the current key, which the next batch
        # may continue (and the key)
        self.carry: pa.Table | None = None
        self.carry_key: Any = None
        self.carry_skey: Any = _NO_KEY
        self.first_key: Any = None
        self.input_rows = self.null_ts = self.null_arr = self.left_at_end = self.num_keys = 0
        self.memory_limit = _memory_limit()
        self.active_key: Any = None  # the key being replayed (memory errors name it)
        # a vectorized window function's per-key state of the key it last evaluated
        plan = replay.columnar
        self.states = KeyStates(isinstance(plan, VectorizedWindows) and plan.kind == "session")

    def run(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        try:
            for batch in batches:
                if batch.num_rows:
                    yield from self._batch(batch)
            block = OutputBlock(self, None)
            self._end_current(block)
        except WindowStateTooLargeError:
            raise
        except MemoryError as exc:  # spark.executor.pyspark.memory: name the key
            raise self._too_large(self.active_key, exc) from exc
        counters = operator_counters(self.op, self.input_rows, self.null_ts, self.null_arr)
        report_null_results(self.replay.null_results, NullResultReport.of(self.op.metrics))
        counters["num_windows_left_at_end"] = self.left_at_end
        counters["num_keys"] = self.num_keys
        yield from block.build(counters)

    def _batch(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        replay = self.replay
        self.batch_id += 1
        n = batch.num_rows
        table = pa.Table.from_batches([batch])
        codes = group_codes(table, replay.keys)
        starts = [0, *(np.flatnonzero(codes[1:] != codes[:-1]) + 1).tolist(), n]
        runs = _RunKeys(batch, replay.keys, starts[:-1])
        keys: Sequence[Any] = _RunKeysView(runs, 0)
        skeys: Sequence[Any] = _RunKeysView(runs, 1)
        if not self.guard.check_sorted(batch, codes, starts, keys):
            keys, skeys = keys_at(batch, replay.keys, starts[:-1])
            self.guard.check(batch, codes, skeys, keys)
        if self.first_key is None:
            self.first_key = keys[0]
        self.input_rows += n
        block = OutputBlock(self, batch)
        current_skey = self.current.skey if self.current is not None else self.carry_skey
        going_on = skeys[0] == current_skey
        if not going_on:
            self._end_current(block)
        self.num_keys += len(keys) - (1 if going_on else 0)
        first = 0
        if going_on and self.current is not None:
            run = self.current
            self.active_key = run.key
            chunk = Chunk(replay, batch, 0, starts[1])
            self._feed(run, chunk, 0, starts[1], block, batch)
            first = 1
            if len(keys) > 1:
                self._finish(run, block)
                self.current = None
        if first < len(keys):
            if replay.columnar is not None:
                self._columnar(batch, table, codes, starts, first, keys, skeys, block)
            else:
                self._operators(batch, starts, first, keys, skeys, block, None)
        if self.current is not None:
            self.current.detach(batch)
            self._check_memory(self.current)
        yield from block.build(None)

    # -- keys on the operator ----------------------------------------------------------------
    def _operators(
        self,
        batch: pa.RecordBatch,
        starts: list[int],
        first: int,
        keys: Sequence[Any],
        skeys: Sequence[Any],
        block: OutputBlock,
        carry: pa.Table | None,
    ) -> None:
        """Keys ``first`` on of the batch on the operator (the last one goes on in the next
        batch); ``carry``: rows of key ``first`` from earlier batches, fed first."""
        if isinstance(keys, _RunKeysView):  # every key is the operator's: as lists, once
            keys, skeys = keys.runs.all()
        replay = self.replay
        n = batch.num_rows
        chunk = Chunk(replay, batch, starts[first], n)
        last = len(keys) - 1
        for j in range(first, last + 1):
            run = self._run(keys[j], skeys[j], starts[j])
            if j == first and carry is not None and carry.num_rows:
                carried = Chunk(replay, carry, 0, carry.num_rows)
                self._feed(run, carried, 0, carry.num_rows, block, carry)
            self._feed(run, chunk, starts[j], starts[j + 1], block, batch)
            if j < last:
                self._finish(run, block)
            else:
                self.current = run

    def _run(self, key: Any, skey: Any, row: int) -> OperatorRun:
        """The operator's run of ``key`` (its first row ``row`` of the batch), with the
        per-key state a window function gave it on whole columns."""
        run = OperatorRun(self, key, skey, row)
        self.states.hand_over(self.op, key, skey)
        return run

    def _feed(
        self,
        run: OperatorRun,
        chunk: Chunk,
        lo: int,
        hi: int,
        block: OutputBlock,
        source: pa.RecordBatch | pa.Table,
    ) -> None:
        self.active_key = run.key
        run.feed(chunk, lo, hi, block, source)

    def _finish(self, run: OperatorRun, block: OutputBlock) -> None:
        self.active_key = run.key
        run.finish(block)

    def _end_current(self, block: OutputBlock) -> None:
        """The current key's input has ended."""
        if self.current is not None:
            run, self.current = self.current, None
            self._finish(run, block)
        if self.carry is not None:
            carry, self.carry = self.carry, None
            self.carry_skey = _NO_KEY
            if not self._reduce(carry, None, block):
                run = self._run(self.carry_key, state_key(self.carry_key), 0)
                run.batch_id = -1  # its key row is not in the current batch
                run.detach(as_batch(carry.slice(0, 1)))
                chunk = Chunk(self.replay, carry, 0, carry.num_rows)
                self._feed(run, chunk, 0, carry.num_rows, block, carry)
                self._finish(run, block)

    # -- keys on whole columns ---------------------------------------------------------------
    def _columnar(
        self,
        batch: pa.RecordBatch,
        table: pa.Table,
        codes: np.ndarray[Any, Any],
        starts: list[int],
        first: int,
        keys: Sequence[Any],
        skeys: Sequence[Any],
        block: OutputBlock,
    ) -> None:
        """Keys ``first`` on of the batch reduced on whole columns, the rows of the last key
        that later rows may join carried to the next batch; all of them on the operator when
        the columns cannot take them."""
        plan = self.replay.columnar
        assert plan is not None
        a = starts[first]
        carry = self.carry if first == 0 else None  # key 0 goes on: its carried rows first
        self.carry = None
        self.carry_skey = _NO_KEY
        part = table.slice(a)
        part_codes = codes[a:]
        lead = 0
        if carry is not None:
            lead = carry.num_rows
            part = pa.concat_tables([carry, part])
            part_codes = np.concatenate((np.full(lead, part_codes[0]), part_codes))
        times = part.column(TS)
        if times.null_count:
            self._operators(batch, starts, first, keys, skeys, block, carry)
            return
        last_start = starts[-2] - a + lead if len(keys) - 1 > first else 0
        tail = plan.carried_from(times.to_numpy(), last_start)
        done = part.slice(0, tail)
        if done.num_rows and not self._reduce(done, part_codes[:tail], block):
            self._operators(batch, starts, first, keys, skeys, block, carry)
            return
        rest = part.slice(tail)
        if rest.num_rows > self.replay.carry_rows:  # a long window: the operator reduces it
            run = self._run(keys[-1], skeys[-1], starts[-2])
            chunk = Chunk(self.replay, rest, 0, rest.num_rows)
            self._feed(run, chunk, 0, rest.num_rows, block, rest)
            self.current = run
            return
        self.carry = rest
        self.carry_key = keys[-1]
        self.carry_skey = skeys[-1]

    def _reduce(
        self, part: pa.Table, codes: np.ndarray[Any, Any] | None, block: OutputBlock
    ) -> bool:
        """The windows of ``part`` (whole windows of its keys, ``codes``) reduced on whole
        columns into ``block``; ``False`` when the operator must compute them."""
        replay = self.replay
        plan = replay.columnar
        assert plan is not None
        if part.column(TS).null_count:
            return False
        columns: list[pa.Array] = []
        fired: int
        if isinstance(plan, VectorizedWindows):
            inputs = part.select(replay.input_names)
            found: Any = plan.results(
                inputs,
                part.column(TS),
                codes,
                replay.layout,
                functools.partial(keys_at, part, replay.keys),
                self.states,
            )
            if found is None:
                return False
            columns = found.columns
            fired = found.fired
            self._side_outputs(part, found.side_outputs, block)
        else:
            found = columnar_results(plan, part.column(TS), part.column(plan.field), codes)
            if found is None:
                return False
            fired = len(found.starts)
            rows = pa.array(found.rows, pa.int64())
            for field in replay.layout.out_schema.fields:
                if found.field_values is not None and field.name == plan.field:
                    columns.append(pa.array(found.field_values))
                else:
                    columns.append(part.column(field.name).take(rows).combine_chunks())
        starts = pa.array(found.starts, pa.int64())
        ends = pa.array(found.ends, pa.int64())
        results = len(found.starts)
        counters = {
            "num_elements": part.num_rows,
            "num_windows_fired": fired,
            "num_results": results,
        }

        def key_columns(total: int) -> list[pa.Array]:
            # the results: their own rows; the metrics row: any row
            take = found.rows if total == results else np.zeros(total, np.int64)
            return [part.column(k).take(take).combine_chunks() for k in replay.keys]

        block.columnar.extend(
            replay.layout.tagged_result_batches(
                key_columns=key_columns,
                bounds=(starts, ends, pa.array(found.ends - 1, pa.int64())),
                columns=columns,
                counters=counters,
            )
        )
        return True

    def _side_outputs(
        self, part: pa.Table, records: Mapping[OutputTag, list[tuple[int, Any]]], block: OutputBlock
    ) -> None:
        """A window function's side outputs (each with the row of ``part`` its key is taken
        from) into ``block``."""
        layout = self.replay.layout
        refs: dict[int, int] = {}
        for tag, found in records.items():
            values = [r for _, r in found]
            layout.check_side_output(tag, values, values[0].key)
            for row, record in found:
                ref = refs.get(row)
                if ref is None:
                    key_row = part.select(self.replay.keys).slice(row, 1)
                    ref = refs[row] = block.extra(as_batch(key_row))
                block.sides[tag].append(record)
                block.side_refs[tag].append(ref)

    # -- memory --------------------------------------------------------------------------------
    def _check_memory(self, run: OperatorRun) -> None:
        """Fail with :class:`WindowStateTooLargeError` when the worker has used up its share
        of ``spark.executor.pyspark.memory`` while ``run``'s key goes on (its windows hold
        the memory the batches and outputs do not: those are released after each batch)."""
        if self.memory_limit is None:
            return
        used = _address_space()
        if used is not None and used > _MEMORY_SHARE * self.memory_limit:
            raise self._too_large(run.key, None, used)

    def _too_large(
        self, key: Any, exc: BaseException | None, used: int | None = None
    ) -> WindowStateTooLargeError:
        """The error naming ``key``, its open windows and the largest one."""
        op = self.op
        ks = op.backend.get(key)
        windows: list[tuple[int, Any]] = []
        if ks is not None:
            with contextlib.suppress(Exception):
                windows = [(w.num_stored_elements or 1, w.window) for w in op.window_summaries(ks)]
        largest = max(windows, key=lambda p: p[0], default=None)
        where = (
            f"its largest open window {largest[1]!r} holds {largest[0]:,} elements"
            if largest is not None and largest[0] > 1
            else "its windows"
        )
        limit = self.memory_limit
        memory = (
            f"the Python worker's address space is {used / 2**20:,.0f} MiB of "
            f"spark.executor.pyspark.memory={limit / 2**20:,.0f} MiB"
            if used is not None and limit is not None
            else "the Python worker ran out of memory"
        )
        msg = (
            f"the window state of key {key!r} does not fit: {memory}, with {len(windows):,} "
            f"open window(s); {where}. A window's elements are held until it fires when its "
            "function needs them all (process, apply, an evictor): use a reduce or aggregate, "
            "smaller windows, or more memory (spark.executor.pyspark.memory)"
        )
        if exc is not None:
            msg += f" ({type(exc).__name__}: {exc})"
        return WindowStateTooLargeError(msg)


def _memory_limit() -> int | None:
    """``spark.executor.pyspark.memory`` in bytes, as Spark gives it to its Python workers
    (``None`` when it is not set)."""
    try:
        mb = int(os.environ.get("PYSPARK_EXECUTOR_MEMORY_MB", "-1"))
    except ValueError:
        return None
    return mb * 2**20 if mb > 0 else None


def _address_space() -> int | None:
    """This process's address space (Linux), which ``spark.executor.pyspark.memory`` limits
    (``RLIMIT_AS``), else ``None``."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


# ---------------------------------------------------------------------------- the function
@dataclass(frozen=True, eq=False)
class Replay:
    """The grouped-map function of the batch replay: one key group's record batches (sorted
    by key and replay order) in, its tagged output out, as record batches.

    Shipped to executors with cloudpickle (with the assigner, trigger, evictor and functions).
    """

    window: WindowConfig
    spec: WindowFunctionSpec
    keys: tuple[str, ...]
    input_names: list[str]
    layout: OutputLayout
    watermark: Any  # a windowing.stream watermark strategy
    arrival_parts: int  # the arrival-order columns (flat: inputs.arrival_names); 0: none
    has_processing_time: bool
    # Results computed on whole columns (rows in event-time order only: job_columnar), or a
    # vectorized function's a record batch at a time.
    columnar: ColumnarPlan | VectorizedWindows | None = None
    # Keys' own idle clocks on the processing_time column (``idle_timeout``).
    idleness: Idleness | None = None
    # Bounds of a worker's memory (the module constants when the plan is built).
    chunk_rows: int = dataclasses.field(default_factory=lambda: replay_keys.CHUNK_ROWS)
    carry_rows: int = dataclasses.field(default_factory=lambda: CARRY_ROWS)
    log_bytes: int = dataclasses.field(default_factory=lambda: replay_keys.LOG_BYTES)
    # The job's accumulator of windows whose incremental result was None (a driver-side
    # warning: windowing.spark.columns.null_results); None: not reported.
    null_results: Any = None

    def batches(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The tagged output of one key group's record batches."""
        schema = self.layout.arrow_schema
        for out in _GroupStream(self).run(batches):
            # Columns copied from the input (keys, late rows) carry the session time zone;
            # Spark wants UTC back. Same instants: a cast of the type only.
            if out.schema.equals(schema):
                yield out
            else:
                yield from pa.Table.from_batches([out]).cast(schema).to_batches()

    def table(self, table: pa.Table) -> pa.Table:
        """The tagged output of one key group's rows as one table (PySpark 4.0's
        ``applyInArrow``)."""
        return pa.Table.from_batches(
            list(self.batches(iter(table.to_batches()))), schema=self.layout.arrow_schema
        )

    @property
    def has_arrival(self) -> bool:
        return self.arrival_parts > 0

    def operator(self) -> WindowOperator:
        return window_operator(self.window, self.spec)
