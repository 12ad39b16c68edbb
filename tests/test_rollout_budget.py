"""Finding 5 of issue 20: a per-rollout budget at typecheck, with real Node workers and tsgo.

A 2.7 KB recursive conditional type (40 aliases ``Rep<N, S, A>`` each instantiated as
``Rep<999, i>``) costs tsgo over a minute and 6.7 GB unbounded. Before: a batch holding one
timed out as a whole, the dispatcher gave up on the worker (restart, seconds), then every file
was re-run alone, one timeout per bomb, and no file of the batch got its answer before the last
bomb's: 4 bombs and 2 ordinary files took 25.6 s and the ordinary ones waited 24.8 s. Now a file
with a recursive generic alias is checked alone after its batch's other files, each tsgo run is
killed once it has used 0.45 x ``timeout_s`` of CPU time and capped in memory, and the timeout is
blamed on the aliases and their instantiations (``over_budget``, ``budget_blamed``). The bounds
below are the worker's CPU time: a busy machine stretches a run's wall time, not its budget."""
from __future__ import annotations

import time

import pytest

from botgrpo.sandbox.node_pool import NodePool
from tests.helpers import tree_cpu_s
from tests.node_toolchain import require_node_toolchain

SLACK_S = 2.5  # process start-up, file writes and a busy CI machine, on top of a budget
# CPU the worker spends around one tsgo run beside the budget: a spawned tsgo's start (it parses
# the lib and React declarations), parsing, policy, files, replies, and the budget's clock ticks
CPU_SLACK_S = 0.75
# a tsgo server killed by a budget is restarted (outside the rollout's budget) and warmed on a probe
RESTART_CPU_S = 2.0


def load_slack(pool: NodePool) -> float:
    """SLACK_S plus four times what one ordinary typecheck takes now: a bound that still holds
    on a machine so busy that everything runs several times slower (the tsgo probe after a
    failure, file writes and process starts all slow down alike)."""
    started = time.monotonic()
    assert pool.compile(GOOD, level="typecheck").ok
    return SLACK_S + 4 * (time.monotonic() - started)


def worker_cpu_s(pool: NodePool) -> float:
    """CPU seconds the pool's one worker (and the tsgo processes it ran) has used: budgets are
    CPU time, so a busy machine stretches the wall time of a run but not this."""
    [leader] = pool.worker_pids()
    return tree_cpu_s(leader)


def bomb(tag: str, copies: int = 40) -> str:
    """The issue's file (4.3 KB here): ``copies`` distinct recursive aliases, each instantiated once."""
    return "".join(
        f"type R{tag}{i}<N,S,A extends any[]=[]>=A['length'] extends N?A:R{tag}{i}<N,S,[...A,S]>;"
        f"export type X{tag}{i}=R{tag}{i}<999,{i}>;\n" for i in range(copies)
    ) + "export const App = () => <div>hi</div>;\n"


GOOD = "export const Good = ({ n }: { n: number }) => <b>{n + 1}</b>;\n"
TYPE_ERROR = "export const Bad = ({ n }: { n: number }) => <b>{n.foo}</b>;\n"
# ordinary recursive generics: suspects (checked alone), but they pass
TREE = ("type Tree<T> = { value: T; children: Tree<T>[] };\n"
        "export const Leaf = ({ t }: { t: Tree<string> }) => <b>{t.value}</b>;\n")

TIMEOUT_S = 4.0


@pytest.fixture(scope="module")
def pool():
    require_node_toolchain()
    with NodePool(size=1, timeout_s=TIMEOUT_S) as p:
        p.compile(GOOD, level="typecheck")  # warm
        yield p


def finish_times(futures) -> list[float]:
    started = time.monotonic()
    done: dict[int, float] = {}
    for i, future in enumerate(futures):
        future.add_done_callback(lambda _f, i=i: done.setdefault(i, time.monotonic() - started))
    for future in futures:
        future.result(timeout=120)
    return [done[i] for i in range(len(futures))]


def test_a_type_bomb_is_a_timeout_blamed_on_its_aliases_within_the_budget(pool):
    code = bomb("A")
    assert 2500 < len(code.encode()) < 5000
    cpu = worker_cpu_s(pool)
    future = pool.submit(code, "typecheck")
    finish_times([future])
    result = future.result()
    assert not result.ok and result.timed_out and result.over_budget == "time" and result.budget_blamed
    assert worker_cpu_s(pool) - cpu < pool.tsgo_timeout_s + CPU_SLACK_S
    blamed = [code[d.start:d.end] for d in result.diagnostics]
    assert blamed[0].startswith("type RA0<") and blamed[0].endswith(";") and blamed[1] == "RA0<999,0>"
    assert len(blamed) == 80 and all("budget" in d.message and d.rule == "budget/time" for d in result.diagnostics)
    assert pool.stats()["restarts"] == 0  # the worker was never given up on


def test_ordinary_files_of_the_same_batch_get_their_verdicts_first(pool):
    restarts = pool.stats()["restarts"]
    slack = load_slack(pool)
    cpu = worker_cpu_s(pool)
    codes = [bomb("B"), GOOD, bomb("C"), TYPE_ERROR, TREE]
    futures = [pool.submit(code, "typecheck") for code in codes]  # one batch on the one worker
    times = finish_times(futures)
    results = [f.result() for f in futures]
    good, type_error, tree = results[1], results[3], results[4]
    assert good.ok and tree.ok and not good.timed_out
    assert not type_error.ok and "TS2339" in type_error.diagnostics[0].message and not type_error.timed_out
    for i in (0, 2):
        assert results[i].timed_out and results[i].budget_blamed
    assert max(times[1], times[3]) < min(times[0], times[2])  # innocents do not wait for a bomb
    assert max(times[1], times[3]) < slack
    # each bomb holds the worker for at most one tsgo budget of its own
    assert worker_cpu_s(pool) - cpu < 2 * (pool.tsgo_timeout_s + CPU_SLACK_S)
    assert pool.stats()["restarts"] == restarts


def test_a_bomb_in_syntax_and_build_costs_nothing(pool):
    code = bomb("D")
    for level in ("syntax", "build"):
        result = pool.compile(code, level=level)
        assert result.ok and result.elapsed_s < 1.5


def test_tsgo_memory_is_capped_and_the_overrun_is_blamed():
    """With a 192 MB cap tsgo dies of the bomb in about a second, long before its time budget:
    answered ``crashed`` with ``over_budget == "memory"``, on the aliases; the worker stays. (At
    128 MB tsgo's own start-up check sometimes failed at load 6-7 on 2 cores: a starved Go
    collector lets the heap overshoot GOMEMLIMIT; at 256 MB the bomb crashed tsgo some other way
    first, answered as a crash but not as memory. The default cap is 1024 MB.)"""
    require_node_toolchain()
    with NodePool(size=1, timeout_s=20.0, tsgo_memory_mb=192) as small:
        assert small.compile(GOOD, level="typecheck").ok  # the cap leaves room for real files
        code = bomb("E")
        cpu = worker_cpu_s(small)
        result = small.compile(code, level="typecheck")
        assert worker_cpu_s(small) - cpu < small.tsgo_timeout_s
        assert result.crashed and not result.timed_out and result.over_budget == "memory"
        assert result.budget_blamed and "192 MB" in result.diagnostics[0].message
        assert small.compile(TYPE_ERROR, level="typecheck").diagnostics[0].message.startswith("TS2339")
        assert small.stats()["restarts"] == 0


def test_an_unsuspected_slow_file_costs_at_most_two_tsgo_budgets():
    """A file lib/budget.mjs does not suspect (here the tsgo server made to compute a bomb instead,
    test-only) times out its batch's run, then its own: at most 2 x the tsgo budget (of CPU time);
    its neighbour keeps its verdict."""
    require_node_toolchain()
    with NodePool(size=1, timeout_s=TIMEOUT_S, enable_debug_levels=True) as debug_pool:
        debug_pool.compile(GOOD, level="typecheck")
        cpu = worker_cpu_s(debug_pool)
        futures = [debug_pool._debug("typecheck", GOOD, debug_tsgo="spin"), debug_pool.submit(TYPE_ERROR, "typecheck")]
        finish_times(futures)
        slow, neighbour = (f.result() for f in futures)
        assert slow.timed_out and slow.over_budget == "time" and not slow.budget_blamed
        assert slow.diagnostics[0].rule == "budget/time"
        # two runs killed at their budget; each killed server restarted for the next run
        assert worker_cpu_s(debug_pool) - cpu < 2 * (debug_pool.tsgo_timeout_s + RESTART_CPU_S + CPU_SLACK_S)
        assert neighbour.diagnostics[0].message.startswith("TS2339") and not neighbour.timed_out
        assert debug_pool.stats()["restarts"] == 0


def test_the_scorer_blames_a_bomb_where_it_is_and_scores_it_as_an_honest_type_error(pool):
    """Through the React scorer: the located overrun is a compile error blamed on the aliases (a
    failure like any other, never better), not a sandbox failure that blames every token."""
    from botgrpo.reward_server.scorers.base import Rollout
    from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer

    scorer = ReactScorer(pool)
    options = ReactOptions(level="typecheck")
    fenced = lambda code: Rollout(completion=f"```tsx\n{code}```\n")  # noqa: E731
    code = bomb("S", copies=4)
    bombed, honest = scorer.score_batch([fenced(code), fenced(TYPE_ERROR)], options)
    assert bombed.details["reason"] == "over the compile budget (time)" and not bombed.passed
    assert bombed.score == honest.score == -1.0
    blamed = [s for s in bombed.local if s.score < 0]
    assert blamed and all(s.end - s.start < len(code) / 2 for s in blamed)  # located, not the whole text
    start = len("```tsx\n")
    assert any(code[s.start - start:s.end - start].startswith("type RS") for s in blamed)
