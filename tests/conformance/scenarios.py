"""Random window scenarios: the settings and the input that both engines replay.

A :class:`Scenario` is plain data. Its settings are short specs such as ``tumble:10:-3`` or
``count:2:after``, read by both ``FlinkDriver.java`` and :mod:`tests.conformance.ours`, so that
the two sides cannot drift apart in how they understand a scenario. :func:`generate` draws one
scenario from ``(seed, index)`` alone, so any scenario can be rebuilt from its id.

Elements are ``(key, num, tag)``: ``tag`` is unique per record (``a``, ``b``, ...), so the
order-sensitive functions of both sides reveal in which order elements were combined.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

MIN_LONG = -(2**63)
MAX_LONG = 2**63 - 1

FUNCTIONS = ("reduce", "reduce_pwf", "agg", "agg_pwf", "process", "apply")
# Functions that also use the process function's context (window and global state, the
# watermark, side outputs, ``clear``); drawn only when asked for (``run.py --functions``),
# so that the scenarios of a seed stay those recorded with the default draw.
CONTEXT_FUNCTIONS = ("process_ctx", "reduce_ctx", "agg_ctx")
FUNCTION_SETS = {"default": FUNCTIONS, "ctx": CONTEXT_FUNCTIONS}
TAGS = "abcdefghijklmnopqrstuvwxyz"
MAX_RECORDS = 25


@dataclass(frozen=True)
class Record:
    """One input record, and the watermark emitted right after it (``None``: none)."""

    key: str
    num: int
    tag: str
    ts: int
    wm: int | None = None


@dataclass(frozen=True)
class Scenario:
    """The settings of one window operation and its input.

    Specs (shared with ``FlinkDriver.java``):

    * ``assigner``: ``tumble:SIZE:OFFSET``, ``slide:SIZE:SLIDE:OFFSET``, ``session:GAP``,
      ``dynsession`` (gap ``num mod 5 + 1``), ``global``, ``countwin:SIZE[:SLIDE]``;
    * ``trigger``: ``default``, ``event``, ``count:N``, ``cont:INTERVAL``, ``delta:THRESHOLD``
      (delta ``new.num - old.num``), wrapped in a purging trigger when ``purge``;
    * ``evictor``: ``none``, ``count:N:WHEN``, ``time:MS:WHEN``, ``delta:THRESHOLD:WHEN`` with
      ``WHEN`` ``before`` or ``after``;
    * ``fn``: one of :data:`FUNCTIONS` or :data:`CONTEXT_FUNCTIONS`.
    """

    sid: str
    keyed: bool
    assigner: str
    trigger: str
    purge: bool
    evictor: str
    lateness: int
    late_tag: bool
    fn: str
    records: tuple[Record, ...]

    def header(self) -> str:
        return (
            f"S {self.sid} keyed={int(self.keyed)} assigner={self.assigner} "
            f"trigger={self.trigger} purge={int(self.purge)} evictor={self.evictor} "
            f"lateness={self.lateness} late={int(self.late_tag)} fn={self.fn}"
        )

    def driver_lines(self) -> Iterator[str]:
        """The scenario in the driver's input format."""
        yield self.header()
        for r in self.records:
            wm = "-" if r.wm is None else str(r.wm)
            yield f"R {r.key} {r.num} {r.tag} {r.ts} {wm}"

    def describe(self) -> str:
        """A readable, complete description (settings, then one line per record)."""
        lines = [self.header()[2:]]
        for r in self.records:
            wm = "" if r.wm is None else f"  then watermark {_show(r.wm)}"
            lines.append(f"  {r.key} num={r.num} tag={r.tag} ts={_show(r.ts)}{wm}")
        return "\n".join(lines)

    def with_id(self, sid: str) -> Scenario:
        return dataclasses.replace(self, sid=sid)


def parse(lines: Iterable[str]) -> list[Scenario]:
    """Scenarios written by :meth:`Scenario.driver_lines` (for ``--replay``)."""
    out: list[Scenario] = []
    head: dict[str, str] = {}
    sid = ""
    records: list[Record] = []

    def flush() -> None:
        if head:
            out.append(
                Scenario(
                    sid=sid,
                    keyed=head["keyed"] == "1",
                    assigner=head["assigner"],
                    trigger=head["trigger"],
                    purge=head["purge"] == "1",
                    evictor=head["evictor"],
                    lateness=int(head["lateness"]),
                    late_tag=head["late"] == "1",
                    fn=head["fn"],
                    records=tuple(records),
                )
            )

    for line in lines:
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if parts[0] == "S":
            flush()
            sid, records = parts[1], []
            head = dict(p.split("=", 1) for p in parts[2:])
        elif parts[0] == "R" and head:
            key, num, tag, ts, wm = parts[1:6]
            records.append(Record(key, int(num), tag, int(ts), None if wm == "-" else int(wm)))
        else:
            msg = f"not a scenario line: {line!r}"
            raise ValueError(msg)
    flush()
    return out


def _show(t: int) -> str:
    """Timestamps near the ends of ``long`` as ``MIN+n`` / ``MAX-n``."""
    if t - MIN_LONG < 1_000_000:
        return f"MIN+{t - MIN_LONG}"
    if MAX_LONG - t < 1_000_000:
        return f"MAX-{MAX_LONG - t}" if t != MAX_LONG else "MAX"
    return str(t)


def scenario_id(seed: int, index: int) -> str:
    return f"{seed}:{index}"


def parse_id(sid: str) -> tuple[int, int]:
    seed, _, index = sid.partition(":")
    return int(seed), int(index)


# ---------------------------------------------------------------------------- generation


def _clamp(t: int) -> int:
    return max(MIN_LONG, min(MAX_LONG, t))


def _timestamps(rng: random.Random, n: int) -> tuple[list[int], int, int]:
    """Timestamps in a small range (negative ones included), or near an end of ``long``."""
    mode = rng.random()
    if mode < 0.07:
        lo, hi = MIN_LONG + 1, MIN_LONG + 60
    elif mode < 0.14:
        lo, hi = MAX_LONG - 60, MAX_LONG
    else:
        lo = rng.choice((-30, -10, 0))
        hi = lo + rng.choice((15, 40, 90))
    stamps: list[int] = []
    for _ in range(n):
        if stamps and rng.random() < 0.2:
            stamps.append(rng.choice(stamps))  # a duplicate
        else:
            stamps.append(rng.randint(lo, hi))
    if rng.random() < 0.3:
        stamps.sort()  # in order (ties and all)
    elif rng.random() < 0.3:
        # Mostly in order, a few swapped.
        stamps.sort()
        for _ in range(max(1, n // 5)):
            i, j = rng.randrange(n), rng.randrange(n)
            stamps[i], stamps[j] = stamps[j], stamps[i]
    return stamps, lo, hi


def _watermarks(rng: random.Random, stamps: list[int], lo: int, hi: int) -> list[int | None]:
    """The watermark after each record: bounded out-of-orderness, random, jumps, or none."""
    kind = rng.choice(("none", "bounded", "bounded", "sparse", "random", "jumps"))
    out: list[int | None] = []
    seen = MIN_LONG
    delay = rng.choice((0, 0, 1, 2, 3, 5, 10))
    for ts in stamps:
        seen = max(seen, ts)
        wm: int | None = None
        if kind == "bounded" or (kind == "sparse" and rng.random() < 0.35):
            wm = _clamp(seen - delay - 1)
        elif kind == "random" and rng.random() < 0.4:
            wm = _clamp(rng.randint(lo - 10, hi + 10))
        elif kind == "jumps" and rng.random() < 0.15:
            wm = MAX_LONG if rng.random() < 0.1 else _clamp(seen + rng.randint(0, 30))
        out.append(None if wm is None or wm == MIN_LONG else wm)
    return out


def _assigner(rng: random.Random) -> str:
    kind = rng.choices(
        ("tumble", "slide", "session", "dynsession", "global", "countwin"),
        weights=(24, 26, 14, 8, 12, 16),
    )[0]
    if kind == "tumble":
        size = rng.choice((1, 2, 3, 5, 7, 10, 20, 100))
        offset = 0 if rng.random() < 0.5 else rng.randint(-(size - 1), size - 1)
        return f"tumble:{size}:{offset}"
    if kind == "slide":
        size = rng.choice((2, 3, 4, 5, 6, 10, 12, 20))
        slide = rng.randint(1, size + size // 2)
        offset = 0 if rng.random() < 0.5 else rng.randint(-(slide - 1), slide - 1)
        return f"slide:{size}:{slide}:{offset}"
    if kind == "session":
        return f"session:{rng.randint(1, 10)}"
    if kind == "countwin":
        size = rng.randint(1, 5)
        return f"countwin:{size}" if rng.random() < 0.5 else f"countwin:{size}:{rng.randint(1, 5)}"
    return kind


def _count(rng: random.Random) -> int:
    return 0 if rng.random() < 0.03 else rng.randint(1, 4)


def _threshold(rng: random.Random) -> str:
    return rng.choice(("-1", "0", "0.5", "1", "2", "3.5", "5"))


def _trigger(rng: random.Random, assigner: str, near_max: bool) -> tuple[str, bool]:
    merging = assigner == "dynsession" or assigner.startswith("session")
    # No continuous trigger on global windows: on the final watermark it fires every interval
    # up to Long.MAX_VALUE, in Flink and here alike (an endless loop). None near
    # Long.MAX_VALUE either: Flink's next fire time ``time + interval`` overflows there and the
    # trigger fires forever (a known Flink bug; each such scenario costs a job timeout).
    cont = [] if near_max else ["cont"]
    if assigner == "global":
        # No EventTimeTrigger either: it is a Trigger<Object, TimeWindow>, Flink's API does
        # not accept it for GlobalWindow (it fails with a ClassCastException).
        choices = ["count", "count", "delta", "default"]
    elif merging:
        choices = ["default"] * 4 + ["event", "count", *cont]
    else:
        choices = ["default"] * 4 + ["event", "count", "delta", *cont]
    kind = rng.choice(choices)
    if kind == "default":
        return "default", False
    purge = rng.random() < 0.3
    if kind == "count":
        return f"count:{_count(rng)}", purge
    if kind == "cont":
        return f"cont:{0 if rng.random() < 0.01 else rng.randint(1, 10)}", purge
    if kind == "delta":
        return f"delta:{_threshold(rng)}", purge
    return kind, purge


def _evictor(rng: random.Random) -> str:
    kind = rng.choices(("none", "count", "time", "delta"), weights=(55, 15, 15, 15))[0]
    if kind == "none":
        return "none"
    when = rng.choice(("before", "after"))
    if kind == "count":
        return f"count:{_count(rng)}:{when}"
    if kind == "time":
        return f"time:{0 if rng.random() < 0.03 else rng.randint(1, 10)}:{when}"
    return f"delta:{_threshold(rng)}:{when}"


def _lateness(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.45:
        return 0
    if r < 0.7:
        return rng.randint(1, 10)
    if r < 0.85:
        return rng.randint(10, 1000)
    return rng.choice((MAX_LONG, MAX_LONG - rng.randint(1, 100), 2**62, rng.randint(2**40, 2**62)))


def _wrap(v: int) -> int:
    """``v`` as a Java ``long`` (two's complement overflow)."""
    return (v - MIN_LONG) % 2**64 + MIN_LONG


def flink_sliding_loops(ts: int, size: int, slide: int, offset: int) -> bool:
    """Whether Flink's ``SlidingEventTimeWindows.assignWindows`` runs away for ``ts``.

    Its loop ``for (start = lastStart; start > ts - size; start -= slide)`` never ends when
    ``start - slide`` wraps below ``Long.MIN_VALUE`` to a huge value before reaching
    ``ts - size`` (elements within ``slide`` of ``Long.MIN_VALUE``): it then adds windows
    until the JVM runs out of memory.
    """
    remainder = abs(_wrap(ts - offset)) % slide * (-1 if _wrap(ts - offset) < 0 else 1)
    start = _wrap(ts - (remainder + slide)) if remainder < 0 else _wrap(ts - remainder)
    bound = _wrap(ts - size)
    for _ in range(size // slide + 2):
        if start <= bound:
            return False
        start = _wrap(start - slide)
    return True


def _avoid_runaway(assigner: str, records: tuple[Record, ...]) -> tuple[Record, ...]:
    """Moves timestamps that would make Flink's sliding assigner run away (a Flink overflow
    bug that ends in an OutOfMemoryError) further from ``Long.MIN_VALUE``."""
    if not assigner.startswith("slide:"):
        return records
    size, slide, offset = (int(a) for a in assigner.split(":")[1:])
    out = []
    for r in records:
        ts = r.ts
        while flink_sliding_loops(ts, size, slide, offset):
            ts += size + slide
        out.append(r if ts == r.ts else dataclasses.replace(r, ts=ts))
    return tuple(out)


def generate(seed: int, index: int, functions: tuple[str, ...] = FUNCTIONS) -> Scenario:
    """The scenario ``index`` of ``seed`` (the same on every machine and Python version),
    its function drawn from ``functions`` (the last draw: other choices do not change the
    rest of the scenario)."""
    rng = random.Random(scenario_id(seed, index))
    keyed = rng.random() < 0.88
    keys = ("x", "y", "z")[: rng.randint(1, 3)]
    n = rng.randint(1, MAX_RECORDS)
    stamps, lo, hi = _timestamps(rng, n)
    marks = _watermarks(rng, stamps, lo, hi)
    records = tuple(
        Record(rng.choice(keys), rng.randint(-3, 9), TAGS[i], ts, wm)
        for i, (ts, wm) in enumerate(zip(stamps, marks, strict=True))
    )
    assigner = _assigner(rng)
    if assigner.startswith("countwin"):
        trigger, purge, evictor, lateness = "default", False, "none", 0
    else:
        trigger, purge = _trigger(rng, assigner, near_max=hi > MAX_LONG // 2)
        evictor = _evictor(rng)
        lateness = _lateness(rng)
    return Scenario(
        sid=scenario_id(seed, index),
        keyed=keyed,
        assigner=assigner,
        trigger=trigger,
        purge=purge,
        evictor=evictor,
        lateness=lateness,
        late_tag=rng.random() < 0.6,
        fn=rng.choice(functions),
        records=_avoid_runaway(assigner, records),
    )


# ---------------------------------------------------------------------------- shrinking


def simplifications(s: Scenario) -> Iterator[Scenario]:
    """Smaller or simpler variants of ``s``, biggest steps first (for shrinking)."""
    recs = s.records
    n = len(recs)
    step = n // 2
    while step >= 1:
        for start in range(0, n, step):
            rest = recs[:start] + recs[start + step :]
            if rest:
                yield dataclasses.replace(s, records=rest)
        step //= 2
    for i, r in enumerate(recs):
        if r.wm is not None:
            yield dataclasses.replace(s, records=_put(recs, i, dataclasses.replace(r, wm=None)))
    first_key = recs[0].key
    if any(r.key != first_key for r in recs):
        yield dataclasses.replace(
            s, records=tuple(dataclasses.replace(r, key=first_key) for r in recs)
        )
    if s.lateness:
        yield dataclasses.replace(s, lateness=0)
    if s.late_tag:
        yield dataclasses.replace(s, late_tag=False)
    if s.evictor != "none":
        yield dataclasses.replace(s, evictor="none")
    if s.purge:
        yield dataclasses.replace(s, purge=False)
    if s.trigger != "default" and s.assigner != "global":
        yield dataclasses.replace(s, trigger="default", purge=False)
    if not s.keyed:
        yield dataclasses.replace(s, keyed=True)
    simpler = ("process_ctx",) if s.fn in CONTEXT_FUNCTIONS else ("reduce", "process")
    for fn in simpler:
        if s.fn not in simpler:
            yield dataclasses.replace(s, fn=fn)
    for i, r in enumerate(recs):
        if r.num != 1:
            yield dataclasses.replace(s, records=_put(recs, i, dataclasses.replace(r, num=1)))


def _put(records: tuple[Record, ...], i: int, r: Record) -> tuple[Record, ...]:
    return (*records[:i], r, *records[i + 1 :])
