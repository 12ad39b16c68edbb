"""A tiny causal LM policy built from scratch and warmed up by supervised training, on CPU.

The demo cannot download a model, and RL from a random init learns nothing in minutes (no
sample ever compiles, so every reward is the same). So the demo builds its own policy:

1. :func:`build_tiny_policy` trains a byte-level BPE tokenizer on the task corpus (character
   offsets work, so token-level rewards align exactly as with a hub model) and saves a
   random-init ``Qwen2ForCausalLM`` of ~1M parameters with tied embeddings;
2. :func:`sft` teaches it the task format with plain next-token training on
   ``prompt + completion + eos`` (loss on completion tokens only), bounded in wall-clock time;
3. :func:`sample_completions` samples from it (scored by the reward server, never imported here).

The prompt already ends with its newline (:mod:`botgrpo.trainer.tasks.base`). Everything is saved
with ``save_pretrained``, so ``AutoModelForCausalLM.from_pretrained(model_dir)`` loads it.

Measured warm start (2 idle cores): 4000 pairs of ``botgrpo.trainer.tasks.react.make_sft_corpus``
(``broken_share=0.5``), 0.7M parameters, 800 steps of batch 16 at ``lr=5e-3`` (~100 s) give
a ``build`` compile rate of ~0.4-0.6 and a spec-match rate of ~0.02. Contention from other
processes stretches the wall clock a lot, so prefer ``max_steps`` with ``max_seconds`` as a cap.
"""
from __future__ import annotations

import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import torch


@dataclass
class SFTMetrics:
    """What a supervised run did: optimizer steps, wall-clock seconds, and the loss curve
    (mean per-token cross-entropy on completion tokens, one value per step)."""

    steps: int = 0
    seconds: float = 0.0
    tokens: int = 0
    losses: list[float] = field(default_factory=list)

    @property
    def first_loss(self) -> float:
        return sum(self.losses[:10]) / max(1, len(self.losses[:10]))

    @property
    def last_loss(self) -> float:
        return sum(self.losses[-10:]) / max(1, len(self.losses[-10:]))


def build_tiny_policy(texts: Iterable[str], out_dir: str | Path, *, hidden: int = 128, layers: int = 4,
                      heads: int = 4, kv_heads: int = 2, intermediate: int | None = None, vocab_size: int = 1000,
                      max_positions: int = 1024, seed: int = 0) -> Path:
    """Train a tokenizer on ``texts`` and save it with a random-init Qwen2 causal LM in ``out_dir``.

    ``texts`` should be the strings the policy will read and write (prompts and completions):
    a tokenizer fitted to them makes sequences short, which is most of the speed on CPU.
    """
    from transformers import AutoModelForCausalLM, Qwen2Config

    from botgrpo.trainer.models.tiny import train_tokenizer

    out_dir = Path(out_dir)
    tokenizer = train_tokenizer(texts, vocab_size)
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=intermediate or 2 * hidden,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions, tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def encode_pairs(tokenizer, pairs: Sequence[tuple[str, str]]) -> list[tuple[list[int], int]]:
    """``(ids of prompt + completion + eos, number of prompt tokens)`` for each pair.

    Prompt and completion are encoded apart so the prompt's tokens are exactly those the
    policy is given at RL time (a merge across the boundary would blur them otherwise)."""
    prompts = tokenizer(list(p for p, _ in pairs), add_special_tokens=False)["input_ids"]
    completions = tokenizer(list(c for _, c in pairs), add_special_tokens=False)["input_ids"]
    return [(p + c + [tokenizer.eos_token_id], len(p)) for p, c in zip(prompts, completions)]


def length_buckets(encoded: Sequence[tuple[list[int], int]], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Batches of indices of similar length, in random order: padding wastes little compute."""
    order = sorted(range(len(encoded)), key=lambda i: (len(encoded[i][0]), rng.random()))
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    rng.shuffle(batches)
    return batches


def collate(encoded: Sequence[tuple[list[int], int]], indices: Sequence[int], pad_id: int):
    """Right-padded ``input_ids``, ``attention_mask`` and ``labels`` (-100 on prompt and padding)."""
    width = max(len(encoded[i][0]) for i in indices)
    ids = torch.full((len(indices), width), pad_id, dtype=torch.long)
    labels = torch.full((len(indices), width), -100, dtype=torch.long)
    mask = torch.zeros((len(indices), width), dtype=torch.long)
    for row, i in enumerate(indices):
        tokens, n_prompt = encoded[i]
        ids[row, :len(tokens)] = torch.tensor(tokens)
        labels[row, n_prompt:len(tokens)] = torch.tensor(tokens[n_prompt:])
        mask[row, :len(tokens)] = 1
    return ids, mask, labels


def sft(model_dir: str | Path, pairs: Sequence[tuple[str, str]], *, max_seconds: float | None = 90.0,
        max_steps: int | None = None, batch_size: int = 16, lr: float = 5e-3, warmup_steps: int = 20,
        seed: int = 0, log: Callable[[str], None] | None = None, threads: int | None = None,
        every: int = 0, on_every: Callable[[int, Any], None] | None = None) -> SFTMetrics:
    """Supervised next-token training of the policy in ``model_dir`` on ``pairs``; saves it back.

    Stops at ``max_steps`` or after ``max_seconds``, whichever comes first (at least one must
    be set). The learning rate warms up linearly, then follows a cosine to 10% over the run's
    progress (steps or seconds, whichever is further along), so a time-bounded run still ends
    on a small learning rate. ``threads``: torch threads (None: every core). ``on_every(step,
    model)`` runs every ``every`` steps (a held-out profile, say) in eval mode and with torch's
    random state restored after it, so it does not change what is trained.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if max_seconds is None and max_steps is None:
        raise ValueError("set max_seconds or max_steps")
    torch.set_num_threads(threads or os.cpu_count() or 1)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    model.train()
    encoded = encode_pairs(tokenizer, pairs)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, betas=(0.9, 0.98))
    metrics, start, batches = SFTMetrics(), time.perf_counter(), []

    def progress() -> float:
        by_steps = metrics.steps / max_steps if max_steps else 0.0
        by_time = (time.perf_counter() - start) / max_seconds if max_seconds else 0.0
        return max(by_steps, by_time)

    while progress() < 1.0:
        if not batches:
            batches = length_buckets(encoded, batch_size, rng)
        ids, mask, labels = collate(encoded, batches.pop(), tokenizer.pad_token_id)
        scale = min(1.0, (metrics.steps + 1) / warmup_steps) * (0.55 + 0.45 * math.cos(math.pi * progress()))
        for group in optimizer.param_groups:
            group["lr"] = lr * scale
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        metrics.steps += 1
        metrics.tokens += int(mask.sum())
        metrics.losses.append(loss.item())
        if log and metrics.steps % 50 == 0:
            total = f"/{max_steps}" if max_steps else ""
            log(f"step {metrics.steps}{total} loss {metrics.last_loss:.3f} {time.perf_counter() - start:.0f}s")
        if on_every and every and metrics.steps % every == 0:
            model.eval()
            with torch.random.fork_rng():
                on_every(metrics.steps, model)
            model.train()
    metrics.seconds = time.perf_counter() - start
    model.save_pretrained(model_dir)
    return metrics


@torch.no_grad()
def sample_completions(model_dir: str | Path, prompts: Sequence[str], *, max_new_tokens: int = 200,
                       temperature: float = 1.0, batch_size: int = 64, seed: int = 0,
                       threads: int | None = None) -> list[str]:
    """One sampled completion per prompt (pure sampling: no top-k/top-p, as RL samples), on
    ``threads`` torch threads (default: every core)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads or os.cpu_count() or 1)
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    out: list[str] = []
    for i in range(0, len(prompts), batch_size):
        batch = tokenizer(list(prompts[i:i + batch_size]), add_special_tokens=False, padding=True, return_tensors="pt")
        generated = model.generate(**batch, do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
                                   max_new_tokens=max_new_tokens, eos_token_id=tokenizer.eos_token_id,
                                   pad_token_id=tokenizer.pad_token_id)
        new_tokens = generated[:, batch["input_ids"].shape[1]:]
        out += tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
    return out
