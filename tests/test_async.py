"""The asynchronous pipeline (``async_steps: 1``): step t+1's rollouts are sampled from the weights
before step t's update, on another thread, while step t updates; the loss's ratio is against
the behaviour log-probs the engine returned; the staleness is at most one version and logged;
a resumed run equals an uninterrupted one; on-policy stays the default."""
import json
import threading

import pytest
import torch

from botgrpo.trainer.config import merge
from botgrpo.trainer.run.distributed import unwrap
from tests.test_trainer import _Scripted
from tests.tiny_setup import straight_and_resumed, tiny_config, tiny_math_setup


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return tiny_math_setup(tmp_path_factory.mktemp("tiny"))


def make(setup, out, **overrides):
    from botgrpo.trainer.run.loop import Trainer
    values = dict(steps=3, eval={"dataset": None}, log={"plot": False}, rollout={"async_steps": 1})
    values = merge(values, overrides)
    return Trainer(tiny_config(setup, out, **values), reward_source=_Scripted(unscored=(1,)))


def params(module):
    return [p.detach().clone() for p in module.parameters()]


def test_on_policy_is_the_default():
    from botgrpo.trainer.config import TrainConfig
    assert TrainConfig(model="m", data={"dataset": "d"}).rollout.async_steps == 0
    with pytest.raises(ValueError):
        TrainConfig(model="m", data={"dataset": "d"}, rollout={"async_steps": 2})


def test_rollouts_come_from_the_weights_before_the_previous_update_and_the_ratio_uses_their_logprobs(
        setup, tmp_path, monkeypatch):
    import botgrpo.trainer.run.loop as loop
    trainer = make(setup, tmp_path / "run", steps=3, optim={"num_iterations": 2})
    assert trainer.engine.model is not unwrap(trainer.model)  # the sampler has its own copy of the weights
    events, generated, updates = [], [], []
    engine_generate = trainer.engine.generate

    def generate(*args, **kwargs):
        events.append(("generate", threading.current_thread() is threading.main_thread()))
        snapshot = params(trainer.engine.model)
        batch = engine_generate(*args, **kwargs)
        generated.append((snapshot, batch))
        return batch

    real_add = loop.Update.add

    def add(update, part):  # the batch is one part; record it on the step's first pass
        if update.first_pass:
            events.append(("update", None))
            updates.append((params(update.model), part.old_logp.clone(), part.mask.clone()))
        return real_add(update, part)

    monkeypatch.setattr(trainer.engine, "generate", generate)
    monkeypatch.setattr(loop.Update, "add", add)
    try:
        records = trainer.train()
    finally:
        trainer.close()
    assert [r["staleness"] for r in records] == [0, 1, 1]
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [x["staleness"] for x in lines] == [0, 1, 1]
    # B1 sampled before anything (main thread); B(k+1) sampled in the background during step k
    assert len(generated) == 4  # the batch of a 4th step is prefetched too: a resume continues with it
    assert events[0] == ("generate", True)
    assert [e for e in events[1:] if e[0] == "generate"] == [("generate", False)] * 3
    before = [u[0] for u in updates]  # weights before each step's update
    assert all(torch.equal(a, b) for a, b in zip(generated[0][0], before[0]))
    assert all(torch.equal(a, b) for a, b in zip(generated[1][0], before[0]))  # step 2's rollouts: theta_0
    for k in (1, 2):  # step k+2's rollouts: the weights before step k+1's update
        assert all(torch.equal(a, b) for a, b in zip(generated[k + 1][0], before[k]))
    assert not all(torch.equal(a, b) for a, b in zip(before[0], before[1]))  # the updates did move them
    for (_, batch), (_, old, mask) in zip(generated, updates):  # the ratio is against the behaviour log-probs
        m = batch.completion_mask
        assert torch.equal(old[m], batch.behaviour_logprobs[m])
    assert records[1]["first_ratio_error"] > records[0]["first_ratio_error"]  # one version stale: ratio != 1


def test_resumed_async_run_equals_an_uninterrupted_one(setup, tmp_path):
    straight, straight_records, resumed, resumed_records = straight_and_resumed(
        lambda out, **kw: make(setup, out, **kw), tmp_path)
    assert [r["staleness"] for r in resumed_records] == [1, 1]
    for a, b in zip(straight_records[2:], resumed_records):
        for key in ("reward_mean", "loss", "grad_norm", "completion_len_mean", "first_ratio_error"):
            assert a[key] == b[key], key
    for a, b in zip(params(straight.model), params(resumed.model)):
        assert torch.equal(a, b)


def test_async_and_on_policy_sample_the_same_prompts_and_first_batch(setup, tmp_path):
    """Seeds and prompt order do not depend on the pipeline: step 1 is identical, later steps
    differ only by which weights sampled them."""
    on = make(setup, tmp_path / "on", steps=1, rollout={"async_steps": 0})
    off = make(setup, tmp_path / "off", steps=1)
    try:
        [a], [b] = on.train(), off.train()
    finally:
        on.close()
        off.close()
    assert a["staleness"] == 0 and b["staleness"] == 0
    assert a["completion_len_mean"] == b["completion_len_mean"] and a["reward_mean"] == b["reward_mean"]


def test_the_vllm_engine_loads_the_weights_before_the_update_and_samples_during_it(setup, tmp_path, monkeypatch):
    """With the stand-in for vLLM: the policy's weights are loaded into the engine on the
    trainer's thread before each update, and the next batch is sampled from them meanwhile."""
    from tests.test_rollout_vllm import snapshots, vllm_trainer
    import os
    import sys
    from tests import fake_vllm
    monkeypatch.setitem(sys.modules, "vllm", fake_vllm.install())
    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "VLLM_ENABLE_V1_MULTIPROCESSING"):
        monkeypatch.delenv(key, raising=False)
    fake_vllm.LLM.instances.clear()
    try:
        trainer = vllm_trainer(setup, tmp_path / "run", rollout={"async_steps": 1})
        states = [snapshots(trainer)]
        try:
            records = trainer.train(on_step=lambda record: states.append(snapshots(trainer)))
        finally:
            trainer.close()
    finally:
        for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "VLLM_ENABLE_V1_MULTIPROCESSING"):
            os.environ.pop(key, None)
    assert [r["staleness"] for r in records] == [0, 1]
    [llm] = fake_vllm.LLM.instances
    # step 1's batch (theta_0), the copy for step 2's batch (theta_0 again: sleep level 2 dropped it),
    # and for step 3's (theta_1, before step 2's update)
    assert len(llm.loaded) == 3
    for loaded, state in zip(llm.loaded, [states[0], states[0], states[1]]):
        assert all(torch.equal(loaded[n], state[n]) for n in state)
    assert llm.events.count("generate") == 3
