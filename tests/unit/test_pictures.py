"""The documentation's pictures: ``docs/make_pictures.py`` draws every one of them (here into a
temporary folder), each is checked in under ``docs/img/`` and shown by a page of the site (the
strict site build, ``test_docs_site.py``, then checks the image links)."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_pictures", DOCS / "make_pictures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_script_draws_every_picture(tmp_path: Path) -> None:
    script = _script()
    assert script.main([str(tmp_path)]) == 0
    drawn = sorted(p.name for p in tmp_path.iterdir())
    assert drawn == sorted(script.PICTURES)
    assert len(drawn) == 7
    for name in drawn:
        width, height = _png_size((tmp_path / name).read_bytes())
        assert width >= 800 and height >= 400, name
        assert (tmp_path / name).stat().st_size > 20_000, name  # more than an empty frame


def test_every_picture_is_checked_in_and_shown() -> None:
    pages = "\n".join(p.read_text() for p in DOCS.rglob("*.md"))
    for name in _script().PICTURES:
        assert (DOCS / "img" / name).is_file(), f"docs/img/{name}: run ./dev pictures"
        assert f"](img/{name})" in pages, f"no page shows img/{name}"
    checked_in = {p.name for p in (DOCS / "img").glob("*.png")}
    assert checked_in == set(_script().PICTURES)  # none left over
