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

from botgrpo.reward_server.math.extract import math_spans
from botgrpo.reward_server.math.guard import guard_reason
from botgrpo.reward_server.math.normalize import normalize_answer
from botgrpo.reward_server.math.numbers import read_number
from botgrpo.reward_server.math.statements import context_reason, negation_reason, statement_reason, understood_relations

# a reference written as LaTeX text (delimiters or a box) is parsed as written, like the library's gold
_MATH_DOLLAR = re.compile(r"(?<!\\)\$")  # a math delimiter, not the currency sign \$


def drop_broken_inline_math(text: str) -> str:
    """``text`` without its inline math spans (``$...$``, ``\\(...\\)``) that contain a line break:
    math-verify's own suite says they are not math (test_all.py:132-133), so neither its LaTeX
    extraction nor its number fallback may read them. Delimiters pair in reading order."""
    pieces, kept = [], 0
    for span in math_spans(text):
        if not span.display and "\n" in text[span.content_start: span.content_end]:
            pieces.append(text[kept: span.start])
            kept = span.end
    pieces.append(text[kept:])
    return " ".join(pieces) if len(pieces) > 1 else text


_LATEX_TEXT = ("$", "\\boxed", "\\[", "\\(", "\\fbox")

# A decimal that differs from the other side by more than this (relative) is a different
# number under any rounding math-verify applies (it rounds to 6 places), so it is decided here.
_DECIMAL_SLACK = 1e-4


# extraction methods that are no single answer (see extract.py), whatever they hold
REFUSED_METHODS = {
    "hedge": "several different boxed answers (a hedge) for a reference with fewer parts",
    "straddling": "a box straddling math delimiters holds no one expression",
}


@dataclass(frozen=True)
class Verdict:
    """``equal`` is ``None`` when only a symbolic comparison can decide."""

    equal: bool | None
    reason: str


def quick_verdict(candidate: str, reference: str, method: str = "boxed") -> Verdict:
    """Decide without sympy when that is safe; otherwise ``Verdict(None, ...)``.

    ``method`` is the extraction's: a ``hedge`` (several different boxes against a reference
    with fewer parts) and a ``straddling`` box are not equal (:data:`REFUSED_METHODS`); a
    ``latex`` region (a whole completion tail for math-verify's extraction) is only compared for
    identity here, its candidates are guarded in the worker."""
    if method in REFUSED_METHODS:
        return Verdict(False, REFUSED_METHODS[method])
    normalized, target = normalize_answer(candidate), normalize_answer(reference)
    if not normalized:
        return Verdict(False, "empty answer")
    if normalized == target:
        return Verdict(True, "identical after normalisation")
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


@dataclass(frozen=True)
class _Reading:
    """One candidate math-verify's extraction tried in an answer, in the order it tried them."""

    kind: str  # "latex" | "expr" | "string": which of its extraction targets matched
    spans: tuple[tuple[int, int], ...]  # where the candidate's value groups are in the parsed text
    read: bool  # converted to a value (the first such candidate is the answer)
    partial: bool  # a conversion failed on the way: a value read from it is at most one part of it

    @property
    def start(self) -> int:
        return min(a for a, _ in self.spans)

    @property
    def end(self) -> int:
        return max(b for _, b in self.spans)


_VALUE_GROUP = re.compile(r"(?:first|next\d)_latex|integer\d|decimal\d|expr$|string_keys$")


def _reading(match: re.Match, kind: str, read: bool, partial: bool) -> _Reading:
    spans = tuple(_trimmed(match.string, *match.span(name)) for name, value in match.groupdict().items()
                  if value is not None and _VALUE_GROUP.match(name) and "percent" not in name)
    return _Reading(kind, spans or (match.span(),), read, partial)


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` without trailing spaces and full stops (an expression group takes them)."""
    while end - 1 > start and text[end - 1] in " \t\n.":
        end -= 1
    return start, end


def _relations(value) -> int:
    """How many distinct relations (``Eq``, ``Lt``, ``Ne``, ...) a converted value holds."""
    from sympy.core.relational import Relational

    atoms = getattr(value, "atoms", None)
    return len(atoms(Relational)) if callable(atoms) else 0


class _AnswerGuard:
    """Wraps math-verify's converters (LaTeX and plain expressions) and its match extraction so
    that an answer is judged whole or refused:

    * every string it converts *from an answer* passes :func:`guard_reason` and
      :func:`statement_reason` first, and a conversion may yield no more relations than the
      statement rules understand in its text (:func:`understood_relations`: ``13 \\equiv 12``
      becomes ``Eq(13, 12)`` with none the rules know);
    * :meth:`reading_reason` then looks at the candidate the library took: not a part of a
      candidate whose conversion failed (``a \\sim x = 12`` -> its last equation ``12``), and
      read in its context: a number (from prose, or from a math span it could not convert:
      ``$13 \\sim 12$`` -> ``12``) by :func:`context_reason`, a math span by
      :func:`negation_reason`.

    One refusal refuses the whole answer: otherwise the library would fall back to a part of it
    (``\\boxed{13 = 12}`` -> the number ``12``)."""

    def __init__(self) -> None:
        self.reference: str | None = None  # None: parsing the reference, unguarded
        self.refused: str | None = None
        self.readings: list[_Reading] = []
        self._failed = False  # a conversion failed inside the candidate being extracted

    def start(self, reference: str | None) -> None:
        """Guard the next parse against ``reference`` (``None``: the reference itself, unguarded)."""
        self.reference, self.refused, self.readings, self._failed = reference, None, [], False

    def install(self) -> None:
        import math_verify.parser as parser

        if getattr(parser, "_botgrpo_guarded", False):
            return
        latex, expression, extract = parser.latex2sympy, parser.parse_expr, parser.extract_match

        def guarded(convert):
            def converted(text, *args, **kwargs):
                self.check(text)
                try:
                    value = convert(text, *args, **kwargs)
                except _Refused:
                    raise
                except Exception:
                    self._failed = True
                    raise
                self.check_relations(text, value)
                return value
            return converted

        def recorded(match, target_type):
            self._failed = False
            value, text = extract(match, target_type)
            if self.reference is not None:
                kind = type(target_type).__name__.removesuffix("ExtractionConfig").lower()
                self.readings.append(_reading(match, kind, value is not None, self._failed))
            return value, text

        parser.latex2sympy, parser.parse_expr = guarded(latex), guarded(expression)
        parser.extract_match = recorded
        parser._botgrpo_guarded = True

    def check(self, text: str) -> None:
        if self.reference is None:
            return
        self.refuse(guard_reason(text) or statement_reason(text, self.reference))

    def check_relations(self, text: str, value) -> None:
        if self.reference is not None and _relations(value) > understood_relations(text):
            self.refuse("a relation the statement rules do not know")

    def refuse(self, reason: str | None) -> None:
        if reason is not None:
            self.refused = self.refused or reason
            raise _Refused(reason)

    def reading_reason(self, text: str) -> str | None:
        """Why the candidate math-verify took from ``text`` is not the answer, or ``None``."""
        taken = next((r for r in self.readings if r.read), None)
        if taken is None:
            return None
        if taken.partial:
            return "a part of a statement the converter could not read"
        check = context_reason if taken.kind == "expr" else negation_reason
        return check(text, taken.start, taken.end)


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
    _GUARD.start(None)
    gold = _parse_reference(reference)
    parser.parse_latex_cached.cache_clear()  # nothing converted unguarded may be reused
    parser.parse_expr_cached.cache_clear()
    candidate = drop_broken_inline_math(candidate)
    if whole or _MATH_DOLLAR.search(candidate):  # a region, or a box holding text with math in it
        text = candidate
    else:
        text = f"${candidate}$"
    _GUARD.start(reference)
    try:
        answer = parse(text, parsing_timeout=None)
        refused = _GUARD.refused or _GUARD.reading_reason(text)
    finally:
        _GUARD.reference = None
        parser.parse_latex_cached.cache_clear()
        parser.parse_expr_cached.cache_clear()
    if refused is not None or not gold or not answer:
        return False
    return bool(verify(gold, answer, timeout_seconds=None))
