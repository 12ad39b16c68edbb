"""The ``react`` scorer: does the component compile at the requested level, and does it do
what the prompt asked?

For each completion: extract the code (:mod:`reward_server.react.extract`), compile it in the
sandboxed Node pool (:mod:`sandbox.node_pool`), place the verdict on characters with a token
scheme (:mod:`reward_server.react.schemes`), and, when the rollout's reference carries a
``spec``, check it on the parsed component (:mod:`reward_server.react.spec`) and mix::

    chars = (1 - spec_weight) * compile_chars + spec_weight * spec_chars
    score = (1 - spec_weight) * compile_score + spec_weight * spec_score

``passed`` is the compile verdict; ``details["spec_passed"]`` the spec verdict (None without a
spec). Spec characters: +1 everywhere when met; otherwise -0.2 with -1 on the parts that
violate it (a wrong component name, an element lacking a prop); a missing element has no
place and costs the -0.2 base only.
"""
from __future__ import annotations

import threading
from typing import Any, ClassVar, Literal, Optional, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from reward_server.react.extract import CodeBlock, extract_code
from reward_server.react.schemes import FAIL, FAIL_BASE, PASS, SCHEMES, CompileOutcome
from reward_server.react.spec import Spec, Violation, check_spec
from reward_server.spans import char_scores, mix, result_from_chars
from sandbox.node_pool import CompileResult, IsolationConfig, NodePool

from .base import Rollout, ScoreResult, SpanScore


class ReactOptions(BaseModel):
    """Per-request options of the ``react`` scorer."""

    model_config = ConfigDict(extra="forbid")

    level: Literal["syntax", "build", "typecheck"] = Field("build", description="how far to compile")
    scheme: str = Field("window", description=f"token scheme, one of {sorted(SCHEMES)}")
    blame_lines: int = Field(1, ge=0, le=10, description="lines above a reported error that share its blame")
    spec_weight: float = Field(0.5, ge=0, le=1, description="weight of the spec check where a rollout has a spec")

    @field_validator("scheme")
    @classmethod
    def _known_scheme(cls, name: str) -> str:
        if name not in SCHEMES:
            raise ValueError(f"unknown scheme {name!r}; choose one of {sorted(SCHEMES)}")
        return name


class ReactScorer:
    """Scores React/TSX completions; see the module docstring."""

    name: ClassVar[str] = "react"
    Options: ClassVar[type[BaseModel]] = ReactOptions

    def __init__(self, pool: Optional[NodePool] = None, *, allow: Sequence[str] = (), pool_size: int = 2,
                 timeout_s: float = 5.0, isolation: Optional[IsolationConfig] = None) -> None:
        self._pool = pool
        self._pool_args = dict(size=pool_size, timeout_s=timeout_s, isolation=isolation)
        self._allow = tuple(allow)
        self._lock = threading.Lock()

    @property
    def pool(self) -> NodePool:
        with self._lock:
            if self._pool is None:
                self._pool = NodePool(**self._pool_args).start()
            return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()

    def healthy(self) -> bool:
        return self._pool is None or self._pool.healthy()

    def score_batch(self, rollouts: Sequence[Rollout], options: BaseModel) -> list[ScoreResult]:
        opts = options if isinstance(options, ReactOptions) else ReactOptions.model_validate(options)
        blocks = [extract_code(r.completion) for r in rollouts]
        todo = [i for i, b in enumerate(blocks) if b is not None and b.terminated]
        compiled = dict(zip(todo, self.pool.compile_many([blocks[i].code for i in todo], opts.level, self._allow)))
        return [self._score_one(r, blocks[i], compiled.get(i), opts) for i, r in enumerate(rollouts)]

    def _score_one(self, rollout: Rollout, block: Optional[CodeBlock], compiled: Optional[CompileResult],
                   opts: ReactOptions) -> ScoreResult:
        outcome = _outcome(rollout.completion, block, compiled)
        result = SCHEMES[opts.scheme](outcome, opts.blame_lines)
        result.details = _details(rollout.completion, outcome, block, compiled, opts.level)
        spec = _spec_of(rollout)
        if isinstance(spec, str):  # a malformed spec is the data's fault: say so, judge compile only
            result.details["spec_error"] = spec
            spec = None
        if spec is None:
            result.details["spec_passed"] = None
            return result
        violations = _violations(spec, block, compiled)
        spec_result = _spec_result(violations, block)
        w = opts.spec_weight
        length = len(rollout.completion)
        chars = mix([(1 - w, char_scores(result, length)), (w, char_scores(spec_result, length))])
        details = {**result.details, "spec_passed": not violations,
                   "spec_violations": [v.message for v in violations]}
        return result_from_chars(chars, score=(1 - w) * result.score + w * spec_result.score,
                                 passed=result.passed, details=details)


def _outcome(completion: str, block: Optional[CodeBlock], compiled: Optional[CompileResult]) -> CompileOutcome:
    if block is None:
        return CompileOutcome(len(completion), fatal="no code in the completion")
    if not block.terminated:
        return CompileOutcome(len(completion), block.start, block.code, fatal="unterminated code block (truncated output)")
    assert compiled is not None
    fatal = "compiler timed out" if compiled.timed_out else "compiler crashed" if compiled.crashed else None
    return CompileOutcome(len(completion), block.start, block.code, passed=compiled.ok and not fatal, fatal=fatal,
                          diagnostics=tuple(compiled.diagnostics))


def _details(completion: str, outcome: CompileOutcome, block, compiled, level: str) -> dict[str, Any]:
    """Diagnostics located in the completion (offsets and 1-based lines), not in the code."""
    lines_before = completion.count("\n", 0, outcome.code_start)
    return {
        "level": level,
        "reason": outcome.fatal or ("compiles" if outcome.passed else "compile error"),
        "code_span": [block.start, block.end] if block else None,
        "errors": [{"start": outcome.code_start + d.start, "end": outcome.code_start + d.end, "line": d.line + lines_before,
                    "message": d.message} for d in outcome.diagnostics],
        "compile_s": compiled.elapsed_s if compiled else 0.0,
    }


def _spec_of(rollout: Rollout) -> Spec | str | None:
    raw = (rollout.reference or {}).get("spec")
    if raw is None:
        return None
    try:
        return Spec.model_validate(raw)
    except ValidationError as exc:
        return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())


def _violations(spec: Spec, block: Optional[CodeBlock], compiled: Optional[CompileResult]) -> list[Violation]:
    if block is None or compiled is None or not compiled.summary:
        return [Violation("the code could not be parsed, so the spec cannot be checked")]
    return check_spec(spec, compiled.summary)


def _spec_result(violations: list[Violation], block: Optional[CodeBlock]) -> ScoreResult:
    if not violations:
        return ScoreResult(score=PASS, passed=True, default=PASS)
    offset = block.start if block else 0
    spans = [SpanScore(offset + v.span[0], offset + v.span[1], FAIL) for v in violations if v.span]
    return ScoreResult(score=FAIL, passed=False, spans=spans, default=FAIL_BASE)
