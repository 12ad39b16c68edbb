"""The synthetic React tasks: deterministic, correct by construction, broken as designed (real Node)."""
import json
import random

import pytest

from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.react import ReactOptions, ReactScorer
from tests.node_toolchain import require_node_toolchain
from botgrpo.trainer.tasks import base, react
from botgrpo.trainer.tasks.react_corruptions import CORRUPTIONS, corrupt
from botgrpo.trainer.tasks.react_templates import TEMPLATES

N = 48  # enough to hit every template several times


@pytest.fixture(scope="module")
def scorer():
    require_node_toolchain()
    s = ReactScorer(pool_size=2, timeout_s=10.0)
    yield s
    s.close()


def score(scorer, completions, tasks, level="build"):
    rollouts = [Rollout(c, t.prompt, t.reference) for c, t in zip(completions, tasks)]
    return scorer.score_batch(rollouts, ReactOptions(level=level))


def test_same_seed_same_tasks_and_corpus():
    assert react.make_prompts(20, seed=3) == react.make_prompts(20, seed=3)
    assert react.make_prompts(20, seed=3) != react.make_prompts(20, seed=4)
    assert react.make_sft_corpus(30, seed=3) == react.make_sft_corpus(30, seed=3)


def test_prompt_format_and_spec_agree():
    for example in react.make_examples(N, seed=0):
        task, spec = example.task, example.task.reference["spec"]
        assert task.prompt.endswith(base.PROMPT_END) and task.prompt.count("\n") == 1
        assert f"named {spec['component']} " in task.prompt and f'"{spec["text"][0]}"' in task.prompt
        assert all(f"<{tag}>" in task.prompt for tag in spec["elements"])
        assert json.loads(json.dumps(task.to_json())) == task.to_json()
    assert {e.template for e in react.make_examples(N, seed=0)} == set(TEMPLATES)


def test_correct_completions_compile_and_meet_their_spec(scorer):
    examples = react.make_examples(N, seed=0)
    tasks = [e.task for e in examples]
    for level in ("build", "typecheck"):
        for example, result in zip(examples, score(scorer, [e.completion for e in examples], tasks, level)):
            assert result.passed, (level, example.completion, result.details)
            assert result.details["spec_passed"], (example.completion, result.details["spec_violations"])


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_each_corruption_fails_as_designed(scorer, kind):
    rng = random.Random(kind)
    examples = react.make_examples(N, seed=1)
    broken = [corrupt(kind, e, rng) for e in examples]
    tasks = [e.task for e in examples]
    build = score(scorer, broken, tasks, "build")
    fails = CORRUPTIONS[kind].fails
    for example, completion, result in zip(examples, broken, build):
        assert completion != example.completion
        if fails == "build":
            assert not result.passed, completion
        else:
            assert result.passed, (completion, result.details)
            assert result.details["spec_passed"] is (fails == "typecheck"), (completion, result.details)
    if fails == "typecheck":
        assert not any(r.passed for r in score(scorer, broken, tasks, "typecheck"))


def test_sft_corpus_breaks_the_requested_share():
    pairs = react.make_sft_corpus(400, seed=0, broken_share=0.25)
    correct = {e.task.prompt: e.completion for e in react.make_examples(400, seed=0)}
    assert len(pairs) == 400 and all(p.endswith("\n") and c.startswith("```tsx\n") for p, c in pairs)
    assert sum(c != correct.get(p, c) for p, c in pairs[:1]) <= 1  # corpus draws its own examples
    clean = react.make_sft_corpus(50, seed=0, broken_share=0.0)
    assert all(c.endswith("```") for _, c in clean)


def test_write_jsonl_round_trips(tmp_path):
    tasks = react.make_prompts(5, seed=0)
    path = base.write_jsonl(tmp_path / "react.jsonl", tasks)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [set(r) for r in rows] == [{"prompt", "reference"}] * 5
    assert base.read_jsonl(path) == tasks
