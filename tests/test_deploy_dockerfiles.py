"""Lint deploy/Dockerfile.*: a small hadolint-like rule set over dockerfile-parse's parse tree."""
import glob
import io
import shlex
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

REPO = Path(__file__).resolve().parents[1]
DOCKERFILES = sorted(p for p in (REPO / "deploy").glob("Dockerfile.*") if p.suffix != ".dockerignore")


def instructions(path: Path) -> list[dict]:
    # fileobj, not path: with a path, the parser expects a directory or a file named "Dockerfile".
    return DockerfileParser(fileobj=io.BytesIO(path.read_bytes())).structure


def stages(path: Path) -> list[list[dict]]:
    """Instructions grouped by build stage (each starting at its FROM)."""
    groups: list[list[dict]] = []
    for ins in instructions(path):
        if ins["instruction"] == "FROM":
            groups.append([])
        if groups:
            groups[-1].append(ins)
    return groups


def shell_commands(run: str) -> list[list[str]]:
    """The simple commands of a RUN line: `a && b; c | d` -> [[a...], [b...], [c...], [d...]]."""
    lexer = shlex.shlex(run, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands, current = [], []
    for token in lexer:
        if token in {"&&", "||", ";", "|"}:
            commands.append(current)
            current = []
        else:
            current.append(token)
    return [c for c in commands + [current] if c]


def runs(path: Path) -> list[str]:
    return [ins["value"] for ins in instructions(path) if ins["instruction"] == "RUN"]


def test_found_both_images():
    assert [p.name for p in DOCKERFILES] == ["Dockerfile.server", "Dockerfile.trainer"]


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
class TestRules:
    def test_base_images_are_pinned(self, path):
        aliases = set()
        for ins in instructions(path):
            if ins["instruction"] != "FROM":
                continue
            image, *rest = ins["value"].split()
            if image not in aliases:  # FROM <earlier stage> needs no tag
                name = image.rsplit("/", 1)[-1]
                assert "@sha256:" in image or (":" in name and not name.endswith(":latest")), image
            if len(rest) == 2 and rest[0].upper() == "AS":
                aliases.add(rest[1])

    def test_runs_as_non_root_before_start(self, path):
        final = stages(path)[-1]
        kinds = [ins["instruction"] for ins in final]
        users = [ins["value"].split(":")[0] for ins in final if ins["instruction"] == "USER"]
        assert users and users[-1] not in {"root", "0"}
        start = min(i for i, kind in enumerate(kinds) if kind in {"CMD", "ENTRYPOINT"})
        assert max(i for i, kind in enumerate(kinds) if kind == "USER") < start

    def test_exec_form_start_commands(self, path):
        for ins in instructions(path):
            if ins["instruction"] in {"CMD", "ENTRYPOINT"}:
                assert ins["value"].lstrip().startswith("["), f"line {ins['startline'] + 1}: use JSON form"

    def test_apt_installs_are_minimal_and_cleaned(self, path):
        for run in runs(path):
            commands = shell_commands(run)
            installs = [c for c in commands if c[:2] == ["apt-get", "install"]]
            for install in installs:
                assert "--no-install-recommends" in install and ("-y" in install or "--yes" in install), run
            if installs:
                assert ["apt-get", "update"] in commands, "update in the same layer as install"
                assert ["rm", "-rf", "/var/lib/apt/lists/*"] in commands, "drop the package lists"

    def test_pip_installs_keep_no_cache(self, path):
        for run in runs(path):
            for command in shell_commands(run):
                if "pip" in command[:3] and "install" in command:
                    assert "--no-cache-dir" in command, run

    def test_npm_uses_the_lockfile(self, path):
        for run in runs(path):
            for command in shell_commands(run):
                assert command[:2] != ["npm", "install"], "npm ci installs exactly the lockfile"

    def test_no_remote_add(self, path):
        for ins in instructions(path):
            if ins["instruction"] == "ADD":
                assert "://" not in ins["value"], "fetch in a RUN with checks, or COPY"

    def test_copy_sources_exist(self, path):
        for ins in instructions(path):
            if ins["instruction"] != "COPY":
                continue
            args = shlex.split(ins["value"])
            if any(a.startswith("--from") for a in args):
                continue  # from another stage, not the build context
            sources = [a for a in args if not a.startswith("--")][:-1]
            for source in sources:
                assert glob.glob(str(REPO / source)), f"COPY {source}: not in the repository"


def test_server_image_is_a_health_checked_service():
    kinds = {ins["instruction"]: ins["value"] for ins in instructions(REPO / "deploy" / "Dockerfile.server")}
    assert "/healthz" in kinds["HEALTHCHECK"]
    assert kinds["EXPOSE"].split() == ["8000"]
    assert "8000" in kinds["CMD"]
    assert any(c[:3] == ["npm", "ci", "--no-audit"] for run in runs(REPO / "deploy" / "Dockerfile.server")
               for c in shell_commands(run)), "the sandbox's node_modules are baked in"
    commands = [c for run in runs(REPO / "deploy" / "Dockerfile.server") for c in shell_commands(run)]
    prepare = commands.index(["node", "lib/libraries.mjs", "prepare"])  # the UI libraries bundled once, from the lockfile
    assert prepare > next(i for i, c in enumerate(commands) if c[:2] == ["npm", "ci"])


def test_trainer_image_starts_the_cli():
    kinds = {ins["instruction"]: ins["value"] for ins in instructions(REPO / "deploy" / "Dockerfile.trainer")}
    assert kinds["ENTRYPOINT"] == '["botgrpo"]'
    assert '".[train,vllm]"' in " ".join(runs(REPO / "deploy" / "Dockerfile.trainer"))


def test_rules_catch_violations(tmp_path):
    bad = tmp_path / "Dockerfile.bad"
    bad.write_text("FROM python:latest\nRUN apt-get update && apt-get install -y curl\n"
                   "RUN pip install .\nCMD botgrpo serve\n")
    rules = TestRules()
    for rule in (rules.test_base_images_are_pinned, rules.test_runs_as_non_root_before_start,
                 rules.test_exec_form_start_commands, rules.test_apt_installs_are_minimal_and_cleaned,
                 rules.test_pip_installs_keep_no_cache):
        with pytest.raises(AssertionError):
            rule(bad)
