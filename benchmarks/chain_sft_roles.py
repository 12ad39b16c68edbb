"""Which part of a step-chain line does supervised training learn, and how fast? (issue 22 pilot)

    python -m benchmarks.chain_sft_roles --lr 1e-3 --steps 800
    python -m benchmarks.chain_sft_roles --lr 5e-3 --steps 800

Trains the chain study's tiny policy on its warm-start corpus (constant learning rate after a
20-step warmup) and every 100 steps prints the held-out loss per completion token, split by the
token's role in a step line ``<label>: x = <value> <op> = <result>``: ``label``, ``value`` (the
previous line's result, copied), ``op`` (the operation, looked up by label in the prompt),
``result`` (the arithmetic) and ``other`` (format). 48 clean chains of draw seed 9, never trained on.
"""
from __future__ import annotations

import argparse
import random
import re
import tempfile
import time

import torch

from botgrpo.trainer.models.sft import build_tiny_policy, collate, encode_pairs, length_buckets
from botgrpo.trainer.tasks import chain

LINE = re.compile(r"^(?P<label>\w): x = (?P<value>\d+) (?P<op>[+-] \d) = (?P<result>\d+)$")
ROLES = ("label", "value", "op", "result")


def role_spans(completion: str) -> list[tuple[int, int, str]]:
    """``(start, end, role)`` character spans of every step line's parts."""
    spans, position = [], 0
    for line in completion.split("\n"):
        match = LINE.match(line)
        if match:
            spans += [(position + match.start(r), position + match.end(r), r) for r in ROLES]
        position += len(line) + 1
    return spans


def labelled(tokenizer, prompt: str, completion: str) -> tuple[list[int], int, list[str]]:
    """Prompt + completion ids, the prompt's length, and each completion token's role (a token of
    blanks only, or outside every span, is ``other``)."""
    prompt_ids = tokenizer(prompt, add_special_tokens=False).input_ids
    encoded = tokenizer(completion, add_special_tokens=False, return_offsets_mapping=True)
    spans = role_spans(completion)
    roles = [next((r for s, e, r in spans if a < e and b > s and completion[a:b].strip()), "other")
             for a, b in encoded["offset_mapping"]]
    return prompt_ids + encoded["input_ids"], len(prompt_ids), roles


@torch.no_grad()
def role_losses(model, cases) -> dict[str, float]:
    """Mean held-out negative log-likelihood (nats) of the completion tokens of each role."""
    model.eval()
    total: dict[str, float] = {}
    count: dict[str, int] = {}
    for ids, n_prompt, roles in cases:
        logprobs = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0, :-1].float(), -1)
        for j, role in enumerate(roles):
            total[role] = total.get(role, 0.0) - logprobs[n_prompt + j - 1, ids[n_prompt + j]].item()
            count[role] = count.get(role, 0) + 1
    model.train()
    return {role: round(total[role] / count[role], 3) for role in total}


def main(argv=None) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from benchmarks.chain_study import BROKEN_SHARE, CORPUS

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--steps", type=int, default=800)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    pairs = chain.make_sft_corpus(CORPUS, 0, broken_share=BROKEN_SHARE)
    with tempfile.TemporaryDirectory() as tmp:
        build_tiny_policy([q + c for q, c in pairs], tmp, seed=0, vocab_size=600)
        tokenizer, model = AutoTokenizer.from_pretrained(tmp), AutoModelForCausalLM.from_pretrained(tmp)
    cases = [labelled(tokenizer, e.task.prompt, e.completion()) for e in chain.make_examples(48, 9)]
    encoded, rng = encode_pairs(tokenizer, pairs), random.Random(0)
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0, betas=(0.9, 0.98))
    model.train()
    batches, losses, started = [], [], time.perf_counter()
    for step in range(1, args.steps + 1):
        batches = batches or length_buckets(encoded, 16, rng)
        ids, mask, labels = collate(encoded, batches.pop(), tokenizer.pad_token_id)
        for group in optimizer.param_groups:
            group["lr"] = args.lr * min(1.0, step / 20)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        if step % 100 == 0:
            print(f"step {step} {time.perf_counter() - started:.0f}s train loss {sum(losses[-100:]) / 100:.3f} "
                  f"held-out by role {role_losses(model, cases)}", flush=True)


if __name__ == "__main__":
    main()
