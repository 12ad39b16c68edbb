"""Scorer throughput in one run, each against its naive baseline measured alongside.

    python -m benchmarks.scorers [--files 400] [--answers 2000]

* React: compiles per second at each level through the warm Node pool, and the whole
  ``react`` scorer (extraction, compile, token scheme) at ``build``, against spawning the
  esbuild CLI once per file; renders (level ``render``: build, execute, server-render in a
  fresh realm) and lints (oxlint, then ESLint, each after the syntax check: the two
  ``lint_engine`` choices; ``benchmarks.lint_engines`` compares them in depth) per second
  through the same pool, after a warm-up (``--warmup`` files per worker); screenshots per
  second in one Chromium. Level ``syntax`` (alone and under the lint) is also measured by
  esbuild's path (``syntax_engine="esbuild"``, the path before oxc's) as its baseline. The lint
  runs as the react scorer asks for a rollout with no spec (``summary=False``: no spec summary,
  no TypeScript parse); its baseline ``summary always`` is the path before that (issue 38).
  Typecheck likewise: ``pool typecheck`` with the summary always, ``pool typecheck, no
  summary`` beside it, and ``path before``: esbuild's bundle on every file and every curated
  library in every tsgo program (the path before issue 38's levers; ``build`` too), with the
  whole pool's CPU a file of each.
* Math: ordinary answers per second through the ``math`` scorer against calling
  math-verify's ``verify(parse(.), parse(.))`` directly; adversarial answers' latency.

Targets on 2 cores: syntax >= 1,500 files/s, build >= 200 files/s, typecheck >= 50 files/s, render >= 150 components/s,
lint (oxlint) >= 1,000 files/s, math >= 500 answers/s, adversarial answers under 50 ms.
"""
from __future__ import annotations

import argparse
import os
import random
import time

from benchmarks.compile_throughput import bench_esbuild_cli, bench_pool, bench_screenshots, component
from benchmarks.math_throughput import ADVERSARIAL, ordinary
from benchmarks.pool_profile import group_ticks, TICK_MS
from botgrpo.reward_server.math.equivalence import warm_up
from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.math import MathOptions, MathScorer
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer
from botgrpo.sandbox.node_pool import NodePool
from botgrpo.sandbox.process_pool import ProcessPool


def per_second(n: int, fn) -> float:
    started = time.perf_counter()
    fn()
    return n / (time.perf_counter() - started)


def pool_cpu_ms(pool: NodePool, fn) -> float:
    """CPU ms that ``fn()`` costs this process and ``pool``'s worker process groups (/proc)."""
    groups = set(pool.worker_pids())
    before, py = group_ticks(groups), time.process_time()
    fn()
    after, py = group_ticks(groups), time.process_time() - py
    return py * 1000 + TICK_MS * sum(t - before.get(pid, (kind, 0))[1] for pid, (kind, t) in after.items())


def react_section(files: int, workers: int, warmup: int, screenshots: int) -> dict[str, float]:
    codes = [component(i) for i in range(files)]
    rates = {}
    # `before`: the paths before issue 38: esbuild's transform or bundle on every file, and every
    # curated library in every typecheck program (NodePool SYNTAX_ENGINES, TYPECHECK_PRELUDES)
    with NodePool(size=workers) as pool, NodePool(size=workers, syntax_engine="esbuild", typecheck_prelude="all") as before:
        # level syntax by oxc's path (the default) and, as the baseline, esbuild's transform on
        # every file (the path before: NodePool SYNTAX_ENGINES), after the same warm-up
        rates["pool syntax"] = bench_pool(pool, codes, "syntax", warmup=warmup)
        rates["pool syntax, no summary"] = bench_pool(pool, codes, "syntax", warmup=warmup, summary=False)
        rates["pool syntax, esbuild path"] = bench_pool(before, codes, "syntax", warmup=warmup)
        for level in ("build", "typecheck"):
            rates[f"pool {level}"] = bench_pool(pool, codes, level, warmup=warmup)
        rates["pool build, path before"] = bench_pool(before, codes, "build", warmup=warmup)
        # typecheck as a rollout with no spec is scored (no summary; TypeScript's parse stays: the
        # policies read it), beside the row above (the summary always) and the path before; CPU a
        # file interleaved twice
        rates["pool typecheck, no summary"] = bench_pool(pool, codes, "typecheck", warmup=warmup, summary=False)
        rates["pool typecheck, no summary, path before"] = bench_pool(before, codes, "typecheck", warmup=warmup, summary=False)
        for _ in range(2):
            for name, p, summary in (("no summary", pool, False), ("summary always", pool, True),
                                     ("no summary, path before", before, False)):
                key = f"CPU ms a file, typecheck, {name}"
                spent = pool_cpu_ms(p, lambda: p.compile_many(codes, level="typecheck", summary=summary)) / len(codes)
                rates[key] = min(rates.get(key, spent), spent)
        rates["pool render"] = bench_pool(pool, codes, "render", warmup=warmup)
        # the lint as a rollout with no spec is scored (no summary), then with the summary always
        # (the path before issue 38's on-demand summary), then on esbuild's path too
        rates["pool lint oxlint"] = bench_pool(pool, codes, "syntax", lint="oxlint", warmup=warmup, summary=False)
        rates["pool lint oxlint, summary always"] = bench_pool(pool, codes, "syntax", lint="oxlint", warmup=warmup)
        rates["pool lint oxlint, esbuild path"] = bench_pool(before, codes, "syntax", lint="oxlint", warmup=warmup)
        # CPU a file (all processes of the pool), which a loaded machine stretches far less than
        # the wall clock: the three paths of level syntax under the lint, interleaved twice
        for _ in range(2):
            for name, p, summary in (("no summary", pool, False), ("summary always", pool, True),
                                     ("esbuild path", before, True)):
                key = f"CPU ms a file, lint, {name}"
                spent = pool_cpu_ms(p, lambda: p.compile_many(codes, level="syntax", lint="oxlint", summary=summary)) / len(codes)
                rates[key] = min(rates.get(key, spent), spent)
        rates["pool lint ESLint"] = bench_pool(pool, codes, "syntax", lint="eslint", warmup=warmup)
        scorer = ReactScorer(pool)
        rollouts = [Rollout(f"Here it is:\n```tsx\n{code}```\n") for code in codes]
        for level in ("build", "render"):
            opts = ReactOptions(level=level)
            rates[f"react scorer {level}"] = per_second(len(rollouts), lambda: [
                scorer.score_batch(rollouts[i:i + 64], opts) for i in range(0, len(rollouts), 64)])
        htmls = [r.render.html for r in pool.compile_many(codes[:screenshots], level="render")] if screenshots else []
    if htmls:
        rates["screenshots (1 Chromium)"] = bench_screenshots(htmls)
    rates["esbuild CLI per file"] = bench_esbuild_cli(codes[: min(files, 100)])
    return rates


def math_section(answers: int, workers: int) -> tuple[dict[str, float], dict[str, float]]:
    from math_verify import parse, verify

    rng = random.Random(0)
    cases = [ordinary(rng) for _ in range(answers)]
    rollouts = [Rollout(text, reference={"answer": ref}) for text, ref in cases]
    with ProcessPool(workers, initializer=warm_up) as pool:
        scorer, opts = MathScorer(pool), MathOptions()
        rates = {"math scorer": per_second(len(rollouts), lambda: [
            scorer.score_batch(rollouts[i:i + 64], opts) for i in range(0, len(rollouts), 64)])}
        subset = cases[: max(1, answers // 4)]
        rates["math-verify direct"] = per_second(len(subset), lambda: [
            verify(parse(f"${ref}$"), parse(text)) for text, ref in subset])
        latency = {}
        for name, text in ADVERSARIAL.items():
            started = time.perf_counter()
            scorer.score_batch([Rollout(text, reference={"answer": "17"})], opts)
            latency[name] = (time.perf_counter() - started) * 1e3
    return rates, latency


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=400)
    p.add_argument("--answers", type=int, default=2000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--warmup", type=int, default=300, help="warm-up files per worker before render and lint")
    p.add_argument("--screenshots", type=int, default=100, help="screenshots to time (0: skip)")
    p.add_argument("--react-only", action="store_true", help="skip the math section")
    args = p.parse_args(argv)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, {args.workers} workers per pool")
    react = react_section(args.files, args.workers, args.warmup, args.screenshots)
    if args.react_only:
        for name, value in react.items():
            print(f"  {name:31s} {value:9.2f} ms" if name.startswith("CPU") else f"  {name:31s} {value:9.0f} /s")
        _react_targets(react)
        print(f"load average at the end {os.getloadavg()[0]:.2f}")
        return
    math_rates, latency = math_section(args.answers, args.workers)
    for name, value in {**react, **math_rates}.items():
        print(f"  {name:31s} {value:9.2f} ms" if name.startswith("CPU") else f"  {name:31s} {value:9.0f} /s")
    print(f"  pool build / esbuild CLI      = {react['pool build'] / react['esbuild CLI per file']:5.1f}x  (target build >= 200/s)")
    print(f"  pool typecheck                = {react['pool typecheck']:5.0f}/s (target >= 50/s)")
    _react_targets(react)
    print(f"  math scorer / math-verify     = {math_rates['math scorer'] / math_rates['math-verify direct']:5.1f}x  (target >= 500/s)")
    print(f"  adversarial answers, worst    = {max(latency.values()):5.1f} ms (target < 50 ms)")
    for name, ms in latency.items():
        print(f"    {name:22s} {ms:7.2f} ms")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


def _react_targets(react: dict[str, float]) -> None:
    print(f"  pool syntax                   = {react['pool syntax']:5.0f}/s (target >= 1,500/s; "
          f"{react['pool syntax'] / react['pool syntax, esbuild path']:.2f}x esbuild's path; "
          f"{react['pool syntax, no summary']:.0f}/s with no summary)")
    print(f"  pool render                   = {react['pool render']:5.0f}/s (target >= 150/s)")
    print(f"  pool lint, oxlint             = {react['pool lint oxlint']:5.0f}/s (target >= 1,000/s; "
          f"{react['pool lint oxlint'] / react['pool lint ESLint']:.1f}x ESLint, "
          f"{react['pool lint oxlint'] / react['pool lint oxlint, summary always']:.2f}x with the summary always, "
          f"{react['pool lint oxlint'] / react['pool lint oxlint, esbuild path']:.2f}x oxlint after esbuild's path)")
    lazy, always = react["CPU ms a file, lint, no summary"], react["CPU ms a file, lint, summary always"]
    esb = react["CPU ms a file, lint, esbuild path"]
    print(f"  lint CPU a file, whole pool     = {lazy:5.2f} ms with no summary, {always:5.2f} ms with it always "
          f"({always / lazy:.2f}x), {esb:5.2f} ms on esbuild's path ({esb / lazy:.2f}x) (1,000/s on 2 cores needs <= 2.0 ms)")
    lazy, always = react["CPU ms a file, typecheck, no summary"], react["CPU ms a file, typecheck, summary always"]
    old = react["CPU ms a file, typecheck, no summary, path before"]
    print(f"  pool typecheck, no summary    = {react['pool typecheck, no summary']:5.0f}/s (target >= 400/s; "
          f"{react['pool typecheck, no summary'] / react['pool typecheck']:.2f}x with the summary always, "
          f"{react['pool typecheck, no summary'] / react['pool typecheck, no summary, path before']:.2f}x the path before); "
          f"CPU a file, whole pool {lazy:5.2f} ms, {always:5.2f} ms with the summary always, {old:5.2f} ms on the path before "
          f"({old / lazy:.2f}x) (400/s on 2 cores needs <= 5.0 ms)")
    print(f"  pool build                    = {react['pool build']:5.0f}/s ({react['pool build'] / react['pool build, path before']:.2f}x "
          f"the path before: esbuild's bundle on every file)")
    if "screenshots (1 Chromium)" in react:
        print(f"  screenshots                   = {react['screenshots (1 Chromium)']:5.1f}/s (reported)")


if __name__ == "__main__":
    main()
