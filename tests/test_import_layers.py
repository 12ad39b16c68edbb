"""Imports flow one way, and every module has one name.

Layers, bottom to top (a module imports its own layer and those below, never above):

    botgrpo.services        wire schemas, the client, the Redis queue, the settings loader
    botgrpo.sandbox         the Node pool and its isolation (may use services)
    botgrpo.reward_server   scorers and the app (sandbox, services)
    botgrpo.trainer         the algorithm, rollouts, the update (services only: it reaches a
                            server through the client, never by importing it)
    botgrpo (top)           the CLI, its commands, the demo, the embedded server: composition

Every module may read ``botgrpo.__version__`` (the namespace root). The graph counts every
import, at module level or inside a function, relative ones resolved (and refused: one import
style), but not those under ``if TYPE_CHECKING:``; it must have no cycle.
"""
from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
BELOW = {
    "botgrpo.services": set(),
    "botgrpo.sandbox": {"botgrpo.services"},
    "botgrpo.reward_server": {"botgrpo.sandbox", "botgrpo.services"},
    "botgrpo.trainer": {"botgrpo.services"},
}


def modules() -> dict[str, Path]:
    """Every installed module's dotted name -> its file, through pyproject's package-dir."""
    found = {}
    for package, folder in PACKAGE_DIR.items():
        base = ROOT / folder
        for path in base.rglob("*.py"):
            rel = path.relative_to(base).with_suffix("").parts
            if "node_modules" in rel:
                continue
            parts = rel[:-1] if rel[-1] == "__init__" else rel
            name = ".".join((package, *parts))
            if package == "botgrpo" and len(parts) and parts[0] in {p.split(".")[1] for p in BELOW}:
                continue
            found.setdefault(name, path)
    return found


def absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module a ``from`` import names, a relative one resolved against ``module``."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(path: Path, names: set[str], module: str = "") -> set[str]:
    """The project modules ``path`` (the module ``module``) imports, relative imports resolved
    (``from a import b`` counts ``a.b`` when it is one)."""
    out, tree = set(), ast.parse(path.read_text())
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
                   for stmt in block.body for n in ast.walk(stmt)}  # annotations only: never run
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = absolute(node, module, path.name == "__init__.py")
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in names else source for a in node.names]
        else:
            continue
        out |= {t for t in targets if t.split(".")[0] in {"botgrpo", "benchmarks", "tests"}}
    return out


def layer(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if ".".join(parts[:2]) in BELOW else "botgrpo"


GRAPH = {name: imports(path, set(modules()), name) for name, path in modules().items()}


def test_one_import_style_absolute():
    relative = sorted(f"{name}:{node.lineno}" for name, path in modules().items()
                      for node in ast.walk(ast.parse(path.read_text()))
                      if isinstance(node, ast.ImportFrom) and node.level > 0)
    assert relative == [], "write `from botgrpo.x import y`, not a relative import"


def test_imports_flow_down_the_layers():
    uphill = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
                    if layer(m) in BELOW and t != "botgrpo" and layer(t) != layer(m) and layer(t) not in BELOW[layer(m)])
    assert uphill == []


def test_nothing_installed_imports_benchmarks_or_tests():
    assert sorted(f"{m} -> {t}" for m, ts in GRAPH.items() for t in ts if t.split(".")[0] != "botgrpo") == []


def test_the_module_graph_has_no_cycle():
    def parent_packages(target: str) -> set[str]:  # importing a.b.c runs a/__init__ and a/b/__init__
        parts = target.split(".")
        return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & set(GRAPH)
    edges = {m: set().union(*(parent_packages(t) for t in ts)) - {m} if ts else set() for m, ts in GRAPH.items()}
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop(); on_stack.discard(w); component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))
    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    # a package's __init__ importing its own submodules is not a cycle through a user's import
    cycles = [c for c in cycles if not all(any(o.startswith(m + ".") or m.startswith(o + ".") for o in c if o != m) for m in c)]
    assert cycles == []


def test_the_repository_folders_have_one_name():
    for folder in ("trainer", "reward_server", "services", "sandbox"):
        done = subprocess.run([sys.executable, "-c", f"import {folder}"], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode != 0 and f"import botgrpo.{folder}" in done.stderr, (folder, done.stderr[-300:])
