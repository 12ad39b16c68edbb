"""LoRA fine-tuning (``lora:`` in the training config; the extra ``botgrpo[lora]``, i.e. ``peft``).

Each targeted linear layer ``y = W x`` becomes ``y = W x + s · B A x`` with ``A`` (r × in) and
``B`` (out × r) trainable, ``W`` frozen, ``s = alpha / r`` and ``B = 0`` at the start, so the
first policy is exactly the base model. What else changes:

* **Weights for a rollout engine** (:func:`export_weights`): the policy's effective weights under
  the *base* model's names, ``W' = W + s · B A`` for every adapted layer, computed on the fly
  (never merged in place: merging and unmerging the float32 master weights would round them a
  little each step), no adapter tensors. vLLM and the asynchronous pipeline's plain sampler copy
  take them as they took a full fine-tune's weights.
* **Reference model** (:class:`AdapterDisabled`): the KL term's reference is the base model,
  which is the policy with its adapter switched off (peft's ``disable_adapter()``): no second
  copy of the model is loaded.
* **Checkpoints**: a checkpoint holds the adapter (``adapter_model.safetensors``,
  ``adapter_config.json``; the base is ``model``); :func:`checkpoint_state` restores it into a
  freshly built policy. The final checkpoint also gets :data:`MERGED_DIR`, a plain model
  directory with the merged weights (:func:`save_merged`).
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Iterator, Literal, Optional, Union

import torch
from pydantic import BaseModel, ConfigDict, Field

from botgrpo.trainer.models.precision import MASTER_DTYPE, load_causal_lm
from botgrpo.trainer.run.distributed import full_weights

MERGED_DIR = "merged"   # under the final checkpoint: the merged model, loadable with from_pretrained
INSTALL_HINT = "LoRA needs peft: pip install 'botgrpo[lora]'"


class LoraSettings(BaseModel):
    """``lora:`` in the training config (unset: a full fine-tune)."""
    model_config = ConfigDict(extra="forbid")

    r: int = Field(16, ge=1, description="rank of each adapter (A: r x in, B: out x r)")
    alpha: float = Field(32.0, gt=0, description="scale numerator: the update is (alpha / r) * B @ A")
    dropout: float = Field(0.0, ge=0, lt=1, description="dropout on the adapters' input in the update (needs "
                           "disable_dropout: false; the rollouts then differ from the update's forward)")
    target_modules: Union[Literal["all-linear"], list[str]] = Field(
        "all-linear", min_length=1, description="the linear layers adapted: module names (e.g. [q_proj, v_proj]) "
        "or all-linear (every linear layer but the output head)")


def apply_lora(model: torch.nn.Module, settings: LoraSettings) -> torch.nn.Module:
    """``model`` wrapped by peft with ``settings``' adapters: base weights frozen, adapters trainable
    (``B = 0``: the wrapped model computes what ``model`` did)."""
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as exc:
        raise ImportError(f"{INSTALL_HINT} ({exc})") from exc
    config = LoraConfig(r=settings.r, lora_alpha=settings.alpha, lora_dropout=settings.dropout,
                        target_modules=settings.target_modules, task_type="CAUSAL_LM")
    with warnings.catch_warnings():  # peft 0.21 asks transformers 5.2x for a renamed attribute
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        return get_peft_model(model, config)


def is_lora(model) -> bool:
    """Whether ``model`` is a peft model (it can only be one once peft is imported)."""
    peft = sys.modules.get("peft")
    return peft is not None and isinstance(model, peft.PeftModel)


def base_model(model) -> torch.nn.Module:
    """The transformers model under a peft wrapper (its adapted layers included), else ``model``:
    the class whose ``forward`` signature the caller's keyword arguments must fit."""
    return model.get_base_model() if is_lora(model) else model


def trainable_parameters(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The parameters the optimizer updates: all of a full fine-tune's, a LoRA policy's adapters."""
    return [p for p in model.parameters() if p.requires_grad]


# ---------------------------------------------------------------------- weights for rollout engines
def _lora_layers(model) -> dict[str, torch.nn.Module]:
    """Every adapted layer of the peft model's base, by its module name there."""
    from peft.tuners.lora import LoraLayer
    return {name: m for name, m in model.get_base_model().named_modules() if isinstance(m, LoraLayer)}


def _owner(name: str, layers: dict[str, torch.nn.Module]) -> Optional[str]:
    """The adapted layer whose state ``name`` belongs to (``<layer>.base_layer.weight``,
    ``<layer>.lora_A.default.weight``), if any."""
    prefix = name
    while "." in prefix:
        prefix = prefix.rsplit(".", 1)[0]
        if prefix in layers:
            return prefix
    return None


def _delta(layer) -> Optional[torch.Tensor]:
    """``Σ_adapters s · B A`` (peft's ``get_delta_weight``, a new tensor) over the active
    adapters; None when they are off or already merged into ``W``."""
    if layer.merged or layer.disable_adapters:
        return None
    deltas = [layer.get_delta_weight(a) for a in layer.active_adapters if a in layer.scaling]
    return torch.stack(deltas).sum(0) if deltas else None


@torch.no_grad()
def _merged_weights(model, dtype: torch.dtype) -> Iterator[tuple[str, torch.Tensor]]:
    """:func:`export_weights` of a peft model: its base's state renamed (``<layer>.base_layer.x``
    -> ``<layer>.x``), each adapted layer's weight merged, its adapter tensors left out."""
    layers = _lora_layers(model)
    for name, tensor in model.get_base_model().state_dict().items():
        owner = _owner(name, layers)
        if owner is None:
            yield name, tensor.detach().to(dtype)
            continue
        inner = f"{owner}.base_layer."
        if not name.startswith(inner):
            continue  # an adapter tensor: part of W' below, never a weight of its own
        leaf = name[len(inner):]
        delta = _delta(layers[owner]) if leaf == "weight" else None
        if delta is not None:  # W' = W + s · B A, in float32
            tensor = tensor.detach().to(MASTER_DTYPE) + delta.to(MASTER_DTYPE)
        yield f"{owner}.{leaf}", tensor.detach().to(dtype)


def export_weights(model: torch.nn.Module, dtype: torch.dtype) -> Iterator[tuple[str, torch.Tensor]]:
    """``(name, tensor)`` of the weights the policy computes with, one at a time, in the *base*
    model's names: for a peft model each adapted layer's ``W' = W + (alpha / r) · B A`` (summed in
    float32, then cast to ``dtype``), its bias and every other tensor as they are, no adapter
    tensors; for any other model exactly :func:`~botgrpo.trainer.run.distributed.full_weights`."""
    if is_lora(model):
        return _merged_weights(model, dtype)
    return full_weights(model, dtype)


# ---------------------------------------------------------------------- the reference policy
class AdapterDisabled:
    """The policy with its adapter switched off, i.e. the base model: the KL term's reference
    without a second copy. Quacks like a model for :func:`~botgrpo.trainer.run.update.batch_logprobs`
    (call, ``parameters``, ``training``/``train``/``eval``, which are the policy's own)."""

    def __init__(self, model):
        self.model = model

    def __call__(self, *args, **kwargs):
        with self.model.disable_adapter():
            return self.model(*args, **kwargs)

    def parameters(self):
        return self.model.parameters()

    @property
    def training(self) -> bool:
        return self.model.training

    def train(self, mode: bool = True) -> "AdapterDisabled":
        self.model.train(mode)
        return self

    def eval(self) -> "AdapterDisabled":
        return self.train(False)


# ---------------------------------------------------------------------- checkpoints
def checkpoint_state(model: torch.nn.Module, path: Path) -> dict[str, torch.Tensor]:
    """The model state checkpoint ``path`` holds, in ``model``'s names: a full fine-tune's saved
    weights; for a LoRA policy the checkpoint's adapter loaded into ``model`` (its frozen base is
    the base checkpoint's, unchanged by training), then ``model``'s state."""
    if not is_lora(model):
        return load_causal_lm(str(path), "cpu").state_dict()
    from peft import set_peft_model_state_dict
    from peft.utils import load_peft_weights

    loaded = set_peft_model_state_dict(model, load_peft_weights(str(path), device="cpu"))
    if loaded.unexpected_keys:
        raise ValueError(f"{path}: adapter tensors this policy does not have: {loaded.unexpected_keys[:5]}")
    return model.state_dict()


def save_merged(model: torch.nn.Module, tokenizer, path: Path) -> Optional[Path]:
    """A LoRA policy's merged weights (:func:`export_weights`, float32) as a plain model directory
    that ``AutoModelForCausalLM.from_pretrained`` loads; None for a full fine-tune (its checkpoint
    already is one)."""
    if not is_lora(model):
        return None
    path = Path(path)
    model.get_base_model().save_pretrained(path, state_dict=dict(export_weights(model, MASTER_DTYPE)))
    tokenizer.save_pretrained(path)
    return path
