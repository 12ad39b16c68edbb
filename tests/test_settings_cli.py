"""Settings layering, presets and the CLI surface."""
import subprocess
import sys

import pytest

from botgrpo.cli import COMMANDS, main
from botgrpo.services.settings import SettingsError, load
from botgrpo.trainer.algo.presets import PRESETS, preset
from botgrpo.trainer.algo.settings import AlgorithmSettings


def test_layers_defaults_yaml_env_flags(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("algorithm:\n  estimator: grpo\n  kl_coef: 0.05\n  eps_high: 0.3\n")
    env = {"BOTGRPO_KL_COEF": "0.1", "BOTGRPO_ESTIMATOR_OPTIONS": "{eps: 1.0e-4}"}
    s = load(AlgorithmSettings, cfg, section="algorithm", environ=env, overrides={"eps_high": 0.28, "policy_loss": None})
    assert (s.estimator, s.kl_coef, s.eps_high, s.policy_loss) == ("grpo", 0.1, 0.28, "ppo_clip")
    assert s.estimator_options == {"eps": 1e-4}


def test_bad_values_are_named_with_the_valid_choices(tmp_path):
    with pytest.raises(SettingsError, match=r"estimator: .*unknown advantage estimator 'ppo'.*bot_grpo"):
        load(AlgorithmSettings, environ={}, overrides={"estimator": "ppo"})
    with pytest.raises(SettingsError, match="eps_low"):
        load(AlgorithmSettings, environ={"BOTGRPO_EPS_LOW": "-1"})
    with pytest.raises(SettingsError, match="lerning_rate: Extra inputs are not permitted"):
        load(AlgorithmSettings, environ={}, overrides={"lerning_rate": 1})
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a list\n")
    with pytest.raises(SettingsError, match="must hold a mapping"):
        load(AlgorithmSettings, bad, environ={})
    with pytest.raises(SettingsError, match="cannot read settings file"):
        load(AlgorithmSettings, tmp_path / "missing.yaml", environ={})


def test_presets_are_valid_and_distinct():
    assert set(PRESETS) == {"bot_grpo", "bot_grpo_paper", "grpo", "grpo_token_mean", "dr_grpo", "gspo", "dapo", "pure",
                            "prime", "decoupled"}
    # the default differs from the paper's estimator only in its bound on the normalisation, which
    # is the registry estimator's own default (so bot_grpo means the same without the preset)
    assert preset("bot_grpo").estimator_options == {} and preset("bot_grpo").estimator == "bot_grpo"
    assert preset("bot_grpo").model_copy(update={"estimator": "bot_grpo_paper"}) == preset("bot_grpo_paper")
    # GRPO's row with BoT-GRPO's aggregation differs from GRPO in that alone
    assert preset("grpo").model_copy(update={"aggregation": "token-mean"}) == preset("grpo_token_mean")
    assert preset("dapo").eps_high == 0.28 and preset("gspo").policy_loss == "gspo"
    assert len({p.model_dump_json() for p in PRESETS.values()}) == len(PRESETS)
    copy = preset("grpo")
    copy.kl_coef = 1.0
    assert PRESETS["grpo"].kl_coef == 0.0  # presets are handed out as copies
    with pytest.raises(ValueError, match="unknown method preset 'ppo'.*bot_grpo"):
        preset("ppo")


def test_every_command_has_help():
    for name, command in COMMANDS.items():
        assert command.module and command.help


def test_toy_demo_prints_every_estimator(capsys):
    assert main(["demo", "--toy"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ("bot_grpo", "grpo", "dr_grpo", "rloo", "pure"))


def test_the_advantage_benchmark_runs_small(capsys):
    from benchmarks import advantages
    advantages.main(["--rollouts", "64", "--tokens", "16", "--group", "8", "--repeats", "2", "--naive-groups", "2"])
    assert "bot_grpo / floor" in capsys.readouterr().out


def test_console_script_is_installed():
    out = subprocess.run([sys.executable, "-m", "botgrpo.cli", "--help"], capture_output=True, text=True, check=True)
    assert "serve" in out.stdout and "train" in out.stdout


def test_score_command_react_and_math(tmp_path, capsys):
    from tests.node_toolchain import require_node_toolchain
    require_node_toolchain()
    code = tmp_path / "card.md"
    code.write_text('```tsx\nexport default function Card() {\n  return <p className="x"Back</p>;\n}\n```\n')
    assert main(["score", "--task", "react", str(code), "-o", "level=syntax"]) == 0
    out = capsys.readouterr().out
    assert "FAIL" in out and "Expected" in out
    rollouts = tmp_path / "math.jsonl"
    rollouts.write_text('{"completion": "3 * 4 = 12, so \\\\boxed{12}", "reference": {"answer": "12"}}\n')
    assert main(["score", "--task", "math", str(rollouts), "--json"]) == 0
    import json
    line = json.loads(capsys.readouterr().out.splitlines()[0])
    assert line["passed"] is True and len(line["token_scores"]) == len(line["token_offsets"]) > 0


def test_score_command_rejects_bad_options(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("hello")
    with pytest.raises(SystemExit, match="(?s)invalid options for task 'react'.*colour"):
        main(["score", "--task", "react", str(path), "-o", "colour=red"])


def test_train_names_bad_config_without_a_traceback(tmp_path, capsys):
    assert main(["train", "--model", str(tmp_path / "nope"), "--dataset", str(tmp_path / "d.jsonl")]) == 2
    assert "is not a local Hugging Face model directory" in capsys.readouterr().err
    assert main(["train", "--model", "m", "--dataset", "d", "--set", "rollout.group_size=0"]) == 2
    assert "group_size" in capsys.readouterr().err
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("model: m\ndata: {dataset: d}\nlerning_rate: 1\n")
    assert main(["train", "--config", str(cfg)]) == 2
    assert "lerning_rate" in capsys.readouterr().err


def test_a_text_setting_from_the_environment_is_taken_as_written():
    """YAML would read ``#k3y`` as a comment (an API key of none: auth off), ``null`` as none and
    ``12345`` as a number; numbers and mappings elsewhere are still YAML (issue 34)."""
    from botgrpo.reward_server.settings import ServerSettings
    for key in ("#k3y", "null", "12345", "a:b", "[x]"):
        settings = load(ServerSettings, environ={"BOTGRPO_API_KEY": key, "BOTGRPO_SANDBOX_REQUIRE": "[]"})
        assert settings.api_key.get_secret_value() == key
    assert load(ServerSettings, environ={"BOTGRPO_BOUNDS": "[-2, 2]", "BOTGRPO_SANDBOX_REQUIRE": "[]"}).bounds == (-2, 2)


def test_command_arguments_from_the_environment_come_last(monkeypatch, capsys):
    """``BOTGRPO_<COMMAND>_ARGS`` (the docs' override) is appended to that command only, and said."""
    from botgrpo.cli import extra_arguments
    monkeypatch.setenv("BOTGRPO_TRAIN_ARGS", "--steps 2 --set 'sampling.max_new_tokens=8'")
    monkeypatch.setenv("BOTGRPO_CONVERT_GGUF_ARGS", "--out x")
    assert extra_arguments("train") == ["--steps", "2", "--set", "sampling.max_new_tokens=8"]
    assert "BOTGRPO_TRAIN_ARGS adds --steps 2" in capsys.readouterr().err
    assert extra_arguments("convert-gguf") == ["--out", "x"]
    assert extra_arguments("eval") == [] and extra_arguments("nonsense") == [] and extra_arguments(None) == []
