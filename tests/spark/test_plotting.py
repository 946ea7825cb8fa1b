"""``plot_windows`` on a Spark job's outputs (``result.results`` + the late side output, with
the input rows): the picture shows the same windows, results and late records as the picture
of the same records run through the in-memory harness."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F  # noqa: N812

from windowing import (
    BoundedOutOfOrderness,
    DataStream,
    OutputTag,
    TumblingEventTimeWindows,
    plot_windows,
)
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP, datetime_to_millis

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from pyspark.sql import SparkSession

START = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
# (amount, seconds after START) in arrival order: 7 @ 8 s is a late firing of [0, 10),
# 1 @ 5 s arrives after the cleanup of [0, 10): late.
ROWS = [(5, 2), (3, 7), (4, 11), (1, 9), (6, 16), (2, 14), (7, 8), (2, 24), (1, 5), (3, 27)]


def _gids(figure: Figure, panel: str, gid: str) -> list[Any]:
    (ax,) = [a for a in figure.axes if a.get_title(loc="left") == panel]
    return [a for a in ax.get_children() if a.get_gid() == gid]


def _points(figure: Figure, panel: str, gid: str) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for c in _gids(figure, panel, gid) for x, y in c.get_offsets()]


def _harness_picture() -> Figure:
    h = WindowOperatorHarness(
        TumblingEventTimeWindows("10 seconds"),
        lambda a, b: a + b,
        allowed_lateness="5 seconds",
        late_output_tag=OutputTag("late"),
        trace=True,
    )
    strategy = BoundedOutOfOrderness("3 seconds")
    newest = None
    for amount, second in ROWS:
        ts = datetime_to_millis(START + timedelta(seconds=second))
        if newest is not None:
            h.process_watermark(strategy.current_watermark(newest))
        h.process_element(amount, ts, "alice")
        newest = ts if newest is None else max(newest, ts)
    h.process_watermark(MAX_TIMESTAMP)
    return plot_windows(h, key="alice", label=lambda _: None)


def test_a_spark_jobs_outputs_give_the_harness_picture(spark: SparkSession) -> None:
    rows = [
        ("alice", amount, START + timedelta(seconds=second), offset)
        for offset, (amount, second) in enumerate(ROWS)
    ]
    rows.append(("bob", 9, START + timedelta(seconds=3), 3))
    df = spark.createDataFrame(rows, "user string, amount bigint, ts timestamp, offset bigint")
    late = OutputTag("late")
    result = (
        DataStream.from_dataframe(
            df,
            event_time="ts",
            watermark=BoundedOutOfOrderness("3 seconds"),
            arrival_order="offset",
        )
        .key_by("user")
        .window(TumblingEventTimeWindows("10 seconds"))
        .allowed_lateness("5 seconds")
        .side_output_late_data(late)
        .agg(F.sum("amount").alias("total"))
    )
    with result:
        figure = plot_windows(
            result.results,
            result.get_side_output(late),
            key="alice",
            inputs=df,
            event_time="ts",
            arrival_order="offset",
            watermark=BoundedOutOfOrderness("3 seconds"),
        )
    expected = _harness_picture()
    arrival, windows = "records by arrival", "windows"

    def bars(fig: Figure) -> list[tuple[float, float]]:
        return sorted((p.get_x(), p.get_width()) for p in _gids(fig, windows, "window"))

    assert bars(figure) == bars(expected)
    assert len(bars(figure)) == 3
    texts = sorted(t.get_text() for t in figure.axes[1].texts)
    assert texts == sorted(t.get_text() for t in expected.axes[1].texts) == ["12", "5", "9 → 16"]
    # the late record, at its arrival; the other nine records by arrival
    assert _points(figure, arrival, "late") == _points(expected, arrival, "late")
    assert _points(figure, arrival, "records") == _points(expected, arrival, "records")
    assert len(_points(figure, arrival, "late")) == 1
    # the watermark the replay computed is the harness's, at each arrival
    (line,) = _gids(figure, arrival, "watermark")
    (want,) = _gids(expected, arrival, "watermark")
    assert [list(v) for v in line.get_data()] == [list(v) for v in want.get_data()]
    # a result row does not say when it was emitted: four firings, timing unknown (no
    # pane info), all in the windows panel
    assert len(_points(figure, windows, "pane:fired")) == 4
    assert figure.axes[-1].xaxis.get_major_formatter()(bars(figure)[0][0], 0) == "12:00:00"
