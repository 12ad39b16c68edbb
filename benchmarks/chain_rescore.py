"""Re-sample a chain run's held-out evaluation and split it by chain length (issue 22).

    python -m benchmarks.chain_rescore docs/results/chain/runs/chain-grpo-s9/checkpoint-50 --seed 9

The same completions as the trainer's evaluation of that checkpoint (its HF engine, the run's
evaluation seeds, 160 new tokens), scored by the ``math`` scorer itself (``extraction: latex``,
the default; cut-off rollouts flagged as the trainer flags them) twice: with
``cut_off_answers: read`` (how the study scored) and ``refuse`` (the default since). Prints, per
number of steps, the prompts, how many completions were cut off, and how many each scoring
passes: a chain cut off inside its last line (``k: x = 19 - 3``) passes the first only.
"""
from __future__ import annotations

import argparse
import collections

CHAIN_EVAL = "docs/results/chain/chain/eval.jsonl"


def main(argv=None) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from botgrpo.reward_server.scorers.base import Rollout
    from botgrpo.reward_server.scorers.math import MathOptions, MathScorer
    from botgrpo.trainer.config import SamplingParams
    from botgrpo.trainer.evaluate import EVAL_SEED
    from botgrpo.trainer.rollout.hf import HFEngine
    from botgrpo.trainer.tasks.base import read_jsonl

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("checkpoint")
    p.add_argument("--seed", type=int, required=True, help="the run's seed (its evaluation seeds)")
    p.add_argument("--max-new-tokens", type=int, default=160)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)
    engine = HFEngine(AutoModelForCausalLM.from_pretrained(args.checkpoint).eval(), tokenizer)
    examples = read_jsonl(CHAIN_EVAL)
    batch = engine.generate([e.prompt for e in examples], 1, SamplingParams(max_new_tokens=args.max_new_tokens),
                            seeds=[EVAL_SEED + args.seed + i for i in range(len(examples))])
    rollouts = [Rollout(text, reference=e.reference, truncated=cut)
                for e, text, cut in zip(examples, batch.texts, batch.truncated.tolist())]
    scorer = MathScorer()
    passed = {mode: [r.passed for r in scorer.score_batch(rollouts, MathOptions(cut_off_answers=mode))]
              for mode in ("read", "refuse")}
    rows = collections.defaultdict(collections.Counter)
    for i, (example, rollout) in enumerate(zip(examples, rollouts)):
        rows[len(example.reference["chain"])].update(prompts=1, cut_off=rollout.truncated,
                                                     read=passed["read"][i], refuse=passed["refuse"][i])
    print(f"mean completion length {float(batch.lengths.float().mean()):.3f} tokens")
    print("steps | prompts | cut off | pass (cut_off_answers: read, as the study scored) | pass (refuse, the default)")
    for steps in sorted(rows):
        r = rows[steps]
        print(f"{steps} | {r['prompts']} | {r['cut_off']} | {r['read']} | {r['refuse']}")
    total = sum(rows.values(), collections.Counter())
    print(f"all | {total['prompts']} | {total['cut_off']} | {total['read']} | {total['refuse']}")

if __name__ == "__main__":
    main()
