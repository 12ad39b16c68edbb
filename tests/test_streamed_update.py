"""The group-streamed update (trainer/run/streamed.py): each group's advantages and backward as its
rollouts are scored, one optimizer step, and the same parameters as the batch update."""
import random
import threading
import time

import pytest
import torch

from botgrpo.services.schemas import Result
from botgrpo.trainer.algo.advantages import ESTIMATORS, compute_advantages
from botgrpo.trainer.config import nest
from botgrpo.trainer.rewards import StreamedScores
from botgrpo.trainer.run.loop import Trainer
from botgrpo.trainer.run.streamed import GROUP_LOCAL_ESTIMATORS, group_rows, parts_of, streamable
from tests.tiny_setup import tiny_config, tiny_math_setup


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return tiny_math_setup(tmp_path_factory.mktemp("tiny"))


# --------------------------------------------------------------------------- estimators
ESTIMATOR_CASES = [("bot_grpo", {}), ("bot_grpo", {"min_std": 0.0, "use_reward_to_go": True}),
                   ("bot_grpo", {"baseline": "outcome"}), ("bot_grpo_paper", {}), ("grpo", {}), ("dr_grpo", {}),
                   ("rloo", {}), ("pure", {"temperature": 0.1}), ("pure", {"temperature": 0.0}),
                   ("prime", {}), ("prime", {"leave_one_out": False}), ("decoupled", {})]


def test_every_group_local_estimator_is_registered_and_covered():
    assert GROUP_LOCAL_ESTIMATORS <= set(ESTIMATORS)
    assert {name for name, _ in ESTIMATOR_CASES} == GROUP_LOCAL_ESTIMATORS


@pytest.mark.parametrize("name,options", ESTIMATOR_CASES)
@pytest.mark.parametrize("with_seq", [True, False])
def test_group_local_estimators_give_the_batch_values_on_a_few_groups(name, options, with_seq):
    """The rule the streamed update relies on: an estimator on some whole groups' rows equals
    the batch computation on those rows (unscored rows, empty rows, all-equal groups included)."""
    g = torch.Generator().manual_seed(0)
    G, groups, T = 4, 6, 9
    B = G * groups
    lengths = torch.randint(0, T + 1, (B,), generator=g)
    mask = torch.arange(T)[None, :] < lengths[:, None]
    rewards = torch.where(mask, torch.randn(B, T, generator=g), 0.0)
    rewards[:G] = torch.where(mask[:G], 0.5, 0.0)  # an all-equal group
    seq = torch.randn(B, generator=g)
    seq[[1, 7, 8]] = float("nan")  # unscored rollouts
    seq[:G] = 0.5
    ids = torch.arange(B) // G
    full = compute_advantages(name, rewards, mask, ids, seq if with_seq else None, **options)
    for part in ([2], [0, 5], [1, 3, 4]):
        rows = torch.tensor(group_rows(part, G))
        alone = compute_advantages(name, rewards[rows], mask[rows], ids[rows], seq[rows] if with_seq else None,
                                   **options)
        assert torch.allclose(alone, full[rows], atol=1e-6, rtol=1e-6), (name, part)


# --------------------------------------------------------------------------- the stream of groups
def as_result(fields: dict, row: int = 0) -> Result:
    """A wire result with ``fields`` (an unscored one takes the lower bound, no tokens)."""
    defaults = {"score": -1.0, "token_scores": []} if fields.get("error") else {}
    return Result.model_validate({"id": str(row), "index": row, **defaults, **fields})


def _result(score, n, error=False):
    return as_result({"error": "timeout"} if error else {"score": score, "token_scores": [score] * n,
                                                          "passed": score > 0})


def test_streamed_scores_hand_out_each_group_once_when_complete():
    mask = torch.ones(6, 3, dtype=torch.bool)
    scores = StreamedScores(mask, 2)
    for row in (5, 0, 4):  # group 2 completes, groups 0 and 1 do not
        scores.deliver(row, _result(1.0, 3))
    assert scores.next_groups(timeout=1) == [2] and not scores.done()
    scores.deliver(3, _result(0.0, 3, error=True))
    scores.deliver(2, _result(1.0, 3))
    scores.deliver(1, _result(-1.0, 3))
    assert scores.next_groups(timeout=1) == [1, 0]
    assert scores.next_groups(timeout=1) == [] and scores.next_groups(timeout=1) == []
    result = scores.result(timeout=1)
    assert result.scored.tolist() == [True, True, True, False, True, True] and result.errors == 1
    assert torch.isnan(result.seq_rewards[3]) and torch.equal(result.token_rewards[3], torch.zeros(3))
    assert result.token_rewards[1].tolist() == [-1.0] * 3


def test_a_bad_result_fails_the_batch_and_its_waiters():
    scores = StreamedScores(torch.ones(4, 3, dtype=torch.bool), 2)
    scores.deliver(0, _result(1.0, 3))
    scores.deliver(1, _result(1.0, 3))
    with pytest.raises(ValueError, match="rollout 2: 2 token scores for 3 tokens"):
        scores.deliver(2, _result(1.0, 2))
    for _ in range(2):  # the update stops on it (its accumulated gradient is never stepped)
        with pytest.raises(ValueError, match="token scores"):
            scores.next_groups(timeout=1)
    with pytest.raises(ValueError):
        scores.result(timeout=1)


# --------------------------------------------------------------------------- whole trainer steps
class ScrambledSource:
    """An in-process reward source that delivers one rollout at a time from a thread, in a seeded
    scrambled order, ``delay`` seconds apart. Group 0's rollouts all score 0.5 (dynamic sampling
    drops it); rows in ``unscored`` come back with an error; other rows alternate -1/+1 with a
    token-level ripple, so token-level estimators see varying rewards."""

    def __init__(self, unscored=(), delay=0.01, seed=0):
        self.unscored, self.delay, self.seed = set(unscored), delay, seed

    def submit(self, batch, references, options=None):
        G, B = batch.group_size, batch.completion_mask.shape[0]
        scores = StreamedScores(batch.completion_mask, G)
        order = list(range(B))
        random.Random(self.seed).shuffle(order)

        def result(i):
            n = int(batch.lengths[i])
            if i in self.unscored:
                return as_result({"error": "scorer timed out"}, i)
            score = 0.5 if i < G else (1.0 if (i * 7) % 3 else -1.0)
            return as_result({"score": score, "token_scores": [score - 0.1 * (t % 3) for t in range(n)],
                              "passed": score > 0}, i)

        def deliver():
            for i in order:
                time.sleep(self.delay)
                scores.deliver(i, result(i))

        threading.Thread(target=deliver, daemon=True).start()
        return scores

    def close(self):
        pass


def one_step(setup, out, source, values, **more):
    """One step of a tiny run with ``values`` (dotted names) and ``more`` (dotted names) set."""
    cfg = tiny_config(setup, out, steps=1, eval={"dataset": None}, log={"plot": False}, **nest({**values, **more}))
    trainer = Trainer(cfg, reward_source=source)
    try:
        record = trainer.train_step()
        grads = {n: p.grad.detach().clone() for n, p in trainer.model.named_parameters()}
        params = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    finally:
        trainer.close()
    return record, params, grads


def assert_same_update(streamed, batch):
    (rec_s, params_s, grads_s), (rec_b, params_b, grads_b) = streamed, batch
    assert rec_s["update_streamed"] == 1 and rec_b["update_streamed"] == 0
    assert rec_s["kept_rollouts"] == rec_b["kept_rollouts"]
    for key in ("loss", "grad_norm", "entropy", "clip_frac"):
        assert rec_s[key] == pytest.approx(rec_b[key], rel=1e-5, abs=1e-7), key
    for name, g in grads_b.items():  # the clipped gradient, to float32 resolution of each tensor
        scale = float(g.abs().max())
        assert torch.allclose(grads_s[name], g, atol=1e-5 * scale + 1e-12, rtol=0), name
        # AdamW's first step is about lr * sign(g): compare where the gradient is not rounding noise
        clear = g.abs() > 1e-4 * scale
        assert torch.allclose(params_s[name][clear], params_b[name][clear], atol=1e-6, rtol=0), name


LAYOUTS = [pytest.param({"optim.packing": True, "optim.micro_batch_size": 3}, id="packed"),
           pytest.param({"optim.packing": False, "optim.micro_batch_size": 3}, id="padded")]
BATCH = {"optim.streamed_update": False}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_dapo_step_streamed_equals_the_batch_update(setup, tmp_path, layout):
    """Dynamic sampling drops group 0, rollout 5 is unscored, token-mean aggregation (its
    normaliser is known only at the end), results arriving one by one in a scrambled order."""
    values = {"algorithm.method": "dapo", "algorithm.overlong_buffer": 0.0, **layout}
    streamed = one_step(setup, tmp_path / "s", ScrambledSource(unscored=(5,)), values)
    batch = one_step(setup, tmp_path / "b", ScrambledSource(unscored=(5,)), values, **BATCH)
    assert batch[0]["kept_rollouts"] == 16 - 4 - 1  # the dropped group and the unscored rollout
    assert streamed[0]["update_early_groups"] >= 1  # a group's backward ran before the last score came
    assert_same_update(streamed, batch)
    # another arrival order, the same weights bit for bit (parts are fixed, taken in index order)
    other = one_step(setup, tmp_path / "o", ScrambledSource(unscored=(5,), seed=7, delay=0.003), values)
    assert all(torch.equal(other[1][n], p) for n, p in streamed[1].items())


def test_parts_are_consecutive_groups_at_most_max_parts():
    assert parts_of(4) == [[0], [1], [2], [3]]
    assert parts_of(20, 8) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11], [12, 13, 14], [15, 16, 17], [18, 19]]
    assert parts_of(1) == [[0]] and parts_of(0) == []


@pytest.mark.parametrize("method,values", [
    ("bot_grpo", {"algorithm.kl_coef": 0.05, "algorithm.overlong_buffer": 0.5}),  # token rewards, a reference pass,
                                                                                  # overlong penalty
    ("grpo", {"optim.micro_batch_tokens": 40}),                 # seq-mean-token-mean, more micro-batches
    ("dr_grpo", {"optim.packing": False}),                      # seq-mean-token-sum-norm
    ("pure", {"algorithm.dynamic_sampling": True}),
])
def test_other_methods_streamed_equal_the_batch_update(setup, tmp_path, method, values):
    values = {"algorithm.method": method, "optim.micro_batch_size": 4, **values}
    streamed = one_step(setup, tmp_path / "s", ScrambledSource(unscored=(2, 13), seed=1), values)
    batch = one_step(setup, tmp_path / "b", ScrambledSource(unscored=(2, 13), seed=1), values, **BATCH)
    assert_same_update(streamed, batch)


def test_a_step_with_nothing_in_the_loss_does_not_move_the_weights(setup, tmp_path):
    """All groups dropped (every group all-equal under dynamic sampling): no optimizer step."""
    class AllEqual(ScrambledSource):
        def submit(self, batch, references, options=None):
            scores = StreamedScores(batch.completion_mask, batch.group_size)

            def deliver():
                time.sleep(0.05)  # not all in at submission (the whole-batch path would run)
                for i in range(batch.completion_mask.shape[0]):
                    scores.deliver(i, as_result({"score": 1.0, "token_scores": [1.0] * int(batch.lengths[i])}, i))
            threading.Thread(target=deliver, daemon=True).start()
            return scores

    cfg = tiny_config(setup, tmp_path, steps=1, eval={"dataset": None}, log={"plot": False},
                      algorithm={"method": "dapo", "overlong_buffer": 0.0})
    trainer = Trainer(cfg, reward_source=AllEqual())
    try:
        before = [p.detach().clone() for p in trainer.model.parameters()]
        record = trainer.train_step()
        assert record["update_streamed"] == 1 and record["update_skipped"] == 1.0 and record["kept_rollouts"] == 0
        assert all(torch.equal(a, p) for a, p in zip(before, trainer.model.parameters()))
    finally:
        trainer.close()


def test_the_batch_path_where_streaming_would_not_be_exact(setup, tmp_path):
    cfg = tiny_config(setup, tmp_path, eval={"dataset": None})
    algo, stream = cfg.algorithm.settings(), StreamedScores(torch.ones(4, 2, dtype=torch.bool), 2)
    assert streamable(cfg, algo, 1, stream) is None
    assert "rank" in streamable(cfg, algo, 2, stream)
    assert "stream" in streamable(cfg, algo, 1, object())
    def changed(section, **fields):
        return cfg.model_copy(update={section: getattr(cfg, section).model_copy(update=fields)})
    assert "num_iterations" in streamable(changed("optim", num_iterations=2), algo, 1, stream)
    assert "async" in streamable(changed("rollout", async_steps=1), algo, 1, stream)
    assert "off" in streamable(changed("optim", streamed_update=False), algo, 1, stream)
    assert "group-local" in streamable(cfg, algo.model_copy(update={"estimator": "someone_elses"}), 1, stream)
    assert "aggregation" in streamable(cfg, algo.model_copy(update={"aggregation": "custom"}), 1, stream)
    remote = StreamedScores(torch.ones(4, 2, dtype=torch.bool), 2, background=True)
    for row in range(4):
        stream.deliver(row, _result(1.0, 2))
        remote.deliver(row, _result(1.0, 2))
    assert "already" in streamable(cfg, algo, 1, stream)  # an instant scorer: the whole-batch pass
    # a server's stream: however soon it is done, the path does not depend on timing (exact resume)
    assert streamable(cfg, algo, 1, remote) is None


def test_streamed_through_a_real_reward_server(setup, tmp_path):
    """RewardSource against a live ``botgrpo serve`` (math scorer): the NDJSON stream feeds the
    groups, and the step equals the batch update on the same rollouts and scores."""
    from tests.live_server import LiveServer
    (tmp_path / "srv").mkdir()
    server = LiveServer(tmp_path / "srv", env={"BOTGRPO_WARM_SCORERS": "false"})
    try:
        values = {"reward.url": server.url, "optim.micro_batch_size": 4}
        streamed = one_step(setup, tmp_path / "s", None, values)
        batch = one_step(setup, tmp_path / "b", None, values, **BATCH)
    finally:
        server.stop()
    assert streamed[0]["reward_errors"] == batch[0]["reward_errors"] == 0
    assert streamed[0]["reward_mean"] == pytest.approx(batch[0]["reward_mean"])  # the same rollouts, the same scores
    assert_same_update(streamed, batch)


def test_delivered_token_scores_come_back_in_reward_units():
    """A result's reward_map [scale, shift] is divided out (token_score = scale * r + shift); the
    padding stays 0; a map that cannot be inverted fails the batch instead of training on it."""
    mask = torch.tensor([[True, True, False], [True, False, False]])
    scores = StreamedScores(mask, group_size=2)
    scores.deliver(0, as_result({"score": -1.0, "token_scores": [0.2, -1.0], "reward_map": [0.8, 0.2], "passed": False,
                                 "details": {"component_declared": True}}))
    scores.deliver(1, as_result({"score": 1.0, "token_scores": [1.0], "passed": True}, 1))  # no map: as sent
    batch = scores.result(timeout=5)
    assert batch.token_rewards.tolist() == [[0.0, -1.5, 0.0], [1.0, 0.0, 0.0]]
    assert batch.component[0] == 1.0 and torch.isnan(batch.component[1])
    bad = StreamedScores(mask, group_size=2)
    with pytest.raises(ValueError, match="reward_map"):
        bad.deliver(0, as_result({"score": 0.0, "token_scores": [0.0, 0.0], "reward_map": [0.0, 1.0]}))
    assert bad.exception() is not None
