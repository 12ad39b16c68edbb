"""The reward server over real HTTP (uvicorn in a subprocess, in-process queue): contract,
auth, limits, backpressure, OpenAPI; plus the clients against it."""
import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.node_toolchain import require_node_toolchain
from botgrpo.services.client import AsyncRewardClient, RewardClient, RewardServerError
from tests.live_server import LiveServer

KEY = "test-key-123"
AUTH = {"Authorization": f"Bearer {KEY}"}
GOOD = "```tsx\nexport default function A() {\n  return <p>hi</p>;\n}\n```"
BAD = "```tsx\nexport default function A() {\n  return <p className=\"x\"hi</p>;\n}\n```"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_node_toolchain()
    tmp = tmp_path_factory.mktemp("server")
    srv = LiveServer(tmp, env={"BOTGRPO_API_KEY": KEY, "BOTGRPO_MAX_ROLLOUTS": "64", "BOTGRPO_MAX_COMPLETION_CHARS": "5000",
                               "BOTGRPO_MAX_REQUEST_BYTES": "200000", "BOTGRPO_MAX_TOKENS": "2000"})
    yield srv
    srv.stop()


def post(server, path, body, headers=AUTH, **kw):
    return httpx.post(server.url + path, json=body, headers=headers, timeout=60, **kw)


def math_rollouts(n):
    return [{"id": f"m{i}", "group": "g", "completion": f"{i} + 1 = {i + 1}, so \\boxed{{{i + 1}}}",
             "reference": {"answer": str(i + 1 if i % 2 else i)}} for i in range(n)]


def test_rewards_in_request_order_with_one_score_per_token(server):
    rollouts = [{"id": "good", "completion": GOOD, "token_offsets": [[0, 6], [6, 20], [20, len(GOOD)], [len(GOOD), len(GOOD)]]},
                {"id": "bad", "completion": BAD}]
    r = post(server, "/v1/rewards", {"task": "react", "options": {"level": "build"}, "rollouts": rollouts})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [x["id"] for x in results] == ["good", "bad"] and [x["index"] for x in results] == [0, 1]
    good, bad = results
    assert good["passed"] is True and good["token_offsets"] is None  # the caller's own: not sent back unasked
    assert good["token_scores"] == [1.0, 1.0, 1.0, 1.0]
    assert bad["passed"] is False and len(bad["token_scores"]) == len(bad["token_offsets"]) > 0
    assert all(-1 <= s <= 1 for s in bad["token_scores"]) and min(bad["token_scores"]) == -1.0
    assert bad["details"]["errors"][0]["line"] == 3  # the server's own split: sent back
    echoed = post(server, "/v1/rewards", {"task": "react", "options": {"level": "build"}, "rollouts": rollouts[:1],
                                          "return_offsets": True}).json()["results"][0]
    assert echoed["token_offsets"] == rollouts[0]["token_offsets"] and echoed["token_scores"] == good["token_scores"]


def test_stream_delivers_every_id_once_as_ndjson(server):
    rollouts = math_rollouts(40)
    with httpx.stream("POST", server.url + "/v1/rewards:stream", json={"task": "math", "rollouts": rollouts},
                      headers=AUTH, timeout=60) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in r.iter_lines() if line]
    assert sorted(x["id"] for x in lines) == sorted(x["id"] for x in rollouts)
    assert {x["id"]: x["passed"] for x in lines} == {f"m{i}": bool(i % 2) for i in range(40)}


def test_scorers_health_ready_metrics(server):
    scorers = httpx.get(server.url + "/v1/scorers", headers=AUTH).json()["scorers"]
    assert {s["task"] for s in scorers} == {"react", "math"}
    react = next(s for s in scorers if s["task"] == "react")
    assert "level" in react["options"]["properties"] and react["bounds"] == [-1.0, 1.0]
    assert httpx.get(server.url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(server.url + "/readyz").json()
    assert ready["ready"] is True and ready["checks"]["react"] and ready["checks"]["queue"]
    metrics = httpx.get(server.url + "/metrics").text
    assert 'botgrpo_requests_total{route="/v1/rewards",status="200"}' in metrics and "botgrpo_queue_depth" in metrics


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {KEY}"}])
def test_auth_required(server, headers):
    r = post(server, "/v1/rewards", {"task": "math", "rollouts": math_rollouts(1)}, headers=headers)
    assert r.status_code == 401 and "API key" in r.json()["detail"] and r.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("body,status,needle", [
    ({"task": "chess", "rollouts": [{"id": "a", "completion": "x"}]}, 422, "valid tasks: ['math', 'react']"),
    ({"task": "react", "options": {"level": "run"}, "rollouts": [{"id": "a", "completion": "x"}]}, 422, "valid options"),
    ({"task": "react", "options": {"colour": 1}, "rollouts": [{"id": "a", "completion": "x"}]}, 422, "colour"),
    ({"task": "math", "rollouts": [{"id": "a", "completion": "x"}] * 2}, 422, "not unique"),
    ({"task": "math", "rollouts": [{"id": "a", "completion": "abc", "token_offsets": [[0, 4]]}]}, 422, "does not fit"),
    ({"task": "math", "rollouts": [{"id": "a", "completion": "abc", "token_offsets": [[2, 1]]}]}, 422, "does not fit"),
    ({"task": "math", "rollouts": [{"id": str(i), "completion": "x"} for i in range(65)]}, 413, "max_rollouts=64"),
    ({"task": "math", "rollouts": [{"id": "a", "completion": "x" * 5001}]}, 413, "max_completion_chars is 5000"),
    ({"task": "math", "rollouts": [{"id": "a", "completion": "x" * 3000, "token_offsets": [[0, 1]] * 2001}]}, 413,
     "max_tokens is 2000"),
    ({"task": "math", "rollouts": []}, 422, "at least 1"),
    ({"task": "math"}, 422, "rollouts"),
    ({"task": "math", "rollouts": [{"id": "a"}]}, 422, "completion"),
    ({"task": "math", "rollouts": [{"id": "a", "completion": 5}]}, 422, "string"),
])
def test_bad_input_gets_a_clear_4xx(server, body, status, needle):
    for path in ("/v1/rewards", "/v1/rewards:stream"):
        r = post(server, path, body)
        assert r.status_code == status, r.text
        assert needle in json.dumps(r.json()["detail"])


def test_body_size_limit_names_the_limit(server):
    r = httpx.post(server.url + "/v1/rewards", content=b"{" + b" " * 300_000 + b"}", headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 413 and "max_request_bytes=200000" in r.json()["detail"]
    r = httpx.post(server.url + "/v1/rewards", content=b"not json", headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 422


def test_openapi_documents_every_field(server):
    spec = httpx.get(server.url + "/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for model in ("RolloutIn", "RewardRequest", "Result"):
        for name, field in schemas[model]["properties"].items():
            assert field.get("description"), f"{model}.{name} has no description"
    assert "/v1/rewards:stream" in spec["paths"]
    assert httpx.get(server.url + "/docs").status_code == 200


def test_sync_client_scores_and_names_server_errors(server):
    with RewardClient(server.url, api_key=KEY) as client:
        results = client.score("math", math_rollouts(6))
        assert [r.id for r in results] == [f"m{i}" for i in range(6)]
        assert [r.passed for r in results] == [bool(i % 2) for i in range(6)] and all(r.ok for r in results)
        assert {r.id for r in client.stream("math", math_rollouts(6))} == {f"m{i}" for i in range(6)}
        with pytest.raises(RewardServerError, match="422.*unknown task 'chess'") as err:
            client.score("chess", math_rollouts(1))
        assert err.value.status == 422
    with RewardClient(server.url, api_key="wrong", retries=3) as client:
        with pytest.raises(RewardServerError) as err:
            client.score("math", math_rollouts(1))
        assert err.value.status == 401  # 4xx: no retry


def test_async_client_streams(server):
    async def go():
        async with AsyncRewardClient(server.url, api_key=KEY) as client:
            seen = [r.id async for r in client.stream("math", math_rollouts(20))]
            info = await client.scorers()
        return seen, info
    seen, info = asyncio.run(go())
    assert sorted(seen) == sorted(f"m{i}" for i in range(20)) and len(seen) == 20
    assert {s["task"] for s in info["scorers"]} == {"react", "math"}


def wait_for_depth(url: str, depth: int, timeout_s: float = 30.0) -> None:
    """Until the server's queue-depth gauge reads ``depth``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        metrics = httpx.get(url + "/metrics", timeout=10).text
        if f"botgrpo_queue_depth {float(depth)}" in metrics:
            return
        time.sleep(0.02)
    raise AssertionError(f"the queue never reached depth {depth}")


def test_backpressure_answers_503_with_retry_after(tmp_path):
    require_node_toolchain()
    srv = LiveServer(tmp_path, env={"BOTGRPO_QUEUE_MAX_DEPTH": "3", "BOTGRPO_WARM_SCORERS": "false"})
    react = {"task": "react", "options": {"level": "typecheck"},
             "rollouts": [{"id": str(i), "completion": GOOD} for i in range(3)]}
    try:
        too_big = httpx.post(srv.url + "/v1/rewards", json={"task": "math", "rollouts": math_rollouts(4)}, timeout=30)
        assert too_big.status_code == 413 and "queue_max_depth=3" in too_big.json()["detail"]
        with ThreadPoolExecutor(1) as pool:  # the first batch fills the queue while the Node pool starts
            first = pool.submit(httpx.post, srv.url + "/v1/rewards", json=react, timeout=60)
            wait_for_depth(srv.url, 3)  # not a fixed sleep: on a loaded machine the first request takes longer to land
            r = httpx.post(srv.url + "/v1/rewards", json={"task": "math", "rollouts": math_rollouts(1)}, timeout=30)
            assert r.status_code == 503 and int(r.headers["retry-after"]) >= 1 and "max_depth=3" in r.json()["detail"]
            assert first.result().status_code == 200
        with RewardClient(srv.url, backoff_s=0.05) as client:  # the client's retries ride out a 503
            assert len(client.score("math", math_rollouts(3))) == 3
    finally:
        srv.stop()


def test_finish_reason_length_makes_cut_off_code_truncated_output(server):
    cut = "export default function A() {\n  return <div><p>x</p><p"
    rollouts = [{"id": "stop", "completion": cut, "finish_reason": "stop"},
                {"id": "length", "completion": cut, "finish_reason": "length"}]
    r = post(server, "/v1/rewards", {"task": "react", "options": {"level": "syntax"}, "rollouts": rollouts})
    assert r.status_code == 200, r.text
    stop, length = r.json()["results"]
    assert stop["details"]["reason"] == "compile error" and max(stop["token_scores"]) > -1.0
    assert length["details"]["reason"] == "unterminated code block (truncated output)"
    assert set(length["token_scores"]) == {-1.0}
    bad = post(server, "/v1/rewards", {"task": "react", "rollouts": [{"id": "x", "completion": cut, "finish_reason": "eos"}]})
    assert bad.status_code == 422 and "finish_reason" in bad.text


def test_finish_reason_length_refuses_a_math_answer_read_from_where_the_cut_fell(server):
    """Over HTTP: a step chain cut off inside its last line passed under the default extraction
    (math-verify evaluated ``13 + 5``); with ``finish_reason: length`` it fails."""
    cut = "a: x = 12 + 4 = 16\nb: x = 16 - 3 = 13\nc: x = 13 + 5"
    rollouts = [{"id": reason, "completion": cut, "finish_reason": reason, "reference": {"answer": "18"}}
                for reason in ("stop", "length")]
    r = post(server, "/v1/rewards", {"task": "math", "rollouts": rollouts})
    assert r.status_code == 200, r.text
    stop, length = r.json()["results"]
    assert stop["passed"] and stop["score"] == 1.0
    assert not length["passed"] and length["score"] == -1.0 and "cut off" in length["details"]["reason"]
