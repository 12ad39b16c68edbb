"""The learned token reward model scorer, on a tiny random-init checkpoint built locally."""
import threading

import pytest
import torch

from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.scorers.model import ModelOptions, ModelScorer, _to_scores
from botgrpo.reward_server.service import ScoringService
from botgrpo.reward_server.settings import ServerSettings
from botgrpo.reward_server.spans import char_scores, token_minima
from botgrpo.services.queue import WorkItem
from botgrpo.trainer.models.tiny import save_token_classifier

TEXTS = ["First 3 * 4 = 12. Then 12 + 5 = 17. So \\boxed{17}.", "export default function A() { return <p>hi</p>; }",
         "the answer is 42", "x = 1 + 1"] * 10


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return save_token_classifier(tmp_path_factory.mktemp("rm"), TEXTS, num_labels=1)


@pytest.fixture(scope="module")
def scorer(checkpoint):
    s = ModelScorer(str(checkpoint), max_batch=8, max_wait_ms=20)
    yield s
    s.close()


def test_scores_are_bounded_and_cover_the_model_tokens(scorer):
    text = TEXTS[0]
    [result] = scorer.score_batch([Rollout(text)], ModelOptions())
    assert -1 <= result.score <= 1 and result.passed is None
    assert result.details["model_tokens"] == len(result.local) > 3
    assert all(-1 <= s.score <= 0 for s in result.local)  # l = (s - 1) / 2
    chars = char_scores(result.local, result.local_default, len(text))
    assert all(-1 <= c <= 1 for c in chars)


def test_caller_tokens_get_the_minimum_of_the_model_tokens_they_cover(scorer):
    text = TEXTS[0]
    [result] = scorer.score_batch([Rollout(text)], ModelOptions())
    whole = token_minima(char_scores(result.local, result.local_default, len(text)), [(0, len(text))], 0.0)[0]
    assert whole == pytest.approx(min(s.score for s in result.local))


def test_batching_does_not_change_scores(scorer):
    single = [scorer.score_batch([Rollout(t)], ModelOptions())[0] for t in TEXTS[:4]]
    batched = scorer.score_batch([Rollout(t) for t in TEXTS[:4]], ModelOptions())
    for a, b in zip(single, batched):
        assert [s.start for s in a.local] == [s.start for s in b.local]
        assert [s.score for s in a.local] == pytest.approx([s.score for s in b.local], abs=1e-5)


def test_concurrent_clients_share_forward_passes(scorer):
    before = scorer.batcher.batches
    results, threads = {}, []
    for i in range(16):
        t = threading.Thread(target=lambda i=i: results.__setitem__(i, scorer.score_batch([Rollout(TEXTS[i])], ModelOptions())))
        threads.append(t)
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 16
    assert scorer.batcher.batches - before < 16  # dynamic batching merged requests


def test_label_reductions():
    assert _to_scores(torch.tensor([[[0.0], [100.0]]])).tolist() == [[0.0, 1.0]]
    two = _to_scores(torch.tensor([[[0.0, 0.0], [10.0, -10.0]]]))
    assert two[0, 0].item() == pytest.approx(0.0) and two[0, 1].item() == pytest.approx(-1.0)


def test_service_offers_model_task_only_when_configured(checkpoint):
    assert "model" not in ScoringService(ServerSettings()).tasks()
    service = ScoringService(ServerSettings(model_path=str(checkpoint)))
    try:
        assert "model" in service.tasks()
        import asyncio
        item = WorkItem("b", 0, {"task": "model", "options": {}, "rollout": {"id": "x", "completion": "x = 1 + 1",
                                                                              "token_offsets": [[0, 1], [1, 9]]},
                                   "return_offsets": True})
        [wire] = asyncio.run(service.handle([item]))
        assert [list(span) for span in wire.token_offsets] == [[0, 1], [1, 9]] and len(wire.token_scores) == 2
    finally:
        service.close()


def test_missing_checkpoint_is_a_clear_error():
    with pytest.raises(ValueError, match="model_path"):
        ModelScorer(None)
