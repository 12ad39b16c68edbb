"""The ``math`` scorer: is the final answer equal to ``reference["answer"]``, and which steps broke?

For each completion: extract the final answer (:mod:`botgrpo.reward_server.math.extract`, under the
``extraction`` option: ``latex``, the default, hands a completion without a box to math-verify's
own extraction behind the guard; ``boxed`` reads "answer is X" / the last number; several
different boxes are one multi-part answer only when the reference has that many parts, else a
refused hedge), refuse statement answers (:mod:`botgrpo.reward_server.math.statements`), decide the
cheap cases in this thread (:func:`~reward_server.math.equivalence.quick_verdict`: normalised
equality, the pathological-input guard, exact numbers), send the rest to math-verify inside a
killable worker process (:mod:`botgrpo.sandbox.process_pool`), and check the arithmetic steps exactly
(:mod:`botgrpo.reward_server.math.steps`).

Result:

* ``score`` (the outcome) +1 (equal) / -1 (not equal, refused, timed out, or no answer); a
  rollout without a reference answer cannot be judged: it comes back with ``error`` set (the
  data, not the model, is at fault), which trainers leave out of the loss;
* ``details``: ``answer``, ``answer_span`` ``[start, end)``, ``method`` (how it was extracted),
  ``reason`` (why the verdict), ``steps`` ``[{start, end, ok, text}]`` (``ok`` ``None`` =
  unverified: arithmetic the evaluator cannot value);
* ``local``: the local signal of :mod:`botgrpo.reward_server.math.blame` (option ``local``,
  registry ``LOCAL_SIGNALS``): ``steps`` (default) -1 from the first step not verified right
  (wrong or unverified) on (``error_propagation``, default) or on each such step; ``oracle`` -1 on exactly the first line
  that differs from ``reference["chain"]`` (the step-chain task); -1 everywhere when no answer
  is found; the reward recipe (:mod:`botgrpo.services.recipe`) weighs it against the outcome.

Deterministic: the same rollout and options always give the same result (a symbolic
comparison that uses up its ``timeout_s`` of CPU time is judged not equal, however busy the
machine; pick ``timeout_s`` well above the normal cost, a few milliseconds).
"""
from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from botgrpo.reward_server.math.blame import BLAME, LOCAL_SIGNALS, BlameInput
from botgrpo.reward_server.math.equivalence import Verdict, quick_verdict, symbolic_equal, warm_up
from botgrpo.reward_server.math.extract import Extraction, extract_answer
from botgrpo.reward_server.math.statements import reading_reason, reference_parts
from botgrpo.reward_server.math.steps import Step, find_steps
from botgrpo.reward_server.references import MathReference
from botgrpo.reward_server.scorers.base import Rollout, ScoreResult
from botgrpo.sandbox.process_pool import ProcessPool, TaskOutcome, default_pool_size
from botgrpo.services.recipe import RecipeOptions


class MathOptions(RecipeOptions):
    """Per-request options of the ``math`` scorer."""

    model_config = ConfigDict(extra="forbid")

    check_steps: bool = True
    extraction: Literal["boxed", "latex"] = Field(
        "latex", description="where the final answer is read when the completion boxes nothing: 'boxed' "
        "(the last 'answer is X', else the last number) or 'latex' (math-verify's own extraction from the "
        "completion's tail: its last LaTeX expression or 'final answer is'); boxes always win")
    error_propagation: bool = Field(True, description="blame everything from the first wrong step on, "
                                                      "not only the wrong steps")
    timeout_s: float = Field(5.0, gt=0, le=10, description="CPU-time limit of one symbolic comparison (at most 10 s: "
                             "a worker computes that long on each answer that needs it; a busy machine stretches "
                             "it in wall time, up to 5x)")
    cut_off_answers: Literal["refuse", "read"] = Field(
        "refuse", description="a rollout cut off by the token limit (finish_reason 'length'): 'refuse' counts only an "
        "answer boxed or stated ('the answer is X') before the cut; 'read' reads it like any other, as before this "
        "option existed (for replicating the studies that ran so; it rewards whatever the cut fell on)")
    local: str = Field("steps", description=f"local signal, one of {sorted(LOCAL_SIGNALS)}: 'steps' (the steps' own "
                       "arithmetic) or 'oracle' (the first line that differs from reference['chain'])")

    @field_validator("local")
    @classmethod
    def _known_signal(cls, name: str) -> str:
        if name not in LOCAL_SIGNALS:
            raise ValueError(f"unknown local signal {name!r}; choose one of {sorted(LOCAL_SIGNALS)}")
        return name


@dataclass(frozen=True)
class _Prejudged:
    """What is known about one rollout before any symbolic comparison."""

    reference: str | None
    answer: Extraction | None
    verdict: Verdict | None  # None: no reference or no answer
    steps: tuple[Step, ...]


class MathScorer:
    """Scores completions of math problems; see the module docstring for the result."""

    name: ClassVar[str] = "math"
    Options: ClassVar[type[BaseModel]] = MathOptions
    Reference: ClassVar[type[BaseModel]] = MathReference  # checked at request time (reward_server.references)

    def __init__(self, pool: ProcessPool | None = None) -> None:
        self._pool = pool

    def warm_up(self) -> None:
        """Load the symbolic layer (sympy, math-verify) and start the pool with one answer."""
        self.score_batch([Rollout("1 + 1 = 2, \\boxed{2}", reference={"answer": "sqrt(4)"})], MathOptions())

    def score_batch(self, rollouts: Sequence[Rollout], options: BaseModel) -> list[ScoreResult]:
        options = options if isinstance(options, MathOptions) else MathOptions.model_validate(options)
        prejudged = [_prejudge(r, options.check_steps, options.extraction, options.cut_off_answers == "refuse")
                     for r in rollouts]
        verdicts = self._settle(prejudged, options.timeout_s)
        return [_result(r, p, v, options.error_propagation, options.local)
                for r, p, v in zip(rollouts, prejudged, verdicts, strict=True)]

    def _settle(self, prejudged: list[_Prejudged], timeout_s: float) -> list[Verdict | None]:
        """Replace undecided verdicts by the symbolic comparison, run in the process pool."""
        undecided = [
            i for i, p in enumerate(prejudged) if p.verdict is not None and p.verdict.equal is None
        ]
        verdicts = [p.verdict for p in prejudged]
        if not undecided:
            return verdicts
        pool = self._pool or shared_pool()
        jobs = [(prejudged[i].answer.text, prejudged[i].reference, prejudged[i].answer.method == "latex")
                for i in undecided]
        outcomes = pool.map(symbolic_equal, jobs, timeout_s=timeout_s)
        for index, outcome in zip(undecided, outcomes, strict=True):
            verdicts[index] = _symbolic_verdict(outcome)
        return verdicts


# Readings that take whatever comes last. In a completion cut off by the token limit that is where
# the cut fell: a step chain stopped inside ``x = 19 - 3`` was read as the answer ``19 - 3``, and
# math-verify did the policy's last step for it (docs/results/chain/README.md). A box or an
# "answer is" phrase is an answer the model committed to before the cut; these are not.
CUT_OFF_GUESSES = frozenset({"last_number", "latex"})


def _prejudge(rollout: Rollout, check_steps: bool, extraction: str = "latex", refuse_cut_off: bool = True) -> _Prejudged:
    reference = _reference_answer(rollout)
    steps = tuple(find_steps(rollout.completion)) if check_steps and reference is not None else ()
    answer = (extract_answer(rollout.completion, extraction, reference_parts(reference))
              if reference is not None else None)
    if answer is not None and refuse_cut_off and rollout.truncated and answer.method in CUT_OFF_GUESSES:
        committed = extract_answer(rollout.completion, "boxed", reference_parts(reference))  # a phrase, if any
        if committed is None or committed.method in CUT_OFF_GUESSES:
            refusal = f"cut off by the token limit before any answer (a {answer.method} reading is refused)"
            return _Prejudged(reference, answer, Verdict(False, refusal), steps)
        answer = committed
    verdict = quick_verdict(answer.text, reference, answer.method) if answer is not None else None
    if verdict is not None:
        refusal = reading_reason(rollout.completion, answer.method, answer.start, answer.end)
        verdict = Verdict(False, f"refused by guard: {refusal}") if refusal else verdict
    return _Prejudged(reference, answer, verdict, steps)


def _reference_answer(rollout: Rollout) -> str | None:
    answer = (rollout.reference or {}).get("answer")
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        answer = str(answer)
    return answer if isinstance(answer, str) and answer.strip() else None


def _symbolic_verdict(outcome: TaskOutcome) -> Verdict:
    if outcome.timed_out:
        return Verdict(False, "symbolic comparison timed out")
    if not outcome.ok:
        return Verdict(False, f"symbolic comparison failed: {outcome.error}")
    if outcome.value:
        return Verdict(True, "equivalent (math-verify)")
    return Verdict(False, "not equivalent (math-verify)")


def _result(rollout: Rollout, prejudged: _Prejudged, verdict: Verdict | None,
            error_propagation: bool, signal: str = "steps") -> ScoreResult:
    details: dict[str, Any] = {
        "answer": None,
        "answer_span": None,
        "method": None,
        "steps": [
            {"start": s.start, "end": s.end, "ok": s.ok, "text": s.text} for s in prejudged.steps
        ],
    }
    if prejudged.reference is None:
        reason = 'missing reference: rollout.reference["answer"] must be a non-empty string'
        details["reason"] = reason
        return ScoreResult(score=0.0, passed=None, details=details, error=reason)
    answer = prejudged.answer
    if answer is None or verdict is None:
        details["reason"] = "no final answer found"
        return ScoreResult(score=-1.0, passed=False, local_default=BLAME, details=details)
    correct = bool(verdict.equal)
    details.update(
        answer=answer.text, answer_span=[answer.start, answer.end], method=answer.method,
        reason=verdict.reason,
    )
    local = LOCAL_SIGNALS[signal](BlameInput(prejudged.steps, rollout.completion, rollout.reference or {},
                                             error_propagation, rollout.truncated))
    return ScoreResult(score=1.0 if correct else -1.0, passed=correct, local=local, details=details)


_shared: ProcessPool | None = None
_shared_lock = threading.Lock()


def shared_pool() -> ProcessPool:
    """The process-wide verification pool, started on first use (``BOTGRPO_MATH_WORKERS``
    workers, default :func:`~sandbox.process_pool.default_pool_size`)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            size = int(os.environ.get("BOTGRPO_MATH_WORKERS", default_pool_size()))
            _shared = ProcessPool(size, initializer=warm_up, default_timeout_s=5.0)
            atexit.register(_shared.close)
        return _shared
