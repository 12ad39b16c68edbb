"""Can token credit pay on a real model? SmolLM2-135M-Instruct on chat step chains (issue 36 item 3).

The study is a ``botgrpo compare`` protocol, ``docs/results/smollm2_chain/protocol.yaml``; this
module is its task code (:func:`setup`). The task is :mod:`botgrpo.trainer.tasks.chat_chain`
(a one-shot example, then a start value and a few operations; one checked step a line), the start
is the converted SmolLM2-135M-Instruct checkpoint (``make smollm2``), refused unless its
fingerprint is :data:`START_FINGERPRINT`.
The base rate the difficulty was set on: ``benchmarks/smollm2_chain_base.py``,
``docs/results/smollm2_chain/README.md``.
"""
from __future__ import annotations

from pathlib import Path

from botgrpo.trainer.tasks import chat_chain
from botgrpo.trainer.tasks.chat_arith import conversation_dataset

MODEL = Path.home() / ".cache" / "botgrpo" / "models" / "smollm2-135m-instruct"
# prefix of the start this protocol was written on (`make smollm2`, 2026-12-04, transformers 5.25.0). It is not
# the smollm2_rl study's (4dc202a4): this conversion also writes chat_template.jinja; whether the weights
# differ was not checked (docs/results/smollm2_chain/protocol.md, "Start")
START_FINGERPRINT = "5c4eca815b21"


def fingerprint(model: Path) -> str:
    """The start's fingerprint as the smollm2_rl study computes it (``conversion.json`` left out)."""
    from benchmarks.smollm2_rl import fingerprint as smollm2_fingerprint
    return smollm2_fingerprint(Path(model))


def setup(root: Path, model: str = str(MODEL), train_prompts: int = 2000, eval_prompts: int = 128,
          min_steps: int = 3, max_steps: int = 3, max_operand: int = 5, max_factor: int = 3,
          operators: str = "+-") -> dict[str, object]:
    """``botgrpo compare``'s setup hook: the chat chain prompts under ``root`` (training from draw
    seed ``chat_chain.TRAIN_SEED`` with every held-out question removed, held-out from
    ``chat_chain.EVAL_SEED``), each one user message under the model's chat template, and the
    SmolLM2 start, refused unless its fingerprint starts with :data:`START_FINGERPRINT`.
    Idempotent: the prompts are seeded."""
    if not Path(model).is_dir():
        raise SystemExit(f"{model}: no SmolLM2 start there: run `make smollm2`")
    found = fingerprint(Path(model))
    if not found.startswith(START_FINGERPRINT):
        raise SystemExit(f"{model}: start {found}, the protocol's is {START_FINGERPRINT}...: run `make smollm2`")
    difficulty = chat_chain.Difficulty(min_steps, max_steps, max_operand, max_factor, operators=tuple(operators))
    train, held_out = chat_chain.make_split(train_prompts, eval_prompts, difficulty)
    root = Path(root)
    return {"model": str(model),
            "data": {"dataset": conversation_dataset(root / "train.jsonl", train)},
            "eval": {"dataset": conversation_dataset(root / "eval.jsonl", held_out)}}
