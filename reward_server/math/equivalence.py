"""Is an extracted answer equal to the reference? Cheap checks here, sympy in a worker.

The decision is split in two because the two halves have very different costs and risks:

* :func:`quick_verdict` runs in the caller's thread, never imports sympy and takes
  microseconds: normalised string equality (which also lets a pathological answer pass when
  it *is* the reference), the :mod:`.guard` (a refused answer is simply not equal), and exact
  :class:`~fractions.Fraction` comparison of plain numbers. It decides most ordinary answers.
* :func:`symbolic_equal` is everything else (radicals, ``\\pi``, percent, expressions,
  intervals, sets) with math-verify's semantics. It may be slow or hang on input the guard
  did not foresee, so it must only be called inside a killable worker process
  (:mod:`sandbox.process_pool`); :func:`warm_up` is that worker's initializer.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from .guard import guard_reason
from .normalize import normalize_answer
from .numbers import read_number

# A decimal that differs from the other side by more than this (relative) is a different
# number under any rounding math-verify applies (it rounds to 6 places), so it is decided here.
_DECIMAL_SLACK = 1e-4


@dataclass(frozen=True)
class Verdict:
    """``equal`` is ``None`` when only a symbolic comparison can decide."""

    equal: bool | None
    reason: str


def quick_verdict(candidate: str, reference: str) -> Verdict:
    """Decide without sympy when that is safe; otherwise ``Verdict(None, ...)``."""
    normalized, target = normalize_answer(candidate), normalize_answer(reference)
    if not normalized:
        return Verdict(False, "empty answer")
    if normalized == target:
        return Verdict(True, "identical after normalisation")
    try:
        refusal = guard_reason(candidate)
    except Exception as exc:  # noqa: BLE001 - an answer the guard cannot read is not evaluated either
        refusal = f"unreadable answer ({type(exc).__name__})"
    if refusal is not None:
        return Verdict(False, f"refused by guard: {refusal}")
    mine, theirs = read_number(normalized), read_number(target)
    if mine is None or theirs is None:
        return Verdict(None, "needs symbolic comparison")
    if mine.value == theirs.value:
        return Verdict(True, "equal numbers")
    if not (mine.decimal or theirs.decimal):
        return Verdict(False, "different numbers")
    if abs(mine.value - theirs.value) > _DECIMAL_SLACK * max(1, abs(theirs.value)):
        return Verdict(False, "different numbers")
    return Verdict(None, "needs symbolic comparison (rounding)")


def warm_up() -> None:
    """Worker initializer: import math-verify (sympy, latex2sympy) and exercise it once."""
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    symbolic_equal("\\frac{1}{2}", "0.5")


def symbolic_equal(candidate: str, reference: str) -> bool:
    """math-verify's judgement of ``candidate`` against ``reference``. Worker processes only.

    Its own ``SIGALRM`` timeouts are disabled: the pool's deadline replaces them, and they
    would fail outside a main thread anyway.
    """
    from math_verify import parse, verify

    gold = parse(f"${reference}$", parsing_timeout=None)
    answer = parse(f"${candidate}$", parsing_timeout=None)
    if not gold or not answer:
        return False
    return bool(verify(gold, answer, timeout_seconds=None))
