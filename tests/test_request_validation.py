"""Bad specs, references, options and offsets are 422s naming the field, on both endpoints and
through Redis, never silently ignored and never 500s (issue 20, findings 4, 9 and 10; real
``botgrpo serve`` processes).

Before: ``component: 5``, unknown spec keys or a list for the spec scored a compiling rollout
1.0 with only ``details.spec_error``; ``{"scheme": ["window"]}`` was a 500 (``unhashable type``);
``token_offsets`` of ``[["0", "1"]]`` and ``[[true, true]]`` were taken as integers.
"""
from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from botgrpo.reward_server.scorers import OPTIONAL_SCORERS, SCORERS, scorer_class
from botgrpo.reward_server.service import RequestRejected, ScoringService
from tests.node_toolchain import require_node_toolchain
from tests.live_server import LiveServer
from tests.redis_server import RedisServer

GOOD_REACT = "```tsx\nexport default function TodoList() {\n  return <ul><li>hi</li></ul>;\n}\n```"
PATHS = ("/v1/rewards", "/v1/rewards:stream")
# values of the wrong shape for (nearly) any option: containers, null, a bool, out-of-range numbers, odd strings
ODD_VALUES = [["window"], {"window": 1}, [[]], {}, None, True, -1, 1e300, "", "x" * 5000, "\ud800"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_node_toolchain()
    srv = LiveServer(tmp_path_factory.mktemp("validation"))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def redis_backed(tmp_path_factory):
    """A server on a private Redis with no workers: anything enqueued would stay in the stream."""
    require_node_toolchain()
    redis = RedisServer(tmp_path_factory.mktemp("redis"))
    redis.start()
    srv = LiveServer(tmp_path_factory.mktemp("validation-redis"), env={"BOTGRPO_REDIS_URL": redis.url})
    yield srv, redis
    srv.stop()
    redis.stop()


def post(server, body: dict, path: str) -> httpx.Response:
    return httpx.post(server.url + path, content=json.dumps(body), headers={"content-type": "application/json"},
                      timeout=60)


def react_body(spec, level: str = "syntax") -> dict:
    rollouts = [{"id": f"r{i}", "completion": GOOD_REACT} for i in range(3)]
    rollouts.append({"id": "bad", "completion": GOOD_REACT, "reference": {"spec": spec}})
    return {"task": "react", "options": {"level": level}, "rollouts": rollouts}


BAD_SPECS = [({"component": 5}, "rollouts[3].reference.spec.component"),
             ({"component": "TodoList", "colour": "red"}, "rollouts[3].reference.spec.colour"),
             (["ul", "button"], "rollouts[3].reference.spec"),
             ({"elements": "ul"}, "rollouts[3].reference.spec.elements"),
             ({"props": {"button": "onClick"}}, "rollouts[3].reference.spec.props.button")]


@pytest.mark.parametrize("spec,field", BAD_SPECS)
def test_a_malformed_spec_is_a_422_naming_the_field(server, spec, field):
    for path in PATHS:
        r = post(server, react_body(spec), path)
        assert r.status_code == 422, (path, r.status_code, r.text[:300])
        assert field in r.json()["detail"], r.json()


def test_a_malformed_spec_is_refused_before_it_reaches_redis(redis_backed):
    srv, redis = redis_backed
    for spec, field in BAD_SPECS:
        for path in PATHS:
            r = post(srv, react_body(spec), path)
            assert r.status_code == 422 and field in r.json()["detail"], (path, r.status_code, r.text[:300])
    client = redis.client()
    assert client.xlen("botgrpo:rollouts") == 0  # nothing was enqueued
    client.close()


def test_a_wellformed_spec_is_still_judged(server):
    ok = react_body({"component": "TodoList", "elements": ["ul"]})
    r = post(server, ok, "/v1/rewards")
    assert r.status_code == 200, r.text[:300]
    assert r.json()["results"][3]["details"]["spec_passed"] is True
    wrong = react_body({"component": "Other"})
    assert post(server, wrong, "/v1/rewards").json()["results"][3]["details"]["spec_passed"] is False


@pytest.mark.parametrize("reference,field", [({"answer": ["12"]}, "rollouts[0].reference.answer"),
                                             ({"answer": True}, "rollouts[0].reference.answer"),
                                             ({"answer": {"value": 12}}, "rollouts[0].reference.answer")])
def test_a_malformed_math_answer_is_a_422(server, reference, field):
    body = {"task": "math", "rollouts": [{"id": "a", "completion": "\\boxed{12}", "reference": reference}]}
    for path in PATHS:
        r = post(server, body, path)
        assert r.status_code == 422 and field in r.json()["detail"], (path, r.status_code, r.text[:300])


def test_reference_keys_a_scorer_does_not_read_are_allowed(server):
    body = {"task": "math", "rollouts": [{"id": "a", "completion": "\\boxed{12}",
                                          "reference": {"answer": 12, "source": {"dataset": "aime"}}}]}
    r = post(server, body, "/v1/rewards")
    assert r.status_code == 200 and r.json()["results"][0]["passed"] is True, r.text[:300]


@pytest.mark.parametrize("offsets", [[["0", "1"]], [[True, True]], [[0, 1.0]], [[0, "1"]]])
def test_token_offsets_are_strict_integers(server, offsets):
    body = {"task": "math", "rollouts": [{"id": "a", "completion": "\\boxed{12}", "token_offsets": offsets,
                                          "reference": {"answer": "12"}}]}
    for path in PATHS:
        r = post(server, body, path)
        assert r.status_code == 422, (path, offsets, r.status_code, r.text[:300])
        assert any(e["loc"][:3] == ["body", "rollouts", 0] and "token_offsets" in e["loc"] for e in r.json()["detail"])


@pytest.mark.parametrize("scheme", [["window"], {"window": 1}, [], 5])
def test_a_scheme_that_is_not_a_name_is_a_422_not_a_500(server, scheme):
    body = {"task": "react", "options": {"scheme": scheme}, "rollouts": [{"id": "a", "completion": GOOD_REACT}]}
    for path in PATHS:
        r = post(server, body, path)
        assert r.status_code == 422 and "scheme" in r.json()["detail"], (path, r.status_code, r.text[:300])


def served_rollout(task: str) -> dict:
    if task == "math":
        return {"id": "a", "completion": "\\boxed{12}", "reference": {"answer": "12"}}
    return {"id": "a", "completion": GOOD_REACT}


def test_odd_types_in_every_option_of_every_served_scorer_are_never_a_5xx(server):
    tasks = httpx.get(server.url + "/v1/scorers", timeout=10).json()["scorers"]
    assert {t["task"] for t in tasks} >= {"react", "math"}
    seen = 0
    for info in tasks:
        for field in info["options"]["properties"]:
            for value in ODD_VALUES:
                body = {"task": info["task"], "options": {field: value}, "rollouts": [served_rollout(info["task"])]}
                for path in PATHS:
                    r = httpx.post(server.url + path, content=json.dumps(body),
                                   headers={"content-type": "application/json"}, timeout=60)
                    assert r.status_code < 500, (info["task"], field, value, path, r.status_code, r.text[:300])
                    if r.status_code == 422:
                        assert field in json.dumps(r.json()["detail"]), (field, r.text[:300])
                    seen += 1
    assert seen > 200


@pytest.mark.parametrize("task", sorted({**SCORERS, **OPTIONAL_SCORERS}))
def test_odd_types_in_every_option_of_every_registered_scorer_are_422s(task, tmp_path: Path):
    """Every scorer in the registry, served here or not (model, judge): option validation
    answers RequestRejected(422) or accepts, and raises nothing else."""
    for field in scorer_class(task).Options.model_fields:
        for value in ODD_VALUES:
            try:
                ScoringService._options(task, {field: value})
            except RequestRejected as exc:
                assert exc.status == 422 and field in exc.detail, (task, field, value, exc.detail)


def test_a_spec_from_a_columnar_dataset_keeps_its_meaning():
    """Arrow/Parquet rows (HF datasets, verl) carry every other row's keys as nulls: a null field or
    props entry is absent, not a malformed spec; a wrong type still is."""
    from pydantic import ValidationError

    from botgrpo.reward_server.react.spec import Spec

    row = {"component": "Card", "elements": ["ul"], "text": None, "props": {"button": ["onClick"], "a": None},
           "render_props": None}
    assert Spec.model_validate(row) == Spec(component="Card", elements=["ul"], props={"button": ["onClick"]})
    with pytest.raises(ValidationError):
        Spec.model_validate({"component": 5})
    with pytest.raises(ValidationError):
        Spec.model_validate({"props": {"button": "onClick"}})
