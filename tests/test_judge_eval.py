"""``botgrpo eval --judge URL --against B``: two checkpoints answer the same prompts and the
judge (a real local OpenAI-compatible server over a tiny model) compares them in both orders."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from botgrpo import judge_eval
from botgrpo.reward_server.judge.client import JudgeClient, JudgeConfig
from tests.judge_server import TinyJudgeServer, build_tiny_judge

CARD = "```tsx\nexport default function Card() { return <section><h2>Card</h2></section>; }\n```"
LIST = "```tsx\nexport default function List() { return <ul><li>one</li><li>two</li></ul>; }\n```"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("judge")
    build_tiny_judge(root / "model")
    with TinyJudgeServer(root / "model", root) as srv:
        yield srv


def test_both_orders_are_asked_and_position_bias_cancels(server):
    judge = JudgeClient(JudgeConfig(url=server.url, model="tiny"))
    prompts = ["Write a card", "Write a list", "Write a card with a heading"]
    before = server.stats()["requests"].get("tiny", 0)
    same = judge_eval.pairwise(judge, prompts, [CARD] * 3, [CARD] * 3)
    assert server.stats()["requests"]["tiny"] - before == 6  # 3 prompts x 2 orders (identical pairs: 3 distinct asks)
    # identical components: whatever slot the judge prefers, A wins one order and loses the other, or ties both
    assert same["win_rate"] == pytest.approx(0.5) and same["unanswered"] == 0
    assert same["wins"] + same["ties"] + same["losses"] == 6 and same["wins"] == same["losses"]
    mixed = judge_eval.pairwise(judge, prompts, [CARD, LIST, CARD], [LIST, CARD, LIST])
    assert 0.0 <= mixed["win_rate"] <= 1.0
    assert mixed["win_rate"] == pytest.approx((mixed["win_rate_ab"] + mixed["win_rate_ba"]) / 2)
    flipped = judge_eval.pairwise(judge, prompts, [LIST, CARD, LIST], [CARD, LIST, CARD])
    assert flipped["win_rate"] == pytest.approx(1.0 - mixed["win_rate"])  # the same questions, sides swapped
    judge.close()


def test_pointwise_and_unanswered(server):
    graded = judge_eval.pointwise(JudgeClient(JudgeConfig(url=server.url, model="tiny")), ["a card"], [CARD])
    assert 1 <= graded["judge_score_mean"] <= 10 and graded["unanswered"] == 0
    broken = JudgeClient(JudgeConfig(url=server.url, model="tiny-broken", retries=0))
    result = judge_eval.pairwise(broken, ["a card"], [CARD], [LIST])
    assert result["unanswered"] == 2 and result["win_rate"] != result["win_rate"]  # NaN: nothing answered


def test_botgrpo_eval_judge_against(server, tmp_path):
    from botgrpo.trainer.models.sft import build_tiny_policy

    texts = [CARD, LIST, "Write a React card component.", "Write a React list component."] * 10
    build_tiny_policy(texts, tmp_path / "a", hidden=32, layers=1, vocab_size=300, seed=0)
    build_tiny_policy(texts, tmp_path / "b", hidden=32, layers=1, vocab_size=300, seed=1)
    (tmp_path / "eval.jsonl").write_text("".join(json.dumps({"prompt": p, "reference": {}}) + "\n" for p in
                                                 ("Write a React card component.", "Write a React list component.")))
    out = tmp_path / "judge.json"
    done = subprocess.run([sys.executable, "-m", "botgrpo.cli", "eval", "--model", str(tmp_path / "a"),
                           "--dataset", str(tmp_path / "eval.jsonl"), "--judge", server.url, "--judge-model", "tiny",
                           "--against", str(tmp_path / "b"), "--max-new-tokens", "12", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["prompts"] == 2 and result["unanswered"] == 0 and result["against"] == str(tmp_path / "b")
    assert result["wins"] + result["ties"] + result["losses"] == 4
    assert 0.0 <= result["win_rate"] <= 1.0 and "win_rate" in done.stdout
