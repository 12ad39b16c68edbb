"""Numerics of training: float32 master weights, one bf16 autocast for every log-prob, explicit
train/eval modes, no dropout.

* **Master weights in float32.** transformers 5 loads a checkpoint in the dtype it was saved in
  (``dtype="auto"``), and instruct models ship in bf16; AdamW on bf16 weights rounds RL-sized
  updates away (bf16 keeps 8 significant bits). The policy (and the reference) are loaded in
  float32 whatever the checkpoint says; bf16 is a compute precision, through autocast.
* **One autocast.** Old, reference and updated log-probs are all computed under the same
  :func:`autocast`, so on the first pass over a batch the importance ratio is exactly 1.
* **Modes.** Sampling and the no-grad log-probs run in eval mode, the update in train mode
  (transformers applies gradient checkpointing only in train mode); dropout is switched off,
  so train mode changes nothing but checkpointing.
"""
from __future__ import annotations

from contextlib import nullcontext

import torch

MASTER_DTYPE = torch.float32


def load_causal_lm(path: str, device):
    """A causal LM from ``path`` with float32 weights on ``device`` (eval mode, as loaded)."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=MASTER_DTYPE).to(device)


def autocast(bf16: bool, device: torch.device | str):
    """bfloat16 autocast on ``device``'s type (CPU included) when ``bf16``, else nothing."""
    if not bf16:
        return nullcontext()
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)


def disable_dropout(model: torch.nn.Module) -> None:
    """Dropout off everywhere: ``nn.Dropout`` modules and the attention dropout transformers reads
    from the attention modules (``attention_dropout``) and the config."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if isinstance(getattr(module, "attention_dropout", None), float):
            module.attention_dropout = 0.0
    config = getattr(model, "config", None)
    for name in ("attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop", "dropout"):
        if isinstance(getattr(config, name, None), float):
            setattr(config, name, 0.0)


def enable_gradient_checkpointing(model) -> None:
    """Non-reentrant checkpointing (works with frozen inputs, FSDP and no_grad forwards); the KV
    cache is off in training forwards, which checkpointing cannot keep."""
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):  # the name from transformers 5.2x on
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    model.config.use_cache = False
