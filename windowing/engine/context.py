"""The contexts handed to triggers, evictors and process functions (Flink's
``WindowOperator.Context`` and ``WindowContext``), bound to one key and window at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from windowing.engine.keystate import KeyState, register_timer
from windowing.records import OutputTag, WindowResult
from windowing.state import StateTable
from windowing.windows import window_text

__all__ = [
    "Clock",
    "ClockReader",
    "DeferredStateContext",
    "ProcessContext",
    "WindowContext",
    "check_outputs",
]


class ClockReader(Protocol):
    """The clocks contexts read (the operator's, or a trigger harness's)."""

    watermark: int
    processing_time: int


class Clock:
    """Assigner context: exposes the operator's processing-time clock."""

    __slots__ = ("clocks",)

    def __init__(self, clocks: ClockReader) -> None:
        self.clocks = clocks

    def get_current_processing_time(self) -> int:
        return self.clocks.processing_time


class _StateStore:
    """A keyed state store bound to one state table and namespace."""

    __slots__ = ("namespace", "table")

    def __init__(self, table: StateTable, namespace: Any) -> None:
        self.table = table
        self.namespace = namespace

    def get_state(self, descriptor: Any) -> Any:
        return self.table.state(descriptor, self.namespace)


class _MergingWindowStateStore:
    __slots__ = ()

    def get_state(self, descriptor: Any) -> Any:
        msg = "Per-window state is not allowed when using merging windows."
        raise RuntimeError(msg)


class WindowContext:
    """The context handed to triggers, evictors and process functions for one key and window.

    One instance is reused (its fields are set before each callback), as in Flink. It reads
    the clocks of ``clocks`` and appends side outputs to ``side_outputs``.
    """

    __slots__ = (
        "clocks",
        "is_merging",
        "key",
        "ks",
        "late_tag",
        "merged_windows",
        "side_outputs",
        "window",
    )

    def __init__(
        self,
        clocks: ClockReader,
        side_outputs: dict[OutputTag, list[Any]],
        *,
        is_merging: bool = False,
        late_tag: OutputTag | None = None,
    ) -> None:
        self.clocks = clocks
        self.side_outputs = side_outputs
        self.is_merging = is_merging
        self.late_tag = late_tag  # the late input rows' tag: not for a function's values
        self.key: Any = None
        self.ks: KeyState = KeyState()
        self.window: Any = None
        self.merged_windows: list[Any] = []

    # -- trigger / evictor context -------------------------------------------------------
    def get_current_watermark(self) -> int:
        return self.clocks.watermark

    def get_current_processing_time(self) -> int:
        return self.clocks.processing_time

    def register_event_time_timer(self, time: int) -> None:
        register_timer(self.ks.evt_timers, self.ks.evt_heap, self.ks, time, self.window)

    def register_processing_time_timer(self, time: int) -> None:
        register_timer(self.ks.proc_timers, self.ks.proc_heap, self.ks, time, self.window)

    def delete_event_time_timer(self, time: int) -> None:
        self.ks.evt_timers.discard((time, self.window))

    def delete_processing_time_timer(self, time: int) -> None:
        self.ks.proc_timers.discard((time, self.window))

    def get_partitioned_state(self, descriptor: Any) -> Any:
        return self.ks.trigger_state.state(descriptor, self.window)

    def merge_partitioned_state(self, descriptor: Any) -> None:
        if self.merged_windows:
            self.ks.trigger_state.merge_namespaces(descriptor, self.window, self.merged_windows)

    # -- process window function context -------------------------------------------------
    def current_watermark(self) -> int:
        return self.clocks.watermark

    def current_processing_time(self) -> int:
        return self.clocks.processing_time

    def window_state(self) -> Any:
        if self.is_merging:
            return _MergingWindowStateStore()
        return _StateStore(self.ks.window_state, self.window)

    def global_state(self) -> Any:
        return _StateStore(self.ks.global_state, None)

    def output(self, tag: OutputTag, value: Any) -> None:
        if not isinstance(tag, OutputTag):
            msg = f"output: tag must be an OutputTag, got {tag!r}"
            raise ValueError(msg)
        if tag == self.late_tag:
            msg = (
                f"output: {tag!r} is the late data tag (side_output_late_data), which holds "
                "the late input rows; write a function's values to an OutputTag of their own"
            )
            raise ValueError(msg)
        w = self.window
        self.side_outputs.setdefault(tag, []).append(
            WindowResult(self.key, w, value, w.max_timestamp())
        )


class DeferredStateContext(WindowContext):
    """A window's context whose key state is looked up (``key_state(state_key)``; the state
    key is set before each window with the key and window) only when the function asks for
    state; ``used`` says whether it did since the caller last reset it."""

    __slots__ = ("key_state", "state_key", "used")

    key_state: Callable[[Any], KeyState]
    state_key: Any
    used: bool

    def _bind(self) -> None:
        self.ks = self.key_state(self.state_key)
        self.used = True

    def window_state(self) -> Any:
        self._bind()
        return super().window_state()

    def global_state(self) -> Any:
        self._bind()
        return super().global_state()


# The context passed to process functions exposes ``window()`` as a method (PyFlink).
class ProcessContext:
    __slots__ = ("ctx",)

    def __init__(self, ctx: WindowContext) -> None:
        self.ctx = ctx

    def window(self) -> Any:
        return self.ctx.window

    def current_watermark(self) -> int:
        return self.ctx.clocks.watermark

    def current_processing_time(self) -> int:
        return self.ctx.clocks.processing_time

    def window_state(self) -> Any:
        return self.ctx.window_state()

    def global_state(self) -> Any:
        return self.ctx.global_state()

    def output(self, tag: OutputTag, value: Any) -> None:
        self.ctx.output(tag, value)


def check_outputs(outputs: Any, what: str, key: Any, window: Any) -> Iterable[Any]:
    if outputs is None or isinstance(outputs, str | bytes) or not isinstance(outputs, Iterable):
        msg = (
            f"{what} must return an iterable of outputs (a list, or yield them), got "
            f"{type(outputs).__name__} {outputs!r} for key {key!r} and window {window_text(window)}"
        )
        raise TypeError(msg)
    return outputs
