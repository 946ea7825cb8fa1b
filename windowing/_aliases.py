"""One module object per file: in a source checkout the model packages are importable both as
``windowing.assigners`` (the installed name) and as the top-level ``assigners`` of the
repository, and two names would make two modules of one file (two ``TumblingEventTimeWindows``
classes, which ``isinstance`` tells apart). Each model package's ``__init__`` calls
:func:`alias` when it is imported by its top-level name: the name then resolves to the
``windowing`` package, and its submodules to ``windowing``'s."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

__all__ = ["MODEL_PACKAGES", "alias"]

#: The model packages linked into ``windowing`` from the top of the repository.
MODEL_PACKAGES = ("assigners", "triggers", "evictors", "functions")


class _Same(importlib.abc.Loader):
    """Loads a top-level name as the module of its ``windowing`` name (already imported)."""

    def __init__(self, real: str) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.real)

    def exec_module(self, module: ModuleType) -> None:
        pass  # the real module is executed under its own name


class _Finder(importlib.abc.MetaPathFinder):
    """Finds ``assigners.X`` (a model package's submodule by its top-level name) as
    ``windowing.assigners.X``."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.partition(".")[0]
        if top not in MODEL_PACKAGES or top not in sys.modules:
            return None
        return importlib.util.spec_from_loader(fullname, _Same(f"windowing.{fullname}"))


def alias(name: str) -> None:
    """Make the top-level package ``name`` (one of :data:`MODEL_PACKAGES`) the module
    ``windowing.<name>``, and its submodules ``windowing``'s."""
    sys.modules[name] = importlib.import_module(f"windowing.{name}")
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
