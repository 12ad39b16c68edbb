"""Every command block of the README and docs/*.md runs as written, or says why not.

A block tagged ``bash``/``sh``/``console``/``python`` is a command a reader is told to run. Each
one is either registered in :data:`RUNS` under its key (a hash of its exact text: edit a block
and this test names it until its entry is updated) or marked in the doc with
``<!-- not run here: WHY -->`` on the line before it. Untagged blocks are refused: output and
formulas are ``text``.

``make test-docs`` (``BOTGRPO_RUN_DOCS=1``) runs the registered blocks in a fresh copy of the
checkout (tracked and untracked-but-not-ignored files; the virtualenv and the sandbox's
node_modules linked in, their set-up marked done), in the order a reader meets them, each session in one bash so the
servers one block starts serve the next. They run as written, made small only through the
documented override ``BOTGRPO_<COMMAND>_ARGS`` (:data:`SMALL`). A ``botgrpo serve``/``worker``
line runs in the background (a new ``serve`` replaces the running one: they share the port);
Python blocks run with a registered prelude that defines the names they take as given.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from tests.doc_blocks import DOCS, ROOT, Block, all_blocks
from tests.helpers import require_host

RUN_DOCS = os.environ.get("BOTGRPO_RUN_DOCS", "") not in ("", "0")

# The documented override: arguments appended to each command (botgrpo/cli.py extra_arguments).
SMALL = {
    "BOTGRPO_DEMO_ARGS": "--sft-steps 20 --corpus 200 --steps 2 --eval-prompts 4 --group-size 2 "
                         "--prompts-per-step 2 --max-new-tokens 24",
    "BOTGRPO_TRAIN_ARGS": "--steps 2 --group-size 2 --prompts-per-step 2 --set rollout.sampling.max_new_tokens=24 "
                          "--set eval.prompts=4",
    "BOTGRPO_EVAL_ARGS": "--prompts 4 --max-new-tokens 24",
}


@dataclass(frozen=True)
class Run:
    """How a registered block runs: its session, lines left out (each with why), a prelude and a
    check for Python blocks, the interpreter (``bench``: .venv-bench, where TRL lives)."""

    session: str
    doc: str                                   # where the block is (for messages and the order)
    skip: dict[str, str] = field(default_factory=dict)
    prelude: str = ""
    check: str = ""
    python: str = ".venv"


TENSORS = """
import torch
torch.manual_seed(0)
B, T = 4, 6
token_rewards = torch.randn(B, T)
mask = torch.ones(B, T, dtype=torch.bool); mask[0, 4:] = False
group_ids = torch.tensor([0, 0, 1, 1])
R = token_rewards.mean(1)
logp, old_logp, ref_logp = (torch.randn(B, T) - 2 for _ in range(3))
"""

TRL_PRELUDE = """
import pathlib, tempfile
from datasets import Dataset
from trl import GRPOConfig
from botgrpo.trainer.models.sft import build_tiny_policy
from botgrpo.trainer.tasks import arith
work = pathlib.Path(tempfile.mkdtemp())
pairs = arith.make_sft_corpus(200, 0)
model = str(build_tiny_policy([p + c for p, c in pairs], work / "model", hidden=32, layers=2, vocab_size=300))
grpo_config = GRPOConfig(output_dir=str(work / "out"), per_device_train_batch_size=8, num_generations=4,
                         max_completion_length=12, max_steps=1, beta=0.0, use_cpu=True, bf16=False,
                         report_to="none", save_strategy="no", disable_tqdm=True, seed=0)
dataset = Dataset.from_dict({"prompt": [task.prompt for task in arith.make_prompts(16, 1)]})
def token_rewards(prompts, completions, completion_ids, **columns):
    return [[float(i % 2) for i in range(len(ids))] for ids in completion_ids]
"""

CLIENT_PRELUDE = """
text = "```tsx\\nexport default function A() {\\n  return <p>hi</p>;\\n}\\n```"
spans = [[0, 7], [7, len(text)]]
"""

# what `make test-docs` exports to its commands: inherited, a nested make says `make[1]:` and
# shares the outer one's flags and jobserver, which a reader's shell never has
MAKE_VARIABLES = ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "MAKE_TERMOUT", "MAKE_TERMERR")

FILES = {  # what the blocks take as the reader's own files
    "answer.md": "```tsx\nexport default function Card() {\n  return <div className=\"card\">hi</div>;\n}\n```\n",
    "batch.json": '{"task": "math", "rollouts": [{"id": "a", "completion": "\\\\boxed{12}", "reference": {"answer": "12"}}]}',
}

RUNS: dict[str, Run] = {
    # the demo, then training and evaluation from its warm start, in the order of the docs
    "093cf465c91a": Run("train", "README.md", skip={"make test": "the suite this test belongs to (CI runs it first)"}),
    "a070bcf30a07": Run("train", "README.md"),
    "3bb1d6cc79f1": Run("train", "docs/trainer.md"),
    # a server, then the requests, the client and the deployment page's variant
    "4d7a2eba3cbc": Run("serve", "README.md"),
    "5104cb69020a": Run("serve", "README.md"),
    "a247faef63d5": Run("serve", "README.md", prelude=CLIENT_PRELUDE, check="assert result.id == 'r1', result"),
    "c50c55985fab": Run("serve", "docs/deployment.md"),
    "8c1d3e2a1620": Run("serve", "docs/api.md"),
    # the Python API and a reproduction from committed records
    "d99459a18bfe": Run("python", "README.md", prelude=TENSORS,
                        check="assert adv.shape == (B, T) and loss.ndim == 0 and bool(loss.isfinite())"),
    "6224ccfe6fba": Run("python", "docs/algorithms.md", prelude=TENSORS, check="assert adv.shape == (B, T)"),
    "4f7641ca87b0": Run("python", "docs/compare.md"),
    "eeff1d18cae1": Run("trl", "README.md", prelude=TRL_PRELUDE, python=".venv-bench",
                        check="trainer.train(); assert trainer.state.global_step == 1"),
}
SESSIONS = ("train", "serve", "python", "trl")
EXPECT = {  # what each session's output shows when its commands did their job
    "train": ["RL bot_grpo 2/2 (100%)", "done: runs/react-bot_grpo/metrics.jsonl", "done: runs/react-ddp/metrics.jsonl",
              "done: runs/react-grpo/metrics.jsonl", "build/pass@8", "typecheck/pass_rate"],
    "serve": ["PASS  outcome", '"passed":true', "['math', 'react']", "make: Nothing to be done for 'install'."],
    "python": ["bot_grpo oracle as registered ties"],
    "trl": ["train_runtime"],
}


def _command_blocks() -> list[Block]:
    return [b for b in all_blocks() if b.is_command]


# ---- the registry matches the docs (fast: part of `make test`) ----------------------------------

def test_every_block_is_tagged():
    untagged = [b.where() for b in all_blocks() if not b.language]
    assert not untagged, f"tag these blocks (bash/python for commands, text for output and formulas): {untagged}"


def test_every_command_block_is_run_or_marked():
    problems = []
    for b in _command_blocks():
        if b.key in RUNS and b.not_run:
            problems.append(f"{b.where()}: registered to run AND marked not run ({b.not_run})")
        elif b.key not in RUNS and not b.not_run:
            problems.append(f"{b.where()}: neither run by this test nor marked `<!-- not run here: why -->`; if it "
                            f"changed, update its entry in RUNS (tests/test_docs_commands.py) to key {b.key!r}")
        elif b.not_run is not None and not b.not_run.strip():
            problems.append(f"{b.where()}: the marker must say why")
    assert not problems, "\n".join(problems)


def test_every_registered_block_is_in_the_docs():
    present = {b.key: b for b in _command_blocks()}
    stale = {key: run.doc for key, run in RUNS.items() if key not in present}
    assert not stale, f"RUNS names blocks that no doc has any more (changed or removed): {stale}"
    assert all(present[key].doc == run.doc for key, run in RUNS.items()), "a block moved to another doc"
    for key, run in RUNS.items():
        lines = present[key].text.splitlines()
        missing = [line for line in run.skip if line not in [ln.split("#")[0].strip() for ln in lines]]
        assert not missing, f"{present[key].where()}: skipped lines not in the block: {missing}"


def test_no_doc_or_example_names_a_fingerprint():
    """Fingerprinted directories change with their settings; docs name their stable links
    (``runs/demo/warm``, ``<output_dir>/latest``). (docs/results/ records name the exact warm
    start a study used, on purpose.)"""
    import re
    files = [*DOCS, *sorted((ROOT / "docs" / "examples").iterdir())]
    named = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in files
             for m in re.finditer(r"warm-[0-9a-f]{12}", p.read_text())]
    assert not named, named


# ---- running them (slow: `make test-docs`) ------------------------------------------------------

def _copy_checkout(dest: Path) -> Path:
    """The working tree as a fresh clone would hold it, plus the installed environments (linked)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file() or source.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name, follow_symlinks=False)  # mtimes too: make sees nothing to rebuild
    for installed in (".venv", "sandbox/node/node_modules"):
        _shadow(ROOT / installed, dest / installed)
    if (ROOT / ".venv-bench").exists():
        (dest / ".venv-bench").symlink_to(ROOT / ".venv-bench")
    return dest


def _shadow(source: Path, dest: Path) -> None:
    """``dest``: links to every entry of ``source`` but make's markers (``.installed*``), which are
    new files here with the originals' times (what was built after a marker stays newer than it):
    a `make` in the copy finds the set-up done and never writes into ``source``."""
    require_host(source.is_dir(), f"{source.relative_to(ROOT)} (make install)")
    dest.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name.startswith(".installed"):
            (dest / entry.name).touch()
            made = entry.stat()
            os.utime(dest / entry.name, ns=(made.st_atime_ns, made.st_mtime_ns))
        else:
            (dest / entry.name).symlink_to(entry)


def _reader_env(work: Path) -> dict[str, str]:
    """A reader's shell in the copy: its .venv first on PATH, the docs' commands made small, and
    nothing of the shell `make test-docs` runs them from (no active virtualenv, no make variables)."""
    env = {**os.environ, **SMALL, "PATH": f"{work / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONUNBUFFERED": "1"}
    for inherited in ("VIRTUAL_ENV", *MAKE_VARIABLES):
        env.pop(inherited, None)
    return env


def test_the_docs_commands_run_in_a_readers_shell_not_makes(tmp_path, monkeypatch):
    """Under `make test-docs` a nested `make install` would say ``make[1]: Nothing to be done``
    (MAKELEVEL is inherited), not what a reader sees; CI failed on exactly that."""
    monkeypatch.setenv("MAKELEVEL", "1")
    monkeypatch.setenv("MAKEFLAGS", "-j2 --jobserver-auth=3,4")
    env = _reader_env(tmp_path)
    assert not set(MAKE_VARIABLES) & set(env)
    assert env["PATH"].startswith(str(tmp_path / ".venv" / "bin"))
    if shutil.which("make"):
        (tmp_path / "Makefile").write_text("install:\n\t@true\n.PHONY: install\nall:\n")
        said = subprocess.run(["make", "all"], cwd=tmp_path, env=env, capture_output=True, text=True).stdout
        assert said.startswith("make: "), said


SERVER_FUNCTIONS = r"""
__servers=()
__stop_serve() { if [ -n "${__serve:-}" ]; then kill "$__serve" 2>/dev/null || true; wait "$__serve" 2>/dev/null || true; __serve=; fi; }
__ready() { for _ in $(seq 900); do curl -sf "localhost:$1/healthz" >/dev/null && return 0; sleep 0.2; done; echo "no server on $1" >&2; return 1; }
trap 'kill "${__servers[@]}" ${__serve:-} 2>/dev/null || true' EXIT
"""


def _server_line(line: str) -> Optional[str]:
    """A ``botgrpo serve``/``worker`` line as a background job (serve: replacing the running one)."""
    command = line.split("  #")[0].rstrip()
    words = command.split()
    program = next((i for i, w in enumerate(words) if "=" not in w), None)
    if program is None or not words[program].endswith("botgrpo") or len(words) <= program + 1:
        return None
    if words[program + 1] == "serve":
        port = words[words.index("--port") + 1] if "--port" in words else "8000"
        return f"__stop_serve; {command} >>server.log 2>&1 & __serve=$!; __ready {port}"
    if words[program + 1] == "worker":
        return f"{command} >>worker.log 2>&1 & __servers+=($!)"
    return None


def _script(block: Block, run: Run, index: int, workdir: Path) -> str:
    """The block as bash: as written, but for skipped lines and background servers; a Python block
    written to a file with its prelude and check."""
    if block.language == "python":
        body = "\n".join(filter(None, (textwrap.dedent(run.prelude), block.text, run.check)))
        path = workdir / f".docs-block-{index}.py"
        path.write_text(body)
        return f"{run.python}/bin/python {path.name}"
    out = []
    for line in block.text.splitlines():
        bare = line.split("#")[0].strip()
        if bare in run.skip:
            out.append(f": skipped: {bare}")
            continue
        out.append(_server_line(line) or line)
    return "\n".join(out)


def _session_blocks(session: str) -> list[tuple[Block, Run]]:
    chosen = [(b, RUNS[b.key]) for b in _command_blocks() if b.key in RUNS and RUNS[b.key].session == session]
    return chosen


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def _redis_up() -> bool:
    return shutil.which("redis-cli") is not None and subprocess.run(
        ["redis-cli", "-p", "6379", "ping"], capture_output=True, text=True).stdout.strip() == "PONG"


@pytest.mark.docs
@pytest.mark.slow
@pytest.mark.timeout(1800)  # the training session: 8 processes that each load torch and a model
@pytest.mark.parametrize("session", SESSIONS)
def test_docs_session_runs_as_written(session, tmp_path):
    if not RUN_DOCS:
        pytest.skip("the docs' commands run in `make test-docs` (BOTGRPO_RUN_DOCS=1)")
    chosen = _session_blocks(session)
    assert chosen, f"no registered block in session {session!r}"
    if session == "trl":
        require_host((ROOT / ".venv-bench" / "bin" / "python").exists(), "TRL's virtualenv .venv-bench (make bench-env)")
    if session == "serve":
        require_host(_port_free(8000), "a free port 8000 (the docs' server port)")
        require_host(_redis_up(), "Redis on 127.0.0.1:6379 (the docs' REDIS_URL; .ci/run starts one)")
    require_host(shutil.which("curl") is not None, "curl")
    work = _copy_checkout(tmp_path / "checkout")
    for name, content in FILES.items():
        (work / name).write_text(content)
    parts = [SERVER_FUNCTIONS] + [f"echo; echo '=== {b.where()}'\n{_script(b, run, i, work)}" for i, (b, run) in enumerate(chosen)]
    env = _reader_env(work)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", "\n".join(parts)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=1500)
    logs = "".join(f"\n--- {p.name}\n{p.read_text()[-3000:]}" for p in work.glob("*.log"))
    print(done.stdout, done.stderr[-20000:], logs, sep="\n")  # pytest -rP shows it
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}{logs}"
    for b, _ in chosen:
        assert f"=== {b.where()}" in done.stdout
    missing = [text for text in EXPECT[session] if text not in done.stdout]
    assert not missing, f"ran, but the output lacks {missing}"
