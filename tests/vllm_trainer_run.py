"""One training run with the real vLLM engine, in its own process (one in-process vLLM engine per
process): ``python -m tests.vllm_trainer_run PATHS_JSON OUT STEPS [--async] [--resume]`` prints one
JSON line, ``RESULT {...}``, with the run's records and what the engine was built from."""
from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> None:
    import torch

    from tests.test_trainer import _Scripted
    from tests.tiny_setup import tiny_config
    from botgrpo.trainer.run.loop import Trainer

    paths, out, steps = json.loads(argv[0]), argv[1], int(argv[2])
    cfg = tiny_config(paths, out, steps=steps, eval={"dataset": None}, log={"plot": False},
                      rollout={"engine": "vllm", "async_steps": 1 if "--async" in argv else 0,
                               "sampling": {"max_new_tokens": 8},
                               "vllm": {"max_model_len": 256, "kwargs": {"enforce_eager": True}}},
                      checkpoint={"resume": "--resume" in argv, "save_every": 1})
    trainer = Trainer(cfg, reward_source=_Scripted())
    loads = []
    load = trainer.engine._load_weights

    def counted():
        loads.append(trainer.step)
        load()

    trainer.engine._load_weights = counted
    try:
        start = trainer.step
        records = trainer.train()
    finally:
        trainer.close()
    print("RESULT " + json.dumps({
        "start": start, "steps": [r.get("step") for r in records], "model": trainer.engine.llm.llm_engine.model_config.model,
        "cpu": trainer.engine.cpu, "sleep": trainer.engine.sleep, "loads": loads,
        "loss_finite": all(torch.isfinite(torch.tensor(float(r.get("loss", 0.0)))) for r in records),
        "threads": torch.get_num_threads()}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
