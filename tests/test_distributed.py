"""Data-parallel training with torchrun on CPU (gloo, 2 processes) matches one process."""
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from botgrpo.trainer.config import merge
from tests.live_server import LiveServer
from tests.tiny_setup import tiny_config, tiny_math_setup

SCRIPT = Path(__file__).with_name("distributed_run.py")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ddp")
    setup = tiny_math_setup(tmp)
    # a short warm start: a random-init policy writes no answer, every token then scores the
    # lowest reward, every advantage is 0 and no weight would move
    from botgrpo.trainer.models.sft import sft
    from botgrpo.trainer.tasks import arith
    sft(setup["model"], arith.make_sft_corpus(200, 0), max_steps=60, max_seconds=None, lr=5e-3)
    server = LiveServer(tmp, env={"BOTGRPO_WARM_SCORERS": "false"})
    yield tmp, setup, server
    server.stop()


def run(tmp, setup, server, name, nproc, mode, **overrides):
    out = tmp / name
    out.mkdir()
    # streamed_update off: ranks > 1 always take the batch path, and one process is compared with
    # them on the same path (streamed = batch is tested in test_streamed_update.py; here AdamW would
    # turn the two paths' different rounding of gradients that are 0 in exact arithmetic into lr-sized steps)
    values = dict(reward={"url": server.url}, eval={"dataset": None}, log={"plot": False},
                  rollout={"prompts_per_step": 4}, optim={"micro_batch_size": 4, "streamed_update": False}, steps=2,
                  distributed=mode)
    values = merge(values, overrides)
    cfg = tiny_config(setup, out / "run", **values)
    (out / "cfg.json").write_text(cfg.model_dump_json())
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           str(SCRIPT), str(out / "cfg.json"), str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return [torch.load(out / f"rank{r}.pt") for r in range(nproc)]


def test_fsdp_ranks_hand_their_vllm_engines_full_weights(env):
    """Each torchrun rank builds an in-process engine (external launcher) and, under FSDP, hands it
    every parameter whole (gathered from the shards), exactly the unsharded model's."""
    tmp, setup, server = env
    run(tmp, setup, server, "vllm-fsdp", 2, "fsdp", rollout={"engine": "vllm", "sampling": {"max_new_tokens": 6}})
    from transformers import AutoModelForCausalLM
    initial = AutoModelForCausalLM.from_pretrained(setup["model"]).state_dict()
    for rank in range(2):
        engine = torch.load(tmp / "vllm-fsdp" / f"vllm{rank}.pt", weights_only=False)
        assert engine["kwargs"]["distributed_executor_backend"] == "external_launcher" and engine["in_process"]
        assert engine["rank"] == (rank, rank)
        assert len(engine["loaded"]) == 2  # before each of the two steps' generations
        first = engine["loaded"][0]
        assert first.keys() == initial.keys()
        for name, tensor in initial.items():
            assert torch.equal(first[name], tensor.float()), name
        assert any(not torch.equal(engine["loaded"][1][n], first[n]) for n in first)  # step 2 got the update


@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_two_ranks_match_one_process(env, mode):
    tmp, setup, server = env
    single = run(tmp, setup, server, f"single-{mode}", 1, "none")[0]
    rank0, rank1 = run(tmp, setup, server, f"two-{mode}", 2, mode)
    _same(single, rank0, rank1)
    from transformers import AutoModelForCausalLM
    initial = dict(AutoModelForCausalLM.from_pretrained(setup["model"]).named_parameters())
    assert any(not torch.equal(initial[name].detach(), p) for name, p in single.items())  # training moved them


def _same(single, rank0, rank1):
    """The ranks agree exactly, and match one process to float tolerance. Except the keys' bias:
    its gradient is 0 in exact arithmetic (softmax over keys ignores a shift q.b common to them
    all), so AdamW turns each path's rounding noise into lr-sized steps of either sign."""
    for name, p in single.items():
        assert torch.equal(rank0[name], rank1[name]), f"{name} differs across ranks"
        if not name.endswith("k_proj.bias"):
            assert torch.allclose(rank0[name], p, atol=2e-5, rtol=1e-4), f"{name}: 2 ranks != 1 process"


def test_two_ranks_packed_match_one_process_padded(env):
    """Packed micro-batches of at most 60 tokens on each of 2 DDP ranks (the ranks agree on how
    many: each backward is a collective) against padded micro-batches of 4 rows in one process."""
    tmp, setup, server = env
    single = run(tmp, setup, server, "single-padded", 1, "none", optim={"packing": False})[0]
    rank0, rank1 = run(tmp, setup, server, "two-packed", 2, "ddp", optim={"packing": True, "micro_batch_tokens": 60})
    _same(single, rank0, rank1)


@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_two_ranks_async_match_one_process_async(env, mode):
    """The asynchronous pipeline under torchrun: each rank samples its prompts on a background
    thread from a plain copy of the weights (gathered from the shards under FSDP, on the main
    thread), no collective off the main thread; the ranks equal one process running async."""
    tmp, setup, server = env
    single = run(tmp, setup, server, f"single-async-{mode}", 1, "none", rollout={"async_steps": 1}, steps=3)[0]
    rank0, rank1 = run(tmp, setup, server, f"two-async-{mode}", 2, mode, rollout={"async_steps": 1}, steps=3)
    _same(single, rank0, rank1)


def test_lora_under_ddp_resumes_exactly(env):
    """LoRA adapters under DDP (trainer/models/lora.py): the ranks agree, the base stays the starting
    checkpoint's, and a run resumed from its step-1 checkpoint (every rank loads the adapter and the
    optimizer state itself: DDP holds full tensors) equals an uninterrupted one bit for bit."""
    tmp, setup, server = env
    lora = {"r": 4, "alpha": 8.0}
    rank0, rank1 = run(tmp, setup, server, "lora-straight", 2, "ddp", optim={"lora": lora}, steps=2)
    run(tmp, setup, server, "lora-first", 2, "ddp", optim={"lora": lora}, steps=1)
    resumed = run(tmp, setup, server, "lora-resumed", 2, "ddp", optim={"lora": lora}, checkpoint={"resume": True},
                  steps=2, output_dir=str(tmp / "lora-first" / "run"))
    assert all(torch.equal(rank0[n], rank1[n]) for n in rank0)
    assert all(torch.equal(rank0[n], resumed[0][n]) and torch.equal(rank1[n], resumed[1][n]) for n in rank0)
    from transformers import AutoModelForCausalLM
    initial = AutoModelForCausalLM.from_pretrained(setup["model"]).state_dict()
    for name, p in rank0.items():
        base = name.removeprefix("base_model.model.").replace(".base_layer", "")
        assert ("lora_" in name) != torch.equal(p, initial.get(base, torch.empty(0))), name  # only adapters moved
    assert any(float(p.abs().max()) > 0 for name, p in rank0.items() if ".lora_B." in name)  # B starts at 0
