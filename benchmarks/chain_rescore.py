"""Re-sample a chain run's held-out evaluation and split it by chain length (issue 22).

    python -m benchmarks.chain_rescore docs/results/chain/runs/chain-grpo-s9/checkpoint-50 --seed 9

The same completions as the trainer's evaluation of that checkpoint (its HF engine, the run's
evaluation seeds, 160 new tokens), each answer read twice: by the ``boxed`` extraction (a box,
else "answer is", else the last number) and, where nothing is boxed, as the ``math`` scorer's
default ``latex`` extraction does (math-verify on the tail). Prints, per number of steps, the
prompts, how many completions were cut off, and how many each reading calls right: a chain cut
off inside its last line (``k: x = 19 - 3``) is right by the second reading only.
"""
from __future__ import annotations

import argparse
import collections

CHAIN_EVAL = "docs/results/chain/chain/eval.jsonl"


def main(argv=None) -> None:
    import torch
    from math_verify import parse, verify
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from botgrpo.reward_server.math.extract import REGION_CHARS, extract_answer
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
    rows = collections.defaultdict(collections.Counter)
    for example, text, cut in zip(examples, batch.texts, batch.truncated.tolist()):
        answer, row = str(example.reference["answer"]), rows[len(example.reference["chain"])]
        found = extract_answer(text, "boxed")
        boxed = found is not None and found.text.strip() == answer
        tail = boxed or ("\\boxed{" not in text and bool(verify(parse(answer), parse(text[-REGION_CHARS:]))))
        row.update(prompts=1, cut_off=cut, right_boxed=boxed, right_latex=tail)
    print(f"mean completion length {float(batch.lengths.float().mean()):.3f} tokens")
    print("steps | prompts | cut off | right (boxed reading) | right (latex reading)")
    for steps in sorted(rows):
        r = rows[steps]
        print(f"{steps} | {r['prompts']} | {r['cut_off']} | {r['right_boxed']} | {r['right_latex']}")
    total = sum(rows.values(), collections.Counter())
    print(f"all | {total['prompts']} | {total['cut_off']} | {total['right_boxed']} | {total['right_latex']}")


if __name__ == "__main__":
    main()
