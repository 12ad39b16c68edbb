"""``botgrpo score --task react|math FILE``: judge completions and show per-token heat.

FILE is either one completion as plain text, or JSON lines of rollouts
(``{"completion": ..., "reference": {...}, "prompt": ...}``). Tokens are the server's own
split (words with their leading whitespace) unless a JSON line carries ``token_offsets``.

``--screenshot out.png`` (react, ``-o level=render``) writes the rendered component as a PNG
taken in headless Chromium; with several rollouts, ``out-1.png``, ``out-2.png``, ...
"""
from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from botgrpo.reward_server.service import RequestRejected, ScoringService
from botgrpo.reward_server.settings import load_server_settings
from botgrpo.sandbox.toolchain import ToolchainError
from botgrpo.services.schemas import Result, RewardRequest


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="a completion (text) or rollouts (.jsonl)")
    parser.add_argument("--task", required=True, help="react, math, or another task the server would serve "
                                                      "(judge with BOTGRPO_JUDGE_URL set, model with BOTGRPO_MODEL_PATH)")
    parser.add_argument("--option", "-o", action="append", default=[], metavar="KEY=VALUE",
                        help="scorer option, e.g. -o level=typecheck (repeatable)")
    parser.add_argument("--reference", default=None, metavar="JSON",
                        help='reference for a plain-text FILE, e.g. \'{"answer": "42"}\'')
    parser.add_argument("--json", action="store_true", help="print results as JSON lines instead of heat")
    parser.add_argument("--screenshot", type=Path, default=None, metavar="PNG",
                        help="react at -o level=render: write the rendered component as a PNG here")


def _options(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--option expects KEY=VALUE, got {pair!r}")
        out[key] = yaml.safe_load(value)
    return out


def _rollouts(path: Path, reference: str | None) -> list[dict[str, Any]]:
    """The file's rollouts as the REST API takes them."""
    text = path.read_text()
    if path.suffix != ".jsonl":
        return [{"id": "1", "completion": text, "reference": json.loads(reference) if reference else None}]
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
                rows.append({"id": str(n), "completion": row["completion"], "prompt": row.get("prompt"),
                             "reference": row.get("reference"), "token_offsets": row.get("token_offsets")})
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise SystemExit(f"{path}:{n}: not a rollout ({exc})") from None
    return rows


def heat(completion: str, offsets, scores) -> Text:
    """The completion with each token's background coloured by its score (red -1 .. green +1)."""
    text = Text()
    for (start, end), score in zip(offsets, scores):
        level = int(round(min(1.0, abs(score)) * 160))
        colour = f"rgb({60 + level},40,40)" if score < 0 else f"rgb(40,{60 + level},40)"
        text.append(completion[start:end], style=f"on {colour}")
    return text


def run(args: argparse.Namespace) -> int:
    """Score the file as the server would (its settings from ``BOTGRPO_*``, its checks, its
    results), in this process: no server, no queue."""
    console = Console()
    options = _options(args.option)
    if args.screenshot is not None:
        options["screenshot"] = True
    try:
        request = RewardRequest.model_validate({"task": args.task, "options": options, "return_offsets": True,
                                                "rollouts": _rollouts(args.file, args.reference)})
    except ValidationError as exc:
        raise SystemExit(f"botgrpo score: {exc}") from None
    service = ScoringService(load_server_settings())  # the server's settings (BOTGRPO_*), its allow list included
    try:
        if request.task in service.tasks():  # a misconfigured scorer (an allowed module not installed) stops here
            service.scorer(request.task)
        results = service.score(request)
    except ToolchainError as exc:
        raise SystemExit(f"botgrpo score: {exc}") from None
    except RequestRejected as exc:
        raise SystemExit(f"botgrpo score: {exc.detail}") from None
    finally:
        service.close()
    if args.screenshot is not None:
        _write_screenshots(args.screenshot, results, Console(stderr=True))
    for rollout, result in zip(request.rollouts, results):
        if args.json:
            if args.screenshot is not None:
                result.details.pop("screenshot_png", None)
            print(result.to_json().decode())
            continue
        verdict = "PASS" if result.passed else "FAIL" if result.ok else "UNSCORED"
        console.rule(f"{verdict}  outcome {result.score:+.2f}  ({result.error or result.details.get('reason', '')})")
        console.print(heat(rollout.completion, result.token_offsets, result.token_scores))
        for key in ("errors", "spec_violations", "steps", "lint"):
            if result.details.get(key):
                console.print(f"[bold]{key}[/]: {result.details[key]}")
        render = result.details.get("render")
        if render:
            console.print(f"[bold]render[/]: {render['status']} {render.get('message') or ''} "
                          f"(text: {render.get('text', '')[:80]!r})")
    return 0


def _write_screenshots(path: Path, results: list[Result], console: Console) -> None:
    """One PNG per rollout that rendered: PATH itself for one rollout, PATH-<n> for several."""
    many = len(results) > 1
    for n, result in enumerate(results, 1):
        target = path.with_name(f"{path.stem}-{n}{path.suffix or '.png'}") if many else path
        png = result.details.get("screenshot_png")
        if png:
            target.write_bytes(base64.b64decode(png))
            console.print(f"screenshot: {target}")
        else:
            reason = result.details.get("screenshot_error") or (result.details.get("render") or {}).get("message") \
                or result.details.get("reason", "not rendered")
            console.print(f"no screenshot for rollout {n}: {reason}")
