"""Lint engines side by side through the pool: ``python -m benchmarks.lint_engines [--files 2000]``.

The same files (the ~40-line components of :mod:`benchmarks.compile_throughput`, each with a
seeded mix of the defects in :data:`DEFECTS`, so both engines report findings) go through one
warm :class:`~botgrpo.sandbox.node_pool.NodePool` at level ``syntax`` three times: no lint (the
ceiling the compile path sets), ``lint="oxlint"`` and ``lint="eslint"``, each after a warm-up of
``--warmup`` other files per worker (ESLint and V8's JIT take a few hundred to reach speed).
It prints files/s for each, oxlint / ESLint, the CPU time a file costs in each pass (this
process and every process of the workers' groups: node, esbuild, the oxlint host; a figure
that other load on the machine disturbs less than files/s), each engine's own share (over the
no-lint pass), worker restarts, and whether both engines gave the same rule ids and spans on
every file (``react/no-deprecated`` is ESLint's only).

Target on 2 cores (issue 24): oxlint >= 1,000 files/s through the pool.
"""
from __future__ import annotations

import argparse
import os
import random
import time

from benchmarks.compile_throughput import component, proc_cpu
from botgrpo.sandbox.node_pool import NodePool
from botgrpo.sandbox.results import CompileResult

#: Rules of ESLint's set that oxlint does not have (sandbox/node/lib/oxlint.mjs, UNMAPPED).
ESLINT_ONLY = frozenset({"react/no-deprecated", "react/jsx-uses-vars"})


def _replace(old: str, new: str):
    def apply(code: str) -> str:
        assert old in code, old
        return code.replace(old, new, 1)
    return apply


#: Defects injected into the component template, each one a finding of the named rule.
DEFECTS = {
    "react/jsx-key": _replace("<li key={it.id} onClick", "<li onClick"),
    "react/no-unknown-property": _replace('<section className="todo">', '<section class="todo">'),
    "react/jsx-no-target-blank": _replace("<h2>{title}</h2>",
                                          '<h2>{title}</h2>\n      <a href="https://example.com" target="_blank">docs</a>'),
    "react-hooks/rules-of-hooks": _replace('  const [draft, setDraft] = useState("");\n',
                                           '  const [draft, setDraft] = useState("");\n'
                                           '  if (title === "") {\n    useState(0);\n  }\n'),
    "react-hooks/exhaustive-deps": lambda code: _replace('import { useState } from "react";',
                                                         'import { useEffect, useState } from "react";')(
        _replace("  function add() {", "  useEffect(() => {\n    setDraft(title);\n  }, []);\n\n  function add() {")(code)),
    "react/no-unescaped-entities": _replace("<button onClick={add}>Add item", "<button onClick={add}>Don't add item"),
    "react/no-children-prop": _replace("<h2>{title}</h2>", "<h2 children={title} />"),
    "react/jsx-no-comment-textnodes": _replace("<ul>\n", "<ul>\n        // the items\n"),
    "react/jsx-no-undef": _replace("<s>{it.label}</s>", "<Strike>{it.label}</Strike>"),
    "react/no-danger-with-children": _replace("<h2>{title}</h2>",
                                              '<h2 dangerouslySetInnerHTML={{ __html: "<b>x</b>" }}>{title}</h2>'),
    # no finding: non-ASCII text before the findings (oxlint reports UTF-8 byte offsets)
    "unicode": lambda code: "// 待办事项 ✅ 🚀 — ünïcödé\n" + code.replace("<h2>{title}</h2>", "<h2>{title} 🚀 完成</h2>"),
}


def lint_corpus(n: int, seed: int = 0, start: int = 0) -> list[str]:
    """``n`` components, each with a seeded random subset of :data:`DEFECTS` (maybe none)."""
    rng = random.Random(seed)
    codes = []
    for i in range(start, start + n):
        code = component(i)
        for name, apply in DEFECTS.items():
            if rng.random() < 0.3:
                try:
                    code = apply(code)
                except AssertionError:  # an earlier defect removed the anchor: skip this one
                    pass
        codes.append(code)
    return codes


def findings(result: CompileResult) -> list[tuple[str, int, int, str]]:
    """(rule, start, end, severity) of each finding of the rules both engines have."""
    return sorted((d.rule, d.start, d.end, d.severity) for d in result.lint if d.rule not in ESLINT_ONLY)


def cpu_seconds(pool: NodePool) -> float:
    """CPU seconds used so far by this process and by every live process in the workers' groups."""
    groups = set(pool.worker_pids())
    ticks = sum(cpu for _, _, pgrp, cpu in proc_cpu() if pgrp in groups)
    own = os.times()
    return ticks / os.sysconf("SC_CLK_TCK") + own.user + own.system


def rate(pool: NodePool, codes: list[str], lint, warmup: list[str]) -> tuple[float, float, list[CompileResult]]:
    """(files/s, CPU ms a file) through ``pool`` at level syntax (``lint``: False or an engine), after ``warmup``."""
    pool.compile_many(warmup, "syntax", lint=lint)
    cpu, started = cpu_seconds(pool), time.perf_counter()
    results = pool.compile_many(codes, "syntax", lint=lint)
    elapsed = time.perf_counter() - started
    cpu = cpu_seconds(pool) - cpu
    return len(codes) / elapsed, cpu * 1e3 / len(codes), results


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=2000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--warmup", type=int, default=300, help="warm-up files per worker before each pass")
    p.add_argument("--eslint-files", type=int, default=None, help="files for the ESLint pass (default: --files)")
    args = p.parse_args(argv)
    codes = lint_corpus(args.files)
    warmup = lint_corpus(args.warmup * args.workers, seed=1, start=100_000)
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
          f"{args.workers} workers, {len(codes)} files ({sum(map(len, codes)) / len(codes):.0f} chars each)")
    passes = {}
    with NodePool(size=args.workers) as pool:
        for name, lint, files in (("syntax, no lint", False, codes), ("syntax + oxlint", "oxlint", codes),
                                  ("syntax + ESLint", "eslint", codes[: args.eslint_files or len(codes)])):
            restarts = pool.stats()["restarts"]
            files_s, cpu_ms, results = passes[name] = rate(pool, files, lint, warmup)
            restarts = pool.stats()["restarts"] - restarts
            failed = sum(not r.ok for r in results)
            print(f"  {name:16s} {files_s:7.0f} files/s  {cpu_ms:6.2f} CPU ms a file  ({len(results)} files"
                  f"{f', {restarts} worker restarts' if restarts else ''}{f', {failed} not ok' if failed else ''};"
                  f" load {os.getloadavg()[0]:.1f})", flush=True)
    (none, none_cpu, _), (oxlint, ox_cpu, ox_results), (eslint, es_cpu, es_results) = passes.values()
    print(f"  oxlint / ESLint  {oxlint / eslint:7.1f}x files/s   target: syntax + oxlint >= 1,000 files/s")
    for name, files_s, cpu_ms in (("oxlint", oxlint, ox_cpu), ("ESLint", eslint, es_cpu)):
        wall = 1 / files_s - 1 / none
        alone = f"{1 / wall:7.0f} files/s" if wall > 0 else "within noise of no lint (use more --files)"
        print(f"  {name:6s} alone (over no lint): {alone}, {cpu_ms - none_cpu:6.2f} CPU ms a file")
    both = [(a, b) for a, b in zip(ox_results, es_results) if a.ok and b.ok]
    same = sum(findings(a) == findings(b) for a, b in both)
    total = sum(len(findings(b)) for _, b in both)
    print(f"  same rule ids and spans: {same}/{len(both)} files ({total} findings; ESLint-only rules left out)")
    print(f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
