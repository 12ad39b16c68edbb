"""The server with a real Redis and two real ``botgrpo worker`` processes: nothing is lost or
duplicated when a worker is killed mid-stream or Redis restarts mid-run."""
import json
import threading
import time

import httpx
import pytest

from tests.node_toolchain import require_node_toolchain
from tests.live_server import LiveServer, worker
from tests.redis_server import RedisServer


@pytest.fixture
def cluster(tmp_path):
    require_node_toolchain()
    redis = RedisServer(tmp_path / "redis")
    redis.data_dir.mkdir()
    redis.start()
    env = {"REDIS_URL": redis.url}
    workers = [worker(["--claim-idle-ms", "1500", "--batch-size", "8", "--consumer", f"w{i}"], env,
                      tmp_path / f"worker{i}.log") for i in range(2)]
    server = LiveServer(tmp_path, env=env)
    yield redis, server, workers
    server.stop()
    for w in workers:
        w.stop()
    redis.stop()


def rollouts(n):
    # typecheck is the slowest level: the batch is still streaming when the fault is injected
    return [{"id": f"r{i}", "completion": f"```tsx\nexport default function C{i}() {{\n  return <p>{i}</p>;\n}}\n```"}
            for i in range(n)]


def stream_in_background(server, n, seen, errors):
    def run():
        try:
            with httpx.stream("POST", server.url + "/v1/rewards:stream", timeout=120,
                              json={"task": "react", "options": {"level": "typecheck"}, "rollouts": rollouts(n)}) as r:
                assert r.status_code == 200, r.read()
                for line in r.iter_lines():
                    if line:
                        seen.append(json.loads(line))
        except Exception as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def wait_for(condition, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def assert_exactly_once(seen, n):
    ids = [r["id"] for r in seen]
    assert len(ids) == n and set(ids) == {f"r{i}" for i in range(n)}, (len(ids), len(set(ids)))
    assert all(r.get("error") is None and r["passed"] for r in seen), [r for r in seen if r.get("error")][:3]


def test_worker_killed_mid_stream_every_id_once(cluster):
    redis, server, workers = cluster
    seen, errors, n = [], [], 160
    thread = stream_in_background(server, n, seen, errors)
    wait_for(lambda: len(seen) >= 10)
    at_kill = len(seen)
    workers[0].kill()  # SIGKILL: its pending entries are reclaimed by the other worker
    thread.join(timeout=120)
    assert not errors, errors
    assert at_kill < n / 2  # the fault really hit mid-stream
    assert_exactly_once(seen, n)


def test_redis_restart_mid_run_loses_nothing(cluster):
    redis, server, workers = cluster
    seen, errors, n = [], [], 160
    thread = stream_in_background(server, n, seen, errors)
    wait_for(lambda: len(seen) >= 10)
    at_kill = len(seen)
    redis.kill()  # SIGKILL; the AOF (appendfsync always) holds every acknowledged write
    time.sleep(0.5)
    redis.start()
    thread.join(timeout=120)
    assert not errors, errors
    assert at_kill < n / 2
    assert_exactly_once(seen, n)
    assert httpx.get(server.url + "/readyz").json()["checks"]["queue"] is True
