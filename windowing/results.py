"""What every terminal call of a :class:`~windowing.stream.WindowedStream` returns, in batch
and in streaming: one protocol, :class:`WindowingResult`.

A batch job returns a :class:`~windowing.spark.batch.replay_plan.WindowedResult`, a streaming one a
:class:`~windowing.spark.streaming.query.StreamingWindowedResult`; code that takes either types it
as ``WindowingResult``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from windowing.records import OutputTag

if TYPE_CHECKING:
    from pyspark.sql import DataFrame  # noqa: TID251 - type-only, never imported at runtime

    from windowing.spark.planning import SparkPlan

__all__ = ["WindowingResult"]


@runtime_checkable
class WindowingResult(Protocol):
    """The results of a windowed job, its side outputs and its plan.

    Attributes
    ----------
    results
        Key column(s), ``window_start``, ``window_end``, the function's output columns and
        ``max_timestamp`` (a streaming DataFrame in streaming).
    late_output_tag
        The tag given to ``side_output_late_data``, if any.
    plan
        How the job runs (:class:`~windowing.spark.planning.SparkPlan`): its route, the
        reason, the operator's plan and a columnar shape.
    dead_letters
        The errors routed by ``on_error("dead_letter")`` (empty without it).
    """

    @property
    def results(self) -> DataFrame: ...

    @property
    def late_output_tag(self) -> OutputTag | None: ...

    @property
    def plan(self) -> SparkPlan: ...

    @property
    def dead_letters(self) -> DataFrame | None: ...

    def get_side_output(self, tag: OutputTag) -> DataFrame:
        """The late rows (for the late tag) or a process function's side output."""
        ...

    def explain(self) -> None:
        """Print :attr:`plan`."""
        ...
