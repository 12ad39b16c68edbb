"""``botgrpo setup``: install the sandbox's compilers now (else the first Node pool does it) and
say what this host provides for the sandbox."""
from __future__ import annotations

import argparse
import shutil
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--node-dir", help="install into this folder instead of the default (botgrpo.sandbox.toolchain)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from botgrpo.sandbox import isolation as iso
    from botgrpo.sandbox.toolchain import ToolchainError, ensure

    try:
        where = ensure(Path(args.node_dir) if args.node_dir else None, log=lambda m: print(f"botgrpo setup: {m}", flush=True))
    except ToolchainError as error:
        print(f"botgrpo setup: {error}", file=sys.stderr)
        return 1
    print(f"botgrpo setup: the sandbox's Node toolchain is ready in {where}")
    from botgrpo.sandbox.libraries import curated

    print(f"botgrpo setup: UI libraries a component may import (react_allow's default): {', '.join(curated())}")
    layers = sorted(iso.detect().layers, key=iso.ALL_LAYERS.index)
    missing = [layer for layer in iso.ALL_LAYERS if layer not in layers]
    print(f"botgrpo setup: isolation layers on this host: {', '.join(layers) or 'none'}"
          + (f"; missing: {', '.join(missing)} (docs/security.md says what provides each)" if missing else ""))
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    print(f"botgrpo setup: screenshots: {'chromium at ' + chromium if chromium else 'off (no chromium on PATH)'}")
    return 0
