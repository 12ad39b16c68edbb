"""Read plain numeric answers exactly, without sympy.

Most answers in math RL data are integers, decimals or simple fractions; reading those with
:class:`fractions.Fraction` is exact and takes microseconds, which is what keeps ordinary
answers off the (much slower) sympy path.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

_DECIMAL = r"\d+(?:\.\d*)?|\.\d+"
_PLAIN = re.compile(rf"(?P<sign>-?)(?P<number>[1-9]\d{{0,2}}(?:,\d{{3}})+(?:\.\d+)?|{_DECIMAL})")
# a comma that cannot be a thousands separator is a decimal comma: 1,22 / 1000,99 / 0,111
_DECIMAL_COMMA = re.compile(r"(?P<sign>-?)(?P<whole>\d+),(?P<fraction>\d+)")
_SLASH = re.compile(rf"(?P<sign>-?)(?P<num>{_DECIMAL})/(?P<den>{_DECIMAL})")
_FRAC = re.compile(rf"(?P<sign>-?)\\frac\{{(?P<num>-?(?:{_DECIMAL}))\}}\{{(?P<den>-?(?:{_DECIMAL}))\}}")
_MAX_CHARS = 200


@dataclass(frozen=True)
class ExactNumber:
    """An exactly read number; ``decimal`` records that it was written with a decimal point
    (and so may be a rounding of another value)."""

    value: Fraction
    decimal: bool


def read_number(normalized: str) -> ExactNumber | None:
    """The exact value of a normalised plain number, ``a/b`` or ``\\frac{a}{b}``, else ``None``.

    ``1,234`` is a thousands separator (groups of three, no leading zero); any other comma between
    digits (``1,22``, ``1000,99``, ``0,111``) is a decimal comma, as math-verify reads it."""
    if len(normalized) > _MAX_CHARS:
        return None
    plain = _PLAIN.fullmatch(normalized)
    if plain:
        value = Fraction(plain.group("number").replace(",", ""))
        return ExactNumber(-value if plain.group("sign") else value, "." in normalized)
    comma = _DECIMAL_COMMA.fullmatch(normalized)
    if comma:
        value = Fraction(f"{comma.group('whole')}.{comma.group('fraction')}")
        return ExactNumber(-value if comma.group("sign") else value, True)
    ratio = _SLASH.fullmatch(normalized) or _FRAC.fullmatch(normalized)
    if ratio:
        denominator = Fraction(ratio.group("den"))
        if denominator == 0:
            return None
        value = Fraction(ratio.group("num")) / denominator
        return ExactNumber(-value if ratio.group("sign") else value, "." in normalized)
    return None
