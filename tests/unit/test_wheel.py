"""The built wheel installs one package, ``windowing``, that works outside the source tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import textwrap
import venv
import zipfile
from pathlib import Path

import windowing

ROOT = Path(__file__).resolve().parents[2]

_JOB = textwrap.dedent(
    """
    import importlib.util, sys
    import windowing
    from windowing import TumblingEventTimeWindows, WindowOperator
    from windowing.testing import WindowOperatorHarness

    assert windowing.__file__.startswith(sys.argv[1]), windowing.__file__
    for name in ("assigners", "triggers", "evictors", "functions"):
        assert importlib.util.find_spec(name) is None, name  # nothing generic installed
    h = WindowOperatorHarness(TumblingEventTimeWindows(10), lambda a, b: a + b)
    for ts in (1, 5, 12):
        h.process_element(1, ts, key="k")
    h.process_watermark(100)
    print(windowing.__version__, [(r.window.start, r.value) for r in h.extract_output()])
    """
)


def test_wheel_installs_one_package_that_runs_outside_the_source_tree(tmp_path: Path) -> None:
    # Built from a copy of the tree, so that no build folder (stale modules) is reused or left.
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", ".cache", "build", "*.egg-info", "__pycache__", ".*_cache", "tests"
        ),
    )
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("pyspark_windowing-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"windowing"}
    for package in ("assigners", "triggers", "evictors", "functions"):
        assert f"windowing/{package}/__init__.py" in names
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert f"Version: {windowing.__version__}\n" in text
    assert "Requires-Dist: pyspark[sql]" in text

    # A fresh environment with the wheel unpacked into its site-packages (a pure-Python
    # wheel), and the dependencies reachable from this one (without its editable install).
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    zipfile.ZipFile(wheel).extractall(site)
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    ran = subprocess.run(
        [str(python), "-c", _JOB, site],
        cwd=outside,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == f"{windowing.__version__} [(0, 2), (10, 1)]"
