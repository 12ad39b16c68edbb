"""GPU check, prepared for one run on a lent accelerator (the device tool; H200 here):

    python -m benchmarks.gpu_check [--steps 3] [--prompts 8 --group 8 --new-tokens 256]

A random-init Qwen2-architecture model of about 0.5B parameters (Qwen2.5-0.5B's shape) in
bf16 with the transformers engine: per training step, generation and update time, completion
tokens per second, peak GPU memory and model FLOPs utilisation; then the advantage benchmark
on the GPU. Writes ``gpu_check.json`` to ``--out``. No tokenizer or hub access needed: prompts
are random token ids.

MFU counts 2·N FLOPs per generated token and 6·N per trained token (N = parameters, attention
FLOPs ignored), against the bf16 dense peak given by ``--peak-tflops``.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from types import SimpleNamespace

import torch


def build_model(device: str):
    from transformers import AutoModelForCausalLM, Qwen2Config

    config = Qwen2Config(vocab_size=151_936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=4096,
                         tie_word_embeddings=True, eos_token_id=151_643, pad_token_id=151_643)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, torch_dtype=torch.bfloat16).to(device)
    model.gradient_checkpointing_enable()
    return model


def main(argv=None) -> None:
    from benchmarks.advantages import main as advantage_bench
    from botgrpo.settings import AlgorithmSettings
    from trainer.distributed import Dist
    from trainer.policy import pack
    from trainer.rollout.base import SamplingParams
    from trainer.rollout.hf import HFEngine
    from trainer.update import UpdateBatch, policy_update

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--prompt-tokens", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=256)
    p.add_argument("--peak-tflops", type=float, default=989.0, help="bf16 dense peak of the GPU (H100/H200 SXM)")
    p.add_argument("--out", type=Path, default=Path("."))
    args = p.parse_args(argv)
    device = "cuda"
    model = build_model(device)
    params = sum(t.numel() for t in model.parameters())
    tokenizer = SimpleNamespace(eos_token_id=model.config.eos_token_id, pad_token_id=model.config.pad_token_id)
    engine = HFEngine(model, tokenizer)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    sampling = SamplingParams(max_new_tokens=args.new_tokens)
    algo = AlgorithmSettings()
    gen = torch.Generator().manual_seed(0)
    steps = []
    for step in range(args.steps + 1):  # step 0 warms up kernels and the allocator
        prompts = [torch.randint(0, 50_000, (args.prompt_tokens,), generator=gen).tolist() for _ in range(args.prompts)]
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        ids, _, lengths = engine.sample_ids(prompts, args.group, sampling, seeds=[step * 1000 + j for j in range(args.prompts)])
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        mask = torch.arange(ids.shape[1])[None, :] < lengths[:, None]
        inputs = pack(prompts, ids, mask, args.group, tokenizer.pad_token_id)
        advantages = torch.randn(mask.shape) * mask
        policy_update(model, optimizer, UpdateBatch(*inputs, mask, advantages), algo, temperature=1.0,
                      micro_batch_size=16, num_iterations=1, max_grad_norm=1.0, norm_len=args.new_tokens,
                      d=Dist(), bf16=True)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        generated, trained = int(lengths.sum()), int(mask.sum()) + args.prompt_tokens * ids.shape[0]
        if step:
            steps.append({"generate_s": t1 - t0, "train_s": t2 - t1, "step_s": t2 - t0,
                          "completion_tokens_per_s": generated / (t2 - t0),
                          "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30,
                          "mfu_generate": 2 * params * generated / (t1 - t0) / (args.peak_tflops * 1e12),
                          "mfu_train": 6 * params * trained / (t2 - t1) / (args.peak_tflops * 1e12)})
            print({k: round(v, 4) for k, v in steps[-1].items()}, flush=True)
    print("advantage benchmark on the GPU:")
    advantages_ms = advantage_bench(["--device", device])
    result = {"gpu": torch.cuda.get_device_name(), "parameters": params, "settings": vars(args) | {"out": str(args.out)},
              "steps": steps, "advantages_ms": {k: v * 1e3 for k, v in advantages_ms.items()}}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_check.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
