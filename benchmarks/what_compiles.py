"""What a policy's compiling completions are: the component the prompt named, another one, or a
fragment that declares none.

    python -m benchmarks.what_compiles PROMPTS.jsonl MODEL_DIR [MODEL_DIR ...] [--n 256] [--out FILE.json]

The convergence study's headline is held-out *compile* rate, and a lone JSX line such as
``<img src="/kiwi.png" alt="fig" />`` compiles as a TSX module. Its spec check fails (the
outcome is then 0, the same as a compiling component that misses the spec), so the reward
does not prefer it; the compile rate counts it all the same. This samples one completion per
prompt from each policy (pure sampling, as RL samples), scores it at ``build`` with the spec,
and sorts the compiling ones by the spec check's verdict on the component's name.
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Optional

KINDS = ("meets the spec", "the named component, off spec", "another component", "no component (a fragment)")


def kind_of(passed: bool, violations: list[str]) -> Optional[str]:
    """The kind of a compiling completion from its spec violations; None when it does not compile."""
    if not passed:
        return None
    named = [v for v in violations if v.startswith("expected a component named")]
    if not violations:
        return KINDS[0]
    if not named:
        return KINDS[1]
    return KINDS[3] if named[0].endswith("found none") else KINDS[2]


def measure(model: Path, tasks: list[dict], scorer, max_new_tokens: int, threads: int) -> dict:
    from botgrpo.reward_server.scorers.base import Rollout
    from botgrpo.reward_server.scorers.react import ReactOptions
    from botgrpo.trainer.models.sft import sample_completions

    started = time.perf_counter()
    completions = sample_completions(model, [t["prompt"] for t in tasks], max_new_tokens=max_new_tokens, threads=threads)
    results = scorer.score_batch([Rollout(c, t["prompt"], t["reference"]) for c, t in zip(completions, tasks)],
                                 ReactOptions(level="build", spec_weight=0.5))
    kinds = Counter(kind_of(r.passed, r.details.get("spec_violations") or []) for r in results)
    n = len(tasks)
    return {"model": str(model), "n": n, "compile_rate": sum(r.passed for r in results) / n,
            "kinds": {k: kinds[k] / n for k in KINDS},
            "mean_chars": sum(map(len, completions)) / n, "seconds": round(time.perf_counter() - started, 1)}


def main(argv: Optional[list[str]] = None) -> None:
    from botgrpo.reward_server.scorers.react import ReactScorer

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("prompts", type=Path, help="JSONL of tasks (prompt, reference with spec), e.g. the study's eval.jsonl")
    p.add_argument("models", type=Path, nargs="+")
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--max-new-tokens", type=int, default=320, help="the React study's budget")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    tasks = [json.loads(line) for line in args.prompts.read_text().splitlines() if line.strip()][:args.n]
    scorer = ReactScorer(pool_size=1)
    try:
        rows = []
        for model in args.models:
            rows.append(measure(model, tasks, scorer, args.max_new_tokens, args.threads))
            kinds = ", ".join(f"{k} {v:.0%}" for k, v in rows[-1]["kinds"].items())
            print(f"{model}: compiles {rows[-1]['compile_rate']:.0%} ({kinds})", flush=True)
    finally:
        scorer.close()
    if args.out:
        args.out.write_text(json.dumps({"prompts": str(args.prompts), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
