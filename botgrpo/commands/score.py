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

import yaml
from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from botgrpo.reward_server.scorers import OPTIONAL_SCORERS, SCORERS, create_scorer
from botgrpo.reward_server.scorers.base import Rollout
from botgrpo.reward_server.composition import compose
from botgrpo.reward_server.spans import check_offsets, default_split


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="a completion (text) or rollouts (.jsonl)")
    parser.add_argument("--task", required=True, choices=sorted({*SCORERS, *OPTIONAL_SCORERS}))
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


def _rollouts(path: Path, reference: str | None) -> list[tuple[Rollout, list | None]]:
    text = path.read_text()
    if path.suffix != ".jsonl":
        return [(Rollout(text, reference=json.loads(reference) if reference else None), None)]
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
                rows.append((Rollout(row["completion"], row.get("prompt"), row.get("reference")), row.get("token_offsets")))
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
    console = Console()
    rows = _rollouts(args.file, args.reference)
    scorer = create_scorer(args.task)
    raw_options = _options(args.option)
    if args.screenshot is not None:
        if "screenshot" not in scorer.Options.model_fields:
            raise SystemExit(f"botgrpo score: --screenshot needs a task that renders (react), not {args.task!r}")
        raw_options["screenshot"] = True
    try:
        try:
            options = scorer.Options.model_validate(raw_options)
        except ValidationError as exc:
            raise SystemExit(f"botgrpo score: bad --option for task {args.task!r}: {exc}") from None
        results = scorer.score_batch([r for r, _ in rows], options)
    finally:
        getattr(scorer, "close", lambda: None)()
    if args.screenshot is not None:
        _write_screenshots(args.screenshot, results, Console(stderr=True))
    for (rollout, offsets), result in zip(rows, results):
        offsets = offsets or default_split(rollout.completion)
        problem = check_offsets(offsets, len(rollout.completion))
        if problem:
            raise SystemExit(problem)
        scores = compose(result, len(rollout.completion), offsets, options.local_weight)
        if args.json:
            details = {k: v for k, v in result.details.items() if k != "screenshot_png" or args.screenshot is None}
            print(json.dumps({"score": result.score, "passed": result.passed, "token_offsets": offsets,
                              "token_scores": scores, "details": details, "error": result.error}))
            continue
        verdict = "UNSCORED" if result.error else "PASS" if result.passed else "FAIL"
        console.rule(f"{verdict}  outcome {result.score:+.2f}  ({result.error or result.details.get('reason', '')})")
        console.print(heat(rollout.completion, offsets, scores))
        for key in ("errors", "spec_violations", "steps", "lint"):
            if result.details.get(key):
                console.print(f"[bold]{key}[/]: {result.details[key]}")
        render = result.details.get("render")
        if render:
            console.print(f"[bold]render[/]: {render['status']} {render.get('message') or ''} "
                          f"(text: {render.get('text', '')[:80]!r})")
    return 0


def _write_screenshots(path: Path, results, console: Console) -> None:
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
