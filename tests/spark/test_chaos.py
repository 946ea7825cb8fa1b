"""Crash safety of ``write_results_and_late``: a driver killed (SIGKILL) at random points
and restarted from its checkpoint ends with the outputs of a run with the same
micro-batches, and at no kill does a reader of the output folders see a micro-batch the
checkpoint has not committed."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from windowing import OutputTag
from windowing.assigners import TumblingEventTimeWindows
from windowing.stream import BoundedOutOfOrderness, WindowedStream

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JOB = Path(__file__).with_name("chaos_job.py")
LATE = OutputTag("late")
SCHEMA = "user string, amount bigint, ts bigint, file bigint"
T0 = 1_700_000_000_000
KILLS = 10
SENTINEL = "~sentinel"
FIRST, MORE = 4, 2  # files before the first run, and before each restart
FILES = FIRST + MORE * KILLS


def write_files(src: Path, seed: int, files: range) -> None:
    rng = random.Random(seed)
    src.mkdir(parents=True, exist_ok=True)
    for f in files:
        rows = []
        for _ in range(20):
            ts = T0 + f * 700 + rng.randint(-1_200, 300)  # some rows late
            user = rng.choice("abcde")
            rows.append({"user": user, "amount": rng.randint(1, 9), "ts": ts, "file": f})
        rng.shuffle(rows)
        if f == FILES - 1:  # moves the watermark past every window of the others
            rows.append({"user": SENTINEL, "amount": 0, "ts": T0 + 10**9, "file": f})
        path = src / f"part-{f:04d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(path, (1_600_000_000 + f * 10,) * 2)


def batches(folder: Path) -> set[int]:
    return {int(p.name.split("=")[1]) for p in folder.glob("batch_id=*")}


def committed(chk: Path) -> set[int]:
    commits = chk / "commits"
    return (
        {int(p.name) for p in commits.iterdir() if p.name.isdigit()} if commits.exists() else set()
    )


def start(base: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env["PYTHONPATH"] = os.pathsep.join([str(JOB.parents[2]), env.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [sys.executable, str(JOB), str(base)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # the driver's JVM dies with it
    )


def file_batches(chk: Path) -> dict[int, int]:
    """File index -> the micro-batch that read it (the file source's log)."""
    found: dict[int, int] = {}
    for log in (chk / "sources" / "0").iterdir():
        if not log.name.split(".")[0].isdigit() or log.name.startswith("."):
            continue  # checksums
        for line in log.read_text().splitlines()[1:]:
            entry = json.loads(line)
            name = entry["path"].rsplit("/", 1)[1]
            found[int(name[len("part-") : -len(".json")])] = entry["batchId"]
    return found


def replayed(spark: SparkSession, src: Path, chk: Path) -> tuple[list[Any], list[Any]]:
    """The batch replay with the micro-batches the query actually had."""
    mapping = spark.createDataFrame(list(file_batches(chk).items()), "file bigint, batch bigint")
    df = spark.read.schema(SCHEMA).json(str(src)).join(mapping, "file")
    result = (
        WindowedStream.from_dataframe(
            df, event_time="ts", watermark=BoundedOutOfOrderness(500), arrival_order="batch"
        )
        .key_by("user")
        .window(TumblingEventTimeWindows(1_000))
        .side_output_late_data(LATE)
        .sum("amount")
    )
    with result:
        res = [
            (r.user, r.window_start, r.amount)
            for r in result.results.collect()
            if r.user != SENTINEL
        ]
        late = [(r.user, r.ts, r.amount) for r in result.get_side_output(LATE).collect()]
    return res, late


def test_killed_driver_restarts_with_the_same_outputs(spark: SparkSession, tmp_path: Path) -> None:
    rng = random.Random(2026)
    write_files(tmp_path / "src", 1, range(FIRST))
    out, chk = tmp_path / "out", tmp_path / "chk"
    kills = 0
    finished = False
    while not finished:
        written = FIRST + MORE * kills
        write_files(tmp_path / "src", written, range(written, min(written + MORE, FILES)))
        job = start(tmp_path)
        if kills < KILLS:
            time.sleep(rng.uniform(3.0, 12.0))
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGKILL)
                job.wait()
                kills += 1
                # a reader sees committed micro-batches only, whole
                done = committed(chk)
                for folder in (out / "results", out / "late"):
                    assert batches(folder) <= done, (kills, sorted(batches(folder)), sorted(done))
                continue
        assert job.wait(timeout=600) == 0
        finished = kills >= KILLS
    assert kills >= KILLS
    results = spark.read.parquet(str(out / "results")).collect()
    late = spark.read.parquet(str(out / "late")).collect()
    got = Counter((r.user, r.window_start, r.amount) for r in results if r.user != SENTINEL)
    got_late = Counter((r.user, r.ts, r.amount) for r in late)
    want, want_late = replayed(spark, tmp_path / "src", chk)
    assert got == Counter(want)
    assert got_late == Counter(want_late)
    assert sum(got.values()) > 20 and got_late
    assert len(file_batches(chk)) == FILES
    # nothing committed is left waiting in the staging folders
    for folder in (out / "results", out / "late"):
        assert not batches(folder / "_staging") & committed(chk)


MISUSE_JOB = JOB.with_name("misuse_job.py")


def misuse(src: Path, results: Path, late: Path, chk: Path, hold: bool = False) -> Any:
    """``misuse_job.py`` in its own driver: its standard output is piped."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env["PYTHONPATH"] = os.pathsep.join([str(JOB.parents[2]), env.get("PYTHONPATH", "")])
    args = [str(src), str(results), str(late), str(chk)] + (["hold"] if hold else [])
    return subprocess.Popen(
        [sys.executable, str(MISUSE_JOB), *args],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )


def finished(job: Any) -> tuple[int, str]:
    out, _ = job.communicate(timeout=600)
    return job.returncode, out


def test_misused_output_folders_are_refused_in_separate_drivers(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Three misuses of output folders, each in drivers of their own: a new query
    into a folder another query published to, a late folder that is a symbolic link to the
    results folder, and two queries starting on one fresh folder at the same time. Each is
    refused before it writes, naming the other side, and the published rows stay."""
    write_files(tmp_path / "a", 1, range(2))
    write_files(tmp_path / "b", 2, range(2))
    res = tmp_path / "res"
    assert finished(misuse(tmp_path / "a", res, tmp_path / "late_a", tmp_path / "chk_a")) == (0, "")
    before = sorted(map(tuple, spark.read.parquet(str(res)).collect()))
    assert before

    # 1. another checkpoint and input into the same folder
    code, out = finished(misuse(tmp_path / "b", res, tmp_path / "late_b", tmp_path / "chk_b"))
    assert code == 3 and "belongs to another query" in out and str(tmp_path / "chk_a") in out
    # 2. the late rows' folder is a link to the results' folder
    (tmp_path / "link").symlink_to(res)
    code, out = finished(misuse(tmp_path / "a", res, tmp_path / "link", tmp_path / "chk_a"))
    assert code == 3 and "late_path=" in out and "is the same folder as results_path" in out
    assert sorted(map(tuple, spark.read.parquet(str(res)).collect())) == before
    assert not (tmp_path / "chk_b").exists()

    # 3. two queries start on one fresh folder at once: one runs, the other is refused
    fresh = tmp_path / "fresh"
    jobs = [
        misuse(tmp_path / s, fresh, tmp_path / f"late2_{s}", tmp_path / f"chk2_{s}", hold=True)
        for s in ("a", "b")
    ]
    try:
        firsts = {job: job.stdout.readline().strip() for job in jobs}
        (winner,) = [job for job, line in firsts.items() if line == "started"]
        (loser,) = [job for job in jobs if job is not winner]
        assert loser.wait(timeout=600) == 3
        out = firsts[loser]
        assert out.startswith(f"refused: results_path={str(fresh)!r}")
        assert f"pid {winner.pid} on " in out
    finally:
        for job in jobs:  # the winner stops once its standard input closes
            job.stdin.close()
            job.wait(timeout=600)
            job.stdout.close()
    assert winner.returncode == 0


def chaos_result(spark: SparkSession, src: Path, job: Any = None) -> Any:
    """The chaos job (tumbling 1 s sums with late rows) over the files of ``src``, or
    ``job(keyed stream)``."""
    df = spark.readStream.schema(SCHEMA).json(str(src))
    keyed = WindowedStream.from_dataframe(
        df, event_time="ts", watermark=BoundedOutOfOrderness(500)
    ).key_by("user")
    if job is not None:
        return job(keyed)
    return keyed.window(TumblingEventTimeWindows(1_000)).side_output_late_data(LATE).sum("amount")


class Boom:
    """An object whose unpickling creates ``marker``: proof of code run from state."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


def test_changed_jobs_moved_and_tampered_state_fail_loudly_and_lose_nothing(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a real checkpoint: restarts with changed jobs are refused before they start, naming
    the change, and leave every file as it was; the checkpoint's own state values, moved to
    another key group or query, bit-flipped or forged to run code, are refused before
    anything of them is unpickled, naming the checkpoint and key group; nothing runs."""
    import pickle

    from windowing.assigners import EventTimeSessionWindows
    from windowing.engine import encoding
    from windowing.spark.streaming.checkpoint import (
        JobChangedError,
        StateOwner,
        decode_entry,
        load_group,
    )
    from windowing.spark.streaming.sinks import write_results_and_late

    src, res, late, chk = (tmp_path / n for n in ("src", "res", "late", "chk"))
    write_files(src, 5, range(4))

    def start(job: Any = None) -> Any:
        result = chaos_result(spark, src, job)
        late_path = str(late) if result.late_output_tag is not None else None
        return write_results_and_late(result, str(res), late_path, str(chk), available_now=True)

    first = start()
    first.awaitTermination(600)
    assert first.exception() is None
    files = {p: p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file()}
    rows = sorted(map(tuple, spark.read.parquet(str(res)).collect()))
    assert rows

    # 4. changed jobs: refused before they start, naming the change; no file changes
    for job, named in [
        (
            lambda k: (
                k.window(TumblingEventTimeWindows(2_000)).side_output_late_data(LATE).sum("amount")
            ),
            r"assigner: TumblingEventTimeWindows\(size=1000.* -> "
            r"TumblingEventTimeWindows\(size=2000",
        ),
        (
            lambda k: k.window(EventTimeSessionWindows(1_000)).sum("amount"),
            r"assigner: TumblingEventTimeWindows.* -> EventTimeSessionWindows",
        ),
        (lambda k: k.window(TumblingEventTimeWindows(1_000)).max("amount"), r"aggregates: "),
        (
            lambda k: k.window(TumblingEventTimeWindows(1_000)).reduce(lambda a, b: a),
            r'aggregates: FieldAggregation\(aggregation="SUM", field="amount".* -> null',
        ),
    ]:
        with pytest.raises(JobChangedError, match=rf"(?s)holds the state of another job.*{named}"):
            start(job)
    assert {p: p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file()} == files

    # 5. the checkpoint's state values (unsigned, the default), moved: refused, naming where
    query_id = json.loads((chk / "metadata").read_text())["id"]
    owner = StateOwner(query_id, str(chk))
    digest = chaos_result(spark, src).definition.digest
    values = {
        r.kg: bytes(r.state)
        for r in spark.read.format("statestore")
        .option("stateVarName", "key_group")
        .load(str(chk))
        .selectExpr("key.__pw_kg AS kg", "value.state AS state")
        .collect()
    }
    assert len(values) >= 2
    (g, unsigned), (h, _) = sorted(values.items())[:2]
    scope = owner.scope(g)
    assert unsigned[5] == 0  # unsigned, plain data
    _, entries, windows = load_group(unsigned, 128, scope, digest)  # where it belongs
    assert entries or windows is not None
    with pytest.raises(encoding.StateCorruptError, match=rf"key group {h} of checkpoint"):
        load_group(unsigned, 128, owner.scope(h), digest)
    with pytest.raises(encoding.StateCorruptError, match="another query or key group"):
        load_group(unsigned, 128, StateOwner("another query", str(chk)).scope(g), digest)
    with pytest.raises(JobChangedError, match=rf"key group {g} .* written by another job"):
        load_group(unsigned, 128, scope, "0" * 16)

    # the same state as signed with a key: the group's value and the values inside it
    plain, _ = encoding.open_state(unsigned, scope)
    inner = [encoding.open_state(b, scope)[0] if b else b for b in [i[3] for i in plain[4]]]
    windows_plain = None if plain[5] is None else encoding.open_state(plain[5], scope)[0]
    monkeypatch.setenv(encoding.STATE_KEY_ENV, "a key")

    def value(p: Any) -> bytes:
        return encoding.StateWriter().finish(p, scope)

    items = [(*i[:3], value(p) if p else p, *i[4:]) for i, p in zip(plain[4], inner, strict=True)]
    windows_signed = None if windows_plain is None else value(windows_plain)
    signed = value((*plain[:4], items, windows_signed, *plain[6:]))
    assert signed[5] == 1
    load_group(signed, 128, scope, digest)
    with pytest.raises(encoding.StateAuthenticationError, match=rf"key group {h} of checkpoint"):
        load_group(signed, 128, owner.scope(h), digest)
    with pytest.raises(encoding.StateAuthenticationError, match="another query or key group"):
        load_group(signed, 128, StateOwner("another query", str(chk)).scope(g), digest)

    # 6. tampered: every flipped bit refused, signed or not; a forged value runs nothing
    refused = (
        encoding.StateAuthenticationError,
        encoding.StateFormatError,
        encoding.UntrustedStateError,
    )
    for data in (signed, unsigned):
        if data is unsigned:
            monkeypatch.delenv(encoding.STATE_KEY_ENV)
        for bit in range(0, len(data) * 8, 7):
            flipped = bytearray(data)
            flipped[bit // 8] ^= 1 << (bit % 8)
            with pytest.raises(refused):
                load_group(bytes(flipped), 128, scope, digest)
    with pytest.raises(encoding.StateCorruptError, match=rf"key group {g} of checkpoint"):
        load_group(unsigned[:-1] + bytes((unsigned[-1] ^ 1,)), 128, scope, digest)
    with pytest.raises(encoding.StateCorruptError, match=rf"key group {g} .*corrupt"):
        load_group(b"PWSU" + unsigned[4:], 128, scope, digest)  # a bit of the magic
    windows_blob = plain[5]
    marker = tmp_path / "ran"
    forged_plain = (*plain[:4], [("k", "k", None, pickle.dumps(Boom(marker)), None, 1, None)])
    payload = pickle.dumps((*forged_plain, windows_blob, *plain[6:]), protocol=5)
    header = encoding.MAGIC + bytes((encoding.FORMAT, 0))
    forged = header + encoding._tag(None, scope, header, payload) + payload
    _, entries, _ = load_group(forged, 128, scope, digest)  # the group: plain data
    with pytest.raises(encoding.UntrustedStateError, match=rf"key group {g}.*a pickle"):
        decode_entry(entries["k"][2], scope)  # the key's state: a pickle, refused
    forged_inline = pickle.dumps(
        (*plain[:4], [("k", Boom(marker))], windows_blob, *plain[6:]), protocol=5
    )
    forged = header + encoding._tag(None, scope, header, forged_inline) + forged_inline
    with pytest.raises(encoding.UntrustedStateError, match=rf"key group {g}.*pathlib"):
        load_group(forged, 128, scope, digest)
    assert not marker.exists()
    assert sorted(map(tuple, spark.read.parquet(str(res)).collect())) == rows
