"""Exact evaluation of small arithmetic expressions, safely.

Intermediate steps in model output are untrusted text, so they are never ``eval``-ed and never
handed to sympy. This is a recursive-descent parser over a whitelist: numbers (integers,
decimals, ``1,000``-style thousands), ``+ - * / ^``, parentheses and braces, ``\\frac{a}{b}``,
``\\times``, ``\\cdot``, ``\\div`` and their Unicode forms; a bracket right after an operand
multiplies (``3(-2)``, ``(6)(5)``). Values are :class:`~fractions.Fraction`, so ``0.1 + 0.2 = 0.3``
holds.

Bounds keep every call cheap: at most :data:`MAX_TOKENS` tokens and :data:`MAX_DEPTH` nested
groups, and a power is computed only for an integer exponent of at most :data:`MAX_EXPONENT`
whose result stays under :data:`MAX_RESULT_BITS` bits. Anything else is
:class:`UnevaluableError`, never a wrong verdict.
"""
from __future__ import annotations

import re
from fractions import Fraction

MAX_TOKENS = 200
MAX_DEPTH = 20
MAX_EXPONENT = 1000
MAX_RESULT_BITS = 20_000

_TOKEN = re.compile(
    r"\s*(?:(?P<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"|(?P<frac>\\[dt]?frac)"
    r"|(?P<times>\\times|\\cdot|[*\u00d7\u22c5\u00b7])"
    r"|(?P<divide>\\div|[/\u00f7])"
    r"|(?P<minus>[-\u2212])"
    r"|(?P<other>[+^(){}]))"
)
_CANONICAL = {"frac": "frac", "times": "*", "divide": "/", "minus": "-"}
_CLOSER = {"(": ")", "{": "}"}


class UnevaluableError(ValueError):
    """The text is not an expression this evaluator accepts (or would be too costly)."""


def tokenize(text: str) -> list[str]:
    """Canonical tokens: numbers, ``frac``, and the one-character operators/brackets."""
    tokens: list[str] = []
    position, end = 0, len(text.rstrip())
    while position < end:
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise UnevaluableError(f"unexpected character at {position}")
        kind = match.lastgroup
        tokens.append(_CANONICAL.get(kind, match.group(kind)))
        position = match.end()
        if len(tokens) > MAX_TOKENS:
            raise UnevaluableError("expression too long")
    return tokens


def evaluate(text: str) -> Fraction:
    """The exact value of ``text``; raises :class:`UnevaluableError`."""
    parser = _Parser(tokenize(text))
    value = parser.expression(0)
    if parser.position != len(parser.tokens):
        raise UnevaluableError("trailing tokens")
    return value


def has_operator(text: str) -> bool:
    """True if ``text`` computes something rather than just stating a number (an implicit
    product ``3(4)`` included)."""
    tokens = tokenize(text)
    implicit = any(t == "(" and (p[0].isdigit() or p == ")") for p, t in zip(tokens, tokens[1:]))
    return implicit or any(t in {"+", "*", "/", "^", "frac"} for t in tokens) or "-" in tokens[1:]


class _Parser:
    """expression := term (('+'|'-') term)* ; term := unary (('*'|'/'|<before '('>) unary)* ;
    unary := '-' unary | '+' unary | power ; power := atom ('^' unary)? ;
    atom := number | '(' expression ')' | '{' expression '}' | frac '{' e '}' '{' e '}'."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.position = 0

    def peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise UnevaluableError(f"expected {expected or 'a token'}")
        self.position += 1
        return token

    def expression(self, depth: int) -> Fraction:
        if depth > MAX_DEPTH:
            raise UnevaluableError("nested too deeply")
        value = self.term(depth)
        while self.peek() in ("+", "-"):
            value = value + self.term(depth) if self.take() == "+" else value - self.term(depth)
        return value

    def term(self, depth: int) -> Fraction:
        value = self.unary(depth)
        while self.peek() in ("*", "/", "("):
            operator = self.take() if self.peek() != "(" else "*"  # 3(-2), (6)(5): a product
            right = self.unary(depth)
            if operator == "*":
                value *= right
            elif right == 0:
                raise UnevaluableError("division by zero")
            else:
                value /= right
        return value

    def unary(self, depth: int) -> Fraction:
        if self.peek() in ("-", "+"):
            sign = self.take()
            value = self.unary(depth + 1)
            return -value if sign == "-" else value
        return self.power(depth)

    def power(self, depth: int) -> Fraction:
        base = self.atom(depth)
        if self.peek() != "^":
            return base
        self.take()
        return bounded_power(base, self.unary(depth + 1))

    def atom(self, depth: int) -> Fraction:
        token = self.take()
        if token in _CLOSER:
            value = self.expression(depth + 1)
            self.take(_CLOSER[token])
            return value
        if token == "frac":
            numerator, denominator = self.braced(depth), self.braced(depth)
            if denominator == 0:
                raise UnevaluableError("division by zero")
            return numerator / denominator
        if token[0].isdigit() or token[0] == ".":
            return Fraction(token.replace(",", ""))
        raise UnevaluableError(f"unexpected {token!r}")

    def braced(self, depth: int) -> Fraction:
        self.take("{")
        value = self.expression(depth + 1)
        self.take("}")
        return value


def bounded_power(base: Fraction, exponent: Fraction) -> Fraction:
    """``base ** exponent`` for a small integer exponent and a result of bounded size."""
    if exponent.denominator != 1 or abs(exponent) > MAX_EXPONENT:
        raise UnevaluableError("exponent not a small integer")
    size = max(base.numerator.bit_length(), base.denominator.bit_length())
    if size * abs(exponent.numerator) > MAX_RESULT_BITS:
        raise UnevaluableError("power too large")
    if base == 0 and exponent < 0:
        raise UnevaluableError("division by zero")
    return base ** exponent.numerator
