"""Helpers shared by the sandbox test-suites (kept importable so tests need no conftest)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile

from botgrpo.sandbox import isolation as iso
from botgrpo.sandbox.launcher import NODE_DIR, build_launch, node_binary

INSTALL_HINT = "run `npm ci --prefix sandbox/node` (needs Node.js >= 18 on PATH)"
_REQUIRED_MODULES = ("esbuild", "typescript", "tsgo", "@types/react", "react", "react-dom", "eslint",
                     "eslint-plugin-react", "eslint-plugin-react-hooks", "@typescript-eslint/parser", "oxlint",
                     "oxc-parser")


def require_node_toolchain() -> None:
    """Raise (never skip) when Node or the pinned node_modules are missing."""
    if shutil.which("node") is None:
        raise RuntimeError(f"node is not on PATH; {INSTALL_HINT}")
    missing = [m for m in _REQUIRED_MODULES if not (NODE_DIR / "node_modules" / m).is_dir()]
    if missing:
        raise RuntimeError(f"sandbox/node/node_modules lacks {missing}; {INSTALL_HINT}")


def run_node_script(script: str, layers: frozenset[str], config: iso.IsolationConfig,
                    timeout_s: float = 20.0) -> subprocess.CompletedProcess:
    """Run ``node -e script`` through the same launcher the pool uses."""
    with tempfile.TemporaryDirectory(prefix="botgrpo-probe-") as host_tmp:
        spec = build_launch([node_binary(), "-e", script], layers, config, host_tmp=host_tmp)
        return subprocess.run(spec.argv, env=spec.env, capture_output=True, text=True,
                              timeout=timeout_s, cwd=str(NODE_DIR), start_new_session=True)
