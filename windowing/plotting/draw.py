"""Drawing a picture with matplotlib (imported here only, when a picture is drawn, on a
figure of its own with the Agg canvas: no pyplot, no global state)."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from windowing.plotting.picture import Picture, Record, Window
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP, millis_to_datetime
from windowing.trace import TIMINGS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

__all__ = ["COLORS", "draw"]

#: Colors of the picture (Okabe and Ito's palette, readable with color blindness).
COLORS: Mapping[str, str] = {
    "record": "#0072b2",
    "late": "#d55e00",
    "watermark": "#e69f00",
    "EARLY": "#56b4e9",
    "ON_TIME": "#009e73",
    "LATE": "#cc79a7",
    "fired": "#666666",  # a firing whose timing is unknown
    "window": "#d6e6f4",
    "open": "#999999",
}


_INSTALL = 'pip install "pyspark-windowing[plot]"'


def _matplotlib() -> Any:
    try:
        import matplotlib  # noqa: F401 - the optional dependency
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        msg = f"plot_windows needs matplotlib, an optional dependency: {_INSTALL}"
        raise ImportError(msg) from exc
    return Figure, FigureCanvasAgg


def _lanes(windows: Sequence[Window]) -> list[int]:
    """The row of each window (1, 2, ...; ``windows`` in order of start): one row when no two
    windows overlap (tumbling windows, sessions that never merged), else a row each."""
    overlap = any(a.end > b.start for a, b in itertools.pairwise(windows))
    return list(range(1, len(windows) + 1)) if overlap else [1] * len(windows)


def _x_range(picture: Picture) -> tuple[float, float]:
    """The records and windows, and further right the watermark where it went past them
    (an idle clock); a watermark left of them is cut off."""
    xs: list[int] = [r.time for r in picture.records]
    for w in picture.windows:
        xs += [w.start, w.end]
    marks = [wm for _, wm in [*picture.watermark, *picture.watermark_points]]
    marks = [x for x in marks if MIN_TIMESTAMP < x < MAX_TIMESTAMP]
    if xs:
        xs += [x for x in marks if x > max(xs)]
    else:
        xs = marks
    if not xs:
        return 0.0, 1.0
    lo, hi = min(xs), max(xs)
    pad = max((hi - lo) * 0.04, 1.0)
    return lo - pad, hi + pad


def _formatter(unit: str) -> Callable[[float, Any], str]:
    if unit == "s":
        return lambda v, _: f"{v / 1000:g} s"
    if unit == "datetime":

        def clock(v: float, _: Any) -> str:
            try:
                return millis_to_datetime(int(v)).strftime("%H:%M:%S")
            except (OverflowError, ValueError):
                return ""

        return clock
    return lambda v, _: f"{v:g}"


def draw(
    picture: Picture,
    panels: tuple[str, ...],
    title: str | None,
    figure: Figure | SubFigure | None,
    path: str | Path | None,
) -> Figure:
    figure_class, canvas = _matplotlib()
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    picture.windows.sort(key=lambda w: (w.start, w.end))
    lanes = _lanes(picture.windows)
    n_lanes = max(lanes, default=0)
    ys = [r.y for r in picture.records if r.y is not None]
    ys += [y for y, _ in picture.watermark] + [y for y, _ in picture.watermark_points]
    ys += [p.y for w in picture.windows for p in w.panes if p.y is not None]
    if "arrival" in panels and not ys:
        panels = tuple(p for p in panels if p != "arrival") or ("windows",)
    y_rows = (max(ys) - min(ys)) / picture.row + 1 if ys else 0
    heights = {
        "arrival": min(max(y_rows * 0.32, 2.6), 6.5),
        "windows": min(max((n_lanes + 1) * 0.34 + 0.5, 1.3), 5.0),
    }
    ratios = [heights[p] for p in panels]
    if figure is None:
        figure = figure_class(figsize=(9.0, sum(ratios) + 1.3), layout="constrained", dpi=100)
        canvas(figure)
    axes_array = figure.subplots(len(panels), 1, sharex=True, height_ratios=ratios, squeeze=False)
    axes = dict(zip(panels, axes_array[:, 0], strict=True))
    x_lo, x_hi = _x_range(picture)
    fmt = FuncFormatter(_formatter(picture.time_unit))
    handles: dict[str, Any] = {}
    if "arrival" in axes:
        _draw_arrival(axes["arrival"], picture, x_lo, x_hi, handles)
        if picture.y_time:
            axes["arrival"].yaxis.set_major_formatter(fmt)
        else:
            axes["arrival"].yaxis.set_major_locator(MaxNLocator(integer=True))
    if "windows" in axes:
        _draw_lanes(axes["windows"], picture, lanes, x_lo, x_hi, handles)
    last = axes[panels[-1]]
    last.xaxis.set_major_formatter(fmt)
    last.set_xlabel("event time →")
    last.set_xlim(x_lo, x_hi)
    if picture.notes:
        axes[panels[0]].text(
            0.995,
            0.99,
            "; ".join(picture.notes),
            transform=axes[panels[0]].transAxes,
            ha="right",
            va="top",
            fontsize=7.5,
            color="#555555",
        )
    figure.suptitle(title if title is not None else f"key {picture.key!r}", fontsize=11)
    order = ["record", "late", "watermark", "open", *TIMINGS, "fired", "unfired"]
    shown = [handles[name] for name in order if name in handles]
    if shown:
        figure.legend(
            handles=shown,
            loc="outside lower center",
            ncols=min(len(shown), 3),
            fontsize=8,
            frameon=False,
        )
    root: Figure = figure.figure
    if path is not None:
        root.savefig(path, dpi=100, metadata={"Software": None})
    return root


def _clip(x: int, lo: float, hi: float) -> float:
    return min(max(float(x), lo), hi)


def _draw_arrival(
    ax: Axes, picture: Picture, x_lo: float, x_hi: float, handles: dict[str, Any]
) -> None:
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    ax.set_title("records by arrival", fontsize=9, loc="left")
    ax.set_ylabel(picture.y_label, fontsize=9)
    ax.grid(True, axis="x", color="#eeeeee", linewidth=0.8)
    ax.set_axisbelow(True)
    row = picture.row
    # windows' lifetimes (traces)
    for w in picture.windows:
        for y0, y1 in w.open:
            ax.add_patch(
                Rectangle(
                    (w.start, y0),
                    w.end - w.start,
                    max(y1 - y0, row * 0.2),
                    facecolor=to_rgba(COLORS["open"], 0.14),
                    edgecolor=to_rgba(COLORS["open"], 0.8),
                    linestyle="--",
                    linewidth=0.8,
                    gid="lifetime",
                )
            )
            handles["open"] = Patch(
                facecolor=to_rgba(COLORS["open"], 0.25),
                edgecolor=to_rgba(COLORS["open"], 0.8),
                linestyle="--",
                label="window open (holds state)",
            )
    # the watermark
    line = picture.watermark
    if line:
        xs: list[float] = []
        ys: list[float] = []
        last: int | None = None
        for y, wm in line:
            if wm < x_lo:  # no watermark yet, or left of everything drawn
                continue
            if last is not None and wm != last:
                xs.append(_clip(last, x_lo, x_hi))
                ys.append(y)
            if wm != last:
                xs.append(_clip(wm, x_lo, x_hi))
                ys.append(y)
            last = wm
        if xs:
            xs.append(xs[-1])
            ys.append(line[-1][0] + row * 0.5)
            ax.plot(xs, ys, color=COLORS["watermark"], linewidth=2, gid="watermark", zorder=2)
            name = "watermark"
            if last is not None and last >= MAX_TIMESTAMP:  # the end of input
                ax.plot(
                    [x_hi], [ys[-2]], marker=">", markersize=7, color=COLORS["watermark"],
                    clip_on=False, zorder=3,
                )  # fmt: skip
                name = "watermark (▶ +∞: the end of input)"
            handles["watermark"] = Line2D([], [], color=COLORS["watermark"], lw=2, label=name)
    if picture.watermark_points:
        ax.scatter(
            [_clip(wm, x_lo, x_hi) for _, wm in picture.watermark_points],
            [y for y, _ in picture.watermark_points],
            marker="|",
            s=140,
            linewidths=2,
            color=COLORS["watermark"],
            gid="watermark_points",
            zorder=3,
        )
        handles["watermark"] = Line2D(
            [],
            [],
            color=COLORS["watermark"],
            marker="|",
            lw=0,
            markersize=11,
            mew=2,
            label="watermark a late record saw",
        )
    # firings
    stacked: Counter[float] = Counter()
    for w in picture.windows:
        for pane in w.panes:
            if pane.y is None:
                continue
            color = COLORS[pane.timing or "fired"]
            offset = stacked[pane.y] * row * 0.22
            stacked[pane.y] += 1
            at = pane.y - offset
            ax.add_patch(
                Rectangle(
                    (w.start, at - row * 0.09),
                    w.end - w.start,
                    row * 0.18,
                    facecolor=color,
                    edgecolor="none",
                    alpha=0.95,
                    gid=f"firing:{pane.timing or 'fired'}",
                    zorder=3,
                )
            )
            if pane.label is not None:
                ax.annotate(
                    pane.label,
                    (min(w.end, x_hi), at),
                    xytext=(3, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=7.5,
                    color=color,
                    fontweight="bold",
                    zorder=5,
                    annotation_clip=False,
                )
    _draw_records(ax, [r for r in picture.records if r.y is not None], handles, by_arrival=True)
    all_y = [r.y for r in picture.records if r.y is not None] + [y for y, _ in line]
    all_y += [y for y, _ in picture.watermark_points]
    all_y += [p.y for w in picture.windows for p in w.panes if p.y is not None]
    if all_y:
        ax.set_ylim(min(all_y) - row * 0.8, max(all_y) + row * 0.8)


def _draw_records(
    ax: Axes, records: Sequence[Record], handles: dict[str, Any], *, by_arrival: bool
) -> None:
    from matplotlib.lines import Line2D

    def y_of(r: Record) -> float:
        return r.y if by_arrival and r.y is not None else 0.0

    kept = [r for r in records if not r.late]
    late = [r for r in records if r.late]
    gid = "" if by_arrival else "strip_"
    if kept:
        ax.scatter(
            [r.time for r in kept],
            [y_of(r) for r in kept],
            s=30,
            color=COLORS["record"],
            zorder=4,
            gid=f"{gid}records",
        )
        handles["record"] = Line2D(
            [], [], color=COLORS["record"], marker="o", lw=0, markersize=6, label="record"
        )
    if late:
        ax.scatter(
            [r.time for r in late],
            [y_of(r) for r in late],
            s=70,
            marker="X",
            color=COLORS["late"],
            zorder=4,
            gid=f"{gid}late",
        )
        handles["late"] = Line2D(
            [],
            [],
            color=COLORS["late"],
            marker="X",
            lw=0,
            markersize=8,
            label="late record (side output or dropped)",
        )
    for r in records:
        if r.label is not None:
            ax.annotate(
                r.label,
                (r.time, y_of(r)),
                xytext=(0, 5 if by_arrival else -11),
                textcoords="offset points",
                ha="center",
                fontsize=7.5,
                color=COLORS["late"] if r.late else "#222222",
                zorder=5,
            )


def _draw_lanes(
    ax: Axes,
    picture: Picture,
    lanes: Sequence[int],
    x_lo: float,
    x_hi: float,
    handles: dict[str, Any],
) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    ax.set_title("windows", fontsize=9, loc="left")
    ax.set_yticks([])
    ax.grid(True, axis="x", color="#eeeeee", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.axhline(0, color="#bbbbbb", linewidth=0.8, zorder=1)
    _draw_records(ax, picture.records, handles, by_arrival=False)
    span = x_hi - x_lo
    by_timing: dict[str, tuple[list[float], list[float]]] = {}
    for w, lane in zip(picture.windows, lanes, strict=True):
        fired = bool(w.panes)
        ax.add_patch(
            Rectangle(
                (w.start, lane - 0.32),
                w.end - w.start,
                0.64,
                facecolor=COLORS["window"] if fired else "none",
                edgecolor=COLORS["record"] if fired else "#888888",
                hatch=None if fired else "////",
                linewidth=0.9,
                gid="window" if fired else "window-unfired",
                zorder=2,
            )
        )
        if not fired:
            handles["unfired"] = Patch(
                facecolor="none",
                edgecolor="#888888",
                hatch="////",
                label="window merged away or purged (never fired)",
            )
            continue
        dx = min((w.end - w.start) / (len(w.panes) + 1), span * 0.014)
        for k, pane in enumerate(w.panes):
            timing = pane.timing or "fired"
            xs, ys = by_timing.setdefault(timing, ([], []))
            xs.append(w.end - dx * (len(w.panes) - k - 0.5))
            ys.append(float(lane))
        labels = [p.label for p in w.panes if p.label is not None]
        if labels:
            ax.text(
                w.start + (w.end - w.start) * 0.04,
                lane,
                " → ".join(labels),
                va="center",
                ha="left",
                fontsize=7,
                color="#1a1a1a",
                zorder=4,
                clip_on=True,
            )
    for timing, (xs, ys) in by_timing.items():
        ax.scatter(
            xs,
            ys,
            s=26,
            color=COLORS[timing],
            edgecolors="white",
            linewidths=0.6,
            zorder=5,
            gid=f"pane:{timing}",
        )
        label = "firing, timing unknown" if timing == "fired" else f"{timing} firing"
        handles[timing] = Line2D(
            [],
            [],
            color=COLORS[timing],
            marker="s",
            lw=0,
            markersize=7,
            label=label,
        )
    ax.set_ylim(-0.9, max(lanes, default=0) + 0.7)
