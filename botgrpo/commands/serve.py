"""``botgrpo serve``: the reward server (in-process queue, or Redis with ``REDIS_URL``)."""
from __future__ import annotations

import argparse

from reward_server.settings import load_server_settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="YAML file; its `server:` section holds ServerSettings fields")
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8000)")
    parser.add_argument("--redis-url", help="Redis URL for the rollout queue (else REDIS_URL; unset: in-process)")
    parser.add_argument("--workers", type=int, help="in-process scoring tasks (embedded mode)")
    parser.add_argument("--log-level", default="info")


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from reward_server.app import create_app

    settings = load_server_settings(args.config, overrides={
        "host": args.host, "port": args.port, "redis_url": args.redis_url, "workers": args.workers})
    mode = f"Redis queue at {settings.redis_url}" if settings.redis_url else "in-process queue and workers"
    print(f"botgrpo serve: {mode}; auth {'on' if settings.api_key else 'off'}; http://{settings.host}:{settings.port}/docs",
          flush=True)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level=args.log_level)
    return 0
