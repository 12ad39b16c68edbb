"""``botgrpo bench NAME [ARGS...]``: run ``benchmarks/NAME.py`` with its own arguments."""
from __future__ import annotations

import argparse
import importlib
import pkgutil

import benchmarks


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if not m.name.startswith("_"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=available(), help="benchmark to run")
    parser.add_argument("bench_args", nargs=argparse.REMAINDER, help="arguments passed to the benchmark")


def run(args: argparse.Namespace) -> int:
    importlib.import_module(f"benchmarks.{args.name}").main(args.bench_args)
    return 0
