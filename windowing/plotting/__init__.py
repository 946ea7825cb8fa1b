"""Pictures of windows: :func:`plot_windows` draws one key's records by arrival, its windows
and their firings (early, on time, late), the watermark and the late records.

It reads either a traced :class:`~windowing.testing.WindowOperatorHarness` (everything is
known: when each window opened, closed and fired) or a job's outputs, a results table and a
late-rows table (Spark or pandas DataFrames), with the input rows if you have them.

matplotlib is an optional dependency (``pip install "pyspark-windowing[plot]"``), imported
when a picture is drawn. The picture is drawn on a figure of its own with the non-interactive
Agg canvas: no pyplot, no change to matplotlib's global state. The module never imports
pyspark: a Spark DataFrame is read through its ``toPandas()``.

Examples
--------
>>> from windowing.assigners import TumblingEventTimeWindows
>>> from windowing.testing import WindowOperatorHarness
>>> h = WindowOperatorHarness(TumblingEventTimeWindows(10), lambda a, b: a + b, trace=True)
>>> for ts in (1, 4, 12):
...     h.process_element(1, timestamp=ts, key="k")
>>> h.process_watermark(100)
>>> figure = plot_windows(h, key="k")
>>> [ax.get_title(loc="left") for ax in figure.axes]
['records by arrival', 'windows']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from windowing.plotting.draw import COLORS, draw
from windowing.plotting.from_tables import Tables
from windowing.plotting.from_trace import from_trace
from windowing.plotting.picture import ANY_KEY
from windowing.trace import Trace

if TYPE_CHECKING:
    from matplotlib.figure import Figure, SubFigure

__all__ = ["COLORS", "plot_windows"]

PANELS = ("arrival", "windows")
TIME_UNITS = ("ms", "s", "datetime")


def plot_windows(
    source: Any,
    late: Any = None,
    *,
    key: Any = ANY_KEY,
    inputs: Any = None,
    event_time: str | None = None,
    arrival_order: str | None = None,
    watermark: Any = None,
    label: str | Callable[[Any], object] | None = None,
    y: str = "arrival",
    panels: Sequence[str] = PANELS,
    time_unit: str | None = None,
    title: str | None = None,
    figure: Figure | SubFigure | None = None,
    path: str | Path | None = None,
) -> Figure:
    """Draw one key's records, windows, firings, watermark and late records.

    Two panels share the event-time axis. *Records by arrival*: each record at (event time,
    arrival), late records as crosses, the watermark as a line that steps right as records
    arrive, each firing as a bar over its window at the moment it fired (colored EARLY,
    ON_TIME or LATE), and, from a harness, each window's lifetime (from the record that
    opened it to the step that closed, merged or purged it) as a shaded box. *Windows*: every
    window in a row of its own (packed), with a dot per firing in its timing's color, the
    results' values, and the records on a line below.

    Parameters
    ----------
    source
        A :class:`~windowing.testing.WindowOperatorHarness` built with ``trace=True`` (or its
        :class:`~windowing.trace.Trace`), or a results table: a Spark or pandas DataFrame of
        ``result.results`` (key columns, ``window_start``, ``window_end`` or a ``window``
        struct, the output columns, ``max_timestamp``; ``pane_index`` and ``timing`` when the
        job asked for pane info).
    late
        Tables only: the late rows (``result.get_side_output(tag)``: the input columns plus
        ``late_watermark`` and ``late_reason``).
    key
        The key to draw: a value, or a tuple of values for several key columns. May be left
        out when there is one key.
    inputs
        Tables only: the input rows, of all keys (the watermark is the stream's), to draw the
        records that were not late and, with ``watermark``, the watermark line.
    event_time, arrival_order
        Tables only: the input's event-time and arrival-order columns (as given to
        ``WindowedStream.from_dataframe``). Records are drawn by arrival only with
        ``arrival_order``.
    watermark
        Tables only: the stream's watermark strategy (``BoundedOutOfOrderness(...)``), to
        compute the watermark each arrival saw, as the batch replay does. Without it only the
        watermarks the late rows carry are drawn.
    label
        Text next to each record: a function of the element (harness) or of the row (a
        ``dict``, tables), or a column name (tables). Default: short element values (harness),
        none (tables).
    y
        Harness only: ``"arrival"`` (the order of the harness calls; a watermark between two
        elements sits between their rows) or ``"processing_time"`` (the harness's processing
        time at each call).
    panels
        Which panels to draw, of ``("arrival", "windows")``.
    time_unit
        Axis labels of times: ``"ms"`` (numbers), ``"s"``, or ``"datetime"`` (UTC clock
        time; the default for timestamp columns).
    title
        The figure's title (default: the key).
    figure
        A matplotlib ``Figure`` or ``SubFigure`` to draw into (default: a new figure).
    path
        Also save the figure there (PNG, or any format matplotlib knows by the suffix).

    Returns
    -------
    matplotlib.figure.Figure
        The figure (the root figure when ``figure`` is a subfigure).

    Notes
    -----
    From a harness the picture is exact. From tables, firings have no arrival (a result row
    does not say when it was emitted) and are drawn in the windows panel only; their timing
    comes from the ``timing`` column (``.pane_info()`` on the job), else they are drawn as
    "fired". Windows without a start and end (global and count windows) are not drawn.
    """
    panels = _check_panels(panels)
    if time_unit is not None and time_unit not in TIME_UNITS:
        msg = f"plot_windows: time_unit must be one of {TIME_UNITS} or None, got {time_unit!r}"
        raise ValueError(msg)
    trace = _trace_of(source)
    if trace is not None:
        table_args = {"late": late, "inputs": inputs, "event_time": event_time}
        table_args |= {"arrival_order": arrival_order, "watermark": watermark}
        given = [name for name, value in table_args.items() if value is not None]
        if given:
            msg = f"plot_windows: {', '.join(given)} apply to tables only, not to a harness trace"
            raise ValueError(msg)
        if isinstance(label, str):
            msg = (
                f"plot_windows: label must be a function of the element for a trace, got {label!r}"
            )
            raise ValueError(msg)
        picture = from_trace(trace, key, y, label, time_unit or "ms")
    else:
        if y != "arrival":
            msg = f"plot_windows: y={y!r} applies to a harness trace; tables use arrival_order"
            raise ValueError(msg)
        tables = Tables.read(source, late, inputs, event_time, arrival_order, watermark)
        picture = tables.picture(key, label, time_unit)
    return draw(picture, panels, title, figure, path)


def _check_panels(panels: Sequence[str]) -> tuple[str, ...]:
    chosen = (panels,) if isinstance(panels, str) else tuple(panels)
    if not chosen or any(p not in PANELS for p in chosen) or len(set(chosen)) != len(chosen):
        msg = f"plot_windows: panels must be distinct names of {PANELS}, got {panels!r}"
        raise ValueError(msg)
    return tuple(p for p in PANELS if p in chosen)


def _trace_of(source: Any) -> Trace | None:
    if isinstance(source, Trace):
        return source
    if hasattr(source, "operator") and hasattr(source, "trace"):
        trace = source.trace  # raises, naming trace=True, when the harness keeps none
        if isinstance(trace, Trace):
            return trace
    if hasattr(source, "toPandas") or hasattr(source, "to_dict"):
        return None
    msg = (
        "plot_windows: source must be a WindowOperatorHarness built with trace=True, a Trace, "
        f"or a results DataFrame (Spark or pandas), got {type(source).__name__}"
    )
    raise ValueError(msg)
