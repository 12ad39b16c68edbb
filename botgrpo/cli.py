"""The ``botgrpo`` console entry point: one subcommand per job, looked up in a registry.

Each subcommand is a module under :mod:`botgrpo.commands` exposing ``add_arguments(parser)``
and ``run(args) -> int``, imported only when that command runs.
"""
from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass(frozen=True)
class Command:
    help: str
    module: str   # botgrpo.commands.<module>

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        self._load().add_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        return self._load().run(args)

    def _load(self):
        return importlib.import_module(f"botgrpo.commands.{self.module}")


COMMANDS: dict[str, Command] = {
    "serve": Command("run the token-reward HTTP server", module="serve"),
    "worker": Command("consume the Redis rollout stream and score", module="worker"),
    "train": Command("train a policy with BoT-GRPO or a baseline", module="train"),
    "score": Command("score completions from a file and show per-token heat", module="score"),
    "eval": Command("evaluate a policy: compile rate per level, pass@k", module="eval"),
    "demo": Command("the whole system on one machine: reward server, a policy, BoT-GRPO (--model tiny: React from "
                    "scratch; --model smollm2: a real pretrained model on arithmetic)", module="demo"),
    "setup": Command("install the sandbox's compilers from their lockfile and report what the host provides",
                     module="setup"),
    "compare": Command("run a pre-registered comparison of training configs (arms x seeds) and report it: exact "
                       "paired tests, paired intervals, power from pilots", module="compare"),
    "convert-gguf": Command("convert a GGUF file (default: the bundled SmolLM2-135M-Instruct) into a checkpoint",
                            module="convert_gguf"),
}


# which extra brings a third-party module (pyproject's optional-dependencies)
EXTRA_OF = {**dict.fromkeys(("fastapi", "starlette", "uvicorn", "redis", "math_verify", "prometheus_client"), "server"),
            **dict.fromkeys(("torch", "transformers", "matplotlib"), "train")}


def build_parser(only: Optional[str] = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that command's arguments are loaded (the others' modules,
    and the extras they need, stay unimported: ``botgrpo serve`` works without torch)."""
    parser = argparse.ArgumentParser(prog="botgrpo", description="BoT-GRPO: token-level reward RL for LLM reasoning.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, command in COMMANDS.items():
        subparser = sub.add_parser(name, help=command.help, description=command.help)
        if only is None or name == only:
            command.add_arguments(subparser)
    return parser


def extra_arguments(command: Optional[str]) -> list[str]:
    """``BOTGRPO_<COMMAND>_ARGS`` (e.g. ``BOTGRPO_TRAIN_ARGS="--steps 2"``): shell words appended to
    that command's arguments, so they win over the file and the flags. It shrinks a documented
    command without editing it (tests/test_docs_commands.py runs the docs this way); said on stderr."""
    if command not in COMMANDS:
        return []
    name = f"BOTGRPO_{command.upper().replace('-', '_')}_ARGS"
    extra = shlex.split(os.environ.get(name, ""))
    if extra:
        print(f"botgrpo {command}: {name} adds {shlex.join(extra)}", file=sys.stderr)
    return extra


def main(argv: Optional[Sequence[str]] = None) -> int:
    from botgrpo.services.settings import SettingsError
    from botgrpo.trainer.run.progress import quiet_third_party

    quiet_third_party()
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    argv += extra_arguments(chosen)
    try:
        args = build_parser(chosen if chosen in COMMANDS else "").parse_args(argv)
        return COMMANDS[args.command].run(args)
    except SettingsError as exc:  # bad configuration: a message, not a traceback
        print(f"botgrpo {chosen}: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # an extra this install lacks: say which
        extra = EXTRA_OF.get((exc.name or "").split(".")[0])
        if extra is None:
            raise
        print(f"botgrpo {chosen}: needs the [{extra}] extra (no module {exc.name!r}): "
              f"pip install 'botgrpo[{extra}]' (or 'botgrpo[all]')", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
