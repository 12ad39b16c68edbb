"""Blame accuracy: on mistakes whose site is known, where does each local signal point?

    python -m benchmarks.blame [--per-kind 200] [--out docs/results/blame.json]

Corpora: every React corruption that fails to compile (:mod:`botgrpo.trainer.tasks.react_corruptions`,
applied to both task shapes; the edit site is the diff between the clean and the broken code)
compiled at ``build`` (``typecheck`` for the mistakes only it sees) by the real sandbox, and
arithmetic solutions with one wrong step (:mod:`botgrpo.trainer.tasks.arith`) scored by the math
scorer. For each local signal, per mistake kind:

* **site**: how often the blamed characters (``l = -1``) touch the edit site;
* **report**: how often they touch the first error the parser reports, the first token at which
  the prefix stops being completable (a recursive-descent parser reports at the first token
  that no valid program could continue with);
* **blamed**: the mean share of the code's characters that are blamed (less is sharper).

An oracle would score site = 1.0 with a small blamed share; blaming everything scores site =
1.0 with blamed = 1.0. The React rows run the scorer once per rollout and evaluate every signal
on the same compile result, so they differ only in the signal.

``--corpus tests/data/smollm2_failures.jsonl`` adds the failures a real model wrote
(SmolLM2-135M-Instruct, :mod:`benchmarks.real_model`): no edit site is known there, so per
failure kind and signal it reports **report** (the blame touches the first reported error; for
math, the first wrong step), **blamed** (share of the code, or of a math completion, blamed),
**whole** (share of failures blamed throughout: no code, truncation) and **nothing** (share
with no local blame at all: the outcome alone). Each completion goes through the whole
``react`` scorer at the level where it first failed (a spec-only failure at ``render``) with
the signal as its ``local`` option; ``--corpus-only`` skips the synthetic tables.
"""
from __future__ import annotations

import argparse
import difflib
import json
import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from botgrpo.reward_server.react.local import LOCAL_SIGNALS, CompileOutcome, Window
from botgrpo.reward_server.spans import char_scores
from botgrpo.trainer.tasks import arith, react
from botgrpo.trainer.tasks.react_corruptions import CORRUPTIONS

SIGNALS: dict[str, tuple[str, Window]] = {
    "first error, 3 tokens": ("first_error", Window(3, "tokens")),
    "first error, 0 tokens": ("first_error", Window(0, "tokens")),
    "first error, 1 token": ("first_error", Window(1, "tokens")),
    "first error, 5 tokens": ("first_error", Window(5, "tokens")),
    "first error, 1 line": ("first_error", Window(1, "lines")),
    "first error, 2 lines": ("first_error", Window(2, "lines")),
    "all errors, 1 line (retired window)": ("all_errors", Window(1, "lines")),
    "first cause, 3 tokens (default)": ("first_cause", Window(3, "tokens")),
    "propagate (first parse error on)": ("propagate", Window(3, "tokens")),
    "suffix (first diagnostic on)": ("suffix", Window(3, "tokens")),
    "oracle (diff to reference)": ("oracle", Window(3, "tokens")),
}


@dataclass
class Case:
    kind: str
    shape: str
    clean: str
    broken: str
    level: str


def edit_site(clean: str, broken: str) -> list[tuple[int, int]]:
    """Character spans of ``broken`` where it departs from ``clean`` (a deletion: from the last
    visible character before the gap through the first one after it)."""
    spans = []
    for op, _, _, j1, j2 in difflib.SequenceMatcher(None, clean, broken, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if j2 > j1:
            spans.append((j1, j2))
            continue
        before = len(broken[:j1].rstrip()) - 1
        after = j1 + len(broken[j1:]) - len(broken[j1:].lstrip())
        spans.append((max(0, before), min(len(broken), after + 1)))
    return spans


def react_cases(per_kind: int, seed: int = 0) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for kind, corruption in sorted(CORRUPTIONS.items()):
        if corruption.fails == "spec" or corruption.whole_completion:
            continue  # spec misses compile; truncation is blamed throughout by design
        level = "typecheck" if corruption.fails == "typecheck" else "build"
        for shape in react.SHAPES:
            made = 0
            while made < per_kind // 2:
                example = react.make_example(rng, 8, shape)
                try:
                    broken = corruption.apply(example.component.code, example.task.reference["spec"], rng)
                except (IndexError, ValueError, StopIteration):
                    continue
                cases.append(Case(kind, shape, example.component.code, broken, level))
                made += 1
    return cases


def _touches(blamed, spans: list[tuple[int, int]]) -> bool:
    return any(blamed[s:e].any() for s, e in spans)


def react_table(per_kind: int) -> list[dict]:
    from botgrpo.sandbox.node_pool import NodePool

    cases = react_cases(per_kind)
    rows: dict[tuple[str, str], list[tuple[bool, bool, float]]] = {}
    with NodePool(size=2) as pool:
        compiled = {level: iter(pool.compile_many([c.broken for c in cases if c.level == level], level))
                    for level in ("build", "typecheck")}
        results = [next(compiled[c.level]) for c in cases]
    for case, result in zip(cases, results):
        if result.ok or not result.diagnostics:
            continue  # the corruption happened to compile: no verdict to place
        outcome = CompileOutcome(len(case.broken), 0, case.broken, diagnostics=tuple(result.diagnostics))
        first = min(result.diagnostics, key=lambda d: d.start)
        at = min(first.start, len(case.broken) - 1)  # a report at the end of the file: its last character
        report = [(at, max(first.end, at + 1))]
        site = edit_site(case.clean, case.broken)
        for label, (name, window) in SIGNALS.items():
            spans = LOCAL_SIGNALS[name](outcome, window, case.clean)
            blamed = char_scores(spans, 0.0, len(case.broken)) < 0
            rows.setdefault((case.kind, label), []).append(
                (_touches(blamed, site), _touches(blamed, report), float(blamed.mean())))
    return [_summary("react", kind, label, values) for (kind, label), values in rows.items()]


def math_table(n: int, seed: int = 0) -> list[dict]:
    from botgrpo.reward_server.math.equivalence import warm_up
    from botgrpo.reward_server.scorers.base import Rollout
    from botgrpo.reward_server.scorers.math import MathOptions, MathScorer
    from botgrpo.sandbox.process_pool import ProcessPool

    rng = random.Random(seed)
    examples = [e for e in arith.make_examples(n * 3, seed, max_operand=9, max_operations=5) if len(e.operations) >= 3][:n]
    cases = []
    for example in examples:
        at = rng.randrange(len(example.operations))
        broken = example.completion(error_at=at, error=rng.choice([-2, -1, 1, 2]))
        line = broken.splitlines()[at]
        start = broken.index(line)
        cases.append((broken, example.answer, (start, start + len(line))))
    rows = {}
    with ProcessPool(1, initializer=warm_up) as pool:
        scorer = MathScorer(pool)
        for label, options in (("first wrong step + propagation (default)", MathOptions()),
                               ("wrong steps only", MathOptions(error_propagation=False))):
            results = scorer.score_batch([Rollout(b, reference={"answer": str(a)}) for b, a, _ in cases], options)
            for (broken, _, site), result in zip(cases, results):
                blamed = char_scores(result.local, result.local_default, len(broken)) < 0
                rows.setdefault(label, []).append((_touches(blamed, [site]), _touches(blamed, [site]), float(blamed.mean())))
    return [_summary("math", "wrong_step", label, values) for label, values in rows.items()]


def _summary(task: str, kind: str, label: str, values: list[tuple[bool, bool, float]]) -> dict:
    return {"task": task, "kind": kind, "signal": label, "n": len(values),
            "site": statistics.mean(v[0] for v in values), "report": statistics.mean(v[1] for v in values),
            "blamed": statistics.mean(v[2] for v in values)}


def markdown(rows: list[dict]) -> str:
    out = ["| task | mistake | local signal | n | site | report | blamed share |", "| --- | --- | --- | --- | --- | --- | --- |"]
    order = list(SIGNALS) + ["first wrong step + propagation (default)", "wrong steps only"]
    for r in sorted(rows, key=lambda r: (r["task"] != "react", r["kind"], order.index(r["signal"]))):
        out.append(f"| {r['task']} | {r['kind']} | {r['signal']} | {r['n']} | {r['site']:.2f} | {r['report']:.2f} | "
                   f"{r['blamed']:.2f} |")
    return "\n".join(out)


# ------------------------------------------------------------------------------ a real model's failures

CORPUS_SIGNALS = {label: signal for label, signal in SIGNALS.items() if signal[0] != "oracle"}  # no reference code
MATH_SIGNALS = {"first wrong step + propagation (default)": True, "wrong steps only": False}


def corpus_group(row: dict) -> str:
    """A failure kind coarse enough for a table: the corpus's own kinds are finer."""
    kind = row["kind"]
    if row["task"] == "math":
        return kind.replace(" (truncated)", "")
    if kind in ("no code block", "truncated inside the code block"):
        return kind
    if row["level"] == "spec":
        return "compiles and renders, misses the spec"
    if row["level"] == "render":
        return "builds, fails to render" if kind.startswith("render") else "render level: " + kind
    return {"build": "build error (esbuild)", "typecheck": "type error (tsgo)"}[row["level"]]


def read_corpus(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _share(blamed, span) -> float:
    start, end = span
    return float(blamed[start:end].mean()) if end > start else 0.0


def corpus_table(path: Path) -> list[dict]:
    """Each local signal on a real model's failing completions (see the module docstring)."""
    from botgrpo.reward_server.scorers.base import Rollout
    from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer

    rows = read_corpus(path)
    react_rows = [r for r in rows if r["task"] == "react"]
    values: dict[tuple[str, str, str], list[tuple[Optional[bool], float, bool, bool]]] = {}
    scorer = ReactScorer(pool_size=2)
    try:
        for level in ("build", "typecheck", "render"):
            group = [r for r in react_rows if (r["level"] if r["level"] != "spec" else "render") == level]
            if not group:
                continue
            rollouts = [Rollout(r["completion"], r["prompt"], r["reference"], r["finish_reason"] == "length")
                        for r in group]
            for label, (name, window) in CORPUS_SIGNALS.items():
                options = ReactOptions(level=level, local=name, window=window.size, window_unit=window.unit)
                for row, result in zip(group, scorer.score_batch(rollouts, options)):
                    if result.passed and (result.details.get("spec_passed") is not False):
                        continue  # passes today (a scorer change): not a failure to place
                    n = len(row["completion"])
                    blamed = char_scores(result.local, result.local_default, n) < 0
                    span = result.details.get("code_span") or [0, n]
                    errors = result.details.get("errors") or []
                    report = None
                    if errors:
                        at = min(errors[0]["start"], n - 1)
                        report = bool(blamed[at:max(errors[0]["end"], at + 1)].any())
                    values.setdefault(("react", corpus_group(row), label), []).append(
                        (report, _share(blamed, span), bool(blamed.all()), not blamed.any()))
    finally:
        scorer.close()
    math_rows = [r for r in rows if r["task"] == "math"]
    if math_rows:
        from botgrpo.reward_server.math.equivalence import warm_up
        from botgrpo.reward_server.scorers.math import MathOptions, MathScorer
        from botgrpo.sandbox.process_pool import ProcessPool

        with ProcessPool(1, initializer=warm_up) as pool:
            scorer = MathScorer(pool)
            rollouts = [Rollout(r["completion"], r["prompt"], r["reference"], r["finish_reason"] == "length")
                        for r in math_rows]
            for label, propagate in MATH_SIGNALS.items():
                for row, result in zip(math_rows, scorer.score_batch(rollouts, MathOptions(error_propagation=propagate))):
                    if result.passed:
                        continue
                    n = len(row["completion"])
                    blamed = char_scores(result.local, result.local_default, n) < 0
                    wrong = [st for st in result.details.get("steps") or [] if st["ok"] is False]
                    report = bool(blamed[wrong[0]["start"]:wrong[0]["end"]].any()) if wrong else None
                    values.setdefault(("math", corpus_group(row), label), []).append(
                        (report, _share(blamed, (0, n)), bool(blamed.all()), not blamed.any()))
    out = []
    for (task, kind, label), vals in values.items():
        placed = [v[0] for v in vals if v[0] is not None]
        out.append({"task": task, "kind": kind, "signal": label, "n": len(vals),
                    "report": statistics.mean(placed) if placed else None, "with_report": len(placed),
                    "blamed": statistics.mean(v[1] for v in vals), "whole": statistics.mean(v[2] for v in vals),
                    "nothing": statistics.mean(v[3] for v in vals)})
    return out


def corpus_markdown(rows: list[dict], path: Path) -> str:
    out = [f"Real failures ({path}): no edit site is known; report = the blame touches the first reported error "
           "(math: the first wrong step), over the failures that have one (n with one in brackets)", "",
           "| task | failure | local signal | n | report | blamed share | blamed throughout | nothing blamed |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    order = list(CORPUS_SIGNALS) + list(MATH_SIGNALS)
    for r in sorted(rows, key=lambda r: (r["task"] != "react", -sum(x["n"] for x in rows if x["kind"] == r["kind"]),
                                         r["kind"], order.index(r["signal"]))):
        report = "-" if r["report"] is None else f"{r['report']:.2f} ({r['with_report']})"
        out.append(f"| {r['task']} | {r['kind']} | {r['signal']} | {r['n']} | {report} | {r['blamed']:.2f} | "
                   f"{r['whole']:.2f} | {r['nothing']:.2f} |")
    return "\n".join(out)


def main(argv: Optional[list[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--per-kind", type=int, default=200, help="broken components per React mistake kind")
    p.add_argument("--math", type=int, default=200, help="arithmetic solutions with one wrong step")
    p.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    p.add_argument("--corpus", type=Path, default=None,
                   help="also place blame on a real model's failures (e.g. tests/data/smollm2_failures.jsonl)")
    p.add_argument("--corpus-only", action="store_true", help="with --corpus: skip the synthetic tables")
    args = p.parse_args(argv)
    started = time.perf_counter()
    rows = [] if args.corpus and args.corpus_only else react_table(args.per_kind) + math_table(args.math)
    if rows:
        table = markdown(rows)
        print(table)
    corpus_rows = corpus_table(args.corpus) if args.corpus else []
    if corpus_rows:
        print("\n" + corpus_markdown(corpus_rows, args.corpus))
    seconds = time.perf_counter() - started
    print(f"\n{seconds:.0f} s")
    if args.out:
        command = (f"python -m benchmarks.blame --per-kind {args.per_kind} --math {args.math}"
                   + (f" --corpus {args.corpus}" + (" --corpus-only" if args.corpus_only else "") if args.corpus else ""))
        result = {"command": command, "seconds": seconds, "rows": rows}
        if args.corpus:
            result["corpus"] = {"path": str(args.corpus), "rows": corpus_rows}
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
