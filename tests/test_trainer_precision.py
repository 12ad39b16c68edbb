"""Training precision and the update's forward, on CPU: float32 master weights whatever the
checkpoint's dtype, one autocast for old, reference and updated log-probs, gradient
checkpointing that recomputes, explicit train/eval modes, and no logits over the prompt."""
import pytest
import torch
from transformers import AutoModelForCausalLM

from botgrpo.trainer.config import merge
from botgrpo.trainer.run.loop import Trainer
from tests.test_trainer import _Scripted
from tests.tiny_setup import tiny_config, tiny_math_setup


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return tiny_math_setup(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def bf16_setup(setup, tmp_path_factory):
    """The same policy saved in bfloat16, as instruct checkpoints ship (transformers 5 loads dtype="auto")."""
    directory = tmp_path_factory.mktemp("bf16") / "model"
    model = AutoModelForCausalLM.from_pretrained(setup["model"]).to(torch.bfloat16)
    model.save_pretrained(directory)
    from transformers import AutoTokenizer
    AutoTokenizer.from_pretrained(setup["model"]).save_pretrained(directory)
    assert AutoModelForCausalLM.from_pretrained(directory).dtype == torch.bfloat16
    return {**setup, "model": str(directory)}


def make(setup, tmp_path, **overrides):
    values = dict(steps=1, eval={"dataset": None}, log={"plot": False})
    values = merge(values, overrides)
    return Trainer(tiny_config(setup, tmp_path / "run", **values), reward_source=_Scripted())


def test_a_bf16_checkpoint_trains_on_float32_master_weights(bf16_setup, tmp_path):
    trainer = make(bf16_setup, tmp_path, optim={"lr": 1e-5}, algorithm={"kl_coef": 0.05})
    try:
        assert {p.dtype for p in trainer.model.parameters()} == {torch.float32}
        assert {p.dtype for p in trainer.ref.parameters()} == {torch.float32}
        before = [p.detach().clone() for p in trainer.model.parameters()]
        trainer.train_step()
    finally:
        trainer.close()
    moved = sum(int((a != p.detach()).sum()) for a, p in zip(before, trainer.model.parameters()))
    total = sum(a.numel() for a in before)
    # one Adam step at lr 1e-5 moves (nearly) every weight; bf16 weights would round most moves away
    assert moved / total > 0.9


def _record_forwards(trainer):
    """(model, mode, logits dtype, logits length, input length) of every forward, tagged by phase."""
    calls, phase = [], {"now": "setup"}

    def hook(name):
        def record(module, args, kwargs, output):
            ids = kwargs.get("input_ids")
            calls.append({"model": name, "phase": phase["now"], "training": module.training,
                          "dtype": output.logits.dtype, "logits": output.logits.shape[1],
                          "inputs": ids.shape[1] if ids is not None else None})
        return record

    trainer.model.register_forward_hook(hook("policy"), with_kwargs=True)
    if trainer.ref is not None:
        trainer.ref.register_forward_hook(hook("ref"), with_kwargs=True)
    return calls, phase


def test_bf16_old_reference_and_update_log_probs_share_one_autocast(setup, tmp_path):
    trainer = make(setup, tmp_path, optim={"bf16": True, "num_iterations": 2}, algorithm={"kl_coef": 0.05})
    calls, _ = _record_forwards(trainer)
    try:
        record = trainer.train_step()
    finally:
        trainer.close()
    training = [c for c in calls if c["inputs"] is not None and c["inputs"] > 1 and c["logits"] > 1]
    assert {c["model"] for c in training} == {"policy", "ref"}
    assert {c["dtype"] for c in calls} == {torch.bfloat16}, "every forward runs under the bf16 autocast"
    # old log-probs and the first pass of the update agree exactly: the ratio starts at 1
    assert record["first_ratio_error"] == 0.0
    assert record["kl"] >= 0


def test_gradient_checkpointing_recomputes_in_the_update_and_modes_are_explicit(setup, tmp_path):
    trainer = make(setup, tmp_path, optim={"gradient_checkpointing": True, "micro_batch_size": 8})
    layer_calls = []
    # a submodule of the layer: transformers checkpoints the layer's forward, so the layer's own hooks
    # stay outside the checkpoint, while its submodules run again when backward recomputes it
    trainer.model.model.layers[0].mlp.register_forward_pre_hook(
        lambda module, args: layer_calls.append((module.training, torch.is_grad_enabled())))
    calls, _ = _record_forwards(trainer)
    try:
        trainer.train_step()
    finally:
        trainer.close()
    generation = [c for c in calls if c["inputs"] is not None and c["logits"] == 1]
    update = [c for c in calls if c["logits"] > 1]
    assert generation and not any(c["training"] for c in generation), "rollouts sample in eval mode"
    assert len(update) == 2 and all(c["training"] for c in update), "the update runs in train mode"
    in_update = [t for t in layer_calls if t[0]]
    # 16 rollouts in micro-batches of 8: each layer runs forward once and again in backward
    assert len(in_update) == 2 * len(update)


def test_the_update_never_materialises_the_prompts_logits(setup, tmp_path):
    trainer = make(setup, tmp_path, optim={"num_iterations": 2}, algorithm={"kl_coef": 0.05})
    calls, _ = _record_forwards(trainer)
    try:
        trainer.train_step()
    finally:
        trainer.close()
    full = [c for c in calls if c["logits"] > 1]
    assert full
    for c in full:  # prompt width W >= 2 here; only the T + 1 last positions get logits
        assert c["logits"] < c["inputs"], c
