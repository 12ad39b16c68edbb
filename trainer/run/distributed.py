"""torchrun support: process group from the environment, model wrapping, global sums."""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world > 1


def init_from_env() -> Dist:
    """Join the process group torchrun describes (gloo on CPU, nccl on CUDA); single-process otherwise."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return Dist()
    if not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return Dist(dist.get_rank(), world, int(os.environ.get("LOCAL_RANK", "0")))


def wrap(model: torch.nn.Module, mode: str, d: Dist) -> torch.nn.Module:
    """``model`` for data-parallel training: ``ddp`` or ``fsdp`` (FSDP2 ``fully_shard``)."""
    if not d.enabled or mode == "none":
        return model
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel
        return DistributedDataParallel(model, device_ids=[d.local_rank] if torch.cuda.is_available() else None)
    if mode == "fsdp":
        from torch.distributed.fsdp import fully_shard
        for layer in getattr(getattr(model, "model", model), "layers", []):
            fully_shard(layer)
        fully_shard(model)
        return model
    raise ValueError(f"unknown distributed mode {mode!r}; choose one of ['ddp', 'fsdp', 'none']")


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    return getattr(model, "module", model)


def global_sum(value: float, d: Dist) -> float:
    """Sum of ``value`` over ranks (the global token or sequence count of a batch)."""
    if not d.enabled:
        return float(value)
    t = torch.tensor([float(value)], dtype=torch.float64)
    dist.all_reduce(t)
    return float(t.item())


def global_max(value: float, d: Dist) -> float:
    """Largest ``value`` over ranks (e.g. how many micro-batches the busiest rank needs)."""
    if not d.enabled:
        return float(value)
    t = torch.tensor([float(value)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def full_weights(model: torch.nn.Module, dtype: torch.dtype):
    """``(name, full tensor)`` for the model's state, one tensor at a time: FSDP2 shards
    (DTensors) are cast, then gathered; under FSDP every rank must iterate (a collective each)."""
    for name, tensor in model.state_dict().items():
        tensor = tensor.detach().to(dtype)
        if hasattr(tensor, "full_tensor"):
            tensor = tensor.full_tensor()
        yield name, tensor


def broadcast_object(obj, d: Dist):
    if not d.enabled:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def gather_objects(obj, d: Dist) -> list:
    """Every rank's ``obj``, in rank order, on every rank."""
    if not d.enabled:
        return [obj]
    out = [None] * d.world
    dist.all_gather_object(out, obj)
    return out


def all_true(flag: bool, d: Dist) -> bool:
    """Whether ``flag`` holds on every rank."""
    if not d.enabled:
        return flag
    t = torch.tensor([int(flag)])
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return bool(t.item())


def full_state_dicts(model: torch.nn.Module, optimizer, d: Dist) -> tuple[dict, dict]:
    """Unsharded model and optimizer state; a collective under FSDP, so every rank calls it."""
    if not d.enabled:
        return model.state_dict(), optimizer.state_dict()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict
    return get_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def load_full_state_dicts(model: torch.nn.Module, optimizer, model_state: dict, optimizer_state: dict, d: Dist) -> None:
    """Every rank passes the full states it read from the checkpoint: an unsharded model (one
    process, DDP) loads them as they are on each rank; FSDP shards rank 0's (a collective)."""
    if not any(hasattr(p, "full_tensor") for p in model.parameters()):
        unwrap(model).load_state_dict(model_state)
        optimizer.load_state_dict(optimizer_state)
        return
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict
    set_state_dict(model, optimizer, model_state_dict=model_state, optim_state_dict=optimizer_state,
                   options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))
