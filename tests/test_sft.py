"""The tiny policy: built from scratch, loadable like a hub model, and learning under SFT."""
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from botgrpo.trainer.models import sft as sft_module
from botgrpo.trainer.tasks import react


@pytest.fixture(scope="module")
def pairs():
    return react.make_sft_corpus(300, seed=0, broken_share=0.5)


@pytest.fixture()
def policy_dir(tmp_path, pairs):
    return sft_module.build_tiny_policy([p + c for p, c in pairs], tmp_path / "policy", hidden=64, layers=2,
                                        vocab_size=600, seed=0)


def test_policy_loads_and_tokenizer_round_trips_with_offsets(policy_dir, pairs):
    model = AutoModelForCausalLM.from_pretrained(policy_dir)
    tokenizer = AutoTokenizer.from_pretrained(policy_dir)
    assert model.config.tie_word_embeddings and model.config.vocab_size == len(tokenizer)
    assert tokenizer.eos_token_id is not None and tokenizer.pad_token_id is not None
    assert model.generation_config.eos_token_id == tokenizer.eos_token_id
    text = pairs[0][0] + pairs[0][1] + "\n  ünïcode ✓"
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    assert tokenizer.decode(encoded["input_ids"]) == text
    offsets = encoded["offset_mapping"]
    assert offsets[0][0] == 0 and offsets[-1][1] == len(text)
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(offsets, offsets[1:]))  # bytes of one char share it


def test_loss_covers_completion_and_eos_only(policy_dir, pairs):
    tokenizer = AutoTokenizer.from_pretrained(policy_dir)
    encoded = sft_module.encode_pairs(tokenizer, pairs[:3])
    ids, mask, labels = sft_module.collate(encoded, [0, 1, 2], tokenizer.pad_token_id)
    for row, (tokens, n_prompt) in enumerate(encoded):
        assert tokens[-1] == tokenizer.eos_token_id
        assert tokenizer.decode(tokens[:n_prompt]) == pairs[row][0]
        assert (labels[row, :n_prompt] == -100).all() and (labels[row, len(tokens):] == -100).all()
        assert labels[row, n_prompt:len(tokens)].tolist() == tokens[n_prompt:]
        assert int(mask[row].sum()) == len(tokens)


def test_length_buckets_cover_every_example_once(pairs):
    import random
    encoded = [([0] * (i % 17 + 1), 0) for i in range(50)]
    batches = sft_module.length_buckets(encoded, 8, random.Random(0))
    assert sorted(i for b in batches for i in b) == list(range(50))


def test_a_few_seconds_of_sft_reduce_the_loss_and_save(policy_dir, pairs):
    """~5 s on an idle 2-core machine; bounded by steps so a busy machine does not fail it."""
    before = AutoModelForCausalLM.from_pretrained(policy_dir).model.embed_tokens.weight.clone()
    metrics = sft_module.sft(policy_dir, pairs, max_steps=40, max_seconds=30.0, batch_size=8, lr=5e-3)
    assert metrics.steps >= 20
    assert metrics.last_loss < metrics.first_loss - 0.5, metrics.losses
    after = AutoModelForCausalLM.from_pretrained(policy_dir).model.embed_tokens.weight
    assert not torch.equal(before, after)


def test_sft_needs_a_bound(policy_dir, pairs):
    with pytest.raises(ValueError):
        sft_module.sft(policy_dir, pairs, max_seconds=None, max_steps=None)


def test_sampling_returns_one_completion_per_prompt(policy_dir):
    prompts = [t.prompt for t in react.make_prompts(3, seed=0)]
    completions = sft_module.sample_completions(policy_dir, prompts, max_new_tokens=8)
    assert len(completions) == 3 and all(isinstance(c, str) for c in completions)


def test_a_periodic_hook_sees_the_model_in_eval_mode_and_changes_nothing_trained(tmp_path, pairs):
    """``on_every`` runs at steps 5 and 10 of 12; one that draws random numbers (as a sampling
    profile does) leaves the trained weights bit-identical to a run without it."""
    def train(name: str, hook) -> torch.Tensor:
        policy = sft_module.build_tiny_policy([p + c for p, c in pairs], tmp_path / name, hidden=32, layers=1,
                                              vocab_size=600, seed=0)
        sft_module.sft(policy, pairs, max_steps=12, max_seconds=None, batch_size=4, threads=1, every=5, on_every=hook)
        return AutoModelForCausalLM.from_pretrained(policy).model.embed_tokens.weight

    seen = []

    def hook(step, model):
        seen.append((step, model.training))
        torch.rand(1000)   # consumes torch's random state

    assert torch.equal(train("with", hook), train("without", None))
    assert seen == [(5, False), (10, False)]
