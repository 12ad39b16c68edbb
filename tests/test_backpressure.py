"""A client that does not read its stream stops costing memory (issue 20, finding 8; real
``botgrpo serve`` processes, raw sockets that send a request and never read).

Before: 3 connections each sending an 8 MB math request to ``/v1/rewards:stream`` and reading
nothing took the server from ~90 MB to over 2 GB of RSS for as long as they stayed connected:
every result was scored and held, and finished-but-unsent results did not count toward
``queue_max_depth``. Now a request's scoring pauses once its unsent results hold
``max_unsent_tokens``, its items count toward the depth until they are *sent*, and a client
that accepts nothing for ``send_timeout_s`` is disconnected and its rollouts dropped.
``python -m tests.test_backpressure [TREE]`` prints the RSS numbers quoted in docs/security.md.
"""
from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.node_toolchain import require_node_toolchain
from tests.live_server import LiveServer

ROLLOUTS, WORDS = 1000, 4000  # 8 MB of JSON, 4.0M tokens (the server's whitespace split)


def big_math_request() -> bytes:
    completion = "1 " * WORDS + "\\boxed{2}"
    rollouts = [{"id": f"r{i}", "completion": completion, "reference": {"answer": "2"}} for i in range(ROLLOUTS)]
    return json.dumps({"task": "math", "options": {"check_steps": False}, "rollouts": rollouts}).encode()


def send_and_never_read(port: int, body: bytes, path: str = "/v1/rewards:stream") -> socket.socket:
    """A connection that sends ``body`` and then reads nothing (its receive buffer kept small)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    sock.connect(("127.0.0.1", port))
    head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    sock.sendall(head + body)
    return sock


def vm_rss_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError("no VmRSS")


def queue_depth(url: str) -> float:
    for line in httpx.get(url + "/metrics", timeout=10).text.splitlines():
        if line.startswith("botgrpo_queue_depth "):
            return float(line.split()[1])
    raise RuntimeError("no botgrpo_queue_depth")


def settle(pid: int, seconds: float) -> int:
    """The server's RSS once it stops growing (or after ``seconds``)."""
    deadline, last = time.monotonic() + seconds, vm_rss_mb(pid)
    while time.monotonic() < deadline:
        time.sleep(2.0)
        now = vm_rss_mb(pid)
        if abs(now - last) < 5:
            return now
        last = now
    return last


def measure(srv, connections: int = 3, probe: bool = False) -> dict[str, int]:
    """RSS of the server before and while ``connections`` clients send an 8 MB request each and
    never read; with ``probe``, also the status of a 1,000-rollout request sent meanwhile."""
    body = big_math_request()
    httpx.post(srv.url + "/v1/rewards", json={"task": "math", "rollouts": [
        {"id": "warm", "completion": "\\boxed{2}", "reference": {"answer": "2"}}]}, timeout=60)
    before = settle(srv.proc.pid, 10)
    socks = [send_and_never_read(srv.port, body) for _ in range(connections)]
    try:
        during = settle(srv.proc.pid, 120)
        numbers = {"connections": connections, "request_mb": len(body) >> 20, "rss_before_mb": before,
                   "rss_during_mb": during, "queue_depth_during": int(queue_depth(srv.url))}
        if probe:
            more = {"task": "math", "rollouts": [{"id": f"m{i}", "completion": "\\boxed{2}",
                                                  "reference": {"answer": "2"}} for i in range(1000)]}
            r = httpx.post(srv.url + "/v1/rewards", json=more, timeout=60)
            numbers["probe_status"] = r.status_code
            numbers["probe_retry_after"] = r.headers.get("retry-after")
        return numbers
    finally:
        for sock in socks:
            sock.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_node_toolchain()
    srv = LiveServer(tmp_path_factory.mktemp("backpressure"),
                     env={"BOTGRPO_SEND_TIMEOUT_S": "600", "BOTGRPO_QUEUE_MAX_DEPTH": "3500",
                          "BOTGRPO_RESULT_TIMEOUT_S": "600"})
    yield srv
    srv.stop()


def test_clients_that_never_read_cost_bounded_memory_and_hold_their_depth(server):
    numbers = measure(server, probe=True)
    # before: ~700 MB a connection; now about max_unsent_tokens of results (~35 MB) plus the request
    assert numbers["rss_during_mb"] - numbers["rss_before_mb"] < 400, numbers
    # their unsent rollouts still count toward queue_max_depth (3,500): 3 x 1,000 are held, so
    # 1,000 more are refused with a 503 (before: all scored, depth 0, the 1,000 admitted)
    assert numbers["queue_depth_during"] > 2500, numbers
    assert numbers["probe_status"] == 503 and numbers["probe_retry_after"], numbers
    assert httpx.get(server.url + "/healthz", timeout=5).status_code == 200


def test_a_client_that_stops_reading_is_disconnected_and_its_rollouts_dropped(tmp_path):
    require_node_toolchain()
    srv = LiveServer(tmp_path, env={"BOTGRPO_SEND_TIMEOUT_S": "3"})
    try:
        sock = send_and_never_read(srv.port, big_math_request())
        deadline = time.monotonic() + 30
        while queue_depth(srv.url) < 500 and time.monotonic() < deadline:  # parsed and queued
            time.sleep(0.2)
        assert queue_depth(srv.url) > 500  # held while connected
        deadline = time.monotonic() + 60
        while queue_depth(srv.url) > 0 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert queue_depth(srv.url) == 0  # the server gave up on it and dropped its waiting rollouts
        sock.settimeout(30)
        received = b""
        while True:  # what was in flight, then the server's close
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            received += chunk
        sock.close()
        assert received.startswith(b"HTTP/1.1 200") and received.count(b"\n") < ROLLOUTS, received[:200]
        assert "send_timeout_s" in srv.tail(20_000)
    finally:
        srv.stop()


def test_a_client_that_disconnects_has_its_waiting_rollouts_dropped(server):
    """Before: a client that left still had every rollout of its request scored for nobody."""
    sock = send_and_never_read(server.port, big_math_request(), path="/v1/rewards")
    deadline = time.monotonic() + 30
    while queue_depth(server.url) < 500 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert queue_depth(server.url) > 500
    sock.close()
    closed = time.monotonic()
    while queue_depth(server.url) > 0 and time.monotonic() < closed + 30:
        time.sleep(0.1)
    gone = time.monotonic() - closed
    assert queue_depth(server.url) == 0 and gone < 3.0, gone  # not scored for nobody first


if __name__ == "__main__":
    import tempfile
    from botgrpo.processes import Server
    tree = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None
    with tempfile.TemporaryDirectory() as tmp:
        env = {"BOTGRPO_RESULT_TIMEOUT_S": "600", "BOTGRPO_QUEUE_MAX_DEPTH": "3500"}
        srv = Server(Path(tmp), env=env if tree else {**env, "BOTGRPO_SEND_TIMEOUT_S": "600"}, tree=tree)
        try:
            print(json.dumps({"tree": str(tree or Path.cwd()), **measure(srv, probe=True)}))
        finally:
            srv.stop()
