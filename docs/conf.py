"""Sphinx configuration of the documentation site (``./dev docs``; docs/design.md,
"Documentation toolchain").

The pages are Markdown (MyST); the API reference pages under ``reference/`` document the
package with autodoc and numpydoc from its docstrings. ``./dev docs`` builds with ``-W
--keep-going`` and ``nitpicky``: a broken link, a page outside the table of contents or a
cross-reference that resolves to nothing fails the build.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import re
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from windowing import __version__  # noqa: E402

project = "pyspark-windowing"
author = "pyspark-windowing contributors"
copyright = "pyspark-windowing contributors"
version = release = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "numpydoc",
    "sphinx_copybutton",
]

root_doc = "index"
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
# the script that draws img/*.png and this file are not pages (only .md files are read)
exclude_patterns = ["_build"]

# Warnings are errors (-W): every cross-reference has to resolve. A name the reference
# documents is a link; a name that imports but is not documented (a module's internals,
# PySpark's or the standard library's objects) is code (see resolve_by_import below); any
# other name fails the build. No intersphinx: the build runs without network (CI), where an
# inventory that cannot be fetched is a warning.
nitpicky = True

# MyST: the pages' links to headings (page.md#a-heading) use GitHub's anchors.
myst_heading_anchors = 4

# autodoc: public members with a docstring, in source order, type hints in the signature.
autodoc_default_options = {
    "members": True,
    "member-order": "bysource",
}
autodoc_typehints = "signature"
autodoc_class_signature = "mixed"
autodoc_preserve_defaults = True

# numpydoc: the docstrings' sections; member tables are left to autodoc.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

html_theme = "pydata_sphinx_theme"
html_title = "pyspark-windowing"
html_theme_options = {
    "github_url": "https://github.com/pyspark-windowing/pyspark-windowing",
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_show_sourcelink = False


def _lookup(path: str) -> tuple[bool, Any]:
    """Whether ``path`` names an object (a module, or an attribute of one), and the object.

    The checkout's folders linked into ``windowing/`` (``triggers/``, ...) import as top-level
    packages from a source checkout only: a name through them names nothing."""
    parts = path.split(".")
    if parts[0] != "windowing" and (ROOT / parts[0] / "__init__.py").is_file():
        return False, None
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except Exception:
            continue
        for attr in parts[i:]:
            if hasattr(obj, attr):
                obj = getattr(obj, attr)
            elif attr in getattr(obj, "__annotations__", {}):  # a field without a default
                obj = None
            else:
                return False, None
        return True, obj
    return False, None


@cache
def _imported_names(modname: str) -> dict[str, str]:
    """The names a module imports, type-checking-only imports included: name -> full path."""
    found, module = _lookup(modname)
    if not found or not isinstance(module, ModuleType):
        return {}
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return {}
    package = modname if hasattr(module, "__path__") else modname.rpartition(".")[0]
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
    return names


def _candidates(target: str, modname: str | None, classname: str | None) -> list[str]:
    """The full names ``target`` may mean where it is written, as Python would look it up."""
    out = []
    modules = [modname] if modname else []
    if modname and classname:
        out.append(f"{modname}.{classname}.{target}")
        found, owner = _lookup(f"{modname}.{classname}")
        if found and inspect.isclass(owner):  # a class documented where it is re-exported
            out.append(f"{owner.__module__}.{owner.__qualname__}.{target}")
        if found and isinstance(getattr(owner, "__module__", None), str):
            modules.append(owner.__module__)
    out += [f"{m}.{target}" for m in modules]
    out.append(target)
    head, _, rest = target.partition(".")
    for m in modules:
        origin = _imported_names(m).get(head)
        if origin:
            out.append(f"{origin}.{rest}" if rest else origin)
    return out


def resolve_by_import(
    app: Sphinx, env: BuildEnvironment, node: Any, contnode: nodes.Element
) -> nodes.Element | None:
    """Resolve a Python cross-reference the domain did not: by importing what it names.

    A name written relative to its module (``Sink``), to a class's defining module, through a
    type-checking-only import (``DataFrame``) or through a re-export (``windowing.PaneInfo``)
    links to the documented object; an object that exists but is not documented stays code;
    a name that imports nothing is left unresolved, and the build fails on it.
    """
    if node.get("refdomain") != "py":
        return None
    modname, classname = node.get("py:module"), node.get("py:class")
    if modname is None:  # a type in a signature: the signature's object is the context
        signature = node.parent
        while signature is not None and not isinstance(signature, addnodes.desc_signature):
            signature = signature.parent
        if signature is not None:
            modname = signature.get("module")
            classname = signature.get("class") or signature.get("fullname")
    domain = env.domains["py"]
    for name in _candidates(node["reftarget"], modname, classname):
        found, obj = _lookup(name)
        if not found:
            continue
        obj = getattr(obj, "fget", obj)  # a property: its getter's name
        names = [name]
        if isinstance(obj, ModuleType):
            names.append(obj.__name__)
        elif isinstance(getattr(obj, "__qualname__", None), str):
            names.append(f"{obj.__module__}.{obj.__qualname__}")
        for full in names:
            if full in domain.objects:
                return domain.resolve_xref(
                    env, node["refdoc"], app.builder, "obj", full, node, contnode
                )
        return contnode
    return None


_NUMPY_SECTION = re.compile(r"-{3,}")


_FIELD_ALIAS = re.compile(r"Alias for field number \d+")


def readable_docstrings(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """A named tuple's fields keep their name and type, without Python's generated docstring
    ("Alias for field number 0"). numpydoc leaves module docstrings alone: their sections
    (``Examples`` and a rule) become rubrics, as numpydoc renders them in other docstrings,
    not headings of the page."""
    if [_FIELD_ALIAS.fullmatch(line) is not None for line in lines if line] == [True]:
        lines.clear()
    if what != "module":
        return
    for i in range(len(lines) - 1):
        title, rule = lines[i], lines[i + 1]
        if title and title[0] != " " and _NUMPY_SECTION.fullmatch(rule) and len(rule) == len(title):
            lines[i], lines[i + 1] = f".. rubric:: {title}", ""


def readable_signatures(
    app: Sphinx,
    what: str,
    name: str,
    obj: Any,
    options: Any,
    signature: str | None,
    return_annotation: str | None,
) -> tuple[str | None, str | None] | None:
    """A protocol is not instantiated: no ``(*args, **kwargs)`` after its name. A dataclass
    field with a ``default_factory`` shows as ``= <factory>``, which is not Python and breaks
    the signature: show the factory's call (``dict()``) instead."""
    if inspect.isclass(obj) and getattr(obj, "_is_protocol", False):
        return "", return_annotation
    if not signature or "<factory>" not in signature or not dataclasses.is_dataclass(obj):
        return None
    for field in dataclasses.fields(obj):
        if field.default_factory is not dataclasses.MISSING:
            factory = getattr(field.default_factory, "__qualname__", "")
            call = f"{factory}()" if factory.isidentifier() else "..."
            signature = signature.replace("<factory>", call, 1)
    return signature, return_annotation


def setup(app: Sphinx) -> None:
    app.connect("autodoc-process-signature", readable_signatures)
    app.connect("missing-reference", resolve_by_import)
    # before numpydoc's handler (priority 500), which rewrites the docstring
    app.connect("autodoc-process-docstring", readable_docstrings, priority=400)
