"""Differential conformance fuzzer: our window operator against Apache Flink 2.3's.

Random scenarios (keyed or non-keyed streams of ``(key, num, tag)`` records with event
timestamps and watermarks; tumbling, sliding, session, dynamic-gap session, global and count
windows; event-time, count, continuous event-time, delta and purging triggers; count, time and
delta evictors; allowed lateness; late side output; reduce, aggregate, process and apply
functions, incremental ones also with a process function) run through Flink's real
``WindowOperator`` / ``EvictingWindowOperator`` (``FlinkDriver.java``, one MiniCluster job per
batch) and through :class:`windowing.testing.WindowOperatorHarness`. Results
``(key, window, value, timestamp)`` and late elements ``(element, timestamp)`` are compared
per scenario as multisets; the functions are order-sensitive, so a different combination
order shows up as a different value. ``--functions ctx`` draws process functions that use
their context instead (window and global state, the watermark, a side output and ``clear``,
see :class:`tests.conformance.ours.ContextEmit`), whose side outputs are compared too.

Run from the repository root (the first run downloads Flink, about 330 MB, into
``.cache/conformance/``)::

    python -m tests.conformance.run --count 2000 --seed 1
    python -m tests.conformance.run --only 1:17 --only 1:42     # re-run scenarios by id
    python -m tests.conformance.run --count 500 --shrink        # minimise one per category
    python -m tests.conformance.run --replay .cache/conformance/repro/some-category.txt
    python -m tests.conformance.run --count 500 --functions ctx   # the context functions
    python -m tests.conformance.run --functions ctx --only 1:17   # ids with the same draw

(or ``./dev conformance --count 2000``). The summary counts agreements and groups the
disagreements by cause: a cause is recognised by a check that explains the difference (for
example, all event times near ``Long.MAX_VALUE``); what no check explains is
listed as "unexplained" with the kinds of its settings. ``--shrink`` reduces the first scenario
of each category to a minimal one with the same category and writes it to
``.cache/conformance/repro/`` for ``--replay``.

Pipelines that never end in Flink (Java ``long`` overflows in its timers and assigners) are
detected and reported per scenario; the generator avoids the known ones (see
:mod:`tests.conformance.scenarios`) because each costs a restart of the Flink driver.

Exit status 1 when any scenario disagrees for a reason docs/semantics.md does not document
(Flink failing where we do not counts too), 2 when Flink cannot be set up.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from . import flink, ours
from .ours import Line, Outcome
from .scenarios import (
    FUNCTION_SETS,
    MAX_LONG,
    MIN_LONG,
    Scenario,
    generate,
    parse,
    parse_id,
    simplifications,
)

REPRO_DIR = flink.CACHE / "repro"


# Groups of categories in the summary.
OTHER = "disagreements"
DOCUMENTED = "documented decisions (docs/semantics.md)"


@dataclass(frozen=True)
class Verdict:
    """How one scenario compared: ``category`` is ``None`` when both sides agree."""

    scenario: Scenario
    flink: Outcome
    ours: Outcome
    category: str | None
    group: str = OTHER


# ---------------------------------------------------------------------------- classification


def _same(a: list[Line], b: list[Line]) -> bool:
    return Counter(a) == Counter(b)


def _exception_name(message: str) -> str:
    m = re.search(r"([A-Za-z_.]+(?:Exception|Error))", message)
    return m.group(1).rsplit(".", 1)[-1] if m else message[:60]


def _near_min(s: Scenario, f: Outcome, o: Outcome) -> bool:
    return all(r.ts < MIN_LONG + 2**32 for r in s.records)


def _near_max(s: Scenario, f: Outcome, o: Outcome) -> bool:
    return all(r.ts > MAX_LONG - 2**32 for r in s.records)


_COUNTER = re.compile(r"#(g|cl)=(\d+)")
_WATERMARK = re.compile(r"#wm=([^#]*)")


def _firing_order_free(lines: list[Line]) -> Counter[tuple[str, ...]]:
    """The lines of a context function with the key's firing and clear counters taken out,
    plus, per key and watermark, the firing numbers, and per watermark, the clear numbers."""
    out: Counter[tuple[str, ...]] = Counter()
    for ln in lines:
        value = ln[-2]
        out[(*ln[:-2], _COUNTER.sub("", value), ln[-1])] += 1
        wm = _WATERMARK.search(value)
        counters = dict(_COUNTER.findall(value))
        if value.startswith("C[") and wm is not None:
            out[("g", ln[1], wm.group(1), counters["g"])] += 1
        elif value.startswith("X#") and wm is not None:
            out[("cl", wm.group(1), counters["cl"])] += 1
    return out


def _same_time_order(s: Scenario, f: Outcome, o: Outcome) -> bool:
    # The global-state counters of the context functions number a key's firings and clears:
    # when several of its windows have timers at the same time, Flink's timer heap (one for
    # all keys) breaks the tie arbitrarily, we fire in registration order. Nothing else may
    # differ: the same firings and clears, at the same watermarks.
    return s.fn.endswith("_ctx") and _firing_order_free(f.lines) == _firing_order_free(o.lines)


Check = Callable[[Scenario, Outcome, Outcome], bool]

# (category, group, check): the first check that holds names the cause of a difference.
KNOWN_CAUSES: list[tuple[str, str, Check]] = [
    (
        "timestamps near Long.MIN_VALUE: window starts, sliding assignment and evictor "
        "sums wrap in Flink (Java long overflow)",
        DOCUMENTED,
        _near_min,
    ),
    (
        "timestamps near Long.MAX_VALUE: ours clamps window ends at MAX+1, Flink's "
        "start + size wraps (and other Java long overflows)",
        DOCUMENTED,
        _near_max,
    ),
    (
        "context functions: a key's windows with timers at the same time fire (and clear) "
        "in another order, seen in their global-state counters (Flink: ties arbitrary)",
        DOCUMENTED,
        _same_time_order,
    ),
]


def _flink_failure(s: Scenario, f: Outcome) -> tuple[str, str]:
    assert f.error is not None
    # Only reachable when maxTimestamp + allowedLateness overflows (gaps are small).
    if "by merging" in f.error and max(r.ts for r in s.records) + s.lateness + 2**32 > MAX_LONG:
        return (
            "Flink fails: merged session window 'earlier than the watermark' because "
            "maxTimestamp + allowedLateness overflows (WindowOperator.processElement)",
            DOCUMENTED,
        )
    if "outputs (endless firing?)" in f.error:
        return "Flink fires without end (stopped after 10,000 outputs)", OTHER
    if "no end after" in f.error:
        return f"Flink never ends: {f.error.partition('(')[2].rstrip(')')}", OTHER
    return f"Flink fails at run time: {_exception_name(f.error)}", OTHER


def classify(s: Scenario, f: Outcome, o: Outcome) -> Verdict:
    if f.error is not None and f.error.startswith("build:"):
        if o.error is not None and o.error.startswith("rejected"):
            return Verdict(s, f, o, None)  # both reject the settings: not a scenario
        return Verdict(s, f, o, f"Flink rejects settings we accept: {_exception_name(f.error)}")
    if o.error is not None and o.error.startswith("rejected"):
        reason = re.sub(r"-?\d+", "N", o.error.removeprefix("rejected: "))
        if f.error is not None:
            failure = _exception_name(f.error)
            # docs/semantics.md, "stricter than Flink": a continuous trigger's interval <= 0.
            group = DOCUMENTED if "interval must be" in reason else OTHER
            return Verdict(
                s,
                f,
                o,
                f"we reject up front, Flink fails at run time ({failure}): {reason}",
                group,
            )
        return Verdict(s, f, o, f"we reject settings Flink accepts: {reason}")
    if f.error is not None:
        return Verdict(s, f, o, *_flink_failure(s, f))
    if o.error is not None:
        return Verdict(s, f, o, f"we raise at run time: {_exception_name(o.error)}")
    if _same(f.lines, o.lines):
        return Verdict(s, f, o, None)
    for name, group, check in KNOWN_CAUSES:
        if check(s, f, o):
            return Verdict(s, f, o, name, group)
    return Verdict(s, f, o, "unexplained: " + _signature(s, f, o))


def _signature(s: Scenario, f: Outcome, o: Outcome) -> str:
    """A coarse grouping of unexplained differences: what differs, and the setup's kinds."""
    fc, oc = Counter(f.lines), Counter(o.lines)
    kinds = sorted({ln[0] for ln in (fc - oc) | (oc - fc)})
    parts = [
        "+".join({"R": "results", "L": "late", "S": "side outputs"}[k] for k in kinds),
        s.assigner.split(":")[0],
        "trigger=" + ("purging-" if s.purge else "") + s.trigger.split(":")[0],
        "evictor=" + s.evictor.split(":")[0],
    ]
    if s.fn.endswith("_ctx"):
        parts.append("fn=" + s.fn)
    if any(abs(r.ts) > 2**62 for r in s.records) or s.lateness > 2**40:
        parts.append("extreme times")
    return " ".join(parts)


# ---------------------------------------------------------------------------- running


@dataclass(frozen=True)
class Options:
    batch_size: int = 500
    job_timeout: int = 300
    quiet: bool = False


def compare(scenarios: list[Scenario], opts: Options) -> list[Verdict]:
    def progress(done: int, total: int, seconds: float) -> None:
        if not opts.quiet:
            print(f"  flink: {done}/{total} scenarios, {seconds:.0f} s", file=sys.stderr)

    start = time.monotonic()
    flink_out = flink.run(scenarios, opts.batch_size, opts.job_timeout, progress)
    middle = time.monotonic()
    verdicts = [classify(s, flink_out[s.sid], ours.run(s)) for s in scenarios]
    if not opts.quiet:
        print(
            f"  Flink {middle - start:.1f} s, ours (and classification) "
            f"{time.monotonic() - middle:.1f} s",
            file=sys.stderr,
        )
    return verdicts


def shrink(v: Verdict, opts: Options) -> Verdict:
    """A smaller scenario with the same category (greedy, one Flink job per round)."""
    quiet = dataclasses.replace(opts, quiet=True, batch_size=10_000)
    current = v
    while True:
        candidates = [
            c.with_id(f"shrink:{i}") for i, c in enumerate(simplifications(current.scenario))
        ]
        smaller = [r for r in compare(candidates, quiet) if r.category == v.category]
        if not smaller:
            return dataclasses.replace(current, scenario=current.scenario.with_id(v.scenario.sid))
        current = smaller[0]


# ---------------------------------------------------------------------------- reporting


def _lines(lines: Iterable[Line]) -> str:
    return "\n".join("      " + "  ".join(ln) for ln in sorted(lines)) or "      (nothing)"


def show(v: Verdict) -> str:
    """A verdict in full: the scenario, then what differs, then all of Flink's output."""
    out = [f"[{v.scenario.sid}] {v.category or 'agreed'}", v.scenario.describe()]
    for side, o in (("Flink", v.flink), ("ours", v.ours)):
        if o.error is not None:
            out.append(f"    {side}: {o.error}")
    if v.flink.error is None and v.ours.error is None:
        theirs, mine = Counter(v.flink.lines), Counter(v.ours.lines)
        if theirs != mine:
            out.append("    only in Flink:\n" + _lines((theirs - mine).elements()))
            out.append("    only in ours:\n" + _lines((mine - theirs).elements()))
        out.append("    Flink (all):\n" + _lines(v.flink.lines))
        if theirs != mine:
            out.append("    ours (all):\n" + _lines(v.ours.lines))
    return "\n".join(out)


def record(verdicts: Iterable[Verdict]) -> str:
    """Scenarios with Flink's output: each scenario's lines, then ``= `` and one output line
    (tab-separated) per result or late element."""
    out = [f"# Apache Flink {flink.FLINK_VERSION} output, written by tests/conformance/run.py"]
    for v in verdicts:
        out.extend(v.scenario.driver_lines())
        out.extend("= " + "\t".join(ln) for ln in sorted(v.flink.lines))
    return "\n".join(out) + "\n"


def read_record(text: str) -> list[tuple[Scenario, list[Line]]]:
    """The inverse of :func:`record`."""
    cases: list[tuple[list[str], list[Line]]] = []
    for line in text.splitlines():
        if line.startswith("S "):
            cases.append(([line], []))
        elif line.startswith("R "):
            cases[-1][0].append(line)
        elif line.startswith("= "):
            cases[-1][1].append(tuple(line[2:].split("\t")))
    return [(parse(lines)[0], out) for lines, out in cases]


def _slug(category: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", category.lower()).strip("-")[:80]


def summarize(verdicts: list[Verdict], seconds: float) -> dict[str, list[Verdict]]:
    """Print the summary table; the disagreements by category."""
    by_category: dict[str, list[Verdict]] = {}
    for v in verdicts:
        if v.category is not None:
            by_category.setdefault(v.category, []).append(v)
    disagreed = sum(len(vs) for vs in by_category.values())
    both_reject = sum(1 for v in verdicts if v.flink.error and v.category is None)
    flink_errors = sum(1 for v in verdicts if (v.flink.error or "").startswith("run:"))
    rows = (
        ("scenarios run", len(verdicts)),
        ("agreed", len(verdicts) - disagreed - both_reject),
        ("both reject settings", both_reject),
        ("disagreed", disagreed),
        ("  of which Flink run errors", flink_errors),
        ("time", f"{seconds:.1f} s"),
    )
    print()
    for name, value in rows:
        print(f"{name:<30}{value}")
    for name in (OTHER, DOCUMENTED):
        group = sorted(
            ((c, vs) for c, vs in by_category.items() if vs[0].group == name),
            key=lambda cv: -len(cv[1]),
        )
        if group:
            print(f"\n{name}:")
        for category, vs in group:
            ids = ", ".join(v.scenario.sid for v in vs[:3])
            print(f"  {len(vs):5d}  {category}  [{ids}{', ...' if len(vs) > 3 else ''}]")
    return by_category


def _functions(text: str) -> tuple[str, ...]:
    names = [n for part in text.split(",") for n in FUNCTION_SETS.get(part, (part,))]
    known = {n for kinds in FUNCTION_SETS.values() for n in kinds}
    unknown = sorted(set(names) - known)
    if unknown:
        msg = f"unknown functions {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        raise argparse.ArgumentTypeError(msg)
    return tuple(dict.fromkeys(names))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.conformance.run",
        description="Compare our window operator with Apache Flink's on random scenarios.",
    )
    parser.add_argument("--count", type=int, default=500, help="scenarios to run (500)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (1)")
    parser.add_argument("--start", type=int, default=0, help="first scenario index (0)")
    parser.add_argument("--batch-size", type=int, default=500, help="scenarios per Flink job")
    parser.add_argument(
        "--job-timeout", type=int, default=300, help="seconds before a Flink job is given up"
    )
    parser.add_argument("--show", type=int, default=3, help="categories shown in full (3)")
    parser.add_argument(
        "--only", action="append", default=[], metavar="SEED:INDEX", help="run just these ids"
    )
    parser.add_argument(
        "--functions",
        type=_functions,
        default=FUNCTION_SETS["default"],
        metavar="NAMES",
        help="window functions to draw from, comma-separated: kinds, 'default' (the six "
        "printing functions) or 'ctx' (those using the process function's context)",
    )
    parser.add_argument("--replay", type=Path, help="run the scenarios of a repro file")
    parser.add_argument(
        "--record",
        type=Path,
        help="write the scenarios both sides agree on, with Flink's output, to this file "
        "(the input of tests/conformance/test_flink_recorded.py)",
    )
    parser.add_argument(
        "--shrink",
        action="store_true",
        help=f"minimise the first scenario of each category, into {REPRO_DIR}",
    )
    args = parser.parse_args(argv)

    if args.replay is not None:
        scenarios = parse(args.replay.read_text().splitlines())
    elif args.only:
        ids = [parse_id(i) for arg in args.only for i in arg.split(",")]
        scenarios = [generate(seed, index, args.functions) for seed, index in ids]
    else:
        first, end = args.start, args.start + args.count
        scenarios = [generate(args.seed, i, args.functions) for i in range(first, end)]
    opts = Options(args.batch_size, args.job_timeout)
    print(f"{len(scenarios)} scenarios (seed {args.seed})", file=sys.stderr)
    start = time.monotonic()
    try:
        verdicts = compare(scenarios, opts)
    except flink.FlinkSetupError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    by_category = summarize(verdicts, time.monotonic() - start)

    picked = verdicts if (args.only or args.replay) else [vs[0] for vs in by_category.values()]
    for v in picked[: len(picked) if (args.only or args.replay) else args.show]:
        print("\n" + show(v))
    if args.record is not None:
        agreed = [v for v in verdicts if v.category is None and v.flink.error is None]
        args.record.write_text(record(agreed))
        print(f"\n{len(agreed)} agreed scenarios with Flink's output in {args.record}")
    if args.shrink:
        REPRO_DIR.mkdir(parents=True, exist_ok=True)
        for category, vs in by_category.items():
            small = shrink(vs[0], opts)
            path = REPRO_DIR / f"{_slug(category)}.txt"
            path.write_text("\n".join(small.scenario.driver_lines()) + "\n")
            print(f"\nminimal, in {path.relative_to(flink.ROOT)}:\n" + show(small))
    unexplained = [c for c, vs in by_category.items() if vs[0].group != DOCUMENTED]
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
