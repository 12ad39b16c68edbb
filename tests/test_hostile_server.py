"""Regressions for what a looping or reward-hacking policy sends a reward server (real processes).

Each test names the finding of the hostile-input issue it pins down:

2. lone surrogates: a 500, and a Node dispatcher thread killed (so a future that never resolves);
3. superlinear text handling on the request path (the code-fence regex backtracked);
6. math guard holes (towers in braces, Gamma of huge numbers, ...) and no memory cap on the
   math pool; per-request ``timeout_s`` up to 60 s;
7. memory and /healthz latency under big requests;
8. huge ``token_offsets`` ints, no request-body read timeout, isolation layers never reported.

Finding 3's linear-time checks of the request path's text handling are in
tests/test_linear_time.py (no server). ``python -m tests.test_hostile_server``
prints the measurements quoted in docs/security.md (server RSS, /healthz latency, fence timings); the
"before" column is this file run on the tree before the fixes::

    git worktree add /tmp/before 558edba && cd /tmp/before && PYTHONPATH=. python /path/to/tests/test_hostile_server.py
"""
from __future__ import annotations

import json
import socket
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.node_toolchain import require_node_toolchain
from tests.live_server import LiveServer

GOOD_REACT = "```tsx\nexport default function A() {\n  return <p>hi</p>;\n}\n```"
GOOD_MATH = {"id": "good-math", "completion": "3 * 4 = 12, so \\boxed{12}", "reference": {"answer": "12"}}
BODY_TIMEOUT_S = 2.0


# --------------------------------------------------------------------------------------------- helpers

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_node_toolchain()
    srv = LiveServer(tmp_path_factory.mktemp("hostile"),
                     env={"BOTGRPO_RESULT_TIMEOUT_S": "60", "BOTGRPO_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S)})
    yield srv
    srv.stop()


def post_raw(server, body: str | bytes, path="/v1/rewards", timeout=60) -> httpx.Response:
    """POST a body as given: ``json.dumps`` escapes lone surrogates as ``\\ud800``, which is valid JSON."""
    content = body.encode() if isinstance(body, str) else body
    return httpx.post(server.url + path, content=content, headers={"content-type": "application/json"},
                      timeout=timeout)


def rss_mb(pid: int, key: str = "VmHWM") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) // 1024
    raise KeyError(key)


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) a process has used: /proc/PID/stat fields 14-15."""
    import os
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class HealthProbe:
    """Polls /healthz every 20 ms in a thread; ``worst`` is the slowest answer seen."""

    def __init__(self, url: str):
        self.url, self.latencies, self._stop = url, [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=600) as client:
            while not self._stop.is_set():
                started = time.perf_counter()
                assert client.get(self.url + "/healthz").status_code == 200
                self.latencies.append(time.perf_counter() - started)
                time.sleep(0.02)

    def __enter__(self) -> "HealthProbe":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def worst(self) -> float:
        return max(self.latencies, default=0.0)


# --------------------------------------------------------------------------------------------- 2: lone surrogates

def test_lone_surrogate_in_a_math_answer_is_scored_not_a_500(server):
    body = {"task": "math", "rollouts": [
        {"id": "s", "completion": "\\boxed{2\ud800}", "reference": {"answer": "2"}},
        {"id": "low", "completion": "1 + 1 = 2 \udc00 so \\boxed{2}", "reference": {"answer": "2"}}, GOOD_MATH]}
    r = post_raw(server, json.dumps(body))
    assert r.status_code == 200, r.text[:500]
    lone, low, good = r.json()["results"]
    assert lone["error"] is None and lone["details"]["answer"] == "2\ufffd"  # judged by math-verify, as any answer
    # replaced one for one: character offsets are those of the completion as sent
    assert lone["token_offsets"] == [[0, len("\\boxed{2\ud800}")]]
    assert low["passed"] is True and good["passed"] is True


def test_lone_surrogate_in_react_code_neither_hangs_nor_kills_a_compiler_thread(server):
    hostile = "```tsx\nexport default function A() {\n  return <p>\ud800 hi \udfff</p>;\n}\n```"
    body = {"task": "react", "options": {"level": "build"},
            "rollouts": [{"id": f"h{i}", "completion": hostile} for i in range(4)] + [{"id": "good", "completion": GOOD_REACT}]}
    started = time.perf_counter()
    r = post_raw(server, json.dumps(body), timeout=60)
    assert r.status_code == 200, r.text[:500]
    results = r.json()["results"]
    assert all(x["error"] is None for x in results), [x["error"] for x in results]
    assert all(x["passed"] for x in results)  # U+FFFD in JSX text compiles
    assert time.perf_counter() - started < 20
    ready = httpx.get(server.url + "/readyz", timeout=10)
    assert ready.status_code == 200 and ready.json()["checks"]["react"] is True


@pytest.mark.parametrize("where", ["id", "group", "prompt", "task", "option_key", "option_value", "reference_key",
                                   "reference_value", "spec_value", "spec_key", "extra_key", "offsets_key"])
def test_lone_surrogates_anywhere_in_a_request_are_never_a_5xx(server, where):
    s = "x\ud800y"
    rollout = {"id": "a", "completion": "3 * 4 = 12, so \\boxed{12}", "reference": {"answer": "12"}}
    body = {"task": "math", "options": {}, "rollouts": [rollout]}
    if where in ("id", "group", "prompt"):
        rollout[where] = s
    elif where == "task":
        body["task"] = s
    elif where == "option_key":
        body["options"] = {s: 1}
    elif where == "option_value":
        body["options"] = {"check_steps": s}
    elif where == "reference_key":
        rollout["reference"] = {s: "12", "answer": "12"}
    elif where == "reference_value":
        rollout["reference"] = {"answer": s}
    elif where == "spec_value":
        body.update(task="react", options={"level": "syntax"})
        rollout.update(completion=GOOD_REACT, reference={"spec": {"component": s, "text": [s]}})
    elif where == "spec_key":
        body.update(task="react", options={"level": "syntax"})
        rollout.update(completion=GOOD_REACT, reference={"spec": {s: [s]}})
    elif where == "extra_key":
        body[s] = 1
    elif where == "offsets_key":
        rollout[s] = [[0, 1]]
    for path in ("/v1/rewards", "/v1/rewards:stream"):
        r = post_raw(server, json.dumps(body), path=path)
        assert r.status_code < 500, (where, r.status_code, r.text[:300])
        json.loads(r.text.splitlines()[0] if path.endswith("stream") and r.status_code == 200 else r.text)


@pytest.mark.parametrize("raw", [b'{"task": "math", "rollouts": [{"id": "a", "completion": "\xed\xa0\x80"}]}',
                                 b'{"task": "math", "rollouts": [{"id": "a", "completion": "\xff\xfe"}]}',
                                 b'\xff\xfe{"task": 1}'])
def test_bytes_that_are_not_utf8_are_never_a_5xx(server, raw):
    """JSON decoding (like FastAPI's) reads UTF-8-encoded surrogates (CESU) as lone surrogates:
    they are replaced like escaped ones; other invalid UTF-8 is a 422."""
    r = post_raw(server, raw)
    assert r.status_code < 500, (r.status_code, r.text[:300])
    r.content.decode("utf-8")  # strict: the answer is valid UTF-8
    if r.status_code == 200:
        assert r.json()["results"][0]["error"]  # no reference answer: unscored, said so


@pytest.mark.parametrize("raw", [b"[" * 100_000 + b"]" * 100_000,
                                 b'{"task": "math", "rollouts": [{"id": "a", "completion": "x", "reference": ' +
                                 b'{"a": ' * 50_000 + b"1" + b"}" * 50_000 + b"}]}",
                                 b'{"task": "math", "rollouts": [{"id": "a", "completion": "x", "token_offsets": [[0, 1'
                                 + b"0" * 5000 + b"]]}]}",
                                 b'{"task": "math", "rollouts": [{"id": "a", "completion": "x", "token_offsets": [[NaN, '
                                 b'Infinity]]}]}'])
def test_pathological_json_is_a_4xx(server, raw):
    """Nesting past the parser's depth, an integer past Python's digit limit, NaN."""
    for path in ("/v1/rewards", "/v1/rewards:stream"):
        r = post_raw(server, raw, path=path)
        assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("where", ["reference", "options", "stream_reference"])
def test_json_within_the_parsers_depth_but_deeper_than_the_server_serialises_is_a_422(server, where):
    """Issue 34 (the sweep after finding 3): a reference key nested 900 deep (keys a scorer does
    not read are allowed) parsed, then broke ``model_dump`` on its way to the queue: a 500.
    Free-form JSON is now at most 32 levels deep."""
    reference = {"answer": "12"}
    body = {"task": "math", "options": {}, "rollouts": [{**GOOD_MATH, "reference": reference}]}
    raw = json.dumps(body)
    if where == "options":
        raw = raw.replace('"options": {}', '"options": {"check_steps": ' + _deep(900) + "}")
    else:
        raw = raw.replace('{"answer": "12"}', '{"answer": "12", "meta": ' + _deep(900) + "}")
    r = post_raw(server, raw, path="/v1/rewards:stream" if where.startswith("stream") else "/v1/rewards")
    assert r.status_code == 422 and "nested deeper than 32 levels" in r.text, (r.status_code, r.text[:300])
    if where != "options":  # a dataset's metadata 20 levels deep is still fine
        shallow = post_raw(server, raw.replace(_deep(900), _deep(20)))
        assert shallow.status_code == 200 and shallow.json()["results"][0]["passed"] is True, shallow.text[:300]


# --------------------------------------------------------------------------------------------- 3: linear time

def test_unclosed_code_fence_does_not_stall_the_server(server):
    """``"```" + "a" * 50000`` took 10 s of GIL in the fence regex; /healthz waited 9 s."""
    body = {"task": "react", "options": {"level": "syntax"},
            "rollouts": [{"id": "fence", "completion": "```" + "a" * 50_000},
                         {"id": "fence-tag", "completion": "```tsx" + "x" * 50_000 + "``"},
                         {"id": "good", "completion": GOOD_REACT}]}
    with HealthProbe(server.url) as probe:
        started = time.perf_counter()
        r = post_raw(server, json.dumps(body))
        elapsed = time.perf_counter() - started
    assert r.status_code == 200, r.text[:300]
    fence, tag, good = r.json()["results"]
    assert fence["details"]["reason"] == tag["details"]["reason"] == "no code in the completion" or \
        not fence["passed"], (fence["details"], tag["details"])
    assert good["passed"] is True
    # the backtracking regex held the loop for 9 s; 2 s leaves room for a busy machine (load 4 on 2 cores and more)
    assert elapsed < 5 and probe.worst < 2.0, (elapsed, probe.worst)


# --------------------------------------------------------------------------------------------- 6: math

HOSTILE_ANSWERS = [
    "{{2^{9999}}^{9999}}^{9999}",
    "((2^{9999})^{9999})^{9999}",
    "\\Gamma(99999999)",
    "\\gamma(99999999)",
    "\\Gamma\\left(99999999\\right)",
    "\\operatorname{eye}(99999)",
    "{99999 \\choose 49999}",
    "\\binom{10^{5}}{5}",
    "10^\\left(10^{10}\\right)",
    "2^{\\left\\{2^{\\left\\{2^{\\left\\{2^{2}\\right\\}}\\right\\}}\\right\\}}",
    "2^\\left\\{2^\\left\\{2^{20}\\right\\}\\right\\}",
    "\\exp(\\exp(\\exp(\\exp(10))))",
    "\\exp\\left(10^{10}\\right)",
    "10^{9}!",
    "2^{\\Gamma(30)}",
    "2^{\\binom{100}{50}}",
    "2^{\\operatorname{lcm}(99999,99998)}",
    "2^{\\sqrt{9999}\\sqrt{9999}\\sqrt{9999}\\sqrt{9999}}",
    "9^{\\frac{\\sin(\\pi/2)}{0.0000000001}}",
    "99999999!!",
    "(x+y+z)^{30}",
    "(1+\\sqrt{2})^{9999}",
    "(2+3i)^{1000}",
    "\\sin^{30}(x)",
    "{(1000)!}^{9999}",
]


def test_math_guard_refuses_towers_and_huge_functions_in_microseconds(server):
    """Each used to reach math-verify and grow until the 5 s deadline (or forever under 60 s)."""
    rollouts = [{"id": f"h{i}", "completion": f"so \\boxed{{{answer}}}", "reference": {"answer": "1"}}
                for i, answer in enumerate(HOSTILE_ANSWERS)] + [GOOD_MATH]
    started = time.perf_counter()
    r = httpx.post(server.url + "/v1/rewards", json={"task": "math", "rollouts": rollouts}, timeout=120)
    elapsed = time.perf_counter() - started
    assert r.status_code == 200, r.text[:300]
    *hostile, good = r.json()["results"]
    not_refused = [(HOSTILE_ANSWERS[i], x["details"]["reason"]) for i, x in enumerate(hostile)
                   if not x["details"]["reason"].startswith("refused by guard")]
    assert not not_refused
    assert good["passed"] is True and elapsed < 3, elapsed


def test_math_workers_run_under_an_address_space_limit_and_still_verify(server):
    r = httpx.post(server.url + "/v1/rewards", timeout=60, json={"task": "math", "rollouts": [
        {"id": "sym", "completion": "\\boxed{\\frac{\\sqrt{2}}{2}}", "reference": {"answer": "\\frac{1}{\\sqrt{2}}"}},
        {"id": "set", "completion": "\\boxed{\\{1, 2\\}}", "reference": {"answer": "\\{2, 1\\}"}}]})
    sym, set_ = r.json()["results"]
    assert sym["passed"] is True and sym["details"]["reason"] == "equivalent (math-verify)", sym["details"]
    assert set_["passed"] is True, set_["details"]
    workers = [pid for pid in _children(server.proc.pid) if b"spawn_main" in _cmdline(pid)]
    assert workers, "no math pool worker found"
    for pid in workers:
        limits = Path(f"/proc/{pid}/limits").read_text()
        line = next(line for line in limits.splitlines() if line.startswith("Max address space"))
        assert line.split()[3] == str(1024 << 20), line


def test_math_timeout_option_is_capped(server):
    body = {"task": "math", "options": {"timeout_s": 60}, "rollouts": [GOOD_MATH]}
    r = httpx.post(server.url + "/v1/rewards", json=body, timeout=60)
    assert r.status_code == 422 and "timeout_s" in r.text, r.text[:300]
    body["options"]["timeout_s"] = 10
    assert httpx.post(server.url + "/v1/rewards", json=body, timeout=60).status_code == 200


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


# --------------------------------------------------------------------------------------------- 7: big requests

def _words_request(n: int, words: int) -> bytes:
    completion = "a " * (words - 1) + "a"
    return json.dumps({"task": "math", "rollouts": [{"id": str(i), "completion": completion, "reference": {"answer": "1"}}
                                                    for i in range(n)]}).encode()


def test_total_tokens_per_request_are_capped_with_a_413(server):
    """75 rollouts x 99,000 words (15 MB) cost 2.3 GB of server memory; now a clear 413."""
    r = post_raw(server, _words_request(75, 99_000))
    assert r.status_code == 413, r.status_code
    assert "max_request_tokens" in r.json()["detail"], r.text[:300]
    # token_offsets count as sent: 41 x 100,000 split tokens + 2 x 65,536 offsets > 4,194,304
    split = [{"id": str(i), "completion": "a " * 100_000} for i in range(41)]
    given = [{"id": f"o{i}", "completion": "abc", "token_offsets": [[0, 0]] * 65_536} for i in range(2)]
    r = httpx.post(server.url + "/v1/rewards", json={"task": "math", "rollouts": split + given}, timeout=60)
    assert r.status_code == 413 and "max_request_tokens is 4194304" in r.json()["detail"], r.text[:300]
    r = httpx.post(server.url + "/v1/rewards", json={"task": "math", "rollouts": split + given[:1]}, timeout=120)
    assert r.status_code == 200, r.text[:300]


def test_a_big_response_neither_stalls_healthz_nor_balloons_memory(tmp_path):
    """The same 75 x 99,000 words with the token cap lifted: /healthz stayed 5 s behind while the
    140 MB response was serialised, and the server's peak RSS reached 2.4 GB."""
    require_node_toolchain()
    srv = LiveServer(tmp_path, env={"BOTGRPO_MAX_REQUEST_TOKENS": "10000000", "BOTGRPO_WARM_SCORERS": "false"})
    try:
        body = _words_request(75, 99_000)
        with HealthProbe(srv.url) as probe:
            r = post_raw(srv, body, timeout=600)
        assert r.status_code == 200
        results = r.json()["results"]
        assert [x["index"] for x in results] == list(range(75)) and len(results[0]["token_scores"]) == 99_000
        peak = rss_mb(srv.proc.pid)
        assert probe.worst < 2.0, probe.worst  # 5 s before; 2 s holds at a load of 4 on 2 cores
        assert peak < 1200, peak
    finally:
        srv.stop()


# --------------------------------------------------------------------------------------------- 8: smaller

@pytest.mark.parametrize("offsets", [[[0, 2 ** 63]], [[2 ** 63, 2 ** 63]], [[0, 2 ** 100]], [[-1, 2]], [[-2 ** 70, 0]]])
def test_huge_or_negative_token_offsets_are_a_422(server, offsets):
    body = {"task": "math", "rollouts": [{"id": "a", "completion": "abc", "token_offsets": offsets}]}
    for path in ("/v1/rewards", "/v1/rewards:stream"):
        r = httpx.post(server.url + path, json=body, timeout=30)
        assert r.status_code == 422, (r.status_code, r.text[:300])


def test_a_trickling_client_gets_a_408(server):
    host, port = "127.0.0.1", server.port
    with socket.create_connection((host, port), timeout=BODY_TIMEOUT_S + 10) as sock:
        sock.sendall(b"POST /v1/rewards HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100000\r\n\r\n")
        started = time.perf_counter()
        sock.setblocking(False)
        answer = b""
        while time.perf_counter() - started < BODY_TIMEOUT_S + 8:
            try:
                sock.send(b" ")
            except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                pass
            try:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                answer += chunk
                if b"\r\n\r\n" in answer and b"body_timeout_s" in answer:
                    break
            except BlockingIOError:
                pass
            time.sleep(0.3)
        elapsed = time.perf_counter() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"body_timeout_s" in answer and elapsed < BODY_TIMEOUT_S + 3, (elapsed, answer[:300])
    assert httpx.get(server.url + "/healthz", timeout=5).status_code == 200


def test_readyz_and_the_first_log_line_report_the_isolation_layers(server):
    from botgrpo.sandbox import isolation as iso
    ready = httpx.get(server.url + "/readyz", timeout=10).json()
    active = sorted(iso.detect().layers, key=iso.ALL_LAYERS.index)
    assert ready["isolation"]["active"] == active
    assert ready["isolation"]["missing"] == [layer for layer in iso.ALL_LAYERS if layer not in active]
    # `sandbox_require: auto` requires what this host provides: no more (it would refuse to start), no less
    from botgrpo.reward_server.settings import AUTO_LAYERS
    assert ready["isolation"]["required"] == [layer for layer in iso.ALL_LAYERS if layer in AUTO_LAYERS and layer in active]
    first = server.log_path.read_text().splitlines()[0]
    assert "isolation" in first and all(layer in first for layer in active), first
    from tests.helpers import require_host
    require_host(iso.detect().bwrap, "bubblewrap (bwrap)")  # where it works, auto requires its layers
    assert {"fs_view", "drop_privileges"} <= set(ready["isolation"]["required"])


def _path_without_bwrap(tmp_path: Path) -> str:
    """A PATH holding the tools the sandbox uses, bubblewrap excepted."""
    import shutil
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("node", "prlimit", "unshare", "true", "env", "sh"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def test_without_bubblewrap_the_server_starts_and_says_what_to_install(tmp_path):
    require_node_toolchain()
    srv = LiveServer(tmp_path, env={"PATH": _path_without_bwrap(tmp_path)})
    try:
        ready = httpx.get(srv.url + "/readyz", timeout=10).json()
        assert {"fs_view", "drop_privileges"} <= set(ready["isolation"]["missing"])
        assert "apt-get install bubblewrap" in ready["isolation"]["hint"]
        log = srv.tail(20_000)
        first = log.splitlines()[0]
        assert "fs_view" in first and "missing" in first, first
        assert "apt-get install bubblewrap" in log
        r = httpx.post(srv.url + "/v1/rewards", timeout=60,
                       json={"task": "react", "rollouts": [{"id": "g", "completion": GOOD_REACT}]})
        assert r.json()["results"][0]["passed"] is True
    finally:
        srv.stop()


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_required_layer_the_host_lacks_stops_serve_with_a_clear_message(tmp_path, command):
    """`botgrpo worker` compiles too (with Redis, the workers run the sandbox): the same check."""
    import subprocess
    from botgrpo.processes import clean_env, free_port
    env = clean_env({"PATH": _path_without_bwrap(tmp_path), "BOTGRPO_SANDBOX_REQUIRE": "[fs_view]"})
    args = ["--port", str(free_port())] if command == "serve" else ["--redis-url", "redis://127.0.0.1:1/0"]
    done = subprocess.run([sys.executable, "-m", "botgrpo.cli", command, *args], env=env,
                          capture_output=True, text=True, timeout=120)
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "fs_view" in out and "apt-get install bubblewrap" in out, out[-2000:]
    assert "Traceback" not in out, out[-2000:]


@pytest.mark.parametrize("key, kind", [("clé-secrète", "non-ASCII"), ("two words", "a space"), ("tab\tkey", "control")])
def test_an_api_key_that_can_never_authenticate_stops_serve(tmp_path, key, kind):
    """Issue 34, finding 14: a non-ASCII key was accepted at start-up and then refused every
    request (header bytes are read as Latin-1, the key compared as UTF-8). The message names
    the setting and the position, never the key."""
    import subprocess
    from botgrpo.processes import clean_env, free_port
    env = clean_env({"BOTGRPO_API_KEY": key, "BOTGRPO_WARM_SCORERS": "false"})
    try:
        done = subprocess.run([sys.executable, "-m", "botgrpo.cli", "serve", "--port", str(free_port())], env=env,
                              capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"botgrpo serve started with the key {key!r}, which no client can send")
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "api_key" in out and kind in out and "visible ASCII" in out, out[-2000:]
    assert key not in out and "Traceback" not in out, out[-2000:]


def test_an_api_key_that_yaml_would_read_as_nothing_keeps_auth_on(tmp_path):
    """Found with finding 14: ``BOTGRPO_*`` values are YAML, so the key ``#k3y`` was read as a
    comment (no key: the server ran without auth), ``null`` as none, ``12345`` as a number (a
    start-up error). A text setting now takes its value as written."""
    require_node_toolchain()
    srv = LiveServer(tmp_path, env={"BOTGRPO_API_KEY": "#k3y", "BOTGRPO_WARM_SCORERS": "false"})
    try:
        body = {"task": "math", "rollouts": [GOOD_MATH]}
        assert httpx.post(srv.url + "/v1/rewards", json=body, timeout=60).status_code == 401
        r = httpx.post(srv.url + "/v1/rewards", json=body, headers={"Authorization": "Bearer #k3y"}, timeout=60)
        assert r.status_code == 200 and r.json()["results"][0]["passed"] is True
    finally:
        srv.stop()


# --------------------------------------------------------------------------------------------- totality

def test_a_scorer_exception_becomes_that_rollouts_error_result(monkeypatch):
    """``ScoringService.handle`` never raises: a rollout whose scoring raises gets an error
    result, its neighbours their verdicts (in-process: no client input can make a scorer raise)."""
    import asyncio

    from botgrpo.reward_server.scorers.math import MathScorer
    from botgrpo.reward_server.service import ScoringService
    from botgrpo.reward_server.settings import ServerSettings
    from botgrpo.services.queue import WorkItem

    original = MathScorer.score_batch

    def flaky(self, rollouts, options):
        if any("boom" in r.completion for r in rollouts):
            raise RuntimeError("scorer exploded")
        return original(self, rollouts, options)

    monkeypatch.setattr(MathScorer, "score_batch", flaky)
    service = ScoringService(ServerSettings(warm_scorers=False))
    payload = {"task": "math", "options": {}}
    items = [WorkItem("b", i, {**payload, "rollout": {"id": str(i), "completion": c, "reference": {"answer": "2"}}})
             for i, c in enumerate(["1 + 1 = 2, \\boxed{2}", "boom \\boxed{2}", "\\boxed{3}"])]
    items.append(WorkItem("b", 3, {"task": "math", "options": {"no_such_option": 1},
                                   "rollout": {"id": "3", "completion": "\\boxed{2}"}}))
    results = asyncio.run(service.handle(items))
    assert [r.index for r in results] == [0, 1, 2, 3]
    assert results[0].passed is True and results[2].passed is False
    assert "scorer exploded" in results[1].error and results[1].id == "1"
    assert results[3].error and results[3].id == "3" and not results[3].ok


# --------------------------------------------------------------------------------------------- measurements

def measure(words: int = 99_000, n: int = 75) -> None:
    """Print the peak RSS and the worst /healthz latency of a server answering ``n`` rollouts of
    ``words`` words each (the token cap lifted), and the fence-regex timings."""
    from botgrpo.reward_server.react.extract import extract_code
    for size in (12_500, 50_000, 200_000):
        started = time.perf_counter()
        extract_code("```" + "a" * size)
        elapsed = time.perf_counter() - started
        print(f"extract_code('```' + 'a' * {size}): {elapsed:.4f} s")
        if elapsed > 5:  # quadratic (the tree before the fix): 4x the size would take 16x as long
            print("  (larger sizes skipped)")
            break
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        srv = LiveServer(Path(tmp), env={"BOTGRPO_MAX_REQUEST_TOKENS": str(10 ** 9), "BOTGRPO_WARM_SCORERS": "false",
                                         "BOTGRPO_RESULT_TIMEOUT_S": "900"})
        try:
            body = _words_request(n, words)
            with HealthProbe(srv.url) as probe:
                started = time.perf_counter()
                r = post_raw(srv, body, timeout=900)
                elapsed = time.perf_counter() - started
            print(f"{n} x {words} words: request {len(body) / 2 ** 20:.1f} MiB -> {r.status_code}, "
                  f"response {len(r.content) / 2 ** 20:.1f} MiB in {elapsed:.1f} s; server peak RSS "
                  f"{rss_mb(srv.proc.pid)} MB; /healthz worst {probe.worst * 1e3:.0f} ms over {len(probe.latencies)} probes")
        finally:
            srv.stop()


if __name__ == "__main__":
    measure(*map(int, sys.argv[1:]))
