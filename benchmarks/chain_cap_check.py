"""Does the chain study's token cap hold what the warm start writes? (issue 36, chain study v3)

    OMP_NUM_THREADS=1 python -m benchmarks.chain_cap_check --cap 224 --samples 8

Samples the committed warm start on the held-out chain prompts (seed 2) at temperature 1, as the
trainer does, and prints how many completions the cap cut off (no end token), the longest, and
whole-chain success by chain length (a cap that cuts long chains shows as success falling to 0
at 11-12 steps).
"""
from __future__ import annotations

import argparse
import json
from typing import Optional

from benchmarks import chain_study
from botgrpo.trainer.tasks import chain


def check(cap: int, samples: int, prompts: int = 128, seed: int = 0) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(chain_study.WARM_START)
    model = AutoModelForCausalLM.from_pretrained(chain_study.WARM_START).eval()
    end, cut, lengths, by_steps = tokenizer.eos_token_id, 0, [], {}
    for example in chain.make_examples(prompts, 2):
        ids = tokenizer(example.task.prompt, return_tensors="pt").input_ids.repeat(samples, 1)
        with torch.no_grad():
            out = model.generate(ids, do_sample=True, temperature=1.0, top_p=1.0, max_new_tokens=cap,
                                 pad_token_id=tokenizer.pad_token_id, eos_token_id=end)
        for row in out[:, ids.shape[1]:].tolist():
            cut += end not in row
            lengths.append(row.index(end) + 1 if end in row else len(row))
            right = chain.first_wrong_step(example.chain, tokenizer.decode(row, skip_special_tokens=True)) is None
            passed, seen = by_steps.get(len(example.operations), (0, 0))
            by_steps[len(example.operations)] = (passed + right, seen + 1)
    n = len(lengths)
    return {"cap": cap, "samples": n, "cut_off": cut, "longest": max(lengths),
            "chain_success": sum(p for p, _ in by_steps.values()) / n,
            "success_by_steps": {k: round(p / s, 3) for k, (p, s) in sorted(by_steps.items())}}


def main(argv: Optional[list[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cap", type=int, default=224)
    p.add_argument("--samples", type=int, default=8, help="completions per held-out prompt")
    args = p.parse_args(argv)
    print(json.dumps(check(args.cap, args.samples)))


if __name__ == "__main__":
    main()
