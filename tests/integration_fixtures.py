"""Fixtures the framework integrations' tests share: a live reward server and a tiny tokenizer
that splits math completions into many tokens (import them into a test module to use them)."""
from __future__ import annotations

import pytest

from tests.live_server import LiveServer


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = LiveServer(tmp_path_factory.mktemp("srv"), env={"BOTGRPO_WARM_SCORERS": "false"})
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def tokenizer():
    from botgrpo.trainer.models.tiny import train_tokenizer
    return train_tokenizer(["Compute 3 * 4 = 12, 12 + 2 = 15, so \\boxed{12}. 2 + 2 = 5 wrong\n"] * 30, vocab_size=300)
