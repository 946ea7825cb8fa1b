"""Evaluating a window: the window function over its contents, through the evictor when there
is one (Flink's ``WindowOperator.emitWindowContents`` and ``EvictingWindowOperator``)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from windowing.engine.context import check_outputs
from windowing.engine.keystate import KeyState
from windowing.engine.notes import END_OF_INPUT_NOTE, note_window
from windowing.functions.base import ProcessWindowFunction
from windowing.functions.spec import Aggregate, Apply, Fold, Process, Reduce
from windowing.records import WindowResult
from windowing.time import MAX_TIMESTAMP
from windowing.windows import TimestampedValue, TimeWindow

if TYPE_CHECKING:
    from windowing.engine.services import Engine


__all__ = ["MISSING", "WindowEvaluator", "check_evicted"]

#: No contents (distinct from any value, ``None`` included).
MISSING: Any = object()
_MISSING = MISSING


class WindowEvaluator:
    """Evaluates windows of one operator and appends their results to its output.

    ``window_contents``, when set, computes a window's contents at firing time (windows of a
    record timeline keep none of their own).
    """

    __slots__ = ("engine", "window_contents")

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.window_contents: Callable[[KeyState, Any], Any] | None = None

    def emit(self, key: Any, ks: KeyState, window: Any, state_window: Any) -> bool:
        """Evaluate ``window``; returns False when it was empty (nothing emitted).

        As in Flink, a window is empty when it has no contents, or when its incremental
        result (reduced value, fold accumulator, ``AggregateFunction.get_result``) is ``None``.
        """
        lazy = self.window_contents
        contents = ks.contents.get(state_window, _MISSING) if lazy is None else lazy(ks, window)
        if contents is _MISSING:
            return False
        return self.emit_contents(key, ks, window, state_window, contents)

    def emit_guarded(self, key: Any, ks: KeyState, window: Any, state_window: Any) -> bool:
        """:meth:`emit` with errors dead-lettered (:meth:`guard`)."""
        return self.guard(self.emit, key, window, ks, window, state_window)

    def emit_contents_guarded(
        self, key: Any, ks: KeyState, window: Any, state_window: Any, contents: Any
    ) -> bool:
        """:meth:`emit_contents` with errors dead-lettered (:meth:`guard`)."""
        return self.guard(self.emit_contents, key, window, ks, window, state_window, contents)

    def guard(self, emit: Callable[..., bool], key: Any, window: Any, *args: Any) -> bool:
        """``emit(key, ...)``; on an error, the firing's outputs are taken back and the error
        is dead-lettered (the window counts as fired: a purge still applies; the firing is
        not counted as a pane)."""
        engine = self.engine
        n_out = len(engine.outputs.output)
        sides = {tag: len(values) for tag, values in engine.outputs.side_outputs.items()}
        fired, nulls = (
            engine.outputs.metrics.num_windows_fired,
            engine.outputs.metrics.num_null_results,
        )
        try:
            return emit(key, *args)
        except Exception as exc:
            del engine.outputs.output[n_out:]
            for tag, values in list(engine.outputs.side_outputs.items()):
                del values[sides.get(tag, 0) :]
            engine.outputs.metrics.num_windows_fired, engine.outputs.metrics.num_null_results = (
                fired,
                nulls,
            )
            engine.dead_letter(exc, key, window)
            return True

    def emit_contents(
        self, key: Any, ks: KeyState, window: Any, state_window: Any, contents: Any
    ) -> bool:
        direct = self.engine.direct_result
        if direct is not None:
            try:
                value = direct(contents)
            except Exception as exc:
                note_window(exc, window, key)
                raise
            if value is None:
                self.engine.null_results(key, (window,))
                return False
            self.engine.outputs.metrics.num_windows_fired += 1
            panes = self.engine.pane_tracker
            pane = None if panes is None else panes.next(ks, window)
            self.engine.outputs.output.append(
                tuple.__new__(WindowResult, (key, window, value, window.max_timestamp(), pane))
            )
            return True
        ctx = self.engine.ctx
        ctx.key, ctx.ks, ctx.window = key, ks, window
        spec = self.engine.job.spec
        try:
            outputs: Iterable[Any]
            if self.engine.job.evictor is not None:
                outputs = self.evaluate_evicting(key, ks, window, state_window, contents)
            elif isinstance(spec, Reduce | Fold | Aggregate):
                result = (
                    spec.function.get_result(contents) if isinstance(spec, Aggregate) else contents
                )
                if result is None:
                    self.engine.null_results(key, (window,))
                    return False
                outputs = self.finish(key, window, result)
            else:
                outputs = self.evaluate_all(key, window, list(contents))
            panes = self.engine.pane_tracker
            if panes is not None:
                outputs = list(outputs)  # the pane is counted once the firing succeeded
            self.engine.outputs.metrics.num_windows_fired += 1
            ts = window.max_timestamp()
            pane = None if panes is None else panes.next(ks, window)
            append = self.engine.outputs.output.append
            for out in outputs:
                append(WindowResult(key, window, out, ts, pane))
        except Exception as exc:
            note_window(exc, window, key)
            raise
        return True

    def finish(self, key: Any, window: Any, result: Any) -> Iterable[Any]:
        """Outputs for an incremental result, through the optional window function."""
        spec = self.engine.job.spec
        wf = spec.window_function if isinstance(spec, Reduce | Aggregate | Fold) else None
        if wf is None:
            return (result,)
        if isinstance(wf, ProcessWindowFunction):
            out = wf.process(key, self.engine.pctx, [result])
            return check_outputs(out, "ProcessWindowFunction.process", key, window)
        out = wf.apply(key, window, [result])
        return check_outputs(out, "WindowFunction.apply", key, window)

    def evaluate_all(self, key: Any, window: Any, values: list[Any]) -> Iterable[Any]:
        """Evaluate over all buffered values (process/apply, or any kind with an evictor)."""
        spec = self.engine.job.spec
        if isinstance(spec, Process):
            out = spec.function.process(key, self.engine.pctx, values)
            return check_outputs(out, "ProcessWindowFunction.process", key, window)
        if isinstance(spec, Apply):
            out = spec.function.apply(key, window, values)
            return check_outputs(out, "WindowFunction.apply", key, window)
        if isinstance(spec, Reduce):
            # Everything evicted: Flink's ReduceApplyWindowFunction passes on a null.
            result = functools.reduce(spec.reducer(), values) if values else None
            return self.finish(key, window, result)
        if isinstance(spec, Aggregate):
            agg = spec.function
            acc = agg.create_accumulator()
            for v in values:
                acc = agg.add(v, acc)
            return self.finish(key, window, agg.get_result(acc))
        folder = spec.folder()
        acc = copy.deepcopy(spec.initial_value)
        for v in values:
            acc = folder(acc, v)
        return self.finish(key, window, acc)

    def evaluate_evicting(
        self, key: Any, ks: KeyState, window: Any, state_window: Any, buffer: list[Any]
    ) -> list[Any]:
        evictor = self.engine.job.evictor
        assert evictor is not None
        ctx = self.engine.ctx
        kept = check_evicted(evictor.evict_before(list(buffer), window, ctx), "evict_before")
        outputs = list(self.evaluate_all(key, window, [e.value for e in kept]))
        ctx.window = window
        kept = check_evicted(evictor.evict_after(list(kept), window, ctx), "evict_after")
        if kept:
            ks.contents[state_window] = kept
        else:
            ks.contents.pop(state_window, None)
        return outputs

    def fire_in_order(self, key: Any, windows: list[tuple[TimeWindow, Any]]) -> None:
        """Emit the windows' results in the given order, as their end-of-window timers would
        at the end of input (a ``None`` result is an empty window)."""
        direct = self.engine.direct_result
        assert direct is not None
        append = self.engine.outputs.output.append
        new_tuple = tuple.__new__
        panes = self.engine.pane_tracker
        # fired by the end of input: the watermark goes from where it is to the end of time
        end = (self.engine.clocks.watermark, MAX_TIMESTAMP)
        fired = 0
        window: Any = None
        try:
            for window, contents in windows:
                result = direct(contents)
                if result is not None:
                    fired += 1
                    pane = None if panes is None else panes.next(None, window, end)
                    append(new_tuple(WindowResult, (key, window, result, window[1] - 1, pane)))
                else:
                    self.engine.null_results(key, (window,))
        except Exception as exc:
            note_window(exc, window, key)
            exc.add_note(END_OF_INPUT_NOTE)
            raise
        finally:
            self.engine.outputs.metrics.num_windows_fired += fired


def check_evicted(kept: Any, what: str) -> list[Any]:
    """The elements an evictor keeps, checked."""
    if kept is None or isinstance(kept, str | bytes) or not isinstance(kept, Iterable):
        msg = (
            f"Evictor.{what} must return the elements to keep (a list of TimestampedValue), "
            f"got {type(kept).__name__} {kept!r}"
        )
        raise TypeError(msg)
    elements: list[Any] = list(kept)
    for e in elements:
        if not isinstance(e, TimestampedValue):
            msg = f"Evictor.{what} must return TimestampedValue elements, got {e!r}"
            raise TypeError(msg)
    return elements
