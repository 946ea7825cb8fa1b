"""``plot_windows`` draws what happened: the artists of its figure (window bars, firings by
timing, late markers, the watermark line, window lifetimes, legend entries) are checked
against a harness trace and against result / late tables (pandas here; Spark in
``tests/spark/test_plotting.py``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from matplotlib.figure import Figure

from windowing import (
    AfterWatermark,
    BoundedOutOfOrderness,
    CountTrigger,
    EventTimeSessionWindows,
    HoppingEventTimeWindows,
    OutputTag,
    TumblingEventTimeWindows,
    plot_windows,
)
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP


def _add(a: Any, b: Any) -> Any:
    return a + b


def _artists(figure: Figure, panel: str, gid: str) -> list[Any]:
    (ax,) = [a for a in figure.axes if a.get_title(loc="left") == panel]
    return [a for a in ax.get_children() if a.get_gid() == gid]


def _points(figure: Figure, panel: str, gid: str) -> list[tuple[float, float]]:
    found = _artists(figure, panel, gid)
    return [(float(x), float(y)) for c in found for x, y in c.get_offsets()]


def _legend(figure: Figure) -> list[str]:
    return [t.get_text() for legend in figure.legends for t in legend.get_texts()]


def _replay(h: WindowOperatorHarness, rows: list[tuple[Any, int]], delay: int, key: str) -> None:
    newest = None
    for value, ts in rows:
        if newest is not None:
            h.process_watermark(newest - delay - 1)
        h.process_element(value, ts, key)
        newest = ts if newest is None else max(newest, ts)
    h.process_watermark(MAX_TIMESTAMP)


# (value, event time) in arrival order: tumbling 10, delay 3, lateness 5.
# 7 @ 8 arrives when the watermark is 12 (late firing of [0, 10)); 1 @ 5 arrives when it is
# 20, past the cleanup time 14: late.
ROWS = [(5, 2), (3, 7), (4, 11), (1, 9), (6, 16), (2, 14), (7, 8), (2, 24), (1, 5), (3, 27)]


def _quickstart() -> WindowOperatorHarness:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10),
        _add,
        allowed_lateness=5,
        late_output_tag=OutputTag("late"),
        trace=True,
    )
    _replay(h, ROWS, 3, "alice")
    return h


def test_a_harness_picture_shows_records_windows_firings_and_the_watermark() -> None:
    figure = plot_windows(_quickstart(), key="alice")
    arrival, windows = "records by arrival", "windows"
    # records by arrival: element i at (event time, i); the late one as a cross
    assert _points(figure, arrival, "records") == [
        (ts, i) for i, (_, ts) in enumerate(ROWS) if ts != 5
    ]
    assert _points(figure, arrival, "late") == [(5.0, 8.0)]
    # firings at the step that emitted them (a watermark between elements i-1 and i: i - 0.5)
    on_time = _artists(figure, arrival, "firing:ON_TIME")
    late = _artists(figure, arrival, "firing:LATE")
    assert sorted((p.get_x(), p.get_width()) for p in on_time) == [(0, 10), (10, 10), (20, 10)]
    assert [(p.get_x(), p.get_y() + p.get_height() / 2) for p in late] == [(0, 6.0)]
    assert [p.get_y() + p.get_height() / 2 for p in on_time] == [4.5, 7.5, 9.5]
    # the watermark: a step line through each watermark the replay set
    (line,) = _artists(figure, arrival, "watermark")
    xs, ys = line.get_data()
    seen = {(float(x), float(y)) for x, y in zip(xs, ys, strict=True)}
    # max event time so far - 3 - 1 before each element; -2 (before element 1) is left of
    # everything drawn and cut off
    assert {(3.0, 1.5), (7.0, 2.5), (12.0, 4.5), (12.0, 7.5), (20.0, 7.5)} <= seen
    assert min(xs) == 3.0
    assert list(ys) == sorted(ys)  # it only moves up (arrival)
    assert list(xs) == sorted(xs)  # and right
    # three windows, each open from its first element until its cleanup
    assert len(_artists(figure, windows, "window")) == 3
    lifetimes = _artists(figure, arrival, "lifetime")
    assert sorted((p.get_x(), p.get_y(), p.get_y() + p.get_height()) for p in lifetimes) == [
        (0, 0.0, 7.5),  # cleanup at 9 + 5 = 14: the watermark 20 before element 8
        (10, 2.0, 9.5),
        (20, 7.0, 9.5),
    ]
    # a dot per firing in the windows panel, by timing: [0, 10) fired on time, then late
    assert len(_points(figure, windows, "pane:ON_TIME")) == 3
    assert len(_points(figure, windows, "pane:LATE")) == 1
    texts = [t.get_text() for t in figure.axes[1].texts]
    assert "9 → 16" in texts  # 5 + 3 + 1, then + 7
    assert _legend(figure) == [
        "record",
        "late record (side output or dropped)",
        "watermark (▶ +∞: the end of input)",
        "window open (holds state)",
        "ON_TIME firing",
        "LATE firing",
    ]


def test_early_firings_have_their_own_color() -> None:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows(10),
        _add,
        trigger=AfterWatermark(early=CountTrigger(2)),
        trace=True,
    )
    _replay(h, [(1, 1), (1, 2), (1, 3), (1, 4), (1, 30)], 5, "k")
    figure = plot_windows(h)  # one key: key= may be left out
    assert len(_artists(figure, "records by arrival", "firing:EARLY")) == 2
    assert len(_points(figure, "windows", "pane:EARLY")) == 2
    assert "EARLY firing" in _legend(figure)


def test_merged_sessions_are_drawn_as_windows_that_never_fired() -> None:
    h = WindowOperatorHarness(EventTimeSessionWindows(5), _add, trace=True)
    _replay(h, [(1, 1), (1, 14), (1, 20), (1, 17)], 10, "u")  # 17 bridges [14,19) and [20,25)
    figure = plot_windows(h, key="u")
    fired = _artists(figure, "windows", "window")
    merged = _artists(figure, "windows", "window-unfired")
    assert sorted((p.get_x(), p.get_width()) for p in fired) == [(1, 5), (14, 11)]
    assert sorted((p.get_x(), p.get_width()) for p in merged) == [(14, 5), (20, 5)]
    assert len({p.get_y() for p in [*fired, *merged]}) == 4  # overlapping: a row each
    lifetimes = _artists(figure, "records by arrival", "lifetime")
    merged_life = [p for p in lifetimes if p.get_x() == 20]
    assert [(p.get_y(), p.get_y() + p.get_height()) for p in merged_life] == [(2.0, 3.0)]


def test_windows_that_do_not_overlap_share_a_row_and_hopping_ones_do_not() -> None:
    tumbling = plot_windows(_quickstart(), key="alice", panels=["windows"])
    assert len({p.get_y() for p in _artists(tumbling, "windows", "window")}) == 1
    h = WindowOperatorHarness(HoppingEventTimeWindows(10, 5), _add, trace=True)
    _replay(h, [(1, 3), (1, 12)], 0, "k")
    hopping = plot_windows(h, panels="windows")
    assert [a.get_title(loc="left") for a in hopping.axes] == ["windows"]
    bars = _artists(hopping, "windows", "window")
    assert len(bars) == 4
    assert len({p.get_y() for p in bars}) == 4


def test_processing_time_on_the_y_axis() -> None:
    h = WindowOperatorHarness(TumblingEventTimeWindows(10), _add, trace=True)
    for value, ts, pt in [(1, 1, 100), (2, 4, 250), (3, 12, 400)]:
        h.set_processing_time(pt)
        h.process_element(value, ts, "k")
    h.set_processing_time(900)
    h.process_watermark(50)
    figure = plot_windows(h, y="processing_time")
    assert _points(figure, "records by arrival", "records") == [(1, 100), (4, 250), (12, 400)]
    firings = _artists(figure, "records by arrival", "firing:ON_TIME")
    centers = [p.get_y() + p.get_height() / 2 for p in firings]
    assert len(centers) == 2 and centers[0] == 900  # two at one step: stacked below it
    assert 900 - 150 < centers[1] < 900  # within the usual distance between two arrivals


def test_the_picture_is_saved_as_png(tmp_path: Path) -> None:
    path = tmp_path / "w.png"
    figure = plot_windows(_quickstart(), path=path, title="q")
    assert isinstance(figure, Figure)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert figure.get_suptitle() == "q"


# -------------------------------------------------------------------------- tables
def _tables(timing: bool) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The quickstart run as a job's tables: inputs with an arrival column, results, late."""
    inputs = pd.DataFrame(
        {
            "user": ["alice"] * len(ROWS) + ["bob"],
            "amount": [v for v, _ in ROWS] + [9],
            "ts": [t for _, t in ROWS] + [13],
            "offset": [*range(len(ROWS)), 3],
        }
    )
    results = pd.DataFrame(
        {
            "user": ["alice", "alice", "alice", "alice", "bob"],
            "window_start": [0, 0, 10, 20, 0],
            "window_end": [10, 10, 20, 30, 10],
            "total": [9, 16, 12, 5, 9],
            "max_timestamp": [9, 9, 19, 29, 9],
        }
    )
    if timing:
        results["pane_index"] = [0, 1, 0, 0, 0]
        results["timing"] = ["ON_TIME", "LATE", "ON_TIME", "ON_TIME", "ON_TIME"]
    late = inputs.iloc[[8]].assign(late_watermark=[20], late_reason=["late"])
    return inputs, results, late


def test_tables_give_windows_panes_late_rows_and_the_watermark() -> None:
    inputs, results, late = _tables(timing=True)
    figure = plot_windows(
        results,
        late,
        key="alice",
        inputs=inputs,
        event_time="ts",
        arrival_order="offset",
        watermark=BoundedOutOfOrderness(3),
        label="amount",
    )
    arrival = "records by arrival"
    assert len(_points(figure, arrival, "records")) == 9
    assert _points(figure, arrival, "late") == [(5.0, 8.0)]
    assert len(_artists(figure, "windows", "window")) == 3
    assert len(_points(figure, "windows", "pane:ON_TIME")) == 3
    assert len(_points(figure, "windows", "pane:LATE")) == 1
    # the watermark each arrival saw, over all keys (bob's row at offset 3 has ts 13)
    (line,) = _artists(figure, arrival, "watermark")
    seen = set(zip(*line.get_data(), strict=True))
    # (drawn half a step before the row that saw it, as from a harness)
    assert {(3.0, 1.5), (7.0, 2.5), (9.0, 3.5), (12.0, 4.5), (20.0, 7.5)} <= seen
    # firings have no arrival in tables: none in the arrival panel
    assert not _artists(figure, arrival, "firing:ON_TIME")
    labels = [t.get_text() for t in figure.axes[0].texts]
    assert labels.count("7") == 1 and "1" in labels


def test_tables_without_timing_or_inputs_draw_what_they_know() -> None:
    _, results, late = _tables(timing=False)
    figure = plot_windows(results, late, key="alice", event_time="ts", arrival_order="offset")
    assert len(_points(figure, "windows", "pane:fired")) == 4  # timing unknown
    assert _points(figure, "records by arrival", "late") == [(5.0, 8.0)]
    assert _points(figure, "records by arrival", "watermark_points") == [(20.0, 8.0)]
    assert not _artists(figure, "records by arrival", "records")
    notes = [t.get_text() for t in figure.axes[0].texts]
    assert any("pane_info" in n for n in notes)
    untimed = pd.concat([late, late.assign(ts=[None], late_reason=["null_event_time"])])
    figure = plot_windows(results, untimed, key="alice", event_time="ts", arrival_order="offset")
    notes = [t.get_text() for t in figure.axes[0].texts]
    assert any("1 late row(s) without event time not drawn" in n for n in notes)
    assert "firing, timing unknown" in _legend(figure)
    # no arrival at all: the windows panel only
    only = plot_windows(results, key="alice")
    assert [a.get_title(loc="left") for a in only.axes] == ["windows"]


def test_tables_with_timestamps_and_a_window_struct() -> None:
    start = pd.Timestamp("2024-05-01 12:00:00")
    second = pd.Timedelta(seconds=1)
    results = pd.DataFrame(
        {
            "k": [1, 1],
            "window": [
                {"start": start, "end": start + 10 * second},
                {"start": start + 10 * second, "end": start + 20 * second},
            ],
            "n": [2, 1],
        }
    )
    figure = plot_windows(results)
    bars = _artists(figure, "windows", "window")
    assert [p.get_width() for p in bars] == [10_000, 10_000]
    tick = figure.axes[-1].xaxis.get_major_formatter()(bars[0].get_x(), 0)
    assert tick == "12:00:00"


# -------------------------------------------------------------------------- errors
def test_bad_arguments_are_named() -> None:
    h = _quickstart()
    inputs, results, late = _tables(timing=True)
    with pytest.raises(ValueError, match=r"key= is needed, the tables have 2 keys|2 keys"):
        plot_windows(results)
    with pytest.raises(ValueError, match=r"key='carol' is not in the trace; its keys: \['alice'\]"):
        plot_windows(h, key="carol")
    with pytest.raises(ValueError, match="panels must be distinct names of"):
        plot_windows(h, panels=["arrival", "nope"])
    with pytest.raises(ValueError, match="y must be one of"):
        plot_windows(h, y="wall")
    with pytest.raises(ValueError, match="late, event_time apply to tables only"):
        plot_windows(h, late, event_time="ts")
    with pytest.raises(ValueError, match="time_unit must be one of"):
        plot_windows(h, time_unit="h")
    with pytest.raises(ValueError, match=r"event_time='when' is not a column of the late rows"):
        plot_windows(results, late, key="alice", event_time="when")
    with pytest.raises(ValueError, match=r"watermark= needs inputs= and arrival_order="):
        plot_windows(results, key="alice", watermark=BoundedOutOfOrderness(3))
    with pytest.raises(ValueError, match="watermark must be a watermark strategy"):
        plot_windows(results, key="alice", inputs=inputs, event_time="ts", watermark=3)
    with pytest.raises(ValueError, match=r"source must be a WindowOperatorHarness .* got list"):
        plot_windows([1, 2])
    with pytest.raises(ValueError, match=r"trace=True"):
        plot_windows(WindowOperatorHarness(TumblingEventTimeWindows(10), _add))
    with pytest.raises(ValueError, match="the late rows have no key column 'user'"):
        plot_windows(results, late.drop(columns=["user"]), key="alice", event_time="ts")
    bad = results.assign(timing=["SOON"] * len(results))
    with pytest.raises(ValueError, match="column 'timing' must hold one of"):
        plot_windows(bad, key="alice")


def test_without_matplotlib_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r'pip install "pyspark-windowing\[plot\]"'):
        plot_windows(_quickstart())


def test_windows_without_bounds_are_counted_not_drawn() -> None:
    from windowing import GlobalWindows

    h = WindowOperatorHarness(GlobalWindows(), _add, trigger=CountTrigger(2), trace=True)
    for ts in (1, 2, 3, 4):
        h.process_element(1, ts, "k")
    figure = plot_windows(h)
    assert not _artists(figure, "windows", "window")
    assert len(_points(figure, "records by arrival", "records")) == 4
    notes = [t.get_text() for t in figure.axes[0].texts]
    assert "1 window(s) without start and end not drawn" in notes
