"""trainer/algo/shaping.py's ``shape`` on a batch small enough to compute by hand.

max_new_tokens 4 and an overlong zone of 2 tokens: a rollout of L tokens gets
0 for L <= 2, (2 - L) / 2 for 2 < L <= 4 (so -0.5 at 3 and -1.0 at 4), -factor beyond.
Groups of 2 rollouts, 4 token slots:

    row  group  scored  L  R     tokens (completion mask by L)
    0    0      yes     2  1.0   [1.0, 0.5, 0, 0]
    1    0      yes     3  1.0   [1.0, 1.0, 1.0, 0]        penalty -0.5
    2    1      yes     1 -1.0   [-1.0, 0, 0, 0]
    3    1      yes     2 -1.0   [-1.0, -1.5, 0, 0]
    4    2      no      4  0.0   [0.2, 0.2, 0.2, 0.2]      unscored: out of the mask, R NaN
    5    2      yes     4  1.0   [1.0, 1.0, 0.5, 1.0]      penalty -1.0
"""
from __future__ import annotations

import torch

from botgrpo.trainer.algo.shaping import informative_groups, overlong_penalty, shape

NAN = float("nan")


def batch():
    lengths = torch.tensor([2, 3, 1, 2, 4, 4])
    completion_mask = torch.arange(4)[None, :] < lengths[:, None]
    token_rewards = torch.tensor([[1.0, 0.5, 0.0, 0.0],
                                  [1.0, 1.0, 1.0, 0.0],
                                  [-1.0, 0.0, 0.0, 0.0],
                                  [-1.0, -1.5, 0.0, 0.0],
                                  [0.2, 0.2, 0.2, 0.2],
                                  [1.0, 1.0, 0.5, 1.0]])
    seq_rewards = torch.tensor([1.0, 1.0, -1.0, -1.0, 0.0, 1.0])
    scored = torch.tensor([True, True, True, True, False, True])
    return token_rewards, seq_rewards, scored, completion_mask, lengths


def run(*, overlong_zone: int, dynamic_sampling: bool, rows=slice(None)):
    token_rewards, seq_rewards, scored, completion_mask, lengths = (t[rows] for t in batch())
    return shape(token_rewards, seq_rewards, scored, completion_mask, lengths, 2, max_new_tokens=4,
                 overlong_zone=overlong_zone, overlong_factor=1.0, dynamic_sampling=dynamic_sampling)


def same(got, want):
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


def test_overlong_penalty_by_hand():
    same(overlong_penalty(torch.tensor([0, 2, 3, 4, 5]), max_len=4, buffer=2, factor=2.0),
         torch.tensor([0.0, 0.0, -1.0, -2.0, -2.0]))  # factor 2: -1 at 3, -2 at the cap and beyond
    same(overlong_penalty(torch.tensor([3, 9]), max_len=4, buffer=0), torch.tensor([0.0, 0.0]))  # no zone: off


def test_unscored_rows_leave_the_mask_and_the_rewards_pass_unchanged_without_a_zone():
    token_rewards, seq_rewards, mask = run(overlong_zone=0, dynamic_sampling=False)
    same(token_rewards, batch()[0])                              # nothing to add: as given
    same(seq_rewards, torch.tensor([1.0, 1.0, -1.0, -1.0, NAN, 1.0]))
    assert mask.tolist() == [[True, True, False, False],
                             [True, True, True, False],
                             [True, False, False, False],
                             [True, True, False, False],
                             [False, False, False, False],    # unscored: out of the loss
                             [True, True, True, True]]


def test_the_overlong_zone_penalises_every_token_and_the_outcome():
    token_rewards, seq_rewards, mask = run(overlong_zone=2, dynamic_sampling=False)
    same(token_rewards, torch.tensor([[1.0, 0.5, 0.0, 0.0],          # L 2: at the zone's start, no penalty
                                      [0.5, 0.5, 0.5, 0.0],          # L 3: -0.5 on its 3 tokens
                                      [-1.0, 0.0, 0.0, 0.0],
                                      [-1.0, -1.5, 0.0, 0.0],
                                      [0.0, 0.0, 0.0, 0.0],          # unscored: zero, not penalised
                                      [0.0, 0.0, -0.5, 0.0]]))       # L 4: -1.0 on its 4 tokens
    same(seq_rewards, torch.tensor([1.0, 0.5, -1.0, -1.0, NAN, 0.0]))
    assert mask[4].tolist() == [False] * 4 and mask[5].tolist() == [True] * 4


def test_dynamic_sampling_drops_the_groups_with_one_reward_after_the_penalty():
    token_rewards, seq_rewards, mask = run(overlong_zone=2, dynamic_sampling=True)
    # group 0: 1.0 and 1.0, made 1.0 and 0.5 by the penalty: kept
    # group 1: -1.0 and -1.0: dropped; group 2: one scored reward (0.0) beside NaN: dropped
    assert mask.any(dim=1).tolist() == [True, True, False, False, False, False]
    assert mask[:2].tolist() == [[True, True, False, False], [True, True, True, False]]
    same(seq_rewards, torch.tensor([1.0, 0.5, -1.0, -1.0, NAN, 0.0]))  # rewards as without it; only the mask
    # without the zone group 0 is all 1.0 too: every group dropped
    assert not run(overlong_zone=0, dynamic_sampling=True)[2].any()


def test_a_group_shaped_alone_gets_the_batchs_values():
    whole = run(overlong_zone=2, dynamic_sampling=True)
    for group in range(3):
        rows = slice(2 * group, 2 * group + 2)
        for alone, batch_rows in zip(run(overlong_zone=2, dynamic_sampling=True, rows=rows), whole):
            same(alone, batch_rows[rows])


def test_informative_groups_ignores_unscored_rewards_and_any_group_ids():
    rewards = torch.tensor([0.5, 0.5, NAN, 0.5, 0.0, 1.0, NAN, NAN])
    groups = torch.tensor([7, 7, 3, 3, 9, 9, 4, 4])
    assert informative_groups(rewards, groups).tolist() == [False, False, False, False, True, True, False, False]
