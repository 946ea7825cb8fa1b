"""How a window's contents grow: one element added to a namespace's contents (a list, a
reduced value, an accumulator or a fold), and how two namespaces' contents merge."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from windowing.evictors.base import Evictor
from windowing.functions.spec import Aggregate, Fold, Reduce, WindowFunctionSpec
from windowing.plan import StateForm, state_form
from windowing.sliding import Partials
from windowing.windows import TimestampedValue

__all__ = ["Adder", "make_adder", "make_partials"]

_MISSING: Any = object()

#: ``add(contents, namespace, value, timestamp)``: add one element to ``contents[namespace]``.
Adder = Callable[[dict[Any, Any], Any, Any, "int | None"], None]


def make_adder(
    spec: WindowFunctionSpec, evictor: Evictor[Any, Any] | None
) -> tuple[Adder, Callable[[Any, Any], Any] | None]:
    """The element adder of a job and the merge of two contents (``None`` for a fold, which
    cannot merge)."""
    if state_form(spec, evictor) is StateForm.ELEMENTS:
        buffer_ts = evictor is not None

        def add_list(contents: dict[Any, Any], ns: Any, value: Any, ts: int | None) -> None:
            buf = contents.get(ns)
            item = TimestampedValue(value, ts) if buffer_ts else value
            if buf is None:
                contents[ns] = [item]
            else:
                buf.append(item)

        return add_list, lambda a, b: [*a, *b]
    elif isinstance(spec, Reduce):
        reducer = spec.reducer()

        def add_reduce(contents: dict[Any, Any], ns: Any, value: Any, ts: int | None) -> None:
            cur = contents.get(ns, _MISSING)
            contents[ns] = value if cur is _MISSING else reducer(cur, value)

        return add_reduce, reducer
    elif isinstance(spec, Aggregate):
        agg = spec.function
        create, agg_add = agg.create_accumulator, agg.add

        def add_agg(contents: dict[Any, Any], ns: Any, value: Any, ts: int | None) -> None:
            acc = contents.get(ns, _MISSING)
            contents[ns] = agg_add(value, create() if acc is _MISSING else acc)

        return add_agg, agg.merge
    else:
        assert isinstance(spec, Fold)
        folder = spec.folder()
        initial = spec.initial_value

        def add_fold(contents: dict[Any, Any], ns: Any, value: Any, ts: int | None) -> None:
            acc = contents.get(ns, _MISSING)
            contents[ns] = folder(copy.deepcopy(initial) if acc is _MISSING else acc, value)

        return add_fold, None


def make_partials(spec: WindowFunctionSpec, evictor: Evictor[Any, Any] | None) -> Partials:
    """The partials of a job's record timeline or panes (:mod:`windowing.sliding`)."""
    if evictor is not None:
        return Partials("values", timestamped=True)
    if isinstance(spec, Reduce):
        return Partials("reduce", reducer=spec.reducer())
    if isinstance(spec, Aggregate):
        return Partials("aggregate", aggregate=spec.function)
    if isinstance(spec, Fold):
        return Partials("values", fold=(spec.initial_value, spec.folder()))
    return Partials("values")
