"""Data-parallel training with torchrun on CPU (gloo, 2 processes) matches one process."""
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.live_server import LiveServer
from tests.tiny_setup import tiny_config, tiny_math_setup

SCRIPT = Path(__file__).with_name("distributed_run.py")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ddp")
    setup = tiny_math_setup(tmp)
    server = LiveServer(tmp, env={"BOTGRPO_WARM_SCORERS": "false"})
    yield tmp, setup, server
    server.stop()


def run(tmp, setup, server, name, nproc, mode):
    out = tmp / name
    out.mkdir()
    cfg = tiny_config(setup, out / "run", reward_url=server.url, steps=2, eval_dataset=None, plot=False,
                      prompts_per_step=4, distributed=mode, micro_batch_size=4)
    (out / "cfg.json").write_text(cfg.model_dump_json())
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           str(SCRIPT), str(out / "cfg.json"), str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return [torch.load(out / f"rank{r}.pt") for r in range(nproc)]


@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_two_ranks_match_one_process(env, mode):
    tmp, setup, server = env
    single = run(tmp, setup, server, f"single-{mode}", 1, "none")[0]
    rank0, rank1 = run(tmp, setup, server, f"two-{mode}", 2, mode)
    for name, p in single.items():
        assert torch.equal(rank0[name], rank1[name]), f"{name} differs across ranks"
        assert torch.allclose(rank0[name], p, atol=2e-5, rtol=1e-4), f"{name}: 2 ranks != 1 process"
    from transformers import AutoModelForCausalLM
    initial = dict(AutoModelForCausalLM.from_pretrained(setup["model"]).named_parameters())
    assert any(not torch.equal(initial[name].detach(), p) for name, p in single.items())  # training moved them
