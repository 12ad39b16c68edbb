"""Entry point for the data-parallel tests: train per a JSON config, save this rank's parameters.

    torchrun --nproc_per_node 2 tests/distributed_run.py CONFIG_JSON OUT_DIR

With ``engine: vllm`` the CPU stand-in for vLLM (tests/fake_vllm.py) takes vLLM's place, and
each rank also saves what its engine was built with and the weights it was handed.
"""
import json
import sys
from pathlib import Path

import torch

from botgrpo.embedded import reward_server_for
from botgrpo.trainer.config import TrainConfig
from botgrpo.trainer.run.distributed import unwrap
from botgrpo.trainer.run.loop import Trainer


def main() -> None:
    torch.set_num_threads(1)
    cfg = TrainConfig.model_validate(json.loads(Path(sys.argv[1]).read_text()))
    if cfg.rollout.engine == "vllm":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests import fake_vllm
        fake_vllm.install()
    server = reward_server_for(cfg)
    trainer = Trainer(server.__enter__())
    try:
        trainer.train()
        state = {name: p.detach().full_tensor() if hasattr(p, "full_tensor") else p.detach()
                 for name, p in unwrap(trainer.model).named_parameters()}
        torch.save(state, Path(sys.argv[2]) / f"rank{trainer.d.rank}.pt")
        if cfg.rollout.engine == "vllm":
            llm = trainer.engine.llm
            torch.save({"kwargs": llm.kwargs, "rank": llm.rank, "in_process": llm.in_process, "loaded": llm.loaded,
                        "events": llm.events}, Path(sys.argv[2]) / f"vllm{trainer.d.rank}.pt")
    finally:
        trainer.close()
        server.__exit__(None, None, None)


if __name__ == "__main__":
    main()
