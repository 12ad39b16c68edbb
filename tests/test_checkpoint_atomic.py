"""A checkpoint counts only once its state file is whole (found by botgrpo compare's resume
test: a cell killed while saving left a torn state file that every later resume died on)."""
from pathlib import Path

import pytest
import torch

from botgrpo.trainer.run import checkpoint
class Named:
    def save_pretrained(self, path, state_dict=None):
        Path(path, "config.json").write_text("{}")

    def state_dict(self):
        return {}


def save(root: Path, step: int) -> Path:
    return checkpoint.save(root, step, Named(), Named(), {}, {}, Named(), {"data": {}})


def test_a_checkpoint_killed_while_saving_its_state_is_not_the_latest(tmp_path, monkeypatch):
    first = save(tmp_path, 2)
    real = torch.save

    def torn(obj, target):  # half the bytes on disk, then the process dies
        real(obj, target)
        Path(target).write_bytes(Path(target).read_bytes()[:20])
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", torn)
    with pytest.raises(KeyboardInterrupt):
        save(tmp_path, 4)
    assert (tmp_path / "checkpoint-4").exists() and checkpoint.latest(tmp_path) == first
    monkeypatch.setattr(torch, "save", real)
    assert checkpoint.latest(tmp_path) == first and save(tmp_path, 4) == checkpoint.latest(tmp_path)
    assert torch.load(tmp_path / "checkpoint-4" / checkpoint.STATE_FILE, weights_only=False)["step"] == 4
