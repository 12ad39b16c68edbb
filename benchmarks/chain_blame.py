"""Where do the two local signals of chain study v3 put their blame on what the policy writes?

    OMP_NUM_THREADS=1 python -m benchmarks.chain_blame [--prompts 64] [--samples 8] [--out FILE]

Samples the study's warm start on held-out chain prompts (draw seed 2, temperature 1, the v3 cap
of 224 tokens: as the trainer samples) and scores every completion with the real ``math`` scorer
twice, as the study's arms did (``cut_off_answers: refuse``): ``local: steps`` (the real signal:
blame from the first arithmetically wrong step on) and ``local: oracle`` (exactly the first line
off the reference chain). For the failures it counts how often each signal blames at all, and
where both do, whether the first blamed line is the same, earlier or later; and how often each
blames a completion that passed, and the mean share of a failure's characters each blames
(``steps`` blames from its line to the end, the oracle that one line). A failure only the oracle blames is one whose first wrong line
has arithmetic that holds on numbers that are not the chain's: the real signal cannot see it. (Issue 36: why chain v3's primary tied.)
"""
from __future__ import annotations

import argparse
import collections
import json
from typing import Optional

from benchmarks import chain_study
from botgrpo.trainer.tasks import chain

V3_CAP = 224  # docs/results/chain_v3/protocol.yaml rollout.sampling.max_new_tokens
SIGNALS = ("steps", "oracle")


def first_blamed_line(result, text: str) -> int | None:
    """The line of the first character a result blames (l < 0), or None when it blames none."""
    if result.local_default < 0:
        return 0
    starts = [span.start for span in result.local if span.score < 0 and span.end > span.start]
    return text.count("\n", 0, min(starts)) if starts else None


def blamed_share(result, text: str) -> float:
    """The share of the completion's characters a result blames: l < 0, where a character's l is
    the lowest of the spans covering it, or ``local_default`` if none does (ScoreResult)."""
    if not text:
        return 0.0
    lowest: list[float | None] = [None] * len(text)
    for span in result.local:
        for i in range(max(span.start, 0), min(span.end, len(text))):
            lowest[i] = span.score if lowest[i] is None else min(lowest[i], span.score)
    return sum((result.local_default if l is None else l) < 0 for l in lowest) / len(text)


def sample(prompts: int, samples: int, seed: int = 0) -> list[tuple[str, dict, bool]]:
    """(completion, reference, cut off) for ``samples`` completions of each held-out prompt."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(chain_study.WARM_START)
    model = AutoModelForCausalLM.from_pretrained(chain_study.WARM_START).eval()
    end, rows = tokenizer.eos_token_id, []
    for example in chain.make_examples(prompts, 2):
        ids = tokenizer(example.task.prompt, return_tensors="pt").input_ids.repeat(samples, 1)
        with torch.no_grad():
            out = model.generate(ids, do_sample=True, temperature=1.0, top_p=1.0, max_new_tokens=V3_CAP,
                                 pad_token_id=tokenizer.pad_token_id, eos_token_id=end)
        for row in out[:, ids.shape[1]:].tolist():
            rows.append((tokenizer.decode(row, skip_special_tokens=True), example.task.reference, end not in row))
    return rows


def tally(rows: list[tuple[str, dict, bool]]) -> dict:
    """Score every row under both signals and count where they blame."""
    from botgrpo.reward_server.math.equivalence import warm_up
    from botgrpo.reward_server.scorers.base import Rollout
    from botgrpo.reward_server.scorers.math import MathOptions, MathScorer
    from botgrpo.sandbox.process_pool import ProcessPool

    rollouts = [Rollout(text, reference=reference, truncated=cut) for text, reference, cut in rows]
    with ProcessPool(1, initializer=warm_up) as pool:
        scorer = MathScorer(pool)
        results = {signal: scorer.score_batch(rollouts, MathOptions(local=signal, cut_off_answers="refuse"))
                   for signal in SIGNALS}
    counts, shares = collections.Counter(), collections.defaultdict(list)
    for i, (text, _, _) in enumerate(rows):
        passed = bool(results["steps"][i].passed)
        counts["completions"] += 1
        lines = {signal: first_blamed_line(results[signal][i], text) for signal in SIGNALS}
        if passed:
            counts["passed"] += 1
            counts.update(f"passed, blamed by {signal}" for signal in SIGNALS if lines[signal] is not None)
            continue
        counts["failed"] += 1
        for signal in SIGNALS:
            shares[signal].append(blamed_share(results[signal][i], text))
        counts.update(f"failed, blamed by {signal}" for signal in SIGNALS if lines[signal] is not None)
        steps, oracle = lines["steps"], lines["oracle"]
        if steps is not None and oracle is not None:
            where = "same line" if steps == oracle else "steps later" if steps > oracle else "steps earlier"
            counts[f"failed, both blame: {where}"] += 1
    means = {f"failed, mean share of characters blamed by {signal}": round(sum(v) / len(v), 3) for signal, v in shares.items()}
    return {**counts, **means}


def main(argv: Optional[list[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--prompts", type=int, default=64, help="held-out prompts (draw seed 2)")
    p.add_argument("--samples", type=int, default=8, help="completions per prompt")
    p.add_argument("--out", default="", help="also write the counts here (JSON)")
    args = p.parse_args(argv)
    counts = {"prompts": args.prompts, "samples": args.samples, "cap": V3_CAP, **tally(sample(args.prompts, args.samples))}
    print(json.dumps(counts, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(counts, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
