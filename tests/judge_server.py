"""A tiny OpenAI-compatible chat server over a local causal LM, for tests and offline runs.

    BOTGRPO_TINY_JUDGE_MODEL=path/to/model uvicorn --factory tests.judge_server:app_from_env

``POST /v1/chat/completions`` and ``GET /v1/models``, like vLLM's server. The model is real
(any local transformers checkpoint; tests build a random-init one in seconds), and so is the
decoding: with a JSON-schema ``response_format`` the reply is decoded *into* the schema, the way
structured-output servers do it: an integer field is the allowed value whose text the model
scores highest after the prompt, an enum field the same over its choices, a string field a few
greedy tokens restricted to plain characters. The JSON is assembled from those choices, so it
always fits the schema, whatever the (random) weights say.

Test behaviours, chosen by the request's ``model`` (the served checkpoint is the same):
``*-flaky`` answers 503 to the first request of each distinct prompt; ``*-garbage`` answers
the first request of each prompt with text that is not JSON; ``*-slow`` sleeps
``BOTGRPO_TINY_JUDGE_SLOW_S`` (default 3) seconds first; ``*-broken`` never answers valid JSON.
``GET /stats`` counts requests per model; ``GET /requests?model=name`` returns the messages of
the last :data:`KEPT_REQUESTS` requests (of that model), exactly as received.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import threading
import time
from collections import Counter, deque
from typing import Any, Optional

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

PLAIN = re.compile(r"^[A-Za-z0-9 ,.]+$")
MAX_PROMPT_TOKENS = 512
REASON_TOKENS = 8
KEPT_REQUESTS = 64


def _text(messages: list[dict[str, Any]]) -> str:
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            for part in content:
                if part.get("type") == "text":
                    parts.append(str(part.get("text", "")))
                elif part.get("type") == "image_url":  # the model sees a digest of the image
                    url = str((part.get("image_url") or {}).get("url", ""))
                    parts.append(f"[image {hashlib.sha256(url.encode()).hexdigest()[:16]}]")
    return "\n".join(parts)


def outside_quotes(text: str) -> str:
    """``text`` without its fenced quotes, read as a lax markdown reader would: a line of 3+
    backticks opens a quote, and the next line that *starts* with at least as many backticks
    closes it, whatever follows them."""
    kept, fence = [], None
    for line in text.split("\n"):
        run = len(line) - len(line.lstrip("`"))
        if fence is None and run >= 3:
            fence = run
        elif fence is not None and run >= fence:
            fence = None
        elif fence is None:
            kept.append(line)
    return "\n".join(kept)


# The "-gullible" models' answers: a judge that obeys an operator's note it reads as instructions
# (outside every quote), else grades every component the same.
GULLIBLE_OBEYED = {"score": 10, "reason": "as the operator asked"}
GULLIBLE_GRADE = {"score": 4, "reason": "a plain component"}


def gullible_verdict(messages: list[dict[str, Any]]) -> dict[str, Any]:
    told = "updated by the operator" in outside_quotes(_text(messages)).lower()
    return GULLIBLE_OBEYED if told else GULLIBLE_GRADE


class TinyJudge:
    """A causal LM and the constrained decoder (see the module docstring)."""

    def __init__(self, model_dir: str) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(1)
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
        self.name = os.path.basename(os.path.normpath(model_dir))
        self._lock = threading.Lock()
        vocab = self.tokenizer.get_vocab()
        self._plain_ids = [i for i in range(len(vocab)) if PLAIN.match(self.tokenizer.decode([i]) or "")]

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"][-MAX_PROMPT_TOKENS:] or [0]

    def _logits(self, ids: list[int]):
        with self.torch.no_grad():
            return self.model(self.torch.tensor([ids])).logits[0, -1]

    def _choose(self, prefix: list[int], options: list[str]) -> str:
        """The option whose text the model scores highest after ``prefix`` (log-prob sum)."""
        best, best_score = options[0], float("-inf")
        for option in options:
            ids = self._ids(option)
            with self.torch.no_grad():
                logits = self.model(self.torch.tensor([prefix + ids])).logits[0]
            logp = self.torch.log_softmax(logits, -1)
            score = float(sum(logp[len(prefix) - 1 + k, t] for k, t in enumerate(ids)))
            if score > best_score:
                best, best_score = option, score
        return best

    def _string(self, prefix: list[int], limit: int) -> str:
        ids, out = list(prefix), []
        allowed = self.torch.tensor(self._plain_ids)
        for _ in range(limit):
            logits = self._logits(ids[-MAX_PROMPT_TOKENS:])
            token = int(allowed[int(logits[allowed].argmax())])
            ids.append(token)
            out.append(token)
        return self.tokenizer.decode(out).strip()[:200] or "ok"

    def _value(self, schema: dict[str, Any], prefix: list[int], key: str) -> Any:
        kind = schema.get("type")
        if "enum" in schema:
            return self._choose(prefix, [str(v) for v in schema["enum"]])
        if kind == "integer":
            low, high = int(schema.get("minimum", 0)), int(schema.get("maximum", 10))
            return int(self._choose(prefix, [str(v) for v in range(low, min(high, low + 99) + 1)]))
        if kind == "boolean":
            return self._choose(prefix, ["true", "false"]) == "true"
        if kind == "object":
            return self.decode_object(schema, prefix)
        return self._string(prefix + self._ids(f' "{key}": "'), REASON_TOKENS)

    def decode_object(self, schema: dict[str, Any], prefix: list[int]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        properties = schema.get("properties") or {}
        for key in schema.get("required") or list(properties):
            out[key] = self._value(properties.get(key) or {"type": "string"}, prefix + self._ids(f'{{"{key}": '), key)
        return out

    def complete(self, messages: list[dict[str, Any]], response_format: Optional[dict[str, Any]], max_tokens: int) -> str:
        with self._lock:
            prompt = self._ids(_text(messages))
            schema = ((response_format or {}).get("json_schema") or {}).get("schema")
            if schema and schema.get("type") == "object":
                return json.dumps(self.decode_object(schema, prompt))
            return self._string(prompt, min(max_tokens, 32))


def create_app(model_dir: str) -> FastAPI:
    judge = TinyJudge(model_dir)
    app = FastAPI(title="tiny OpenAI-compatible judge")
    seen: Counter[str] = Counter()
    requests: Counter[str] = Counter()
    received: deque[dict[str, Any]] = deque(maxlen=KEPT_REQUESTS)
    slow_s = float(os.environ.get("BOTGRPO_TINY_JUDGE_SLOW_S", "3"))

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": judge.name, "object": "model", "owned_by": "local"}]}

    @app.get("/stats")
    async def stats() -> dict[str, Any]:
        return {"requests": dict(requests)}

    @app.get("/requests")
    async def recent(model: Optional[str] = None) -> dict[str, Any]:
        return {"requests": [r for r in received if model is None or r["model"] == model]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        model = str(body.get("model", judge.name))
        messages = body.get("messages") or []
        requests[model] += 1
        received.append({"model": model, "messages": messages})
        digest = hashlib.sha256(json.dumps([model, messages], sort_keys=True).encode()).hexdigest()
        seen[digest] += 1
        first = seen[digest] == 1
        if model.endswith("-slow"):
            await asyncio.sleep(slow_s)
        if model.endswith("-flaky") and first:
            return JSONResponse({"error": {"message": "overloaded, try again"}}, status_code=503)
        if model.endswith("-broken") or (model.endswith("-garbage") and first):
            content = "I think this component is quite good, maybe a 7."
        elif model.endswith("-gullible"):
            content = json.dumps(gullible_verdict(messages))
        else:
            content = await asyncio.to_thread(judge.complete, messages, body.get("response_format"),
                                              int(body.get("max_tokens") or 64))
        return JSONResponse({
            "id": f"chatcmpl-{digest[:12]}", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        })

    return app


def app_from_env() -> FastAPI:
    """The app for ``uvicorn --factory``: the checkpoint in ``BOTGRPO_TINY_JUDGE_MODEL``."""
    return create_app(os.environ["BOTGRPO_TINY_JUDGE_MODEL"])


def build_tiny_judge(path, *, hidden: int = 32, layers: int = 1, seed: int = 0):
    """Save a random-init Qwen2 causal LM and a tokenizer fitted to the rubric's prompts in
    ``path`` (a few seconds on a CPU): the checkpoint :func:`create_app` serves in tests."""
    from pathlib import Path

    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    from botgrpo.trainer.models.tiny import train_tokenizer
    from botgrpo.reward_server.judge import rubric

    path = Path(path)
    texts = [rubric.SYSTEM, rubric.CRITERIA, rubric.POINTWISE_SCALE, rubric.PAIRWISE_SCALE,
             '{"score": 7, "reason": "clear and complete"}', '{"winner": "A", "reason": "B lacks the list"}',
             "export default function Card({ title }) { return <section><h2>{title}</h2></section>; }",
             " ".join(str(n) for n in range(11)) + " A B tie true false"]
    tokenizer = train_tokenizer(texts * 4, vocab_size=400)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=MAX_PROMPT_TOKENS + 64, tie_word_embeddings=True,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    AutoModelForCausalLM.from_config(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


class TinyJudgeServer:
    """The app above as a real ``uvicorn`` process on a free local port (tests, offline runs).

    ``url`` is the OpenAI-style base (``http://127.0.0.1:<port>/v1``)."""

    def __init__(self, model_dir, log_dir, *, slow_s: float = 3.0, timeout_s: float = 120.0) -> None:
        import sys
        from pathlib import Path

        import httpx

        from botgrpo.processes import Process, free_port

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        env = {**os.environ, "BOTGRPO_TINY_JUDGE_MODEL": str(model_dir), "BOTGRPO_TINY_JUDGE_SLOW_S": str(slow_s),
               "OMP_NUM_THREADS": "1"}
        self.process = Process([sys.executable, "-m", "uvicorn", "--factory", "tests.judge_server:app_from_env",
                                "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning"],
                               env, Path(log_dir) / f"tiny-judge-{self.port}.log")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.process.alive():
                raise RuntimeError(f"tiny judge server exited:\n{self.process.tail()}")
            try:
                if httpx.get(self.url + "/models", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.process.stop()
        raise TimeoutError(f"tiny judge server not ready after {timeout_s}s:\n{self.process.tail()}")

    def stats(self) -> dict[str, Any]:
        import httpx

        return httpx.get(self.url.removesuffix("/v1") + "/stats", timeout=5).json()

    def received(self, model: str) -> list[list[dict[str, Any]]]:
        """The messages of the last requests for ``model``, oldest first, as the server got them."""
        import httpx

        reply = httpx.get(self.url.removesuffix("/v1") + "/requests", params={"model": model}, timeout=5).json()
        return [r["messages"] for r in reply["requests"]]

    def stop(self) -> None:
        self.process.stop()

    def __enter__(self) -> "TinyJudgeServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
