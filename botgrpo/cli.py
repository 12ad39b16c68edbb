"""The ``botgrpo`` console entry point: one subcommand per job, looked up in a registry.

Each subcommand is a module under :mod:`botgrpo.commands` exposing ``add_arguments(parser)``
and ``run(args) -> int``; commands that later work will provide are registered as
:class:`NotYetAvailable` so that ``--help`` shows the whole surface and running them says so.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass(frozen=True)
class Command:
    help: str
    module: Optional[str] = None   # botgrpo.commands.<module>, imported only when run
    pending: Optional[str] = None  # what is missing, for commands not available yet

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        if self.module:
            self._load().add_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        if self.pending:
            print(f"botgrpo {args.command}: not yet available ({self.pending}).", file=sys.stderr)
            return 2
        return self._load().run(args)

    def _load(self):
        return importlib.import_module(f"botgrpo.commands.{self.module}")


COMMANDS: dict[str, Command] = {
    "serve": Command("run the token-reward HTTP server", module="serve"),
    "worker": Command("consume the Redis rollout stream and score", module="worker"),
    "train": Command("train a policy with BoT-GRPO or a baseline", module="train"),
    "score": Command("score completions from a file and show per-token heat", module="score"),
    "eval": Command("evaluate a policy: compile rate per level, pass@k", module="eval"),
    "demo": Command("the whole system on one machine: reward server, tiny policy, BoT-GRPO on React", module="demo"),
    "convert-gguf": Command("convert a GGUF file (default: the bundled SmolLM2-135M-Instruct) into a checkpoint",
                            module="convert_gguf"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="botgrpo", description="BoT-GRPO: token-level reward RL for LLM reasoning.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, command in COMMANDS.items():
        command.add_arguments(sub.add_parser(name, help=command.help, description=command.help))
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    from botgrpo.services.settings import SettingsError

    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command].run(args)
    except SettingsError as exc:  # bad configuration: a message, not a traceback
        print(f"botgrpo {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
