"""Rollout engines side by side: the trainer's HF decode loop against the vLLM engine (float32 and
bfloat16) on SmolLM2-135M-Instruct, the same chat prompts and the same completion lengths (every
row runs to ``--max-new-tokens``: the HF loop is given no stop id, vLLM ``ignore_eos``), at batch
sizes 1/8/32/64. Prints tokens/s per engine and batch and the ratio to the HF loop, all from one run.

    .venv-vllm/bin/python -m benchmarks.rollout_engines --out docs/results/rollout_engines.json

Needs vLLM's CPU build (``make vllm-env``) and the checkpoint (``make smollm2``). Each engine runs
in its own process (one in-process vLLM engine per process, as in training), one after another.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ENGINES = ("hf", "vllm-float32", "vllm-bfloat16")


def prompts(n: int) -> list:
    topics = ["a lighthouse", "a red fox", "the moon", "a city at night", "an old clock", "the sea", "a library",
              "a mountain road"]
    return [[{"role": "user", "content": f"Write a short story about {topics[i % len(topics)]} (number {i})."}]
            for i in range(n)]


def build(kind: str, path: str, eager: bool):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    if kind == "hf":
        from botgrpo.trainer.rollout.hf import HFEngine
        return HFEngine(model, tokenizer, seed=0, stop_ids=[-1])  # no stop id: every row runs to the cap
    from vllm import SamplingParams as VSampling

    from botgrpo.trainer.rollout.vllm import VLLMEngine
    engine = VLLMEngine(model, tokenizer, path, seed=0, bf16=kind.endswith("bfloat16"), sleep=False,
                        max_model_len=512, **({"enforce_eager": True} if eager else {}))
    plain = engine.sampling_params

    def fixed_length(group_size, sampling, seed):
        sp = plain(group_size, sampling, seed)
        return VSampling(n=sp.n, temperature=sp.temperature, top_p=sp.top_p, max_tokens=sp.max_tokens, logprobs=0,
                         seed=sp.seed, ignore_eos=True, detokenize=False)

    engine.sampling_params = fixed_length
    return engine


def update_seconds(model, batch: int = 8, length: int = 128, repeats: int = 2) -> float:
    """The best of ``repeats`` float32 forward+backward passes of the policy on ``batch x length``
    tokens, in the engine's process (does the update keep its threads beside vLLM?)."""
    import torch

    ids = torch.randint(0, model.config.vocab_size, (batch, length), generator=torch.Generator().manual_seed(0))
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        model(input_ids=ids, labels=ids).loss.backward()
        best = min(best, time.perf_counter() - t)
    model.zero_grad(set_to_none=True)
    return round(best, 3)


def worker(args) -> dict:
    """One engine: warm-up, then each batch size once; tokens/s of ``generate`` (weights loaded first)."""
    import torch

    from botgrpo.trainer.rollout.base import SamplingParams

    started = time.perf_counter()
    engine = build(args.worker, args.model, not args.compile)
    built = time.perf_counter() - started
    sampling = SamplingParams(max_new_tokens=args.max_new_tokens)
    engine.generate(prompts(2), 1, SamplingParams(max_new_tokens=4), seeds=[0, 1])  # warm-up (and weight load)
    rows = []
    for batch in args.batches:
        t = time.perf_counter()
        out = engine.generate(prompts(batch), 1, sampling, seeds=list(range(batch)))
        seconds = time.perf_counter() - t
        tokens = int(out.lengths.sum())
        rows.append({"batch": batch, "tokens": tokens, "seconds": round(seconds, 3),
                     "tokens_per_s": round(tokens / seconds, 1)})
        print(args.worker, rows[-1], file=sys.stderr, flush=True)
    return {"engine": args.worker, "build_seconds": round(built, 1), "torch_threads": torch.get_num_threads(),
            "update_seconds": update_seconds(engine.model),
            "env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "VLLM_CPU_OMP_THREADS_BIND",
                                                   "VLLM_CPU_KVCACHE_SPACE")},
            "rows": rows}


def main(argv=None) -> int:
    from botgrpo.trainer.models import pretrained
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=str(pretrained.default_checkpoint(pretrained.SMOLLM2)))
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32, 64])
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    p.add_argument("--compile", action="store_true", help="let vLLM compile its graph (default: eager)")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print("RESULT " + json.dumps(worker(args)), flush=True)
        return 0
    results, load = {}, {"start": os.getloadavg()}
    for kind in args.engines:
        cmd = [sys.executable, "-m", "benchmarks.rollout_engines", "--worker", kind, "--model", args.model,
               "--max-new-tokens", str(args.max_new_tokens), "--batches", *map(str, args.batches)]
        cmd += ["--compile"] if args.compile else []
        proc = subprocess.run(cmd, capture_output=True, text=True)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        if proc.returncode or not lines:
            print(proc.stderr[-4000:], file=sys.stderr)
            return 1
        results[kind] = json.loads(lines[-1][len("RESULT "):])
    load["end"] = os.getloadavg()
    hf = {r["batch"]: r["tokens_per_s"] for r in results.get("hf", {}).get("rows", [])}
    table = []
    for batch in args.batches:
        row = {"batch": batch}
        for kind, result in results.items():
            rate = next(r["tokens_per_s"] for r in result["rows"] if r["batch"] == batch)
            row[kind] = rate
            if kind != "hf" and batch in hf:
                row[f"{kind}_vs_hf"] = round(rate / hf[batch], 2)
        table.append(row)
        print(row)
    report = {"command": "python -m benchmarks.rollout_engines " + " ".join(argv if argv is not None else sys.argv[1:]),
              "model": args.model, "max_new_tokens": args.max_new_tokens, "vllm_compiled": args.compile,
              "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                          "load_average": load},
              "table": table, "engines": results}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
