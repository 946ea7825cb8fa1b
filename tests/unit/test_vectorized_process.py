"""Vectorized window functions on the window operator (the adapter): batches in each format,
every kind of return value, the context, evictors, and mistakes named."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from windowing import (
    CountTrigger,
    EventTimeSessionWindows,
    TumblingEventTimeWindows,
    VectorizedProcessWindowFunction,
)
from windowing.evictors import Evictor
from windowing.functions.spec import Process, as_spec, with_input_schema
from windowing.functions.vectorized_process import (
    VectorizedProcessAdapter,
    as_output_table,
    overrides_clear,
)
from windowing.state import ValueStateDescriptor
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP


class Stats(VectorizedProcessWindowFunction):
    """Rows and sum of ``x`` in the batch format ``fmt``, as the return kind ``kind``."""

    def __init__(self, fmt: str = "arrow", kind: str = "dict") -> None:
        self.batch_format = fmt  # type: ignore[misc]
        self.kind = kind

    def process(self, key: Any, context: Any, batch: Any) -> Any:
        if self.batch_format == "arrow":
            n, total = batch.num_rows, sum(batch.column("x").to_pylist())
        elif self.batch_format == "pandas":
            n, total = len(batch), int(batch["x"].sum())
        else:
            n, total = len(batch["x"]), int(np.sum(batch["x"]))
        out = {"key": [key], "n": [n], "total": [total], "end": [context.window().end]}
        if self.kind == "arrow":
            return pa.table(out)
        if self.kind == "batch":
            return pa.RecordBatch.from_pydict(out)
        if self.kind == "pandas":
            return pd.DataFrame(out)
        if self.kind == "rows":
            return [(key, n, total, context.window().end)]
        return out


def run(function: Any, assigner: Any = None, **options: Any) -> list[Any]:
    harness = WindowOperatorHarness(assigner or TumblingEventTimeWindows(10), function, **options)
    for t, x, key in [(1, 1, "a"), (4, 2, "a"), (12, 5, "a"), (3, 7, "b")]:
        harness.process_element({"x": x}, t, key)
    harness.process_watermark(MAX_TIMESTAMP)
    out = [(r.key, r.window.start, r.value) for r in harness.extract_output()]
    return sorted(out, key=lambda r: (r[0], r[1]))


@pytest.mark.parametrize("fmt", ["arrow", "pandas", "numpy"])
@pytest.mark.parametrize("kind", ["dict", "arrow", "batch", "pandas", "rows"])
def test_every_batch_format_and_return_kind_gives_a_row_per_table_row(fmt: str, kind: str) -> None:
    out = run(Stats(fmt, kind))
    values = [(k, s, tuple(v.values()) if isinstance(v, dict) else v) for k, s, v in out]
    assert values == [
        ("a", 0, ("a", 2, 3, 10)),
        ("a", 10, ("a", 1, 5, 20)),
        ("b", 0, ("b", 1, 7, 10)),
    ]


def test_none_or_an_empty_table_is_no_output_and_many_rows_many_outputs() -> None:
    class Each(VectorizedProcessWindowFunction):
        def process(self, key: Any, context: Any, batch: pa.Table) -> Any:
            if key == "b":
                return None
            return batch.select(["x"]) if context.window().start else batch.slice(0, 0)

    assert run(Each()) == [("a", 10, {"x": 5})]


def test_the_context_gives_clocks_window_and_per_key_state() -> None:
    seen = ValueStateDescriptor("seen", 0)

    class Clocks(VectorizedProcessWindowFunction):
        def process(self, key: Any, context: Any, batch: pa.Table) -> Any:
            state = context.global_state().get_state(seen)
            state.update(state.value() + batch.num_rows)
            return [(context.current_watermark(), state.value())]

    out = run(Clocks())
    assert [v for _, _, v in out] == [(MAX_TIMESTAMP, 2), (MAX_TIMESTAMP, 3), (MAX_TIMESTAMP, 1)]


def test_early_firings_see_the_window_so_far() -> None:
    out = run(Stats(), trigger=CountTrigger(1))
    assert [v["n"] for k, s, v in out if (k, s) == ("a", 0)] == [1, 2]


def test_an_evictor_that_removes_every_row_gives_an_empty_batch() -> None:
    class All(Evictor):
        def evict_before(self, elements: Any, window: Any, ctx: Any) -> Any:
            return []

        def evict_after(self, elements: Any, window: Any, ctx: Any) -> Any:
            return elements

    class Width(VectorizedProcessWindowFunction):
        def process(self, key: Any, context: Any, batch: pa.Table) -> Any:
            return [(batch.num_rows, batch.num_columns)]

    assert {v for _, _, v in run(Width(), evictor=All())} == {(0, 0)}
    adapter = VectorizedProcessAdapter(Width(), pa.schema([("x", pa.int64())]))
    assert adapter.process("k", None, []) == [(0, 1)]


def test_clear_is_called_and_sessions_refuse_per_window_state() -> None:
    cleared: list[Any] = []

    class Clearing(VectorizedProcessWindowFunction):
        def process(self, key: Any, context: Any, batch: pa.Table) -> Any:
            return [batch.num_rows]

        def clear(self, context: Any) -> None:
            cleared.append(context.window().start)

    assert overrides_clear(Clearing()) and not overrides_clear(Stats())
    run(Clearing())
    assert sorted(cleared) == [0, 0, 10]

    class PerWindow(VectorizedProcessWindowFunction):
        def process(self, key: Any, context: Any, batch: pa.Table) -> Any:
            context.window_state().get_state(ValueStateDescriptor("v", 0))
            return []

    with pytest.raises(RuntimeError, match="Per-window state is not allowed"):
        run(PerWindow(), EventTimeSessionWindows(3))


def test_a_spec_holds_the_adapter_and_takes_the_input_schema() -> None:
    fn = Stats()
    spec = as_spec(fn)
    assert isinstance(spec, Process) and spec.vectorized is fn
    schema = pa.schema([("x", pa.int32())])
    typed = with_input_schema(spec, schema)
    assert isinstance(typed, Process) and typed.function.input_schema == schema
    assert typed.vectorized is fn
    with pytest.raises(ValueError, match="not incremental; window_function is not allowed"):
        as_spec(fn, Stats())


def test_mistakes_are_named() -> None:
    class Text(VectorizedProcessWindowFunction):
        def process(self, key: Any, context: Any, batch: pa.Table) -> Any:
            return "three"

    with pytest.raises(TypeError, match=r"Text\.process must return a pyarrow Table.*str"):
        run(Text())

    class Bad(Stats):
        batch_format = "polars"  # type: ignore[assignment]

    with pytest.raises(ValueError, match="batch_format must be one of arrow, pandas, numpy"):
        VectorizedProcessAdapter(Bad("polars"))
    with pytest.raises(ValueError, match="must be a VectorizedProcessWindowFunction"):
        VectorizedProcessAdapter(lambda a, b: a)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got int 3"):
        as_output_table(3)


def test_the_late_data_tag_is_not_for_a_functions_values() -> None:
    from windowing import OutputTag, ProcessWindowFunction

    late = OutputTag("late")

    class Writes(ProcessWindowFunction):
        def process(self, key: Any, context: Any, elements: Any) -> Any:
            context.output(late, 1)
            return []

    harness = WindowOperatorHarness(TumblingEventTimeWindows(10), Writes(), late_output_tag=late)
    harness.process_element({"x": 1}, 1, "a")
    with pytest.raises(ValueError, match="is the late data tag"):
        harness.process_watermark(MAX_TIMESTAMP)
