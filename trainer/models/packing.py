"""Padding-free micro-batches for the update's forward (and the old/reference log-prob passes).

The padded layout (:func:`botgrpo.trainer.models.policy.pack`) gives every row the batch's widest prompt and
its longest completion, so a batch whose lengths vary pays for the longest everywhere. Here each
micro-batch is **one row**: for each of its rollouts, the prompt followed by the completion (less
its last token, which predicts nothing), with ``position_ids`` restarting at 0 per sequence.

* **Attention within a sequence only.** With flash-attention kernels (GPU), transformers reads
  packed sequences from ``position_ids`` / ``cu_seq_lens_*`` and runs the varlen kernel. For the
  other implementations this module registers ``botgrpo_packed_sdpa``: the model's own
  ``sdpa`` whenever a 2-D padding mask is given (rollouts, the padded path), and for a packed
  row one causal SDPA call per run of equal-length sequences (so nothing is computed across a
  boundary, and no ``N x N`` mask is ever built, unlike transformers' sdpa packing, which masks
  the whole row). :func:`enable_packed_attention` switches a model to it; the checkpoint's
  ``config.json`` does not record it.
* **Logits only where a completion token is predicted** (``logits_to_keep`` as an index
  tensor), so neither the prompts nor any padding get vocab-sized logits.
* **Balanced by tokens, not rows.** Rollouts go to micro-batches longest first, each to the
  lightest so far (LPT). The number of micro-batches is that of the padded path
  (``ceil(B / micro_batch_size)``), or more when ``micro_batch_tokens`` caps a micro-batch's
  tokens; under torchrun every rank uses the largest count any rank needs (each backward is a
  collective), never an empty one (ranks hold equally many rollouts).
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Optional, Sequence

import torch
import torch.nn.functional as F

from botgrpo.trainer.run.distributed import Dist, global_max

PACKED_ATTENTION = "botgrpo_packed_sdpa"


# --------------------------------------------------------------------------- planning
def plan_micro_batches(tokens: Sequence[int], *, max_rows: int, max_tokens: Optional[int] = None,
                       d: Optional[Dist] = None) -> list[list[int]]:
    """Row indices of each micro-batch: ``ceil(len / max_rows)`` of them at least, more until none
    holds over ``max_tokens`` (a sequence longer than that alone gets one of its own); filled
    longest first into the lightest (ties: lower index). Within one, longest first."""
    n = len(tokens)
    if n == 0:
        return []
    k = math.ceil(n / max_rows)
    if max_tokens:
        k = max(k, math.ceil(sum(tokens) / max_tokens))
    k = min(k, n)
    bins = _lpt(tokens, k)
    while max_tokens and k < n and any(len(b) > 1 and sum(tokens[i] for i in b) > max_tokens for b in bins):
        k += 1
        bins = _lpt(tokens, k)
    if d is not None and d.enabled:
        wanted = int(global_max(k, d))
        if wanted != k:
            bins = _lpt(tokens, min(wanted, n))
    return bins


def _lpt(tokens: Sequence[int], k: int) -> list[list[int]]:
    order = sorted(range(len(tokens)), key=lambda i: (-tokens[i], i))
    heap = [(0, b) for b in range(k)]
    bins: list[list[int]] = [[] for _ in range(k)]
    for i in order:
        load, b = heapq.heappop(heap)
        bins[b].append(i)
        heapq.heappush(heap, (load + tokens[i], b))
    return [b for b in bins if b]


# --------------------------------------------------------------------------- layout
def token_logprobs(logits: torch.Tensor, targets: torch.Tensor, temperature: float = 1.0,
                   with_entropy: bool = False, chunk_elements: int = 1 << 24):
    """``(M,)`` log p(target) from ``(M, V)`` logits divided by ``temperature`` (and the entropy,
    computed without grad ``chunk_elements`` logits at a time to bound the extra memory)."""
    logits = logits.float() / temperature
    normaliser = torch.logsumexp(logits, dim=-1)
    logprobs = logits.gather(-1, targets[:, None]).squeeze(-1) - normaliser
    if not with_entropy:
        return logprobs
    step = max(1, chunk_elements // max(1, logits.shape[-1]))
    with torch.no_grad():
        entropy = torch.cat([normaliser[i:i + step] - (logits[i:i + step].softmax(-1) * logits[i:i + step]).sum(-1)
                             for i in range(0, logits.shape[0], step)]) if logits.shape[0] else normaliser.detach()
    return logprobs, entropy


@dataclass
class PackedMicroBatch:
    rows: torch.Tensor          # (n,) the batch rows it holds, in packing order
    input_ids: torch.Tensor     # (1, N)
    position_ids: torch.Tensor  # (1, N): 0, 1, ... per sequence
    cu_seqlens: torch.Tensor    # (n + 1,) int32: where each sequence starts (and the end)
    max_length: int
    keep: torch.Tensor          # (M,) positions whose logits predict a completion token
    targets: torch.Tensor       # (M,) those tokens
    completion_mask: torch.Tensor  # (n, T): where the M log-probs go back, row-major


class PackedLayout:
    """A batch's micro-batches, packed; the same plan for the log-prob passes and the update."""

    def __init__(self, prompt_ids: Sequence[Sequence[int]], completion_ids: torch.Tensor,
                 completion_mask: torch.Tensor, group_size: int, *, micro_batch_size: int,
                 micro_batch_tokens: Optional[int] = None, d: Optional[Dist] = None):
        lengths = completion_mask.sum(1).tolist()
        prompts = [list(prompt_ids[i // group_size]) for i in range(len(lengths))]
        if any(not p for p in prompts):
            raise ValueError("packing needs at least one prompt token per sequence")
        tokens = [len(p) + max(c - 1, 0) for p, c in zip(prompts, lengths)]
        self.shape = tuple(completion_mask.shape)
        self.micro_batches = [self._build(rows, prompts, completion_ids, completion_mask, lengths)
                              for rows in plan_micro_batches(tokens, max_rows=micro_batch_size,
                                                             max_tokens=micro_batch_tokens, d=d)]

    @staticmethod
    def _build(rows, prompts, completion_ids, completion_mask, lengths) -> PackedMicroBatch:
        ids, positions, starts, keep, targets, offset = [], [], [], [], [], 0
        for r in rows:
            c = lengths[r]
            completion = completion_ids[r, :c].tolist()
            sequence = prompts[r] + completion[:-1]
            starts.append(offset)
            ids += sequence
            positions += range(len(sequence))
            first = offset + len(prompts[r]) - 1  # the last prompt token predicts the first completion token
            keep += range(first, first + c)
            targets += completion
            offset += len(sequence)
        starts.append(offset)
        index = torch.tensor(rows, dtype=torch.long)
        return PackedMicroBatch(
            rows=index, input_ids=torch.tensor([ids], dtype=torch.long),
            position_ids=torch.tensor([positions], dtype=torch.long),
            cu_seqlens=torch.tensor(starts, dtype=torch.int32), max_length=max(b - a for a, b in zip(starts, starts[1:])),
            keep=torch.tensor(keep, dtype=torch.long), targets=torch.tensor(targets, dtype=torch.long),
            completion_mask=completion_mask[index])

    def logprobs(self, model, mb: PackedMicroBatch, *, temperature: float = 1.0, with_entropy: bool = False):
        """``(n, T)`` log-probs of ``mb``'s rows (0 off their completions), and their entropy if asked."""
        device = next(model.parameters()).device
        cu = mb.cu_seqlens.to(device)
        logits = model(input_ids=mb.input_ids.to(device), position_ids=mb.position_ids.to(device), use_cache=False,
                       logits_to_keep=mb.keep.to(device), cu_seq_lens_q=cu, cu_seq_lens_k=cu,
                       max_length_q=mb.max_length, max_length_k=mb.max_length).logits
        flat = token_logprobs(logits.reshape(-1, logits.shape[-1]), mb.targets.to(device), temperature, with_entropy)
        mask = mb.completion_mask.to(device)
        if not with_entropy:
            return _unflatten(flat, mask)
        return _unflatten(flat[0], mask), _unflatten(flat[1], mask)


def _unflatten(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.zeros(mask.shape, dtype=values.dtype, device=values.device).masked_scatter(mask, values)


# --------------------------------------------------------------------------- attention
def _segments(kwargs, position_ids: Optional[torch.Tensor], n: int) -> Optional[list[int]]:
    """Sequence starts of a packed row (and its end), from ``cu_seq_lens_q`` or restarting positions."""
    cu = kwargs.get("cu_seq_lens_q")
    if cu is not None:
        return [int(x) for x in cu.tolist()]
    if position_ids is None or position_ids.shape[0] != 1:
        return None
    starts = (position_ids[0] == 0).nonzero().squeeze(1).tolist()
    if len(starts) <= 1:
        return None
    return starts + [n] if starts[0] == 0 else None


def packed_sdpa_attention(module, query, key, value, attention_mask, dropout: float = 0.0,
                          scaling: Optional[float] = None, sliding_window: Optional[int] = None, **kwargs):
    """transformers' attention-function signature. A 2-D padding mask (turned 4-D) or a KV cache:
    the plain ``sdpa``. No mask and one packed row: causal SDPA per run of equal-length sequences."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    n = query.shape[2]
    bounds = None
    if attention_mask is None and query.shape[0] == 1 and key.shape[2] == n:
        bounds = _segments(kwargs, kwargs.get("position_ids"), n)
    if bounds is None:
        if attention_mask is None and sliding_window is not None and n > sliding_window and n > 1:
            bounds = [0, n]  # one sequence without a mask: still needs its window
        else:
            return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                          scaling=scaling, sliding_window=sliding_window, **kwargs)
    heads, kv_heads, dim = query.shape[1], key.shape[1], value.shape[-1]
    lengths = [b - a for a, b in zip(bounds, bounds[1:])]
    runs = []  # (length, count): consecutive sequences of equal length share one batched call
    for length in lengths:
        if runs and runs[-1][0] == length:
            runs[-1][1] += 1
        else:
            runs.append([length, 1])
    sizes = [length * count for length, count in runs]
    # split (not slicing) so that backward concatenates the pieces' gradients once
    pieces = zip(*(x[0].split(sizes, dim=1) for x in (query, key, value)))
    outputs = []
    for (length, count), (q, k, v) in zip(runs, pieces):
        q, k, v = (x.reshape(x.shape[0], count, length, x.shape[-1]).transpose(0, 1) for x in (q, k, v))
        mask = None
        if sliding_window is not None and length > sliding_window:
            idx = torch.arange(length, device=query.device)
            mask = (idx[:, None] >= idx[None, :]) & (idx[:, None] - idx[None, :] < sliding_window)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, scale=scaling,
                                             is_causal=mask is None and length > 1, enable_gqa=kv_heads != heads)
        outputs.append(out.transpose(0, 1).reshape(heads, count * length, dim))
    out = torch.cat(outputs, dim=1) if len(outputs) > 1 else outputs[0]
    return out.unsqueeze(0).transpose(1, 2).contiguous(), None


def _packed_mask(*args, attention_mask=None, q_offset=0, kv_offset=0, q_length=None, kv_length=None, **kwargs):
    """No mask for a row without padding and cache (the attention function is causal per sequence);
    transformers' sdpa mask otherwise (padded rows, decoding)."""
    from transformers.masking_utils import sdpa_mask

    if attention_mask is None and not q_offset and not kv_offset and q_length == kv_length:
        return None
    return sdpa_mask(*args, attention_mask=attention_mask, q_offset=q_offset, kv_offset=kv_offset,
                     q_length=q_length, kv_length=kv_length, **kwargs)


_registered = False


def register() -> None:
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(PACKED_ATTENTION, packed_sdpa_attention)
    AttentionMaskInterface.register(PACKED_ATTENTION, _packed_mask)
    _registered = True


def enable_packed_attention(model) -> str:
    """Make ``model``'s attention packing-aware; returns the implementation in use. Flash-attention
    implementations already are (transformers' varlen path); ``sdpa`` and ``eager`` become
    :data:`PACKED_ATTENTION`, which is ``sdpa`` for everything but a packed row."""
    config = getattr(model, "config", None)
    current = getattr(config, "_attn_implementation", None)
    if current and current.startswith("flash_attention"):
        return current
    if current not in (None, "sdpa", "eager", PACKED_ATTENTION):
        raise ValueError(f"packing is not supported with attn_implementation={current!r}: use sdpa, eager or "
                         "a flash-attention implementation, or set packing: false")
    register()
    model.set_attn_implementation(PACKED_ATTENTION)
    return PACKED_ATTENTION
