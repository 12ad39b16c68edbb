"""Issue 34 (load): a busy machine must not fail a rollout, and a hostile input must still be stopped.

The worker's tsgo and oxlint runs are timed in CPU time (sandbox/node/lib/cpu-budget.mjs), with a
wall-clock backstop ``WALL_FACTOR`` times the budget for a run that stalls. A run that waits for
a core (here its process is stopped for three budgets, as a very busy machine would leave it) is
answered on its merits; before, the budgets were wall time and it came back ``timed_out`` (or,
for a lint, without findings). A type bomb and a spinning linter on a core shared with
CPU-bound processes (real ones, pinned beside the pool's worker) are still stopped."""
from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from botgrpo.sandbox.cpu_budget import WALL_FACTOR
from botgrpo.sandbox.node_pool import NodePool
from tests.helpers import descendants, frozen
from tests.node_toolchain import require_node_toolchain
from tests.test_rollout_budget import bomb

CORE = 0
BURNERS = 5  # the pool gets about a sixth of its core: a run takes ~6x its CPU time in wall time
# ordinary components, checked together in the runs of one worker: about 0.1-0.2 s of CPU a run
FILES = [f"""import {{ useState }} from "react";
type Item{i} = {{ id: number; name: string; tags: string[] }};
export function List{i}({{ items }}: {{ items: Item{i}[] }}) {{
  const [selected, setSelected] = useState<number | null>(null);
  return <ul>{{items.filter((x) => x.tags.includes("a")).map((x) =>
    <li key={{x.id}} onClick={{() => setSelected(x.id)}}>{{x.name}}{{selected === x.id ? "*" : ""}}</li>)}}</ul>;
}}
""" for i in range(64)]
LINTED = [f"export const L{i} = ({{ xs }}: {{ xs: string[] }}) => <ul>{{xs.map((x) => <li>{{x}}</li>)}}</ul>;\n"
          for i in range(60)]


def _pin_self(cpus: set[int]) -> None:
    """Every thread of this process on ``cpus`` (children started meanwhile inherit it)."""
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(tid), cpus)


@contextlib.contextmanager
def burners_on(core: int, n: int):
    """``n`` processes spinning on ``core``; stopped (by pid) on exit."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        for proc in procs:
            os.sched_setaffinity(proc.pid, {core})
        time.sleep(0.2)
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def pool():
    """One warm worker, started while this process was pinned to CORE: the worker, and the tsgo
    and oxlint processes it starts, run on that core only."""
    require_node_toolchain()
    if not hasattr(os, "sched_setaffinity") or CORE not in os.sched_getaffinity(0):
        pytest.skip("needs sched_setaffinity and core 0")
    everything = os.sched_getaffinity(0)
    _pin_self({CORE})
    try:
        p = NodePool(size=1, timeout_s=1.0, enable_debug_levels=True).start()  # tsgo, oxlint: 0.5 s of CPU a run
    finally:
        _pin_self(everything)
    with p:
        assert p.compile(FILES[0], level="typecheck").ok  # warm: the tsgo server is up
        assert p.compile(LINTED[0], level="syntax", lint="oxlint").ok  # and the oxlint host
        yield p


def the_process(pool: NodePool, marker: str) -> int:
    """The one process under the pool's worker whose command line holds ``marker``."""
    [leader] = pool.worker_pids()
    found = []
    for pid in descendants(leader):
        with contextlib.suppress(OSError):
            if marker in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                found.append(pid)
    assert len(found) == 1, (marker, found)
    return found[0]


def test_the_workers_run_on_the_pinned_core(pool):
    [leader] = pool.worker_pids()
    assert os.sched_getaffinity(leader) == {CORE}


def test_a_typecheck_that_waits_for_a_core_is_answered_on_its_merits(pool):
    """The tsgo server gets no CPU for three budgets while a run is in flight: the file is
    answered (a type error, located), not ``timed_out``; a wall-clock budget failed it."""
    code = FILES[2].replace("x.name}", "x.nome}")
    with frozen(the_process(pool, "--api"), 3 * pool.tsgo_timeout_s):
        future = pool.submit(code, "typecheck")
    result = future.result(timeout=60)
    assert not result.timed_out and result.over_budget is None, result.diagnostics[0].message
    assert [d.message[:7] for d in result.diagnostics] == ["TS2339:"]  # no property "nome"
    assert result.elapsed_s > 3 * pool.tsgo_timeout_s


def test_a_lint_that_waits_for_a_core_keeps_its_findings(pool):
    """The same for the oxlint host: its findings come back; a wall-clock budget dropped them."""
    with frozen(the_process(pool, "oxlint-host.mjs"), 3 * pool.tsgo_timeout_s):
        future = pool.submit(LINTED[1], "syntax", lint="oxlint")
    result = future.result(timeout=60)
    assert result.ok and [d.rule for d in result.lint] == ["react/jsx-key"]


def test_a_type_bomb_on_a_busy_core_is_still_stopped_and_blamed(pool):
    with burners_on(CORE, BURNERS):
        started = time.monotonic()
        result = pool.compile(bomb("Q"), level="typecheck")
        elapsed = time.monotonic() - started
    assert result.timed_out and result.over_budget == "time" and result.budget_blamed
    assert elapsed < WALL_FACTOR * pool.tsgo_timeout_s + 10  # the backstop, and the replies around it
    assert pool.compile(FILES[1], level="typecheck").ok


def test_a_spinning_linter_on_a_busy_core_is_still_stopped(pool):
    """An oxlint run that computes for ever (test hook) costs its files their findings, no more."""
    with burners_on(CORE, BURNERS):
        started = time.monotonic()
        result = pool._debug("syntax", LINTED[2], lint="oxlint", debug_oxlint="spin").result(timeout=60)
        elapsed = time.monotonic() - started
    assert result.ok and result.lint == [] and not result.timed_out
    assert elapsed < WALL_FACTOR * pool.tsgo_timeout_s + 10
    assert [d.rule for d in pool.compile(LINTED[3], "syntax", lint="oxlint").lint] == ["react/jsx-key"]
    assert pool.stats()["restarts"] == 0  # the worker itself never stalled


@pytest.mark.parametrize("level", ["typecheck", "lint"])
def test_a_run_that_stalls_is_stopped_by_the_wall_clock_backstop(pool, level):
    """A run that uses no CPU (test hooks: the tsgo server never asked, the oxlint host blocked)
    never reaches its CPU budget: the backstop, WALL_FACTOR x the budget, ends it."""
    started = time.monotonic()
    if level == "typecheck":
        result = pool._debug("typecheck", FILES[3], debug_tsgo="hang").result(timeout=60)
        assert result.timed_out and result.over_budget == "time"
    else:
        result = pool._debug("syntax", LINTED[4], lint="oxlint", debug_oxlint="hang").result(timeout=60)
        assert result.ok and result.lint == []
    elapsed = time.monotonic() - started
    assert WALL_FACTOR * pool.tsgo_timeout_s <= elapsed < 3 * WALL_FACTOR * pool.tsgo_timeout_s + 10, elapsed
    assert pool.stats()["restarts"] == 0  # the worker answered: it was never taken for stuck


def test_the_wall_clock_backstop_is_the_same_number_in_python_and_node():
    source = (Path(__file__).parents[1] / "sandbox" / "node" / "lib" / "cpu-budget.mjs").read_text()
    assert re.search(r"^export const WALL_FACTOR = (\d+);", source, re.M).group(1) == str(WALL_FACTOR)
