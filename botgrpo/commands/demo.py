"""``botgrpo demo``: the whole system on one machine — reward server, policy, RL.

``--model`` picks a demo from :data:`DEMOS`:

* ``tiny`` (default): synthetic React tasks and a tiny policy built from scratch (warm-started
  by a short supervised pass), BoT-GRPO (or ``--method grpo`` ...) on the React ``build`` task
  with the spec check; compile and compile-and-spec rates on held-out prompts, first versus last.
* ``smollm2``: the real SmolLM2-135M-Instruct (``make smollm2``) learns ``a + b`` with the
  ``math`` scorer, vLLM rollouts when vLLM is importable (``.venv-vllm/bin/botgrpo demo --model
  smollm2``), held-out success before, during and after, about 15 minutes on a 2-core CPU.

Each demo's settings (a dataclass) become flags; a flag of another demo is refused.
``--toy`` instead prints the advantage estimators side by side on one hand-made group.
"""
from __future__ import annotations

import argparse
import importlib
import shutil
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from botgrpo.trainer.algo.presets import PRESETS

TYPES = {"int": int, "float": float, "str": str, "bool": bool}
HANDLED = ("out_dir", "method")  # --out and --method, shared by every demo


@dataclass(frozen=True)
class Demo:
    help: str
    module: str     # botgrpo.<module>: run(settings, log=, console=) -> summary; report(console, settings, summary)
    settings: str   # the settings dataclass in that module

    def load(self):
        return importlib.import_module(f"botgrpo.{self.module}")

    def settings_class(self):
        return getattr(self.load(), self.settings)


DEMOS: dict[str, Demo] = {
    "tiny": Demo("a 0.7M policy from scratch on React build + spec (minutes)", "demo", "DemoSettings"),
    "smollm2": Demo("SmolLM2-135M-Instruct learns a + b (make smollm2; about 15 min)", "real_demo",
                      "SmolLM2DemoSettings"),
}


def _settings_fields() -> dict[str, tuple[type, dict[str, Any]]]:
    """Every demo's settings field -> (its type, {demo: default})."""
    found: dict[str, tuple[type, dict[str, Any]]] = {}
    for name, demo in DEMOS.items():
        for f in fields(demo.settings_class()):
            if f.name in HANDLED or f.type not in TYPES:
                continue
            kind, defaults = found.setdefault(f.name, (TYPES[f.type], {}))
            if kind is not TYPES[f.type]:
                raise TypeError(f"demo setting {f.name} is {kind.__name__} in one demo and {f.type} in {name}")
            defaults[name] = f.default
    return found


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="tiny", choices=sorted(DEMOS),
                        help="; ".join(f"{k}: {r.help}" for k, r in DEMOS.items()) + " (default tiny)")
    parser.add_argument("--method", default="bot_grpo", choices=sorted(PRESETS), help="method preset (default bot_grpo)")
    parser.add_argument("--out", default=None, help="output directory (default: runs/demo, runs/demo-smollm2)")
    for name, (kind, defaults) in _settings_fields().items():
        shown = ", ".join(f"{demo} {value!r}" for demo, value in defaults.items())
        flag = "--" + name.replace("_", "-")
        if kind is bool:
            parser.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=None,
                                help=f"default: {shown}")
        else:
            parser.add_argument(flag, dest=name, type=kind, default=None, help=f"default: {shown}")
    parser.add_argument("--fresh", action="store_true", help="tiny: rebuild the warm-started policy")
    parser.add_argument("--toy", action="store_true", help="only show the estimators on a toy group")


def settings_from(args: argparse.Namespace):
    """The chosen demo's settings from the flags; a flag that is not one of its settings is refused."""
    demo = DEMOS[args.model]
    cls = demo.settings_class()
    own = {f.name for f in fields(cls)}
    given = {name: getattr(args, name) for name in _settings_fields() if getattr(args, name, None) is not None}
    foreign = sorted(name for name in given if name not in own)
    if foreign:
        flags = ", ".join("--" + name.replace("_", "-") for name in foreign)
        raise SystemExit(f"botgrpo demo --model {args.model}: {flags} not a setting of this demo "
                         f"(its settings: {', '.join(sorted(own - set(HANDLED)))})")
    if args.fresh and args.model != "tiny":
        raise SystemExit(f"botgrpo demo --model {args.model}: --fresh applies to the tiny demo's warm start only")
    extra = {"out_dir": args.out} if args.out else {}
    return cls(method=args.method, **extra, **given)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    console = Console()
    if args.toy:
        from botgrpo.commands.toy import show
        show(console)
        return 0
    settings = settings_from(args)
    module = DEMOS[args.model].load()
    if args.fresh:
        shutil.rmtree(Path(settings.out_dir) / f"warm-{settings.warm_key()}", ignore_errors=True)
    console.rule(f"BoT-GRPO demo ({args.model}): {DEMOS[args.model].help}")
    def log(message: str) -> None:  # one line per message, verbatim (no wrapping, no markup: logs are grepped)
        console.print(message, soft_wrap=True, markup=False, highlight=False)

    summary = module.run(settings, log=log, console=console)
    module.report(console, settings, summary)
    return 0
