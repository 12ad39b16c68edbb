"""``botgrpo serve``: the reward server (in-process queue, or Redis with ``REDIS_URL``).

The first line it prints names the compiler sandbox's isolation layers on this host, active and
missing; a missing filesystem or privilege layer (no bubblewrap) adds a warning naming what to
install, and a layer listed in ``sandbox_require`` that the host lacks stops it before it listens.
"""
from __future__ import annotations

import argparse
import gc
import sys

from botgrpo.reward_server.settings import isolation_report, load_server_settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="YAML file; its `server:` section holds ServerSettings fields")
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8000)")
    parser.add_argument("--redis-url", help="Redis URL for the rollout queue (else REDIS_URL; unset: in-process)")
    parser.add_argument("--workers", type=int, help="in-process scoring tasks (embedded mode)")
    parser.add_argument("--log-level", default="info")


def isolation_line(report: dict) -> str:
    """``sandbox isolation: a, b, ... (missing: c, d)`` for the start-up line."""
    missing = ", ".join(report["missing"]) or "none"
    return f"sandbox isolation: {', '.join(report['active']) or 'none'} (missing: {missing})"


def tune_gc() -> None:
    """Keep the garbage collector's pauses short under big responses (it holds the GIL, so a
    pause is a pause of /healthz too). A 100,000-token result is built from about as many small
    containers; with the default thresholds they reach the oldest generation before they are
    freed and trigger full collections, each a scan of everything alive, the modules included
    (0.2-0.9 s each here). So: what is alive at start-up is frozen out of those scans, and
    young containers get a larger allowance, so that most die before their first collection."""
    gc.freeze()
    gc.set_threshold(100_000, 20, 100)


def announce_isolation(command: str, settings, details: str) -> bool:
    """Print ``botgrpo <command>: <isolation line><details>`` (and a warning naming what to
    install where layers are missing); False, with the reason on stderr, when a required layer
    is missing and the command must not start."""
    report = isolation_report(settings)
    if report["error"]:
        print(f"botgrpo {command}: cannot start: {report['error']}; sandbox_require={settings.sandbox_require} "
              f"(set BOTGRPO_SANDBOX_REQUIRE=auto to run with what this host has, and a warning)", file=sys.stderr,
              flush=True)
        return False
    print(f"botgrpo {command}: {isolation_line(report)}{details}", flush=True)
    if report["hint"]:
        print(f"botgrpo {command}: WARNING: {report['hint']}", file=sys.stderr, flush=True)
    return True


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from botgrpo.reward_server.app import create_app

    settings = load_server_settings(args.config, overrides={
        "host": args.host, "port": args.port, "redis_url": args.redis_url, "workers": args.workers})
    mode = f"Redis queue at {settings.redis_url}" if settings.redis_url else "in-process queue and workers"
    where = " (compiles run in `botgrpo worker`)" if settings.redis_url else ""
    if not announce_isolation("serve", settings, f"{where}; {mode}; auth {'on' if settings.api_key else 'off'}; "
                                                 f"http://{settings.host}:{settings.port}/docs"):
        return 2
    app = create_app(settings)
    tune_gc()
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=args.log_level)
    return 0
