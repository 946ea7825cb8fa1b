"""A job's definition as plain data, and what changed between two: what a streaming
checkpoint records about the job that wrote it, so that a restart with another job fails
before it mixes two jobs' state (``docs/scale-and-failure.md``, "The checkpoint knows its
job").

A definition is a mapping of named parts to JSON values (:func:`describe`). Some parts shape
the state the checkpoint holds (:data:`STATE_PARTS`: the window assigner, trigger, evictor,
the function's kind, the key and input columns, ...): a change of one of them is *breaking*
(the state cannot continue with the new job). The others (the function's class, the output
columns, side outputs, the error policy, ...) are *allowed*: listed, and the query goes on.

Examples
--------
>>> from windowing.assigners import TumblingEventTimeWindows
>>> old = JobDefinition({"assigner": describe(TumblingEventTimeWindows(1000))})
>>> new = JobDefinition({"assigner": describe(TumblingEventTimeWindows(2000))})
>>> (change,) = new.changes_from(old)
>>> print(change)  # doctest: +ELLIPSIS
assigner: TumblingEventTimeWindows(size=1000, ...) -> TumblingEventTimeWindows(size=2000, ...)
>>> change.breaking
True
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["STATE_PARTS", "Change", "JobDefinition", "describe", "same_description"]

#: The parts of a definition whose change the state cannot continue from.
STATE_PARTS = (
    "assigner",
    "trigger",
    "evictor",
    "function_kind",
    "aggregates",
    "keys",
    "input_rows",
    "allowed_lateness",
    "max_parallelism",
    "time_mode",
    "processing_time",
    "idle_timeout",
    "state_shape",
)

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_DEPTH = 8


def describe(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON data that names its class and parameters: a dataclass or plain
    object as ``{"class": name, field: value, ...}`` (its public attributes), a function or
    class by its qualified name, an enum by its name, containers element by element.

    Examples
    --------
    >>> from windowing.triggers import CountTrigger, PurgingTrigger
    >>> describe(PurgingTrigger(CountTrigger(3)))
    {'class': 'PurgingTrigger', 'trigger': {'class': 'CountTrigger', 'max_count': 3}}
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if depth > _DEPTH:
        return _name(type(value))
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, type) or (callable(value) and hasattr(value, "__qualname__")):
        return {"function": _name(value)}
    if isinstance(value, list | tuple):
        return [describe(v, depth + 1) for v in value]
    if isinstance(value, frozenset | set):
        return sorted((describe(v, depth + 1) for v in value), key=repr)
    if isinstance(value, Mapping):
        return {str(k): describe(v, depth + 1) for k, v in value.items()}
    if dataclasses.is_dataclass(value):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    elif hasattr(value, "__dict__"):
        fields = {k: v for k, v in vars(value).items() if not k.startswith("_")}
    else:
        return _ADDRESS.sub("", repr(value))
    return {"class": type(value).__name__} | {
        k: describe(v, depth + 1) for k, v in fields.items() if not k.startswith("_")
    }


def _name(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or "?"
    return f"{module}.{getattr(obj, '__qualname__', type(obj).__name__)}"


def _text(value: Any) -> str:
    """A described value in a line: ``Class(field=value, ...)``."""
    if isinstance(value, dict) and "class" in value:
        args = ", ".join(f"{k}={_text(v)}" for k, v in value.items() if k != "class")
        return f"{value['class']}({args})"
    if isinstance(value, dict) and set(value) == {"function"}:
        return str(value["function"])
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    return json.dumps(value)


@dataclass(frozen=True)
class Change:
    """One part of a job that differs from the checkpoint's: its name, the checkpoint's
    value and this job's (``None``: absent), and whether the state cannot continue."""

    part: str
    before: Any
    after: Any
    breaking: bool

    def __str__(self) -> str:
        return f"{self.part}: {_text(self.before)} -> {_text(self.after)}"


@dataclass(frozen=True)
class JobDefinition:
    """A streaming job's definition: named parts as JSON data (:func:`describe`).

    Example::

        record = JobDefinition.from_json(text)
        breaking = [c for c in definition.changes_from(record) if c.breaking]
    """

    parts: Mapping[str, Any]

    @property
    def digest(self) -> str:
        """A short hash of the parts that shape the state (:data:`STATE_PARTS`): equal for
        two jobs whose state is interchangeable."""
        shaping = {k: self.parts.get(k) for k in STATE_PARTS}
        text = json.dumps(shaping, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def changes_from(self, earlier: JobDefinition) -> list[Change]:
        """What changed since ``earlier`` (the checkpoint's), state-shaping parts first.

        Parts are compared as JSON (a ``NaN`` parameter equals itself), and a described
        object's parameter that only one side has is not a change (a parameter a newer
        version of a class added, or one it dropped)."""
        names = sorted(set(self.parts) | set(earlier.parts), key=_order)
        return [
            Change(name, earlier.parts.get(name), self.parts.get(name), name in STATE_PARTS)
            for name in names
            if not same_description(earlier.parts.get(name), self.parts.get(name))
        ]

    def to_json(self) -> str:
        return json.dumps(dict(self.parts), indent=1)  # the parts in their order

    @classmethod
    def from_json(cls, text: str) -> JobDefinition:
        parts = json.loads(text)
        if not isinstance(parts, dict):
            msg = f"a job definition is a JSON object, got {type(parts).__name__}"
            raise ValueError(msg)
        return cls(parts)


def same_description(a: Any, b: Any) -> bool:
    """Whether two described values are the same (see :meth:`JobDefinition.changes_from`)."""
    if isinstance(a, dict) and isinstance(b, dict) and "class" in a and "class" in b:
        common = set(a) & set(b)
        return all(same_description(a[k], b[k]) for k in common)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_description(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(same_description(a[k], b[k]) for k in a)
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _order(name: str) -> tuple[int, int, str]:
    shaping = name in STATE_PARTS
    return (0 if shaping else 1, STATE_PARTS.index(name) if shaping else 0, name)
