"""Generated hostile completions against a live server with real Node workers and math pool.

What a policy stuck in a loop, or one that found a hack, writes: repetition loops, giant
literals, Unicode edge cases (lone surrogates, combining marks, bidi controls, NUL), deep
nesting, ambient declarations (``declare module "react" {}``, ``declare global``) and math
towers. Every batch also carries known verdicts (a component that compiles, one that does not,
a right and a wrong math answer), and the test asserts, for every example:

* no 5xx, every rollout answered once with finite, bounded token scores, one per span;
* the known neighbours keep their verdicts (hostile text cannot change a neighbour's score);
* no hostile rollout ends as an error (a hang or a crash inside scoring would), and no hostile
  math answer runs into the symbolic comparison's deadline (the guard refuses such answers);
* each request answers within the compile and math deadlines;

and, over the whole run, that /healthz stays fast (polled every 20 ms), /readyz stays ready,
and the server's and the math workers' memory stay bounded. About half a minute with the
default 50 examples (``BOTGRPO_FUZZ_EXAMPLES`` for more).

Beside the synthetic pieces, the hostile slot also draws from what a real model wrote:
``tests/data/smollm2_failures.jsonl``, failing completions of SmolLM2-135M-Instruct
(:mod:`benchmarks.real_model`), as they are and with a hostile piece spliced in at a drawn
place. :func:`test_a_real_models_failures_are_scored_and_still_fail` sends the whole corpus at
the level where each first failed and checks the same invariants, and that each still fails.
"""
from __future__ import annotations

import json
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.node_toolchain import require_node_toolchain
from tests.live_server import LiveServer
from tests.test_hostile_server import HealthProbe, _children, _cmdline, rss_mb

GOOD_REACT = "```tsx\nexport default function Good() {\n  return <p className=\"ok\">hi</p>;\n}\n```"
BAD_REACT = "```tsx\nexport default function Bad() {\n  return <p className=\"x\"hi</p>;\n}\n```"
RIGHT_MATH = "3 * 4 = 12, so \\boxed{12}"
WRONG_MATH = "3 * 4 = 13, so \\boxed{13}"
MAX_CHARS = 60_000  # per hostile completion: sizes up to the limits are the linear-time tests' job
EXAMPLES = int(os.environ.get("BOTGRPO_FUZZ_EXAMPLES", "50"))  # raise it for a longer hunt

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_node_toolchain()
    srv = LiveServer(tmp_path_factory.mktemp("fuzz-hostile"),
                     env={"BOTGRPO_RESULT_TIMEOUT_S": "60", "BOTGRPO_COMPILE_TIMEOUT_S": "5"})
    with HealthProbe(srv.url) as probe:
        yield srv, probe
    srv.stop()


# --------------------------------------------------------------------------------------------- strategies

UNICODE = ["\ud800", "\udfff", "\udc00\ud800", "a\u0301\u0301\u0301", "\u202e", "\u200d", "\ufeff", "\x00",
           "\u2028", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\U0010ffff", "\ufffd", "\u0000\u0000"]
AMBIENT = [
    'declare module "react" {}\n',
    'declare module "react" { export const useState: any; export default any; }\n',
    "declare global { interface Window { hacked: any } var React: any; }\n",
    'declare module "*";\n',
    'declare module "react/jsx-runtime" { export const jsx: any; }\n',
    "declare global { namespace JSX { interface IntrinsicElements { [name: string]: any } } }\n",
    '/// <reference path="/etc/passwd" />\n',
    '/// <reference types="node" />\nimport fs from "fs";\n',
    "export {};\ndeclare global { interface Array<T> { x: never } }\n",
]
MATH_TOWERS = [
    lambda k: "2^{" * k + "2" + "}" * k,
    lambda k: "{" * k + "2^{9999}" + "}^{9999}" * k,
    lambda k: "\\exp(" * k + "10" + ")" * k,
    lambda k: "10^\\left(" * k + "10" + "\\right)" * k,
    lambda k: "2^{\\left\\{" * k + "2" + "\\right\\}}" * k,
    lambda k: "\\Gamma(" + "9" * k + ")",
    lambda k: "\\binom{" + "9" * k + "}{" + "4" * k + "}",
    lambda k: "9" * k + "!" * (1 + k % 3),
    lambda k: "\\operatorname{eye}(" + "9" * k + ")",
    lambda k: "{" + "9" * k + " \\choose 7}",
    lambda k: "2^{\\sqrt{9999}" * k + "}" * k,
    lambda k: "(" + "+".join("xyzwv"[: 1 + k % 5]) + ")^{" + str(k) + "}",
    lambda k: "\\sin^{" + str(k) + "}(x)",
    lambda k: "(1+\\sqrt{2})^{" + str(100 * k) + "}",
    lambda k: "(" + str(k) + "!)^{" + str(k * 100) + "}",
]
LOOP_UNITS = ["a", " ", "\n", "```", "`", "{", "}", "<div>", "</div>", "=", "1+1=2\n", "\\boxed{", "answer is ",
              "export default function A() {", "return <p>hi</p>;", "((", "\\frac{", "$$", "\t", "//", "/*",
              "<>", "</>", "'", '"', "\\", "9", ".", ",", "!"]

bounded_int = st.integers(min_value=1, max_value=40)
repetition = st.builds(lambda unit, n: (unit * n)[:MAX_CHARS],
                       st.one_of(st.sampled_from(LOOP_UNITS), st.text(min_size=1, max_size=6)),
                       st.integers(min_value=1, max_value=MAX_CHARS))
giant_literal = st.builds(lambda digits, wrap: wrap.format("9" * digits),
                          st.integers(min_value=1, max_value=20_000),
                          st.sampled_from(["{}", "\\boxed{{{}}}", "const n = {};", "<p>{{{}}}</p>", "1e{}",
                                           "answer is {}", "0.{}", "-{}"]))
unicode_mess = st.lists(st.one_of(st.sampled_from(UNICODE), st.text(max_size=4)), max_size=30).map("".join)
deep_nesting = st.builds(lambda opener, closer, k: opener * k + "x" + closer * k,
                         st.sampled_from(["{", "(", "[", "<div>", "\\frac{", "\\left(", "{{", "<>"]),
                         st.sampled_from(["}", ")", "]", "</div>", "}{1}", "\\right)", "}}", "</>"]),
                         st.integers(min_value=1, max_value=4000))
ambient = st.lists(st.sampled_from(AMBIENT), min_size=1, max_size=4).map("".join)
tower = st.builds(lambda make, k: make(k), st.sampled_from(MATH_TOWERS), st.integers(min_value=1, max_value=60))
piece = st.one_of(repetition, giant_literal, unicode_mess, deep_nesting, ambient, tower)
hostile_text = st.lists(piece, min_size=1, max_size=3).map(lambda parts: "".join(parts)[:MAX_CHARS])

# what a real model wrote: SmolLM2-135M-Instruct's failing completions (text only, committed)
CORPUS_PATH = Path(__file__).parent / "data" / "smollm2_failures.jsonl"
CORPUS = [json.loads(line) for line in CORPUS_PATH.read_text(encoding="utf-8").splitlines() if line.strip()]
REAL = {task: [row["completion"] for row in CORPUS if row["task"] == task] for task in ("react", "math")}


def _splice(text: str, inserted: str, at: float) -> str:
    cut = int(at * len(text))
    return (text[:cut] + inserted + text[cut:])[:MAX_CHARS]


def real_failures(task: str):
    """A real failing completion, as written or with a hostile piece spliced in."""
    written = st.sampled_from(REAL[task])
    return st.one_of(written, st.builds(_splice, written, piece, st.floats(min_value=0.0, max_value=1.0)))


@st.composite
def hostile_rollouts(draw):
    text = draw(hostile_text)
    react_forms = [text, f"```tsx\n{text}\n```", f"```tsx\n{text}\n{GOOD_REACT[7:-4]}```",
                   f"```tsx\n{draw(ambient)}{GOOD_REACT[7:-4]}```", f"```tsx\n{draw(ambient)}{BAD_REACT[7:-4]}```",
                   f"```tsx\n{text}", draw(real_failures("react"))]
    math_forms = [text, f"so \\boxed{{{text}}}", f"The answer is {text}", f"{text}\n1 + 1 = 2\n\\boxed{{{draw(tower)}}}",
                  draw(real_failures("math"))]
    return (draw(st.sampled_from(react_forms)), draw(st.sampled_from(math_forms)),
            draw(st.sampled_from(["syntax", "build", "typecheck"])), draw(st.booleans()))


# --------------------------------------------------------------------------------------------- checks

def _offsets(completion: str, every: int) -> list[list[int]]:
    cuts = list(range(0, len(completion), every)) + [len(completion)]
    return [[a, b] for a, b in zip(cuts, cuts[1:])] or [[0, 0]]


def _post(url: str, body: dict) -> tuple[httpx.Response, float]:
    started = time.perf_counter()
    r = httpx.post(url + "/v1/rewards", content=json.dumps(body).encode(), timeout=120,
                   headers={"content-type": "application/json"})
    return r, time.perf_counter() - started


def _check_results(response: httpx.Response, body: dict) -> dict[str, dict]:
    assert response.status_code == 200, (response.status_code, response.text[:500])
    results = response.json()["results"]
    sent = body["rollouts"]
    assert [r["id"] for r in results] == [r["id"] for r in sent] and [r["index"] for r in results] == list(range(len(sent)))
    for result, rollout in zip(results, sent):
        sent = rollout.get("token_offsets")
        if sent is not None:  # the caller's own spans are not sent back unasked
            assert result["token_offsets"] is None
        scores, spans = result["token_scores"], sent if sent is not None else result["token_offsets"]
        assert len(scores) == len(spans) and all(math.isfinite(s) and -1.0 <= s <= 1.0 for s in scores)
        assert -1.0 <= result["score"] <= 1.0
    return {r["id"]: r for r in results}


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(case=hostile_rollouts())
def test_hostile_completions_leave_neighbours_and_the_server_intact(server, case):
    srv, _ = server
    react_text, math_text, level, with_offsets = case
    react = {"task": "react", "options": {"level": level}, "rollouts": [
        {"id": "hostile", "completion": react_text}, {"id": "good", "completion": GOOD_REACT},
        {"id": "bad", "completion": BAD_REACT}]}
    maths = {"task": "math", "rollouts": [
        {"id": "hostile", "completion": math_text, "reference": {"answer": "12"}},
        {"id": "right", "completion": RIGHT_MATH, "reference": {"answer": "12"}},
        {"id": "wrong", "completion": WRONG_MATH, "reference": {"answer": "12"}}]}
    if with_offsets:
        for body in (react, maths):
            for rollout in body["rollouts"]:
                # offsets of the text as JSON delivers it: an escaped high + low surrogate is one character
                rollout["token_offsets"] = _offsets(json.loads(json.dumps(rollout["completion"])), 7)
    with ThreadPoolExecutor(2) as pool:
        (react_r, react_s), (math_r, math_s) = pool.map(lambda b: _post(srv.url, b), (react, maths))
    compiled, judged = _check_results(react_r, react), _check_results(math_r, maths)
    assert compiled["good"]["passed"] is True and compiled["good"]["error"] is None, compiled["good"]["details"]
    assert compiled["bad"]["passed"] is False and compiled["bad"]["error"] is None, compiled["bad"]["details"]
    assert judged["right"]["passed"] is True and judged["wrong"]["passed"] is False
    assert compiled["hostile"]["error"] is None and judged["hostile"]["error"] is None, \
        (compiled["hostile"]["error"], judged["hostile"]["error"])
    # the guard refuses what would run into the deadline: no hostile answer times out in math-verify
    assert judged["hostile"]["details"].get("reason") != "symbolic comparison timed out", judged["hostile"]["details"]
    # a compile is bounded by compile_timeout_s (5 s here, a batch may be re-run once alone), math by timeout_s (5 s)
    assert react_s < 25 and math_s < 15, (react_s, math_s)


def test_a_real_models_failures_are_scored_and_still_fail(server):
    """The whole corpus, each completion at the level where it first failed (a spec-only failure at
    render), with the server's own token split and with 7-character offsets: answered, bounded,
    not an error, and failing still. A completion that passes now means a scorer change accepted
    what it refused when the corpus was made (benchmarks/real_model.py names the commit)."""
    from botgrpo.sandbox import isolation
    from tests.helpers import require_host

    srv, _ = server
    assert len(CORPUS) >= 100 and REAL["react"] and REAL["math"]
    require_host(isolation.render_refusal(isolation.detect().layers) is None,
                 "the sandbox layers that rendering needs (bubblewrap)")
    for level in ("build", "typecheck", "render"):
        rows = [r for r in CORPUS if r["task"] == "react" and (r["level"] if r["level"] != "spec" else "render") == level]
        if not rows:  # no failure first met at this level in the corpus
            continue
        for with_offsets in (False, True):
            body = {"task": "react", "options": {"level": level}, "rollouts": [
                {"id": r["id"], "completion": r["completion"], "reference": r["reference"], "prompt": r["prompt"],
                 "finish_reason": r["finish_reason"],
                 **({"token_offsets": _offsets(r["completion"], 7)} if with_offsets else {})} for r in rows]}
            response, seconds = _post(srv.url, body)
            results = _check_results(response, body)
            for r in rows:
                result = results[r["id"]]
                assert result["error"] is None, (r["id"], result["error"])
                assert result["passed"] is False or result["details"].get("spec_passed") is False, (r["id"], result["details"])
            assert seconds < 120, (level, len(rows), seconds)
    rows = [r for r in CORPUS if r["task"] == "math"]
    body = {"task": "math", "rollouts": [{"id": r["id"], "completion": r["completion"], "reference": r["reference"],
                                          "finish_reason": r["finish_reason"]} for r in rows]}
    response, _ = _post(srv.url, body)
    results = _check_results(response, body)
    assert all(results[r["id"]]["error"] is None and results[r["id"]]["passed"] is False for r in rows)


def test_after_the_fuzz_the_server_is_healthy_and_small(server):
    srv, probe = server
    ready = httpx.get(srv.url + "/readyz", timeout=10)
    assert ready.status_code == 200 and ready.json()["ready"] is True, ready.text
    assert probe.latencies and probe.worst < 2.0, probe.worst  # the loop never blocked for long
    assert rss_mb(srv.proc.pid) < 1500
    workers = [pid for pid in _children(srv.proc.pid) if b"spawn_main" in _cmdline(pid)]
    for pid in workers:
        assert rss_mb(pid) < 1100  # under RLIMIT_AS = 1024 MiB
    log = Path(srv.log_path).read_text(errors="replace")
    assert " 500 " not in log and "Traceback" not in log, log[-3000:]
