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

import hashlib
import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from botgrpo.compare.cells import BUILT_FROM
from botgrpo.trainer.models import pretrained
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


@dataclass(frozen=True)
class WarmRecipe:
    """How the warm start is made from the SmolLM2 start: plain SFT (``botgrpo.trainer.models.sft``,
    loss on the completion) on worked chains of the study's difficulty under the chat template, a
    ``broken_share`` of them with one slip (``chat_chain.make_sft_corpus``, draw ``corpus_seed``,
    held-out prompts excluded). ``threads``: torch threads, part of the recipe because the sums'
    order, and so the weights' last bits, depend on it."""

    steps: int = 48
    batch_size: int = 8
    lr: float = 3e-5
    warmup_steps: int = 5
    broken_share: float = 0.5
    corpus_seed: int = 33
    seed: int = 0
    threads: int = 2

    @property
    def name(self) -> str:
        return (f"smollm2-chain-warm-s{self.steps}-b{self.batch_size}-lr{self.lr:g}-w{self.warmup_steps}"
                f"-broken{self.broken_share:g}-c{self.corpus_seed}-seed{self.seed}-t{self.threads}")


# what a warm start's BUILT_FROM names as its maker: change it when the SFT code changes what a recipe makes
BUILDER = "benchmarks.smollm2_chain.warm_start 1"


def warm_start(difficulty: chat_chain.Difficulty, recipe: WarmRecipe, base: Path = MODEL, eval_prompts: int = 128,
               cache: Path = MODEL.parent, log=print) -> Path:
    """The warm start's model folder under ``cache`` (``<recipe name>-<difficulty>/model``), built
    from ``base`` if missing: the base copied, trained by :class:`WarmRecipe`, saved with its
    ``built-from.json`` (:func:`built_from`: what identifies it to ``botgrpo compare``, since its
    bytes differ from one CPU to another), and ``warm.json`` (recipe, difficulty, SFT loss and
    seconds) written beside the folder, last, so a folder without it is an interrupted build and
    is made again. A build from before ``built-from.json`` existed gets it here, not a new build."""
    from botgrpo.trainer.models.sft import sft

    d = difficulty
    out = Path(cache) / f"{recipe.name}-d{d.min_steps}{d.max_steps}o{d.max_operand}{''.join(d.operators)}"
    if (out / "warm.json").exists():
        if not (out / "model" / BUILT_FROM).exists():
            _write_built_from(out / "model", checked_print(Path(base)), d, recipe,
                              sft_pairs(out / "model", d, recipe, eval_prompts))
        return out / "model"
    base_print = checked_print(Path(base))
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(base, out / "model", ignore=shutil.ignore_patterns(pretrained.RECORD))  # the base's, not this model's
    pairs = sft_pairs(out / "model", d, recipe, eval_prompts)
    began = time.perf_counter()
    metrics = sft(out / "model", pairs, max_steps=recipe.steps, max_seconds=None, batch_size=recipe.batch_size,
                  lr=recipe.lr, warmup_steps=recipe.warmup_steps, seed=recipe.seed, threads=recipe.threads,
                  log=log)
    _write_built_from(out / "model", base_print, d, recipe, pairs)
    (out / "warm.json").write_text(json.dumps({
        "recipe": asdict(recipe), "difficulty": _difficulty(d),
        "losses": [round(x, 4) for x in metrics.losses],
        "seconds": round(time.perf_counter() - began, 1)}, indent=1) + "\n")
    return out / "model"


def sft_pairs(model: Path, difficulty: chat_chain.Difficulty, recipe: WarmRecipe,
              eval_prompts: int = 128) -> list[tuple[str, str]]:
    """The recipe's SFT corpus as (prompt under ``model``'s chat template, completion) pairs."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    held_out = {t.prompt for t in chat_chain.make_prompts(eval_prompts, chat_chain.EVAL_SEED, difficulty)}
    corpus = chat_chain.make_sft_corpus(recipe.steps * recipe.batch_size, recipe.corpus_seed, difficulty,
                                        recipe.broken_share, exclude=held_out)
    return [(tokenizer.apply_chat_template([{"role": "user", "content": example.task.prompt.strip()}],
                                           tokenize=False, add_generation_prompt=True), completion)
            for example, completion in corpus]


def built_from(base_print: str, difficulty: chat_chain.Difficulty, recipe: WarmRecipe,
               pairs: list[tuple[str, str]]) -> dict[str, object]:
    """What a warm start is made from and how: the maker (:data:`BUILDER`), the base's print, the
    recipe, the difficulty and the SFT corpus's sha256. Its bytes are the start's identity in
    ``botgrpo compare`` (``botgrpo.compare.cells.BUILT_FROM``)."""
    corpus = hashlib.sha256(json.dumps(pairs).encode()).hexdigest()
    return {"builder": BUILDER, "base": base_print, "recipe": asdict(recipe), "difficulty": _difficulty(difficulty),
            "corpus": corpus}


def _write_built_from(model: Path, base_print: str, difficulty: chat_chain.Difficulty, recipe: WarmRecipe,
                      pairs: list[tuple[str, str]]) -> None:
    record = built_from(base_print, difficulty, recipe, pairs)
    (model / BUILT_FROM).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def _difficulty(d: chat_chain.Difficulty) -> dict[str, object]:
    return {**asdict(d), "operators": "".join(d.operators)}


def checked_start(model: Path) -> Path:
    """``model`` if it is the SmolLM2 start this study was written on (:data:`START_FINGERPRINT`)."""
    checked_print(model)
    return Path(model)


def checked_print(model: Path) -> str:
    """The print of ``model`` (hashed once) if it is the SmolLM2 start this study was written on."""
    if not Path(model).is_dir():
        raise SystemExit(f"{model}: no SmolLM2 start there: run `make smollm2`")
    found = fingerprint(Path(model))
    if not found.startswith(START_FINGERPRINT):
        raise SystemExit(f"{model}: start {found}, the protocol's is {START_FINGERPRINT}...: run `make smollm2`")
    return found


def prompts(root: Path, difficulty: chat_chain.Difficulty, train_prompts: int, eval_prompts: int) -> dict[str, object]:
    """The chat chain prompts under ``root``: training from draw seed ``chat_chain.TRAIN_SEED`` with
    every held-out question removed, held-out from ``chat_chain.EVAL_SEED``; each one user message
    under the model's chat template. Idempotent: the draws are seeded."""
    train, held_out = chat_chain.make_split(train_prompts, eval_prompts, difficulty)
    return {"data": {"dataset": conversation_dataset(Path(root) / "train.jsonl", train)},
            "eval": {"dataset": conversation_dataset(Path(root) / "eval.jsonl", held_out)}}


def setup(root: Path, model: str = str(MODEL), train_prompts: int = 2000, eval_prompts: int = 128,
          min_steps: int = 3, max_steps: int = 3, max_operand: int = 5, max_factor: int = 3,
          operators: str = "+-") -> dict[str, object]:
    """``botgrpo compare``'s setup hook for the first protocol (docs/results/smollm2_chain): the
    :func:`prompts` and the SmolLM2 start itself (:func:`checked_start`)."""
    difficulty = chat_chain.Difficulty(min_steps, max_steps, max_operand, max_factor, operators=tuple(operators))
    return {"model": str(checked_start(Path(model))), **prompts(root, difficulty, train_prompts, eval_prompts)}


def setup_warm(root: Path, model: str = str(MODEL), train_prompts: int = 2000, eval_prompts: int = 128,
               min_steps: int = 4, max_steps: int = 6, max_operand: int = 9, max_factor: int = 3,
               operators: str = "+-", warm: dict | None = None) -> dict[str, object]:
    """The setup hook of the warm-start protocol (docs/results/smollm2_warm_chain): the
    :func:`prompts` and the :func:`warm_start` of ``warm`` (:class:`WarmRecipe`'s fields) made from
    the SmolLM2 start (checked when it is built), built on the first call (a few minutes) and
    reused after; the lock holds the warm start's print, its `built-from.json`."""
    difficulty = chat_chain.Difficulty(min_steps, max_steps, max_operand, max_factor, operators=tuple(operators))
    start = warm_start(difficulty, WarmRecipe(**(warm or {})), base=Path(model), eval_prompts=eval_prompts)
    return {"model": str(start), **prompts(root, difficulty, train_prompts, eval_prompts)}
