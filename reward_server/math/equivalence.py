"""Is an extracted answer equal to the reference? Cheap checks here, sympy in a worker.

The decision is split in two because the two halves have very different costs and risks:

* :func:`quick_verdict` runs in the caller's thread, never imports sympy and takes
  microseconds: normalised string equality (which also lets a pathological answer pass when
  it *is* the reference), the :mod:`.guard` (a refused answer is simply not equal), and exact
  :class:`~fractions.Fraction` comparison of plain numbers. It decides most ordinary answers.
* :func:`symbolic_equal` is everything else (radicals, ``\\pi``, percent, expressions,
  intervals, sets) with math-verify's semantics. It may be slow or hang on input the guard
  did not foresee, so it must only be called inside a killable worker process
  (:mod:`botgrpo.sandbox.process_pool`); :func:`warm_up` is that worker's initializer.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from .guard import guard_reason
from .normalize import normalize_answer
from .numbers import read_number
from .statements import statement_reason

# a reference written as LaTeX text (delimiters or a box) is parsed as written, like the library's gold
_MATH_DOLLAR = re.compile(r"(?<!\\)\$")  # a math delimiter, not the currency sign \$
_INLINE_DELIMITER = re.compile(r"\$\$|(?<!\\)\$|\\\(|\\\)|\\\[|\\\]")


def drop_broken_inline_math(text: str) -> str:
    """``text`` without its inline math spans (``$...$``, ``\\(...\\)``) that contain a line break:
    math-verify's own suite says they are not math (test_all.py:132-133), so neither its LaTeX
    extraction nor its number fallback may read them. Delimiters pair in reading order."""
    pieces, kept, opened = [], 0, None
    for match in _INLINE_DELIMITER.finditer(text):
        token = match.group()
        if opened is None:
            if token in ("$", "\\("):
                opened = match
            elif token in ("$$", "\\["):
                opened = match
            continue
        closes = {"$": "$", "\\(": "\\)", "$$": "$$", "\\[": "\\]"}[opened.group()]
        if token != closes:
            continue
        if opened.group() in ("$", "\\(") and "\n" in text[opened.end(): match.start()]:
            pieces.append(text[kept: opened.start()])
            kept = match.end()
        opened = None
    pieces.append(text[kept:])
    return " ".join(pieces) if len(pieces) > 1 else text


_LATEX_TEXT = ("$", "\\boxed", "\\[", "\\(", "\\fbox")

# A decimal that differs from the other side by more than this (relative) is a different
# number under any rounding math-verify applies (it rounds to 6 places), so it is decided here.
_DECIMAL_SLACK = 1e-4


@dataclass(frozen=True)
class Verdict:
    """``equal`` is ``None`` when only a symbolic comparison can decide."""

    equal: bool | None
    reason: str


def quick_verdict(candidate: str, reference: str, method: str = "boxed") -> Verdict:
    """Decide without sympy when that is safe; otherwise ``Verdict(None, ...)``.

    ``method`` is the extraction's: a ``hedge`` (several different boxes against a reference
    with fewer parts) is not equal; a ``latex`` region (a whole completion tail for math-verify's
    extraction) is only compared for identity here, its candidates are guarded in the worker."""
    normalized, target = normalize_answer(candidate), normalize_answer(reference)
    if not normalized:
        return Verdict(False, "empty answer")
    if normalized == target:
        return Verdict(True, "identical after normalisation")
    if method == "hedge":
        return Verdict(False, "several different boxed answers (a hedge) for a reference with fewer parts")
    if method == "latex" and read_number(normalized) is None:
        return Verdict(None, "needs math-verify's extraction")
    try:
        refusal = guard_reason(candidate) or statement_reason(candidate, reference)
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


class _Refused(Exception):
    """Raised inside math-verify's parser for a candidate the guard or the statement rules refuse."""


class _AnswerGuard:
    """Wraps math-verify's two converters (LaTeX and plain expressions) so that every string it
    extracts *from an answer* passes :func:`guard_reason` and :func:`statement_reason` before sympy
    sees it. One refusal refuses the whole answer: otherwise the library would fall back to a
    part of it (``\\boxed{13 = 12}`` -> the number ``12``)."""

    def __init__(self) -> None:
        self.reference: str | None = None  # None: parsing the reference, unguarded
        self.refused: str | None = None

    def install(self) -> None:
        import math_verify.parser as parser

        if getattr(parser, "_botgrpo_guarded", False):
            return
        latex, expression = parser.latex2sympy, parser.parse_expr

        def guarded_latex(text, *args, **kwargs):
            self.check(text)
            return latex(text, *args, **kwargs)

        def guarded_expression(text, *args, **kwargs):
            self.check(text)
            return expression(text, *args, **kwargs)

        parser.latex2sympy, parser.parse_expr = guarded_latex, guarded_expression
        parser._botgrpo_guarded = True

    def check(self, text: str) -> None:
        if self.reference is None:
            return
        reason = guard_reason(text) or statement_reason(text, self.reference)
        if reason is not None:
            self.refused = self.refused or reason
            raise _Refused(reason)


_GUARD = _AnswerGuard()


def warm_up() -> None:
    """Worker initializer: import math-verify (sympy, latex2sympy) and exercise it once."""
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    logging.getLogger("latex2sympy2_extended").setLevel(logging.ERROR)
    symbolic_equal("\\frac{1}{2}", "0.5")


def _parse_reference(reference: str):
    from math_verify import parse

    if any(marker in reference for marker in _LATEX_TEXT):
        return parse(reference, parsing_timeout=None)
    return parse(f"${reference}$", parsing_timeout=None) or parse(reference, parsing_timeout=None)


def symbolic_equal(candidate: str, reference: str, whole: bool = False) -> bool:
    """math-verify's judgement of ``candidate`` against ``reference``. Worker processes only.

    ``whole``: ``candidate`` is a completion region for the library's own extraction; otherwise it
    is an extracted answer, read as one LaTeX expression. Every string the library converts from
    the candidate passes the guard and the statement rules (:class:`_AnswerGuard`). Its own
    ``SIGALRM`` timeouts are disabled: the pool's deadline replaces them, and they would fail
    outside a main thread anyway.
    """
    import math_verify.parser as parser
    from math_verify import parse, verify

    _GUARD.install()
    _GUARD.reference, _GUARD.refused = None, None
    gold = _parse_reference(reference)
    parser.parse_latex_cached.cache_clear()  # nothing converted unguarded may be reused
    parser.parse_expr_cached.cache_clear()
    candidate = drop_broken_inline_math(candidate)
    if whole or _MATH_DOLLAR.search(candidate):  # a region, or a box holding text with math in it
        text = candidate
    else:
        text = f"${candidate}$"
    _GUARD.reference = reference
    try:
        answer = parse(text, parsing_timeout=None)
    finally:
        _GUARD.reference = None
        parser.parse_latex_cached.cache_clear()
        parser.parse_expr_cached.cache_clear()
    if _GUARD.refused is not None or not gold or not answer:
        return False
    return bool(verify(gold, answer, timeout_seconds=None))
