"""How fast is ``bot_grpo`` next to the memory-bound floor and a naive per-group loop?

    python -m benchmarks.advantages [--rollouts 4096 --tokens 256 --group 16 --device cpu]

All three run in one process on the same tensors, interleaved, and the ratios are printed:

* floor: one masked sum over the reward tensor (reads it once; nothing can be much faster);
* bot_grpo: ``botgrpo.trainer.algo.advantages.compute_advantages("bot_grpo", ...)``;
* naive-torch: a Python loop over groups and rollouts, each step a torch op on that slice;
* naive-python: plain Python floats, token by token, the way the formula reads.

Median of ``--repeats`` timings; the naive loop is timed on a slice of the groups and scaled,
so the benchmark stays short.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from botgrpo.trainer.algo.advantages import compute_advantages


def make_batch(rollouts: int, tokens: int, group: int, device: str, ragged: bool = False, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    rewards = torch.rand(rollouts, tokens, generator=gen) * 2 - 1
    low = tokens // 4 if ragged else tokens
    lengths = torch.randint(low, tokens + 1, (rollouts,), generator=gen)
    mask = torch.arange(tokens)[None, :] < lengths[:, None]
    group_ids = torch.arange(rollouts) // group
    return rewards.to(device), mask.to(device), group_ids.to(device)


def floor(rewards, mask, group_ids):
    return torch.where(mask, rewards, 0.0).sum()


def bot_grpo(rewards, mask, group_ids):
    return compute_advantages("bot_grpo", rewards, mask, group_ids)


def naive_torch(rewards, mask, group_ids, eps=1e-6):
    """Per group, per rollout, with torch ops on each slice."""
    out = torch.zeros_like(rewards)
    for gid in group_ids.unique().tolist():
        rows = (group_ids == gid).nonzero().flatten().tolist()
        tokens = [rewards[i][mask[i]] for i in rows]
        weights = [torch.full_like(t, 1.0 / max(len(t), 1)) for t in tokens]
        r, w = torch.cat(tokens), torch.cat(weights)
        mu = (w * r).sum() / w.sum()
        sigma = ((w * (r - mu) ** 2).sum() / w.sum()).sqrt()
        for i, t in zip(rows, tokens):
            out[i, : len(t)] = (t - mu) / (sigma + eps)
    return out


def naive_python(rewards, mask, group_ids, eps=1e-6):
    """Per group, per token, in Python floats, exactly as the formula in DESIGN.md reads."""
    rows_of = {}
    for i, gid in enumerate(group_ids.tolist()):
        rows_of.setdefault(gid, []).append(i)
    values, keep = rewards.tolist(), mask.tolist()
    out = [[0.0] * len(row) for row in values]
    for rows in rows_of.values():
        bag = [(r, 1.0 / sum(keep[i]), i, t) for i in rows for t, r in enumerate(values[i]) if keep[i][t]]
        total = sum(w for _, w, _, _ in bag)
        mu = sum(w * r for r, w, _, _ in bag) / total
        sigma = (sum(w * (r - mu) ** 2 for r, w, _, _ in bag) / total) ** 0.5
        for r, _, i, t in bag:
            out[i][t] = (r - mu) / (sigma + eps)
    return torch.tensor(out)


NAIVE = {"naive-torch": naive_torch, "naive-python": naive_python}


def timed(fn, args, device: str) -> float:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn(*args)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main(argv=None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rollouts", type=int, default=4096)
    p.add_argument("--tokens", type=int, default=256)
    p.add_argument("--group", type=int, default=16)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--naive-groups", type=int, default=16, help="groups the naive loops are timed on")
    p.add_argument("--ragged", action="store_true", help="random lengths in [T/4, T] instead of all T")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    full = make_batch(args.rollouts, args.tokens, args.group, args.device, args.ragged)
    part_rows = min(args.rollouts, args.naive_groups * args.group)
    part = tuple(t[:part_rows] for t in full)
    scale = args.rollouts / part_rows

    for fn in NAIVE.values():
        torch.testing.assert_close(fn(*part).to(args.device), bot_grpo(*part), atol=1e-4, rtol=1e-4)
    for fn in (floor, bot_grpo):  # warm-up
        fn(*full)
    times = {name: [] for name in ("floor", "bot_grpo", *NAIVE)}
    for _ in range(args.repeats):  # interleaved, so drift hits all of them alike
        times["floor"].append(timed(floor, full, args.device))
        times["bot_grpo"].append(timed(bot_grpo, full, args.device))
        for name, fn in NAIVE.items():
            if len(times[name]) < 3:
                times[name].append(timed(fn, part, args.device) * scale)
    med = {k: statistics.median(v) for k, v in times.items()}

    tokens = int(full[1].sum())
    print(f"bot_grpo on {args.rollouts} rollouts x {args.tokens} tokens (groups of {args.group}), "
          f"{tokens:,} completion tokens, device={args.device}, torch threads={torch.get_num_threads()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    for name, seconds in med.items():
        print(f"  {name:13s} {seconds * 1e3:10.2f} ms   {tokens / seconds / 1e6:9.2f} M tokens/s")
    print(f"  bot_grpo / floor        = {med['bot_grpo'] / med['floor']:6.2f}x  (target: <= 4x)")
    for name in NAIVE:
        print(f"  {name} / bot_grpo = {med[name] / med['bot_grpo']:6.0f}x  (target: >= 100x)")
    return med


if __name__ == "__main__":
    main()
