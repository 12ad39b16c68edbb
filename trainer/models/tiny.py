"""Tiny local models and tokenizers, built from scratch (no hub): for tests, demos, benchmarks.

A byte-level BPE tokenizer trained on the fly (it has character offsets, so token alignment
works exactly as with a real model) and random-init configs of real architectures, saved with
``save_pretrained`` so everything downstream loads them like any Hugging Face checkpoint.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]


def train_tokenizer(texts: Iterable[str], vocab_size: int = 512):
    """A ``PreTrainedTokenizerFast`` (byte-level BPE) trained on ``texts``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(list(texts), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")


def save_token_classifier(path: str | Path, texts: Iterable[str], *, num_labels: int = 1, hidden: int = 32,
                          layers: int = 2, seed: int = 0) -> Path:
    """A random-init Qwen2 token classifier (``num_labels=1``: a value head) and its tokenizer."""
    import torch
    from transformers import AutoModelForTokenClassification, Qwen2Config

    path = Path(path)
    tokenizer = train_tokenizer(texts)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=hidden * 2,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=512, num_labels=num_labels, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    model = AutoModelForTokenClassification.from_config(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
