"""The reward inspector's ring and routes: bounded entries, runs of one score that give back the
text exactly, blame notes on the runs they touch; over real HTTP, the page behind its headers,
the data behind the API key, both scoring paths recorded, and the setting that turns it off.
(The page itself, in Chromium: tests/test_inspector_page.py.)"""
from __future__ import annotations

import re
import sys

import httpx
import pytest

from botgrpo.reward_server.ring import (MAX_CHARS, MAX_NOTES, MAX_TOKENS, RolloutRing, notes_of, record_of, segments,
                                        view)
from botgrpo.services.schemas import Result, RewardRequest, default_split
from tests.live_server import LiveServer

KEY = "inspector-key-1"
AUTH = {"Authorization": f"Bearer {KEY}"}


def scored(request: RewardRequest, index: int = 0, details=None, offsets=None, scores=None) -> Result:
    completion = request.rollouts[index].completion
    offsets = offsets if offsets is not None else default_split(completion)
    return Result.scored(request.rollouts[index].model_dump(), index, score=0.5, passed=True,
                         token_scores=scores if scores is not None else [0.5] * len(offsets), reward_map=(0.8, 0.2),
                         details=details or {}, offsets=offsets)


def request_of(*completions: str, task: str = "math", options=None) -> RewardRequest:
    return RewardRequest(task=task, options=options or {},
                         rollouts=[{"id": f"r{i}", "completion": c} for i, c in enumerate(completions)])


# ----------------------------------------------------------------------------------------- ring
def test_runs_cover_the_text_once_in_order_whatever_the_tokens():
    # unsorted, overlapping, empty and gapped tokens
    runs = segments(12, [6, 0, 2, 4, 10], [9, 3, 5, 4, 11], [0.6, 0.0, 0.2, 0.4, 1.0])
    assert runs == [(0, 3, 0.0), (3, 5, 0.2), (5, 6, None), (6, 9, 0.6), (9, 10, None), (10, 11, 1.0),
                    (11, 12, None)]
    assert segments(3, [], [], []) == [(0, 3, None)]
    assert segments(0, [0], [0], [1.0]) == []


def test_a_view_gives_back_the_text_exactly_and_puts_each_note_on_the_runs_it_touches():
    text = "x = 1 + 1 = 3 \U0001F600 then \\boxed{3}"  # a character outside the BMP: 1 code point, 2 in UTF-16
    request = request_of(text)
    details = {"steps": [{"start": 4, "end": 13, "ok": False, "text": "1 + 1 = 3"}],
               "answer_span": [text.index("3}"), text.index("3}") + 1], "answer": "3", "reason": "not equal"}
    shown = view(record_of(1, request, scored(request, details=details)))
    assert "".join(piece for piece, _, _ in shown.segments) == text
    assert shown.notes == ["wrong step: 1 + 1 = 3", "answer 3: not equal"]
    noted = {piece: notes for piece, _, notes in shown.segments if notes}
    assert noted == {" 1": [0], " +": [0], " =": [0], " 3": [0], " \\boxed{3}": [1]}  # " =" twice: one key


def test_notes_read_the_react_and_math_details_and_skip_what_is_no_blame():
    details = {"errors": [{"start": 3, "end": 9, "line": 2, "message": "Type 'string' is not assignable"}],
               "lint": [{"start": 0, "end": 2, "rule": "no-unused-vars", "message": "x is unused"}],
               "steps": [{"start": 0, "end": 5, "ok": True, "text": "1+1=2"}, {"start": 6, "end": 9, "ok": None,
                                                                               "text": "x=y"}],
               "code_span": [0, 50], "answer_span": None}
    assert [(n.start, n.end, n.message) for n in notes_of(details)] == [
        (3, 9, "line 2: Type 'string' is not assignable"), (0, 2, "lint no-unused-vars: x is unused"),
        (6, 9, "unverified step: x=y")]
    hostile = {"errors": [{"start": "0", "end": 3, "message": "m"}, {"start": 5, "end": 2, "message": "m"},
                          {"start": True, "end": 3}, "junk"], "steps": {"start": 0}, "answer_span": [1]}
    assert notes_of(hostile) == []


def held(obj, seen=None) -> int:
    """Bytes ``obj`` holds: its own size and, once each, its parts' (containers, dataclass fields)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    parts = (obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple))
             else vars(obj).values() if hasattr(obj, "__dataclass_fields__") else ())
    return sys.getsizeof(obj) + sum(held(part, seen) for part in parts)


def test_an_entry_is_bounded_and_says_it_was_cut():
    # the worst case: 4-byte characters, one-character tokens (each span and score its own object),
    # far too many notes of far too much text
    text = "\U0001F600" * 200_000
    request = request_of(text)
    offsets = [(i, i + 1) for i in range(len(text))]
    details = {"errors": [{"start": i, "end": i + 2, "message": "\U0001F600" * 10_000} for i in range(5000)],
               "reason": "\U0001F600" * 10_000, "level": "x" * 10_000}
    result = scored(request, details=details, offsets=offsets, scores=[i / len(text) for i in range(len(text))])
    entry = record_of(1, request, result)
    assert len(entry.text) == MAX_CHARS and len(entry.scores) == MAX_TOKENS == len(entry.offsets)
    assert len(entry.notes) == MAX_NOTES and all(len(n.message) <= 300 for n in entry.notes)
    assert held(entry) < 512_000, held(entry)  # about 0.47 MB
    shown = view(entry)
    assert (shown.shown_chars, shown.chars) == (MAX_CHARS, len(text))
    assert shown.shown_tokens == MAX_TOKENS < shown.tokens == len(offsets)
    assert "".join(piece for piece, _, _ in shown.segments) == text[:MAX_CHARS]
    small = request_of("2 + 2 = 4. " * 60)
    assert held(record_of(2, small, scored(small, scores=[i / 301 for i in range(301)]))) < 60_000


def test_caller_offsets_are_used_when_the_result_does_not_echo_them():
    request = RewardRequest(task="react", options={"level": "build"},
                            rollouts=[{"id": "a", "completion": "abcdef", "token_offsets": [[0, 2], [2, 6]]}])
    result = Result.scored(request.rollouts[0].model_dump(), 0, score=1.0, passed=True, token_scores=[1.0, -1.0],
                           reward_map=(0.8, 0.2), details={"level": "build"}, offsets=None)
    shown = view(record_of(1, request, result))
    assert [(p, s) for p, s, _ in shown.segments] == [("ab", 1.0), ("cdef", -1.0)]
    assert (shown.task, shown.level, shown.passed) == ("react", "build", True)


def test_the_ring_keeps_the_newest_and_capacity_zero_keeps_nothing():
    ring, off = RolloutRing(3), RolloutRing(0)
    for i in range(5):
        request = request_of(f"text {i}")
        ring.record(request, scored(request))
        off.record(request, scored(request))
    assert [e.text for e in ring.snapshot()] == ["text 4", "text 3", "text 2"]
    assert off.snapshot() == []
    stray = scored(request_of("a", "b"), index=1)  # a result its request cannot place: logged, not kept, no raise
    ring.record(request_of("a"), stray)
    assert [e.seq for e in ring.snapshot()] == [5, 4, 3]


# ----------------------------------------------------------------------------------------- HTTP
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = LiveServer(tmp_path_factory.mktemp("inspector"), env={"BOTGRPO_API_KEY": KEY, "BOTGRPO_WARM_SCORERS": "false",
                                                                "BOTGRPO_INSPECTOR_ROLLOUTS": "4"})
    yield srv
    srv.stop()


def test_the_page_and_its_assets_carry_a_strict_policy_and_no_inline_script(server):
    page = httpx.get(server.url + "/inspector")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page.text, re.S)
    assert scripts and all('src="' in attrs and not body.strip() for attrs, body in scripts)
    assert not re.search(r"<[^>]+\son[a-z]+=", page.text, re.I) and "style=" not in page.text  # no inline handler or style
    js = httpx.get(server.url + "/inspector/static/inspector.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert "innerHTML" not in js.text and "insertAdjacentHTML" not in js.text and "eval(" not in js.text
    assert httpx.get(server.url + "/inspector/static/inspector.css").status_code == 200
    assert httpx.get(server.url + "/inspector/static/..%2Fapp.py").status_code == 404
    assert httpx.get(server.url + "/inspector/static/inspector.html").status_code == 404
    assert "/inspector" not in httpx.get(server.url + "/openapi.json").text  # a page, not part of the API


def test_the_rollouts_need_the_key_and_show_both_scoring_paths_newest_first(server):
    assert httpx.get(server.url + "/inspector/rollouts").status_code == 401
    assert httpx.get(server.url + "/inspector/rollouts", headers={"Authorization": "Bearer wrong"}).status_code == 401
    body = {"task": "math", "rollouts": [{"id": "rest", "completion": "2 + 2 = 5, so \\boxed{5}",
                                          "reference": {"answer": "4"}}]}
    assert httpx.post(server.url + "/v1/rewards", json=body, headers=AUTH, timeout=60).status_code == 200
    peer = {"query": ["Q: 2+2? A: \\boxed{4}"], "prompts": ["Q: 2+2? "], "labels": ["4"]}
    assert httpx.post(f"{server.url}/compat/openrlhf/math/get_reward", json=peer, headers=AUTH,
                      timeout=60).status_code == 200
    shown = httpx.get(server.url + "/inspector/rollouts", headers=AUTH).json()
    assert shown["bounds"] == [-1.0, 1.0] and shown["capacity"] == 4
    peer_entry, rest = shown["rollouts"][:2]
    assert peer_entry["seq"] > rest["seq"] and peer_entry["passed"] is True
    assert "".join(s[0] for s in peer_entry["segments"]) == "A: \\boxed{4}"
    assert rest["id"] == "rest" and rest["passed"] is False and rest["task"] == "math"
    assert "wrong step: 2 + 2 = 5" in rest["notes"] and all(s[1] < 0 for s in rest["segments"] if s[1] is not None)
    assert httpx.get(server.url + "/inspector/rollouts", headers=AUTH).headers["content-security-policy"]


def test_the_ring_holds_at_most_its_setting(server):
    body = {"task": "math", "rollouts": [{"id": f"n{i}", "completion": f"\\boxed{{{i}}}", "reference": {"answer": "1"}}
                                         for i in range(6)]}
    assert httpx.post(server.url + "/v1/rewards", json=body, headers=AUTH, timeout=60).status_code == 200
    shown = httpx.get(server.url + "/inspector/rollouts", headers=AUTH).json()["rollouts"]
    assert len(shown) == 4 and {r["id"] for r in shown} < {f"n{i}" for i in range(6)}  # the last 4 to finish
    assert [r["seq"] for r in shown] == sorted((r["seq"] for r in shown), reverse=True)


def test_off_by_the_setting(tmp_path):
    srv = LiveServer(tmp_path, env={"BOTGRPO_INSPECTOR": "false", "BOTGRPO_WARM_SCORERS": "false"})
    try:
        for path in ("/inspector", "/inspector/rollouts", "/inspector/static/inspector.js"):
            assert httpx.get(srv.url + path).status_code == 404, path
        body = {"task": "math", "rollouts": [{"id": "a", "completion": "\\boxed{1}", "reference": {"answer": "1"}}]}
        assert httpx.post(srv.url + "/v1/rewards", json=body, timeout=60).status_code == 200
    finally:
        srv.stop()
