"""The vLLM engine on CPU, against a stand-in that enforces vLLM 0.33's API (tests/fake_vllm.py):
in-process worker, weight sync through the worker's reload, sleep level 2 with tagged wake-ups,
built after resume, independent per-prompt seeds, tempered log-probs, the HF engine's stop tokens.
vLLM itself needs a GPU: benchmarks/gpu_check.py runs the same engine on one."""
import os
from dataclasses import dataclass

import pytest
import torch

from botgrpo.trainer.config import merge
from botgrpo.trainer.models.tiny import train_tokenizer
from botgrpo.trainer.rollout.base import SamplingParams
from botgrpo.trainer.rollout.vllm import to_batch
from tests import fake_vllm
from tests.test_trainer import _Scripted
from tests.tiny_setup import tiny_config, tiny_math_setup


@dataclass
class Logprob:
    logprob: float


@dataclass
class Completion:
    index: int
    token_ids: list
    logprobs: list


@dataclass
class RequestOutput:
    outputs: list


def test_to_batch_builds_masks_logprobs_and_spans():
    tok = train_tokenizer(["hello world\nreturn x;\n"] * 20, vocab_size=280)
    eos, pad = tok.eos_token_id, tok.pad_token_id
    a = tok("hello world")["input_ids"] + [eos]
    b = tok("return x;\nhello")["input_ids"]  # truncated: no eos
    outs = [RequestOutput([Completion(1, b, [{t: Logprob(-1.0)} for t in b]),  # vLLM may finish sample 1 first
                           Completion(0, a, [{t: Logprob(-0.5)} for t in a])])]
    batch = to_batch(outs, [[1, 2]], tok, 2, pad, [eos])
    assert batch.completion_ids.shape == (2, max(len(a), len(b)))
    assert batch.lengths.tolist() == [len(a), len(b)]
    assert batch.texts == ["hello world", "return x;\nhello"]
    assert batch.truncated.tolist() == [False, True]
    assert torch.all(batch.behaviour_logprobs[0, : len(a)] == -0.5) and batch.behaviour_logprobs[1, len(b):].abs().sum() == 0
    assert [len(s) for s in batch.spans] == [len(a), len(b)] and batch.spans[1][-1][1] == len(batch.texts[1])


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return tiny_math_setup(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "vllm", fake_vllm.install())
    saved = dict(os.environ)  # the engine sets the launcher's variables for a single process
    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "VLLM_ENABLE_V1_MULTIPROCESSING"):
        os.environ.pop(key, None)
    fake_vllm.LLM.instances.clear()
    yield fake_vllm
    os.environ.clear()
    os.environ.update(saved)


def vllm_trainer(setup, out, **overrides):
    from botgrpo.trainer.run.loop import Trainer
    values = dict(rollout={"engine": "vllm", "sampling": {"max_new_tokens": 8}}, eval={"dataset": None}, log={"plot": False}, steps=2)
    values = merge(values, overrides)
    return Trainer(tiny_config(setup, out, **values), reward_source=_Scripted())


def snapshots(trainer):
    return {n: p.detach().clone() for n, p in trainer.model.state_dict().items()}


def test_weights_reach_the_in_process_engine_before_every_generation(setup, fake, tmp_path):
    trainer = vllm_trainer(setup, tmp_path / "run")
    states = [snapshots(trainer)]
    try:
        trainer.train(on_step=lambda record: states.append(snapshots(trainer)))
    finally:
        trainer.close()
    [llm] = fake.LLM.instances
    assert llm.kwargs["distributed_executor_backend"] == "external_launcher"
    assert llm.kwargs["logprobs_mode"] == "processed_logprobs"
    assert len(llm.loaded) == 2  # one load per generation, the policy as it was then
    for loaded, state in zip(llm.loaded, states):
        assert loaded.keys() == state.keys()
        assert all(torch.equal(loaded[n], state[n]) for n in state)
    assert not all(torch.equal(states[0][n], states[-1][n]) for n in states[0])  # and the policy did move


def test_sleep_level_two_and_tagged_wake_ups_keep_vllm_out_of_the_update(setup, fake, tmp_path):
    trainer = vllm_trainer(setup, tmp_path / "run")
    during_update = []
    step = trainer.optimizer.step

    def recorded_step(*args, **kwargs):
        during_update.append(fake.LLM.instances[0].allocated())
        return step(*args, **kwargs)

    trainer.optimizer.step = recorded_step
    try:
        trainer.train()
    finally:
        trainer.close()
    events = fake.LLM.instances[0].events
    one = ["wake:weights", "reload", "reset_prefix_cache", "wake:kv_cache", "generate", "sleep:2"]
    assert events == ["init", "sleep:2"] + one * 2
    assert during_update == [set(), set()]  # neither weights nor KV cache beside the optimizer


def test_the_engine_is_built_after_resume_and_samples_the_resumed_weights(setup, fake, tmp_path):
    first = vllm_trainer(setup, tmp_path / "run", steps=1)
    first.train()
    first.close()
    resumed = vllm_trainer(setup, tmp_path / "run", steps=2, checkpoint={"resume": True})
    state = snapshots(resumed)
    try:
        assert resumed.step == 1
        assert fake.LLM.instances[-1].kwargs["model"] == str(tmp_path / "run" / "checkpoint-1")
        resumed.train_step()
    finally:
        resumed.close()
    loaded = fake.LLM.instances[-1].loaded[0]
    assert all(torch.equal(loaded[n], state[n]) for n in state)


def test_neighbouring_prompts_draw_independent_streams(setup, fake, tmp_path):
    trainer = vllm_trainer(setup, tmp_path / "run")
    try:
        prompts = [e.prompt for e in trainer.examples[:4]]
        trainer.engine.generate(prompts, 4, SamplingParams(max_new_tokens=2), seeds=[100, 101, 102, 103])
    finally:
        trainer.close()
    seeds = fake.LLM.instances[0].child_seeds
    assert len(seeds) == 16 and len(set(seeds)) == 16  # vLLM's seed + k would overlap for seeds 100..103


def test_behaviour_log_probs_are_those_of_the_tempered_distribution(setup, fake, tmp_path):
    from botgrpo.trainer.models.policy import completion_logprobs, pack
    trainer = vllm_trainer(setup, tmp_path / "run", rollout={"sampling": {"max_new_tokens": 8, "temperature": 0.7}})
    try:
        batch = trainer.engine.generate([e.prompt for e in trainer.examples[:2]], 3, trainer.cfg.rollout.sampling,
                                        seeds=[1, 2])
        inputs = pack(batch.prompt_ids, batch.completion_ids, batch.completion_mask, 3, trainer.engine.pad_id)
        with torch.no_grad():
            logp = completion_logprobs(trainer.model, *inputs, temperature=0.7)
    finally:
        trainer.close()
    m = batch.completion_mask
    assert torch.allclose(logp[m], batch.behaviour_logprobs[m], atol=1e-4)


def test_both_engines_stop_at_the_generation_configs_end_tokens(setup, fake, tmp_path):
    from transformers import GenerationConfig
    config = GenerationConfig.from_pretrained(setup["model"])
    config.eos_token_id = [config.eos_token_id, 7]
    config.save_pretrained(setup["model"])
    try:
        trainer = vllm_trainer(setup, tmp_path / "run")
        try:
            params = trainer.engine.sampling_params(4, trainer.cfg.rollout.sampling, 0)
            from botgrpo.trainer.rollout.hf import HFEngine
            hf = HFEngine(trainer.model, trainer.tokenizer)
            assert params.stop_token_ids == hf.stop_ids == trainer.stop_ids == [trainer.tokenizer.eos_token_id, 7]
        finally:
            trainer.close()
    finally:
        config.eos_token_id = config.eos_token_id[0]
        config.save_pretrained(setup["model"])
