"""``botgrpo eval`` at the render level reports the render rate and the empty-render rate
(trainer/render_eval.py through trainer/evaluate.py): a real embedded reward server and real
sandbox workers score a fixed set of completions (the engine below replays them, so the rates
are known exactly)."""
from __future__ import annotations

import pytest
import torch

from botgrpo.reward_server.spans import default_split
from botgrpo.sandbox import isolation as iso
from tests.node_toolchain import require_node_toolchain
from tests.helpers import require_host
from botgrpo.trainer.data import Example
from botgrpo.trainer.evaluate import evaluate
from botgrpo.embedded import EmbeddedServer
from botgrpo.trainer.rewards import RewardSource
from botgrpo.trainer.rollout.base import RolloutBatch, SamplingParams

RENDERS = "```tsx\nexport default function A() { return <p>hello</p>; }\n```"
EMPTY = "```tsx\nexport default function B() { return <div><span></span></div>; }\n```"
THROWS = "```tsx\nexport default function C() { const x: any = null; return <p>{x.y}</p>; }\n```"
BROKEN = "```tsx\nexport default function D() { return <p>; }\n```"


class Replay:
    """An engine that answers every prompt with the next of a fixed list of completions."""

    def __init__(self, texts):
        self.texts = texts

    def generate(self, prompts, group_size, sampling, seeds=None):
        texts = self.texts[: len(prompts) * group_size]
        spans = [default_split(t) for t in texts]
        width = max(len(s) for s in spans)
        mask = torch.tensor([[j < len(s) for j in range(width)] for s in spans])
        return RolloutBatch(prompt_ids=[[1]] * len(prompts), completion_ids=torch.zeros(len(texts), width, dtype=torch.long),
                            completion_mask=mask, behaviour_logprobs=torch.zeros(len(texts), width), texts=list(texts),
                            spans=spans, truncated=torch.zeros(len(texts), dtype=torch.bool), group_size=group_size)


def test_render_and_empty_render_rates_per_level():
    require_node_toolchain()
    require_host(not iso.render_refusal(iso.detect().layers), "bubblewrap with user namespaces (the render layers)")
    texts = [RENDERS, RENDERS, EMPTY, THROWS, BROKEN]
    examples = [Example(f"prompt {i}", None) for i in range(len(texts))]
    with EmbeddedServer(warm_scorers=False) as server:
        source = RewardSource(server.url, "react")
        try:
            out = evaluate(Replay(texts), source, examples, SamplingParams(max_new_tokens=8), levels=["build", "render"])
        finally:
            source.close()
    assert out["build/pass_rate"] == pytest.approx(4 / 5)
    assert out["render/pass_rate"] == pytest.approx(2 / 5)
    assert out["render/render_rate"] == pytest.approx(2 / 5)
    assert out["render/empty_render_rate"] == pytest.approx(1 / 5)
    assert out["render/render_error_rate"] == pytest.approx(1 / 5)
    assert "build/render_rate" not in out


def test_component_rate_counts_only_the_named_exported_component():
    """The headline React metric: compiles AND declares the spec's component. Three completions
    that all compile, one of which is the task: pass rate 1, component rate 1/3."""
    require_node_toolchain()
    texts = ["```tsx\nexport default function Card() { return <div>x</div>; }\n```",
             "```tsx\nfunction Card() { return <div>x</div>; }\nexport default function App() { return <p/>; }\n```",
             "```tsx\n<div>x</div>;\n```"]
    examples = [Example(f"prompt {i}", {"spec": {"component": "Card"}}) for i in range(len(texts))]
    with EmbeddedServer(warm_scorers=False) as server:
        source = RewardSource(server.url, "react", {"level": "build"})
        try:
            out = evaluate(Replay(texts), source, examples, SamplingParams(max_new_tokens=8))
        finally:
            source.close()
    assert out["pass_rate"] == pytest.approx(1.0)
    assert out["component_rate"] == pytest.approx(1 / 3)
