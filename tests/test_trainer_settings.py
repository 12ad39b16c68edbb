"""Method presets carry every behaviour; overriding one axis drops the preset's options for it;
the algorithm settings live in ``trainer/`` and nothing there imports the CLI package."""
import json
from pathlib import Path

import pytest
import torch

from tests.tiny_setup import tiny_config, tiny_math_setup

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return tiny_math_setup(tmp_path_factory.mktemp("tiny"))


def config(**values):
    from botgrpo.trainer.config import TrainConfig
    return TrainConfig(model="m", data={"dataset": "d"}, **values)


def test_dapo_sampling_behaviour_is_preset_fields_not_the_methods_name():
    from botgrpo.trainer.algo.presets import preset
    dapo = preset("dapo")
    assert dapo.dynamic_sampling is True and dapo.overlong_buffer == 0.25 and dapo.overlong_penalty == 1.0
    assert preset("grpo").dynamic_sampling is False and preset("grpo").overlong_buffer == 0.0
    # the setting switches it, whatever the method is called
    assert config(algorithm={"method": "grpo", "dynamic_sampling": True}).algorithm.settings().dynamic_sampling is True
    assert config(algorithm={"method": "dapo", "dynamic_sampling": False}).algorithm.settings().dynamic_sampling is False
    assert config(algorithm={"method": "dapo"}, rollout={"sampling": {"max_new_tokens": 100}}).overlong_zone() == 25
    assert config(algorithm={"method": "grpo", "overlong_buffer": 0.5}, rollout={"sampling": {"max_new_tokens": 100}}).overlong_zone() == 50


def test_a_new_preset_gets_dynamic_sampling_from_its_fields(setup, tmp_path, monkeypatch):
    """A preset registered under another name behaves as its fields say (the name is not consulted)."""
    from tests.test_trainer import _Scripted
    from botgrpo.trainer.run.loop import Trainer
    from botgrpo.trainer.algo.presets import PRESETS, preset
    monkeypatch.setitem(PRESETS, "my_dapo", preset("dapo"))

    class EqualFirstGroup(_Scripted):  # group 0 scores the same everywhere: dynamic sampling drops it
        def submit(self, batch, references, options=None):
            future = super().submit(batch, references, options)
            scored = future.result()
            scored.seq_rewards[: batch.group_size] = 1.0
            scored.token_rewards[: batch.group_size] = torch.where(batch.completion_mask[: batch.group_size], 1.0, 0.0)
            return future

    trainer = Trainer(tiny_config(setup, tmp_path / "run", algorithm={"method": "my_dapo"}, eval={"dataset": None},
                                  log={"plot": False}, steps=1),
                      reward_source=EqualFirstGroup())
    try:
        [record] = trainer.train()
    finally:
        trainer.close()
    assert record["kept_rollouts"] == 16 - 4


def test_overriding_the_estimator_drops_the_presets_estimator_options():
    algo = config(algorithm={"method": "pure", "estimator": "grpo"}).algorithm.settings()
    assert algo.estimator == "grpo" and algo.estimator_options == {}
    kept = config(algorithm={"method": "pure", "estimator": "pure"}).algorithm.settings()  # same estimator: its options stay
    assert kept.estimator_options == {"temperature": 0.1}
    both = config(algorithm={"method": "pure", "estimator": "bot_grpo", "estimator_options": {"eps": 1e-4}}).algorithm.settings()
    assert both.estimator_options == {"eps": 1e-4}


def test_overriding_the_policy_loss_drops_the_presets_clip_range():
    algo = config(algorithm={"method": "gspo", "policy_loss": "ppo_clip"}).algorithm.settings()
    assert (algo.policy_loss, algo.eps_low, algo.eps_high) == ("ppo_clip", 0.2, 0.2)
    assert config(algorithm={"method": "gspo"}).algorithm.settings().eps_high == 4e-4
    assert config(algorithm={"method": "gspo", "policy_loss": "ppo_clip", "eps_high": 0.3}).algorithm.settings().eps_high == 0.3


def test_options_an_estimator_does_not_take_are_refused_before_anything_loads():
    from botgrpo.commands.train import build_config
    from botgrpo.services.settings import SettingsError
    import argparse
    from botgrpo.commands.train import FLAGS
    args = argparse.Namespace(config=None, resume=None, set=["algorithm.estimator_options={temperature: 0.1}"],
                              **{k: None for k in FLAGS})
    args.model, args.dataset, args.estimator = "m", "d", "grpo"
    with pytest.raises(SettingsError, match=r"estimator 'grpo' takes no option 'temperature'.*eps"):
        build_config(args)


def test_pure_preset_with_grpo_estimator_trains(setup, tmp_path):
    """`--method pure --estimator grpo` used to crash after loading the models (temperature leaked)."""
    from tests.test_trainer import _Scripted
    from botgrpo.trainer.run.loop import Trainer
    trainer = Trainer(tiny_config(setup, tmp_path / "run", algorithm={"method": "pure", "estimator": "grpo"},
                                  eval={"dataset": None}, log={"plot": False}, steps=1), reward_source=_Scripted())
    try:
        [record] = trainer.train()
    finally:
        trainer.close()
    assert record["step"] == 1


def test_algorithm_json_records_the_sampling_behaviour(setup, tmp_path):
    from botgrpo.commands.train import describe
    cfg = tiny_config(setup, tmp_path, algorithm={"method": "dapo"})
    saved = cfg.algorithm.settings().model_dump()
    assert saved["dynamic_sampling"] is True and saved["overlong_buffer"] == 0.25
    json.dumps(saved)
    assert "dynamic_sampling=True" in describe(cfg)


def test_a_flat_key_of_the_old_layout_is_refused_with_its_new_place():
    from pydantic import ValidationError
    with pytest.raises(ValidationError, match=r"`kl_coef` is now `algorithm.kl_coef`.*`vllm_sleep` is now `rollout.vllm.sleep`"):
        config(kl_coef=0.1, vllm_sleep=False)
    with pytest.raises(ValidationError, match="`eval_every` is now `eval.every`"):
        config(eval_every=5)
    with pytest.raises(ValidationError, match=r"unknown algorithm field\(s\) \['lr'\]"):
        config(algorithm={"method": "grpo", "lr": 1e-3})


def test_sections_nest_merge_and_write_back_as_read():
    from botgrpo.trainer.config import TrainConfig, merge, nest
    assert nest({"optim.lr": 1e-4, "rollout.vllm.sleep": False, "steps": 3}) == \
        {"optim": {"lr": 1e-4}, "rollout": {"vllm": {"sleep": False}}, "steps": 3}
    assert merge({"optim": {"lr": 1.0, "packing": True}}, {"optim": {"lr": 2.0}}) == {"optim": {"lr": 2.0, "packing": True}}
    cfg = config(algorithm={"method": "pure", "estimator": "grpo"}, optim={"lr": 3e-4})
    dumped = cfg.model_dump()
    assert dumped["algorithm"] == {"method": "pure", "estimator": "grpo"}  # flat, as written
    assert TrainConfig.model_validate(dumped) == cfg  # what a run saves in config.json reads back the same
    assert TrainConfig.model_validate_json(cfg.model_dump_json()).algorithm.settings() == cfg.algorithm.settings()
