"""The server-load benchmark (``benchmarks.server_load``) at a tiny scale, against the real
processes it measures (``botgrpo serve``, a private ``redis-server``, two ``botgrpo worker``s):
its cells, CPU readings and printed table keep their shape, and nothing errs, so the figure in
docs/performance.md can be rerun as written."""
import shutil

import pytest

from benchmarks import server_load
from tests.helpers import require_host
from tests.node_toolchain import require_node_toolchain


def test_tiny_run_has_a_cell_per_mode_and_client_count_and_no_errors(capsys):
    require_node_toolchain()
    require_host(shutil.which("redis-server") is not None, "redis-server")
    cells = server_load.main(["--seconds", "1", "--clients", "1", "3", "--warmup", "1"])
    out = capsys.readouterr().out

    assert [(c.mode, c.clients) for c in cells] == [("embedded", 1), ("embedded", 3), ("redis", 1), ("redis", 3)]
    for c in cells:
        assert c.errors == [], c.errors
        assert c.requests >= 1 and c.rollouts == 8 * c.requests
        assert c.rollouts_per_s > 0 and c.requests_per_s > 0
        assert 0 < c.request_p50_ms <= c.request_p99_ms
        assert 0 < c.rollout_p50_ms <= c.rollout_p99_ms
        roles = {"embedded": {"server", "client"}, "redis": {"server", "workers", "redis", "client"}}[c.mode]
        assert set(c.cpu_ms_per_rollout) == roles
        assert {key.split("/")[0] for key in c.cpu_ms_by_process} == roles
        assert sum(c.cpu_ms_by_process.values()) == pytest.approx(sum(c.cpu_ms_per_rollout.values()))
        assert all(v >= 0 for v in c.cpu_ms_per_rollout.values())
        assert set(c.kind_latency_ms) <= set(server_load.KINDS)
    # the scoring happens where the mode says: in the server's tree embedded, in the workers' with Redis
    embedded, redis = cells[1].cpu_ms_per_rollout, cells[3].cpu_ms_per_rollout
    assert embedded["server"] > 1.0
    assert redis["workers"] > redis["server"]
    compilers = lambda cell, role: sum(ms for key, ms in cell.cpu_ms_by_process.items()  # noqa: E731
                                       if key in (f"{role}/node", f"{role}/tsc", f"{role}/esbuild"))
    assert compilers(cells[1], "server") > 0 and compilers(cells[3], "workers") > 0

    assert "command: " in out and "benchmarks.server_load --seconds 1" in out
    assert out.count("load average") >= 2
    assert "--redis-url redis://127.0.0.1:" in out and out.count("botgrpo.cli worker --redis-url") == 2
    table = [line.split() for line in out.splitlines() if line.startswith(("embedded ", "redis "))
             and len(line.split()) == 16]
    assert [(row[0], int(row[1]), int(row[-1])) for row in table] == [
        ("embedded", 1, 0), ("embedded", 3, 0), ("redis", 1, 0), ("redis", 3, 0)]
    assert "errors: 0;" in out


def test_a_request_is_a_group_of_the_kinds_rollouts_with_unique_ids_and_spans():
    for name, kind in server_load.KINDS.items():
        body = kind.body(7, 8)
        ids = [r["id"] for r in body["rollouts"]]
        assert len(ids) == len(set(ids)) == 8
        for r in body["rollouts"]:
            spans = r["token_offsets"]
            assert spans[0][0] == 0 and spans[-1][1] == len(r["completion"])
            assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    build = server_load.KINDS["build"].body(7, 8)["rollouts"]
    assert sum("```tsx\n" in r["completion"] and "TodoList" not in r["completion"] for r in build) == 2  # the failing quarter
    assert server_load.MIX.count("math") == 5 and server_load.MIX.count("build") == 3
    assert server_load.MIX.count("typecheck") == 2
