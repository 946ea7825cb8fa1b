"""The documentation site builds with Sphinx as ``./dev docs`` builds it, warnings as errors: a
broken link, a page outside the table of contents, an image that is missing or a
cross-reference that resolves to nothing fails this test. The built pages show no reST markup
as text (a role or a directive that was not rendered), and the home page's code blocks are
whole."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# reST markup that, seen as text in a page, was not rendered: a role, an inline literal's
# double backquotes, a directive
RAW_MARKUP = re.compile(
    r":(?:py:)?(?:class|meth|func|attr|mod|exc|data|obj):`"
    r"|``"
    r"|^\s*\.\. [\w:-]+::",
    re.MULTILINE,
)


def _text(page: str) -> str:
    """What a reader sees of an HTML page: its text, without scripts, styles or tags."""
    page = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", "", page))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "sphinx", "-b", "html", "-E", "-W", "--keep-going", "-q"),
            *("-d", str(out / "doctrees"), str(ROOT / "docs"), str(out / "html")),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out / "html"


def test_the_site_builds_without_a_warning(site: Path) -> None:
    api = (site / "reference" / "assigners.html").read_text()
    assert 'id="windowing.assigners.TumblingEventTimeWindows"' in api  # from the docstrings
    assert (site / "failures.html").exists()
    # the script that draws the pictures is not a page
    assert not list(site.rglob("make_pictures*")) and not (site / "conf.html").exists()


def test_no_page_shows_raw_markup(site: Path) -> None:
    pages = [p for p in site.rglob("*.html") if not p.relative_to(site).parts[0].startswith("_")]
    assert len(pages) > 30
    raw = []
    for page in pages:
        text = _text(page.read_text())
        for found in RAW_MARKUP.finditer(text):
            context = text[max(0, found.start() - 60) : found.end() + 40].replace("\n", " ")
            raw.append(f"{page.relative_to(site)}: ...{context}...")
    assert not raw, "\n".join(raw)


def test_the_docstrings_cross_references_are_links(site: Path) -> None:
    # a role to a documented object links to it, from another page too
    page = (site / "reference" / "triggers.html").read_text()
    assert 'href="#windowing.triggers.PurgingTrigger"' in page
    stream = (site / "reference" / "stream.html").read_text()
    assert 'href="results.html#windowing.results.WindowingResult"' in stream


def test_the_home_pages_code_blocks_are_whole(site: Path) -> None:
    source = (ROOT / "docs" / "index.md").read_text()
    blocks = re.findall(r"^```(\w+)\n(.*?)^```$", source, flags=re.MULTILINE | re.DOTALL)
    assert blocks and blocks[1][0] == "python"  # pip install, then the example
    page = (site / "index.html").read_text()
    shown = [_text(pre) for pre in re.findall(r"<pre>(.*?)</pre>", page, flags=re.DOTALL)]
    assert len(shown) == len(blocks)
    for (_, code), text in zip(blocks, shown, strict=True):
        lines = code.strip().splitlines()
        assert text.strip().splitlines()[0] == lines[0]
        assert text.strip().splitlines()[-1] == lines[-1]  # the block is not cut
        assert text.count("\n") >= len(lines) - 1
