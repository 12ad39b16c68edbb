"""BoTGRPOTrainer (TRL integration) trains a tiny local model on CPU with token-level rewards,
from in-process functions and from a live ``botgrpo serve`` (math and react).

Needs TRL (extra ``[trl]``). Without it the module is skipped, unless ``BOTGRPO_REQUIRE_TRL``
is set (to anything): then the missing import is an error, so a CI job that means to test the
integration cannot pass by skipping it.
"""
import os

import pytest
import torch

if os.environ.get("BOTGRPO_REQUIRE_TRL") is None:
    pytest.importorskip("trl", reason="TRL is not installed (extra [trl]); set BOTGRPO_REQUIRE_TRL=1 to require it")

from datasets import Dataset  # noqa: E402  (TRL's dependency)
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402
from trl import GRPOConfig  # noqa: E402

from botgrpo.trainer.integrations.trl import BoTGRPOTrainer  # noqa: E402
from botgrpo.trainer.models.sft import build_tiny_policy  # noqa: E402
from botgrpo.trainer.tasks import arith  # noqa: E402

GROUP = 4


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    pairs = arith.make_sft_corpus(200, 0)
    return str(build_tiny_policy([p + c for p, c in pairs], tmp_path_factory.mktemp("tiny") / "model",
                                 hidden=32, layers=2, vocab_size=300))


def digit_tokens(prompts, completions, completion_ids, *, tokenizer, **columns):
    """1.0 for a token whose text holds a digit, else 0.0: rewards vary within a completion."""
    return [[float(any(ch.isdigit() for ch in tokenizer.decode([t]))) for t in ids] for ids in completion_ids]


class Recording(BoTGRPOTrainer):
    """Keeps what each generation round handed to the loss, and the token rewards behind it."""

    batches: list

    def _token_advantages(self, completion_mask):
        self._rows = [None if r is None else list(r) for r in self._token_rewards]
        return super()._token_advantages(completion_mask)

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        keys = ("advantages", "completion_mask", "completion_ids", "prompt_ids", "prompt_mask")
        record = {k: output[k].detach().clone() for k in keys}
        self.batches.append({**record, "training": self.model.training, "rows": self._rows})
        return output


def grpo_args(tmp_path, steps=3, **overrides):
    values = dict(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2 * GROUP, num_generations=GROUP,
                  max_completion_length=12, max_steps=steps, learning_rate=1e-2, beta=0.0, use_cpu=True,
                  bf16=False, report_to="none", save_strategy="no", disable_tqdm=True, logging_steps=1,
                  activation_checkpointing=False, seed=0)
    values.update(overrides)
    return GRPOConfig(**values)


def make_trainer(model_dir, tmp_path, steps=3, dataset=None, args=None, **kwargs):
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    if dataset is None:
        dataset = Dataset.from_dict({"prompt": [task.prompt for task in arith.make_prompts(16, 1)]})
    if "reward_url" not in kwargs:
        kwargs["reward_funcs"] = lambda **kw: digit_tokens(tokenizer=tokenizer, **kw)
    trainer = Recording(model=model, args=args or grpo_args(tmp_path, steps), train_dataset=dataset,
                        processing_class=tokenizer, **kwargs)
    trainer.batches = []
    return trainer


def test_training_steps_give_finite_loss_and_move_the_weights(tiny_model, tmp_path):
    trainer = make_trainer(tiny_model, tmp_path)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    result = trainer.train()
    assert trainer.state.global_step == 3
    assert torch.isfinite(torch.tensor(result.training_loss))
    losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    assert losses and all(torch.isfinite(torch.tensor(losses)))
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert changed, "no parameter moved"


def test_advantages_are_per_token_and_follow_token_rewards(tiny_model, tmp_path):
    trainer = make_trainer(tiny_model, tmp_path, steps=2)
    trainer.train()
    assert trainer.batches
    differing = 0
    for batch in trainer.batches:
        adv, mask = batch["advantages"], batch["completion_mask"].bool()
        assert adv.shape == mask.shape  # (B, T), not TRL's (B,)
        assert torch.all(adv[~mask] == 0)
        assert adv.isfinite().all()
        for row, m in zip(adv, mask):
            values = row[m]
            differing += int(values.numel() > 1 and bool((values != values[0]).any()))
    assert differing > 0, "token rewards differ within completions, so their advantages should too"


def test_token_rewards_of_the_wrong_length_are_rejected(tiny_model, tmp_path):
    trainer = make_trainer(tiny_model, tmp_path, steps=1)
    trainer.reward_funcs = [lambda completion_ids, **kw: [[0.0] for _ in completion_ids]]
    with pytest.raises(ValueError, match="must score every token"):
        trainer.train()


def test_reward_server_source_sends_token_spans_and_returns_token_scores(tiny_model):
    import json

    import httpx

    from botgrpo.services.client import RewardClient
    from botgrpo.trainer.integrations.trl import RewardServerTokens

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    sent = []

    def server(request):
        body = json.loads(request.content)
        sent.append(body)
        lines = [json.dumps({"id": r["id"], "index": i, "score": 0.0,
                             "token_scores": [float(s) for s, _ in r["token_offsets"]]})
                 for i, r in enumerate(body["rollouts"])]
        return httpx.Response(200, text="\n".join(lines) + "\n")

    source = RewardServerTokens("http://reward.test", "math", options={"error_propagation": False}, tokenizer=tokenizer)
    source.client = RewardClient("http://reward.test", transport=httpx.MockTransport(server))
    ids = [tokenizer("12 + 3 = 15")["input_ids"] + [tokenizer.eos_token_id], tokenizer("no")["input_ids"]]
    scores = source(prompts=["p", "p"], completions=["", ""], completion_ids=ids, reference=[{"answer": "15"}] * 2)
    body = sent[0]
    assert body["task"] == "math" and body["options"] == {"error_propagation": False}
    assert [r["completion"] for r in body["rollouts"]] == ["12 + 3 = 15", "no"]
    # TRL's own rule: a completion that does not end in an end token was cut off by the limit
    assert [r["finish_reason"] for r in body["rollouts"]] == ["stop", "length"]
    assert body["rollouts"][0]["reference"] == {"answer": "15"}
    assert [len(s) for s in scores] == [len(i) for i in ids]  # one score per token, from the spans' starts
    assert scores[0][0] == 0.0 and scores[0] == sorted(scores[0])


# --------------------------------------------------------------------------- against a live reward server
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from tests.live_server import LiveServer
    srv = LiveServer(tmp_path_factory.mktemp("srv"), env={"BOTGRPO_WARM_SCORERS": "false"})
    yield srv
    srv.stop()


def server_scores(url, task, tokenizer, ids, reference, options=None):
    from botgrpo.services.client import RewardClient
    from botgrpo.trainer.rollout.alignment import token_spans
    text, spans = token_spans(tokenizer, ids)
    with RewardClient(url) as client:
        [result] = client.score(task, [{"id": "0", "completion": text, "reference": reference,
                                        "token_offsets": [list(s) for s in spans]}], options or {})
    return result


def test_math_rewards_from_a_live_server_drive_the_token_advantages(tiny_model, tmp_path, server):
    tasks = arith.make_prompts(16, 1)
    dataset = Dataset.from_dict({"prompt": [t.prompt for t in tasks], "reference": [t.reference for t in tasks]})
    trainer = make_trainer(tiny_model, tmp_path, steps=2, dataset=dataset, reward_url=server.url, reward_task="math",
                           reward_options={"error_propagation": True})
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert any(not torch.equal(p.detach(), before[n]) for n, p in trainer.model.named_parameters())
    tokenizer, reference = trainer.processing_class, {t.prompt: t.reference for t in tasks}
    batch = trainer.batches[0]
    for i, row in enumerate(batch["rows"]):  # the scores the loss used are the server's for those very tokens
        prompt = tokenizer.decode(batch["prompt_ids"][i][batch["prompt_mask"][i].bool()], skip_special_tokens=True)
        ids = batch["completion_ids"][i][batch["completion_mask"][i].bool()].tolist()
        # the trainer's rows are the server's token scores in reward units (its reward_map divided out)
        assert row == pytest.approx(server_scores(server.url, "math", tokenizer, ids, reference[prompt]).rewards())
    assert all(b["advantages"].isfinite().all() for b in trainer.batches)


def test_react_rewards_from_a_live_server(tmp_path, server, tmp_path_factory):
    from botgrpo.trainer.tasks import react
    from tests.node_toolchain import require_node_toolchain
    require_node_toolchain()
    tasks = react.make_prompts(8, 1)
    pairs = react.make_sft_corpus(100, 0)
    model_dir = str(build_tiny_policy([p + c for p, c in pairs], tmp_path_factory.mktemp("react") / "model",
                                      hidden=32, layers=2, vocab_size=400))
    dataset = Dataset.from_dict({"prompt": [t.prompt for t in tasks], "reference": [t.reference for t in tasks]})
    trainer = make_trainer(model_dir, tmp_path, steps=1, dataset=dataset, reward_url=server.url, reward_task="react",
                           reward_options={"level": "syntax"})
    trainer.train()
    [batch] = trainer.batches
    assert all(row is not None for row in batch["rows"])  # the server scored every completion: options accepted
    assert batch["advantages"].isfinite().all() and batch["advantages"].shape == batch["completion_mask"].shape


@pytest.mark.parametrize("setting", [{"scale_rewards": "batch"}, {"scale_rewards": "none"},
                                     {"multi_objective_aggregation": "normalize_then_sum"}])
def test_reward_scalings_bot_grpo_cannot_honour_are_refused(tiny_model, tmp_path, setting):
    with pytest.raises(ValueError, match=f"supports {next(iter(setting))}="):
        make_trainer(tiny_model, tmp_path, args=grpo_args(tmp_path, **setting))


def test_evaluation_groups_are_num_generations_eval(tiny_model, tmp_path):
    from botgrpo.trainer.algo.advantages import compute_advantages
    prompts = [task.prompt for task in arith.make_prompts(4, 3)]
    args = grpo_args(tmp_path, steps=1, num_generations_eval=2, per_device_eval_batch_size=4)
    trainer = make_trainer(tiny_model, tmp_path, args=args, eval_dataset=Dataset.from_dict({"prompt": prompts}))
    trainer.evaluate()
    evals = [b for b in trainer.batches if not b["training"]]
    assert evals
    for batch in evals:
        mask = batch["completion_mask"].bool()
        rewards = torch.zeros(mask.shape)
        for i, row in enumerate(batch["rows"]):
            rewards[i, : len(row)] = torch.tensor(row[: mask.shape[1]])
        expected = compute_advantages("bot_grpo", rewards, mask, torch.arange(mask.shape[0]) // 2, min_std=0.5)
        torch.testing.assert_close(batch["advantages"], expected)
