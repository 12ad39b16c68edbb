"""Our trainer against TRL's ``GRPOTrainer``, step for step, on one tiny model on CPU.

Same model (a 1.05M-parameter Qwen2, hidden 128, 4 layers, built and briefly fine-tuned here),
same 32-token prompts, 8 prompts x 8 rollouts per step, up to 64 completion tokens, fp32, no
vLLM, no reference model, one optimizer pass per batch. The two trainers run in one process and
alternate (TRL step, ours, TRL, ours...), so a neighbour process slowing the machine slows both;
each step records ``os.getloadavg()`` (which counts our own busy threads too).

Two workloads:

* ``fixed``: EOS is never sampled (TRL: ``min_new_tokens=64``; ours: an engine that masks the
  EOS logit), so every completion is exactly 64 tokens;
* ``variable``: completions stop at EOS. The model is fine-tuned on completions of random length
  so its lengths spread widely; here our engine drops finished rows from the decode batch while
  ``transformers.generate`` keeps decoding them.

Rewards are a trivial deterministic token-level score (1 for a token with a digit in it) and
cost nothing on either side: TRL gets each completion's mean, ours gets the token scores from an
in-process stand-in for the reward server (no HTTP), so the numbers compare the trainers.

    .venv-bench/bin/python -m benchmarks.trainer_vs_trl --steps 6 --threads 1 2
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

PROMPTS_PER_STEP, GROUP, MAX_NEW, PROMPT_TOKENS = 8, 8, 64, 32
WORKLOADS = ("fixed", "variable")


# --------------------------------------------------------------------------- model, prompts, reward
def build_model(work: Path) -> tuple[str, list[str]]:
    """The tiny policy and 64 prompts of exactly ``PROMPT_TOKENS`` tokens.

    The policy is fine-tuned for a few seconds on completions of 1-40 random numbers, so
    sampling stops at EOS after widely varying lengths (a random init almost never emits it).
    """
    from trainer.sft import build_tiny_policy, sft
    from trainer.tasks import arith

    rng = random.Random(0)
    corpus = [p + c for p, c in arith.make_sft_corpus(400, 0)]
    model_dir = build_tiny_policy(corpus, work / "model", hidden=128, layers=4, heads=4, kv_heads=2,
                                  intermediate=512, vocab_size=512)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    prompts = exact_length_prompts(tokenizer, [t.prompt for t in arith.make_prompts(2000, 1)], 64, rng)
    pairs = [(rng.choice(prompts), " ".join(str(rng.randint(0, 999)) for _ in range(rng.randint(1, 40))))
             for _ in range(2000)]
    sft(model_dir, pairs, max_steps=150, max_seconds=90, batch_size=16, lr=3e-3)
    return str(model_dir), prompts


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


# --------------------------------------------------------------------------- TRL side
def make_trl(model_dir: str, prompts: list[str], workload: str, out: Path, callback):
    """A ``GRPOTrainer`` that reports each step's completion tokens to ``callback.tokens``."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.padding_side = "left"

    def digit_share(completion_ids, **_):
        scores = [digit_token_scores(tokenizer, ids) for ids in completion_ids]
        return [sum(s) / max(1, len(s)) for s in scores]

    class CountingGRPOTrainer(GRPOTrainer):
        def _generate_and_score_completions(self, inputs):
            output = super()._generate_and_score_completions(inputs)
            callback.tokens = int(output["completion_mask"].sum())
            return output

    args = GRPOConfig(
        output_dir=str(out), per_device_train_batch_size=PROMPTS_PER_STEP * GROUP, gradient_accumulation_steps=1,
        num_generations=GROUP, max_completion_length=MAX_NEW, max_steps=10_000, temperature=1.0, top_p=1.0, top_k=0,
        generation_kwargs={"min_new_tokens": MAX_NEW} if workload == "fixed" else None, beta=0.0, num_iterations=1,
        learning_rate=1e-6, bf16=False, use_cpu=True, use_vllm=False, activation_checkpointing=False,
        logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True, seed=0)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="sdpa")
    trainer = CountingGRPOTrainer(model=model, reward_funcs=digit_share, args=args, processing_class=tokenizer,
                                  train_dataset=Dataset.from_dict({"prompt": prompts}), callbacks=[callback])
    trainer.remove_callback(PrinterCallback)  # its per-step log dicts would bury the results
    return trainer


# --------------------------------------------------------------------------- our side
class InProcessRewards:
    """Stands in for ``trainer.rewards.RewardSource``: the digit score per token, no server."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def submit(self, batch, references) -> Future:
        from trainer.rewards import ScoredBatch

        started = time.perf_counter()
        mask = batch.completion_mask
        rewards = torch.zeros(mask.shape)
        for i, n in enumerate(batch.lengths.tolist()):
            rewards[i, :n] = torch.tensor(digit_token_scores(self.tokenizer, batch.completion_ids[i, :n]))
        seq = rewards.sum(1) / mask.sum(1).clamp_min(1)
        nan = torch.full((mask.shape[0],), float("nan"))
        future: Future = Future()
        scored = torch.ones(mask.shape[0], dtype=torch.bool)
        future.set_result(ScoredBatch(rewards, seq, nan, nan, scored, time.perf_counter() - started))
        return future

    def close(self) -> None:
        pass


def make_ours(model_dir: str, prompts: list[str], workload: str, out: Path):
    from trainer.config import TrainConfig
    from trainer.loop import Trainer
    from transformers import AutoTokenizer
    from trainer.rollout.hf import HFEngine

    class NoEosEngine(HFEngine):
        """Never samples EOS, so every completion runs to ``max_new_tokens`` (TRL's ``min_new_tokens``)."""

        def _record(self, t, logits, *args):
            logits[:, self.eos_id] = float("-inf")
            return super()._record(t, logits, *args)

    class BenchTrainer(Trainer):
        def _engine(self, synced):
            engine = NoEosEngine if workload == "fixed" else HFEngine
            return engine(self.model, self.tokenizer, seed=self.cfg.seed, everyone_finished=synced)

    dataset = out / "prompts.jsonl"
    dataset.parent.mkdir(parents=True, exist_ok=True)
    dataset.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))
    cfg = TrainConfig(model=model_dir, dataset=str(dataset), output_dir=str(out), task="bench",
                      method="bot_grpo", group_size=GROUP,
                      prompts_per_step=PROMPTS_PER_STEP, sampling={"max_new_tokens": MAX_NEW}, micro_batch_size=64,
                      lr=1e-6, steps=10_000, distributed="none", tensorboard=False, plot=False, progress=False)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    return BenchTrainer(cfg, reward_source=InProcessRewards(tokenizer))


# --------------------------------------------------------------------------- alternation
def alternate(model_dir: str, prompts: list[str], workload: str, steps: int, work: Path) -> dict[str, list[dict]]:
    """``steps + 1`` steps of each trainer, interleaved; the first of each is warm-up (dropped)."""
    from transformers import TrainerCallback

    ours = make_ours(model_dir, prompts, workload, work / f"ours-{workload}")
    records: dict[str, list[dict]] = {"trl": [], "ours": []}

    class Interleave(TrainerCallback):
        """After each TRL optimizer step, record it and run one step of ours."""

        tokens = 0
        mark = 0.0

        def on_step_begin(self, args, state, control, **kw):
            if not self.mark:
                self.mark = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            now = time.perf_counter()
            records["trl"].append({"seconds": now - self.mark, "tokens": self.tokens, "load": os.getloadavg()[0]})
            started = time.perf_counter()
            step = ours.train_step()
            records["ours"].append({"seconds": time.perf_counter() - started, "tokens": round(
                step["completion_len_mean"] * PROMPTS_PER_STEP * GROUP), "load": os.getloadavg()[0],
                "generate": step["time_generate"], "train": step["time_train"]})
            control.should_training_stop = state.global_step >= steps + 1
            self.mark = time.perf_counter()

    try:
        make_trl(model_dir, prompts, workload, work / f"trl-{workload}", Interleave()).train()
    finally:
        ours.close()
    return {name: rows[1:] for name, rows in records.items()}


def summary(rows: list[dict]) -> dict[str, float]:
    seconds = statistics.median(r["seconds"] for r in rows)
    tokens = statistics.median(r["tokens"] for r in rows)
    out = {"s_per_step": seconds, "tokens_per_step": tokens, "tokens_per_s": tokens / seconds,
           "load": statistics.median(r["load"] for r in rows)}
    for key in ("generate", "train"):
        if key in rows[0]:
            out[f"{key}_s"] = statistics.median(r[key] for r in rows)
    return out


def report(threads: int, workload: str, trl: dict, ours: dict) -> None:
    print(f"threads={threads} {workload:>8}: "
          f"TRL {trl['s_per_step']:.2f} s/step {trl['tokens_per_s']:.0f} tok/s ({trl['tokens_per_step']:.0f} tok) | "
          f"ours {ours['s_per_step']:.2f} s/step {ours['tokens_per_s']:.0f} tok/s ({ours['tokens_per_step']:.0f} tok; "
          f"gen {ours['generate_s']:.2f} + train {ours['train_s']:.2f}) | "
          f"ours faster x{trl['s_per_step'] / ours['s_per_step']:.2f} per step, "
          f"x{ours['tokens_per_s'] / trl['tokens_per_s']:.2f} tok/s | load {trl['load']:.2f}/{ours['load']:.2f}",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6, help="measured steps per trainer (after one warm-up step)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts to measure")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--json", help="write every step's record and the summaries here")
    args = parser.parse_args()

    import transformers
    import trl

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    results = []
    with tempfile.TemporaryDirectory(prefix="trainer_vs_trl-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        model_dir, prompts = build_model(work)
        print(f"torch {torch.__version__}, transformers {transformers.__version__}, trl {trl.__version__}; "
              f"model built and fine-tuned in {time.perf_counter() - started:.0f}s; "
              f"{PROMPTS_PER_STEP}x{GROUP} rollouts of <= {MAX_NEW} tokens, prompts {PROMPT_TOKENS} tokens", flush=True)
        for threads in args.threads:
            for workload in args.workloads:
                torch.set_num_threads(threads)
                torch.manual_seed(0)
                rows = alternate(model_dir, prompts, workload, args.steps, work / f"t{threads}")
                trl_s, ours_s = summary(rows["trl"]), summary(rows["ours"])
                report(threads, workload, trl_s, ours_s)
                results.append({"threads": threads, "workload": workload, "trl": trl_s, "ours": ours_s, "steps": rows})
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
