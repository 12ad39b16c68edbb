"""SmolLM2-135M-Instruct's base rate on chat step chains (:mod:`botgrpo.trainer.tasks.chat_chain`).

Samples ``prompts x samples`` held-out completions with HF transformers (CPU, the chat template,
temperature and token cap as the protocol's), scores them with the real ``math`` scorer under each
local signal, and prints / appends one JSON record per difficulty variant:

* ``pass_rate``: the scorer's outcome (whole chain, boxed or stated answer);
* ``mixed_groups``: the share of prompts whose ``samples`` completions hold both a right and a
  wrong one (a GRPO group with a non-zero advantage);
* ``blame_agreement``: among completions that ``steps`` and an oracle both blame, the share whose
  first blamed line is the same line; with ``only_steps`` / ``only_oracle``: blamed by one alone;
* ``right_blamed``: per signal, how many passing completions it still puts blame on (a right
  answer written off the reference's layout, for the line-exact oracle);
* ``right_written``: of the passing completions, how many write no step at all (no ``a op b = c``
  anywhere: a bare answer) and how many hold every step of the reference chain.

    nice -n 15 .venv/bin/python -m benchmarks.smollm2_chain_base --name v1 --min-steps 3 --max-steps 4 \\
        --prompts 128 --out docs/results/smollm2_chain/base_rate.json
"""
from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import asdict
from pathlib import Path

from botgrpo.trainer.tasks import chat_chain

SIGNALS = ("steps", "oracle")
STEP = re.compile(r"\d+\s*[-+*]\s*\d+\s*=\s*\d+")  # a written step, anywhere in a line


def generate(model_dir: str, questions: list[str], samples: int, temperature: float, max_new_tokens: int,
             seed: int, batch: int, dtype: str = "float32") -> list[tuple[str, bool]]:
    """``samples`` completions of each question (question-major): ``(text, cut off by the cap)``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    tok = AutoTokenizer.from_pretrained(model_dir)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=getattr(torch, dtype)).eval()
    texts = [tok.apply_chat_template([{"role": "user", "content": q}], tokenize=False, add_generation_prompt=True)
             for q in questions for _ in range(samples)]
    out = []
    for i in range(0, len(texts), batch):
        enc = tok(texts[i:i + batch], return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            gen = model.generate(**enc, do_sample=True, temperature=temperature, top_p=1.0, top_k=0,
                                 max_new_tokens=max_new_tokens, pad_token_id=tok.pad_token_id or tok.eos_token_id)
        for row in gen[:, enc["input_ids"].shape[1]:]:
            ids = row.tolist()
            ended = tok.eos_token_id in ids
            if ended:
                ids = ids[:ids.index(tok.eos_token_id)]
            out.append((tok.decode(ids, skip_special_tokens=True), not ended))
        print(f"  generated {len(out)}/{len(texts)}", flush=True)
    return out


def first_blamed_line(completion: str, local) -> int | None:
    spans = [s for s in local if s.score < 0]
    return None if not spans else completion.count("\n", 0, min(s.start for s in spans))


def score(tasks, completions, samples: int) -> dict:
    from botgrpo.reward_server.scorers.base import Rollout
    from botgrpo.reward_server.scorers.math import MathOptions, MathScorer

    rollouts = [Rollout(text, reference=tasks[i // samples].reference, truncated=cut)
                for i, (text, cut) in enumerate(completions)]
    scorer = MathScorer()
    results = {signal: scorer.score_batch(rollouts, MathOptions(extraction="boxed", local=signal)) for signal in SIGNALS}
    passed = [bool(r.passed) for r in results["steps"]]
    groups = [passed[i:i + samples] for i in range(0, len(passed), samples)]
    lines = {signal: [first_blamed_line(ro.completion, r.local) for ro, r in zip(rollouts, rs)]
             for signal, rs in results.items()}
    record = {"pass_rate": sum(passed) / len(passed),
              "mixed_groups": sum(0 < sum(g) < len(g) for g in groups) / len(groups),
              "all_right_groups": sum(all(g) for g in groups) / len(groups),
              "cut_off": sum(cut for _, cut in completions) / len(completions),
              "boxed": sum(r.details.get("method") == "boxed" for r in results["steps"]) / len(passed),
              "right_blamed": {signal: sum(ok and line is not None for ok, line in zip(passed, lines[signal]))
                               for signal in SIGNALS},
              "right_written": {
                  "no step": sum(ok and not STEP.search(ro.completion) for ok, ro in zip(passed, rollouts)),
                  "the whole reference chain": sum(ok and all(step in ro.completion for step in ro.reference["chain"])
                                                   for ok, ro in zip(passed, rollouts))}}
    for signal in lines:
        if signal == "steps":
            continue
        both = [(a, b) for a, b in zip(lines["steps"], lines[signal]) if a is not None and b is not None]
        record[f"steps_vs_{signal}"] = {
            "both_blame": len(both), "same_line": sum(a == b for a, b in both) / max(1, len(both)),
            "only_steps": sum(a is not None and b is None for a, b in zip(lines["steps"], lines[signal])),
            "only_oracle": sum(a is None and b is not None for a, b in zip(lines["steps"], lines[signal]))}
    return record


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--name", required=True)
    p.add_argument("--model", default=str(Path.home() / ".cache/botgrpo/models/smollm2-135m-instruct"))
    p.add_argument("--min-steps", type=int, default=3)
    p.add_argument("--max-steps", type=int, default=4)
    p.add_argument("--max-operand", type=int, default=10)
    p.add_argument("--max-factor", type=int, default=3)
    p.add_argument("--operators", default="+-*")
    p.add_argument("--prompts", type=int, default=128)
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", default="float32", help="float32 (bfloat16 has no fast path on an AVX2-only CPU)")
    p.add_argument("--warm-steps", type=int, help="measure the warm start of this many SFT steps "
                   "(benchmarks.smollm2_chain.warm_start; built from --model when missing)")
    p.add_argument("--warm-broken-share", type=float, default=0.5, help="the warm start's corpus share with one slip")
    p.add_argument("--out", help="append the record to this JSON list")
    p.add_argument("--dump", help="write every completion and its verdict here (JSONL)")
    args = p.parse_args(argv)
    difficulty = chat_chain.Difficulty(args.min_steps, args.max_steps, args.max_operand, args.max_factor,
                                       operators=tuple(args.operators))
    tasks = chat_chain.make_prompts(args.prompts, chat_chain.EVAL_SEED, difficulty)
    warm = None
    if args.warm_steps:
        from benchmarks.smollm2_chain import WarmRecipe, warm_start
        warm = WarmRecipe(steps=args.warm_steps, broken_share=args.warm_broken_share)
        args.model = str(warm_start(difficulty, warm, base=Path(args.model)))
    began = time.time()
    completions = generate(args.model, [t.prompt.strip() for t in tasks], args.samples, args.temperature,
                           args.max_new_tokens, args.seed, args.batch, args.dtype)
    seconds = time.time() - began
    if args.dump:
        with open(args.dump, "w") as f:
            for i, (text, cut) in enumerate(completions):
                f.write(json.dumps({"prompt": tasks[i // args.samples].prompt, "completion": text, "cut": cut}) + "\n")
    record = {"name": args.name, **({"warm_start": asdict(warm)} if warm else {}),
              "difficulty": {**asdict(difficulty), "operators": "".join(difficulty.operators)},
              "example_prompt": tasks[0].prompt, "prompts": args.prompts, "samples": args.samples, "temperature": args.temperature,
              "max_new_tokens": args.max_new_tokens, "dtype": args.dtype, "eval_seed": chat_chain.EVAL_SEED,
              "generate_seconds": round(seconds, 1), **score(tasks, completions, args.samples)}
    print(json.dumps(record, indent=1))
    if args.out:
        path = Path(args.out)
        records = json.loads(path.read_text()) if path.exists() else []
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps([*records, record], indent=1) + "\n")


if __name__ == "__main__":
    main()
