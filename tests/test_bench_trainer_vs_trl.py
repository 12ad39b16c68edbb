"""The trainer-vs-TRL benchmark's own machinery (no TRL, no model): the slow scorer must count
only the submitting trainer's time, or the alternation would hide an async trainer's scoring
behind the other systems' steps and flatter it."""
import random
import time
from types import SimpleNamespace

import pytest
import torch

from benchmarks import trainer_vs_trl as bench


def test_own_clock_stands_still_between_steps():
    clock = bench.OwnClock()
    clock.start()
    time.sleep(0.02)
    clock.stop()
    stopped = clock.now()
    time.sleep(0.03)
    assert clock.now() == stopped
    assert 0.015 < stopped < 0.2


def _batch(lengths: list[int], width: int = 4):
    mask = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]
    return SimpleNamespace(lengths=torch.tensor(lengths), completion_mask=mask,
                           completion_ids=torch.zeros(len(lengths), width, dtype=torch.long))


class _Tok:
    def decode(self, ids):
        return "7"


def test_slow_scorer_answers_after_the_trainers_own_time_only():
    clock = bench.OwnClock()
    rewards = bench.InProcessRewards(_Tok(), seconds=0.05, clock=clock)
    future = rewards.submit(_batch([2, 4]), [None, None])
    time.sleep(0.1)  # the trainer is outside its step: its scoring time does not pass
    assert not future.done()
    clock.start()
    scored = future.result(timeout=5)
    clock.stop()
    assert clock.now() >= 0.05
    assert scored.token_rewards.tolist() == [[1, 1, 0, 0], [1, 1, 1, 1]]
    assert scored.seq_rewards.tolist() == [1.0, 1.0]
    assert rewards.lengths == [[2, 4]]


def test_instant_scorer_is_done_at_once():
    future = bench.InProcessRewards(_Tok()).submit(_batch([1]), [None])
    assert future.done()


def test_long_tail_counts_are_heavy_tailed():
    rng = random.Random(0)
    counts = sorted(bench.long_tail_count(rng) for _ in range(20_000))
    pick = lambda q: counts[int(q * len(counts))]  # noqa: E731
    assert pick(0.5) == pytest.approx(8, abs=1)
    assert pick(0.9) == pytest.approx(29, abs=3)
    assert pick(0.99) > 60 and counts[-1] <= 120 and counts[0] >= 1


def test_summary_reports_medians_memory_and_staleness():
    rows = [{"seconds": s, "tokens": 100, "load": 1.0, "generate": 0.1, "train": 0.2, "score_wait": 0.0,
             "generate_wait": 0.0, "staleness": st, "len_p50": 3, "len_p90": 9, "len_max": 12, "len_mean": 4.0,
             "peak_memory_mib": 50.0} for s, st in ((1.0, 0), (2.0, 1), (3.0, 1))]
    out = bench.summary(rows)
    assert out["s_per_step"] == 2.0 and out["tokens_per_s"] == 50.0
    assert out["peak_memory_mib"] == 50.0 and out["staleness_max"] == 1
    assert out["train_s"] == 0.2 and out["len_p90"] == 9


def test_every_workload_compares_against_trl_with_at_least_one_of_ours():
    assert set(bench.SPECS) == set(bench.WORKLOADS)
    assert all(spec.ours and spec.model in bench.SFT_RUNS for spec in bench.SPECS.values())
    slow = bench.SPECS["slow_scorer"].ours
    assert {o.get("async_steps", 0) for o in slow.values()} == {0, 1}
    assert {o.get("scorer_seconds", 0.0) for o in slow.values()} == {0.0, bench.SLOW_SCORER_SECONDS}


def test_paired_ratio_is_taken_round_by_round():
    """A slow round (a busy neighbour) slows both systems' steps in it: each round is compared
    with itself, and rounds must pair up."""
    trl = [{"seconds": s} for s in (2.0, 8.0, 2.0, 8.0)]
    ours = [{"seconds": s} for s in (1.0, 4.0, 1.0, 4.0)]
    assert bench.paired_ratio(trl, ours) == 2.0
    with pytest.raises(ValueError):
        bench.paired_ratio(trl, ours[:3])
