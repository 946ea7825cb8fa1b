"""Where :func:`write_results_and_late` writes each output of a streaming job, and how a
reader of it sees only micro-batches the checkpoint has committed.

Three kinds of :class:`Sink`:

- :class:`FileSink` (a folder, any file format Spark writes: parquet, json, csv, orc, ...;
  a plain path string means one): micro-batch ``N`` is written to
  ``<path>/_staging/batch_id=N`` (replacing an earlier attempt of the same batch), and moved
  to ``<path>/batch_id=N`` by one rename once the checkpoint's commit log holds ``N``.
  Spark's readers skip folders whose names start with ``_``, so
  ``spark.read.parquet(path)`` sees whole, committed micro-batches only, each once.
- :class:`TableSink` (a catalog table): each micro-batch replaces its own ``batch_id``
  partition (dynamic partition overwrite), so a replayed batch is written once; a reader
  may see a batch before the checkpoint commits it (the same rows, or the rows of the
  batch as replayed after a failure).
- :class:`FormatSink` (any other batch writer: Kafka, JDBC, ...): appended with a
  ``batch_id`` column; at least once (a batch replayed after a failure is written again:
  deduplicate on ``batch_id``), as Spark's own Kafka sink.

Publishing committed batches happens at the start of each micro-batch (every earlier one
is committed), from a query listener after each micro-batch, when the query starts (a
driver that died between a commit and its rename), and when
:meth:`WindowedQuery.awaitTermination` / :meth:`~WindowedQuery.stop` /
:meth:`~WindowedQuery.processAllAvailable` return.

Outputs never destroy published data. Before the query starts (nothing written or deleted
when it is refused, each refusal a ``ValueError`` naming the parameter and both paths):

- the folders (outputs and checkpoint) are compared resolved, symbolic links and ``..`` of
  local paths followed, against each other and against the folders the query's file
  sources read (classic PySpark; :mod:`windowing.spark.io.paths`);
- each :class:`FileSink` folder belongs to one query: ``<path>/_windowing_owner.json``
  records the token of its checkpoint (``<checkpoint>/windowing/query.json``); a folder of
  another checkpoint, or holding files of no query, is refused, so the batches a restart
  replaces are its own (:mod:`windowing.spark.io.ownership`);
- on local file systems the driver locks the checkpoint and each folder while the query
  runs: a second live writer is refused, naming the process that holds the lock.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention
from pyspark.sql.streaming.listener import StreamingQueryListener
from pyspark.sql.streaming.query import StreamingQuery

from windowing.definition import Change
from windowing.records import OutputTag
from windowing.spark.columns.units import StreamingUnitCheck
from windowing.spark.io.files import Files, committed_batches, join
from windowing.spark.io.ownership import STAGING, Output, Ownership, batch_of, take_ownership
from windowing.spark.io.paths import check_input_folders, check_sink_paths, input_folders
from windowing.spark.streaming.checkpoint import CHECKPOINT_PROPERTY, STATE_PROPERTY
from windowing.spark.streaming.job_record import JobRecord, record_job, write_job_record
from windowing.spark.streaming.quiet_stop import quiet_stop

if TYPE_CHECKING:
    from windowing.definition import JobDefinition

__all__ = [
    "STAGING",
    "FileSink",
    "FormatSink",
    "QueryStoppedError",
    "Sink",
    "StreamingJob",
    "TableSink",
    "WindowedQuery",
    "check_sink_paths",
    "stopped_error",
    "write_results_and_late",
]


# ---------------------------------------------------------------------------- the job
class _StageOf(Protocol):
    """A stateful stage of a query, as the query's record and metrics read it."""

    @property
    def definition(self) -> JobDefinition | None: ...

    @property
    def metrics_name(self) -> str | None: ...

    def observed_metrics(self, progress: Any) -> dict[str, Any] | None: ...


class _OutputsOf(Protocol):
    """The layout of a job's tagged output, as the outputs are chosen from it."""

    @property
    def dead_letter(self) -> bool: ...

    def side_index(self, tag: OutputTag) -> int | None: ...


class StreamingJob(_StageOf, Protocol):
    """What :func:`write_results_and_late` writes: a streaming job's tagged output and how to
    split it (a :class:`~windowing.spark.streaming.query.StreamingWindowedResult`, or an
    interval join's :class:`~windowing.spark.interval_join.StreamingIntervalJoinResult`)."""

    @property
    def output(self) -> DataFrame: ...

    @property
    def layout(self) -> _OutputsOf: ...

    @property
    def time_mode(self) -> str: ...

    @property
    def late_output_tag(self) -> OutputTag | None: ...

    @property
    def upstream(self) -> Sequence[_StageOf]: ...

    @property
    def stages(self) -> Sequence[_StageOf]: ...

    @property
    def unit_checks(self) -> tuple[StreamingUnitCheck, ...]: ...

    def check_late_path(self, late_path: object) -> None:
        """Refuse a ``late_path`` the job has no late rows of one output for."""
        ...

    def select_results(self, df: DataFrame) -> DataFrame: ...

    def select_late(self, df: DataFrame) -> DataFrame: ...

    def select_side_output(self, df: DataFrame, tag: OutputTag) -> DataFrame: ...

    def select_dead_letters(self, df: DataFrame) -> DataFrame: ...


# ---------------------------------------------------------------------------- sinks
class Sink(ABC):
    """One output of :func:`write_results_and_late`.

    Example::

        write_results_and_late(result, FileSink("/out/results", "json"),
                               TableSink("late_clicks"), "/chk/clicks")
    """

    @abstractmethod
    def write(self, df: DataFrame, batch_id: int) -> None:
        """Write micro-batch ``batch_id`` (idempotently where the kind allows it)."""

    def publish(self, files: Files, committed: set[int]) -> None:  # noqa: B027 - optional
        """Make the committed micro-batches visible to readers (nothing to do by default)."""

    @property
    def folder(self) -> str | None:
        """The folder it writes under (checked against the other outputs), if any."""
        return None

    @property
    def table_name(self) -> str | None:
        """The catalog table it writes, if any."""
        return None


@dataclass(frozen=True)
class FileSink(Sink):
    """Files under ``path`` in ``format`` (``parquet``, ``json``, ``csv``, ``orc``, ...)
    with the writer ``options``, one ``batch_id=N`` folder per micro-batch, visible once
    the checkpoint has committed it (see the module docstring).

    Example::

        FileSink("/out/results", "csv", {"header": "true"})
    """

    path: str
    format: str = "parquet"
    options: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_format(self.format)

    def staged(self, batch_id: int) -> str:
        return join(join(self.path, STAGING), f"batch_id={batch_id}")

    def write(self, df: DataFrame, batch_id: int) -> None:
        writer = df.write.mode("overwrite").format(self.format).options(**self.options)
        writer.save(self.staged(batch_id))

    def publish(self, files: Files, committed: set[int]) -> None:
        for name in sorted(files.names(join(self.path, STAGING))):
            batch = batch_of(name)
            if batch is not None and batch in committed:
                # the folder is this query's (take_ownership): replacing a published batch
                # replaces one of its own (see Files.replace)
                files.replace(join(join(self.path, STAGING), name), join(self.path, name))

    @property
    def folder(self) -> str:
        return self.path


@dataclass(frozen=True)
class TableSink(Sink):
    """The catalog table ``name``, partitioned by ``batch_id`` (created on the first
    micro-batch with ``format`` and ``options``, default: the session's default source);
    each micro-batch replaces its own partition (``INSERT OVERWRITE ... PARTITION``).

    Example::

        TableSink("analytics.clicks_per_minute")
    """

    name: str
    format: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            msg = f"TableSink: name must be a non-empty table name, got {self.name!r}"
            raise ValueError(msg)
        if self.format is not None:
            _check_format(self.format)

    def write(self, df: DataFrame, batch_id: int) -> None:
        spark = df.sparkSession
        rows = df.withColumn("batch_id", F.lit(batch_id))
        if not spark.catalog.tableExists(self.name):
            writer = rows.write.partitionBy("batch_id").options(**self.options)
            if self.format is not None:
                writer = writer.format(self.format)
            writer.saveAsTable(self.name)
            return
        # a static partition: replaces this batch's rows only, whatever the session's
        # partitionOverwriteMode
        view = f"__pw_batch_{batch_id}"
        df.createOrReplaceTempView(view)
        try:
            spark.sql(
                f"INSERT OVERWRITE TABLE {self.name} PARTITION (batch_id = {int(batch_id)}) "
                f"SELECT * FROM {view}"
            )
        finally:
            spark.catalog.dropTempView(view)

    @property
    def table_name(self) -> str:
        return self.name


@dataclass(frozen=True)
class FormatSink(Sink):
    """Any other batch writer: ``df.write.format(format).options(**options).save()`` in
    append mode, with a ``batch_id`` column; at least once. For ``kafka`` the rows become
    JSON ``value`` s (``options`` must name the servers and the topic).

    Example::

        FormatSink("kafka", {"kafka.bootstrap.servers": "broker:9092", "topic": "late"})
    """

    format: str
    options: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_format(self.format)

    def write(self, df: DataFrame, batch_id: int) -> None:
        rows = df.withColumn("batch_id", F.lit(batch_id))
        if self.format == "kafka":
            rows = rows.select(F.to_json(F.struct(*rows.columns)).alias("value"))
        rows.write.format(self.format).options(**self.options).mode("append").save()


def _check_format(fmt: object) -> None:
    if not isinstance(fmt, str) or not fmt.strip():
        msg = f"format must be a non-empty data source name, got {fmt!r}"
        raise ValueError(msg)


def _sink(name: str, value: str | Sink | None, fmt: str, options: Mapping[str, str]) -> Sink | None:
    """The sink of one parameter: a path is a :class:`FileSink` with the call's format."""
    if value is None or isinstance(value, Sink):
        return value
    if not isinstance(value, str) or not value.strip():
        msg = f"{name} must be a non-empty path or a Sink, got {value!r}"
        raise ValueError(msg)
    return FileSink(value, fmt, dict(options))


# ---------------------------------------------------------------------------- the query
class _Running:
    """The folder outputs of one running query: publishes their committed micro-batches
    until the query has ended, then (:meth:`end`) once more and releases the query's locks
    (:class:`~windowing.spark.io.ownership.Ownership`); nothing is published after that, when
    another run of the query may own the folders."""

    def __init__(
        self, publishing: _Publishing, spark: SparkSession | None, ownership: Ownership
    ) -> None:
        self.publishing = publishing
        self.spark = spark
        self.ownership = ownership
        self._guard = threading.Lock()
        self._ended = False

    def publish(self) -> None:
        with self._guard:
            if not self._ended:
                self.publishing(self.spark)

    def end(self) -> None:
        with self._guard:
            if self._ended:
                return
            self._ended = True
            try:
                self.publishing(self.spark)
            finally:
                self.ownership.release()


class _Publisher(StreamingQueryListener):
    """Publishes committed micro-batches after each micro-batch of one query, and ends its
    :class:`_Running` when it terminates; makes the query's unit checks, if any, each on the
    first micro-batch with event times in its input."""

    def __init__(self, running: _Running, unit_checks: tuple[StreamingUnitCheck, ...] = ()) -> None:
        self.running = running
        self.unit_checks = unit_checks
        # The run's id, not the query's: a restart of the query has the same query id, and
        # the listener bus may deliver the end of the previous run after this one started.
        self.run_id: str | None = None

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - Spark's name
        pass

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802 - Spark's name
        if self.run_id is not None and str(event.progress.runId) == self.run_id:
            self.running.publish()
            if self.unit_checks:  # each once per run
                observed = event.progress.observedMetrics
                self.unit_checks = tuple(c for c in self.unit_checks if not c.progress(observed))

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802 - Spark's name
        pass

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802 - Spark's name
        if self.run_id is not None and str(event.runId) == self.run_id:
            self.running.end()


class WindowedQuery:
    """The running query of :func:`write_results_and_late`: a ``StreamingQuery`` (every
    attribute is the query's) whose :meth:`awaitTermination`, :meth:`processAllAvailable`
    and :meth:`stop` return once the committed micro-batches are visible in the file sinks.

    Example::

        query = write_results_and_late(result, "/out/results", "/out/late", "/chk")
        query.processAllAvailable()  # the results of every committed micro-batch are in
    """

    def __init__(
        self,
        query: StreamingQuery,
        publish: Callable[[], None],
        release: Callable[[], None] = lambda: None,
        job_changes: Sequence[Change] = (),
        stages: Sequence[Any] = (),  # StreamingWindowedResult (resolved at run time)
        session: SparkSession | None = None,
    ) -> None:
        self.query = query
        self._session = session  # classic PySpark: a stop keeps the console quiet
        self._publish = publish
        self._release = release  # the query has ended: its locks and listener go
        #: The allowed changes of the job since its checkpoint's record (the function's
        #: class, side outputs, ...; ``docs/scale-and-failure.md``), the first stage's first.
        self.job_changes = list(job_changes)
        #: The windowing stages the query runs, the first first (one, unless a window's
        #: results feed another window: ``StreamingWindowedResult.stages``).
        self.stages = tuple(stages)

    def stage_metrics(self, progress: Any = None) -> dict[str, dict[str, Any] | None]:
        """Each windowing stage's observed metrics in ``progress`` (default: the query's
        last progress; or an item of ``recentProgress``), by the stage's metrics name, the
        first stage first (``None`` for a stage the progress does not have yet).

        Example::

            query.stage_metrics()  # {'windowing': {...}, 'windowing_2': {...}}
        """
        progress = self.query.lastProgress if progress is None else progress
        return {
            s.metrics_name: s.observed_metrics(progress)
            for s in self.stages
            if s.metrics_name is not None
        }

    def __getattr__(self, name: str) -> Any:
        return getattr(self.query, name)

    def __repr__(self) -> str:
        return f"WindowedQuery({self.query!r})"

    def _published(self) -> None:
        self._publish()
        if not self.query.isActive:
            self._release()

    def awaitTermination(self, timeout: int | None = None) -> bool | None:  # noqa: N802
        try:
            return self.query.awaitTermination(timeout)
        finally:
            self._published()

    def processAllAvailable(self) -> None:  # noqa: N802 - Spark's name
        self.query.processAllAvailable()
        self._published()

    def stop(self) -> None:
        """Stop the query (a micro-batch under way is interrupted, its output never
        published) without Spark's reports of the interrupted work on the console
        (:mod:`~windowing.spark.streaming.quiet_stop`); return once the committed
        micro-batches are visible."""
        try:
            with quiet_stop(self.query, self._session):
                self.query.stop()
        finally:
            self._published()


def write_results_and_late(
    result: StreamingJob,
    results_path: str | Sink,
    late_path: str | Sink | None,
    checkpoint: str,
    *,
    available_now: bool = False,
    processing_time: str | None = None,
    query_name: str | None = None,
    side_output_paths: Mapping[OutputTag, str | Sink] | None = None,
    dead_letter_path: str | Sink | None = None,
    format: str = "parquet",
    options: Mapping[str, str] | None = None,
) -> WindowedQuery:
    """Start ONE streaming query (``foreachBatch``) that writes the results, the late rows,
    the side outputs of ``side_output_paths`` (tag -> destination) and the dead letters
    (``dead_letter_path``, with ``on_error("dead_letter")``).

    Each destination is a folder (a :class:`FileSink` in ``format`` with ``options``:
    ``parquet`` by default, any file format Spark writes) or a :class:`Sink`
    (:class:`FileSink`, :class:`TableSink`, :class:`FormatSink`). In a folder, micro-batch
    ``N`` appears as ``<path>/batch_id=N`` once the checkpoint has committed it, whole and
    once (exactly once per batch id; see the module docstring): ``spark.read.parquet(path)``
    reads every committed batch, with a ``batch_id`` column. Restart with the same
    ``checkpoint`` to continue where the query stopped.

    ``result`` is a windowed job's, or an interval join's, whose late rows have an output
    per side: write those with ``side_output_paths={left_tag: ..., right_tag: ...}`` (the
    tags of ``side_output_left_late_data`` / ``side_output_right_late_data``), and give
    ``late_path=None``.

    Before the query starts, a ``ValueError`` naming the parameter and both paths refuses:

    - folders (results, late rows, dead letters, each side output, the checkpoint) that are
      one folder or lie inside one another, compared with symbolic links and ``..`` of local
      paths resolved, or that are, hold or lie inside a folder the query's file sources read
      (classic PySpark; under Spark Connect the input is not checked); tables that are one;
    - a folder another query owns: each folder records the query (the token kept in
      ``<checkpoint>/windowing/query.json``) in ``<path>/_windowing_owner.json`` when the
      query first writes it; a missing or empty folder is claimed, a folder without a record
      whose ``batch_id=N`` are all committed in ``checkpoint`` (written before records
      existed) adopted, any other refused: write elsewhere or delete the folder;
    - a checkpoint or folder a running query holds (local file systems: the driver locks
      ``<checkpoint>/windowing/query.lock`` and ``<path>/_windowing_lock`` until the query
      ends, is stopped, or the driver dies).

    The job's definition is recorded in ``<checkpoint>/windowing/job.json``; a restart whose
    job changed a part the state depends on is refused with a
    :class:`~windowing.spark.streaming.checkpoint.JobChangedError` listing each change, and
    the allowed changes are in the returned query's ``job_changes``
    (:mod:`windowing.spark.streaming.job_record`).
    """
    opts = dict(options or {})
    sinks: dict[str, Sink | None] = {
        "results_path": _sink("results_path", results_path, format, opts),
        "late_path": _sink("late_path", late_path, format, opts),
        "dead_letter_path": _sink("dead_letter_path", dead_letter_path, format, opts),
    }
    sides: dict[OutputTag, Sink] = {}
    for tag, value in (side_output_paths or {}).items():
        name = f"side_output_paths[{tag.name!r}]"
        sink = _sink(name, value, format, opts)
        if sink is None:
            msg = f"{name} must be a non-empty path or a Sink, got None"
            raise ValueError(msg)
        sides[tag] = sink
        sinks[name] = sink
    folders = {
        **{name: s.folder for name, s in sinks.items() if s is not None},
        "checkpoint": checkpoint,
    }
    check_sink_paths(folders)
    _check_tables({name: s.table_name for name, s in sinks.items() if s is not None})
    result.check_late_path(late_path)  # (after the paths' checks, which need no result)
    for tag in sides:
        if result.layout.side_index(tag) is None:
            msg = (
                f"side_output_paths: {tag!r} is the late-data tag; write it with late_path, "
                "not side_output_paths"
            )
            raise ValueError(msg)
    dead_sink = sinks["dead_letter_path"]
    if dead_sink is not None and not result.layout.dead_letter:
        msg = (
            f"dead_letter_path={dead_letter_path!r} needs a job with .on_error('dead_letter') "
            "(errors fail the query otherwise)"
        )
        raise ValueError(msg)
    if available_now and result.time_mode == "ProcessingTime":
        msg = (
            "available_now=True never ends in ProcessingTime mode (a processing-time window "
            "on the wall clock, or idle_timeout): Spark runs a micro-batch every trigger "
            "interval even without input; use processing_time=... and stop the query"
        )
        raise ValueError(msg)
    outputs = _outputs(result, sinks, sides)

    spark = result.output.sparkSession
    classic = not type(spark).__module__.startswith("pyspark.sql.connect")
    # Spark Connect has no JVM plan on the client: its file sources are not checked
    check_input_folders(folders, input_folders(result.output) if classic else ())
    # Spark Connect runs the batch function and the listener on the server: local folders
    # only there (no session to reach Hadoop's FileSystem with).
    session = spark if classic else None
    files = Files(session)
    publish = _Publishing(tuple(s for _, _, s in outputs), checkpoint)
    owned = [Output(name, s.folder) for name, _, s in outputs if s.folder is not None]
    # every check before the query starts: a refused query writes and deletes nothing
    record: JobRecord | None = None
    changes: list[Change] = []
    accepted: list[str] = []
    if files.reaches(checkpoint) and result.definition is not None:
        earlier = [s.definition for s in result.upstream if s.definition is not None]
        record, changes, accepted = record_job(files, checkpoint, result.definition, earlier)
    running = _Running(publish, session, take_ownership(files, checkpoint, owned))
    listener = None
    try:
        if record is not None:
            write_job_record(files, checkpoint, record)
        running.publish()  # a driver that died between a commit and its rename
        writer = result.output.writeStream.foreachBatch(
            _batch_writer(publish, [(select, s) for _, select, s in outputs], classic)
        ).option("checkpointLocation", checkpoint)
        if query_name is not None:
            writer = writer.queryName(query_name)
        if available_now:
            writer = writer.trigger(availableNow=True)
        elif processing_time is not None:
            writer = writer.trigger(processingTime=processing_time)
        if classic:
            listener = _Publisher(running, result.unit_checks)
            spark.streams.addListener(listener)
        known = None if record is None else record.state_property(accepted)
        query = _start(writer, spark if classic else None, checkpoint, known)
    except BaseException:
        if listener is not None:
            spark.streams.removeListener(listener)
        running.ownership.release()
        raise
    stages = result.stages
    if listener is None:
        return WindowedQuery(query, running.publish, running.end, changes, stages, session)
    listener.run_id = str(query.runId)
    removed: list[bool] = []

    def release() -> None:
        running.end()
        if not removed:
            removed.append(True)
            spark.streams.removeListener(listener)

    return WindowedQuery(query, running.publish, release, changes, stages, session)


def _start(
    writer: Any, spark: SparkSession | None, checkpoint: str, known: str | None
) -> StreamingQuery:
    """Start the query with local properties its stream thread and tasks inherit: the
    checkpoint (errors about its state name it: ``checkpoint.CHECKPOINT_PROPERTY``) and what
    the driver knows of its state (``known``: ``checkpoint.STATE_PROPERTY``)."""
    if spark is None:  # Spark Connect: no local properties on the client
        return writer.start()  # type: ignore[no-any-return]
    context = spark.sparkContext
    properties = {CHECKPOINT_PROPERTY: checkpoint, STATE_PROPERTY: known}
    before = {name: context.getLocalProperty(name) for name in properties}
    for name, value in properties.items():
        context.setLocalProperty(name, value)  # type: ignore[arg-type]
    try:
        return writer.start()  # type: ignore[no-any-return]
    finally:
        for name, value in before.items():
            context.setLocalProperty(name, value)  # type: ignore[arg-type]


def _outputs(
    result: StreamingJob,
    sinks: Mapping[str, Sink | None],
    sides: Mapping[OutputTag, Sink],
) -> list[tuple[str, Callable[[DataFrame], DataFrame], Sink]]:
    """``(parameter, selection of the batch, sink)`` of each output the query writes."""
    results_sink = sinks["results_path"]
    if results_sink is None:
        msg = "results_path must be a non-empty path or a Sink, got None"
        raise ValueError(msg)
    outputs: list[tuple[str, Callable[[DataFrame], DataFrame], Sink]] = [
        ("results_path", result.select_results, results_sink)
    ]
    late_sink = sinks["late_path"]
    if late_sink is not None and result.late_output_tag is not None:
        outputs.append(("late_path", result.select_late, late_sink))
    for tag, sink in sides.items():
        name = f"side_output_paths[{tag.name!r}]"
        outputs.append((name, functools.partial(_side_output, result, tag), sink))
    dead_sink = sinks["dead_letter_path"]
    if dead_sink is not None:
        outputs.append(("dead_letter_path", result.select_dead_letters, dead_sink))
    return outputs


def _batch_writer(
    publish: _Publishing,
    outputs: list[tuple[Callable[[DataFrame], DataFrame], Sink]],
    classic: bool,
) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function: publishes the committed micro-batches, then writes
    each output of micro-batch ``batch_id``."""

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        try:
            publish(batch.sparkSession if classic else None)  # earlier batches are committed
            several = len(outputs) > 1  # several outputs: persisted, the operator runs once
            if several:
                batch = batch.persist()
            try:
                for select, sink in outputs:
                    sink.write(select(batch), batch_id)
            finally:
                if several:
                    batch.unpersist()
        except Exception as exc:
            stopped = stopped_error(exc, batch_id)
            if stopped is None:
                raise
            raise stopped from None  # a short traceback: see stopped_error

    return write_batch


#: The Java exceptions Spark takes for a stop of the query (``StreamExecution``'s
#: ``IO_EXCEPTION_NAMES``).
_INTERRUPTIONS = (
    "java.lang.InterruptedException",
    "java.io.InterruptedIOException",
    "java.nio.channels.ClosedByInterruptException",
)


class QueryStoppedError(RuntimeError):
    """The query was stopped while a micro-batch's writes waited on the JVM; Spark takes the
    error for the stop (the query ends without an exception)."""


def stopped_error(exc: BaseException, batch_id: int) -> QueryStoppedError | None:
    """For an error of a JVM call caused by an interruption (``query.stop()`` while the
    ``foreachBatch`` function waited on the JVM): a :class:`QueryStoppedError` whose
    message is short and names the interruption; ``None`` for any other error.

    Spark tells a stop from a failure of a ``foreachBatch`` function by matching the text of
    the Python traceback with a regular expression
    (``py4j.protocol.Py4JJavaError: An error occurred while calling((.|\\r\\n|\\r|\\n)*)``
    then the interruption's class name, in ``StreamExecution.isInterruptionException``),
    which recurses once per character of the text after its first words: the traceback of
    the JVM error, with its Java stack trace, overflows the stack of the stream execution
    thread (a ``StackOverflowError`` when a query is stopped during a long micro-batch, as
    with a hot key). The short error keeps that text to one line that still matches."""
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    found = None
    with contextlib.suppress(Exception):  # the JVM may be going away: no error then
        for _ in range(32):  # the cause chain, bounded
            if java is None:
                break
            name = str(java.getClass().getName())
            if name in _INTERRUPTIONS:
                found = name
                break
            java = java.getCause()
    if found is None:
        return None
    return QueryStoppedError(
        f"py4j.protocol.Py4JJavaError: An error occurred while calling the JVM: {found} "
        f"(the query was stopped during micro-batch {batch_id})"
    )


def _side_output(result: StreamingJob, tag: OutputTag, df: DataFrame) -> DataFrame:
    return result.select_side_output(df, tag)


#: Publishing is serialized within a process (the listener thread and the micro-batches).
_PUBLISH_LOCK = threading.Lock()


@dataclass(frozen=True)
class _Publishing:
    """Publishes every committed micro-batch of the folder sinks among ``outputs``."""

    outputs: tuple[Sink, ...]
    checkpoint: str

    @property
    def sinks(self) -> list[Sink]:
        return [s for s in self.outputs if s.folder is not None]

    def __call__(self, spark: SparkSession | None) -> None:
        sinks = self.sinks
        if not sinks:
            return
        files = Files(spark)
        with _PUBLISH_LOCK:
            committed = committed_batches(files, self.checkpoint)
            for sink in sinks:
                sink.publish(files, committed)


def _check_tables(tables: Mapping[str, str | None]) -> None:
    seen: dict[str, str] = {}
    for name, table in tables.items():
        if table is None:
            continue
        other = seen.get(table.lower())
        if other is not None:
            msg = f"{name} writes the same table as {other}: {table!r}"
            raise ValueError(msg)
        seen[table.lower()] = name
