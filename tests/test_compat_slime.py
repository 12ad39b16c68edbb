"""slime's remote reward protocol (``/compat/slime/{task}``) against a live server: uvicorn in
a subprocess, the real math scorer and the real Node pool for React.

The peer's behaviour, read in its source (THUDM/slime at commit
624b824a898ab0ec1fcb4d373004c7f3852bf515, 2026-08-21); facts only, no code copied:

* slime/rollout/rm_hub/__init__.py, ``remote_rm`` (``--rm-type remote_rm``, ``--rm-url``): the
  body is the dict ``{"prompt": sample.prompt, "response": sample.response, "label":
  sample.label}`` (that key order), one sample per request, posted with aiohttp's
  ``session.post(args.rm_url, json=payload)`` (120 s total timeout); ``raise_for_status()``, then
  ``await resp.json()`` is returned as the reward; any error is retried, 10 tries, sleeping
  min(2**attempt, 30) s plus jitter. aiohttp's ``json=`` body is
  ``json.dumps(payload).encode("utf-8")`` with Content-Type application/json (aiohttp
  ``payload.JsonPayload``); ``resp.json()`` refuses another Content-Type. aiohttp sends a URL's
  ``user:password@`` as HTTP Basic auth, the only credential the client can send.
* slime/utils/types.py, ``Sample``: ``prompt: str | list[dict[str, str]]`` (chat messages),
  ``response: str``, ``label: str | None``, ``reward: float | dict``; ``get_reward_value`` is the
  reward itself, or ``reward[args.reward_key]`` with ``--reward-key``.
"""
import base64
import json
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.node_toolchain import require_node_toolchain
from tests.helpers import require_host
from tests.live_server import LiveServer

SLIME_COMMIT = "624b824a898ab0ec1fcb4d373004c7f3852bf515"
KEY = "compat-key-2"
BASIC = {"Authorization": "Basic " + base64.b64encode(f"botgrpo:{KEY}".encode("latin1")).decode()}
PROMPT = "<|im_start|>user\nWhat is 6 * 7? Put the answer in \\boxed{}.<|im_end|>\n<|im_start|>assistant\n"
RIGHT = "6 * 7 = 42, so the answer is \\boxed{42}."
WRONG = "6 * 7 = 48, so the answer is \\boxed{48}."
COUNTER = "```tsx\nexport default function Counter() {\n  return <button>+1</button>;\n}\n```"
BROKEN = "```tsx\nexport default function Counter() {\n  return <button className=\"x\"+1</button>;\n}\n```"


def node_available() -> bool:
    try:
        require_node_toolchain()
    except RuntimeError:
        return False
    return True


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_host(node_available(), "the Node toolchain (sandbox/node/node_modules)")
    srv = LiveServer(tmp_path_factory.mktemp("slime"), env={"BOTGRPO_API_KEY": KEY, "BOTGRPO_MAX_COMPLETION_CHARS": "4000"})
    yield srv
    srv.stop()


def slime_body(prompt, response, label) -> bytes:
    """The bytes slime posts: its dict, in its key order, as aiohttp's ``json=`` encodes it."""
    return json.dumps({"prompt": prompt, "response": response, "label": label}).encode("utf-8")


def post(url, task, body: bytes, query="", headers=BASIC, timeout=120) -> httpx.Response:
    return httpx.post(f"{url}/compat/slime/{task}{query}", content=body,
                      headers={"Content-Type": "application/json", **headers}, timeout=timeout)


def slime_reward(response: httpx.Response, reward_key=None) -> float:
    """The reward as slime takes it: the JSON body (``resp.json()``), a key of it with --reward-key."""
    assert response.status_code == 200, response.text  # raise_for_status()
    assert response.headers["content-type"].split(";")[0] == "application/json"  # aiohttp's resp.json()
    reward = response.json()
    value = reward if reward_key is None else reward[reward_key]
    assert type(value) in (float, int) and -1.0 <= value <= 1.0, reward
    return float(value)


def test_math_reward_is_the_body(server):
    assert slime_reward(post(server.url, "math", slime_body(PROMPT, RIGHT, "42"))) == 1.0
    assert slime_reward(post(server.url, "math", slime_body(PROMPT, WRONG, "42"))) == -1.0
    assert slime_reward(post(server.url, "math", slime_body(PROMPT, RIGHT, "\\frac{84}{2}"))) == 1.0
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 6 * 7?"}]
    assert slime_reward(post(server.url, "math", slime_body(chat, RIGHT, "42"))) == 1.0  # prompt as messages


def test_dict_form_for_reward_key_carries_the_token_scores(server):
    r = post(server.url, "math", slime_body(PROMPT, "The answer is \\boxed{48}.", "42"), "?format=dict")
    assert slime_reward(r, reward_key="reward") == -1.0
    detail = r.json()
    assert detail["score"] == 0.0 and detail["passed"] is False and detail["unscored"] is False
    assert len(detail["token_scores"]) == len(detail["token_offsets"]) == 4  # the server's whitespace split
    assert all(-1.0 <= s <= 1.0 for s in detail["token_scores"])
    offsets = [tuple(s) for s in detail["token_offsets"]]
    assert offsets[0][0] == 0 and offsets[-1][1] == len("The answer is \\boxed{48}.")
    bare = post(server.url, "math", slime_body(PROMPT, "The answer is \\boxed{48}.", "42"), "?format=dict&local_weight=0")
    assert set(bare.json()["token_scores"]) == {-1.0} != set(detail["token_scores"])  # options from the query


def test_react_build_with_spec_labels(server):
    spec = json.dumps({"component": "Counter", "elements": ["button"]})
    assert slime_reward(post(server.url, "react", slime_body("Write Counter.", COUNTER, spec), "?level=build")) == 1.0
    assert slime_reward(post(server.url, "react", slime_body("Write Counter.", COUNTER, "Counter"))) == 1.0
    assert slime_reward(post(server.url, "react", slime_body("Write Counter.", COUNTER, "TodoList"))) == 0.0
    assert slime_reward(post(server.url, "react", slime_body("Write Counter.", BROKEN, spec))) == -1.0
    assert slime_reward(post(server.url, "react", slime_body("Write Counter.", COUNTER, None))) == 1.0  # no spec
    detail = post(server.url, "react", slime_body("Write Counter.", BROKEN, None), "?format=dict").json()
    assert detail["passed"] is False and min(detail["token_scores"]) == -1.0 < max(detail["token_scores"])


def test_an_end_of_sequence_text_is_cut_off(server):
    unfenced = "export default function Counter() {\n  return <button>+1</button>;\n}\n"
    assert slime_reward(post(server.url, "react", slime_body("p", unfenced + "<|eot_id|>", "Counter"))) == 1.0
    detail = post(server.url, "react", slime_body("p", unfenced + "<|eot_id|>", None), "?format=dict").json()
    assert detail["passed"] is True and detail["token_offsets"][-1][1] <= len(unfenced)  # the marker is not scored


def test_a_retried_request_gets_the_same_answer(server):
    body = slime_body(PROMPT, "The answer is \\boxed{48}.", "42")
    first, second = (post(server.url, "math", body, "?format=dict") for _ in range(2))
    assert first.status_code == 200 and first.content == second.content


@pytest.mark.parametrize("task, body, query, needle", [
    ("math", slime_body(PROMPT, RIGHT, None), "", "label: task 'math' needs the reference answer"),
    ("math", slime_body(PROMPT, RIGHT, None), "", "slime's --label-key"),  # what to set, in the refusal
    ("math", slime_body(PROMPT, RIGHT, ""), "", "label: task 'math' needs"),
    ("math", json.dumps({"prompt": PROMPT, "label": "42"}).encode(), "", "response"),
    ("math", json.dumps({"prompt": PROMPT, "response": RIGHT, "label": "42", "x": 1}).encode(), "", "x"),
    ("math", json.dumps({"prompt": PROMPT, "response": 7, "label": "42"}).encode(), "", "response"),
    ("math", b"[1, 2", "", "JSON decode error"),
    ("math", slime_body(PROMPT, RIGHT, "42"), "?format=xml", "format"),
    ("math", slime_body(PROMPT, RIGHT, "42"), "?level=build", "level"),
    ("react", slime_body("p", COUNTER, '{"props": "button"}'), "", "label: not a valid spec"),
    ("react", slime_body("p", COUNTER, "two words"), "", "label: a react label is a spec"),
    ("nope", slime_body(PROMPT, RIGHT, "42"), "", "unknown task 'nope'"),
])
def test_bad_requests_are_422_naming_the_field(server, task, body, query, needle):
    r = post(server.url, task, body, query)
    assert r.status_code == 422 and needle in r.text, r.text


def test_limits_and_auth_are_those_of_v1_rewards(server):
    long = post(server.url, "math", slime_body(PROMPT, "1 + 1 = 2. " * 400, "2"))
    assert long.status_code == 413 and "max_completion_chars" in long.text and "response has 4400" in long.text
    body = slime_body(PROMPT, RIGHT, "42")
    assert post(server.url, "math", body, headers={}).status_code == 401
    assert post(server.url, "math", body, headers={"Authorization": "Bearer nope"}).status_code == 401
    assert slime_reward(post(server.url, "math", body, headers={"Authorization": f"Bearer {KEY}"})) == 1.0
    host = server.url.removeprefix("http://")  # --rm-url http://botgrpo:KEY@host/...: userinfo sent as Basic auth
    assert slime_reward(post(f"http://botgrpo:{KEY}@{host}", "math", body, headers={})) == 1.0


def test_a_response_over_the_limit_as_sent_is_a_413_even_if_it_is_all_end_markers(server):
    """Issue 34, finding 2: the limit was checked on the response after its end markers were cut."""
    r = post(server.url, "math", slime_body(PROMPT, RIGHT + "</s>" * 1001, "42"))  # 4,004 characters of markers
    assert r.status_code == 413 and "max_completion_chars" in r.text and "response has" in r.text, r.text


def test_a_math_label_object_without_an_answer_is_a_422(server):
    """Issue 34, finding 11: scored as a failure, which slime would train on."""
    for label in ({}, {"answer": " "}, {"solution": "42"}):
        r = post(server.url, "math", slime_body(PROMPT, RIGHT, label))
        assert r.status_code == 422 and "label: task 'math' needs the reference answer" in r.text, r.text


SHELL = "```tsx\nexport default function Shell() {\n  return <main><section></section></main>;\n}\n```"


def test_a_list_option_takes_one_value_repeated_values_or_comma_separated_ones(server):
    """Issue 34, finding 12: ``?wrapper_tags=main`` and ``?wrapper_tags=main%2Csection`` were 422s
    (a single value was a string where the option takes a list). Here they must also mean what
    they say: with only ``main`` a wrapper, the ``<section>`` inside it is content."""
    from botgrpo.sandbox import isolation as iso
    require_host(not iso.render_refusal(iso.detect().layers), "bubblewrap with user namespaces (the render layers)")

    def reward(query: str) -> dict:
        r = post(server.url, "react", slime_body("p", SHELL, None), "?level=render&format=dict" + query)
        assert r.status_code == 200, r.text
        return r.json()

    default = reward("")  # main and section are both default wrappers: nothing visible
    only_main = reward("&wrapper_tags=main")
    assert default["passed"] is False and only_main["passed"] is True, (default, only_main)
    for query in ("&wrapper_tags=main%2Csection", "&wrapper_tags=main&wrapper_tags=section",
                  "&wrapper_tags=main,section"):
        assert reward(query)["passed"] is False, query


MARKER_ENV = {"BOTGRPO_MAX_COMPLETION_CHARS": "2000000", "BOTGRPO_MAX_REQUEST_BYTES": "8000000"}


def measure_markers(srv) -> dict[str, dict[str, float]]:
    """Per route: the server process's CPU seconds and the slowest /healthz (polled every 20 ms)
    while it answers a 1.5 MB response made of ``</s>`` (limits raised to let it in)."""
    from tests.test_hostile_server import HealthProbe, process_cpu_s
    markers = "</s>" * 375_000
    numbers = {}
    for route, body in [("slime/math", slime_body(PROMPT, markers, "42")),
                        ("openrlhf/math/get_reward", json.dumps({"query": [PROMPT + markers], "prompts": [PROMPT],
                                                                 "labels": ["42"]}).encode())]:
        before = process_cpu_s(srv.proc.pid)
        with HealthProbe(srv.url) as probe:
            r = httpx.post(f"{srv.url}/compat/{route}", content=body, headers={"Content-Type": "application/json"},
                           timeout=600)
        assert r.status_code == 200, r.text[:300]  # an empty response, scored
        numbers[route] = {"cpu_s": process_cpu_s(srv.proc.pid) - before, "healthz_worst_s": probe.worst}
    return numbers


def test_end_markers_are_cut_in_linear_time_off_the_event_loop(tmp_path):
    """Issue 34, finding 2: cutting one marker at a time copied the text each time, so a 1.5 MB
    response of ``</s>`` cost 7.9 s of CPU on the slime route's event loop (/healthz stalled with
    it) and 9.2 s on the OpenRLHF route. Measured as the server process's CPU time (threads
    included, the scorer pools excluded: the cut happens in the server), which a busy machine
    does not inflate as it does wall time; /healthz gets a margin for a load of 4 on 2 cores."""
    require_host(node_available(), "the Node toolchain (sandbox/node/node_modules)")
    srv = LiveServer(tmp_path, env=MARKER_ENV)
    try:
        numbers = measure_markers(srv)
    finally:
        srv.stop()
    for route, measured in numbers.items():  # before: 6.5-9.2 s of CPU, /healthz 7.9-12 s
        assert measured["cpu_s"] < 2.5 and measured["healthz_worst_s"] < 2.0, (route, measured)


def test_backpressure_is_a_503_with_retry_after_and_the_retry_is_answered(tmp_path):
    require_host(node_available(), "the Node toolchain (sandbox/node/node_modules)")
    srv = LiveServer(tmp_path, env={"BOTGRPO_QUEUE_MAX_DEPTH": "3", "BOTGRPO_WARM_SCORERS": "false"})
    react = {"task": "react", "options": {"level": "typecheck"},
             "rollouts": [{"id": str(i), "completion": COUNTER} for i in range(3)]}
    body = slime_body(PROMPT, WRONG, "42")
    try:
        with ThreadPoolExecutor(1) as pool:  # the batch fills the queue while the Node pool starts
            first = pool.submit(httpx.post, srv.url + "/v1/rewards", json=react, timeout=120)
            time.sleep(0.3)
            busy = post(srv.url, "math", body, headers={})
            assert busy.status_code == 503 and int(busy.headers["retry-after"]) >= 1, busy.text
            assert first.result().status_code == 200
        retried = post(srv.url, "math", body, headers={})  # what slime's backoff does next
        assert slime_reward(retried) == -1.0
        assert post(srv.url, "math", body, headers={}).content == retried.content
    finally:
        srv.stop()


def test_with_redis_a_botgrpo_worker_scores_the_sample(tmp_path):
    """REDIS_URL set: the route queues to Redis Streams and a separate ``botgrpo worker`` scores."""
    from tests.live_server import worker
    from tests.redis_server import RedisServer
    require_host(node_available(), "the Node toolchain (sandbox/node/node_modules)")
    redis = RedisServer(tmp_path / "redis")
    redis.data_dir.mkdir()
    redis.start()
    env = {"REDIS_URL": redis.url}
    scorer = worker(["--consumer", "w0"], env, tmp_path / "worker.log")
    srv = LiveServer(tmp_path, env=env)
    try:
        assert slime_reward(post(srv.url, "math", slime_body(PROMPT, RIGHT, "42"), headers={})) == 1.0
        assert slime_reward(post(srv.url, "react", slime_body("p", COUNTER, "Counter"), headers={})) == 1.0
    finally:
        srv.stop()
        scorer.stop()
        redis.stop()


if __name__ == "__main__":
    # python -m tests.test_compat_slime [TREE]: the numbers of test_end_markers_... (docs/security.md)
    import sys
    import tempfile
    from pathlib import Path

    from botgrpo.processes import Server
    tree = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None
    with tempfile.TemporaryDirectory() as tmp:
        srv = Server(Path(tmp), env=MARKER_ENV, tree=tree)
        try:
            print(json.dumps({"tree": str(tree or Path.cwd()), **measure_markers(srv)}))
        finally:
            srv.stop()
