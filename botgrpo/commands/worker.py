"""``botgrpo worker``: consume the Redis rollout stream and score (run as many as you like)."""
from __future__ import annotations

import argparse
import asyncio

from botgrpo.reward_server.settings import load_server_settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="YAML file; its `server:` section holds ServerSettings fields")
    parser.add_argument("--redis-url", help="Redis URL (else BOTGRPO_REDIS_URL or REDIS_URL)")
    parser.add_argument("--batch-size", type=int, help="stream entries scored at once (default: score_batch setting)")
    parser.add_argument("--claim-idle-ms", type=int, default=30_000,
                        help="reclaim another consumer's entries idle this long (its process died)")
    parser.add_argument("--max-attempts", type=int, default=3, help="deliveries before an entry is dead-lettered")
    parser.add_argument("--consumer", help="consumer name in the group (default: host-pid)")


def run(args: argparse.Namespace) -> int:
    from botgrpo.commands.serve import announce_isolation
    from botgrpo.reward_server.service import ScoringService
    from botgrpo.services.queue import run_worker

    settings = load_server_settings(args.config, overrides={"redis_url": args.redis_url})
    if not settings.redis_url:
        raise SystemExit("botgrpo worker: no Redis URL (pass --redis-url or set REDIS_URL)")
    if not announce_isolation("worker", settings, f"; consuming {settings.redis_url}"):
        return 2
    service = ScoringService(settings)
    if settings.warm_scorers:
        service.warm_up()
    try:
        asyncio.run(run_worker(settings.redis_url, service.handle, consumer=args.consumer,
                               batch_size=args.batch_size or settings.score_batch,
                               claim_idle_ms=args.claim_idle_ms, max_attempts=args.max_attempts,
                               chunk_s=settings.score_chunk_s))
    finally:
        service.close()
    return 0
