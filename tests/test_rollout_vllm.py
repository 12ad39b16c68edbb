"""The vLLM adapter's conversion, against the output shape vLLM returns (vLLM needs a GPU)."""
from dataclasses import dataclass

import torch

from botgrpo.tiny import train_tokenizer
from trainer.rollout.vllm import to_batch


@dataclass
class Logprob:
    logprob: float


@dataclass
class Completion:
    token_ids: list
    logprobs: list


@dataclass
class RequestOutput:
    outputs: list


def test_to_batch_builds_masks_logprobs_and_spans():
    tok = train_tokenizer(["hello world\nreturn x;\n"] * 20, vocab_size=280)
    eos, pad = tok.eos_token_id, tok.pad_token_id
    a = tok("hello world")["input_ids"] + [eos]
    b = tok("return x;\nhello")["input_ids"]  # truncated: no eos
    outs = [RequestOutput([Completion(a, [{t: Logprob(-0.5)} for t in a]),
                           Completion(b, [{t: Logprob(-1.0)} for t in b])])]
    batch = to_batch(outs, [[1, 2]], tok, 2, pad, eos)
    assert batch.completion_ids.shape == (2, max(len(a), len(b)))
    assert batch.lengths.tolist() == [len(a), len(b)]
    assert batch.texts == ["hello world", "return x;\nhello"]
    assert batch.truncated.tolist() == [False, True]
    assert torch.all(batch.behaviour_logprobs[0, : len(a)] == -0.5) and batch.behaviour_logprobs[1, len(b):].abs().sum() == 0
    assert [len(s) for s in batch.spans] == [len(a), len(b)] and batch.spans[1][-1][1] == len(batch.texts[1])
