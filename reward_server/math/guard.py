"""Refuse answers whose *evaluation* could be unbounded, before sympy ever sees them.

sympy evaluates eagerly: ``9^{9^{9^9}}`` asks for an integer with more digits than atoms in the
universe, ``1000000!`` for five million digits, ``\\Gamma(10^8)`` for a factorial, and all of
them parse happily. The process pool would kill such a task at its deadline (and its address
space is capped), but that costs seconds of a worker per answer, and a policy that learns to
emit them would stall training. So an answer that is not literally the reference (see
:mod:`.equivalence`) is first checked here in microseconds, and refused if it crosses a bound.

The checks run on a *canonical* spelling, so that display-only LaTeX cannot hide structure:
``\\left`` / ``\\right`` / ``\\big`` sizing is dropped, ``\\{ \\}``, ``\\lbrace``, ``\\langle``,
``\\lfloor`` and friends become brackets, ``\\operatorname{Gamma}`` / ``\\mathrm{Gamma}`` become
``\\Gamma``, ``\\exp`` becomes ``e^``, LaTeX spacing becomes a space. The bounds:

* ``MAX_CHARS`` (1000): answer length; final answers are short.
* ``MAX_DEPTH`` (16): nesting of brackets.
* power towers: a numeric exponent that contains ``^`` or is followed by one (``2^3^4`` is
  read right-associatively).
* ``MAX_EXPONENT`` (10 000): an exponent's integer literals and, when it is plain arithmetic,
  its value (``MAX_SYMBOLIC_EXPONENT``, 30, in answers with free symbols, because sympy expands
  ``(x+1)^{100}`` for about a second). An exponent that is not plain arithmetic may use only
  harmless commands (``\\pi``, ``\\sqrt``, ``\\frac``, trigonometry, logarithms, Greek letters),
  no ``!`` or ``|``, powers only of a single symbol (``e^{-x^2}``), and at most as many digits
  in all as ``MAX_EXPONENT`` has: symbols can cancel (``x - x``), so a digit budget, not the
  presence of a symbol, is what bounds the value.
* powers of powers: ``{(2^{a})^{b}}^{c}`` is ``2^{abc}``, so the exponents along such a chain
  multiply, and the product is bounded like one exponent.
* ``MAX_POWER_DIGITS`` (100 000): digits of a numeric base times its (effective) exponent; a
  numeric base holding a factorial or binomial takes exponents up to ``MAX_SYMBOLIC_EXPONENT``.
* ``MAX_EXPANSION_TERMS`` (200): a bracketed sum that is not plain arithmetic, raised to ``n``,
  is expanded by sympy into ``C(n + k - 1, k - 1)`` terms for ``k`` summands: ``(x+y+z)^{30}``
  (496 terms), ``(1+\\sqrt{2})^{9999}`` and ``(1+i)^{9999}`` ran into the deadline.
* ``MAX_TRIG_POWER`` (8): a power of a trigonometric function (``\\sin^{30}(x)``: its
  simplification ran into the deadline).
* ``MAX_FACTORIAL`` (1000): the operand of ``!`` and the argument of ``\\Gamma`` (and
  ``\\gamma`` used as a function, ``\\factorial``): a literal, or plain arithmetic with a value
  in bounds when numeric, and the digit budget when it has symbols. ``!`` after a power
  (``10^{9}!``) is refused.
* ``MAX_BINOMIAL`` (10 000): ``\\binom``/``\\dbinom``/``\\tbinom`` arguments and both sides of
  ``\\choose``, likewise.
* ``MAX_TRANSCENDENTAL_NESTING`` (2): a transcendental function (trigonometric, hyperbolic, their
  inverses, ``\\log``/``\\ln``/``\\exp``, ``e^``) applied to one that holds another:
  ``\\tan(\\tan(\\tan(12)))`` and deeper held a worker for the whole deadline (a 6-deep
  ``\\tan`` nest 10 s, an 8-deep ``\\sin`` 9 s); ``\\sin(\\cos x)`` and ``e^{\\sin x}`` pass.
* big operators ``\\sum``, ``\\prod``, ``\\int``, ``\\lim`` and matrix constructors
  (``\\operatorname{eye}``, ``zeros``, ``ones``, ``diag``): not final answers, and their
  evaluation is unbounded.

The process pool's deadline and address-space limit stay the backstop for anything these
bounds miss.

"Numeric" means free of symbols: LaTeX command names (``\\pi``, ``\\frac``) and the constants
``e`` and ``i`` are not symbols, so ``\\pi^{\\pi^{\\pi^\\pi}}`` is a tower while ``e^{x^2}`` is a
harmless symbolic expression that sympy keeps unevaluated.

Every check is linear or close to it in the (bounded) answer length.
"""
from __future__ import annotations

import bisect
import math
import re

from botgrpo.reward_server.math.arith import UnevaluableError, evaluate

MAX_CHARS = 1000
MAX_DEPTH = 16
MAX_EXPONENT = 10_000
MAX_SYMBOLIC_EXPONENT = 30
MAX_POWER_DIGITS = 100_000
MAX_EXPANSION_TERMS = 200
MAX_TRIG_POWER = 8
MAX_FACTORIAL = 1000
MAX_BINOMIAL = 10_000
MAX_TRANSCENDENTAL_NESTING = 2

_COMMAND = re.compile(r"\\[a-zA-Z]+")
_SYMBOL = re.compile(r"[a-df-hj-zA-Z]")  # any letter but the constants e and i
_INTEGER = re.compile(r"\d+")
_BIG_OPERATOR = re.compile(
    r"\\(?:sum|prod|coprod|int|iint|iiint|oint|lim|limsup|liminf|eye|zeros|ones|diag)(?![a-zA-Z])")
_LITERAL_FACTORIAL = re.compile(r"(\d+)\s*!")
_BINOMIAL = re.compile(r"\\[dt]?binom(?![a-zA-Z])\s*")
_CHOOSE = re.compile(r"\\choose(?![a-zA-Z])")
_FACTORIAL_FUNCTION = re.compile(r"\\(?:Gamma|gamma|factorial|fact)(?![a-zA-Z])\s*")
_FACTORIAL_LIKE = re.compile(r"!|\\(?:Gamma|gamma|factorial|fact|[dt]?binom|choose)(?![a-zA-Z])")
_TRIG_BEFORE = re.compile(r"\\(?:sin|cos|tan|cot|sec|csc|sinh|cosh|tanh|coth)\s*$")
_OPENERS = {"{": "}", "(": ")", "[": "]"}
_CLOSERS = {close: open_ for open_, close in _OPENERS.items()}

# canonical spelling (see the module docstring)
_SIZING = re.compile(r"\\(?:left|right|middle|[bB]igg?[lrm]?)(?![a-zA-Z])")
_DELIMITER = re.compile(r"\\(?:[{}]|lbrace|rbrace|lbrack|rbrack|lparen|rparen|langle|rangle|lfloor|rfloor|lceil|rceil)"
                        r"(?![a-zA-Z])")
_DELIMITERS = {"\\{": "(", "\\}": ")", "\\lbrace": "(", "\\rbrace": ")", "\\lbrack": "[", "\\rbrack": "]",
               "\\lparen": "(", "\\rparen": ")", "\\langle": "(", "\\rangle": ")", "\\lfloor": "(",
               "\\rfloor": ")", "\\lceil": "(", "\\rceil": ")"}
_NAMED = re.compile(r"\\(?:operatorname\*?|mathrm|mathit|mathbf|mathsf|text|textrm|textit|rm)\s*\{\s*([A-Za-z]+)\s*\}")
_SPACING = re.compile(r"\\[,;:! ]|~|\\q?quad(?![a-zA-Z])|\s+")
_EXP = re.compile(r"\\exp(?![a-zA-Z])\s*")

# commands an exponent (or a factorial / binomial argument) that is not plain arithmetic may use
GREEK = frozenset("""
    alpha beta delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi rho
    varrho sigma tau upsilon phi varphi chi psi omega Delta Theta Lambda Xi Sigma Upsilon Phi Psi Omega
""".split())
_HARMLESS = GREEK | frozenset("""
    pi infty sqrt frac dfrac tfrac cdot times div pm mp circ prime
    sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln lg
""".split())


def guard_reason(answer: str) -> str | None:
    """Why ``answer`` must not be evaluated, or ``None`` if it is safe to hand to sympy."""
    if len(answer) > MAX_CHARS:
        return f"answer longer than {MAX_CHARS} characters"
    text = canonical(answer)
    for check in (_nesting_reason, _transcendental_reason, _operator_reason, _exponent_reason,
                  _factorial_reason, _binomial_reason):
        reason = check(text)
        if reason is not None:
            return reason
    return None


def canonical(answer: str) -> str:
    """``answer`` with display-only LaTeX removed and synonyms unified (for the checks only)."""
    text = answer.replace("**", "^")
    text = _SIZING.sub("", text)
    text = _DELIMITER.sub(lambda m: _DELIMITERS[m.group()], text)
    text = _NAMED.sub(lambda m: m.group(1) if len(m.group(1)) == 1 else "\\" + m.group(1), text)
    text = _SPACING.sub(" ", text)
    return _EXP.sub("e^", text)


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
        depth = 0
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


def _operand_before(text: str, end: int, partners: dict[int, int]) -> tuple[int, int]:
    """``(start, end)`` of the operand that ends just before ``text[end]`` (spaces skipped):
    a bracketed group (brackets included), a run of digits, a command, or one character."""
    while end > 0 and text[end - 1] == " ":
        end -= 1
    if end == 0:
        return 0, 0
    last = end - 1
    if text[last] in _CLOSERS:
        return partners.get(last, 0), end
    start = end
    if text[last].isdigit():
        while start > 0 and (text[start - 1].isdigit() or text[start - 1] == "."):
            start -= 1
        return start, end
    while start > 0 and text[start - 1].isalpha():
        start -= 1
    if start > 0 and text[start - 1] == "\\" and start < end:
        return start - 1, end  # a command
    return end - 1, end  # one character (juxtaposed letters are separate symbols)


def _partners(text: str) -> dict[int, int]:
    """closing bracket offset -> offset of the bracket it closes (balanced pairs only)."""
    stacks: dict[str, list[int]] = {opener: [] for opener in _OPENERS}
    partners = {}
    for index, char in enumerate(text):
        if char in _OPENERS:
            stacks[char].append(index)
        elif char in _CLOSERS and stacks[_CLOSERS[char]]:
            partners[index] = stacks[_CLOSERS[char]].pop()
    return partners


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


_TRANSCENDENTAL = re.compile(
    r"\\(?:a?(?:sin|cos|tan|cot|sec|csc)h?|arc(?:sin|cos|tan|cot|sec|csc)|log|ln|lg|exp)(?![a-zA-Z])"
    r"|(?<![a-zA-Z\\])e\s*\^")


def _transcendental_depth(text: str, budget: list[int]) -> int:
    """Deepest nesting of transcendental functions in ``text`` (each one's argument is the
    group, command or token after it, past a power such as ``\\sin^2``); ``budget`` bounds the
    work for hostile input."""
    deepest = 0
    for match in _TRANSCENDENTAL.finditer(text):
        budget[0] -= 1
        if budget[0] < 0:
            return MAX_TRANSCENDENTAL_NESTING + 1
        at = match.end()
        if not match.group().startswith("e") and text[at:].lstrip().startswith("^"):
            _, at = group_at(text, text.index("^", at) + 1)  # \sin^2(x): skip the power
        argument, _ = group_at(text, at)
        if _TRANSCENDENTAL.match(argument):
            argument = text[at:]  # an unbracketed chain: \tan \tan 12
        deepest = max(deepest, 1 + _transcendental_depth(argument, budget))
        if deepest > MAX_TRANSCENDENTAL_NESTING:
            return deepest
    return deepest


def _transcendental_reason(text: str) -> str | None:
    if _transcendental_depth(text, [200]) > MAX_TRANSCENDENTAL_NESTING:
        return f"transcendental functions nested deeper than {MAX_TRANSCENDENTAL_NESTING}"
    return None


def _operator_reason(text: str) -> str | None:
    match = _BIG_OPERATOR.search(text)
    return f"unevaluated operator {match.group()}" if match else None


def _value(text: str) -> float | None:
    """``|value|`` of plain arithmetic (``inf`` when too large for a float), else None."""
    try:
        value = abs(evaluate(text))
    except UnevaluableError:
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _budget_reason(text: str, bound: int, what: str) -> str | None:
    """For a size-sensitive position (an exponent, a factorial or binomial argument) that is
    not plain arithmetic: only harmless commands, no ``!`` or ``|``, powers of one symbol only,
    and no more digits in all than ``bound`` has."""
    for command in _COMMAND.findall(text):
        if command[1:] not in _HARMLESS:
            return f"{what} uses {command}"
    if "!" in text or "|" in text:
        return f"{what} is not plain arithmetic"
    partners = _partners(text)
    for caret in re.finditer(r"\^", text):
        start, end = _operand_before(text, caret.start(), partners)
        base = text[start:end]
        if not (len(base) == 1 and base.isalpha()) and base[1:] not in GREEK:  # x^2, \sigma^2
            return f"{what} holds a power of a number or group"
    digits = sum(len(run) for run in _INTEGER.findall(text))
    if digits > len(str(bound)):
        return f"{what} has more digits than a bound of {bound} allows"
    return None


def _exponent_reason(text: str) -> str | None:
    numeric_answer = is_numeric(text)
    bound = MAX_EXPONENT if numeric_answer else MAX_SYMBOLIC_EXPONENT
    partners = _partners(text)
    carets: list[int] = []
    effective: list[float] = []  # per caret: its exponent times the exponents inside its base
    for caret in re.finditer(r"\^", text):
        exponent, after = group_at(text, caret.end())
        numeric = is_numeric(exponent)
        if numeric and ("^" in exponent or text[after:].lstrip().startswith("^")):  # 9^{9^9} or 2^3^4
            return "power tower"
        if "!" in exponent:
            return "factorial in an exponent"
        literals = _INTEGER.findall(exponent)
        if any(len(n) > 5 or int(n) > (bound if numeric else MAX_EXPONENT) for n in literals):
            return f"exponent above {bound if numeric else MAX_EXPONENT}"
        value = _value(exponent)
        if value is None:
            reason = _budget_reason(exponent, MAX_EXPONENT, "exponent")
            if reason is not None:
                return reason
            value = 10.0 ** sum(len(n) for n in literals) if numeric else 1.0
        elif numeric and value > bound:
            return f"exponent above {bound}"
        base_start, base_end = _operand_before(text, caret.start(), partners)
        base = text[base_start:base_end]
        low, high = bisect.bisect_left(carets, base_start), bisect.bisect_left(carets, base_end)
        if is_numeric(base):  # sizes multiply: (2^{a} + 1)^{b} has about a*b bits
            inner = max(effective[low:high], default=1.0)
        else:  # only an exact power of a power multiplies the degree: ((x+1)^{a})^{b}
            inner = effective[high - 1] if high > low and _is_power(text, base_start, base_end, carets[high - 1]) else 1.0
        total = value * max(inner, 1.0)
        if inner > 1.0 and total > bound:
            return f"power of a power above {bound}"
        if is_numeric(base):
            digits = sum(len(run) for run in _INTEGER.findall(base))
            if digits * total > MAX_POWER_DIGITS:
                return f"power with more than {MAX_POWER_DIGITS} digits"
            if total > MAX_SYMBOLIC_EXPONENT and _FACTORIAL_LIKE.search(base):
                return f"power of a factorial or binomial above {MAX_SYMBOLIC_EXPONENT}"
        reason = _expansion_reason(text, base_start, base_end, total)
        if reason is not None:
            return reason
        carets.append(caret.start())
        effective.append(total)
    return None


def _expansion_reason(text: str, start: int, end: int, exponent: float) -> str | None:
    """A power sympy expands term by term: a bracketed sum that is not plain arithmetic
    (``(x+y+z)^{30}``, ``(1+\\sqrt{2})^{9999}``, ``(1+i)^{9999}``: multinomially many terms), or a
    power of a trigonometric function (``\\sin^{30}(x)``: simplification blows up)."""
    before = text[:start]
    if exponent > MAX_TRIG_POWER and (_TRIG_BEFORE.search(before) or _TRIG_BEFORE.search(text[:end])):
        return f"power of a trigonometric function above {MAX_TRIG_POWER}"
    if exponent <= 1 or text[end - 1] not in _CLOSERS:
        return None
    group = text[start + 1 : end - 1]
    if _value(group) is not None:  # plain arithmetic: exact and cheap
        return None
    summands = _summands(group)
    if summands > 1 and math.comb(int(min(exponent, 10**6)) + summands - 1, summands - 1) > MAX_EXPANSION_TERMS:
        return f"power of a sum with more than {MAX_EXPANSION_TERMS} terms when expanded"
    return None


def _summands(group: str) -> int:
    """Top-level terms of a sum: ``+`` and binary ``-`` outside brackets, plus one."""
    count, depth, previous = 1, 0, ""
    for char in group:
        if char in _OPENERS:
            depth += 1
        elif char in _CLOSERS:
            depth = max(0, depth - 1)
        elif char in "+-" and depth == 0 and previous and previous not in "+-*/^(=,{[":
            count += 1
        if char != " ":
            previous = char
    return count


def _is_power(text: str, start: int, end: int, caret: int) -> bool:
    """True if the bracketed group ``text[start:end]`` holds exactly one power whose caret is at ``caret``."""
    if text[end - 1] not in _CLOSERS or text[start] not in _OPENERS:
        return False
    _, after = group_at(text, caret + 1)
    return after == end - 1 and text[start + 1 : caret].strip() != ""


def _within(numeric: str, bound: int, lenient: bool) -> bool:
    """``|value| <= bound`` for plain arithmetic; otherwise ``lenient`` (e.g. ``\\sqrt{2}``)."""
    value = _value(numeric)
    return lenient if value is None else value <= bound


def _argument_reason(argument: str, bound: int, what: str) -> str | None:
    """A factorial-like or binomial argument: plain arithmetic within ``bound`` when numeric,
    the digit budget when it has symbols (they may cancel)."""
    if is_numeric(argument):
        return None if _within(argument, bound, False) else f"{what} above {bound} or not plain arithmetic"
    return _budget_reason(argument, bound, what)


def _factorial_reason(text: str) -> str | None:
    for match in _LITERAL_FACTORIAL.finditer(text):
        digits = match.group(1)
        if len(digits) > 4 or int(digits) > MAX_FACTORIAL:
            return f"factorial above {MAX_FACTORIAL}!"
    partners = _partners(text)
    for index, char in enumerate(text):
        if char != "!" or index == 0:
            continue
        start, end = _operand_before(text, index, partners)
        before = text[:start].rstrip()
        if before.endswith("^") and start < end:
            return "factorial of a power"
        if text[end - 1] in _CLOSERS:
            group = text[start + 1 : end - 1]
            if is_numeric(group) and not _within(group, MAX_FACTORIAL, False):
                return "factorial of a large or non-arithmetic numeric expression"
            reason = _argument_reason(group, MAX_FACTORIAL, "factorial")
            if reason is not None:
                return reason
    for match in _FACTORIAL_FUNCTION.finditer(text):
        if match.end() < len(text) and (text[match.end()] in _OPENERS or text[match.end()].isdigit()):
            argument, _ = group_at(text, match.end())
            reason = _argument_reason(argument, MAX_FACTORIAL, f"{match.group().strip()} argument")
            if reason is not None:
                return reason
    return None


def _binomial_reason(text: str) -> str | None:
    for match in _BINOMIAL.finditer(text):
        top, after = group_at(text, match.end())
        bottom, _ = group_at(text, after)
        for argument in (top, bottom):
            reason = _argument_reason(argument, MAX_BINOMIAL, "binomial argument")
            if reason is not None:
                return reason
    if _CHOOSE.search(text):
        partners = _partners(text)
        openers = sorted(partners.items(), key=lambda pair: pair[1])
        for match in _CHOOSE.finditer(text):
            enclosing = [(o, c) for c, o in openers if o < match.start() and c > match.end()]
            start, end = (enclosing[-1][0] + 1, enclosing[-1][1]) if enclosing else (0, len(text))
            for argument in (text[start : match.start()], text[match.end() : end]):
                reason = _argument_reason(argument, MAX_BINOMIAL, "binomial argument")
                if reason is not None:
                    return reason
    return None
