"""RL makes a policy better: from a warm start that answers right a third of the time, a few
BoT-GRPO steps through the real reward server (embedded, the real math scorer) raise the held-out
success rate. The only test in the suite where the reward itself has to rise."""
from __future__ import annotations

import random

from botgrpo.trainer.models.sft import build_tiny_policy, sft
from botgrpo.trainer.tasks.base import Task, format_prompt, write_jsonl

ANSWER, WRONG = "7", ("2", "3", "4", "5")
SUBJECTS = ("apples", "pears", "plums", "figs", "limes", "dates", "nuts", "beans")


def prompts(n: int, seed: int) -> list[Task]:
    rng = random.Random(seed)
    return [Task(format_prompt(f"How many {rng.choice(SUBJECTS)} are in box {rng.randrange(100)}?"), {"answer": ANSWER})
            for _ in range(n)]


def corpus(n: int, seed: int, right_share: float) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [(p.prompt, f"\\boxed{{{ANSWER if rng.random() < right_share else rng.choice(WRONG)}}}")
            for p in prompts(n, seed)]


def test_bot_grpo_raises_the_held_out_success_rate(tmp_path):
    from botgrpo.trainer.config import TrainConfig
    from botgrpo.embedded import reward_server_for
    from botgrpo.trainer.run.loop import Trainer

    pairs = corpus(400, 0, right_share=0.3)
    build_tiny_policy([p + c for p, c in pairs], tmp_path / "model", hidden=64, layers=2, vocab_size=300)
    sft(tmp_path / "model", pairs, max_steps=150, max_seconds=None, seed=0)
    write_jsonl(tmp_path / "train.jsonl", prompts(64, 1))
    write_jsonl(tmp_path / "eval.jsonl", prompts(32, 2))
    cfg = TrainConfig.model_validate(dict(
        model=str(tmp_path / "model"), output_dir=str(tmp_path / "run"), steps=12,
        data={"dataset": str(tmp_path / "train.jsonl")}, algorithm={"method": "bot_grpo"},
        rollout={"group_size": 8, "prompts_per_step": 4, "sampling": {"max_new_tokens": 8}},
        reward={"task": "math"}, optim={"lr": 3e-3}, eval={"dataset": str(tmp_path / "eval.jsonl"), "prompts": 32},
        log={"tensorboard": False, "progress": False, "plot": False}))
    with reward_server_for(cfg) as served:
        trainer = Trainer(served)
        try:
            records = trainer.train()
        finally:
            trainer.close()
    first, last = trainer.evals[0]["pass_rate"], trainer.evals[-1]["pass_rate"]
    print(f"held-out success {first:.2f} -> {last:.2f} in {len(records)} steps")
    assert 0.1 <= first <= 0.6, f"the warm start should answer right sometimes, not always: {first}"
    assert last >= first + 0.2, f"held-out success {first:.2f} -> {last:.2f} in {len(records)} steps"
    rewards = [r["reward_mean"] for r in records]
    assert sum(rewards[-4:]) / 4 > sum(rewards[:4]) / 4  # the training reward rose too
