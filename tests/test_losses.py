"""Policy losses, aggregations and KL estimators: hand values and gradients."""
import math

import pytest
import torch

from botgrpo.trainer.algo.losses import AGGREGATIONS, KL_ESTIMATORS, POLICY_LOSSES, aggregate, lookup


def one_token(ratio, adv):
    logp = torch.tensor([[math.log(ratio)]], dtype=torch.float64)
    return logp, torch.zeros_like(logp), torch.tensor([[adv]], dtype=torch.float64), torch.ones(1, 1, dtype=torch.bool)


# --------------------------------------------------------------------------- hand values
@pytest.mark.parametrize("ratio,adv,loss,clipped", [
    (1.5, 1.0, -1.2, True),    # positive advantage, ratio above 1+eps_high: clipped
    (1.5, -1.0, 1.5, False),   # negative advantage keeps the pessimistic unclipped term
    (0.5, -1.0, 0.8, True),    # negative advantage, ratio below 1-eps_low: clipped
    (1.1, 2.0, -2.2, False),   # inside the range
])
def test_ppo_clip_hand_values(ratio, adv, loss, clipped):
    per_token, stats = POLICY_LOSSES["ppo_clip"](*one_token(ratio, adv))
    assert per_token.item() == pytest.approx(loss)
    assert stats["clip_frac"].item() == float(clipped)


def test_ppo_clip_asymmetric_range():
    per_token, _ = POLICY_LOSSES["ppo_clip"](*one_token(1.25, 1.0), eps_low=0.2, eps_high=0.28)
    assert per_token.item() == pytest.approx(-1.25)  # 1.25 < 1.28: not clipped with clip-higher


def test_dual_clip_caps_negative_advantages():
    per_token, stats = POLICY_LOSSES["dual_clip"](*one_token(5.0, -1.0), clip_c=3.0)
    assert per_token.item() == pytest.approx(3.0)  # PPO would give 5.0
    assert stats["clip_frac"].item() == 1.0
    same, _ = POLICY_LOSSES["dual_clip"](*one_token(1.5, 1.0))
    assert same.item() == pytest.approx(-1.2)
    with pytest.raises(ValueError, match="clip_c > 1"):
        POLICY_LOSSES["dual_clip"](*one_token(1.0, 1.0), clip_c=0.5)


def test_gspo_sequence_ratio_hand_value():
    logp = torch.tensor([[0.1, 0.3, 9.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True, False]])
    adv = torch.tensor([[1.0, 1.0, 0.0]], dtype=torch.float64)
    per_token, _ = POLICY_LOSSES["gspo"](logp, torch.zeros_like(logp), adv, mask, eps_low=0.5, eps_high=0.5)
    s = math.exp(0.2)  # exp of the mean log-ratio over the two completion tokens
    assert per_token[0, :2].tolist() == pytest.approx([-s, -s])


def test_gspo_token_equals_gspo_for_sequence_advantages():
    torch.manual_seed(0)
    logp = (torch.randn(3, 5, dtype=torch.float64) * 1e-4).requires_grad_()
    mask = torch.rand(3, 5) > 0.3
    mask[:, 0] = True
    adv = torch.randn(3, 1, dtype=torch.float64).expand(3, 5)
    old = torch.zeros(3, 5, dtype=torch.float64)
    grads = []
    for name in ("gspo", "gspo_token"):
        per_token, _ = POLICY_LOSSES[name](logp, old, adv, mask)
        loss = aggregate("seq-mean-token-mean", per_token, mask)
        grads.append((loss.item(), torch.autograd.grad(loss, logp)[0]))
    assert grads[0][0] == pytest.approx(grads[1][0])
    assert torch.allclose(grads[0][1], grads[1][1])


def test_ppo_gradient_matches_hand_derivation():
    """d l / d logp = -rho A where unclipped, 0 where the clip is active."""
    logp = torch.log(torch.tensor([[1.1, 1.5, 0.5, 0.9]], dtype=torch.float64)).requires_grad_()
    adv = torch.tensor([[1.0, 1.0, -1.0, -2.0]], dtype=torch.float64)
    mask = torch.ones(1, 4, dtype=torch.bool)
    per_token, _ = POLICY_LOSSES["ppo_clip"](logp, torch.zeros_like(logp), adv, mask)
    (grad,) = torch.autograd.grad(per_token.sum(), logp)
    assert grad[0].tolist() == pytest.approx([-1.1, 0.0, 0.0, 1.8])


def test_gspo_token_gradient_matches_hand_derivation():
    """d l_it / d logp_it = -s_i A_it inside the clip range, 0 where the clip is active."""
    logp = torch.tensor([[1e-4, 3e-4, -1e-4]], dtype=torch.float64, requires_grad=True)
    adv = torch.tensor([[1.0, -2.0, 0.5]], dtype=torch.float64)
    mask = torch.ones(1, 3, dtype=torch.bool)
    per_token, _ = POLICY_LOSSES["gspo_token"](logp, torch.zeros_like(logp), adv, mask)
    (grad,) = torch.autograd.grad(per_token.sum(), logp)
    s = math.exp(1e-4)  # mean log-ratio 1e-4, inside (1 - 3e-4, 1 + 4e-4)
    assert grad[0].tolist() == pytest.approx([-s * 1.0, s * 2.0, -s * 0.5])
    big = torch.tensor([[1e-2, 1e-2]], dtype=torch.float64, requires_grad=True)
    per_token, stats = POLICY_LOSSES["gspo_token"](big, torch.zeros_like(big), torch.ones(1, 2, dtype=torch.float64),
                                                   torch.ones(1, 2, dtype=torch.bool))
    assert torch.autograd.grad(per_token.sum(), big)[0].abs().max() == 0 and stats["clip_frac"] == 1


# --------------------------------------------------------------------------- gradients
# gspo_token's value deliberately ignores its own token's ratio (stop-gradient), so finite
# differences do not describe its gradient: it is checked against the hand derivation below.
@pytest.mark.parametrize("name", sorted(set(POLICY_LOSSES) - {"gspo_token"}))
@pytest.mark.parametrize("mode", sorted(AGGREGATIONS))
def test_policy_loss_gradients_match_finite_differences(name, mode):
    torch.manual_seed(3)
    scale = 1e-4 if name.startswith("gspo") else 0.5  # GSPO's range is ~3e-4; test both sides of it
    old = torch.randn(3, 4, dtype=torch.float64)
    logp = (old + torch.randn(3, 4, dtype=torch.float64) * scale).requires_grad_()
    adv = torch.randn(3, 4, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)

    def f(lp):
        return aggregate(mode, POLICY_LOSSES[name](lp, old, adv, mask)[0], mask)

    assert torch.autograd.gradcheck(f, (logp,), eps=1e-7, atol=1e-5)


@pytest.mark.parametrize("name", sorted(KL_ESTIMATORS))
def test_kl_gradients_match_finite_differences(name):
    torch.manual_seed(4)
    logp = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    ref = torch.randn(2, 3, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda lp: KL_ESTIMATORS[name](lp, ref), (logp,))


# --------------------------------------------------------------------------- aggregation
def test_aggregation_hand_values():
    loss = torch.tensor([[1.0, 3.0, 100.0], [2.0, 100.0, 100.0]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    assert aggregate("token-mean", loss, mask).item() == pytest.approx(6 / 3)
    assert aggregate("seq-mean-token-mean", loss, mask).item() == pytest.approx((2 + 2) / 2)
    assert aggregate("seq-mean-token-sum-norm", loss, mask).item() == pytest.approx(6 / (2 * 3))
    assert aggregate("seq-mean-token-sum-norm", loss, mask, norm_len=4).item() == pytest.approx(6 / 8)
    assert aggregate("token-mean", loss, mask, num_tokens=6).item() == pytest.approx(1.0)


def test_aggregation_of_empty_mask_is_zero_not_nan():
    loss, mask = torch.ones(2, 3), torch.zeros(2, 3, dtype=torch.bool)
    for mode in AGGREGATIONS:
        assert aggregate(mode, loss, mask).item() == 0.0


# --------------------------------------------------------------------------- KL
def test_kl_hand_values():
    logp, ref = torch.tensor([0.0]), torch.tensor([-1.0])
    assert KL_ESTIMATORS["k1"](logp, ref).item() == pytest.approx(1.0)
    assert KL_ESTIMATORS["k2"](logp, ref).item() == pytest.approx(0.5)
    assert KL_ESTIMATORS["k3"](logp, ref).item() == pytest.approx(math.exp(-1.0))


@pytest.mark.parametrize("name,unbiased", [("k1", True), ("k3", True), ("k2", False)])
def test_kl_estimators_against_exact_kl(name, unbiased):
    torch.manual_seed(5)
    p = torch.softmax(torch.randn(6, dtype=torch.float64), 0)
    q = torch.softmax(torch.randn(6, dtype=torch.float64) * 0.3, 0)
    exact = (p * (p / q).log()).sum().item()
    x = torch.multinomial(p, 400_000, replacement=True)
    estimate = KL_ESTIMATORS[name](p.log()[x], q.log()[x]).mean().item()
    if unbiased:
        assert estimate == pytest.approx(exact, rel=0.03)
    else:
        assert estimate > 0
    assert name == "k1" or (KL_ESTIMATORS[name](p.log()[x], q.log()[x]) >= 0).all()


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="unknown policy loss 'ppo'.*ppo_clip"):
        lookup(POLICY_LOSSES, "ppo", "policy loss")
    with pytest.raises(ValueError, match="unknown loss aggregation 'mean'.*token-mean"):
        aggregate("mean", torch.ones(1, 1), torch.ones(1, 1, dtype=torch.bool))
