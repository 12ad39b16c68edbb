"""Answers that are statements (relations, logical formulas) and multi-part references.

math-verify reads ``13 \\lor 12``, ``13 \\implies 12``, ``13 \\mid 12`` and ``\\neg 12`` as their
last number and compares ``0 = 12`` by its right side, so against the reference ``12`` all of
them were "equal". The rules here decide, without sympy, which statement answers may be compared
at all (see the table in ``reward_server/math/README.md``):

* a logical connective, implication, divisibility or quantifier (``\\lor``, ``\\land``, ``\\vee``,
  ``\\wedge``, ``\\neg``, ``\\lnot``, ``\\implies``, ``\\to``, ``\\Rightarrow``, ``\\iff``,
  ``\\Leftrightarrow``, ``\\mid``, ``\\nmid``, ``\\forall``, ``\\exists``, ``\\therefore``, ...) is
  refused unless the answer is literally the reference (decided before this module is asked);
* ``\\approx`` is read as ``=`` (``x \\approx 11`` states the value 11; ``13 \\approx 12`` is refused);
* an equation against a reference that is no equation: each comma-separated part must be
  ``name = value`` with one ``=`` and a name on the left (``x``, ``x_1``, ``f(x)``, ``\\theta``,
  ``AB``, a tuple ``(p, q)``); the value is then compared. ``13 = 12``, ``7 = x+1``, ``0 = 12`` and
  chains ``x = 5 = 12`` are refused;
* equations against an equation, and inequalities, are compared whole by math-verify.
"""
from __future__ import annotations

import re

_LOGIC = re.compile(
    r"\\(?:lor|land|vee|wedge|bigvee|bigwedge|neg|lnot|implies|impliedby|iff|to|gets|rightarrow|Rightarrow|"
    r"leftarrow|Leftarrow|leftrightarrow|Leftrightarrow|longrightarrow|Longrightarrow|longleftarrow|"
    r"Longleftarrow|longleftrightarrow|Longleftrightarrow|mapsto|mid|nmid|divides|therefore|because|forall|"
    r"exists|nexists|vdash|models|top|bot|oplus|veebar)(?![a-zA-Z])"
    r"|[\u2228\u2227\u00ac\u2192\u21d2\u21d4\u2194\u2223\u2200\u2203]"
    r"|\\(?:text|mathrm|textbf)\s*\{\s*(?:not|if|iff|implies|then)\s*\}"
)
_APPROX = re.compile(r"\\(?:approx|simeq|thickapprox)(?![a-zA-Z])|\u2248")  # read as "=" (x \approx 11)
_OPEN, _CLOSE = "([{", ")]}"
# "=" that is not part of <=, >=, != or \ne
_EQUALS = re.compile(r"(?<![<>!\\])=")
_NAME = r"(?:[A-Za-z]{1,3}|\\[a-zA-Z]+)(?:_\{?[A-Za-z0-9]+\}?)?'*(?:\([A-Za-z ,]*\))?"
_NAME_OR_TUPLE = re.compile(rf"\s*(?:{_NAME}|\(\s*{_NAME}(?:\s*,\s*{_NAME})+\s*\))\s*")
_SPACING = re.compile(r"\\[,;:! ]|~|\\q?quad(?![a-zA-Z])|\\left|\\right")


def top_level_split(text: str, separators: str) -> list[str]:
    """``text`` cut at the characters in ``separators`` that are outside every bracket."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth = max(0, depth - 1)
        elif char in separators and depth == 0 and not text[max(0, index - 1)] == "\\":
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def _top_level_equations(text: str) -> int:
    """How many ``=`` signs of ``text`` are outside every bracket."""
    count, depth = 0, 0
    for index, char in enumerate(text):
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth = max(0, depth - 1)
        elif char == "=" and depth == 0 and _EQUALS.match(text, index) and not (
                index > 0 and text[index - 1] in "<>!\\"):
            count += 1
    return count


def is_equation(text: str) -> bool:
    """True if ``text`` has an ``=`` outside brackets."""
    return _top_level_equations(_SPACING.sub(" ", text)) > 0


def statement_reason(answer: str, reference: str) -> str | None:
    """Why ``answer`` (a statement) must not be compared with ``reference``, or ``None``."""
    if _LOGIC.search(answer):
        return "a logical formula or divisibility statement is not a value"
    text = _APPROX.sub("=", _SPACING.sub(" ", answer))
    if _top_level_equations(text) == 0 or is_equation(reference):
        return None
    for part in top_level_split(text, ",;"):
        sides = [side for side in _EQUALS.split(part)]
        if len(sides) == 1:
            continue
        if len(sides) > 2:
            return "a chain of equations asserts more than its value"
        if not _NAME_OR_TUPLE.fullmatch(sides[0]):
            return "an equation whose left side is not a variable"
    return None


def reference_parts(reference: str) -> int:
    """How many answers the reference asks for: its top-level ``,``/``;`` parts (the elements
    of an outer ``\\{...\\}`` set count; a reference that boxes its answer counts its boxes'
    contents), 1 for a single value."""
    from .extract import balanced_boxes

    boxes = balanced_boxes(reference) if "\\boxed" in reference or "\\fbox" in reference else []
    if boxes:  # a reference written as a solution: its boxes hold the answer
        reference = ", ".join(dict.fromkeys(box.text for box in boxes))
    text = _SPACING.sub(" ", reference).strip().strip("$").strip()
    for opener, closer in (("\\{", "\\}"), ("{", "}")):
        if text.startswith(opener) and text.endswith(closer):
            text = text[len(opener): len(text) - len(closer)]
            break
    parts = [p for p in top_level_split(text, ",;") if p.strip()]
    return max(1, len(parts))


_LHS = re.compile(r"(?:^|[\s$(,;:])(?P<lhs>[^\s$=]+)\s*=\s*\$?\s*$")


def context_reason(completion: str, start: int, end: int) -> str | None:
    """For an answer read from running text (``answer is X`` or the last number): the line it
    ends is checked as a statement, so ``So $13 \\lor 12$.`` or ``hence 13 = 12`` is not read as 12.
    A connective anywhere on that line refuses it; an ``=`` (or ``\\approx``) right before the
    answer needs a name on its left (``so x = 12`` passes, ``13 = 12`` does not)."""
    line_start = completion.rfind("\n", 0, start) + 1
    line_end = completion.find("\n", end)
    line = completion[line_start: len(completion) if line_end < 0 else line_end]
    if _LOGIC.search(line):
        return "the answer ends a logical formula"
    before = _APPROX.sub("=", completion[line_start:start])
    if re.search(r"=\s*\$?\s*$", before):
        match = _LHS.search(before)
        if match is None or not _NAME_OR_TUPLE.fullmatch(match.group("lhs")):
            return "the answer ends an equation whose left side is not a variable"
    return None
