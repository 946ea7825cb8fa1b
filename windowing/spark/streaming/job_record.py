"""The definition of a streaming job as its checkpoint records it, and the check of a restart
against it (``docs/scale-and-failure.md``, "The checkpoint knows its job").

:func:`job_definition` describes a job in plain data
(:class:`~windowing.definition.JobDefinition`): the parts that shape its state (assigner,
trigger, evictor, function kind, built-in aggregates, key columns, the input columns when the
state keeps input rows, allowed lateness, key groups, time mode, processing-time column, idle
timeout, the state's shape) and the others (the function's class, output and side output
columns, error policy, ...). Its digest goes into every key group's state; :func:`check_job`
compares the whole definition with the checkpoint's record before a query starts.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from windowing._version import __version__
from windowing.definition import Change, JobDefinition, describe, same_description
from windowing.errors import ErrorPolicy
from windowing.functions.aggregations import FieldAggregation
from windowing.functions.columns import ColumnAggregates
from windowing.functions.vectorized import VectorizedAdapter
from windowing.job import Job
from windowing.plan import plan_operator
from windowing.spark.io.files import Files, committed_batches, join
from windowing.spark.io.ownership import windowing_folder
from windowing.spark.streaming.checkpoint import STATE_VERSION, JobChangedError
from windowing.time import TimeUnit

if TYPE_CHECKING:
    from windowing.functions.spec import WindowFunctionSpec
    from windowing.spark.columnar.core import ColumnarPlan
    from windowing.spark.columns.output import OutputLayout

__all__ = [
    "JOB_RECORD",
    "JobRecord",
    "StageRecord",
    "check_job",
    "job_definition",
    "operator_strategy",
    "read_job_record",
    "record_job",
    "write_job_record",
]

#: The record of the job in the checkpoint (under its ``windowing`` folder).
JOB_RECORD = "job.json"

#: The names earlier versions recorded for a columnar state shape (its plan's class name,
#: where this version records ``ColumnarShape.value``): a record of theirs describes the
#: same state.
_EARLIER_COLUMNAR_NAMES = {
    "ColumnarAggregation": "tumbling",
    "TumblingAggregation": "tumbling",
    "HoppingAggregation": "hopping",
    "SessionAggregation": "sessions",
}

#: The columnar shapes of ``.agg`` whose state converts from the window operator's.
_AGG_COLUMNAR = ("tumbling", "hopping", "sessions", "kip450", "count-trigger")

_LOG = logging.getLogger(__name__)


def job_definition(
    job: Job,
    spec: WindowFunctionSpec,
    layout: OutputLayout,
    *,
    key_groups: int,
    time_mode: str,
    columnar: ColumnarPlan | None,
) -> JobDefinition:
    """The definition of the streaming job ``job`` with the function ``spec``."""
    config, source = job.config, job.source
    function = getattr(spec, "function", None)
    window_function = getattr(spec, "window_function", None)
    builtin = isinstance(function, ColumnAggregates | FieldAggregation)
    kind = spec.kind + ("" if window_function is None else "+window_function")
    # Aggregates and folds keep accumulators, not rows (unless an evictor buffers them, or a
    # vectorized function's accumulator holds the rows since its last result).
    keeps_rows = (
        spec.kind not in ("aggregate", "fold")
        or config.evictor is not None
        or isinstance(function, VectorizedAdapter)
    )
    schema = [[f.name, f.dataType.simpleString()] for f in layout.input_schema.fields]
    fields = {f.name: f.dataType.simpleString() for f in layout.input_schema.fields}
    parts: dict[str, Any] = {
        "assigner": describe(config.assigner),
        "trigger": describe(config.trigger),
        "evictor": describe(config.evictor),
        "function_kind": kind,
        "aggregates": describe(function) if builtin else None,
        "keys": [[k, fields[k]] for k in layout.keys],
        "input_rows": schema if keeps_rows else None,
        "allowed_lateness": config.allowed_lateness,
        "max_parallelism": key_groups,
        "time_mode": time_mode,
        "processing_time": source.processing_time,
        "idle_timeout": config.idle_timeout,
        "state_shape": {
            "strategy": operator_strategy(job, spec),
            "columnar": None if columnar is None else columnar.shape.value,
        },
        # allowed to change: listed, the query goes on
        "function": None if builtin else describe(function),
        "window_function": describe(window_function),
        "input": schema,
        "output": layout.out_schema.simpleString(),
        "late_output_tag": None if config.late_output_tag is None else config.late_output_tag.name,
        "side_outputs": {tag.name: s.simpleString() for tag, s in layout.side_outputs},
        "on_error": config.on_error.name,
        "pane_info": config.pane_info,
        "window_struct": config.window_struct,
        "event_time": source.event_time,
        # None for milliseconds: the unit earlier versions read every integral column in
        "event_time_unit": _unit(source.event_unit),
        "processing_time_unit": _unit(source.processing_time_unit),
        "watermark": describe(source.watermark),
        # one column as its name (as earlier versions recorded it), several as a list
        "arrival_order": (
            source.arrival_order
            if source.arrival_order is None or isinstance(source.arrival_order, str)
            else list(source.arrival_order)
        ),
        "state_layout": STATE_VERSION,
        "windowing": __version__,
    }
    return JobDefinition(parts)


def _unit(unit: TimeUnit) -> str | None:
    return None if unit is TimeUnit.MILLISECONDS else unit.value


def operator_strategy(job: Job, spec: WindowFunctionSpec) -> str:
    """The window operator's strategy for the job (its key states' shape: per-window state,
    panes, timelines; it follows the error policy and pane info too)."""
    config = job.config
    plan = plan_operator(
        config.assigner,
        config.trigger,
        config.evictor,
        spec,
        config.allowed_lateness,
        config.slicing,
        guarded=config.on_error is ErrorPolicy.DEAD_LETTER,
        pane_info=config.pane_info,
    )
    return plan.strategy.value


@dataclass(frozen=True)
class StageRecord:
    """One earlier windowing stage of a query of several (Flink's consecutive windows): its
    definition and the digests of its earlier records (see :attr:`JobRecord.earlier_digests`)."""

    definition: JobDefinition
    earlier_digests: tuple[str, ...] = ()

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.earlier_digests:
            data["earlier_digests"] = list(self.earlier_digests)
        data["job"] = dict(self.definition.parts)
        return data

    @classmethod
    def from_data(cls, data: Any) -> StageRecord:
        if not isinstance(data, dict) or not isinstance(data.get("job"), dict):
            msg = "not a JSON object with a 'job' object"
            raise ValueError(msg)
        earlier = data.get("earlier_digests", [])
        return cls(
            JobDefinition(data["job"]),
            tuple(d for d in earlier if isinstance(d, str)) if isinstance(earlier, list) else (),
        )


@dataclass(frozen=True)
class JobRecord:
    """``<checkpoint>/windowing/job.json``: the definition of the job whose state the
    checkpoint holds, and the state layout the checkpoint was created with (``None``: a
    checkpoint of a version that kept no record). The job is the query's last windowing
    stage; a query of several stages records the ones before it in ``stages``, the first
    first (each stage is a stateful operator with its own state)."""

    definition: JobDefinition
    created_layout: int | None
    #: The digests of the earlier records of this job whose state the checkpoint may still
    #: hold (a key group keeps the digest it was written with until it is written again).
    earlier_digests: tuple[str, ...] = ()
    #: The query's stages before this job, the first first (none: a query of one stage).
    stages: tuple[StageRecord, ...] = ()

    @property
    def all_stages(self) -> tuple[StageRecord, ...]:
        """Every stage of the query, the first first: ``stages``, then the job itself."""
        return (*self.stages, StageRecord(self.definition, self.earlier_digests))

    def operator_id(self, position: int) -> int:
        """Spark's stateful operator id of the stage at ``position`` (0: the first): Spark
        numbers a query's stateful operators from the sink down, so the last stage is 0."""
        return len(self.stages) - position

    def to_json(self) -> str:
        data: dict[str, Any] = {"created_layout": self.created_layout}
        data.update(StageRecord(self.definition, self.earlier_digests).to_data())
        if self.stages:
            data["stages"] = [stage.to_data() for stage in self.stages]
        return json.dumps(data, indent=1)

    @classmethod
    def from_json(cls, text: str) -> JobRecord:
        data = json.loads(text)
        last = StageRecord.from_data(data)
        layout = data.get("created_layout")
        stages = data.get("stages", [])
        if not isinstance(stages, list):
            msg = "'stages' is not a list"
            raise ValueError(msg)
        return cls(
            last.definition,
            layout if isinstance(layout, int) else None,
            last.earlier_digests,
            tuple(StageRecord.from_data(stage) for stage in stages),
        )

    def state_property(self, accepted: Sequence[str]) -> str:
        """What tasks learn of the checkpoint's state (``checkpoint.STATE_PROPERTY``): the
        digests of state-shaping parts found compatible with this job (the earlier record's,
        when a newer version describes a part otherwise), whether every value is bound."""
        bound = self.created_layout is not None and self.created_layout >= STATE_VERSION
        return json.dumps({"accepted": list(accepted), "bound": bound})


def check_job(
    definition: JobDefinition,
    recorded: JobDefinition | None,
    checkpoint: str,
    stage: str | None = None,
) -> list[Change]:
    """The allowed changes of ``definition`` since the checkpoint's ``recorded`` one (none
    without a record, or when the checkpoint holds no committed state yet);
    :class:`~windowing.spark.streaming.checkpoint.JobChangedError` naming every breaking change, and
    how to start fresh, when the state cannot continue with it. ``stage``: which stage of a
    query of several the definitions are (``"stage 1 of 2"``), for the message."""
    if recorded is None:
        return []
    recorded = _in_current_terms(recorded, definition)
    layout = recorded.parts.get("state_layout")
    if isinstance(layout, int) and layout > STATE_VERSION:
        msg = (
            f"checkpoint={checkpoint!r} was written by a newer version of windowing "
            f"({recorded.parts.get('windowing')}, state layout {layout}); this version "
            f"({__version__}) reads state layouts up to {STATE_VERSION}: run the version that "
            "wrote it, or start with a new checkpoint location"
        )
        raise JobChangedError(msg)
    changes = definition.changes_from(recorded)
    breaking = [c for c in changes if c.breaking]
    if breaking:
        lines = "\n".join(f"  - {c}" for c in breaking)
        of = "" if stage is None else f" in its {stage}"
        msg = (
            f"checkpoint={checkpoint!r} holds the state of another job{of}; what changed:\n"
            f"{lines}\n"
            "The state cannot continue with this job. Run the job the checkpoint was written "
            "with, or start this one fresh with a new checkpoint location (and new output "
            "folders: each belongs to the checkpoint that first wrote it)."
        )
        raise JobChangedError(msg)
    allowed = [c for c in changes if c.part not in ("state_layout", "windowing")]
    for change in allowed:
        _LOG.info("checkpoint %s: allowed job change %s", checkpoint, change)
    return allowed


def _in_current_terms(recorded: JobDefinition, definition: JobDefinition) -> JobDefinition:
    """``recorded`` with the names an earlier version gave a part replaced by this version's
    (a columnar state shape was recorded as its plan's class name), and an ``.agg`` or a
    vectorized aggregate (of tumbling windows, sessions or hopping panes) that an earlier
    version ran in the window operator recorded with the columnar shape ``definition`` has
    now (the columns convert the operator's accumulators; a vectorized aggregate's keys stay
    with the operator until their windows are cleaned up)."""
    shape = recorded.parts.get("state_shape")
    if not isinstance(shape, dict):
        return recorded
    now = dict(shape)
    if shape.get("columnar") in _EARLIER_COLUMNAR_NAMES:
        now["columnar"] = _EARLIER_COLUMNAR_NAMES[shape["columnar"]]
    current = definition.parts.get("state_shape")
    columnar = current.get("columnar") if isinstance(current, dict) else None
    aggregates = recorded.parts.get("aggregates")
    converts = (
        columnar in _AGG_COLUMNAR
        and isinstance(aggregates, dict)
        and aggregates.get("class") == "ColumnAggregates"
        and same_description(aggregates, definition.parts.get("aggregates"))
    )
    # a vectorized aggregate's held rows: the operator's keys stay with it
    held = columnar in ("tumbling", "sessions", "hopping") and all(
        _vectorized(d.parts.get("function")) for d in (recorded, definition)
    )
    if shape.get("columnar") is None and (converts or held):
        now["columnar"] = columnar
    if now == shape:
        return recorded
    return JobDefinition({**recorded.parts, "state_shape": now})


def _vectorized(function: Any) -> bool:
    """Whether a recorded function is a vectorized aggregate's adapter."""
    return isinstance(function, dict) and function.get("class") == VectorizedAdapter.__name__


def read_job_record(files: Files, checkpoint: str) -> JobRecord | None:
    """The record of ``checkpoint`` (``None``: none yet, or a checkpoint of a version that
    kept no record)."""
    path = join(windowing_folder(checkpoint), JOB_RECORD)
    text = files.read_text(path)
    if text is None:
        return None
    try:
        return JobRecord.from_json(text)
    except ValueError as exc:
        msg = f"{path!r} is not a job record of pyspark-windowing ({exc}): restore it"
        raise ValueError(msg) from exc


def record_job(
    files: Files,
    checkpoint: str,
    definition: JobDefinition,
    earlier_stages: Sequence[JobDefinition] = (),
) -> tuple[JobRecord, list[Change], list[str]]:
    """Check ``definition`` (and the definitions of the query's ``earlier_stages``, the first
    first) against the record of ``checkpoint`` (:func:`check_job`, stage by stage; only
    once the checkpoint has committed a micro-batch: before, it holds no state). Returns the
    record to write when the query starts, the allowed changes (the first stage's first),
    and the digests its state may carry (the earlier records': equal parts may be described
    otherwise by a newer version, and a key group not written since keeps its digest)."""
    recorded = read_job_record(files, checkpoint)
    committed = bool(committed_batches(files, checkpoint))
    new_stages = tuple(StageRecord(d) for d in earlier_stages)
    if recorded is None:  # a new checkpoint, or one of a version that kept no record
        layout = None if committed else STATE_VERSION
        return JobRecord(definition, layout, stages=new_stages), [], []
    if not committed:  # no state yet (a first run that failed): this job starts it
        return JobRecord(definition, recorded.created_layout, stages=new_stages), [], []
    before = recorded.all_stages
    now = (*earlier_stages, definition)
    if len(before) != len(now):
        msg = (
            f"checkpoint={checkpoint!r} holds the state of a query of {len(before)} windowing "
            f"stage(s), this query has {len(now)}: each stage is a stateful operator with its "
            "own state, so the state cannot continue. Run the query the checkpoint was "
            "written with, or start this one with a new checkpoint location (and new output "
            "folders)."
        )
        raise JobChangedError(msg)
    changes: list[Change] = []
    stages: list[StageRecord] = []
    carried: list[str] = []
    for i, (old, new) in enumerate(zip(before, now, strict=True)):
        label = None if len(now) == 1 else f"stage {i + 1} of {len(now)}"
        changes.extend(check_job(new, old.definition, checkpoint, label))
        earlier = (old.definition.digest, *old.earlier_digests)
        kept = tuple(dict.fromkeys(d for d in earlier if d != new.digest))
        stages.append(StageRecord(new, kept))
        carried.extend(earlier)
    last = stages.pop()
    record = JobRecord(definition, recorded.created_layout, last.earlier_digests, tuple(stages))
    return record, changes, list(dict.fromkeys(carried))


def write_job_record(files: Files, checkpoint: str, record: JobRecord) -> None:
    """Write ``record`` into ``checkpoint`` (replacing the record whole)."""
    files.write_text(join(windowing_folder(checkpoint), JOB_RECORD), record.to_json())
