"""Transcript tests (Beam ``trigger_transcripts.yaml``): load specs, run them on executors.

A spec is one YAML document::

    name: tumbling_count_purging_cleanup
    assigner: TumblingEventTimeWindows(size=ms(10))
    trigger: PurgingTrigger(CountTrigger(max_count=2))   # optional
    allowed_lateness: ms(5)                              # optional, default 0
    function: collect                                    # sum | count | collect | min
    late_output: true                                    # optional: late side output
    order_agnostic: true                                 # optional: replay inputs reordered
    broken_on: [spark]                                   # optional: executors known to fail
    error: "no actual output matches"                    # optional: a negative spec
    transcript:
      - input: [1, 2, 3]              # bare ints: ts = value = the int, key "k"
      - input: [{ts: 4, key: a, value: 7}]
      - expect:                       # partial match; exactly this many outputs
          - {window: {start: 0, end: 10}, values: [1, 2], key: k}
      - watermark: 20                 # or "max"
      - processing_time: 1000
      - late: [4, {ts: 5, key: a}]    # the late side output since the last check
      - state: {timers: 0, entries: 0}

Rules (Beam's, plus its missing state check):

* Before every action (``input``, ``watermark``, ``processing_time``) and at the end, all
  outputs and late elements produced so far must have been claimed by ``expect``/``late``.
* ``expect`` and ``late`` match as multisets: each expected entry claims a distinct actual
  record whose given fields are equal (fields left out are not compared).
* A spec with ``error:`` must fail, with a message containing that text: these negative specs
  prove the runner catches mistakes.

``assigner``, ``trigger``, ``evictor`` and ``allowed_lateness`` are Python-like expressions,
parsed with :func:`ast.parse` and evaluated by walking the tree: only calls, constants,
keywords, names from :data:`REGISTRY` and unary minus are allowed, never ``eval``.

>>> parse_expression("TumblingEventTimeWindows(size=ms(10), offset=-2)")
TumblingEventTimeWindows(size=10, offset=-2)
>>> try:
...     parse_expression("__import__('os').system('true')")
... except SpecError as exc:
...     print(exc)
only calls of plain names are allowed, got "__import__('os').system"
"""

from __future__ import annotations

import ast
import inspect
import os
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

import yaml

from windowing import assigners, evictors, triggers
from windowing.functions import Aggregate, AggregateFunction, Process, ProcessWindowFunction, Reduce
from windowing.records import OutputTag
from windowing.testing import WindowOperatorHarness
from windowing.time import MAX_TIMESTAMP, MIN_TIMESTAMP
from windowing.windows import GlobalWindow

__all__ = [
    "EXECUTORS",
    "REGISTRY",
    "Element",
    "Executor",
    "ExecutorRun",
    "InMemoryExecutor",
    "LateRecord",
    "Output",
    "SpecError",
    "TranscriptConfig",
    "TranscriptMismatchError",
    "load_specs",
    "parse_expression",
    "run_spec",
]

TRANSCRIPT_DIR = Path(__file__).parent
DEFAULT_KEY = "k"
LATE_TAG = OutputTag("late-data")


class SpecError(ValueError):
    """The spec itself is malformed (unknown key, disallowed expression, bad step)."""


class TranscriptMismatchError(AssertionError):
    """The executor's behaviour differs from the transcript."""


# ---------------------------------------------------------------------------- expressions
def ms(n: int) -> timedelta:
    """Transcript helper: ``n`` milliseconds."""
    return timedelta(milliseconds=n)


def _registry() -> dict[str, Any]:
    names: dict[str, Any] = {"ms": ms, "MAX_TIMESTAMP": MAX_TIMESTAMP}
    for module in (assigners, triggers, evictors):
        for name in module.__all__:
            names[name] = getattr(module, name)
    return names


#: Every name an expression may use.
REGISTRY: dict[str, Any] = _registry()


def parse_expression(text: str) -> Any:
    """Evaluate a transcript expression such as ``PurgingTrigger(CountTrigger(max_count=2))``."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        msg = f"cannot parse expression {text!r}: {exc.msg}"
        raise SpecError(msg) from None
    return _evaluate(tree.body, text)


def _evaluate(node: ast.AST, text: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = _evaluate(node.operand, text)
        if isinstance(operand, bool) or not isinstance(operand, int | float | timedelta):
            msg = f"unary minus needs a number or ms(...), got {operand!r} in {text!r}"
            raise SpecError(msg)
        return -operand
    if isinstance(node, ast.Name):
        if node.id not in REGISTRY:
            msg = f"unknown name {node.id!r} in {text!r}; known: {sorted(REGISTRY)}"
            raise SpecError(msg)
        return REGISTRY[node.id]
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            msg = f"only calls of plain names are allowed, got {ast.unparse(node.func)!r}"
            raise SpecError(msg)
        func = _evaluate(node.func, text)
        if not callable(func):
            msg = f"{node.func.id} is not callable in {text!r}"
            raise SpecError(msg)
        args = [_evaluate(a, text) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                msg = f"**kwargs are not allowed in {text!r}"
                raise SpecError(msg)
            kwargs[kw.arg] = _evaluate(kw.value, text)
        return func(*args, **kwargs)
    msg = f"{type(node).__name__} is not allowed in transcript expressions: {text!r}"
    raise SpecError(msg)


def _duration(value: Any, what: str) -> Any:
    if isinstance(value, str):
        return parse_expression(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    msg = f"{what} must be an int of milliseconds or an expression such as ms(5), got {value!r}"
    raise SpecError(msg)


# ---------------------------------------------------------------------------- functions
class _Count(AggregateFunction[Any, int, int]):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, a: int, b: int) -> int:
        return a + b


class _Collect(ProcessWindowFunction[Any, list[Any], Any, Any]):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[list[Any]]:
        return [sorted(elements)]


#: The window functions a spec may name, each a factory of a fresh function spec.
FUNCTIONS: dict[str, Callable[[], Any]] = {
    "sum": lambda: Reduce(lambda a, b: a + b),
    "min": lambda: Reduce(min),
    "count": lambda: Aggregate(_Count()),
    "collect": lambda: Process(_Collect()),
}


# ---------------------------------------------------------------------------- executors
@dataclass(frozen=True)
class Element:
    """One input element."""

    ts: int | None
    key: Any
    value: Any


@dataclass(frozen=True)
class Output:
    """One window result, normalised across executors."""

    key: Any
    window: Any  # TimeWindow or GlobalWindow
    value: Any
    timestamp: int


@dataclass(frozen=True)
class LateRecord:
    """One element of the late side output, normalised across executors."""

    key: Any
    ts: int | None
    value: Any


@dataclass(frozen=True)
class TranscriptConfig:
    """The operator configuration of a spec, as an executor needs it."""

    assigner: Any
    function: str
    trigger: Any = None
    evictor: Any = None
    allowed_lateness: Any = 0
    late_output: bool = False

    def make_function(self) -> Any:
        return FUNCTIONS[self.function]()


class ExecutorRun(Protocol):
    """One operator instance driven through one transcript."""

    def add_elements(self, elements: Sequence[Element]) -> None:
        """Process ``elements`` (one bundle), in order."""

    def advance_watermark(self, watermark: int) -> None: ...

    def advance_processing_time(self, time: int) -> None: ...

    def take_outputs(self) -> list[Output]:
        """Window results produced since the last call."""

    def take_late(self) -> list[LateRecord]:
        """Late side-output elements produced since the last call."""

    def state_counts(self) -> dict[str, int]:
        """Live state: ``timers`` (event + processing time), ``event_timers``,
        ``processing_timers``, ``entries`` and ``keys``."""


class Executor(Protocol):
    """Runs transcripts: the in-memory operator now, the Spark runtime later."""

    name: str

    def open(self, config: TranscriptConfig) -> ExecutorRun: ...


class _HarnessRun:
    def __init__(self, config: TranscriptConfig) -> None:
        self.harness = WindowOperatorHarness(
            config.assigner,
            config.make_function(),
            trigger=config.trigger,
            evictor=config.evictor,
            allowed_lateness=config.allowed_lateness,
            late_output_tag=LATE_TAG if config.late_output else None,
        )

    def add_elements(self, elements: Sequence[Element]) -> None:
        # A bundle of one goes through process_element, larger ones through the batch entry
        # point (the operator's fast path, where it has one): the re-bundled replays of
        # order-agnostic specs compare the two.
        if len(elements) == 1:
            e = elements[0]
            self.harness.process_element(e.value, e.ts, e.key)
        else:
            self.harness.process_elements([(e.value, e.ts, e.key) for e in elements])

    def advance_watermark(self, watermark: int) -> None:
        self.harness.process_watermark(watermark)

    def advance_processing_time(self, time: int) -> None:
        self.harness.set_processing_time(time)

    def take_outputs(self) -> list[Output]:
        return [
            Output(r.key, r.window, r.value, r.timestamp) for r in self.harness.extract_output()
        ]

    def take_late(self) -> list[LateRecord]:
        return [
            LateRecord(e.key, e.timestamp, e.value) for e in self.harness.extract_late_elements()
        ]

    def state_counts(self) -> dict[str, int]:
        h = self.harness
        evt, proc = h.num_event_time_timers(), h.num_processing_time_timers()
        return {
            "timers": evt + proc,
            "event_timers": evt,
            "processing_timers": proc,
            "entries": h.num_state_entries(),
            "keys": h.num_keys(),
        }


class InMemoryExecutor:
    """The pure-Python operator through :class:`~windowing.testing.WindowOperatorHarness`."""

    name = "memory"

    def open(self, config: TranscriptConfig) -> ExecutorRun:
        return _HarnessRun(config)


#: Executor name -> executor. A Spark executor is added here and parametrized with
#: ``pytest.mark.spark`` in ``test_transcripts.py``.
EXECUTORS: dict[str, Executor] = {"memory": InMemoryExecutor()}


# ---------------------------------------------------------------------------- specs
_SPEC_KEYS = {
    "name",
    "description",
    "assigner",
    "trigger",
    "evictor",
    "allowed_lateness",
    "function",
    "late_output",
    "order_agnostic",
    "broken_on",
    "error",
    "transcript",
}
_REQUIRED_KEYS = {"name", "assigner", "function", "transcript"}
_ACTIONS = {"input", "watermark", "processing_time"}
_CHECKS = {"expect", "late", "state"}
_OUTPUT_FIELDS = {"window", "key", "value", "values", "timestamp"}
_LATE_FIELDS = {"ts", "key", "value"}
_STATE_FIELDS = {"timers", "event_timers", "processing_timers", "entries", "keys"}


def load_specs(directory: Path = TRANSCRIPT_DIR) -> list[dict[str, Any]]:
    """Every spec of every ``*.yaml`` file in ``directory`` (multi-document YAML)."""
    specs: list[dict[str, Any]] = []
    seen: dict[str, Path] = {}
    for path in sorted(directory.glob("*.yaml")):
        with path.open(encoding="utf-8") as f:
            for doc in yaml.safe_load_all(f):
                if doc is None:
                    continue
                _validate_spec(doc, path)
                name = doc["name"]
                if name in seen:
                    msg = f"duplicate spec name {name!r} in {path.name} and {seen[name].name}"
                    raise SpecError(msg)
                seen[name] = path
                specs.append({**doc, "_file": path.name})
    return specs


def _validate_spec(doc: Any, path: Path) -> None:
    if not isinstance(doc, dict):
        msg = f"{path.name}: a spec must be a mapping, got {doc!r}"
        raise SpecError(msg)
    unknown = set(doc) - _SPEC_KEYS
    missing = _REQUIRED_KEYS - set(doc)
    if unknown or missing:
        msg = f"{path.name}: spec {doc.get('name')!r}: unknown keys {unknown}, missing {missing}"
        raise SpecError(msg)
    if not isinstance(doc["transcript"], list) or not doc["transcript"]:
        msg = f"{path.name}: spec {doc['name']!r}: transcript must be a non-empty list"
        raise SpecError(msg)


def build_config(spec: dict[str, Any]) -> TranscriptConfig:
    """Parse the configuration part of a spec."""
    function = spec["function"]
    if function not in FUNCTIONS:
        msg = f"function must be one of {sorted(FUNCTIONS)}, got {function!r}"
        raise SpecError(msg)
    trigger = spec.get("trigger")
    evictor = spec.get("evictor")
    return TranscriptConfig(
        assigner=parse_expression(spec["assigner"]),
        function=function,
        trigger=None if trigger is None else parse_expression(trigger),
        evictor=None if evictor is None else parse_expression(evictor),
        allowed_lateness=_duration(spec.get("allowed_lateness", 0), "allowed_lateness"),
        late_output=bool(spec.get("late_output", False)),
    )


def concrete_evictors() -> list[str]:
    """Evictor classes an ``evictor:`` line can name (the package may only hold the ABC)."""
    return [
        name
        for name in evictors.__all__
        if inspect.isclass(getattr(evictors, name))
        and issubclass(getattr(evictors, name), evictors.Evictor)
        and not inspect.isabstract(getattr(evictors, name))
    ]


def _element(item: Any) -> Element:
    if isinstance(item, int) and not isinstance(item, bool):
        return Element(item, DEFAULT_KEY, item)
    if isinstance(item, dict) and set(item) <= {"ts", "key", "value"}:
        ts = item.get("ts")
        return Element(ts, item.get("key", DEFAULT_KEY), item.get("value", ts))
    msg = f"an input element is an int timestamp or {{ts, key, value}}, got {item!r}"
    raise SpecError(msg)


def _time(value: Any, what: str) -> int:
    if value in ("max", "MAX"):
        return MAX_TIMESTAMP
    if value in ("min", "MIN"):
        return MIN_TIMESTAMP
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    msg = f"{what} must be an int or 'max', got {value!r}"
    raise SpecError(msg)


# ---------------------------------------------------------------------------- matching
def _window_matches(expected: Any, actual: Any) -> bool:
    if expected == "global":
        return isinstance(actual, GlobalWindow)
    if isinstance(expected, dict) and set(expected) <= {"start", "end"}:
        return all(getattr(actual, f, None) == v for f, v in expected.items())
    msg = f"window must be 'global' or {{start, end}}, got {expected!r}"
    raise SpecError(msg)


def _output_matches(expected: dict[str, Any], actual: Output) -> bool:
    for name, want in expected.items():
        if name == "window":
            if not _window_matches(want, actual.window):
                return False
        elif name == "values":  # the collected elements, in any order
            if not isinstance(actual.value, list) or sorted(actual.value) != sorted(want):
                return False
        elif getattr(actual, name) != want:
            return False
    return True


def _late_matches(expected: dict[str, Any], actual: LateRecord) -> bool:
    return all(getattr(actual, name) == want for name, want in expected.items())


def _expected_entries(raw: Any, fields: set[str], what: str, bare: str) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        msg = f"{what} must be a list, got {raw!r}"
        raise SpecError(msg)
    entries = []
    for item in raw:
        if isinstance(item, int) and not isinstance(item, bool):
            item = {bare: item}
        if not isinstance(item, dict) or not set(item) <= fields:
            msg = f"{what} entries are mappings with fields from {sorted(fields)}, got {item!r}"
            raise SpecError(msg)
        entries.append(item)
    return entries


def _claim(
    expected: list[dict[str, Any]],
    actual: list[Any],
    matches: Callable[[dict[str, Any], Any], bool],
) -> list[int] | None:
    """Assign each expected entry a distinct actual record (backtracking); None if impossible."""
    used = [False] * len(actual)
    chosen: list[int] = []

    def search(i: int) -> bool:
        if i == len(expected):
            return True
        for j, record in enumerate(actual):
            if not used[j] and matches(expected[i], record):
                used[j] = True
                chosen.append(j)
                if search(i + 1):
                    return True
                used[j] = False
                chosen.pop()
        return False

    return chosen if search(0) else None


def _check_records(
    expected: list[dict[str, Any]],
    actual: list[Any],
    matches: Callable[[dict[str, Any], Any], bool],
    what: str,
) -> None:
    if len(expected) != len(actual) or _claim(expected, actual, matches) is None:
        lines = "\n".join(f"    {a}" for a in actual) or "    (nothing)"
        want = "\n".join(f"    {e}" for e in expected) or "    (nothing)"
        msg = (
            f"{what}: no actual output matches the expectation one-to-one\n"
            f"  expected ({len(expected)}):\n{want}\n  actual ({len(actual)}):\n{lines}"
        )
        raise TranscriptMismatchError(msg)


# ---------------------------------------------------------------------------- running
@dataclass
class Variant:
    """How to replay the input steps: as written, reversed, shuffled, or re-bundled."""

    name: str
    reorder: Callable[[list[Element]], list[Element]] = lambda xs: xs
    bundle_size: int | None = None


def variants(spec: dict[str, Any], seed: int) -> list[Variant]:
    """The replays of a spec; order-agnostic specs get reversed, shuffled and re-bundled
    inputs (Beam groupings, Kafka's logged shuffle seed)."""
    result = [Variant("as written")]
    if spec.get("order_agnostic"):
        rng = random.Random(seed)

        def shuffled(xs: list[Element]) -> list[Element]:
            ys = list(xs)
            rng.shuffle(ys)
            return ys

        result += [
            Variant("reversed", lambda xs: xs[::-1]),
            Variant(f"shuffled (seed {seed})", shuffled),
            Variant("bundles of 1", bundle_size=1),
            Variant(f"shuffled (seed {seed}) in bundles of 2", shuffled, bundle_size=2),
        ]
    return result


def shuffle_seed() -> int:
    """The shuffle seed: ``TRANSCRIPT_SEED`` from the environment, or a fresh random one."""
    env = os.environ.get("TRANSCRIPT_SEED")
    return int(env) if env else random.SystemRandom().randrange(2**32)


@dataclass
class _Pending:
    outputs: list[Output] = field(default_factory=list)
    late: list[LateRecord] = field(default_factory=list)


def run_spec(spec: dict[str, Any], executor: Executor, seed: int | None = None) -> None:
    """Run every variant of ``spec`` on ``executor``; raise on the first mismatch.

    A spec with ``error:`` must instead fail with that text in the message.
    """
    seed = shuffle_seed() if seed is None else seed
    expected_error = spec.get("error")
    try:
        for variant in variants(spec, seed):
            try:
                _run_variant(spec, executor, variant)
            except TranscriptMismatchError as exc:
                msg = f"[{executor.name}, {variant.name}] {exc}\nReproduce with seed: {seed}"
                raise TranscriptMismatchError(msg) from None
    except Exception as exc:
        if expected_error is None or expected_error not in str(exc):
            raise
        return
    if expected_error is not None:
        msg = f"negative spec {spec['name']!r} passed, but should fail with {expected_error!r}"
        raise TranscriptMismatchError(msg)


def _run_variant(spec: dict[str, Any], executor: Executor, variant: Variant) -> None:
    run = executor.open(build_config(spec))
    pending = _Pending()

    def collect() -> None:
        pending.outputs += run.take_outputs()
        pending.late += run.take_late()

    def require_claimed(before: str) -> None:
        collect()
        if pending.outputs or pending.late:
            unclaimed = [*pending.outputs, *pending.late]
            lines = "\n".join(f"    {r}" for r in unclaimed)
            msg = f"unexpected output before {before} (add an expect/late step):\n{lines}"
            raise TranscriptMismatchError(msg)

    for index, step in enumerate(spec["transcript"]):
        where = f"step {index + 1} {step!r}"
        if not isinstance(step, dict) or len(step) != 1:
            msg = f"{where}: a step is a mapping with exactly one key"
            raise SpecError(msg)
        ((kind, arg),) = step.items()
        if kind in _ACTIONS:
            require_claimed(where)
        if kind == "input":
            if not isinstance(arg, list):
                msg = f"{where}: input must be a list"
                raise SpecError(msg)
            elements = variant.reorder([_element(item) for item in arg])
            for bundle in _bundles(elements, variant.bundle_size):
                run.add_elements(bundle)
        elif kind == "watermark":
            run.advance_watermark(_time(arg, "watermark"))
        elif kind == "processing_time":
            run.advance_processing_time(_time(arg, "processing_time"))
        elif kind == "expect":
            collect()
            entries = _expected_entries(arg, _OUTPUT_FIELDS, "expect", "value")
            _check_records(entries, pending.outputs, _output_matches, where)
            pending.outputs = []
        elif kind == "late":
            collect()
            entries = _expected_entries(arg, _LATE_FIELDS, "late", "ts")
            _check_records(entries, pending.late, _late_matches, where)
            pending.late = []
        elif kind == "state":
            if not isinstance(arg, dict) or not set(arg) <= _STATE_FIELDS:
                msg = f"{where}: state fields are {sorted(_STATE_FIELDS)}"
                raise SpecError(msg)
            counts = run.state_counts()
            actual = {name: counts[name] for name in arg}
            if actual != arg:
                msg = f"{where}: state mismatch: expected {arg}, actual {actual}"
                raise TranscriptMismatchError(msg)
        else:
            msg = f"{where}: unknown step {kind!r}; use one of {sorted(_ACTIONS | _CHECKS)}"
            raise SpecError(msg)
    require_claimed("the end of the transcript")


def _bundles(elements: list[Element], size: int | None) -> Iterator[list[Element]]:
    if size is None:
        yield elements
        return
    for i in range(0, len(elements), size):
        yield elements[i : i + size]
