"""Flink's side: fetch Flink 2.3's jars, compile ``FlinkDriver.java``, run scenario batches.

The jars come from the PyPI wheel ``apache-flink-libraries`` (pure Python wheel, about 330 MB,
with ``pyflink/lib/flink-dist-*.jar``), downloaded once with ``pip download`` into
``.cache/conformance/`` at the repository root. The driver is compiled with ``javac`` on first
use and again whenever its source changes.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

from .ours import Line, Outcome
from .scenarios import Scenario

FLINK_VERSION = "2.3.0"
ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "conformance"
DRIVER_SOURCE = Path(__file__).with_name("FlinkDriver.java")
JARS = (
    f"flink-dist-{FLINK_VERSION}.jar",
    "log4j-api-",
    "log4j-core-",
    "log4j-slf4j-impl-",
    "log4j-1.2-api-",
)
# Flink logs through log4j2; its logs are not wanted here (failures come back as results).
LOG_CONFIG = "rootLogger.level = OFF\n"


class FlinkSetupError(RuntimeError):
    """The Flink jars or the Java toolchain are not usable."""


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _wheel() -> Path:
    found = sorted(CACHE.glob(f"apache_flink_libraries-{FLINK_VERSION}-*.whl"))
    if found:
        return found[0]
    _log(f"downloading apache-flink-libraries=={FLINK_VERSION} (about 330 MB) into {CACHE}")
    CACHE.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", f"apache-flink-libraries=={FLINK_VERSION}"]
    subprocess.run([*cmd, "--no-deps", "-d", str(CACHE)], check=True)
    found = sorted(CACHE.glob(f"apache_flink_libraries-{FLINK_VERSION}-*.whl"))
    if not found:
        msg = f"pip download left no apache_flink_libraries wheel in {CACHE}"
        raise FlinkSetupError(msg)
    return found[0]


def _jars() -> list[Path]:
    lib = CACHE / "lib"
    stamp = lib / ".complete"
    if not stamp.exists():
        wheel = _wheel()
        _log(f"extracting Flink jars from {wheel.name}")
        lib.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                base = name.rsplit("/", 1)[-1]
                if name.startswith("pyflink/lib/") and base.startswith(JARS):
                    with zf.open(name) as src, open(lib / base, "wb") as dst:
                        shutil.copyfileobj(src, dst)
        stamp.touch()
    jars = sorted(lib.glob("*.jar"))
    if not any(j.name.startswith("flink-dist-") for j in jars):
        msg = f"no flink-dist jar in {lib}; delete {CACHE} and retry"
        raise FlinkSetupError(msg)
    return jars


def _classpath(jars: Iterable[Path]) -> str:
    return ":".join(str(j) for j in jars)


def ensure_driver() -> list[str]:
    """The ``java`` command line that runs the compiled driver (downloading, extracting and
    compiling on first use)."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            msg = f"{tool} not found on PATH; the conformance runner needs a JDK 17+"
            raise FlinkSetupError(msg)
    jars = _jars()
    classes = CACHE / "classes"
    digest = hashlib.sha256(DRIVER_SOURCE.read_bytes()).hexdigest()[:16]
    stamp = classes / f".source-{digest}"
    if not stamp.exists():
        _log("compiling FlinkDriver.java")
        shutil.rmtree(classes, ignore_errors=True)
        classes.mkdir(parents=True)
        cmd = ["javac", "-nowarn", "-d", str(classes), "-cp", _classpath(jars)]
        subprocess.run([*cmd, str(DRIVER_SOURCE)], check=True)
        stamp.touch()
    log_config = CACHE / "log4j2.properties"
    if not log_config.exists() or log_config.read_text() != LOG_CONFIG:
        log_config.write_text(LOG_CONFIG)
    return [
        "java",
        f"-Dlog4j.configurationFile={log_config}",
        "-Dlog4j2.disable.jmx=true",
        "-XX:+UseParallelGC",
        "-cp",
        _classpath([classes, *jars]),
        "FlinkDriver",
    ]


def _invoke(
    command: list[str],
    scenarios: list[Scenario],
    batch_size: int,
    job_timeout: int,
    outcomes: dict[str, Outcome],
    progress: Callable[[int, int, float], None] | None,
) -> tuple[int, set[str]]:
    """One driver run: (exit status, ids of the scenarios it finished)."""
    finished: set[str] = set()
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        for s in scenarios:
            f.writelines(text + "\n" for text in s.driver_lines())
        path = f.name
    try:
        start = time.monotonic()
        with (
            tempfile.TemporaryFile("w+") as errors,
            subprocess.Popen(
                [*command, path, str(batch_size), str(job_timeout)],
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
            ) as proc,
        ):
            assert proc.stdout is not None
            for raw in proc.stdout:
                parts = raw.rstrip("\n").split("\t")
                if parts[0] == "#":
                    if parts[1] == "done":
                        finished.update(parts[2].split())
                    elif parts[1] == "batch" and progress is not None:
                        progress(int(parts[2]), int(parts[3]), time.monotonic() - start)
                    continue
                sid, kind, rest = parts[0], parts[1], parts[2:]
                if kind == "E":
                    outcomes[sid].error = rest[0]
                    finished.add(sid)
                else:
                    line: Line = (kind, *rest)
                    outcomes[sid].lines.append(line)
            proc.wait()
            errors.seek(0)
            stderr = errors.read()
        if proc.returncode not in (0, 3):
            msg = f"FlinkDriver exited with {proc.returncode}:\n{stderr[-4000:]}"
            raise FlinkSetupError(msg)
    finally:
        Path(path).unlink(missing_ok=True)
    return proc.returncode, finished


def run(
    scenarios: list[Scenario],
    batch_size: int,
    job_timeout: int = 300,
    progress: Callable[[int, int, float], None] | None = None,
) -> dict[str, Outcome]:
    """Run ``scenarios`` on Flink; the outcome of each, by id.

    A driver run stops at the first job that hangs (after reporting its stuck scenarios);
    the scenarios it did not finish are run again in a new driver.
    """
    command = ensure_driver()
    outcomes = {s.sid: Outcome() for s in scenarios}
    remaining = scenarios
    while remaining:
        status, finished = _invoke(command, remaining, batch_size, job_timeout, outcomes, progress)
        if status == 0:
            break
        left = [s for s in remaining if s.sid not in finished]
        if len(left) == len(remaining):
            msg = f"a Flink job did not finish within {job_timeout} s; try a larger --job-timeout"
            raise FlinkSetupError(msg)
        for s in left:
            outcomes[s.sid] = Outcome()  # outputs of the job that hung are incomplete
        remaining = left
    return outcomes
