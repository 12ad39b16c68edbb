"""LoRA fine-tuning (trainer/models/lora.py) on a tiny Qwen2: the merged weights handed to rollout
engines, adapter-only updates through the real Trainer, the reference = the adapter switched
off, exact resume, the final merged model, and the settings' validation. peft is a dev
dependency (the [lora] extra): without it these tests fail, never skip."""
import sys

import pytest
import torch
from pydantic import ValidationError
from transformers import AutoModelForCausalLM

from botgrpo.trainer.config import merge
from botgrpo.trainer.models import lora
from botgrpo.trainer.models.packing import enable_packed_attention
from botgrpo.trainer.models.policy import completion_logprobs, make_layout, pack
from botgrpo.trainer.models.precision import disable_dropout, load_causal_lm
from botgrpo.trainer.rollout.base import SamplingParams
from botgrpo.trainer.run.distributed import full_weights, unwrap
from botgrpo.trainer.run.update import batch_logprobs
from tests.test_trainer import _Scripted
from tests.tiny_setup import straight_and_resumed, tiny_config, tiny_math_setup

SETTINGS = {"r": 4, "alpha": 8.0}   # scaling alpha / r = 2
PROMPTS = ["Compute 1 + 2.\n", "Compute (3 + 4) * 5 step by step.\n"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return tiny_math_setup(tmp_path_factory.mktemp("tiny"))


def moved_adapter(path: str, seed: int = 0):
    """A LoRA policy whose B is not 0 (as after training), so W' differs from W."""
    model = lora.apply_lora(load_causal_lm(path, "cpu"), lora.LoraSettings(**SETTINGS))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.2)
    return model.eval()


def packed(engine_batch, pad_id: int):
    return pack(engine_batch.prompt_ids, engine_batch.completion_ids, engine_batch.completion_mask,
                engine_batch.group_size, pad_id)


def sample(model, tokenizer, seed: int = 1):
    from botgrpo.trainer.rollout.hf import HFEngine
    engine = HFEngine(model, tokenizer)
    return engine.generate(PROMPTS, 3, SamplingParams(max_new_tokens=16, temperature=0.7), seeds=[seed, seed + 1]), engine


# ---------------------------------------------------------------- the weights a rollout engine gets
def test_export_weights_are_the_merged_base_weights(setup):
    from transformers import AutoTokenizer
    model = moved_adapter(setup["model"])
    plain = load_causal_lm(setup["model"], "cpu").eval()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    exported = dict(lora.export_weights(model, torch.float32))
    assert [(n, t.shape) for n, t in exported.items()] == [(n, t.shape) for n, t in full_weights(plain, torch.float32)]
    assert not any("lora" in n or "base_layer" in n for n in exported)
    layer = model.get_base_model().model.layers[0].self_attn.q_proj
    by_hand = layer.base_layer.weight + (SETTINGS["alpha"] / SETTINGS["r"]) * (
        layer.lora_B["default"].weight @ layer.lora_A["default"].weight)
    assert torch.allclose(exported["model.layers.0.self_attn.q_proj.weight"], by_hand, atol=1e-7)
    assert not torch.allclose(by_hand, layer.base_layer.weight, atol=1e-3)  # the adapter does change W
    assert torch.equal(exported["model.layers.0.self_attn.q_proj.bias"], layer.base_layer.bias)
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())  # nothing merged in place
    assert exported.keys() == dict(lora.export_weights(plain, torch.float32)).keys()  # plain: full_weights

    plain.load_state_dict(exported)
    tokenizer = AutoTokenizer.from_pretrained(setup["model"])
    batch, engine = sample(model, tokenizer)  # sampled from the peft model itself (the on-policy HF engine)
    with torch.no_grad():
        ours = completion_logprobs(model, *packed(batch, engine.pad_id), temperature=0.7)
        merged = completion_logprobs(plain, *packed(batch, engine.pad_id), temperature=0.7)
    m = batch.completion_mask
    assert torch.allclose(ours[m], merged[m], atol=1e-5)
    assert torch.allclose(ours[m], batch.behaviour_logprobs[m], atol=1e-4)  # its KV-cached decode is the policy's


def test_apply_lora_without_peft_names_the_extra(setup, monkeypatch):
    monkeypatch.setitem(sys.modules, "peft", None)  # `import peft` raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'botgrpo\[lora\]'"):
        lora.apply_lora(torch.nn.Linear(2, 2), lora.LoraSettings())


# ---------------------------------------------------------------- through the Trainer
def make(setup, out, **overrides):
    from botgrpo.trainer.run.loop import Trainer
    values = dict(steps=3, eval={"dataset": None}, log={"plot": False}, optim={"lora": SETTINGS}, algorithm={"kl_coef": 0.1})
    values = merge(values, overrides)
    return Trainer(tiny_config(setup, out, **values), reward_source=_Scripted())


@pytest.fixture(scope="module")
def run(setup, tmp_path_factory):
    """Three LoRA steps with a KL term; every reference log-prob pass recorded with its layout."""
    import botgrpo.trainer.run.loop as loop
    trainer = make(setup, tmp_path_factory.mktemp("lora") / "run")
    start = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    passes = []

    def recorded(model, layout, **kwargs):
        out = real(model, layout, **kwargs)
        if model is trainer.ref:
            passes.append((layout, kwargs, out))
        return out

    real = loop.batch_logprobs
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(loop, "batch_logprobs", recorded)
        try:
            records = trainer.train()
        finally:
            trainer.close()
    return {"trainer": trainer, "start": start, "passes": passes, "records": records}


def test_only_the_adapter_trains(run, setup):
    trainer = run["trainer"]
    params = dict(trainer.model.named_parameters())
    adapter = {n for n in params if ".lora_A." in n or ".lora_B." in n}
    assert adapter and {n for n, p in params.items() if p.requires_grad} == adapter
    original = load_causal_lm(setup["model"], "cpu").state_dict()
    for name, p in params.items():
        if name in adapter:
            continue
        assert torch.equal(p, run["start"][name]), name  # the base, bit for bit
        assert torch.equal(p, original[name.removeprefix("base_model.model.").replace(".base_layer", "")]), name
    assert all(not torch.equal(params[n], run["start"][n]) for n in adapter if ".lora_B." in n)
    in_optimizer = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert in_optimizer == {id(params[n]) for n in adapter}
    assert all(r["update_skipped"] == 0 for r in run["records"])


def test_the_reference_is_the_base_model_while_the_policy_moves(run, setup):
    trainer = run["trainer"]
    assert isinstance(trainer.ref, lora.AdapterDisabled) and trainer.ref.model is unwrap(trainer.model)  # no copy
    base = load_causal_lm(setup["model"], "cpu").eval()
    disable_dropout(base)
    enable_packed_attention(base)
    assert len(run["passes"]) == 3  # one per step
    for layout, kwargs, ref in run["passes"]:
        assert torch.allclose(ref, batch_logprobs(base, layout, **kwargs), atol=1e-6)
    layout, kwargs, ref = run["passes"][-1]
    policy = batch_logprobs(trainer.model, layout, **kwargs)
    assert float((policy - ref).abs().max()) > 1e-3  # the adapter moved the policy away from the reference
    assert run["records"][-1]["kl"] > 0


def test_the_final_checkpoint_holds_the_adapter_and_a_merged_model(run, setup):
    trainer = run["trainer"]
    path = trainer.out / "checkpoint-3"
    assert (path / "adapter_model.safetensors").exists() and (path / "adapter_config.json").exists()
    merged = AutoModelForCausalLM.from_pretrained(path / lora.MERGED_DIR).eval()
    assert merged.state_dict().keys() == load_causal_lm(setup["model"], "cpu").state_dict().keys()
    batch, engine = sample(trainer.model, trainer.tokenizer, seed=5)
    with torch.no_grad():
        ours = completion_logprobs(trainer.model, *packed(batch, engine.pad_id))
        theirs = completion_logprobs(merged, *packed(batch, engine.pad_id))
    m = batch.completion_mask
    assert torch.allclose(ours[m], theirs[m], atol=1e-5)
    base = load_causal_lm(setup["model"], "cpu").eval()
    with torch.no_grad():
        assert float((completion_logprobs(base, *packed(batch, engine.pad_id)) - ours)[m].abs().max()) > 1e-3


def test_resumed_lora_run_equals_an_uninterrupted_one(setup, tmp_path):
    def adapter(trainer):
        return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}

    straight, straight_records, resumed, resumed_records = straight_and_resumed(
        lambda out, **kw: make(setup, out, **kw), tmp_path)
    for a, b in zip(straight_records[2:], resumed_records, strict=True):
        for key in ("reward_mean", "loss", "grad_norm", "kl", "completion_len_mean"):
            assert a[key] == b[key], key
    ours, theirs = adapter(straight), adapter(resumed)
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[n], theirs[n]) for n in ours)


def test_the_async_samplers_copy_gets_the_merged_weights(setup, tmp_path):
    trainer = make(setup, tmp_path / "async", steps=2, rollout={"async_steps": 1}, algorithm={"kl_coef": 0.0})
    try:
        trainer.train()
        sampler = trainer.engine.model
        assert not lora.is_lora(sampler)  # a plain copy: sampling costs no adapter matmuls
        trainer.engine.sync_weights()
        trainer.engine.prepare()
        own = sampler.state_dict()
        exported = dict(lora.export_weights(trainer.model, torch.float32))
        assert own.keys() == exported.keys() and all(torch.equal(own[n], t) for n, t in exported.items())
        base = load_causal_lm(setup["model"], "cpu").state_dict()
        assert not torch.equal(own["model.layers.0.mlp.down_proj.weight"], base["model.layers.0.mlp.down_proj.weight"])
    finally:
        trainer.close()


def test_a_resumed_lora_runs_vllm_engine_starts_from_the_base_and_gets_the_merged_weights(setup, tmp_path, monkeypatch):
    """With the stand-in for vLLM (tests/fake_vllm.py, which refuses a load missing any of its
    parameters): a LoRA checkpoint holds only the adapter, so the resumed run's engine is built from
    the base model and its first load is the resumed policy's merged weights."""
    from tests import fake_vllm
    from tests.test_rollout_vllm import vllm_trainer
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm.install())
    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "VLLM_ENABLE_V1_MULTIPROCESSING"):
        monkeypatch.delenv(key, raising=False)
    fake_vllm.LLM.instances.clear()
    first = vllm_trainer(setup, tmp_path / "run", steps=1, optim={"lora": SETTINGS}, rollout={"vllm": {"sleep": False}})
    first.train()
    first.close()
    assert not (tmp_path / "run" / "checkpoint-1" / "model.safetensors").exists()  # the adapter only
    resumed = vllm_trainer(setup, tmp_path / "run", steps=2, optim={"lora": SETTINGS},
                           rollout={"vllm": {"sleep": False}}, checkpoint={"resume": True})
    try:
        assert resumed.step == 1 and fake_vllm.LLM.instances[-1].kwargs["model"] == setup["model"]
        merged = dict(lora.export_weights(resumed.model, torch.float32))
        resumed.train_step()
    finally:
        resumed.close()
    loaded = fake_vllm.LLM.instances[-1].loaded[0]
    assert loaded.keys() == merged.keys() and all(torch.equal(loaded[n], merged[n]) for n in merged)
    base = load_causal_lm(setup["model"], "cpu").state_dict()
    assert not torch.equal(loaded["model.layers.1.self_attn.o_proj.weight"], base["model.layers.1.self_attn.o_proj.weight"])


def test_gradient_checkpointing_gives_the_same_update(setup, tmp_path):
    def one_step(name, checkpointing):
        trainer = make(setup, tmp_path / name, steps=1, algorithm={"kl_coef": 0.0}, optim={"gradient_checkpointing": checkpointing})
        trainer.train()
        trainer.close()
        return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}

    plain, checkpointed = one_step("plain", False), one_step("gc", True)
    assert all(torch.allclose(plain[n], checkpointed[n], atol=1e-6) for n in plain)
    assert any(float(plain[n].abs().max()) > 0 for n in plain if ".lora_B." in n)


# ---------------------------------------------------------------- settings
def test_lora_settings_are_validated():
    from botgrpo.trainer.config import TrainConfig

    def config(**values):
        return TrainConfig.model_validate({"model": "m", "data": {"dataset": "d"}, **values})

    assert config().optim.lora is None  # full fine-tune unless asked
    assert config(optim={"lora": {}}).optim.lora == lora.LoraSettings(r=16, alpha=32.0, dropout=0.0, target_modules="all-linear")
    assert config(optim={"lora": {"target_modules": ["q_proj", "v_proj"]}}).optim.lora.target_modules == ["q_proj", "v_proj"]
    with pytest.raises(ValidationError, match=r"lora\.r\n.*greater than or equal to 1"):
        config(optim={"lora": {"r": 0}})
    with pytest.raises(ValidationError, match=r"lora\.rank\n.*Extra inputs are not permitted"):
        config(optim={"lora": {"rank": 8}})
    with pytest.raises(ValidationError, match=r"lora\.alpha"):
        config(optim={"lora": {"alpha": 0}})
    with pytest.raises(ValidationError, match="target_modules"):
        config(optim={"lora": {"target_modules": "attention"}})
    with pytest.raises(ValidationError, match="lora is not supported with distributed: fsdp"):
        config(optim={"lora": {}}, distributed="fsdp")
    with pytest.raises(ValidationError, match="lora.dropout > 0 needs disable_dropout: false"):
        config(optim={"lora": {"dropout": 0.1}})
    assert config(optim={"lora": {"dropout": 0.1}, "disable_dropout": False}).optim.lora.dropout == 0.1
