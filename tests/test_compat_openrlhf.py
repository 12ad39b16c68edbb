"""OpenRLHF's remote reward protocol (``/compat/openrlhf/{task}/get_reward``) against a live
server: uvicorn in a subprocess, the real math scorer and the real Node pool for React.

The peer's behaviour, read in its source (OpenRLHF 0.11.2, the release on PyPI); facts only, no
code copied:

* openrlhf/utils/agent.py, ``SingleTurnAgentExecutor.execute``: each sample is scored on its
  own, ``_fetch_rewards_via_http([query], [prompt], [label])``, where ``query`` is the decoded
  prompt tokens followed by the response tokens (``skip_special_tokens=False``).
* same file, ``_fetch_rewards_via_http``: the body is the dict ``{"query": ..., "prompts": ...,
  "labels": ...}`` (that key order) of the one sample, posted to the next URL of
  ``--reward.remote_url`` (split at commas, an ``itertools.cycle``) with aiohttp's
  ``session.post(url, json=data)``; 180 s timeout, 5 tries 1 s apart, each answer through
  ``raise_for_status()`` and ``response.json()``. After five failures the sample's reward is
  None. aiohttp's ``json=`` body is ``json.dumps(data).encode("utf-8")`` with Content-Type
  application/json (aiohttp ``payload.JsonPayload``), and ``response.json()`` refuses a
  Content-Type other than application/json. aiohttp sends a URL's ``user:password@`` as HTTP
  Basic auth, the only credential the client can send. (Commit 3c3be62, August 2026, sharded
  the lists across the URLs instead, the extra ones getting three empty lists.)
* same file, ``execute``: ``reward = answer.get("rewards")``, ``scores = answer.get("scores")``
  (else the rewards), ``extra_logs = answer.get("extra_logs") or {}``.
* openrlhf/trainer/ppo_utils/samples_generator.py, ``_process_response_into_experience``:
  ``torch.tensor([reward])``, ``torch.tensor([scores])``, and for each extra_logs key
  ``torch.tensor([value])``; dynamic filtering reads ``e.scores[0].item()`` and keeps a group
  whose mean lies strictly inside ``--algo.dynamic_filtering_range`` (default (0, 1)).
  openrlhf/trainer/ppo_utils/experience.py merges ``info`` key by key across samples, so every
  answer must carry the same extra_logs keys.
* openrlhf/cli/serve_rm.py, ``/get_reward``: OpenRLHF's own server answers
  ``{"rewards": [...], "scores": [...], "extra_logs": {...}}``.
"""
import base64
import json
from urllib.parse import quote

import httpx
import pytest
import torch

from tests.node_toolchain import require_node_toolchain
from tests.helpers import require_host
from tests.live_server import LiveServer

OPENRLHF_RELEASE = "0.11.2"
KEY = "compat-key-1"
BASIC = {"Authorization": "Basic " + base64.b64encode(f"botgrpo:{KEY}".encode("latin1")).decode()}
PROMPT = "<|im_start|>user\nWhat is 6 * 7? Put the answer in \\boxed{}.<|im_end|>\n<|im_start|>assistant\n"
RIGHT = "6 * 7 = 42, so the answer is \\boxed{42}.<|im_end|>"
WRONG = "6 * 7 = 48, so the answer is \\boxed{48}.<|im_end|>"
COUNTER = "```tsx\nexport default function Counter() {\n  return <button>+1</button>;\n}\n```"
BROKEN = "```tsx\nexport default function Counter() {\n  return <button className=\"x\"+1</button>;\n}\n```"
REACT_PROMPT = "Write a React component Counter with a button.\n"


def node_available() -> bool:
    try:
        require_node_toolchain()
    except RuntimeError:
        return False
    return True


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_host(node_available(), "the Node toolchain (sandbox/node/node_modules)")
    srv = LiveServer(tmp_path_factory.mktemp("openrlhf"), env={
        "BOTGRPO_API_KEY": KEY, "BOTGRPO_MAX_COMPLETION_CHARS": "4000", "BOTGRPO_MAX_REQUEST_BYTES": "100000"})
    yield srv
    srv.stop()


def openrlhf_body(queries, prompts, labels) -> bytes:
    """The bytes OpenRLHF posts: its dict, in its key order, as aiohttp's ``json=`` encodes it."""
    return json.dumps({"query": queries, "prompts": prompts, "labels": labels}).encode("utf-8")


def post(server, task, body: bytes, query="", headers=BASIC) -> httpx.Response:
    return httpx.post(f"{server.url}/compat/openrlhf/{task}/get_reward{query}", content=body,
                      headers={"Content-Type": "application/json", **headers}, timeout=120)


def openrlhf_reads(response: httpx.Response, n: int) -> dict:
    """The answer, checked as OpenRLHF's client and trainer consume it (module docstring)."""
    assert response.status_code == 200, response.text  # raise_for_status()
    assert response.headers["content-type"].split(";")[0] == "application/json"  # aiohttp's response.json()
    answer = response.json()
    rewards = answer.get("rewards")
    scores = answer.get("scores") if answer.get("scores") is not None else rewards
    extra_logs = answer.get("extra_logs") or {}
    assert isinstance(rewards, list) and len(rewards) == n and all(type(r) is float for r in rewards)
    assert isinstance(scores, list) and len(scores) == n and all(0.0 <= s <= 1.0 for s in scores)
    assert torch.tensor([rewards]).shape == (1, n) and torch.tensor([scores]).shape == (1, n)
    if n == 1:
        assert isinstance(torch.tensor([scores])[0].item(), float)  # dynamic filtering's e.scores[0].item()
    for key, value in extra_logs.items():  # one per-sample logging tensor per key
        assert torch.tensor([value]).shape == (1, n), key
    return answer


def test_math_one_sample_per_request_as_openrlhf_sends_it(server):
    right = openrlhf_reads(post(server, "math", openrlhf_body([PROMPT + RIGHT], [PROMPT], ["42"])), 1)
    wrong = openrlhf_reads(post(server, "math", openrlhf_body([PROMPT + WRONG], [PROMPT], ["42"])), 1)
    assert right["rewards"] == [1.0] and right["scores"] == [1.0]
    assert wrong["rewards"] == [-1.0] and wrong["scores"] == [0.0]
    assert right["extra_logs"]["botgrpo_passed"] == [1.0] and wrong["extra_logs"]["botgrpo_passed"] == [0.0]
    assert right["extra_logs"].keys() == wrong["extra_logs"].keys()  # OpenRLHF merges them key by key
    assert wrong["extra_logs"]["botgrpo_token_score_min"][0] <= wrong["rewards"][0] + 1e-9
    numeric = openrlhf_reads(post(server, "math", openrlhf_body([PROMPT + RIGHT], [PROMPT], [42])), 1)
    assert numeric["rewards"] == [1.0]  # a label that is a JSON number is the answer too


def test_a_batch_keeps_query_order(server):
    queries = [PROMPT + (RIGHT if i % 2 else WRONG) for i in range(6)]
    answer = openrlhf_reads(post(server, "math", openrlhf_body(queries, [PROMPT] * 6, ["42"] * 6)), 6)
    assert answer["rewards"] == [-1.0, 1.0] * 3
    assert answer["extra_logs"]["botgrpo_unscored"] == [0.0] * 6


def test_the_empty_shard_of_a_second_url_is_answered(server):
    # 0.11.2 never sends one; at commit 3c3be62 one sample over two URLs sliced [1:1] for the
    # second, posting three empty lists, and a non-2xx there failed the whole gather
    answer = openrlhf_reads(post(server, "math", openrlhf_body([], [], [])), 0)
    assert answer["rewards"] == [] and answer["scores"] == []
    assert post(server, "nope", openrlhf_body([], [], [])).status_code == 422  # still checked


def test_a_retried_request_gets_the_same_answer(server):
    body = openrlhf_body([PROMPT + WRONG, PROMPT + RIGHT], [PROMPT] * 2, ["42"] * 2)
    first, second = post(server, "math", body), post(server, "math", body)
    assert first.status_code == 200 and first.content == second.content


def test_options_come_from_the_query_string(server):
    body = openrlhf_body([PROMPT + "The answer is \\boxed{48}."], [PROMPT], ["42"])
    default = openrlhf_reads(post(server, "math", body), 1)
    outcome_only = openrlhf_reads(post(server, "math", body, "?local_weight=0"), 1)
    assert outcome_only["extra_logs"]["botgrpo_token_score_mean"] == [-1.0]  # w_s = 0: every token is R
    assert default["extra_logs"]["botgrpo_token_score_mean"][0] > -0.7  # w_s = 0.5 (measured: -0.6)
    assert default["rewards"] == outcome_only["rewards"] == [-1.0]  # the reward is the outcome either way
    as_json = post(server, "math", body, "?options=" + quote('{"local_weight": 0}'))
    assert openrlhf_reads(as_json, 1)["extra_logs"] == outcome_only["extra_logs"]
    bad = post(server, "math", body, "?no_such_option=1")
    assert bad.status_code == 422 and "no_such_option" in bad.json()["detail"]


def test_react_build_with_spec_labels(server):
    spec = json.dumps({"component": "Counter", "elements": ["button"]})
    queries = [REACT_PROMPT + COUNTER, REACT_PROMPT + COUNTER, REACT_PROMPT + BROKEN, REACT_PROMPT + COUNTER]
    labels = [spec, "Counter", spec, "TodoList"]
    answer = openrlhf_reads(post(server, "react", openrlhf_body(queries, [REACT_PROMPT] * 4, labels), "?level=build"), 4)
    assert answer["rewards"][:3] == [1.0, 1.0, -1.0]  # spec as JSON, as a component name; a compile error
    assert answer["rewards"][3] == 0.0 and answer["scores"][3] == 0.5  # compiles (+1), wrong name (-1), weight 0.5
    assert answer["extra_logs"]["botgrpo_passed"] == [1.0, 1.0, 0.0, 1.0]  # passed: the compile verdict
    no_label = openrlhf_reads(post(server, "react", openrlhf_body([REACT_PROMPT + COUNTER], [REACT_PROMPT], [""])), 1)
    assert no_label["rewards"] == [1.0]  # no spec: the compile verdict alone


def test_the_end_of_sequence_text_openrlhf_decodes_is_cut_off(server):
    # OpenRLHF decodes with skip_special_tokens=False: an unfenced component ends with <|im_end|>
    unfenced = "export default function Counter() {\n  return <button>+1</button>;\n}\n<|im_end|><|endoftext|>"
    body = openrlhf_body([REACT_PROMPT + unfenced], [REACT_PROMPT], ["Counter"])
    assert openrlhf_reads(post(server, "react", body), 1)["rewards"] == [1.0]
    assert openrlhf_reads(post(server, "react", body, "?eos="), 1)["rewards"] == [-1.0]  # cut nothing: no parse
    own = openrlhf_body([REACT_PROMPT + unfenced.replace("<|im_end|><|endoftext|>", "[END]")], [REACT_PROMPT], ["Counter"])
    assert openrlhf_reads(post(server, "react", own, "?eos=[END]"), 1)["rewards"] == [1.0]


@pytest.mark.parametrize("body, needle", [
    (openrlhf_body(["Hello there" + RIGHT], [PROMPT], ["42"]), "query[0] does not start with prompts[0]"),
    (openrlhf_body([PROMPT + RIGHT], [PROMPT, PROMPT], ["42"]), "prompts has 2 entries for 1 queries"),
    (openrlhf_body([PROMPT + RIGHT], [PROMPT], []), "labels has 0 entries"),
    (openrlhf_body([PROMPT + RIGHT], [PROMPT], [""]), "labels[0]: task 'math' needs the reference answer"),
    (openrlhf_body([PROMPT + RIGHT], [PROMPT], [""]), "OpenRLHF's --data.label_key"),  # what to set, in the refusal
    (openrlhf_body([PROMPT + RIGHT], [PROMPT], [None]), "labels[0]"),
    (json.dumps({"query": [PROMPT + RIGHT], "labels": ["42"]}).encode(), "prompts"),
    (json.dumps({"query": [PROMPT], "prompts": [PROMPT], "labels": ["1"], "extra": 1}).encode(), "extra"),
    (b'{"query": [', "JSON decode error"),
])
def test_bad_requests_are_422_naming_the_field(server, body, needle):
    r = post(server, "math", body)
    assert r.status_code == 422 and needle in r.text, r.text


@pytest.mark.parametrize("label", [{}, {"answer": ""}, {"answer": None}, {"solution": "42"}])
def test_a_math_label_object_without_an_answer_is_a_422(server, label):
    """Issue 34, finding 11: it was scored as a failure (reward -1, unscored 1), which OpenRLHF
    trains on as a real one."""
    r = post(server, "math", openrlhf_body([PROMPT + RIGHT], [PROMPT], [label]))
    assert r.status_code == 422 and "labels[0]" in r.text and "answer" in r.text, r.text


def test_deep_json_in_options_or_labels_is_a_422(server):
    """Issue 34, finding 3: ``?options=`` nested past the parser's depth was a 500 (RecursionError);
    so was a react label holding such JSON, and a label nested deeply enough that showing it in
    the 422's message overflowed."""
    body = openrlhf_body([PROMPT + RIGHT], [PROMPT], ["42"])
    for nested in ("[" * 5000 + "]" * 5000, "[" * 5000):
        r = post(server, "math", body, "?options=" + quote(nested))
        assert r.status_code == 422 and "options" in r.text, r.text
    deep_object = quote('{"a":' * 40 + "1" + "}" * 40)  # JSON, within the parser's depth, past the server's
    r = post(server, "math", body, "?options=" + deep_object)
    assert r.status_code == 422 and "nested deeper than 32" in r.text, r.text
    in_a_string = openrlhf_body([REACT_PROMPT + COUNTER], [REACT_PROMPT], ['{"a": ' + "[" * 5000 + "]" * 5000 + "}"])
    nested = openrlhf_body([REACT_PROMPT + COUNTER], [REACT_PROMPT], ["@"]).replace(b'"@"', b"[" * 980 + b"]" * 980)
    for body in (in_a_string, nested):  # the second: within the parser's depth, too deep to show or serialise
        r = post(server, "react", body)
        assert r.status_code == 422 and "labels" in r.text, r.text[:300]


def test_a_response_over_the_limit_as_sent_is_a_413_even_if_it_is_all_end_markers(server):
    """Issue 34, finding 2: ``max_completion_chars`` was checked after the end markers were cut,
    so a response of 4,000 characters of ``</s>`` was let through (and cut in quadratic time)."""
    markers = "</s>" * 1001  # 4,004 characters, over max_completion_chars=4000; nothing once cut
    r = post(server, "math", openrlhf_body([PROMPT + RIGHT + markers], [PROMPT], ["42"]))
    assert r.status_code == 413 and "max_completion_chars" in r.text and "query[0]" in r.text, r.text


def test_bad_react_labels_are_422(server):
    for label, needle in [('{"component": 3}', "labels[0]: not a valid spec"), ("not a name", "labels[0]"),
                          ('{"elements": [', "labels[0]: starts with '{' but is not JSON")]:
        r = post(server, "react", openrlhf_body([REACT_PROMPT + COUNTER], [REACT_PROMPT], [label]))
        assert r.status_code == 422 and needle in r.text, r.text
    assert post(server, "nope", openrlhf_body(["a"], ["a"], ["1"])).status_code == 422


def test_limits_are_those_of_v1_rewards(server):
    long = PROMPT + "1 + 1 = 2. " * 400 + "\\boxed{2}"  # response over max_completion_chars=4000
    r = post(server, "math", openrlhf_body([long], [PROMPT], ["2"]))
    assert r.status_code == 413 and "max_completion_chars" in r.text and "query[0]'s response" in r.text
    huge = openrlhf_body([PROMPT + "x" * 120_000], [PROMPT], ["2"])  # over max_request_bytes=100000
    assert post(server, "math", huge).status_code == 413


def test_auth_takes_the_key_as_bearer_or_as_the_urls_password(server):
    body = openrlhf_body([PROMPT + RIGHT], [PROMPT], ["42"])
    assert post(server, "math", body, headers={}).status_code == 401
    wrong = {"Authorization": "Basic " + base64.b64encode(b"botgrpo:wrong").decode()}
    assert post(server, "math", body, headers=wrong).status_code == 401
    assert post(server, "math", body, headers={"Authorization": "Basic %%%"}).status_code == 401
    assert openrlhf_reads(post(server, "math", body, headers={"Authorization": f"Bearer {KEY}"}), 1)["rewards"] == [1.0]
    # what aiohttp sends for http://botgrpo:KEY@host/...: the userinfo as Basic auth
    host = server.url.removeprefix("http://")
    with httpx.Client() as client:  # httpx, like aiohttp, turns URL userinfo into Basic auth
        r = client.post(f"http://botgrpo:{KEY}@{host}/compat/openrlhf/math/get_reward", content=body,
                        headers={"Content-Type": "application/json"}, timeout=60)
    assert openrlhf_reads(r, 1)["rewards"] == [1.0]


def test_a_key_with_url_delimiters_goes_in_the_url_percent_encoded(tmp_path):
    """Issue 34, finding 14: ``@ : / ? # %`` end or split a URL's user info, so in
    ``http://botgrpo:KEY@host/...`` they must be percent-encoded; the client decodes them before
    it sends Basic auth (httpx here, aiohttp's yarl URLs in the peers)."""
    require_host(node_available(), "the Node toolchain (sandbox/node/node_modules)")
    key = "k@y:/?#%25x"
    srv = LiveServer(tmp_path, env={"BOTGRPO_API_KEY": key, "BOTGRPO_WARM_SCORERS": "false"})
    try:
        host = srv.url.removeprefix("http://")
        body = openrlhf_body([PROMPT + RIGHT], [PROMPT], ["42"])
        with httpx.Client() as client:
            encoded = client.post(f"http://botgrpo:{quote(key, safe='')}@{host}/compat/openrlhf/math/get_reward",
                                  content=body, headers={"Content-Type": "application/json"}, timeout=60)
            assert openrlhf_reads(encoded, 1)["rewards"] == [1.0]
            with pytest.raises(httpx.HTTPError):  # as typed: the URL's host is "k", not the server
                client.post(f"http://botgrpo:{key}@{host}/compat/openrlhf/math/get_reward", content=body, timeout=5)
    finally:
        srv.stop()


def test_the_routes_are_in_the_openapi_schema(server):
    paths = httpx.get(server.url + "/openapi.json", timeout=30).json()["paths"]
    assert "/compat/openrlhf/{task}/get_reward" in paths and "/compat/slime/{task}" in paths


def test_an_unscored_sample_gets_the_lower_bound_and_says_so(tmp_path):
    require_host(node_available(), "the Node toolchain (sandbox/node/node_modules)")
    # results are owed after 10 ms; a cold Node pool takes far longer to start: the sample times out
    srv = LiveServer(tmp_path, env={"BOTGRPO_RESULT_TIMEOUT_S": "0.01", "BOTGRPO_WARM_SCORERS": "false"})
    try:
        body = openrlhf_body([REACT_PROMPT + COUNTER], [REACT_PROMPT], ["Counter"])
        answer = openrlhf_reads(post(srv, "react", body, "?level=typecheck", headers={}), 1)
        assert answer["rewards"] == [-1.0] and answer["scores"] == [0.0]
        assert answer["extra_logs"]["botgrpo_unscored"] == [1.0] and answer["extra_logs"]["botgrpo_passed"] == [0.0]
    finally:
        srv.stop()
