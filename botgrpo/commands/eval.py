"""``botgrpo eval``: compile rate per level (react) or pass@k (math) of a policy on held-out prompts.

    botgrpo eval --model runs/x/checkpoint-100 --dataset eval.jsonl --task react --levels syntax build typecheck
    botgrpo eval --model runs/y/checkpoint-100 --dataset aime.jsonl --task math --samples 8 --k 1 4 8

Results go to stdout as a table and, with ``--out``, to a JSON file.
"""
from __future__ import annotations

import argparse
import json
from contextlib import ExitStack
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="local causal LM (a checkpoint directory)")
    parser.add_argument("--dataset", required=True, help="JSONL/Parquet/datasets dir of prompts and references")
    parser.add_argument("--task", default="react")
    parser.add_argument("--levels", nargs="+", default=None, help="react compile levels (default: syntax build typecheck)")
    parser.add_argument("--samples", type=int, default=1, help="completions per prompt")
    parser.add_argument("--k", type=int, nargs="+", default=[1], help="pass@k to report (k <= samples)")
    parser.add_argument("--prompts", type=int, default=None, help="evaluate the first N prompts only")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--apply-chat-template", action="store_true", default=None,
                        help="text prompts become a user message of the tokenizer's chat template "
                             "(conversational prompts always get it)")
    parser.add_argument("--prompt-column", default="prompt")
    parser.add_argument("--reference-column", default="reference")
    parser.add_argument("--reward-url", help="reward server (default: an embedded one)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    from botgrpo.commands import eval_judge
    eval_judge.add_arguments(parser)  # --judge URL [--against CHECKPOINT]


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table
    from transformers import AutoTokenizer

    from botgrpo.trainer.data import load_examples
    from botgrpo.trainer.evaluate import evaluate
    from botgrpo.trainer.models.precision import load_causal_lm
    from botgrpo.trainer.run.progress import tracker
    from botgrpo.embedded import EmbeddedServer
    from botgrpo.trainer.rewards import RewardSource
    from botgrpo.trainer.rollout.base import SamplingParams
    from botgrpo.trainer.rollout.hf import HFEngine
    from botgrpo.trainer.rollout.prompts import PromptEncoder

    if args.judge:
        from botgrpo.commands import eval_judge
        return eval_judge.run(args)
    if max(args.k) > args.samples:
        raise SystemExit(f"botgrpo eval: pass@{max(args.k)} needs --samples >= {max(args.k)}")
    from botgrpo.reward_server.scorers import scorer_class
    levels = args.levels or list(getattr(scorer_class(args.task), "eval_levels", (None,)))  # the scorer's own
    examples = load_examples(args.dataset, args.prompt_column, args.reference_column)[: args.prompts]
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    encoder = PromptEncoder(tokenizer, args.apply_chat_template)
    encoder.check([e.prompt for e in examples])
    device = "cuda" if __import__("torch").cuda.is_available() else "cpu"
    # the trainer's numerics and end tokens (the generation config's), so eval samples as training did
    engine = HFEngine(load_causal_lm(args.model, device).eval(), tokenizer, seed=args.seed, encoder=encoder)
    sampling = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p)
    with ExitStack() as stack:
        url = args.reward_url or stack.enter_context(EmbeddedServer()).url
        source = RewardSource(url, args.task)
        stack.callback(source.close)
        results = evaluate(engine, source, examples, sampling, samples=args.samples, ks=args.k, levels=levels,
                           seed=args.seed, track=tracker())  # sampling: a phase; each level: prompts scored
    results = {"model": args.model, "dataset": args.dataset, "task": args.task, **results}
    table = Table(title=f"{args.task}: {results['prompts']} prompts x {args.samples} samples")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in results.items():
        if isinstance(value, float):
            table.add_row(key, f"{value:.3f}")
    Console().print(table)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return 0
