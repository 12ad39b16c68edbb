"""The trainer end to end on CPU with a tiny policy: rollouts, alignment, a few steps through
a real reward server, exact resume, and checkpoints that load with from_pretrained."""
import json
import math

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from botgrpo.reward_server.scorers.base import ScoreResult, SpanScore
from botgrpo.reward_server.spans import compose
from botgrpo.trainer.algo.presets import PRESETS
from botgrpo.trainer.models.tiny import train_tokenizer
from botgrpo.trainer.rollout.alignment import token_spans
from botgrpo.trainer.rollout.base import SamplingParams
from botgrpo.trainer.rollout.hf import HFEngine
from botgrpo.trainer.run.loop import Trainer
from tests.live_server import LiveServer
from tests.tiny_setup import tiny_config, tiny_math_setup

REQUIRED = {"step", "reward_mean", "reward_std", "pass_rate", "spec_rate", "kl", "entropy", "clip_frac",
            "completion_len_mean", "tokens_per_s", "time_generate", "time_score", "time_train"}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return tiny_math_setup(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = LiveServer(tmp_path_factory.mktemp("srv"), env={"BOTGRPO_WARM_SCORERS": "false"})
    yield srv
    srv.stop()


def engine_for(setup):
    tok = AutoTokenizer.from_pretrained(setup["model"])
    return HFEngine(AutoModelForCausalLM.from_pretrained(setup["model"]), tok)


def test_rollouts_depend_only_on_prompt_seed_not_batch(setup):
    engine = engine_for(setup)
    sampling = SamplingParams(max_new_tokens=24)
    together = engine.generate(["Compute 1 + 2.\n", "Compute 3 * 4.\n"], 4, sampling, seeds=[7, 8])
    alone = engine.generate(["Compute 3 * 4.\n"], 4, sampling, seeds=[8])
    assert together.texts[4:] == alone.texts
    assert torch.allclose(together.behaviour_logprobs[4:, :alone.behaviour_logprobs.shape[1]],
                          alone.behaviour_logprobs, atol=1e-5)
    for text, spans, n in zip(together.texts, together.spans, together.lengths.tolist()):
        assert len(spans) == n and spans[-1][1] == len(text)  # one span per token, covering the text


def test_behaviour_logprobs_match_the_training_forward(setup):
    from botgrpo.trainer.models.policy import completion_logprobs, pack
    engine = engine_for(setup)
    batch = engine.generate(["Compute 1 + 2.\n", "Compute (3 + 4) * 5 step by step.\n"], 3,
                            SamplingParams(max_new_tokens=20, temperature=0.7), seeds=[1, 2])
    inputs = pack(batch.prompt_ids, batch.completion_ids, batch.completion_mask, 3, engine.pad_id)
    with torch.no_grad():
        logp = completion_logprobs(engine.model, *inputs, temperature=0.7)
    m = batch.completion_mask
    assert torch.allclose(logp[m], batch.behaviour_logprobs[m], atol=1e-4)


def test_alignment_with_tokens_that_cross_line_breaks():
    code = "export function A() {\n  return <p>x</p>;\n}\n" * 30
    tok = train_tokenizer([code], vocab_size=300)
    completion = "export function A() {\n  return <p>x</p;\n}\n"
    ids = tok(completion)["input_ids"]
    text, spans = token_spans(tok, ids)
    assert text == completion
    crossing = [(s, e) for s, e in spans if "\n" in completion[s:e - 1]]  # a newline, then more of the token
    assert crossing, "the tokenizer should merge across line breaks for this test to mean anything"
    line2 = (completion.index("  return"), completion.index("\n}"))
    result = ScoreResult(score=-1, passed=False, local=[SpanScore(*line2, -1.0)])
    scores = compose(result, len(completion), spans, local_weight=0.5)
    for (s, e), score in zip(spans, scores):
        touches = s < line2[1] and e > line2[0]
        assert score == pytest.approx(-1.0 if touches else -0.6), (completion[s:e], score)


def test_few_steps_through_the_real_server(setup, server, tmp_path):
    cfg = tiny_config(setup, tmp_path / "run", reward={"url": server.url}, algorithm={"kl_coef": 0.05},
                      optim={"num_iterations": 2}, steps=3)
    trainer = Trainer(cfg)
    try:
        records = trainer.train()
    finally:
        trainer.close()
    assert len(records) == 3 and all(REQUIRED <= set(r) for r in records)
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [1, 2, 3] and all(r["reward_errors"] == 0 for r in lines)
    assert all(r["kl"] >= 0 for r in lines) and lines[-1]["kl"] > 0
    assert (tmp_path / "run" / "curves.png").stat().st_size > 10_000
    assert [e["step"] for e in trainer.evals] == [0, 3]
    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path / "run" / "checkpoint-3")
    for a, b in zip(reloaded.parameters(), trainer.model.parameters()):
        assert torch.equal(a, b)


def test_resume_continues_exactly(setup, server, tmp_path):
    def params(trainer):
        return [p.detach().clone() for p in trainer.model.parameters()]

    straight = Trainer(tiny_config(setup, tmp_path / "a", reward={"url": server.url}, eval={"dataset": None}, steps=4))
    straight.train()
    straight.close()
    first = Trainer(tiny_config(setup, tmp_path / "b", reward={"url": server.url}, eval={"dataset": None}, steps=2))
    first.train()
    first.close()
    resumed = Trainer(tiny_config(setup, tmp_path / "b", reward={"url": server.url}, eval={"dataset": None},
                                  checkpoint={"resume": True}, steps=4))
    assert resumed.step == 2
    resumed.train()
    resumed.close()
    for a, b in zip(params(straight), params(resumed)):
        assert torch.equal(a, b)


@pytest.mark.parametrize("method", sorted(set(PRESETS) - {"bot_grpo"}))  # bot_grpo: the other tests
def test_every_preset_trains(setup, server, tmp_path, method):
    trainer = Trainer(tiny_config(setup, tmp_path / method, reward={"url": server.url}, algorithm={"method": method},
                                  eval={"dataset": None}, log={"plot": False}, steps=1))
    try:
        [record] = trainer.train()
    finally:
        trainer.close()
    assert record["step"] == 1 and record["reward_errors"] == 0
    # a NaN or inf loss is a float too: the update must have produced finite numbers
    assert all(isinstance(record[k], (int, float)) and math.isfinite(record[k]) for k in ("loss", "grad_norm", "entropy"))


def test_no_update_when_every_group_is_filtered_out(setup):
    """Dynamic sampling can drop every group; Adam must then not move the weights on momentum."""
    from botgrpo.trainer.algo.settings import AlgorithmSettings
    from botgrpo.trainer.run.distributed import Dist
    from botgrpo.trainer.models.policy import pack
    from botgrpo.trainer.run.update import UpdateBatch, policy_update
    engine = engine_for(setup)
    batch = engine.generate(["Compute 1 + 2.\n"], 2, SamplingParams(max_new_tokens=8), seeds=[0])
    inputs = pack(batch.prompt_ids, batch.completion_ids, batch.completion_mask, 2, engine.pad_id)
    model = engine.model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    kwargs = dict(temperature=1.0, micro_batch_size=8, num_iterations=1, max_grad_norm=1.0, norm_len=8, d=Dist())
    adv = torch.randn(batch.completion_mask.shape)
    policy_update(model, optimizer, UpdateBatch(inputs, batch.completion_mask, adv), AlgorithmSettings(), **kwargs)
    before = [p.detach().clone() for p in model.parameters()]
    none = torch.zeros_like(batch.completion_mask)
    stats = policy_update(model, optimizer, UpdateBatch(inputs, none, adv), AlgorithmSettings(), **kwargs)
    assert stats["skipped"] == 1.0
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_inverse_cdf_sampling_draws_the_right_distribution():
    from botgrpo.trainer.rollout.hf import _sample
    probs = torch.tensor([0.5, 0.0, 0.3, 0.2])
    logits = probs.clamp_min(1e-30).log().expand(200_000, 4)
    u = torch.rand(200_000, generator=torch.Generator().manual_seed(0))
    tokens, logprobs = _sample(logits, SamplingParams(), u)
    freq = torch.bincount(tokens, minlength=4).float() / len(tokens)
    assert torch.allclose(freq, probs, atol=0.005) and freq[1] == 0
    assert torch.allclose(logprobs, probs.log()[tokens], atol=1e-5)
    top, _ = _sample(logits, SamplingParams(top_p=0.6), u)  # nucleus {0, 2}: renormalised 5/8, 3/8
    assert set(top.tolist()) == {0, 2}
    assert abs((top == 0).float().mean().item() - 0.625) < 0.005


class _Scripted:
    """An in-process reward source: fixed rewards per row, rows listed in ``unscored`` errored
    with ``unscored_value`` under them (what a naive client would feed the loss)."""

    def __init__(self, unscored=(), unscored_value=-1.0):
        self.unscored, self.unscored_value = set(unscored), unscored_value

    def submit(self, batch, references, options=None):
        from concurrent.futures import Future
        from botgrpo.trainer.rewards import ScoredBatch
        B = batch.completion_mask.shape[0]
        seq = torch.tensor([1.0 if i % 2 else -1.0 for i in range(B)])
        scored = torch.tensor([i not in self.unscored for i in range(B)])
        seq = torch.where(scored, seq, self.unscored_value)
        tokens = torch.where(batch.completion_mask, seq[:, None], 0.0)
        nan = torch.full((B,), float("nan"))
        future = Future()
        future.set_result(ScoredBatch(tokens, seq, nan, nan, scored, 0.0))
        return future

    def close(self):
        pass


@pytest.mark.parametrize("method", ["bot_grpo", "grpo", "pure"])
def test_unscored_rollouts_are_left_out_not_punished(setup, tmp_path, method):
    """Whatever scores sit under an unscored rollout, the update is the same: it is not in the loss."""
    def one_step(value):
        cfg = tiny_config(setup, tmp_path / f"{method}-{value}", algorithm={"method": method}, eval={"dataset": None},
                          log={"plot": False}, steps=1)
        trainer = Trainer(cfg, reward_source=_Scripted(unscored=(0, 3, 5), unscored_value=value))
        try:
            [record] = trainer.train()
        finally:
            trainer.close()
        return record, [p.detach().clone() for p in trainer.model.parameters()]

    (low, low_params), (high, high_params) = one_step(-1.0), one_step(1.0)
    assert low["reward_errors"] == 3 and low["kept_rollouts"] == 16 - 3
    assert all(torch.equal(a, b) for a, b in zip(low_params, high_params))


def test_unscored_rollouts_from_the_real_server_are_counted(setup, server, tmp_path):
    """Math prompts without a reference answer cannot be judged: the server says so with `error`."""
    rows = [json.loads(x) for x in open(setup["dataset"]).read().splitlines()][:8]
    (tmp_path / "half.jsonl").write_text("".join(
        json.dumps({"prompt": r["prompt"], "reference": r["reference"] if i % 2 else {}}) + "\n"
        for i, r in enumerate(rows)))
    cfg = tiny_config({**setup, "dataset": str(tmp_path / "half.jsonl")}, tmp_path / "run", reward={"url": server.url},
                      eval={"dataset": None}, log={"plot": False}, steps=1)
    trainer = Trainer(cfg)
    try:
        [record] = trainer.train()
    finally:
        trainer.close()
    assert record["reward_errors"] > 0 and record["kept_rollouts"] == 16 - record["reward_errors"]
