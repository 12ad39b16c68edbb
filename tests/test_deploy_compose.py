"""deploy/compose.yaml: valid against the Compose specification, and wired as documented."""
import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from botgrpo.reward_server.settings import ServerSettings

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
REPO = DEPLOY.parent
# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error}
INTERPOLATION = re.compile(r"\$\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def env_example() -> dict[str, str]:
    lines = (DEPLOY / ".env.example").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line.strip() and not line.lstrip().startswith("#"))


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's variable substitution, enough for this file: unset without default -> error."""
    def one(m: re.Match) -> str:
        name, op, arg = m["name"], m["op"], m["arg"]
        if name in env and (env[name] or not (op or "").startswith(":")):
            return env[name]
        if op and op.endswith("-"):
            return arg
        raise KeyError(f"${{{name}}} is unset and has no default")
    return INTERPOLATION.sub(one, value)


def test_matches_compose_specification(compose):
    schema = json.loads((DEPLOY / "schemas" / "compose-spec.json").read_text())
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(compose), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_schema_rejects_a_misspelt_key(compose):
    schema = json.loads((DEPLOY / "schemas" / "compose-spec.json").read_text())
    broken = {**compose, "services": {**compose["services"], "server": {**compose["services"]["server"], "enviroment": {}}}}
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(broken))


def test_every_variable_resolves_from_env_example():
    interpolate((DEPLOY / "compose.yaml").read_text(), env_example())  # raises on an unresolvable one


def test_api_key_is_required_not_defaulted(compose):
    key = compose["services"]["server"]["environment"]["BOTGRPO_API_KEY"]
    assert re.fullmatch(r"\$\{BOTGRPO_API_KEY:\?[^}]+\}", key), "an unset key must stop compose, not disable auth"


def test_redis_persists_the_queue(compose):
    redis = compose["services"]["redis"]
    assert redis["command"][redis["command"].index("--appendonly") + 1] == "yes"
    assert any(v.split(":")[1] == "/data" for v in redis["volumes"])
    assert redis["volumes"][0].split(":")[0] in compose["volumes"]
    assert "healthcheck" in redis


def test_dependencies_wait_for_health(compose):
    services = compose["services"]
    for name, service in services.items():
        for dep, condition in service.get("depends_on", {}).items():
            assert condition == {"condition": "service_healthy"}, f"{name} -> {dep}"
            assert not services[dep].get("healthcheck", {}).get("disable"), f"{dep} has no healthcheck to wait on"
    assert set(services["worker"]["depends_on"]) == {"redis"}
    assert set(services["trainer"]["depends_on"]) == {"server"}


def test_server_and_workers_share_one_image(compose):
    server, worker = compose["services"]["server"], compose["services"]["worker"]
    assert server["image"] == worker["image"] and server["build"] == worker["build"]
    assert server["command"][:2] == ["botgrpo", "serve"] and worker["command"] == ["botgrpo", "worker"]
    assert "/readyz" in " ".join(server["healthcheck"]["test"])
    assert worker["deploy"]["replicas"] >= 1


def test_build_files_exist(compose):
    for name, service in compose["services"].items():
        if "build" in service:
            context = DEPLOY / service["build"]["context"]
            assert context.resolve() == REPO, f"{name}: the Dockerfiles expect the repository root as context"
            assert (context / service["build"]["dockerfile"]).is_file(), name


def test_trainer_reserves_a_gpu_and_is_opt_in(compose):
    trainer = compose["services"]["trainer"]
    [device] = trainer["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]
    assert trainer["profiles"], "a plain `up` must not need a GPU"


def test_images_are_pinned(compose):
    for name, service in compose["services"].items():
        image = service["image"]
        assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), f"{name}: {image}"


SETTINGS_ENV = {f"BOTGRPO_{name.upper()}" for name in ServerSettings.model_fields} | {"REDIS_URL"}


@pytest.mark.parametrize("service", ["server", "worker"])
def test_server_environment_names_real_settings(compose, service):
    unknown = set(compose["services"][service]["environment"]) - SETTINGS_ENV
    assert not unknown, f"{service}: {sorted(unknown)} are not ServerSettings fields"


def test_env_example_botgrpo_names_are_settings():
    # Its other variables (PUBLISH_PORT, TRAIN_DIR) only shape compose.yaml.
    unknown = {name for name in env_example() if name.startswith("BOTGRPO_")} - SETTINGS_ENV
    assert not unknown, sorted(unknown)


def test_server_environment_values_load(compose):
    from botgrpo.reward_server.settings import load_server_settings

    env = env_example()
    for name in ("server", "worker"):
        resolved = {k: interpolate(str(v), env) for k, v in compose["services"][name]["environment"].items()}
        settings = load_server_settings(environ=resolved)
        assert settings.redis_url == "redis://redis:6379/0"
