"""Draws the documentation's pictures (``docs/img/*.png``) with ``plot_windows`` from runs of
the in-memory harness, so every picture shows what the window operator really does.

    python docs/make_pictures.py [OUT_DIR]      # or: ./dev pictures

``OUT_DIR`` defaults to ``docs/img``. ``tests/test_pictures.py`` runs it into a temporary
folder and checks that every picture is produced and that the documentation shows it.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from windowing import (
    BoundedOutOfOrderness,
    CountTrigger,
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    OutputTag,
    SlidingDistinctAssigner,
    TumblingEventTimeWindows,
    plot_windows,
)
from windowing.idleness import Idleness, KeyIdleness
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.triggers import AfterWatermark, OnWindowCloseTrigger

S = 1000  # the pictures count in seconds of event time
IMG = Path(__file__).resolve().parent / "img"


def _add(a: Any, b: Any) -> Any:
    return a + b


def replay(
    h: WindowOperatorHarness,
    rows: Iterable[tuple[Any, int]],
    watermark: BoundedOutOfOrderness,
    key: str,
) -> None:
    """Feed ``(value, event time)`` rows in arrival order as the batch replay does: before each
    row the watermark its earlier rows give, at the end the end of input."""
    newest: int | None = None
    for value, ts in rows:
        if newest is not None:
            h.process_watermark(watermark.current_watermark(newest))
        h.process_element(value, ts, key)
        newest = ts if newest is None else max(newest, ts)
    h.process_watermark(MAX_TIMESTAMP)


def quickstart(out: Path) -> None:
    """The quickstart job: 10 s tumbling windows, 3 s out of orderness, 5 s allowed
    lateness, late rows to a side output."""
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10 * S),
        _add,
        allowed_lateness=5 * S,
        late_output_tag=OutputTag("late"),
        trace=True,
        pane_info=True,
    )
    rows = [(5, 2), (3, 7), (4, 11), (1, 9), (6, 16), (2, 14), (7, 8), (2, 24), (1, 5), (3, 27)]
    replay(h, [(v, t * S) for v, t in rows], BoundedOutOfOrderness(3 * S), "alice")
    plot_windows(
        h,
        key="alice",
        time_unit="s",
        title="Tumbling 10 s windows, watermark 3 s behind, allowed lateness 5 s (sum of amounts)",
        path=out / "quickstart.png",
    )


def lateness(out: Path) -> None:
    """Early, on-time and late firings of one window, and a record too late even for the
    allowed lateness."""
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10 * S),
        _add,
        trigger=AfterWatermark(early=CountTrigger(2)),
        allowed_lateness=6 * S,
        late_output_tag=OutputTag("late"),
        trace=True,
        pane_info=True,
    )
    rows = [(1, 1), (2, 3), (3, 6), (4, 8), (5, 12), (6, 7), (7, 15), (8, 9), (9, 21), (10, 4)]
    replay(h, [(v, t * S) for v, t in rows], BoundedOutOfOrderness(1 * S), "sensor")
    plot_windows(
        h,
        key="sensor",
        time_unit="s",
        title=(
            "AfterWatermark(early=CountTrigger(2)), allowed lateness 6 s: "
            "early, on-time and late firings, then a late record"
        ),
        path=out / "lateness.png",
    )


def sessions(out: Path) -> None:
    """Session windows (gap 5 s) that a record arriving late in arrival order merges."""
    h = WindowOperatorHarness(EventTimeSessionWindows(5 * S), _add, trace=True, pane_info=True)
    rows = [("a", 1), ("b", 3), ("c", 14), ("d", 20), ("e", 17), ("f", 9), ("g", 30)]
    replay(h, [(v, t * S) for v, t in rows], BoundedOutOfOrderness(10 * S), "user")
    plot_windows(
        h,
        key="user",
        time_unit="s",
        title="Session windows, gap 5 s: e merges [14, 19) and [20, 25), then f joins them",
        path=out / "sessions.png",
    )


def kip450_vs_hopping(out: Path) -> None:
    """KIP-450's worked example: four records, size 10; seven sliding windows (one per
    distinct set of records) against 26 hopping windows of advance 1 ms, the usual
    emulation, which hold the same seven sets over and over."""
    rows = [("a", 105), ("b", 108), ("c", 112), ("d", 121)]
    figure = Figure(figsize=(10.0, 8.5), layout="constrained", dpi=100)
    FigureCanvasAgg(figure)
    left, right = figure.subfigures(1, 2, wspace=0.04)
    sliding = WindowOperatorHarness(
        SlidingDistinctAssigner(10, grace=0),
        _add,
        trigger=OnWindowCloseTrigger(),
        trace=True,
        pane_info=True,
    )
    hopping = WindowOperatorHarness(
        HoppingEventTimeWindows(10, 1), _add, trace=True, pane_info=True
    )
    for h in (sliding, hopping):
        replay(h, rows, BoundedOutOfOrderness(100), "k")
    n_sliding = len(sliding.extract_output())
    n_hopping = len(hopping.extract_output())
    plot_windows(
        sliding,
        key="k",
        panels=["windows"],
        figure=left,
        title=f"KIP-450 sliding windows, size 10: {n_sliding} windows",
    )
    plot_windows(
        hopping,
        key="k",
        panels=["windows"],
        figure=right,
        title=f"hopping windows, size 10, advance 1: {n_hopping} windows",
    )
    lo = min(ax.get_xlim()[0] for ax in figure.axes)
    hi = max(ax.get_xlim()[1] for ax in figure.axes)
    for ax in figure.axes:  # one scale for both
        ax.set_xlim(lo, hi)
    figure.savefig(out / "kip450_vs_hopping.png", dpi=100, metadata={"Software": None})


def idle_timeout(out: Path) -> None:
    """A quiet key closed by the idle timeout: micro-batches every 5 s of processing time;
    the key's rows stop at 26 s, its watermark stands still, and 15 s later the idle clock
    moves it past the end of the last window, which fires."""
    strategy = BoundedOutOfOrderness(2 * S)
    idleness = Idleness(timeout=15 * S, strategy=strategy)
    h = WindowOperatorHarness(TumblingEventTimeWindows(10 * S), _add, trace=True, pane_info=True)
    arrivals = [(1, 1, 2), (2, 4, 5), (1, 8, 9), (3, 11, 12), (2, 15, 16), (4, 19, 20)]
    arrivals += [(1, 22, 23), (2, 25, 26)]  # (value, event time, processing time) in seconds
    clock: KeyIdleness | None = None
    newest = MIN_TIMESTAMP
    for value, ts, pt in arrivals:
        h.set_processing_time(pt * S)
        if newest > MIN_TIMESTAMP:
            h.process_watermark(strategy.current_watermark(newest))
        h.process_element(value, ts * S, "sensor")
        newest = max(newest, ts * S)
        clock = KeyIdleness(newest, pt * S, h.watermark)
    assert clock is not None
    for batch in range(30, 60, 5):  # micro-batches without rows
        h.set_processing_time(batch * S)
        stream = strategy.current_watermark(newest)  # the rows of the last micro-batch
        h.process_watermark(clock.clock(idleness, stream, batch * S))
    figure = plot_windows(
        h,
        key="sensor",
        y="processing_time",
        time_unit="s",
        title="idle_timeout(15 s): the key's rows stop at 26 s; at 45 s its clock moves on",
    )
    arrival = figure.axes[0]
    last, stuck = 26 * S, strategy.current_watermark(newest)
    top = arrival.get_ylim()[1]
    arrival.plot([stuck, stuck], [last, top], linestyle=":", color="#777777", linewidth=1.5)
    arrival.text(
        stuck - 0.4 * S,
        top - 1.5 * S,
        "without idle_timeout the watermark\nstays here until the next row",
        ha="right",
        va="top",
        fontsize=8,
        color="#555555",
    )
    arrival.annotate(
        "",
        (newest + 9 * S, last + idleness.timeout),
        xytext=(newest + 9 * S, last),
        arrowprops={"arrowstyle": "<->", "color": "#555555"},
    )
    arrival.text(
        newest + 9.5 * S,
        last + idleness.timeout / 2,
        "no rows for 15 s:\nthe idle clock takes over",
        fontsize=8,
        va="center",
    )
    figure.savefig(out / "idle_timeout.png", dpi=100, metadata={"Software": None})


def _imports(tree: ast.Module) -> list[ast.ImportFrom]:
    """The ``from ... import`` statements of a module that run (not those under ``if
    TYPE_CHECKING:``, which the import contracts leave out too)."""
    found: list[ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _house(out: Path, container: str, title: str, name: str, *, fontsize: float) -> None:
    """The parts of ``container`` (its folders and modules) in the layers of its import
    contract (``./dev lint`` enforces them), with an arrow for each part that imports another
    (its width: the number of import statements), drawn from the code."""
    root = Path(__file__).resolve().parents[1]
    package = root.joinpath(*container.split("."))
    contracts = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in contracts["contracts"] if c.get("containers") == [container])
    layers = [[p.strip() for p in layer.split("|")] for layer in contract["layers"]]
    parts = {p for layer in layers for p in layer}
    edges: dict[tuple[str, str], int] = {}
    for path in package.rglob("*.py"):
        rel = path.relative_to(package).with_suffix("").parts
        if rel == ("__init__",):
            continue
        source = rel[0]
        for node in _imports(ast.parse(path.read_text())):
            module = node.module or ""
            if module.startswith(container + "."):
                target = module.split(".")[2]
                if target in parts and target != source:
                    edges[(source, target)] = edges.get((source, target), 0) + 1
    figure = Figure(figsize=(9, 6.2))
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    ax.set_axis_off()
    where: dict[str, tuple[float, float]] = {}
    for row, layer in enumerate(layers):
        for col, part in enumerate(layer):
            x = 0.5 if len(layer) == 1 else 0.1 + 0.8 * col / (len(layer) - 1)
            y = 1 - (row + 0.5) / len(layers)
            where[part] = (x, y)
            folder = package / part
            modules = len(list(folder.glob("*.py"))) - 1 if folder.is_dir() else 1
            label = f"{part}/ ({modules})" if folder.is_dir() else f"{part}.py"
            ax.text(
                x,
                y,
                label,
                ha="center",
                va="center",
                fontsize=fontsize,
                zorder=3,
                bbox={"boxstyle": "round", "facecolor": "#e8f0fa", "edgecolor": "#4a6fa5"},
            )
    for (source, target), n in sorted(edges.items()):
        (x0, y0), (x1, y1) = where[source], where[target]
        ax.annotate(
            "",
            (x1, y1 + 0.03),
            xytext=(x0, y0 - 0.03),
            zorder=1,
            arrowprops={
                "arrowstyle": "->",
                "color": "#777777",
                "linewidth": 0.4 + n / 8,
                "connectionstyle": "arc3,rad=0.08",
            },
        )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(title)
    figure.savefig(out / name, dpi=100, metadata={"Software": None})


def spark_house(out: Path) -> None:
    """The Spark runtime's parts: ``windowing/spark``'s folders and top modules."""
    title = "windowing/spark: each part imports only the parts below it (modules)"
    _house(out, "windowing.spark", title, "spark_house.png", fontsize=10)


def engine_house(out: Path) -> None:
    """The operator's engine: ``windowing/engine``'s modules, strategies above the services
    they share."""
    title = "windowing/engine: strategies above the services they share"
    _house(out, "windowing.engine", title, "engine_house.png", fontsize=8)


#: Every picture the documentation shows, by file name.
PICTURES: dict[str, Callable[[Path], None]] = {
    "quickstart.png": quickstart,
    "lateness.png": lateness,
    "sessions.png": sessions,
    "kip450_vs_hopping.png": kip450_vs_hopping,
    "idle_timeout.png": idle_timeout,
    "spark_house.png": spark_house,
    "engine_house.png": engine_house,
}


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else IMG
    out.mkdir(parents=True, exist_ok=True)
    for name, draw in PICTURES.items():
        draw(out)
        print(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
