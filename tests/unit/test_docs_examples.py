"""The examples in the documentation run as written: every ``>>>`` example of every page
under ``docs/`` is a doctest (the window operator in memory, no Spark)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if ">>> " in p.read_text())


def test_the_guide_has_runnable_examples() -> None:
    names = {p.relative_to(DOCS).as_posix() for p in PAGES}
    expected = {
        "guide/assigners.md",
        "guide/functions.md",
        "guide/concepts.md",
        "guide/late-data.md",
        "guide/testing.md",
        "triggers.md",
        "evictors.md",
    }
    assert expected <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_examples_run(page: Path) -> None:
    result = doctest.testfile(
        str(page),
        module_relative=False,
        optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS,
        raise_on_error=False,
        verbose=False,
    )
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} example(s) of {page.name} failed (see above)"
