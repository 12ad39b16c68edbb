"""An LLM (or VLM) judge behind any OpenAI-compatible chat endpoint: the rubric prompts, a
strict client with timeouts, retries and a content-keyed cache, and a tiny local server for
tests and offline runs (:mod:`tests.judge_server`)."""
