"""Refuse answers whose *evaluation* could be unbounded, before sympy ever sees them.

sympy evaluates eagerly: ``9^{9^{9^9}}`` asks for an integer with more digits than atoms in the
universe, ``1000000!`` for five million digits, and both parse happily. The process pool would
kill such a task at its deadline, but that costs seconds of a worker per answer, and a policy
that learns to emit them would stall training. So an answer that is not literally the
reference (see :mod:`.equivalence`) is first checked here in microseconds, and refused if it
crosses one of these bounds:

* ``MAX_CHARS`` (1000): answer length; final answers are short.
* ``MAX_DEPTH`` (16): nesting of ``{}``, ``()`` and ``[]``.
* power towers: a numeric exponent that contains ``^`` or is followed by one (``2^3^4`` is
  read right-associatively).
* ``MAX_EXPONENT`` (10 000): a numeric exponent's integer literals and, when it is plain
  arithmetic, its value. ``MAX_SYMBOLIC_EXPONENT`` (30) instead when the answer has free
  symbols, because sympy expands ``(x+1)^{100}`` for about a second.
* ``MAX_FACTORIAL`` (1000): ``n!`` with a literal ``n``; the group in ``(...)!`` must, when
  numeric, be plain arithmetic with a value in bounds.
* ``MAX_BINOMIAL`` (10 000): numeric ``\\binom`` arguments, likewise.
* big operators ``\\sum``, ``\\prod``, ``\\int``, ``\\lim``: not final answers, and their
  evaluation is unbounded.

The process pool's deadline stays the backstop for anything these bounds miss.

"Numeric" means free of symbols: LaTeX command names (``\\pi``, ``\\frac``) and the constants
``e`` and ``i`` are not symbols, so ``\\pi^{\\pi^{\\pi^\\pi}}`` is a tower while ``e^{x^2}`` is a
harmless symbolic expression that sympy keeps unevaluated.
"""
from __future__ import annotations

import re

from .arith import UnevaluableError, evaluate

MAX_CHARS = 1000
MAX_DEPTH = 16
MAX_EXPONENT = 10_000
MAX_SYMBOLIC_EXPONENT = 30
MAX_FACTORIAL = 1000
MAX_BINOMIAL = 10_000

_COMMAND = re.compile(r"\\[a-zA-Z]+")
_SYMBOL = re.compile(r"[a-df-hj-zA-Z]")  # any letter but the constants e and i
_INTEGER = re.compile(r"\d+")
_BIG_OPERATOR = re.compile(r"\\(?:sum|prod|int|iint|oint|lim)(?![a-zA-Z])")
_LITERAL_FACTORIAL = re.compile(r"(\d+)\s*!")
_BINOMIAL = re.compile(r"\\[dt]?binom\s*")
_OPENERS = {"{": "}", "(": ")", "[": "]"}
_CLOSERS = set(_OPENERS.values())


def guard_reason(answer: str) -> str | None:
    """Why ``answer`` must not be evaluated, or ``None`` if it is safe to hand to sympy."""
    if len(answer) > MAX_CHARS:
        return f"answer longer than {MAX_CHARS} characters"
    text = answer.replace("**", "^")
    for check in (_nesting_reason, _operator_reason, _exponent_reason, _factorial_reason, _binomial_reason):
        reason = check(text)
        if reason is not None:
            return reason
    return None


def is_numeric(text: str) -> bool:
    """True if ``text`` has no free symbol, i.e. sympy would try to evaluate it."""
    return _SYMBOL.search(_COMMAND.sub("", text)) is None


def group_at(text: str, start: int) -> tuple[str, int]:
    """The operand starting at ``text[start]`` and the offset just after it.

    An operand is a bracketed group (returned without its brackets), a LaTeX command, a run of
    digits, or one character; an unbalanced group runs to the end of ``text``.
    """
    while start < len(text) and text[start] == " ":
        start += 1
    if start >= len(text):
        return "", start
    opener = text[start]
    if opener in _OPENERS:
        depth, index = 0, start
        for index in range(start, len(text)):
            if text[index] == opener:
                depth += 1
            elif text[index] == _OPENERS[opener]:
                depth -= 1
                if depth == 0:
                    return text[start + 1 : index], index + 1
        return text[start + 1 :], len(text)
    match = _COMMAND.match(text, start) or _INTEGER.match(text, start)
    end = match.end() if match else start + 1
    return text[start:end], end


def _nesting_reason(text: str) -> str | None:
    depth = 0
    for char in text:
        if char in _OPENERS:
            depth += 1
            if depth > MAX_DEPTH:
                return f"nesting deeper than {MAX_DEPTH}"
        elif char in _CLOSERS:
            depth = max(0, depth - 1)
    return None


def _operator_reason(text: str) -> str | None:
    match = _BIG_OPERATOR.search(text)
    return f"unevaluated operator {match.group()}" if match else None


def _exponent_reason(text: str) -> str | None:
    bound = MAX_EXPONENT if is_numeric(text) else MAX_SYMBOLIC_EXPONENT
    for caret in re.finditer(r"\^", text):
        exponent, after = group_at(text, caret.end())
        if not is_numeric(exponent):
            continue
        if "^" in exponent or text[after:].lstrip().startswith("^"):  # 9^{9^9} or 2^3^4
            return "power tower"
        if "!" in exponent:
            return "factorial in an exponent"
        literals = _INTEGER.findall(exponent)
        if any(len(n) > 5 or int(n) > bound for n in literals) or not _within(exponent, bound, True):
            return f"exponent above {bound}"
    return None


def _within(numeric: str, bound: int, lenient: bool) -> bool:
    """``|value| <= bound`` for plain arithmetic; otherwise ``lenient`` (e.g. ``\\sqrt{2}``)."""
    try:
        return abs(evaluate(numeric)) <= bound
    except UnevaluableError:
        return lenient


def _factorial_reason(text: str) -> str | None:
    for match in _LITERAL_FACTORIAL.finditer(text):
        digits = match.group(1)
        if len(digits) > 4 or int(digits) > MAX_FACTORIAL:
            return f"factorial above {MAX_FACTORIAL}!"
    for index, char in enumerate(text):
        if char == "!" and index > 0 and text[index - 1] in ")}":
            group = _group_before(text, index)
            if is_numeric(group) and not _within(group, MAX_FACTORIAL, False):
                return "factorial of a large or non-arithmetic numeric expression"
    return None


def _group_before(text: str, close_at: int) -> str:
    """The bracketed group whose closing bracket is ``text[close_at - 1]``."""
    closer = text[close_at - 1]
    opener = "(" if closer == ")" else "{"
    depth = 0
    for index in range(close_at - 1, -1, -1):
        if text[index] == closer:
            depth += 1
        elif text[index] == opener:
            depth -= 1
            if depth == 0:
                return text[index + 1 : close_at - 1]
    return text[: close_at - 1]


def _binomial_reason(text: str) -> str | None:
    for match in _BINOMIAL.finditer(text):
        top, after = group_at(text, match.end())
        bottom, _ = group_at(text, after)
        for argument in (top, bottom):
            if is_numeric(argument) and not _within(argument, MAX_BINOMIAL, False):
                return f"binomial argument above {MAX_BINOMIAL} or not plain arithmetic"
    return None
