"""``botgrpo demo --toy``: the advantage estimators side by side on one toy group.

Four rollouts of one prompt with token-level rewards as a compiler scorer would give them: two
passing components of different lengths, one failing with the blame on its last lines, one
truncated (blamed throughout). The table shows what each estimator makes of them: sequence-level
estimators give every token of a rollout the same advantage; BoT-GRPO separates the failing
rollout's neutral prefix from its blamed tokens.
"""
from __future__ import annotations

import torch
from rich.console import Console
from rich.table import Table

from botgrpo.trainer.algo.advantages import compute_advantages

ROLLOUTS = [  # (description, token rewards)
    ("compiles, short", [1.0] * 6),
    ("compiles, long", [1.0] * 12),
    ("error on last line", [-0.1] * 5 + [-1.0] * 3),
    ("truncated", [-1.0] * 10),
]
ESTIMATORS = [("bot_grpo", {}), ("bot_grpo_paper", {}), ("grpo", {}), ("dr_grpo", {}), ("rloo", {}), ("pure", {"temperature": 0.1})]


def toy_batch():
    width = max(len(r) for _, r in ROLLOUTS)
    rewards = torch.zeros(len(ROLLOUTS), width)
    mask = torch.zeros(len(ROLLOUTS), width, dtype=torch.bool)
    for i, (_, row) in enumerate(ROLLOUTS):
        rewards[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = True
    return rewards, mask, torch.zeros(len(ROLLOUTS), dtype=torch.long)


def _cell(values: torch.Tensor) -> str:
    low, high = values.min().item(), values.max().item()
    return f"{low:+.2f}" if abs(high - low) < 5e-3 else f"{low:+.2f} .. {high:+.2f}"


def show(console: Console, eps: float = 1e-6) -> None:
    rewards, mask, groups = toy_batch()
    table = Table(title="Per-token advantages in one group of 4 rollouts (range over each rollout's tokens)")
    table.add_column("rollout")
    table.add_column("tokens", justify="right")
    for name, _ in ESTIMATORS:
        table.add_column(name, justify="right")
    results = {name: compute_advantages(name, rewards, mask, groups, **({"eps": eps} if name.startswith("bot_grpo") else opts))
               for name, opts in ESTIMATORS}
    for i, (description, row) in enumerate(ROLLOUTS):
        table.add_row(description, str(len(row)), *(_cell(results[name][i][mask[i]]) for name, _ in ESTIMATORS))
    console.print(table)
    console.print("BoT-GRPO keeps the failing rollout's prefix near the group mean and pushes its blamed tokens "
                  "down; sequence-level estimators push every token of it down alike.")
