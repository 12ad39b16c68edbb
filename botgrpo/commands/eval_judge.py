"""``botgrpo eval --judge URL``: the LLM judge's view of a checkpoint.

    botgrpo eval --model runs/a/checkpoint-60 --dataset eval.jsonl --judge http://localhost:8001/v1 \\
        --against runs/b/checkpoint-60        # A's pairwise win rate over B, both orders
    botgrpo eval --model runs/a/checkpoint-60 --dataset eval.jsonl --judge http://localhost:8001/v1
                                              # the mean judge grade (1-10) of A's components

The judge is any OpenAI-compatible chat endpoint (vLLM's server, a hosted API);
``--judge-model`` names the model it serves, ``BOTGRPO_JUDGE_API_KEY`` its key.
"""
from __future__ import annotations

import argparse
import json
import os


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("judge (an OpenAI-compatible chat endpoint)")
    group.add_argument("--judge", metavar="URL", default=None,
                       help="judge the outputs at this endpoint (e.g. http://localhost:8001/v1) instead of scoring them")
    group.add_argument("--against", metavar="CHECKPOINT", default=None,
                       help="with --judge: the second checkpoint; reports --model's pairwise win rate over it")
    group.add_argument("--judge-model", default=os.environ.get("BOTGRPO_JUDGE_MODEL", "judge"),
                       help="model name the judge endpoint serves")
    group.add_argument("--judge-timeout", type=float, default=60.0, help="seconds per judge request")
    group.add_argument("--judge-concurrency", type=int, default=8, help="judge requests in flight")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from botgrpo.reward_server.judge.client import JudgeClient, JudgeConfig
    from botgrpo import judge_eval
    from botgrpo.trainer.data import load_examples
    from botgrpo.trainer.rollout.base import SamplingParams

    examples = load_examples(args.dataset, args.prompt_column, args.reference_column)[: args.prompts]
    sampling = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p)
    config = JudgeConfig(url=args.judge, model=args.judge_model, api_key=os.environ.get("BOTGRPO_JUDGE_API_KEY"),
                         timeout_s=args.judge_timeout)
    client = JudgeClient(config)
    prompts = [e.prompt for e in examples]
    try:
        outputs_a = judge_eval.generate(args.model, examples, sampling, args.seed, args.apply_chat_template)
        if args.against:
            outputs_b = judge_eval.generate(args.against, examples, sampling, args.seed, args.apply_chat_template)
            results = judge_eval.pairwise(client, prompts, outputs_a, outputs_b, args.judge_concurrency)
            title = f"judge: {args.model} against {args.against}, {results['prompts']} prompts x 2 orders"
        else:
            results = judge_eval.pointwise(client, prompts, outputs_a, args.judge_concurrency)
            title = f"judge: {args.model}, {results['prompts']} prompts"
    finally:
        client.close()
    results = {"model": args.model, "against": args.against, "dataset": args.dataset, "judge": args.judge,
               "judge_model": args.judge_model, **results}
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in results.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            table.add_row(key, f"{value:.3f}" if isinstance(value, float) else str(value))
    Console().print(table)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return 0
