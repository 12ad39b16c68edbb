"""Judge evaluations for ``botgrpo eval --judge URL``.

* **Pairwise** (``--against B``): the two checkpoints answer the same prompts with the same
  seeds; the judge compares the two components for each prompt in both orders (A first, then
  B first: a judge that prefers a position cannot pass that bias on) and A's win rate is the
  mean over prompts and orders of 1 for a win, 1/2 for a tie, 0 for a loss. Also reported:
  each order's win rate, how often the two orders agree, how often the first slot won
  (position bias), and the questions the judge could not answer (left out).
* **Pointwise** (no ``--against``): the mean judge grade (1-10) of the model's components.
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional, Sequence

from botgrpo.reward_server.judge.client import JudgeClient, JudgeError
from botgrpo.reward_server.react.extract import extract_code

POINTS = {"A": 1.0, "tie": 0.5, "B": 0.0}


def code_of(completion: str) -> str:
    block = extract_code(completion)
    return block.code if block is not None else completion


def _instruction(prompt: Any) -> Optional[str]:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):  # chat messages: the user turns
        return "\n".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict) and m.get("role") == "user")
    return None


def pairwise(client: JudgeClient, prompts: Sequence[Any], outputs_a: Sequence[str], outputs_b: Sequence[str],
             concurrency: int = 8) -> dict[str, Any]:
    """A's win rate against B on the same prompts, both orders (module docstring)."""
    if not (len(prompts) == len(outputs_a) == len(outputs_b)):
        raise ValueError("prompts and both models' outputs must have the same length")
    jobs = []
    for i, prompt in enumerate(prompts):
        a, b = code_of(outputs_a[i]), code_of(outputs_b[i])
        jobs += [(i, "AB", _instruction(prompt), a, b), (i, "BA", _instruction(prompt), b, a)]

    def ask(job):
        i, order, instruction, first, second = job
        try:
            return i, order, client.compare(instruction, first, second).winner
        except JudgeError:
            return i, order, None

    with ThreadPoolExecutor(max(1, concurrency)) as pool:
        answers = list(pool.map(ask, jobs))
    by_prompt: dict[int, dict[str, Optional[str]]] = {}
    for i, order, winner in answers:
        # A's result in this order: in "BA" the first slot holds B, so the labels swap
        mapped = winner if winner is None or order == "AB" or winner == "tie" else ("B" if winner == "A" else "A")
        by_prompt.setdefault(i, {})[order] = mapped
    points, ab, ba, agree, first_slot, unanswered = [], [], [], [], [], 0
    for i in range(len(prompts)):
        got = by_prompt.get(i, {})
        for order, bucket in (("AB", ab), ("BA", ba)):
            if got.get(order) is None:
                unanswered += 1
            else:
                bucket.append(POINTS[got[order]])
                points.append(POINTS[got[order]])
        if got.get("AB") is not None and got.get("BA") is not None:
            agree.append(got["AB"] == got["BA"])
    for _, order, winner in answers:
        if winner in ("A", "B"):
            first_slot.append(winner == "A")
    mean = lambda xs: sum(xs) / len(xs) if xs else math.nan  # noqa: E731
    return {"prompts": len(prompts), "win_rate": mean(points), "win_rate_ab": mean(ab), "win_rate_ba": mean(ba),
            "wins": sum(p == 1.0 for p in points), "ties": sum(p == 0.5 for p in points),
            "losses": sum(p == 0.0 for p in points), "order_agreement": mean(agree),
            "first_slot_rate": mean(first_slot), "unanswered": unanswered}


def pointwise(client: JudgeClient, prompts: Sequence[Any], outputs: Sequence[str], concurrency: int = 8) -> dict[str, Any]:
    """The mean judge grade of ``outputs`` (questions the judge could not answer left out)."""
    def ask(pair):
        prompt, output = pair
        try:
            return client.grade(_instruction(prompt), code_of(output)).score
        except JudgeError:
            return None

    with ThreadPoolExecutor(max(1, concurrency)) as pool:
        scores = list(pool.map(ask, zip(prompts, outputs)))
    answered = [s for s in scores if s is not None]
    return {"prompts": len(prompts), "judge_score_mean": sum(answered) / len(answered) if answered else math.nan,
            "unanswered": len(scores) - len(answered)}


def generate(model_path: str, examples, sampling, seed: int, apply_chat_template: Optional[bool] = None) -> list[str]:
    """One completion per example from the checkpoint at ``model_path``, sampled as
    ``botgrpo eval`` samples (float32 weights, its end tokens, the eval's seeds), so both
    checkpoints answer the same prompts under the same randomness."""
    import torch
    from transformers import AutoTokenizer

    from botgrpo.trainer.evaluate import EVAL_SEED
    from botgrpo.trainer.models.precision import load_causal_lm
    from botgrpo.trainer.rollout.hf import HFEngine
    from botgrpo.trainer.rollout.prompts import PromptEncoder

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    encoder = PromptEncoder(tokenizer, apply_chat_template)
    prompts = [e.prompt for e in examples]
    encoder.check(prompts)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    engine = HFEngine(load_causal_lm(model_path, device).eval(), tokenizer, seed=seed, encoder=encoder)
    batch = engine.generate(prompts, 1, sampling, seeds=[EVAL_SEED + seed + i for i in range(len(prompts))])
    return list(batch.texts)
