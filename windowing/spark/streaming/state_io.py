"""A key group's state in and out of the streaming processor's calls (:class:`StateIO`): the
group's value loaded and saved with its one Spark timer, each key's entry made from its key
state after a call, and a stored key state in the operator's form."""

from __future__ import annotations

from typing import Any

from windowing.engine.keystate import KeyState
from windowing.idleness import KeyIdleness
from windowing.operator import WindowOperator
from windowing.spark.columnar.core import OpenWindows, key_state_of
from windowing.spark.columns.inputs import PT as _PT
from windowing.spark.columns.keys import group_codes
from windowing.spark.streaming.checkpoint import UNKNOWN_WINDOWS, Entry, GroupState
from windowing.spark.streaming.clocks import BatchClocks
from windowing.spark.streaming.config import ProcessorConfig

__all__ = ["StateIO", "keep_timer"]


def keep_timer(handle: Any, registered: int | None, timer: int | None, *, alive: bool) -> None:
    """Keep one Spark timer for a key group, at ``timer`` (``None``: none): delete the
    ``registered`` one when it differs and has not fired (``alive``), register ``timer``
    unless it is the one kept."""
    if alive and registered is not None and registered != timer:
        handle.deleteTimer(registered)
    if timer is not None and timer != (registered if alive else None):
        handle.registerTimer(timer)


class StateIO:
    """The state of the key groups ``handle`` serves (:class:`GroupState`) for the operator
    ``op``, with due times read against the micro-batch's ``clocks``.

    Example::

        io = StateIO(handle, config, op, clocks)
        registered, entries, windows = io.load(key)
        ...  # calls replace entries: io.store(entries, skey, io.entry(k, key_state))
        gauges = io.save(registered, entries, windows, alive=True)
    """

    def __init__(
        self, handle: Any, config: ProcessorConfig, op: WindowOperator, clocks: BatchClocks
    ) -> None:
        self.handle = handle
        self.group = GroupState(handle, config.key_groups, config.job_digest)
        self.config = config
        self.op = op
        self.clocks = clocks

    def load(self, key: Any) -> tuple[int | None, dict[Any, Entry], OpenWindows | None]:
        """``(registered timer, entries, columnar windows)`` of the key group ``key``."""
        return self.group.load(key)

    def decode(self, entry: Entry | None) -> Any:
        """The stored key state of ``entry`` (``None``: none)."""
        return None if entry is None else self.group.decode_entry(entry[2])

    def save(
        self,
        registered: int | None,
        entries: dict[Any, Entry],
        windows: OpenWindows | None,
        *,
        alive: bool,
    ) -> dict[str, int]:
        """Write the group's state once (or clear it when nothing is left) and keep one
        Spark timer at the earliest due time of its windows; ``alive``: the registered timer
        has not fired. Returns the group's gauges: its state bytes and open windows."""
        c = self.config
        due = [e[1] for e in entries.values() if e[1] is not None]
        if due and c.idleness is not None:
            # a key's due time depends on the stream's watermark, which other key groups'
            # rows move: look again in the next micro-batch (ProcessingTime mode runs one
            # every trigger interval anyway)
            due = [self.clocks.now + 1]
        if windows is not None:
            assert c.columnar is not None
            windows_due = self.spark_timer(windows.next_event_time(c.columnar))
            if windows_due is not None:
                due.append(windows_due)
        timer = min(due) if due else None
        keep_timer(self.handle, registered, timer, alive=alive)
        for skey, entry in entries.items():
            if entry[4] == UNKNOWN_WINDOWS:  # stored by an earlier layout: count once
                counted = self.count_windows(self.group.decode_entry(entry[2]))
                entries[skey] = (*entry[:4], counted, entry[5])
        nbytes = self.group.store(timer, entries, windows)
        open_windows = sum(e[4] for e in entries.values())
        return {
            "state_bytes": nbytes,
            "open_windows": open_windows + (0 if windows is None else self.window_count(windows)),
        }

    @staticmethod
    def store(entries: dict[Any, Entry], skey: Any, entry: Entry | None) -> None:
        """Set the key ``skey``'s entry (``None``: the key leaves)."""
        if entry is None:
            entries.pop(skey, None)
        else:
            entries[skey] = entry

    def entry(self, key: Any, ks: Any, idle: KeyIdleness | None = None) -> Entry | None:
        """The key's entry after a call, ``None`` when it holds nothing. Its due time is the
        key's next operator timer as a Spark timer: in event time no earlier than ``W + 1``
        (Spark watermark ``W``; with an idle clock, the key's watermark), in processing time
        no earlier than the next millisecond, so operator timers already due fire at the
        next watermark advance / micro-batch, as in Flink and the batch replay. ``idle``:
        the key's idle clock (an idle timeout); a key with nothing else is kept while that
        clock is ahead of the stream's watermark."""
        c = self.config
        plan = c.columnar
        if ks is None:
            nxt = None
        elif c.wall_clock:
            nxt = ks.next_processing_time()
        elif isinstance(ks, OpenWindows):
            assert plan is not None
            nxt = ks.next_event_time(plan)
        else:
            nxt = ks.next_event_time()
        timer = self.spark_timer(nxt)
        empty = ks is None or (isinstance(ks, KeyState) and ks.is_empty())
        clock = self.op.processing_time if _PT in c.internal else None
        kept = None if idle is None else idle.as_tuple()
        if empty and timer is None:
            if idle is None or idle.watermark <= self.clocks.stream_watermark:
                return None
            return (key, None, b"", clock, 0, kept)  # only the key's clock
        return (key, timer, self.group.encode_entry(ks), clock, self.count_windows(ks), kept)

    def spark_timer(self, nxt: int | None) -> int | None:
        """The operator timer ``nxt`` as a Spark timer (``None``: none): in event time no
        earlier than ``W + 1`` (Spark watermark ``W``), in processing time no earlier than
        the next millisecond (:meth:`BatchClocks.spark_timer`)."""
        return self.clocks.spark_timer(nxt, self.op.watermark)

    def key_state(self, ks: Any) -> KeyState:
        """The operator's form of the key state ``ks``."""
        if ks is None:
            return self.op.new_key_state()
        if isinstance(ks, OpenWindows):
            plan = self.config.columnar
            assert plan is not None
            return key_state_of(plan, self.op, ks)
        assert isinstance(ks, KeyState)
        return ks

    def count_windows(self, ks: Any) -> int:
        """The open windows of a key state (``KeyState`` or ``OpenWindows``)."""
        if ks is None:
            return 0
        if isinstance(ks, OpenWindows):
            assert self.config.columnar is not None
            return ks.window_count(self.config.columnar)
        return len(self.op.windows_of(ks))

    def window_count(self, windows: OpenWindows) -> int:
        """The windows the operator would hold for the group's columnar ``windows``."""
        plan = self.config.columnar
        assert plan is not None
        if windows.kind == "tumbling":
            return len(windows)  # one item per window
        keys = self.config.layout.keys
        codes = group_codes(windows.rows.select(keys), keys) if keys else None
        return windows.window_count(plan, codes)
