"""Can token credit pay at all? The step-chain study, with a positive control (issue 22).

The third version (issue 36) is a ``botgrpo compare`` protocol, ``docs/results/chain_v3/protocol.yaml``,
whose task code is :func:`setup` here; the commands below run the second (v2), as it was registered.

    python -m benchmarks.chain_study --warm-only                    # build the warm start, print its accuracy
    python -m benchmarks.chain_study --pilot --rows grpo            # pilot seeds (100+), never the study's
    python -m benchmarks.chain_study --rows grpo 'bot_grpo oracle' 'bot_grpo w_s=0.0'   # the positive control
    python -m benchmarks.chain_study                                 # every row on the study seeds
    python -m benchmarks.chain_study --report                        # tables from finished runs

Task: :mod:`botgrpo.trainer.tasks.chain` (8-12 running-arithmetic steps, first wrong step known
exactly), scored by the ``math`` scorer: outcome = the boxed answer equals the chain's value
(held-out pass rate = whole-chain success), local signal ``steps`` (the real one: first locally
wrong step onwards) or ``oracle`` (exactly the first line that differs from the reference chain).
The warm start is trained on worked chains of which a share carry one mistake, so it is right on
most steps but few whole chains. The protocol (rows, metric, threshold, budget, seeds, test) is
``docs/results/chain/protocol.md``, committed before the study's runs; this module only runs it.
Machinery (resumable runs, warm-start fingerprints, tables, exact paired tests) is
:mod:`benchmarks.convergence`'s.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Optional

from benchmarks import convergence as conv
from botgrpo.trainer.tasks import chain
from botgrpo.trainer.tasks.base import write_jsonl

# The warm start (set on the pilots, see protocol.md): corpus share with one mistake, SFT steps.
BROKEN_SHARE = 0.75
WARM_STEPS = 3000
# sft's default 5e-3 left the operand lookup unlearned (the operation's held-out loss flat at 1.1 nats
# a token over 600 steps, almost no step right after 1,600); at 1e-3 it fell to 0.37 by step 700
# (benchmarks.chain_sft_roles, docs/results/chain/README.md)
WARM_LR = 1e-3
PROFILE_EVERY, PROFILE_PROMPTS = 500, 32   # the warm start's held-out profile while it trains
CORPUS = 6000
MAX_NEW_TOKENS = 160
PILOT_SEEDS = tuple(range(100, 110))
STUDY_SEEDS = tuple(range(10))
# RL settings fixed on the pilots (protocol.md): every row uses them. GRPO at lr 1e-3 collapsed on
# pilot seed 100, at 3e-4 on seed 101 (after step 15); at 1e-4 it rose on both.
RL = {"rollout.group_size": 8, "rollout.prompts_per_step": 4, "optim.lr": 1e-4}  # dotted TrainConfig names
# the committed warm start (docs/results/chain/chain/): the study refuses any other
WARM_FINGERPRINT = "d0363fbbbabcd13c"

BUDGET = conv.Budget(seeds=len(STUDY_SEEDS), steps=50, eval_every=5, eval_prompts=128,
                     threshold={"chain": 0.55}, sft_steps=0, arith_sft_steps=WARM_STEPS)

ROWS: tuple[tuple[str, str, dict, dict], ...] = (   # (label, method, scorer options, config); control first
    ("grpo", "grpo", {}, {}),
    ("bot_grpo oracle", "bot_grpo", {"local": "oracle"}, {}),
    ("bot_grpo w_s=0.0", "bot_grpo", {"local_weight": 0.0}, {}),
    ("bot_grpo", "bot_grpo", {}, {}),
    ("grpo token-mean", "grpo_token_mean", {}, {}),
    ("bot_grpo_paper", "bot_grpo_paper", {}, {}),
    # the outcome normalised as GRPO does, the local term in its own bag (PASS-style)
    ("decoupled", "decoupled", {}, {}),
    # PRIME's baseline: the bag's leave-one-out mean without the std (ablates BoT-GRPO's std)
    ("prime", "prime", {}, {}),
    ("pure", "pure", {}, {}),
)


def load_tokenizer(model_dir):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(model_dir)


def chain_setup(root: Path, budget: conv.Budget, threads: int | None = None) -> dict[str, str]:
    """Train and held-out chain prompts and the tiny warm-started policy (shared by every run)."""
    from botgrpo.trainer.models.sft import build_tiny_policy, sft

    warm = root / "chain" / f"warm-{WARM_STEPS}-lr{WARM_LR:g}-b{BROKEN_SHARE}"
    paths = {"model": str(warm / "model"), "dataset": str(root / "chain" / "train.jsonl"),
             "eval_dataset": str(root / "chain" / "eval.jsonl")}
    write_jsonl(paths["dataset"], chain.make_prompts(2000, 1))
    write_jsonl(paths["eval_dataset"], chain.make_prompts(budget.eval_prompts, 2))
    if not (warm / "done.json").exists():
        pairs = chain.make_sft_corpus(CORPUS, 0, broken_share=BROKEN_SHARE)
        build_tiny_policy([p + c for p, c in pairs], warm / "model", seed=0, vocab_size=600)
        tokenizer, probe = load_tokenizer(warm / "model"), chain.make_prompts(PROFILE_PROMPTS, 3)
        log_path = warm / "profile-log.jsonl"
        log_path.unlink(missing_ok=True)

        def profile(step: int, model) -> None:   # the warm start's accuracy as it trains (prompts of seed 3)
            line = json.dumps({"step": step, **warm_profile(model, tokenizer, probe, samples=4)})
            print(line, flush=True)
            with log_path.open("a") as f:
                f.write(line + "\n")

        metrics = sft(warm / "model", pairs, max_steps=WARM_STEPS, max_seconds=None, seed=0, lr=WARM_LR,
                      threads=threads, log=lambda text: print(text, flush=True), every=PROFILE_EVERY,
                      on_every=profile)
        (warm / "done.json").write_text(json.dumps({"steps": metrics.steps, "last_loss": metrics.last_loss}))
    return paths


PLOTS = (   # (file stem, title, rows): the positive control first, then every estimator on the real signal
    ("control", "chain: the positive control (exact first-wrong-step blame)",
     ("grpo", "bot_grpo oracle", "bot_grpo w_s=0.0", "bot_grpo")),
    ("estimators", "chain: estimators on the real local signal, against both GRPOs",
     ("grpo", "grpo token-mean", "bot_grpo", "bot_grpo_paper", "decoupled", "prime", "pure")),
)
# cut_off_answers "read": the scorer as the study ran it (chains cut off inside their last line could
# pass; refused by default since, README.md "What the study found wrong with itself")
conv.SETTINGS["chain"] = conv.Setting(chain_setup, {"local": "steps", "cut_off_answers": "read"}, MAX_NEW_TOKENS, (),
                                      scorer="math", plots=PLOTS)


# --------------------------------------------------------------------------- v3 (issue 36)
# The third study is a `botgrpo compare` protocol (docs/results/chain_v3/protocol.yaml); this is its
# task code. Same task and warm start as v2, held-out prompts of seed 2 and training prompts of
# seed 1 as before; the cap now fits every chain (tests/test_chain_task.py measures it).
WARM_START = Path(__file__).resolve().parents[1] / "docs/results/chain/chain" / \
    f"warm-{WARM_STEPS}-lr{WARM_LR:g}-b{BROKEN_SHARE}" / "model"


def setup(root: Path, train_prompts: int = 2000, eval_prompts: int = 128) -> dict[str, object]:
    """``botgrpo compare``'s setup hook (``setup: benchmarks.chain_study:setup``): chain prompts
    under ``root`` and the committed warm start, refused unless it is the one every chain study
    started from (:data:`WARM_FINGERPRINT`). Idempotent: the prompts are seeded."""
    found = conv.fingerprint(str(WARM_START))
    if found != WARM_FINGERPRINT:
        raise SystemExit(f"{WARM_START}: warm start {found}, the protocol's is {WARM_FINGERPRINT}: "
                         "restore docs/results/chain/chain/ from git")
    root = Path(root)
    train, held_out = root / "train.jsonl", root / "eval.jsonl"
    write_jsonl(str(train), chain.make_prompts(train_prompts, 1))
    write_jsonl(str(held_out), chain.make_prompts(eval_prompts, 2))
    return {"model": str(WARM_START), "data": {"dataset": str(train)}, "eval": {"dataset": str(held_out)}}


def warm_profile(model, tokenizer, tasks, samples: int = 4, seed: int = 0) -> dict:
    """The policy's held-out profile at temperature 1 (as the trainer samples): whole-chain
    success, per-step accuracy (steps up to and including the first wrong one), the share of
    failures with exactly one line off the chain, and the share of groups of ``samples`` that
    fail entirely."""
    import torch

    torch.manual_seed(seed)
    ok = steps_right = steps_seen = one_off = failed = all_fail = 0
    for task in tasks:
        ids = tokenizer(task.prompt, return_tensors="pt").input_ids.repeat(samples, 1)
        with torch.no_grad():
            out = model.generate(ids, do_sample=True, temperature=1.0, top_p=1.0, max_new_tokens=MAX_NEW_TOKENS,
                                 pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
        group_ok = 0
        for row in out[:, ids.shape[1]:]:
            text = tokenizer.decode(row, skip_special_tokens=True)
            reference = task.reference["chain"]
            first = chain.first_wrong_step(reference, text)
            lines = [chain._squash(x) for x in text.split("\n")]
            wrong = sum(i >= len(lines) or lines[i] != chain._squash(r) for i, r in enumerate(reference))
            if first is None:
                ok += 1
                group_ok += 1
            else:
                failed += 1
                one_off += wrong <= 1
            seen = len(reference) if first is None else min(first + 1, len(reference))
            steps_seen += seen
            steps_right += seen - (first is not None and first < len(reference))
        all_fail += group_ok == 0
    n = len(tasks) * samples
    return {"chain_success": ok / n, "step_accuracy": steps_right / max(steps_seen, 1),
            "failures_one_line_off": one_off / max(failed, 1), "groups_all_fail": all_fail / len(tasks),
            "samples": n, "group_size": samples}


def check_warm_start(root: Path, budget: conv.Budget) -> None:
    """The study starts from the committed warm start only (protocol.md)."""
    found = conv.fingerprint(chain_setup(root, budget)["model"])
    if found != WARM_FINGERPRINT:
        raise SystemExit(f"{root}: warm start {found}, the protocol's is {WARM_FINGERPRINT}: "
                         "restore docs/results/chain/chain/ from git")


def plan(rows: list[str], seeds: tuple[int, ...], overrides: Optional[dict] = None) -> list[conv.Run]:
    """Each row on each seed; a pilot's ``overrides`` of the RL settings are named in its label
    (``grpo lr=0.0003``), so pilots of other settings keep their own records."""
    known = {label: (method, options, config) for label, method, options, config in ROWS}
    unknown = set(rows) - set(known)
    if unknown:
        raise SystemExit(f"--rows: no such row {sorted(unknown)}; rows: {list(known)}")
    suffix = "".join(f" {k}={v}" for k, v in sorted((overrides or {}).items()))
    return [conv.Run("chain", label + suffix, known[label][0], seed, known[label][1],
                     {**RL, **(overrides or {}), **known[label][2]})
            for label in rows for seed in seeds]


def main(argv: Optional[list[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=None, help="default: runs/chain/pilot or docs/results/chain")
    p.add_argument("--pilot", action="store_true", help=f"pilot seeds {PILOT_SEEDS[0]}-{PILOT_SEEDS[-1]} (never the study's)")
    p.add_argument("--pilot-seeds", type=int, default=2, help="how many pilot seeds")
    p.add_argument("--rows", nargs="+", default=[label for label, *_ in ROWS])
    p.add_argument("--steps", type=int, default=None, help="pilots only: another budget")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=JSON", help="pilots only: RL settings by dotted name, e.g. optim.lr=3e-3")
    p.add_argument("--threads", type=int, default=1, help="torch threads per run")
    p.add_argument("--jobs", type=int, default=1, help="runs side by side")
    p.add_argument("--warm-only", action="store_true", help="build the warm start and print its held-out accuracy")
    p.add_argument("--report", action="store_true")
    args = p.parse_args(argv)
    out = args.out or (Path("runs/chain/pilot") if args.pilot else Path("docs/results/chain"))
    budget = BUDGET if args.steps is None else replace(BUDGET, steps=args.steps)
    if (args.steps is not None or args.set) and not args.pilot:
        p.error("--steps and --set change the pre-registered protocol: pilots only")
    overrides = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.set)}
    command = shlex.join(["python", "-m", "benchmarks.chain_study", *(sys.argv[1:] if argv is None else argv)])
    started = time.perf_counter()
    if args.warm_only:
        import torch
        from transformers import AutoModelForCausalLM

        from botgrpo.trainer.tasks.base import read_jsonl

        torch.set_num_threads(args.threads)
        paths = chain_setup(out, budget, threads=args.threads)
        model = AutoModelForCausalLM.from_pretrained(paths["model"]).eval()
        profile = warm_profile(model, load_tokenizer(paths["model"]), read_jsonl(paths["eval_dataset"]),
                               samples=RL["rollout.group_size"])
        record = {"command": command, "model": paths["model"], "fingerprint": conv.fingerprint(paths["model"]),
                  "broken_share": BROKEN_SHARE, "sft_steps": WARM_STEPS, "sft_lr": WARM_LR, **profile}
        (Path(paths["model"]).parent / "profile.json").write_text(json.dumps(record, indent=1))
        print(json.dumps(record, indent=1))
        return
    if not args.report:
        seeds = PILOT_SEEDS[:args.pilot_seeds] if args.pilot else STUDY_SEEDS
        if not args.pilot:
            check_warm_start(out, budget)
        conv.run_study(plan(args.rows, seeds, overrides), out, replace(budget, seeds=len(seeds)), args.jobs, args.threads)
    else:
        budget, command = conv.recorded(out, budget, command)
    print(conv.write_report(out, budget, command))
    print(f"\nwall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
