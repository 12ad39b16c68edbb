"""The study's report: each comparison tested as the protocol says, in words, in JSON and in plots.

From the study cells' records under the lock (missing cells make their comparisons "not yet"):

* per arm, the endpoint on every seed (steps: interpolated, censored marked) and its collapses;
* per comparison, in the protocol's order (the positive-control gate first, then the primary and
  secondary comparisons, then the exploratory ones): the per-seed paired differences (positive:
  a better), their mean with a **paired** bootstrap interval (seeds resampled, pairs kept), the
  effect (steps: b's steps over a's, geometric mean), the **exact** two-sided sign-flip p; Holm
  only across the tested comparisons (primary + secondary); the gate alone at its own alpha;
  exploratory comparisons with raw p and never called;
* the verdict, from the rule the protocol fixes (and its own words for each outcome).

Everything is deterministic (the bootstrap's seed is the protocol's).
"""
from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from botgrpo.compare.cells import Layout, load_records
from botgrpo.compare.endpoints import ENDPOINTS, Endpoint, EndpointUndefined, endpoints_of
from botgrpo.compare.lock import Lock
from botgrpo.compare.protocol import Comparison, Protocol
from botgrpo.compare.stats import collapsed, holm, paired_bootstrap_ci, sign_flip_p

Records = dict[tuple[str, int], dict[str, Any]]


@dataclass(frozen=True)
class Result:
    """One comparison on the primary endpoint (``other``: the other endpoints, reported only)."""

    role: str                       # gate, primary, secondary or exploratory
    a: str
    b: str
    status: str                     # complete, not yet, undefined
    seeds: list[int]                # the seeds both arms finished
    missing: list[int]              # study seeds still missing for either arm
    a_values: list[float]
    b_values: list[float]
    differences: list[float]        # a's advantage on each seed (steps: log(T_b / T_a))
    mean: Optional[float] = None
    interval: Optional[list[float]] = None      # paired bootstrap of the mean difference
    effect: Optional[float] = None              # the mean difference as the endpoint reports it
    effect_interval: Optional[list[float]] = None
    p: Optional[float] = None                   # exact two-sided sign-flip
    p_adjusted: Optional[float] = None          # Holm over the tested comparisons (the gate: its own p)
    alpha: Optional[float] = None               # the level it is called at (none: exploratory)
    called: Optional[str] = None                # "a", "b" (better), "none"; None: not called
    verdict: str = ""
    collapses: list[int] = field(default_factory=list)   # [a's, b's] collapsed runs on these seeds
    other: dict[str, dict[str, Any]] = field(default_factory=dict)


def run_values(protocol: Protocol, records: Records, endpoint: Endpoint) -> dict[tuple[str, int], Any]:
    return {cell: endpoint.value(record["evals"], protocol) for cell, record in records.items()}


def compare(protocol: Protocol, records: Records, role: str, c: Comparison, endpoint: Endpoint,
            alpha: Optional[float]) -> Result:
    """The comparison's numbers (without Holm: :func:`analyse` adjusts the tested ones together)."""
    study = protocol.seeds.study
    seeds = [s for s in study if (c.a, s) in records and (c.b, s) in records]
    missing = [s for s in study if s not in seeds]
    values = run_values(protocol, {k: v for k, v in records.items() if k[0] in (c.a, c.b)}, endpoint)
    a_values = [values[(c.a, s)].value for s in seeds]
    b_values = [values[(c.b, s)].value for s in seeds]
    collapses = [sum(collapsed(records[(arm, s)], drop=protocol.collapse_drop) for s in seeds) for arm in (c.a, c.b)]
    base = dict(role=role, a=c.a, b=c.b, seeds=seeds, missing=missing, a_values=a_values, b_values=b_values,
                alpha=alpha, collapses=collapses)
    try:
        diffs = [endpoint.difference(x, y) for x, y in zip(a_values, b_values)]
    except EndpointUndefined as exc:
        return Result(status="undefined", differences=[], verdict=f"undefined: {exc}", **base)
    if missing:
        return Result(status="not yet", differences=diffs,
                      verdict=f"not yet: {len(seeds)} of {len(study)} seeds", **base)
    boot = protocol.bootstrap
    mean, low, high = paired_bootstrap_ci(a_values, b_values, lambda xs, ys: statistics.mean(
        endpoint.difference(x, y) for x, y in zip(xs, ys)), boot.level, boot.seed, boot.resamples)
    other = {}
    for extra in endpoints_of(protocol)[1:]:
        try:
            ev = run_values(protocol, {k: v for k, v in records.items() if k[0] in (c.a, c.b)}, extra)
            d = [extra.difference(ev[(c.a, s)].value, ev[(c.b, s)].value) for s in seeds]
        except EndpointUndefined as exc:
            other[extra.name] = {"undefined": str(exc)}
            continue
        other[extra.name] = {"differences": d, "mean": statistics.mean(d), "effect": extra.effect(statistics.mean(d)),
                             "p": sign_flip_p(d)}
    return Result(status="complete", differences=diffs, mean=mean, interval=[low, high], effect=endpoint.effect(mean),
                  effect_interval=[endpoint.effect(low), endpoint.effect(high)], p=sign_flip_p(diffs), other=other,
                  **base)


def _called(result: Result, p: float, alpha: float) -> tuple[str, str]:
    if p < alpha:
        return ("a", f"{result.a} is better") if result.mean > 0 else ("b", f"{result.b} is better")
    return "none", "no difference detected"


def analyse(protocol: Protocol, records: Records, power: Optional[dict[str, Any]] = None) -> list[Result]:
    """Every comparison of the protocol, in report order, tested and called by its role."""
    endpoint = ENDPOINTS[protocol.endpoint.primary]
    results = [compare(protocol, records, role, c, endpoint,
                       protocol.gate.alpha if role == "gate" else protocol.alpha if role in ("primary", "secondary")
                       else None) for role, c in protocol.comparisons()]
    tested = [r for r in results if r.role in ("primary", "secondary")]
    adjusted = holm({f"{r.a} vs {r.b}": r.p for r in tested if r.status == "complete"}) \
        if all(r.status == "complete" for r in tested) else {}
    out = []
    for r in results:
        if r.status != "complete":
            out.append(r)
            continue
        if r.role == "exploratory":
            out.append(_replace(r, verdict=f"exploratory, not called (raw p {r.p:.4g})"))
        elif r.role == "gate":
            called, words = _called(r, r.p, r.alpha)
            passed = called == "a"
            out.append(_replace(r, p_adjusted=r.p, called=called, verdict=(
                f"{'passed' if passed else 'failed'}: {words} (p {r.p:.4g} "
                f"{'<' if r.p < r.alpha else '>='} {r.alpha}, tested alone)")))
        elif not adjusted:
            out.append(_replace(r, verdict="not yet: every tested comparison must be complete for Holm"))
        else:
            p = adjusted[f"{r.a} vs {r.b}"]
            called, words = _called(r, p, r.alpha)
            power_note = _power_note(protocol, power, r) if called == "none" else ""
            out.append(_replace(r, p_adjusted=p, called=called, verdict=(
                f"{'called: ' if called != 'none' else ''}{words} (Holm-adjusted p {p:.4g} "
                f"{'<' if p < r.alpha else '>='} {r.alpha} over {len(tested)} tested)" + power_note)))
    return out


def _replace(result: Result, **changes: Any) -> Result:
    return Result(**{**asdict(result), **changes})


def _power_note(protocol: Protocol, power: Optional[dict[str, Any]], r: Result) -> str:
    estimate = (power or {}).get("comparisons", {}).get(f"{r.a} vs {r.b}")
    if not estimate:
        return "; no power estimate for it"
    return (f"; the study could detect {_detectable(protocol, estimate)} with power "
            f"{estimate['level']:.0%} (pilot SD {estimate['sd']:.3g})")


def _effect_words(protocol: Protocol, effect: float) -> str:
    return f"{effect:.3g}x" if protocol.endpoint.primary == "steps_to_threshold" else f"{effect:+.3f}"


def _detectable(protocol: Protocol, estimate: dict[str, Any]) -> str:
    if estimate["detectable"] is None:
        return "no effect of any size (too few seeds for the exact test at this alpha)"
    return _effect_words(protocol, ENDPOINTS[protocol.endpoint.primary].effect(estimate["detectable"]))


# --------------------------------------------------------------------------- words
def describe_effect(protocol: Protocol, r: Result) -> str:
    if r.effect is None:
        return "-"
    low, high = r.effect_interval
    level = f"{protocol.bootstrap.level:.0%}"
    if protocol.endpoint.primary == "steps_to_threshold":
        return (f"{r.a} needs {1 / r.effect:.3f} of {r.b}'s steps to reach {protocol.endpoint.threshold} "
                f"(speed-up {r.effect:.3f}x [{low:.3f}, {high:.3f}], {level} paired bootstrap)")
    return f"{r.a} - {r.b}: {r.effect:+.4f} mean held-out pass rate [{low:+.4f}, {high:+.4f}], {level} paired bootstrap"


def overall(protocol: Protocol, results: list[Result]) -> str:
    """The verdict in words, by the protocol's rule and in its own words for the outcome."""
    by_role = {r.role: r for r in results if r.role in ("gate", "primary")}
    primary, gate = by_role["primary"], by_role.get("gate")
    lines = []
    if gate is not None:
        if gate.status != "complete":
            lines.append(f"Positive control ({gate.a} vs {gate.b}): {gate.verdict}.")
        elif gate.called == "a":
            lines.append(f"The positive control passed ({gate.a} better than {gate.b}, p {gate.p:.4g} < "
                         f"{gate.alpha}): the effect can appear in this setting.")
        else:
            lines.append(f"The positive control failed ({gate.verdict.removeprefix('failed: ')}): this setting "
                         "did not show the effect where it is known to be possible, so the primary comparison's "
                         "outcome is no evidence against it.")
            if protocol.outcomes.gate_failed:
                lines.append(protocol.outcomes.gate_failed)
    if primary.status != "complete" or primary.called is None:
        lines.append(f"Primary ({primary.a} vs {primary.b}): {primary.verdict}.")
        return "\n\n".join(lines)
    lines.append(f"Primary ({primary.a} vs {primary.b}): {primary.verdict}. {describe_effect(protocol, primary)}.")
    words = {"a": protocol.outcomes.a_better, "b": protocol.outcomes.b_better,
             "none": protocol.outcomes.no_difference}[primary.called]
    if words:
        lines.append(f"The protocol reads this outcome as: {words}")
    return "\n\n".join(lines)


def _fmt_value(protocol: Protocol, value: float, censored: bool) -> str:
    if protocol.endpoint.primary == "steps_to_threshold":
        return f"{value:.1f}" + (" (c)" if censored else "")
    return f"{value:.3f}"


def markdown(protocol: Protocol, lock: Lock, records: Records, results: list[Result],
             power: Optional[dict[str, Any]]) -> str:
    endpoint = ENDPOINTS[protocol.endpoint.primary]
    study = protocol.seeds.study
    arms = list(protocol.arms)
    total = len(arms) * len(study)
    lines = [f"# Study `{protocol.name}`: report", "",
             f"Protocol hash `{lock.protocol_hash[:16]}`, locked {lock.locked_at} at commit `{lock.commit[:12]}`"
             + ("" if lock.protocol_committed else " (the protocol file was not committed when locked)")
             + f". Records: {len(records)} of {total} study cells. Generated by `botgrpo compare --report`.", ""]
    if protocol.question:
        lines += [f"Question: {protocol.question.strip()}", ""]
    lines += [f"Endpoint: steps to reach held-out pass rate {protocol.endpoint.threshold}, interpolated between "
              f"evaluations (a run that never does counts at {protocol.censor_steps():g})"
              if endpoint.name == "steps_to_threshold" else f"Endpoint: {endpoint.describe}",
              f"Budget {protocol.steps} steps, held-out evaluation every {protocol.evaluation.every} steps on "
              f"{protocol.evaluation.prompts} prompts, study seeds {_seeds(study)}.", "",
              "## Verdict", "", overall(protocol, results), "", "## Comparisons", ""]
    for r in results:
        lines += [f"### {r.role}: {r.a} vs {r.b}", "", f"**{r.verdict}**", ""]
        if r.status == "complete":
            lines += [f"- effect: {describe_effect(protocol, r)}",
                      f"- mean paired difference {r.mean:+.4f} [{r.interval[0]:+.4f}, {r.interval[1]:+.4f}]"
                      + (" (log of the steps ratio)" if endpoint.name == "steps_to_threshold" else ""),
                      f"- exact sign-flip p {r.p:.4g}" + (f", Holm-adjusted {r.p_adjusted:.4g}"
                                                         if r.role in ("primary", "secondary") else ""),
                      f"- {r.a} better on {sum(d > 0 for d in r.differences)} seeds, {r.b} better on "
                      f"{sum(d < 0 for d in r.differences)}, tied on {sum(d == 0 for d in r.differences)}",
                      f"- collapses (an evaluation more than {protocol.collapse_drop} below the start): "
                      f"{r.a} {r.collapses[0]}, {r.b} {r.collapses[1]} of {len(r.seeds)}"]
            for name, o in r.other.items():
                lines.append(f"- {name} (reported, not called): " + (o["undefined"] if "undefined" in o else
                             f"mean difference {o['mean']:+.4f}, raw p {o['p']:.4g}"))
            lines.append("")
        if r.seeds:
            lines += [f"| seed | {r.a} | {r.b} | difference |", "| --- | --- | --- | --- |"]
            lines += [f"| {s} | {x:.4g} | {y:.4g} | {d:+.4f} |" for s, x, y, d in
                      zip(r.seeds, r.a_values, r.b_values, r.differences or [math.nan] * len(r.seeds))]
            lines.append("")
    lines += ["## Per arm", "", f"{endpoint.describe} on each seed" + (" ((c): never reached, censored)"
                                                                        if endpoint.name == "steps_to_threshold" else "")
              + "; below: the mean, the collapsed runs, the mean final held-out pass rate.", "",
              "| seed | " + " | ".join(arms) + " |", "| --- " * (len(arms) + 1) + "|"]
    values = run_values(protocol, records, endpoint)
    for seed in study:
        lines.append(f"| {seed} | " + " | ".join(
            _fmt_value(protocol, values[(arm, seed)].value, values[(arm, seed)].censored) if (arm, seed) in records
            else "-" for arm in arms) + " |")
    mine = {arm: [s for s in study if (arm, s) in records] for arm in arms}
    summary = {
        "mean": lambda arm: f"{statistics.mean(values[(arm, s)].value for s in mine[arm]):.4g}",
        "collapsed": lambda arm: f"{sum(collapsed(records[(arm, s)], drop=protocol.collapse_drop) for s in mine[arm])}"
                                 f"/{len(mine[arm])}",
        "final": lambda arm: f"{statistics.mean(records[(arm, s)]['evals'][-1]['pass_rate'] for s in mine[arm]):.3f}",
    }
    for name, cell in summary.items():
        lines.append(f"| **{name}** | " + " | ".join(cell(arm) if mine[arm] else "-" for arm in arms) + " |")
    lines += [""] + build_lines(records)
    lines += ["## Power (from the pilots, locked with the protocol)", ""]
    lines += power_lines(protocol, power) if power else ["No power estimate was locked with this protocol.", ""]
    lines += ["## Figures", "", "![held-out curves](curves.png)", "", "![per-seed paired differences](differences.png)",
              ""]
    return "\n".join(lines)


def build_lines(records: Records) -> list[str]:
    """Which build of a start identified by its recipe (``built-from.json``) each cell trained from
    (a record's ``built``: the bytes' print): the builds with their cells, and the seeds whose arms
    trained from different builds. Nothing when no record names a build."""
    built = {cell: json.dumps(r["built"], sort_keys=True) for cell, r in records.items() if r.get("built")}
    if not built:
        return []
    per_seed: dict[int, set[str]] = {}
    for (_, seed), build in built.items():
        per_seed.setdefault(seed, set()).add(build)
    straddle = sorted(seed for seed, builds in per_seed.items() if len(builds) > 1)
    lines = ["## Builds of the start", "",
             "The start is identified by what it was trained from and how (its `built-from.json`); its weights' "
             "bytes differ with the CPU that trained them. The cells trained from these builds:", ""]
    lines += [f"- {', '.join(f'{k} `{v}`' for k, v in json.loads(build).items())}: {n} cells"
              for build, n in Counter(built.values()).most_common()]
    return lines + ["", "Seeds whose arms trained from different builds: "
                    + (", ".join(map(str, straddle)) if straddle else "none") + ".", ""]


def power_lines(protocol: Protocol, power: dict[str, Any]) -> list[str]:
    endpoint = ENDPOINTS[protocol.endpoint.primary]
    lines = [f"Method: {power.get('method', '')}.", ""]
    for label, e in power.get("comparisons", {}).items():
        needed = e["seeds_for_target"]
        lines.append(f"- {e['role']}, {label}: pilot seeds {e['pilot_seeds']}, per-seed SD of the paired "
                     f"difference {e['sd']:.4g}" + (" (the pilots agree exactly: no real spread, run more pilots)"
                                                   if e["sd"] == 0 else "")
                     + f"; with {e['seeds']} seeds at alpha {e['alpha']:.4g} the study detects "
                     f"{_detectable(protocol, e)} with power {e['level']:.0%}; at the "
                     f"target {_effect_words(protocol, endpoint.effect(e['target']))} its power is "
                     f"{e['power_at_target']:.2f}, and {needed if needed else 'more than 400'} seeds give "
                     f"{e['level']:.0%}."
                     + (f" {e['censored_runs']} pilot runs never reached the threshold (censored): their spread "
                        "is not measured; a longer budget or a lower threshold measures it" if e.get("censored_runs")
                        else ""))
    return lines + [""]


def _seeds(seeds: list[int]) -> str:
    if seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]} ({len(seeds)})"
    return f"{', '.join(map(str, seeds))} ({len(seeds)})"


def verdict_json(protocol: Protocol, lock: Lock, records: Records, results: list[Result],
                 power: Optional[dict[str, Any]]) -> dict[str, Any]:
    return {"study": protocol.name, "protocol_hash": lock.protocol_hash, "commit": lock.commit,
            "locked_at": lock.locked_at, "endpoint": protocol.endpoint.primary,
            "cells": {"finished": len(records), "total": len(protocol.arms) * len(protocol.seeds.study)},
            "complete": all(r.status == "complete" for r in results),
            "verdict": overall(protocol, results), "comparisons": [asdict(r) for r in results], "power": power}


def study_records(layout: Layout, lock: Lock) -> tuple[Records, list[str]]:
    """The study records made under ``lock``; the names of any made under another."""
    records = load_records(layout, "study")
    foreign = sorted(f"{arm}-s{seed}" for (arm, seed), r in records.items() if r.get("protocol") != lock.protocol_hash)
    return {k: r for k, r in records.items() if r.get("protocol") == lock.protocol_hash}, foreign


def write(protocol: Protocol, layout: Layout, lock: Lock) -> tuple[str, dict[str, Any]]:
    """``report.md``, ``verdict.json``, ``curves.png`` and ``differences.png`` in the results folder."""
    from botgrpo.compare import plots

    records, foreign = study_records(layout, lock)
    power = lock.power
    results = analyse(protocol, records, power)
    text = markdown(protocol, lock, records, results, power)
    if foreign:
        text += f"\nLeft out: records made under another protocol ({', '.join(foreign)}).\n"
    verdict = verdict_json(protocol, lock, records, results, power)
    out = layout.results
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(text)
    (out / "verdict.json").write_text(json.dumps(verdict, indent=1) + "\n")
    plots.curves(protocol, records, out / "curves.png")
    plots.differences(protocol, results, out / "differences.png")
    return text, verdict
