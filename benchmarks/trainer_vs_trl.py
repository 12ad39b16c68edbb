"""Our trainer against TRL's ``GRPOTrainer``, step for step, on one tiny model on CPU.

Same model (a 1.05M-parameter Qwen2, hidden 128, 4 layers, built and briefly fine-tuned here),
same 32-token prompts, 8 prompts x 8 rollouts per step, fp32, no vLLM, no reference model, one
optimizer pass per batch. The systems run in one process and alternate (TRL step, then one step
of each of our configurations, TRL, ours...), so a neighbour process slowing the machine slows
all of them; each step records ``os.getloadavg()`` (which counts our own busy threads too).
Each of ours is compared with TRL twice: the ratio of the median step times, and the paired
ratio (the median over rounds of TRL's step time over ours in the same round).

Workloads (``--workloads``):

* ``fixed``: EOS is never sampled (TRL: ``min_new_tokens=64``; ours: an engine that masks the
  EOS logit), so every completion is exactly 64 tokens;
* ``variable``: completions stop at EOS, up to 64 tokens. The model is fine-tuned on completions
  of 1-40 random numbers, so its lengths spread widely;
* ``long_tail``: up to 256 tokens, from a model fine-tuned on completions whose number count is
  log-normal (median 8 numbers, a few past 80), as reasoning models' lengths are heavy-tailed:
  most rollouts are short, each batch's longest is several times the median. The measured
  length quantiles are reported;
* ``slow_scorer``: the ``variable`` model with a scorer that takes 1 s per batch (a judge model,
  a render), ours on-policy and with ``async_steps: 1``, beside the same configurations with
  the instant scorer. Ours on-policy twice: with the group-streamed update (the default: each
  group's backward as soon as it is scored) and with ``streamed_update: false`` (the batch waits
  for all its scores, then updates). The 1 s scorer answers rollout by rollout, in submission
  order, evenly over the second (a FIFO scorer at a constant rate), as the server's stream does.

Ours runs with its defaults (packed update); on ``variable`` and ``long_tail`` also with
``packing: false`` (rows padded to the longest, as before), to show what packing contributes.

Rewards are a trivial deterministic token-level score (1 for a token with a digit in it): TRL
gets each completion's mean, ours gets the token scores from an in-process stand-in for the
reward server (no HTTP). The 1 s scorer sleeps inside TRL's reward function; for ours its last
result comes 1 s after submission *counted on the submitting trainer's own clock*, which runs
only while that trainer is inside its step: the alternation must not let the other systems' steps
hide an asynchronous trainer's scoring (our async steps return with the next batch's scores still
on the way).

``--ours-only`` runs our configurations alone, alternating among themselves (no TRL import:
for a machine without ``.venv-bench``); the TRL rows and ratios are then absent.

Peak memory: after the timed steps, one more step of each system, before which freed heap
memory is handed back to the OS (``malloc_trim``) and the kernel's peak-RSS mark is reset
(``/proc/self/clear_refs``); the step's peak RSS above its starting RSS is reported (CPU; all
systems share the process, so the number is what the step itself adds).

    .venv-bench/bin/python -m benchmarks.trainer_vs_trl --steps 8 --threads 1 2 \\
        --workloads fixed variable long_tail slow_scorer --json docs/results/trainer_vs_trl.json

Each thread count is a separate pass over the workloads. On a machine whose cores are already
busy, ``--threads 2`` oversubscribes them and both trainers' steps grow several-fold (measured
on 2 cores beside a 2-process job: 33 s/step for TRL's fixed workload against 3.7 s with one
thread); measure with ``--threads 1`` there. Building the models takes a few minutes (most of
it the ``long_tail`` fine-tune, capped at 300 s); ``--models DIR`` keeps them in ``DIR`` and
reuses them on the next run. ``--json`` is rewritten after every workload.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import statistics
import tempfile
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

PROMPTS_PER_STEP, GROUP, PROMPT_TOKENS = 8, 8, 32
WORKLOADS = ("fixed", "variable", "long_tail", "slow_scorer")
SLOW_SCORER_SECONDS = 1.0


@dataclass
class Workload:
    model: str                      # which fine-tuned model: "variable" or "long_tail"
    max_new: int
    no_eos: bool = False
    trl_scorer_seconds: float = 0.0
    ours: dict[str, dict] = field(default_factory=dict)   # name -> {packing, async_steps, scorer_seconds}


SPECS = {
    "fixed": Workload("variable", 64, no_eos=True, ours={"ours": {}}),
    "variable": Workload("variable", 64, ours={"ours": {}, "ours padded": {"packing": False}}),
    "long_tail": Workload("long_tail", 256, ours={"ours": {}, "ours padded": {"packing": False}}),
    "slow_scorer": Workload("variable", 64, trl_scorer_seconds=SLOW_SCORER_SECONDS, ours={
        "ours, instant scorer": {},
        "ours, 1 s scorer": {"scorer_seconds": SLOW_SCORER_SECONDS},
        "ours, 1 s scorer, batch update": {"scorer_seconds": SLOW_SCORER_SECONDS, "streamed_update": False},
        "ours async, instant scorer": {"async_steps": 1},
        "ours async, 1 s scorer": {"async_steps": 1, "scorer_seconds": SLOW_SCORER_SECONDS}}),
}


# --------------------------------------------------------------------------- model, prompts, reward
def numbers(rng: random.Random, count: int) -> str:
    return " ".join(str(rng.randint(0, 999)) for _ in range(count))


def long_tail_count(rng: random.Random) -> int:
    """Log-normal number count: median 8, 90th percentile about 29, 99th about 82 (capped at 120)."""
    return max(1, min(120, round(rng.lognormvariate(2.08, 1.0))))


SFT_RUNS = {  # kind -> (pairs, max_steps, max_seconds)
    "variable": (2000, 150, 90),
    "long_tail": (4000, 300, 300),
}


def build_models(work: Path, kinds: set[str]) -> tuple[dict[str, str], list[str]]:
    """The tiny policies (one per length distribution, same tokenizer) and 64 prompts of exactly
    ``PROMPT_TOKENS`` tokens. A model already built in ``work`` (``--models``) is reused, so a
    rerun does not spend minutes fine-tuning; the prompts are drawn again, identically."""
    dirs: dict[str, str] = {}
    prompts: list[str] = []
    for kind in sorted(kinds):
        model_dir = work / f"model-{kind}"
        if not (model_dir / BUILT).exists():
            build_model(model_dir, kind)
        prompts = draw_prompts(model_dir, random.Random(0))
        dirs[kind] = str(model_dir)
    return dirs, prompts


BUILT = "bench-built"  # written last: a model directory without it was interrupted


def draw_prompts(model_dir: Path, rng: random.Random) -> list[str]:
    from transformers import AutoTokenizer

    from botgrpo.trainer.tasks import arith

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    return exact_length_prompts(tokenizer, [t.prompt for t in arith.make_prompts(2000, 1)], 64, rng)


def build_model(model_dir: Path, kind: str) -> None:
    """A random init almost never emits EOS, so each policy is fine-tuned for a few seconds (a
    few minutes for ``long_tail``) on completions of the lengths it should produce."""
    from botgrpo.trainer.models.sft import build_tiny_policy, sft
    from botgrpo.trainer.tasks import arith

    corpus = [p + c for p, c in arith.make_sft_corpus(400, 0)]
    build_tiny_policy(corpus, model_dir, hidden=128, layers=4, heads=4, kv_heads=2, intermediate=512, vocab_size=512)
    rng = random.Random(0)
    prompts = draw_prompts(model_dir, rng)
    count = (lambda: rng.randint(1, 40)) if kind == "variable" else (lambda: long_tail_count(rng))
    n_pairs, max_steps, max_seconds = SFT_RUNS[kind]
    pairs = [(rng.choice(prompts), numbers(rng, count())) for _ in range(n_pairs)]
    started = time.perf_counter()
    metrics = sft(model_dir, pairs, max_steps=max_steps, max_seconds=max_seconds, batch_size=16, lr=3e-3)
    print(f"{kind} model: {metrics.steps} fine-tuning steps in {time.perf_counter() - started:.0f}s", flush=True)
    (model_dir / BUILT).write_text("")


def exact_length_prompts(tokenizer, lines: list[str], n: int, rng: random.Random) -> list[str]:
    """``n`` distinct prompts of exactly ``PROMPT_TOKENS`` tokens, each a few task lines joined:
    equal lengths keep both trainers' tensor shapes identical from step to step."""
    found: list[str] = []
    for _ in range(200_000):
        text = "".join(rng.sample(lines, rng.randint(1, 3)))
        if len(tokenizer(text)["input_ids"]) == PROMPT_TOKENS and text not in found:
            found.append(text)
            if len(found) == n:
                return found
    raise RuntimeError(f"found only {len(found)} prompts of {PROMPT_TOKENS} tokens")


def digit_token_scores(tokenizer, ids) -> list[float]:
    """1.0 for each token whose text contains a digit, else 0.0."""
    return [float(any(ch.isdigit() for ch in tokenizer.decode([int(t)]))) for t in ids]


# --------------------------------------------------------------------------- memory
_libc = ctypes.CDLL("libc.so.6") if os.path.exists("/proc/self/clear_refs") else None


def memory_mark() -> float:
    """Hand freed heap memory back, reset the peak-RSS mark; returns the RSS now (MiB)."""
    if _libc is None:
        return float("nan")
    _libc.malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status("VmRSS")


def memory_peak(start: float) -> float:
    return _status("VmHWM") - start if _libc is not None else float("nan")


def _status(key: str) -> float:
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


# --------------------------------------------------------------------------- TRL side
def make_trl(model_dir: str, prompts: list[str], spec: Workload, out: Path, callback):
    """A ``GRPOTrainer`` that reports each step's completion tokens to ``callback.tokens``."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.padding_side = "left"

    def digit_share(completion_ids, **_):
        if spec.trl_scorer_seconds:
            time.sleep(spec.trl_scorer_seconds)
        scores = [digit_token_scores(tokenizer, ids) for ids in completion_ids]
        return [sum(s) / max(1, len(s)) for s in scores]

    class CountingGRPOTrainer(GRPOTrainer):
        def _generate_and_score_completions(self, inputs):
            output = super()._generate_and_score_completions(inputs)
            callback.tokens = int(output["completion_mask"].sum())
            callback.lengths = output["completion_mask"].sum(1).tolist()
            return output

    args = GRPOConfig(
        output_dir=str(out), per_device_train_batch_size=PROMPTS_PER_STEP * GROUP, gradient_accumulation_steps=1,
        num_generations=GROUP, max_completion_length=spec.max_new, max_steps=10_000, temperature=1.0, top_p=1.0,
        top_k=0, generation_kwargs={"min_new_tokens": spec.max_new} if spec.no_eos else None, beta=0.0,
        num_iterations=1, learning_rate=1e-6, bf16=False, use_cpu=True, use_vllm=False,
        activation_checkpointing=False, logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True,
        seed=0)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="sdpa")
    trainer = CountingGRPOTrainer(model=model, reward_funcs=digit_share, args=args, processing_class=tokenizer,
                                  train_dataset=Dataset.from_dict({"prompt": prompts}), callbacks=[callback])
    trainer.remove_callback(PrinterCallback)  # its per-step log dicts would bury the results
    return trainer


# --------------------------------------------------------------------------- our side
class OwnClock:
    """Seconds a trainer has spent inside its own steps (stopped between them)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._total, self._since = 0.0, None

    def start(self) -> None:
        with self._cond:
            self._since = time.perf_counter()
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._total += time.perf_counter() - self._since
            self._since = None

    def now(self) -> float:
        with self._cond:
            return self._total + (time.perf_counter() - self._since if self._since is not None else 0.0)

    def wait_until(self, target: float) -> None:
        with self._cond:
            while True:
                now = self._total + (time.perf_counter() - self._since if self._since is not None else 0.0)
                if now >= target:
                    return
                self._cond.wait(timeout=(target - now) if self._since is not None else None)


class InProcessRewards:
    """Stands in for ``botgrpo.trainer.rewards.RewardSource``: the digit score per token, no server,
    streamed rollout by rollout (:class:`botgrpo.trainer.rewards.StreamedScores`); with ``seconds``,
    rollout k of B answers ``seconds * (k + 1) / B`` of the trainer's own time after submission
    (in order, evenly: the whole batch takes ``seconds``), else all at once."""

    def __init__(self, tokenizer, seconds: float = 0.0, clock: OwnClock | None = None):
        self.tokenizer, self.seconds, self.clock = tokenizer, seconds, clock
        self.lengths: list[list[int]] = []  # each submitted batch's completion lengths

    def submit(self, batch, references) -> Future:
        from botgrpo.services.schemas import Result
        from botgrpo.trainer.rewards import StreamedScores

        self.lengths.append(batch.lengths.tolist())
        mask = batch.completion_mask
        results = []
        for i, n in enumerate(batch.lengths.tolist()):
            scores = digit_token_scores(self.tokenizer, batch.completion_ids[i, :n])
            results.append(Result(id=str(i), index=i, score=sum(scores) / max(1, n), token_scores=scores))
        future = StreamedScores(mask, getattr(batch, "group_size", 1))
        if not self.seconds:
            for i, result in enumerate(results):
                future.deliver(i, result)
            return future
        start, B = self.clock.now(), len(results)

        def answer():
            for i, result in enumerate(results):
                self.clock.wait_until(start + self.seconds * (i + 1) / B)
                future.deliver(i, result)

        threading.Thread(target=answer, daemon=True, name="slow-scorer").start()
        return future

    def close(self) -> None:
        pass


def make_ours(model_dir: str, prompts: list[str], spec: Workload, out: Path, options: dict):
    from transformers import AutoTokenizer

    from botgrpo.trainer.config import TrainConfig
    from botgrpo.trainer.run.loop import Trainer
    from botgrpo.trainer.rollout.hf import HFEngine

    class NoEosEngine(HFEngine):
        """Never samples EOS, so every completion runs to ``max_new_tokens`` (TRL's ``min_new_tokens``)."""

        def _record(self, t, logits, *args):
            logits[:, self.eos_id] = float("-inf")
            return super()._record(t, logits, *args)

    class BenchTrainer(Trainer):
        hf_engine_class = NoEosEngine if spec.no_eos else HFEngine

    dataset = out / "prompts.jsonl"
    dataset.parent.mkdir(parents=True, exist_ok=True)
    dataset.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))
    cfg = TrainConfig(
        model=model_dir, output_dir=str(out), steps=10_000, distributed="none", data={"dataset": str(dataset)},
        algorithm={"method": "bot_grpo"},
        rollout={"group_size": GROUP, "prompts_per_step": PROMPTS_PER_STEP, "sampling": {"max_new_tokens": spec.max_new},
                 "async_steps": options.get("async_steps", 0)},
        reward={"task": "bench"},
        optim={"micro_batch_size": 64, "lr": 1e-6, "packing": options.get("packing", True),
               "streamed_update": options.get("streamed_update", True)},
        log={"tensorboard": False, "plot": False, "progress": False})
    clock = OwnClock()
    rewards = InProcessRewards(AutoTokenizer.from_pretrained(model_dir), options.get("scorer_seconds", 0.0), clock)
    return BenchTrainer(cfg, reward_source=rewards), clock


def _quantiles(lengths: list[int]) -> dict[str, float]:
    ordered = sorted(lengths)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"len_p50": pick(0.5), "len_p90": pick(0.9), "len_max": ordered[-1], "len_mean": sum(ordered) / len(ordered)}


# --------------------------------------------------------------------------- alternation
def alternate(model_dir: str, prompts: list[str], spec: Workload, steps: int, work: Path) -> dict[str, list[dict]]:
    """``steps + 1`` timed rounds (the first is warm-up, dropped), then one round measuring peak
    memory; in each round TRL's step, then one step of each of our configurations."""
    from transformers import TrainerCallback

    ours = {name: make_ours(model_dir, prompts, spec, work / f"ours-{i}", options)
            for i, (name, options) in enumerate(spec.ours.items())}
    records: dict[str, list[dict]] = {"trl": [], **{name: [] for name in ours}}
    memory: dict[str, float] = {}

    class Interleave(TrainerCallback):
        """After each TRL optimizer step, record it and run one step of each of ours."""

        tokens, lengths, mark, rss = 0, [], 0.0, 0.0
        rounds = 0

        def _start(self):
            self.measuring = self.rounds == steps + 1
            self.rss = memory_mark() if self.measuring else 0.0
            self.mark = time.perf_counter()

        def on_step_begin(self, args, state, control, **kw):
            if not self.mark:
                self._start()

        def on_step_end(self, args, state, control, **kw):
            now = time.perf_counter()
            if self.measuring:
                memory["trl"] = memory_peak(self.rss)
            else:
                records["trl"].append({"seconds": now - self.mark, "tokens": self.tokens, "load": os.getloadavg()[0],
                                       **_quantiles(self.lengths)})
            our_round(ours, records, memory, self.measuring)
            self.rounds += 1
            control.should_training_stop = self.rounds > steps + 1
            self._start()

    trl = make_trl(model_dir, prompts, spec, work / "trl", Interleave())
    try:
        trl.train()
    finally:
        for trainer, _ in ours.values():
            trainer.close()
    out = {name: rows[1:] for name, rows in records.items()}
    for name, rows in out.items():
        for row in rows:
            row["peak_memory_mib"] = memory.get(name, float("nan"))
    return out


def our_round(ours: dict, records: dict[str, list[dict]], memory: dict[str, float], measuring: bool) -> None:
    """One step of each of our configurations: its record, or (``measuring``) its peak memory."""
    for name, (trainer, clock) in ours.items():
        rss = memory_mark() if measuring else 0.0
        started = time.perf_counter()
        clock.start()
        step = trainer.train_step()
        clock.stop()
        seconds = time.perf_counter() - started
        if measuring:
            memory[name] = memory_peak(rss)
            continue
        lengths = trainer.rewards.lengths[-1]  # the batch last sampled (async: the next step's)
        records[name].append({
            "seconds": seconds, "tokens": round(step["completion_len_mean"] * PROMPTS_PER_STEP * GROUP),
            "load": os.getloadavg()[0], "generate": step["time_generate"], "train": step["time_train"],
            "score_wait": step["time_score_wait"], "generate_wait": step["time_generate_wait"],
            "staleness": step["staleness"], "early_groups": step.get("update_early_groups", 0), **_quantiles(lengths)})


def alternate_ours(model_dir: str, prompts: list[str], spec: Workload, steps: int, work: Path) -> dict[str, list[dict]]:
    """:func:`alternate` without TRL: ``steps + 1`` rounds of one step of each of ours (the first
    dropped), then the memory round."""
    ours = {name: make_ours(model_dir, prompts, spec, work / f"ours-{i}", options)
            for i, (name, options) in enumerate(spec.ours.items())}
    records: dict[str, list[dict]] = {name: [] for name in ours}
    memory: dict[str, float] = {}
    try:
        for _ in range(steps + 1):
            our_round(ours, records, memory, measuring=False)
        our_round(ours, records, memory, measuring=True)
    finally:
        for trainer, _ in ours.values():
            trainer.close()
    out = {name: rows[1:] for name, rows in records.items()}
    for name, rows in out.items():
        for row in rows:
            row["peak_memory_mib"] = memory.get(name, float("nan"))
    return out


def streaming_summary(spec: Workload, summaries: dict[str, dict]) -> dict[str, float]:
    """The slow-scorer workload's question: what the on-policy step costs beyond the update alone.
    ``update_alone``: the instant-scorer step (generate + update, nothing to wait for; batch
    update); each slow-scorer on-policy step against it, and its part after generation (scoring +
    update) against the instant step's update time."""
    def find(slow: bool, streamed: bool):
        for name, o in spec.ours.items():
            if (not o.get("async_steps") and bool(o.get("scorer_seconds")) == slow
                    and o.get("streamed_update", True) == streamed):
                return summaries.get(name)
        return None

    base = find(False, False) or find(False, True)
    if base is None:
        return {}
    out = {"update_alone_s_per_step": base["s_per_step"], "update_alone_train_s": base["train_s"]}
    for streamed, key in ((True, "streamed"), (False, "batch")):
        if (s := find(True, streamed)) is not None:
            out[f"{key}_s_per_step"] = s["s_per_step"]
            out[f"{key}_step_vs_update_alone"] = s["s_per_step"] / base["s_per_step"]
            out[f"{key}_after_generate_s"] = s["s_per_step"] - s["generate_s"]
            out[f"{key}_after_generate_vs_train_alone"] = (s["s_per_step"] - s["generate_s"]) / base["train_s"]
    return out


def with_scorer_seconds(spec: Workload, seconds: float) -> Workload:
    """``spec`` with its slow scorer taking ``seconds`` (labels say so): e.g. as long as the update
    takes on this machine, which the fixed 1 s is not on a loaded one."""
    if not spec.trl_scorer_seconds:
        return spec
    ours = {name.replace(f"{SLOW_SCORER_SECONDS:g} s", f"{seconds:g} s"):
            {**o, "scorer_seconds": seconds} if o.get("scorer_seconds") else o for name, o in spec.ours.items()}
    return Workload(spec.model, spec.max_new, spec.no_eos, seconds, ours)


def summary(rows: list[dict]) -> dict[str, float]:
    out = {"s_per_step": statistics.median(r["seconds"] for r in rows),
           "tokens_per_step": statistics.median(r["tokens"] for r in rows),
           "load": statistics.median(r["load"] for r in rows), "peak_memory_mib": rows[0]["peak_memory_mib"]}
    out["tokens_per_s"] = out["tokens_per_step"] / out["s_per_step"]
    for key in ("generate", "train", "score_wait", "generate_wait", "len_p50", "len_p90", "len_max", "len_mean"):
        if key in rows[0]:
            out[key if key.startswith("len") else f"{key}_s"] = statistics.median(r[key] for r in rows)
    if "staleness" in rows[0]:
        out["staleness_max"] = max(r["staleness"] for r in rows)
    return out


def summaries_of(rows: dict[str, list[dict]]) -> dict[str, dict]:
    """Each system's summary; ours also with ``vs_trl_paired``, the median over rounds of TRL's
    step time over ours in the same round. Neighbouring load drifts over seconds, so a round's
    two steps see about the same machine; the paired ratio cancels that drift better than the
    ratio of the two medians (both are reported)."""
    out = {name: summary(r) for name, r in rows.items()}
    for name, r in rows.items():
        if name != "trl" and "trl" in rows:
            out[name]["vs_trl_paired"] = paired_ratio(rows["trl"], r)
    return out


def paired_ratio(trl: list[dict], ours: list[dict]) -> float:
    return statistics.median(a["seconds"] / b["seconds"] for a, b in zip(trl, ours, strict=True))


def report(threads: int, workload: str, summaries: dict[str, dict]) -> None:
    trl = summaries.get("trl")
    if trl is not None:
        print(f"threads={threads} {workload}: TRL {trl['s_per_step']:.2f} s/step, {trl['tokens_per_step']:.0f} tok, "
              f"lengths p50/p90/max {trl.get('len_p50', 0):.0f}/{trl.get('len_p90', 0):.0f}/{trl.get('len_max', 0):.0f}, "
              f"peak +{trl['peak_memory_mib']:.0f} MiB | load {trl['load']:.2f}", flush=True)
    else:
        print(f"threads={threads} {workload} (ours only)", flush=True)
    for name, s in summaries.items():
        if name == "trl":
            continue
        versus = f" | load {s['load']:.2f}"
        if trl is not None:
            versus = (f" | vs TRL x{trl['s_per_step'] / s['s_per_step']:.2f} per step "
                      f"(paired x{s['vs_trl_paired']:.2f}), x{s['tokens_per_s'] / trl['tokens_per_s']:.2f} tok/s")
        print(f"    {name:32s} {s['s_per_step']:.2f} s/step (gen {s['generate_s']:.2f} + train {s['train_s']:.2f}; "
              f"score wait {s['score_wait_s']:.2f}, gen wait {s['generate_wait_s']:.2f}; "
              f"staleness <= {s['staleness_max']}) {s['tokens_per_step']:.0f} tok, peak +{s['peak_memory_mib']:.0f} MiB"
              + versus, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6, help="measured steps per system (after one warm-up step)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts to measure")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--json", help="write every step's record and the summaries here")
    parser.add_argument("--models", help="build the models in this directory, or reuse those built there before "
                                         "(default: a temporary directory)")
    parser.add_argument("--ours-only", action="store_true", help="our configurations alone (no TRL installed)")
    parser.add_argument("--scorer-seconds", type=float, default=SLOW_SCORER_SECONDS,
                        help="the slow scorer's seconds per batch (slow_scorer workload)")
    parser.add_argument("--ours", nargs="+", help="only our configurations with these names (after --scorer-seconds "
                                                  "relabels them)")
    args = parser.parse_args()

    import transformers
    trl = None if args.ours_only else __import__("trl")

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    results = []
    with tempfile.TemporaryDirectory(prefix="trainer_vs_trl-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        models, prompts = build_models(Path(args.models) if args.models else work,
                                       {SPECS[w].model for w in args.workloads})
        print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
              f"trl {trl.__version__ if trl else 'not run'}; "
              f"models built and fine-tuned in {time.perf_counter() - started:.0f}s; "
              f"{PROMPTS_PER_STEP}x{GROUP} rollouts per step, prompts {PROMPT_TOKENS} tokens; "
              f"{time.strftime('%Y-%m-%d %H:%M %Z')}", flush=True)
        for threads in args.threads:
            for workload in args.workloads:
                spec = with_scorer_seconds(SPECS[workload], args.scorer_seconds)
                if args.ours:
                    spec = Workload(spec.model, spec.max_new, spec.no_eos, spec.trl_scorer_seconds,
                                    {n: o for n, o in spec.ours.items() if n in args.ours})
                torch.set_num_threads(threads)
                torch.manual_seed(0)
                run = alternate_ours if args.ours_only else alternate
                rows = run(models[spec.model], prompts, spec, args.steps, work / f"t{threads}-{workload}")
                summaries = summaries_of(rows)
                report(threads, workload, summaries)
                result = {"threads": threads, "workload": workload, "max_new_tokens": spec.max_new,
                          "scorer_seconds": spec.trl_scorer_seconds, "load_before": os.getloadavg(),
                          "summaries": summaries, "steps": rows}
                if workload == "slow_scorer":
                    result["streaming"] = streaming_summary(spec, summaries)
                    print("    streaming: " + ", ".join(f"{k} {v:.2f}" for k, v in result["streaming"].items()),
                          flush=True)
                results.append(result)
                if args.json:  # after every workload: a run stopped early keeps what it measured
                    Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
