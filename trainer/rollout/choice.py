"""Which rollout engine can run here: vLLM when importable, else the transformers decode loop."""
from __future__ import annotations

import importlib.util
from typing import Optional


class EngineUnavailable(RuntimeError):
    """Neither rollout engine can run in this environment (or the one asked for cannot)."""


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a stand-in module in sys.modules without a spec
        import sys
        return name in sys.modules


VLLM_HINT = "make vllm-env, then run from .venv-vllm (e.g. .venv-vllm/bin/botgrpo demo --model smollm2)"
HF_HINT = "the transformers engine needs the train extra: pip install 'botgrpo[train]' (or make install)"


def choose_engine(requested: str = "auto") -> tuple[str, Optional[str]]:
    """``(engine, note)``: ``auto`` takes vLLM when it is importable, else the transformers loop
    (the note says so, and that it is slower); ``vllm``/``hf`` are checked. Raises
    :class:`EngineUnavailable` with what to install when the engine (or, for ``auto``, neither) can run."""
    if requested not in ("auto", "vllm", "hf"):
        raise ValueError(f"engine must be auto, vllm or hf, got {requested!r}")
    hf = _importable("torch") and _importable("transformers")
    vllm = hf and _importable("vllm")
    if requested == "vllm" and not vllm:
        raise EngineUnavailable(f"engine vllm: vLLM is not importable in this environment ({VLLM_HINT})")
    if requested == "hf" and not hf:
        raise EngineUnavailable(f"engine hf: torch/transformers are not importable ({HF_HINT})")
    if requested != "auto":
        return requested, None
    if vllm:
        return "vllm", None
    if hf:
        return "hf", ("vLLM is not importable here, so rollouts use the transformers decode loop, about 2-3x "
                      f"slower on CPU than vLLM ({VLLM_HINT})")
    raise EngineUnavailable(f"neither rollout engine can run here: no vLLM ({VLLM_HINT}) and no torch/transformers "
                            f"({HF_HINT})")
