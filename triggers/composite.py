"""Composite triggers: combine triggers (``AnyOf``, ``AllOf``), restart one (``Repeatedly``),
stop one (``OrFinally``), and Beam-style early/late firings (``AfterWatermark``).

Flink has no composite triggers; Beam does (``AfterAny``, ``AfterAll``, ``Repeatedly``,
``OrFinally``, ``AfterWatermark(early, late)``), but Beam triggers *finish* while Flink's (and
ours) answer every callback with a :class:`~windowing.triggers.TriggerResult` and never finish. The
rules below translate Beam's composites into results; ``docs/triggers.md`` lists every rule
that had to be decided.

How children are isolated
-------------------------
Each child sees the composite's context through a :class:`_ChildContext`:

* **state**: every state descriptor name is prefixed with the child's slot (``"0/count"``,
  ``"1/count"``, ``"early/fire-time"``; Beam's ``NestedContext``), so children never share
  state, however they name it; nested composites stack prefixes (``"0/1/count"``);
* **timers**: registrations pass through to the window's timers, and the composite records
  which children own each timer (a map ``time -> bitmask`` in the state ``"#event-timers"`` /
  ``"#processing-timers"``). When a timer fires, only its owners are called. A child therefore
  sees exactly the callbacks it would see on its own, and the operator's cleanup timer (which
  no child owns) reaches no child. A child deleting a timer only deletes the window's timer
  when no other child still owns it;
* **reset**: when a composite restarts a child (``Repeatedly`` after a firing, ``OrFinally``
  when it finishes, ``AfterWatermark`` at the end of the window) the child's state is cleared
  and its timers are disowned, not deleted: a disowned timer still fires but reaches no child
  (it may coincide with the operator's cleanup timer, which must survive). ``clear`` of the
  composite deletes every timer it ever registered and all of its state.

A composite can merge (session windows) only when every child can; ``on_merge`` calls each
child's ``on_merge`` with its child context, so ``merge_partitioned_state`` merges the child's
prefixed state, and merges the composite's own flags.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from windowing.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult

__all__ = ["AfterWatermark", "AllOf", "AnyOf", "OrFinally", "Repeatedly"]

CONTINUE = TriggerResult.CONTINUE
FIRE = TriggerResult.FIRE
PURGE = TriggerResult.PURGE
FIRE_AND_PURGE = TriggerResult.FIRE_AND_PURGE

#: Which slots own each pending timer: ``time -> bitmask`` (0: registered, now disowned).
EVENT_TIMERS: MapStateDescriptor[int, int] = MapStateDescriptor("#event-timers")
PROCESSING_TIMERS: MapStateDescriptor[int, int] = MapStateDescriptor("#processing-timers")


_DESCRIPTORS = (
    ValueStateDescriptor,
    ReducingStateDescriptor,
    ListStateDescriptor,
    AggregatingStateDescriptor,
    MapStateDescriptor,
)


def _result(fire: bool, purge: bool) -> TriggerResult:
    if fire:
        return FIRE_AND_PURGE if purge else FIRE
    return PURGE if purge else CONTINUE


def _any(results: Sequence[TriggerResult]) -> TriggerResult:
    """Fire if any result fires; purge if any purges."""
    return _result(any(r.is_fire() for r in results), any(r.is_purge() for r in results))


# ------------------------------------------------------------------------- child contexts
@functools.lru_cache(maxsize=4096)
def _prefixed_cached(descriptor: Any, prefix: str) -> Any:
    return dataclasses.replace(descriptor, name=prefix + descriptor.name)


def _prefixed(descriptor: Any, prefix: str) -> Any:
    """``descriptor`` renamed to ``prefix + name`` (cached: descriptors are immutable)."""
    if not isinstance(descriptor, _DESCRIPTORS):
        msg = f"descriptor must be a state descriptor, got {descriptor!r}"
        raise ValueError(msg)
    try:
        return _prefixed_cached(descriptor, prefix)
    except TypeError:  # unhashable fields (e.g. a list default): not cached
        return dataclasses.replace(descriptor, name=prefix + descriptor.name)


def _own(ctx: Any, timers: MapStateDescriptor[int, int], time: int, bit: int) -> None:
    owners = ctx.get_partitioned_state(timers)
    mask = owners.get(time) or 0
    if not mask & bit:
        owners.put(time, mask | bit)


def _disown(ctx: Any, timers: MapStateDescriptor[int, int], time: int, bit: int) -> bool:
    """Drop ``bit``'s claim on ``time``; True when nobody owns the timer any more."""
    owners = ctx.get_partitioned_state(timers)
    mask: int | None = owners.get(time)
    if mask is None or not mask & bit:
        return False  # not this slot's timer (Flink triggers delete timers unconditionally)
    mask &= ~bit
    owners.put(time, mask)
    return not mask


class _ChildContext:
    """The context of one child: prefixed state, timers recorded with their owner.

    ``detached`` contexts (used while resetting a child mid-life) only disown timers on
    delete; attached ones delete the window's timer once no slot owns it.
    """

    __slots__ = ("_bit", "_ctx", "_detached", "_prefix")

    def __init__(self, ctx: Any, prefix: str, bit: int, detached: bool = False) -> None:
        self._ctx = ctx
        self._prefix = prefix
        self._bit = bit
        self._detached = detached

    def get_current_watermark(self) -> int:
        return self._ctx.get_current_watermark()  # type: ignore[no-any-return]

    def get_current_processing_time(self) -> int:
        return self._ctx.get_current_processing_time()  # type: ignore[no-any-return]

    def register_event_time_timer(self, time: int) -> None:
        _own(self._ctx, EVENT_TIMERS, time, self._bit)
        self._ctx.register_event_time_timer(time)

    def register_processing_time_timer(self, time: int) -> None:
        _own(self._ctx, PROCESSING_TIMERS, time, self._bit)
        self._ctx.register_processing_time_timer(time)

    def delete_event_time_timer(self, time: int) -> None:
        if _disown(self._ctx, EVENT_TIMERS, time, self._bit) and not self._detached:
            self._ctx.get_partitioned_state(EVENT_TIMERS).remove(time)
            self._ctx.delete_event_time_timer(time)

    def delete_processing_time_timer(self, time: int) -> None:
        if _disown(self._ctx, PROCESSING_TIMERS, time, self._bit) and not self._detached:
            self._ctx.get_partitioned_state(PROCESSING_TIMERS).remove(time)
            self._ctx.delete_processing_time_timer(time)

    def get_partitioned_state(self, descriptor: Any) -> Any:
        return self._ctx.get_partitioned_state(_prefixed(descriptor, self._prefix))

    def merge_partitioned_state(self, descriptor: Any) -> None:
        self._ctx.merge_partitioned_state(_prefixed(descriptor, self._prefix))


# ------------------------------------------------------------------------- shared machinery
class _Composite(Trigger[Any, Any]):
    """Dispatch, reset, clear and merge of child triggers in slots ``0 .. n-1``; slot ``n``
    is the composite's own timers (``AfterWatermark``'s end-of-window timer)."""

    def _slots(self) -> Sequence[Trigger[Any, Any] | None]:
        raise NotImplementedError

    def _prefix(self, index: int) -> str:
        return f"{index}/"

    def _child_ctx(self, ctx: Any, index: int, detached: bool = False) -> _ChildContext:
        return _ChildContext(ctx, self._prefix(index), 1 << index, detached)

    def _own_bit(self) -> int:
        return 1 << len(self._slots())

    def _dispatch(
        self, time: int, window: Any, ctx: Any, event_time: bool
    ) -> tuple[list[TriggerResult | None], bool]:
        """Call the owners of the timer at ``time``. Returns each slot's result (``None``:
        not called) and whether the composite's own bit owned the timer."""
        slots = self._slots()
        owners = ctx.get_partitioned_state(EVENT_TIMERS if event_time else PROCESSING_TIMERS)
        mask = owners.get(time)
        results: list[TriggerResult | None] = [None] * len(slots)
        if mask is None:
            return results, False  # not registered through this composite (e.g. cleanup)
        owners.remove(time)  # the timer has fired; a child may register it again below
        for index, child in enumerate(slots):
            if child is not None and mask & (1 << index):
                cctx = self._child_ctx(ctx, index)
                if event_time:
                    results[index] = child.on_event_time(time, window, cctx)
                else:
                    results[index] = child.on_processing_time(time, window, cctx)
        return results, bool(mask & self._own_bit())

    def _reset(self, index: int, window: Any, ctx: Any) -> None:
        """Clear a child mid-life: its state goes, its timers are disowned (not deleted)."""
        child = self._slots()[index]
        if child is None:
            return
        child.clear(window, self._child_ctx(ctx, index, detached=True))
        bit = 1 << index
        for timers in (EVENT_TIMERS, PROCESSING_TIMERS):
            owners = ctx.get_partitioned_state(timers)
            for time, mask in owners.items():
                if mask & bit:
                    owners.put(time, mask & ~bit)

    def _clear_all(self, window: Any, ctx: Any) -> None:
        for index, child in enumerate(self._slots()):
            if child is not None:
                child.clear(window, self._child_ctx(ctx, index))
        for timers, delete in (
            (EVENT_TIMERS, ctx.delete_event_time_timer),
            (PROCESSING_TIMERS, ctx.delete_processing_time_timer),
        ):
            owners = ctx.get_partitioned_state(timers)
            for time in owners.keys():  # noqa: SIM118 - MapState is not iterable
                delete(time)
            owners.clear()

    def _register_own_event_timer(self, time: int, ctx: Any) -> None:
        _own(ctx, EVENT_TIMERS, time, self._own_bit())
        ctx.register_event_time_timer(time)

    def can_merge(self) -> bool:
        return all(child.can_merge() for child in self._slots() if child is not None)

    def _merge_children(self, window: Any, ctx: OnMergeContext) -> None:
        slots = self._slots()
        blocking = [
            f"{self._prefix(i).rstrip('/')}: {child!r}"
            for i, child in enumerate(slots)
            if child is not None and not child.can_merge()
        ]
        if blocking:
            msg = (
                f"{type(self).__name__} cannot merge windows: every child must support merging "
                f"(can_merge() is True), but these cannot: {', '.join(blocking)}"
            )
            raise ValueError(msg)
        for index, child in enumerate(slots):
            if child is not None:
                child.on_merge(window, self._child_ctx(ctx, index))


def _check_trigger(value: Any, what: str, owner: str) -> Trigger[Any, Any]:
    if not isinstance(value, Trigger):
        msg = f"{owner}: {what} must be a Trigger, got {type(value).__name__} {value!r}"
        raise ValueError(msg)
    return value


def _check_children(triggers: tuple[Any, ...], owner: str) -> tuple[Trigger[Any, Any], ...]:
    if not triggers:
        msg = f"{owner} needs at least one trigger, got none: {owner}()"
        raise ValueError(msg)
    return tuple(_check_trigger(t, f"trigger {i}", owner) for i, t in enumerate(triggers))


def _results_or_continue(results: Sequence[TriggerResult | None]) -> list[TriggerResult]:
    return [CONTINUE if r is None else r for r in results]


# ------------------------------------------------------------------------- AnyOf
@dataclass(frozen=True, init=False, repr=False)
class AnyOf(_Composite):
    """Fires whenever any child fires: "count or time" in one line.

    Rules: every callback goes to every child (timers: to the children that own the timer),
    never short-circuited, so each child evolves exactly as it would alone. The result fires
    when any child's result fires and purges when any child's result purges (``FIRE`` +
    ``PURGE`` from two children gives ``FIRE_AND_PURGE``). Never finishes: with Flink-style
    children, which re-arm themselves, this is Beam's ``Repeatedly(AfterAny(...))``. Can merge
    when every child can.

    Known elsewhere as: Beam ``AfterAny(*triggers)``; Flink has none (it takes a hand-written
    trigger).

    Parameters
    ----------
    *triggers
        One or more child triggers, each with its own state namespace (``"0/"``, ``"1/"``...).

    Examples
    --------
    Fire every 3 elements or when the processing-time window ends, whichever comes first:

    >>> from windowing.triggers import CountTrigger, ProcessingTimeTrigger
    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import TimeWindow
    >>> h = TriggerHarness(AnyOf(CountTrigger(3), ProcessingTimeTrigger()))
    >>> w = TimeWindow(0, 100)
    >>> [h.process_element(v, None, w).name for v in "abcd"]
    ['CONTINUE', 'CONTINUE', 'FIRE', 'CONTINUE']
    >>> [r.name for _, r in h.advance_processing_time(99)]
    ['FIRE']
    >>> h.clear(w); h.num_processing_time_timers(), h.num_state_entries()
    (0, 0)
    """

    triggers: tuple[Trigger[Any, Any], ...]

    def __init__(self, *triggers: Trigger[Any, Any]) -> None:
        object.__setattr__(self, "triggers", _check_children(triggers, "AnyOf"))

    def _slots(self) -> Sequence[Trigger[Any, Any] | None]:
        return self.triggers

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        return _any(
            [
                child.on_element(element, timestamp, window, self._child_ctx(ctx, i))
                for i, child in enumerate(self.triggers)
            ]
        )

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        results, _ = self._dispatch(time, window, ctx, event_time=True)
        return _any(_results_or_continue(results))

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        results, _ = self._dispatch(time, window, ctx, event_time=False)
        return _any(_results_or_continue(results))

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        self._merge_children(window, ctx)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        self._clear_all(window, ctx)

    def __repr__(self) -> str:
        return f"AnyOf({', '.join(map(repr, self.triggers))})"


# ------------------------------------------------------------------------- AllOf
def _elementwise_max(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x if x >= y else y for x, y in zip(a, b, strict=True))


#: Per child, since the composite last fired: 0 not fired, 1 fired, 2 fired with purge.
FIRED: ReducingStateDescriptor[tuple[int, ...]] = ReducingStateDescriptor(
    "#fired", _elementwise_max
)


@dataclass(frozen=True, init=False, repr=False)
class AllOf(_Composite):
    """Fires once every child has fired since the composite last fired.

    Rules: every callback goes to every child (timers: to their owners), as in
    :class:`AnyOf`. A child's firing is remembered in the state ``"#fired"`` (with whether it
    purged). When the last missing child fires, the composite returns ``FIRE``, or
    ``FIRE_AND_PURGE`` if any remembered firing purged, and forgets all firings: the next
    composite firing again needs every child to fire (Beam's ``Repeatedly(AfterAll(...))``;
    children keep their own state, which Flink-style triggers reset themselves when they
    fire). A child's firing with purge does not purge before the composite fires (that would
    lose elements); a bare ``PURGE`` from a child is passed on at once. Merged windows count a
    child as fired if it fired in any of them. Can merge when every child can.

    Known elsewhere as: Beam ``AfterAll(*triggers)``; Flink has none.

    Parameters
    ----------
    *triggers
        One or more child triggers, each with its own state namespace.

    Examples
    --------
    Fire when at least 2 elements arrived *and* the watermark passed the window end:

    >>> from windowing.triggers import CountTrigger, EventTimeTrigger
    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import TimeWindow
    >>> h = TriggerHarness(AllOf(CountTrigger(2), EventTimeTrigger()))
    >>> w = TimeWindow(0, 10)
    >>> h.process_element("a", 1, w).name
    'CONTINUE'
    >>> [r.name for _, r in h.advance_watermark(9)]  # the end of the window alone: not yet
    ['CONTINUE']
    >>> h.process_element("b", 2, w).name  # second element (late): both have fired
    'FIRE'
    >>> h.clear(w); h.num_event_time_timers(), h.num_state_entries()
    (0, 0)
    """

    triggers: tuple[Trigger[Any, Any], ...]

    def __init__(self, *triggers: Trigger[Any, Any]) -> None:
        object.__setattr__(self, "triggers", _check_children(triggers, "AllOf"))

    def _slots(self) -> Sequence[Trigger[Any, Any] | None]:
        return self.triggers

    def _combine(self, results: Sequence[TriggerResult], ctx: Any) -> TriggerResult:
        marks = tuple(2 if r.is_fire() and r.is_purge() else int(r.is_fire()) for r in results)
        bare_purge = any(r.is_purge() and not r.is_fire() for r in results)
        fired = ctx.get_partitioned_state(FIRED)
        if any(marks):
            fired.add(marks)
        seen = fired.get()
        if seen is not None and all(seen):
            fired.clear()
            return FIRE_AND_PURGE if bare_purge or 2 in seen else FIRE
        return PURGE if bare_purge else CONTINUE

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        results = [
            child.on_element(element, timestamp, window, self._child_ctx(ctx, i))
            for i, child in enumerate(self.triggers)
        ]
        return self._combine(results, ctx)

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        results, _ = self._dispatch(time, window, ctx, event_time=True)
        return self._combine(_results_or_continue(results), ctx)

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        results, _ = self._dispatch(time, window, ctx, event_time=False)
        return self._combine(_results_or_continue(results), ctx)

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        self._merge_children(window, ctx)
        ctx.merge_partitioned_state(FIRED)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        self._clear_all(window, ctx)
        ctx.get_partitioned_state(FIRED).clear()

    def __repr__(self) -> str:
        return f"AllOf({', '.join(map(repr, self.triggers))})"


# ------------------------------------------------------------------------- Repeatedly
@dataclass(frozen=True, repr=False)
class Repeatedly(_Composite):
    """Restarts ``trigger`` from scratch after each of its firings.

    Rules: results are ``trigger``'s own; after a result that fires, ``trigger`` is reset:
    its state is cleared (``trigger.clear``) and its timers are disowned, so it behaves as if
    the window had just been created. For triggers that already re-arm themselves (``CountTrigger``,
    ``EventTimeTrigger``) nothing changes; for stateful ones it does: ``Repeatedly(DeltaTrigger)``
    takes the next element as the new reference, ``Repeatedly(ContinuousProcessingTimeTrigger)``
    fires once per interval *in which elements arrived* instead of every interval.
    Can merge when ``trigger`` can.

    Known elsewhere as: Beam ``Repeatedly(trigger)`` (where the child "finishes" when it fires;
    here it fires and is reset); Flink has none.

    Parameters
    ----------
    trigger
        The trigger to restart after every firing (state namespace ``"0/"``).

    Examples
    --------
    A delta trigger that measures from the element after each firing:

    >>> from windowing.triggers import DeltaTrigger
    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import GLOBAL_WINDOW as W
    >>> h = TriggerHarness(Repeatedly(DeltaTrigger(5, lambda old, new: new - old)))
    >>> [h.process_element(v, None, W).name for v in (0, 6, 7, 12, 13)]
    ['CONTINUE', 'FIRE', 'CONTINUE', 'CONTINUE', 'FIRE']
    >>> h.clear(W); h.num_state_entries()
    0
    """

    trigger: Trigger[Any, Any]

    def __post_init__(self) -> None:
        _check_trigger(self.trigger, "trigger", "Repeatedly")

    def _slots(self) -> Sequence[Trigger[Any, Any] | None]:
        return (self.trigger,)

    def _after(self, result: TriggerResult | None, window: Any, ctx: Any) -> TriggerResult:
        if result is None:
            return CONTINUE
        if result.is_fire():
            self._reset(0, window, ctx)
        return result

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        result = self.trigger.on_element(element, timestamp, window, self._child_ctx(ctx, 0))
        return self._after(result, window, ctx)

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        results, _ = self._dispatch(time, window, ctx, event_time=True)
        return self._after(results[0], window, ctx)

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        results, _ = self._dispatch(time, window, ctx, event_time=False)
        return self._after(results[0], window, ctx)

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        self._merge_children(window, ctx)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        self._clear_all(window, ctx)

    def __repr__(self) -> str:
        return f"Repeatedly({self.trigger!r})"


# ------------------------------------------------------------------------- OrFinally
def _or(a: int, b: int) -> int:
    return a | b


#: 1 once ``until`` has fired; merged windows are finished if any of them was.
FINISHED: ReducingStateDescriptor[int] = ReducingStateDescriptor("#finished", _or)


@dataclass(frozen=True, repr=False)
class OrFinally(_Composite):
    """Fires as ``main`` does until ``until`` fires once; then fires a last time, purges,
    and is finished for that window.

    Rules, while not finished: both children get every callback (timers: their owners).
    If ``until`` fires: ``FIRE_AND_PURGE`` (the final pane), the window is marked finished
    (state ``"#finished"``) and both children are reset. Otherwise ``main``'s result is
    returned, with a bare ``PURGE`` of ``until`` added. Once finished (Beam: the window is
    closed): every element returns ``PURGE`` (it is dropped, never emitted) and timers return
    ``CONTINUE``; the flag lives until the window is cleaned up (global windows: forever).
    Merged windows are finished if any of them was. Can merge when both children can.

    Known elsewhere as: Beam ``main.orFinally(until)`` / ``OrFinally(main, until)``; Flink has
    none.

    Parameters
    ----------
    main
        The trigger whose firings are passed on (namespace ``"0/"``).
    until
        The trigger whose first firing ends the window (namespace ``"1/"``).

    Examples
    --------
    Fire every 2 elements, until 5 elements arrived:

    >>> from windowing.triggers import CountTrigger
    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import GLOBAL_WINDOW as W
    >>> h = TriggerHarness(OrFinally(CountTrigger(2), CountTrigger(5)))
    >>> [h.process_element(v, None, W).name for v in range(7)]
    ['CONTINUE', 'FIRE', 'CONTINUE', 'FIRE', 'FIRE_AND_PURGE', 'PURGE', 'PURGE']
    >>> h.clear(W); h.num_state_entries()
    0
    """

    main: Trigger[Any, Any]
    until: Trigger[Any, Any]

    def __post_init__(self) -> None:
        _check_trigger(self.main, "main", "OrFinally")
        _check_trigger(self.until, "until", "OrFinally")

    def _slots(self) -> Sequence[Trigger[Any, Any] | None]:
        return (self.main, self.until)

    def _finished(self, ctx: Any) -> bool:
        return bool(ctx.get_partitioned_state(FINISHED).get())

    def _decide(
        self, main: TriggerResult | None, until: TriggerResult | None, window: Any, ctx: Any
    ) -> TriggerResult:
        main = CONTINUE if main is None else main
        until = CONTINUE if until is None else until
        if until.is_fire():
            ctx.get_partitioned_state(FINISHED).add(1)
            self._reset(0, window, ctx)
            self._reset(1, window, ctx)
            return FIRE_AND_PURGE
        return _result(main.is_fire(), main.is_purge() or until.is_purge())

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        if self._finished(ctx):
            return PURGE
        main = self.main.on_element(element, timestamp, window, self._child_ctx(ctx, 0))
        until = self.until.on_element(element, timestamp, window, self._child_ctx(ctx, 1))
        return self._decide(main, until, window, ctx)

    def _on_timer(self, time: int, window: Any, ctx: Any, event_time: bool) -> TriggerResult:
        if self._finished(ctx):
            ctx.get_partitioned_state(EVENT_TIMERS if event_time else PROCESSING_TIMERS).remove(
                time
            )
            return CONTINUE
        results, _ = self._dispatch(time, window, ctx, event_time)
        return self._decide(results[0], results[1], window, ctx)

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return self._on_timer(time, window, ctx, event_time=True)

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return self._on_timer(time, window, ctx, event_time=False)

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        self._merge_children(window, ctx)
        ctx.merge_partitioned_state(FINISHED)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        self._clear_all(window, ctx)
        ctx.get_partitioned_state(FINISHED).clear()


# ------------------------------------------------------------------------- AfterWatermark
_EARLY, _LATE = 0, 1


@dataclass(frozen=True, repr=False)
class AfterWatermark(_Composite):
    """Fires when the watermark passes the end of the window, plus optional early firings
    before it and late firings after it.

    Rules:

    * before the end (``window.max_timestamp() > watermark``): each element registers an
      event-time timer at ``window.max_timestamp()`` and goes to ``early``, whose firings are
      returned as they are; after each early firing ``early`` is reset (Beam wraps ``early``
      in ``Repeatedly``);
    * the end-of-window timer fires ``FIRE`` (the on-time pane) and resets ``early``;
    * after the end (an element of a window the watermark has passed, which needs allowed
      lateness): without ``late`` the element fires at once, as Flink's ``EventTimeTrigger``
      (and Beam's default trigger) do; with ``late`` the element goes to ``late``, whose
      firings are returned and which is reset after each of them. ``late=NeverTrigger()``
      suppresses late firings (late elements are kept until cleanup, never emitted);
    * timers of ``early`` / ``late`` reach only their owner; the results of one callback are
      combined as in :class:`AnyOf`.

    ``AfterWatermark()`` behaves as :class:`~windowing.triggers.EventTimeTrigger`. Never purges
    by itself (wrap it in :class:`~windowing.triggers.PurgingTrigger` for Beam's discarding
    mode). Can merge when ``early`` and ``late`` can; event-time windows only.

    Known elsewhere as: Beam ``AfterWatermark(early=..., late=...)``; Flink has none
    (``EventTimeTrigger`` is the case without ``early`` / ``late``).

    Parameters
    ----------
    early
        Trigger for speculative firings before the end of the window (namespace
        ``"early/"``), or ``None``.
    late
        Trigger for firings on late elements (namespace ``"late/"``), or ``None`` to fire on
        every late element.

    Examples
    --------
    Early firing every 2 elements, the on-time pane, and one late firing per 2 late elements:

    >>> from windowing.triggers import CountTrigger
    >>> from windowing.testing import TriggerHarness
    >>> from windowing.windows import TimeWindow
    >>> h = TriggerHarness(AfterWatermark(early=CountTrigger(2), late=CountTrigger(2)))
    >>> w = TimeWindow(0, 10)
    >>> [h.process_element(v, v, w).name for v in (1, 2, 3)]
    ['CONTINUE', 'FIRE', 'CONTINUE']
    >>> [r.name for _, r in h.advance_watermark(9)]
    ['FIRE']
    >>> [h.process_element(v, v, w).name for v in (4, 5)]
    ['CONTINUE', 'FIRE']
    >>> h.clear(w); h.num_event_time_timers(), h.num_state_entries()
    (0, 0)
    """

    early: Trigger[Any, Any] | None = None
    late: Trigger[Any, Any] | None = None

    def __post_init__(self) -> None:
        if self.early is not None:
            _check_trigger(self.early, "early", "AfterWatermark")
        if self.late is not None:
            _check_trigger(self.late, "late", "AfterWatermark")

    def _slots(self) -> Sequence[Trigger[Any, Any] | None]:
        return (self.early, self.late)

    def _prefix(self, index: int) -> str:
        return "early/" if index == _EARLY else "late/"

    def _repeatedly(
        self, index: int, result: TriggerResult, window: Any, ctx: Any
    ) -> TriggerResult:
        if result.is_fire():
            self._reset(index, window, ctx)
        return result

    def on_element(
        self, element: Any, timestamp: int | None, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        max_ts = window.max_timestamp()
        if max_ts <= ctx.get_current_watermark():
            if self.late is None:
                return FIRE  # late firing, as EventTimeTrigger
            result = self.late.on_element(element, timestamp, window, self._child_ctx(ctx, _LATE))
            return self._repeatedly(_LATE, result, window, ctx)
        self._register_own_event_timer(max_ts, ctx)
        if self.early is None:
            return CONTINUE
        result = self.early.on_element(element, timestamp, window, self._child_ctx(ctx, _EARLY))
        return self._repeatedly(_EARLY, result, window, ctx)

    def _on_timer(self, time: int, window: Any, ctx: Any, event_time: bool) -> TriggerResult:
        results, own = self._dispatch(time, window, ctx, event_time)
        combined: list[TriggerResult] = []
        for index, result in enumerate(results):
            if result is not None:
                combined.append(self._repeatedly(index, result, window, ctx))
        if own and time == window.max_timestamp():
            self._reset(_EARLY, window, ctx)  # the early phase is over
            combined.append(FIRE)
        return _any(combined)

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return self._on_timer(time, window, ctx, event_time=True)

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return self._on_timer(time, window, ctx, event_time=False)

    def on_merge(self, window: Any, ctx: OnMergeContext) -> None:
        self._merge_children(window, ctx)
        # As EventTimeTrigger: no timer when the watermark already passed the merged window
        # (the next element fires it; a timer here would fire it twice).
        max_ts = window.max_timestamp()
        if max_ts > ctx.get_current_watermark():
            self._register_own_event_timer(max_ts, ctx)

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        self._clear_all(window, ctx)
