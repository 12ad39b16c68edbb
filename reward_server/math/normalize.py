"""Cheap, meaning-preserving rewriting of answer strings.

Two answers that normalise to the same string are equal without any parsing; this catches most
correct answers before sympy is involved, and it is what lets a pathological answer still pass
when it is *literally* the reference. Only rewrites that cannot change the value are done here:
spacing, display-only LaTeX (``\\left``, ``\\dfrac``, thin spaces), math delimiters, the
currency sign ``\\$``, a trailing full stop.
"""
from __future__ import annotations

import re

_DROPPED = re.compile(r"\\left|\\right|\\displaystyle|\\[!,;:> $]|~|\s+")
_FRAC_STYLE = re.compile(r"\\[dt]frac")
_DEGREE = re.compile(r"\^\{?\\circ\}?")
_UNICODE = str.maketrans({"\u2212": "-", "\u00d7": "*", "\u22c5": "*", "\u00b7": "*", "\u00f7": "/"})


def normalize_answer(text: str) -> str:
    """A canonical spelling of ``text`` for string comparison (not for display)."""
    text = text.lstrip(" \t\n$").rstrip(" \t\n$.").translate(_UNICODE)
    text = _FRAC_STYLE.sub(r"\\frac", text)
    text = _DEGREE.sub("", text)
    text = _DROPPED.sub("", text)
    text = text.replace("**", "^").replace("\\cdot", "*").replace("\\times", "*")
    return text.rstrip(".")
