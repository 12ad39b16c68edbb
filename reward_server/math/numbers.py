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
_PLAIN = re.compile(rf"(?P<sign>-?)(?P<number>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|{_DECIMAL})")
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
    """The exact value of a normalised plain number, ``a/b`` or ``\\frac{a}{b}``, else ``None``."""
    if len(normalized) > _MAX_CHARS:
        return None
    plain = _PLAIN.fullmatch(normalized)
    if plain:
        value = Fraction(plain.group("number").replace(",", ""))
        return ExactNumber(-value if plain.group("sign") else value, "." in normalized)
    ratio = _SLASH.fullmatch(normalized) or _FRAC.fullmatch(normalized)
    if ratio:
        denominator = Fraction(ratio.group("den"))
        if denominator == 0:
            return None
        value = Fraction(ratio.group("num")) / denominator
        return ExactNumber(-value if ratio.group("sign") else value, "." in normalized)
    return None
