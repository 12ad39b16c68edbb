"""Padding-free updates: each micro-batch's sequences packed into one row (prompt + completion per
segment, positions restarting per segment), attention that never crosses a segment, micro-batches
balanced by token count. The log-probs, the gradients and the parameter updates equal the padded
path's (to 1e-5, CPU float32), across lengths, micro-batch boundaries, losses and aggregations."""
import copy

import pytest
import torch
from transformers import AutoModelForCausalLM

from botgrpo.trainer.algo.settings import AlgorithmSettings
from botgrpo.trainer.config import merge
from botgrpo.trainer.run.distributed import Dist
from tests.test_trainer import _Scripted
from tests.tiny_setup import tiny_config, tiny_math_setup


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return tiny_math_setup(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def model(setup):
    from botgrpo.trainer.models.packing import enable_packed_attention
    m = AutoModelForCausalLM.from_pretrained(setup["model"], dtype=torch.float32)
    enable_packed_attention(m)
    return m.eval()


def synthetic(vocab: int, prompt_lengths, lengths, group_size: int, T=None, seed=0):
    """Prompts of the given lengths, one completion length per row (prefix masks), random ids."""
    g = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(5, vocab, (n,), generator=g).tolist() for n in prompt_lengths]
    T = T or max(lengths)
    ids = torch.randint(5, vocab, (len(lengths), T), generator=g)
    mask = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]
    return prompts, torch.where(mask, ids, 0), mask


# rows of 1 token, of the full width, and between; prompts of different lengths
CASES = [([3, 7, 5], [1, 9, 4, 9, 2, 6], 2), ([4], [5, 5, 5, 5], 4), ([2, 6, 3, 8], [12, 1, 7, 3, 1, 12, 6, 9], 2)]


@pytest.mark.parametrize("prompt_lengths,lengths,group", CASES)
@pytest.mark.parametrize("micro_batch_tokens", [None, 16])
def test_packed_logprobs_and_entropy_equal_the_padded_forward(model, prompt_lengths, lengths, group,
                                                              micro_batch_tokens):
    from botgrpo.trainer.models.packing import PackedLayout
    from botgrpo.trainer.models.policy import completion_logprobs, pack
    prompts, ids, mask = synthetic(model.config.vocab_size, prompt_lengths, lengths, group)
    with torch.no_grad():
        padded, padded_entropy = completion_logprobs(model, *pack(prompts, ids, mask, group, 0), temperature=0.7,
                                                     with_entropy=True)
        layout = PackedLayout(prompts, ids, mask, group, micro_batch_size=3, micro_batch_tokens=micro_batch_tokens)
        packed = torch.zeros_like(padded)
        entropy = torch.zeros_like(padded)
        seen = []
        for mb in layout.micro_batches:
            logp, ent = layout.logprobs(model, mb, temperature=0.7, with_entropy=True)
            packed[mb.rows], entropy[mb.rows] = logp, ent
            seen += mb.rows.tolist()
    assert sorted(seen) == list(range(len(lengths)))  # every row in exactly one micro-batch
    assert torch.allclose(packed[mask], padded[mask], atol=1e-5, rtol=0)
    assert torch.allclose(entropy[mask], padded_entropy[mask], atol=1e-5, rtol=0)
    assert packed[~mask].abs().sum() == 0


def test_the_packed_row_has_no_padding_and_positions_restart_per_sequence(model):
    from botgrpo.trainer.models.packing import PackedLayout
    prompts, ids, mask = synthetic(model.config.vocab_size, [3, 5], [1, 4, 6, 2], 2)
    layout = PackedLayout(prompts, ids, mask, 2, micro_batch_size=8)
    [mb] = layout.micro_batches
    # prompt + completion for each row, less the completion's last token (it predicts nothing)
    per_row = {r: len(prompts[r // 2]) + int(mask[r].sum()) - 1 for r in range(4)}
    assert mb.input_ids.shape == (1, sum(per_row.values()))
    starts = (mb.position_ids[0] == 0).nonzero().squeeze(1).tolist()
    assert len(starts) == 4 and mb.cu_seqlens.tolist() == starts + [mb.input_ids.shape[1]]
    for (a, b), r in zip(zip(starts, starts[1:] + [mb.input_ids.shape[1]]), mb.rows.tolist()):
        assert b - a == per_row[r] and mb.position_ids[0, a:b].tolist() == list(range(b - a))
        p = prompts[r // 2]
        assert mb.input_ids[0, a:a + len(p)].tolist() == p
    assert mb.keep.numel() == int(mask.sum())  # logits only where a completion token is predicted


def test_packed_attention_does_not_cross_sequences(model):
    from botgrpo.trainer.models.packing import PackedLayout
    prompts, ids, mask = synthetic(model.config.vocab_size, [4, 6], [5, 3, 7, 2], 2)
    other = ids.clone()
    other[0, :5] = (other[0, :5] + 17) % model.config.vocab_size  # change row 0 only

    def logprobs(completions):
        layout = PackedLayout(prompts, completions, mask, 2, micro_batch_size=8)
        [mb] = layout.micro_batches
        with torch.no_grad():
            return layout.logprobs(model, mb, temperature=1.0), mb.rows

    (a, rows), (b, _) = logprobs(ids), logprobs(other)
    r0 = rows.tolist().index(0)
    keep = [i for i in range(4) if i != r0]
    assert torch.allclose(a[keep], b[keep], atol=1e-6, rtol=0)
    assert not torch.allclose(a[r0], b[r0])


def test_micro_batches_are_balanced_by_tokens_not_rows():
    from botgrpo.trainer.models.packing import plan_micro_batches
    tokens = [100, 90, 80, 3, 3, 3, 3, 3, 3, 2, 2, 1]
    bins = plan_micro_batches(tokens, max_rows=6, max_tokens=None)  # 12 rows, 6 per micro-batch: 2 bins
    assert sorted(i for b in bins for i in b) == list(range(12)) and len(bins) == 2
    loads = sorted(sum(tokens[i] for i in b) for b in bins)
    assert loads == [123, 170]  # the best split; six rows each would give 14 and 282
    budget = plan_micro_batches(tokens, max_rows=64, max_tokens=60)
    assert all(sum(tokens[i] for i in b) <= 60 or len(b) == 1 for b in budget) and len(budget) >= 4
    assert sorted(i for b in budget for i in b) == list(range(12))
    assert plan_micro_batches(tokens, max_rows=64, max_tokens=60) == budget  # deterministic
    for b in budget:  # within a micro-batch, longest first (equal lengths side by side)
        assert [tokens[i] for i in b] == sorted((tokens[i] for i in b), reverse=True)


class _Recording(torch.optim.SGD):
    """SGD that also keeps the gradients it stepped on (the first pass's)."""

    def step(self, closure=None):
        if not hasattr(self, "first"):
            self.first = [p.grad.clone() for group in self.param_groups for p in group["params"]]
        return super().step(closure)


def _update(model, layout, mask, adv, old, ref, algo, optimizer="sgd", num_iterations=2):
    from botgrpo.trainer.run.update import UpdateBatch, policy_update
    opt = _Recording(model.parameters(), lr=0.1) if optimizer == "sgd" else torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = UpdateBatch(layout, mask, adv, old, ref)
    stats = policy_update(model, opt, batch, algo, temperature=0.8, micro_batch_size=3,
                          num_iterations=num_iterations, max_grad_norm=1.0, norm_len=12, d=Dist())
    return stats, {n: p.detach().clone() for n, p in model.named_parameters()}, getattr(opt, "first", None)


ALGOS = [AlgorithmSettings(policy_loss="ppo_clip", aggregation="token-mean", kl_coef=0.1),
         AlgorithmSettings(policy_loss="ppo_clip", aggregation="seq-mean-token-mean"),
         AlgorithmSettings(policy_loss="gspo", eps_low=3e-4, eps_high=4e-4, aggregation="seq-mean-token-mean"),
         AlgorithmSettings(policy_loss="dual_clip", aggregation="seq-mean-token-sum-norm", kl_coef=0.05)]


def _case(model, seed=3):
    from botgrpo.trainer.models.policy import completion_logprobs, pack
    prompts, ids, mask = synthetic(model.config.vocab_size, [2, 6, 3, 8], [12, 1, 7, 3, 1, 12, 6, 9], 2, seed=seed)
    g = torch.Generator().manual_seed(1)
    loss_mask = mask.clone()
    loss_mask[2] = False  # a rollout out of the loss (unscored, or dropped by dynamic sampling)
    adv = torch.randn(mask.shape, generator=g) * mask
    padded_inputs = pack(prompts, ids, mask, 2, 0)
    with torch.no_grad():
        base = completion_logprobs(model, *padded_inputs, temperature=0.8)
    old = torch.where(mask, base + 0.3 * torch.randn(mask.shape, generator=g), 0.0)
    ref = torch.where(mask, base + 0.2 * torch.randn(mask.shape, generator=g), 0.0)
    return prompts, ids, mask, loss_mask, adv, old, ref, padded_inputs


@pytest.mark.parametrize("algo", ALGOS, ids=lambda a: f"{a.policy_loss}-{a.aggregation}")
@pytest.mark.parametrize("micro_batch_tokens", [None, 24])
def test_packed_update_equals_the_padded_update(model, algo, micro_batch_tokens):
    """Ratios away from 1 (clipping active), a KL term, two optimizer passes, a row out of the
    loss, padded micro-batches of 3 rows against packed ones of about 24 tokens: the gradients
    agree to float32 resolution and the parameters after two SGD steps to 1e-5."""
    from botgrpo.trainer.models.packing import PackedLayout
    prompts, ids, mask, loss_mask, adv, old, ref, padded_inputs = _case(model)
    padded_stats, padded, padded_grads = _update(copy.deepcopy(model), padded_inputs, loss_mask, adv, old, ref, algo)
    layout = PackedLayout(prompts, ids, mask, 2, micro_batch_size=3, micro_batch_tokens=micro_batch_tokens)
    assert len(layout.micro_batches) > 1
    packed_stats, packed, packed_grads = _update(copy.deepcopy(model), layout, loss_mask, adv, old, ref, algo)
    for key in ("loss", "clip_frac", "kl", "entropy", "grad_norm", "first_ratio_error"):
        assert packed_stats[key] == pytest.approx(padded_stats[key], rel=1e-5, abs=1e-6), key
    assert padded_stats["clip_frac"] > 0 or algo.policy_loss == "gspo"
    # float32 resolution of each tensor, and of the whole gradient for tensors whose gradient is
    # zero in theory (a key's bias shifts every score of a query alike): there the two paths'
    # rounding noise is all there is to compare
    largest = max(float(a.abs().max()) for a in padded_grads)
    for a, b in zip(padded_grads, packed_grads):
        assert torch.allclose(b, a, atol=1e-6 * float(a.abs().max()) + 1e-7 * largest, rtol=0)
    moved = 0
    for name, p in padded.items():
        assert torch.allclose(packed[name], p, atol=1e-5, rtol=0), name
        moved += int((p - model.get_parameter(name)).abs().gt(1e-4).sum())
    assert moved > 1000


def test_packed_adam_update_equals_the_padded_one(model):
    """With the trainer's AdamW (lr 1e-3, eps 1e-8) the updates agree to 1e-5 wherever the gradient
    is above 1e-7. Below that Adam's normalisation turns a component of about 1e-9, where the two
    paths' float32 sums differ in their last bits (e.g. -1.34e-9 against -1.59e-9, while that
    tensor's gradients reach 6e-3), into a step of up to lr; those still agree to 1e-4."""
    from botgrpo.trainer.models.packing import PackedLayout
    algo = ALGOS[3]
    prompts, ids, mask, loss_mask, adv, old, ref, padded_inputs = _case(model)
    _, padded, _ = _update(copy.deepcopy(model), padded_inputs, loss_mask, adv, old, ref, algo, "adam")
    layout = PackedLayout(prompts, ids, mask, 2, micro_batch_size=3, micro_batch_tokens=24)
    _, packed, _ = _update(copy.deepcopy(model), layout, loss_mask, adv, old, ref, algo, "adam")
    _, _, grads = _update(copy.deepcopy(model), padded_inputs, loss_mask, adv, old, ref, algo, num_iterations=1)
    for (name, p), g in zip(padded.items(), grads):
        diff = (packed[name] - p).abs()
        assert float(diff.max()) < 1e-4, name
        assert float(torch.where(g.abs() > 1e-7, diff, 0.0).max()) < 1e-5, name


def test_trainer_steps_packed_equal_padded(setup, tmp_path):
    """Whole trainer steps (rollouts, the old-log-prob pass, the update) with packing on and off."""
    from botgrpo.trainer.run.loop import Trainer

    def run(name, **overrides):
        cfg = tiny_config(setup, tmp_path / name, steps=2, eval={"dataset": None}, log={"plot": False},
                          **merge({"optim": {"num_iterations": 2, "micro_batch_size": 5}}, overrides))
        trainer = Trainer(cfg, reward_source=_Scripted(unscored=(3,)))
        try:
            records = trainer.train()
        finally:
            trainer.close()
        return records, {n: p.detach().clone() for n, p in trainer.model.named_parameters()}

    (padded_records, padded), (packed_records, packed) = run("padded", optim={"packing": False}), \
        run("packed", optim={"packing": True, "micro_batch_tokens": 120})
    assert [r["first_ratio_error"] for r in packed_records] == [0.0, 0.0]  # old log-probs: the same forward
    for a, b in zip(padded_records, packed_records):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-5, abs=1e-7)
        assert b["completion_len_mean"] == a["completion_len_mean"]
    for name, p in padded.items():
        assert torch.allclose(packed[name], p, atol=1e-5, rtol=0), name


def test_packing_is_on_by_default_and_refuses_a_budget_below_one_sequence(setup):
    from botgrpo.trainer.config import TrainConfig
    cfg = TrainConfig(model="m", data={"dataset": "d"})
    assert cfg.optim.packing is True and cfg.optim.micro_batch_tokens is None
    with pytest.raises(ValueError):
        TrainConfig(model="m", data={"dataset": "d"}, optim={"micro_batch_tokens": 0})
