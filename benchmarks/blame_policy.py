"""Where a React local signal blames a policy's own failures: at the mistake, or at the close?

    python -m benchmarks.blame_policy MODEL_DIR PROMPTS.jsonl [--n 128] [--out FILE.json]

Samples one completion per prompt from the policy (pure sampling, as RL samples), scores each at
``build`` with the spec mixed in, once per local signal, and reports per signal, over the
failing completions that have a located blame (not no-code or truncated output, which are
blamed throughout): the share blamed on the component's **last closing tag or after it** (its
outer close), the share of the code blamed, and the commonest first errors.

Why it matters: a mismatched closing tag is reported where the parser notices it, the outer
close, not at the tag left open. A signal that blames the close pushes down closing the
component, and in a group whose rollouts all fail that is the only gradient there is (the
convergence replication, docs/results/convergence/replication).
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Optional

from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer
from botgrpo.reward_server.spans import char_scores

SIGNALS = ("first_error", "first_cause", "oracle")


def blamed_at_close(completion: str, code_span: Optional[list[int]], blamed) -> bool:
    """Whether any blamed character lies on or after the code's last closing tag."""
    start, end = code_span or (0, len(completion))
    last_close = completion.rfind("</", start, end)
    return last_close >= 0 and bool(blamed[last_close:].any())


def summarise(texts: list[str], results) -> dict:
    rows, first_errors = [], Counter()
    for text, result in zip(texts, results):
        blamed = char_scores(result.local, result.local_default, len(text)) < 0
        if result.passed or blamed.all() or not blamed.any():
            continue
        span = result.details.get("code_span")
        code_chars = (span[1] - span[0]) if span else len(text)
        rows.append((blamed_at_close(text, span, blamed), float(blamed.sum()) / max(code_chars, 1)))
        errors = result.details.get("errors") or []
        first_errors[errors[0]["message"].split(" tag ")[0] if errors else "(spec only)"] += 1
    n = len(rows)
    return {"failures": n, "at_close": sum(r[0] for r in rows) / n if n else None,
            "blamed_share": sum(r[1] for r in rows) / n if n else None,
            "first_errors": first_errors.most_common(5)}


def main(argv: Optional[list[str]] = None) -> None:
    from botgrpo.trainer.models.sft import sample_completions

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model", type=Path)
    p.add_argument("prompts", type=Path, help="task jsonl: prompt and reference per line")
    p.add_argument("--n", type=int, default=128)
    p.add_argument("--max-new-tokens", type=int, default=320)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    started = time.perf_counter()
    rows = [json.loads(line) for line in args.prompts.read_text().splitlines()[: args.n]]
    texts = sample_completions(args.model, [r["prompt"] for r in rows], max_new_tokens=args.max_new_tokens, seed=0)
    rollouts = [Rollout(t, r["prompt"], r.get("reference")) for t, r in zip(texts, rows)]
    scorer = ReactScorer(pool_size=2)
    try:
        table = {name: summarise(texts, scorer.score_batch(rollouts, ReactOptions(level="build", spec_weight=0.5,
                                                                                  local=name)))
                 for name in SIGNALS}
    finally:
        scorer.close()
    print(f"{len(texts)} completions of {args.model}\n")
    print("| signal | failures with a located blame | blamed on the outer close | share of the code blamed |")
    print("| --- | --- | --- | --- |")
    for name, row in table.items():
        print(f"| `{name}` | {row['failures']} | {row['at_close']:.0%} | {row['blamed_share']:.1%} |")
    print(f"\ncommonest first errors: {table['first_error']['first_errors']}")
    seconds = time.perf_counter() - started
    print(f"\n{seconds:.0f} s")
    if args.out:
        args.out.write_text(json.dumps({"model": str(args.model), "n": len(texts), "seconds": seconds,
                                        "signals": table}, indent=1))


if __name__ == "__main__":
    main()
