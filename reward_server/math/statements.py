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
* equations against an equation, and inequalities, are compared whole by math-verify;
* a relation the rules do not understand is never compared (:func:`understood_relations`: the
  worker refuses a conversion that holds more relations than the text has understood ones).

An answer read from running text is checked in its context (issue 34): it must stand alone
(:func:`operand_reason`: ``13 | 12``, ``\\cancel{13} 12``, ``11 or 12`` are refused) and not be
negated (:func:`negation_reason`: "The answer is not 12"); :func:`reading_reason` picks the checks
for an extraction method. Everything here is linear in the text and looks at most
:data:`CONTEXT_CHARS` characters around an answer for its neighbours.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from botgrpo.reward_server.math.guard import GREEK

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
CONTEXT_CHARS = 200  # how far around an answer read from text its neighbours are looked for
# "=" that is not part of <=, >=, != or \ne
_EQUALS = re.compile(r"(?<![<>!\\])=")
_NAME_COMMANDS = "|".join(sorted(GREEK | {"gamma", "Gamma", "ell"}))  # a command is a name only if it is a letter
_NAME = rf"(?:[A-Za-z]{{1,3}}|\\(?:{_NAME_COMMANDS})(?![a-zA-Z]))(?:_\{{?[A-Za-z0-9]+\}}?)?'*(?:\([A-Za-z ,]*\))?"
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


# the relations the rules here understand: equations (``\\approx`` read as ``=``), inequalities, membership
_RELATION = re.compile(
    r"<=|>=|!=|(?<![<>!\\:])=|<|>|[\u2264\u2265\u2260\u2248\u2208\u2209]"
    r"|\\(?:eq|neq|ne|leq?|geq?|leqslant|geqslant|lt|gt|in|notin|approx|simeq|thickapprox)(?![a-zA-Z])")


def understood_relations(text: str) -> int:
    """How many relations of ``text`` the statement rules understand. A conversion of ``text``
    that holds more (``13 \\equiv 12`` is converted to ``Eq(13, 12)``) read a relation they do not
    know, and is refused."""
    return len(_RELATION.findall(text))


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
    from botgrpo.reward_server.math.extract import balanced_boxes

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
    """For an answer read from running text (``answer is X``, the last number, or the number
    math-verify's own extraction falls back to): the text around it is checked as a statement,
    so ``So $13 \\lor 12$.``, ``hence 13 = 12``, ``so 13 | 12``, ``It is 11 or 12.`` and ``The
    answer is not 12`` are not read as 12.

    * a connective anywhere on its line refuses it;
    * an ``=`` (or ``\\approx``) right before it needs a name on its left (``so x = 12`` passes,
      ``13 = 12`` does not), or must end an arithmetic chain that :mod:`.steps` checks true
      (``x = 13 + 5 = 18`` passes, ``13 = 6 + 6 = 12`` does not);
    * it (or the ``name = value`` it ends) must stand alone (:func:`operand_reason`), and it must
      not be negated (:func:`negation_reason`)."""
    line_start = completion.rfind("\n", 0, start) + 1
    line_end = completion.find("\n", end)
    line = completion[line_start: len(completion) if line_end < 0 else line_end]
    if _LOGIC.search(line):
        return "the answer ends a logical formula"
    line_start = max(line_start, start - CONTEXT_CHARS)  # the equation before it is near it
    before = _APPROX.sub("=", completion[line_start:start])
    if re.search(r"=\s*\$?\s*$", before):
        match = _LHS.search(before)
        if match is None or not _NAME_OR_TUPLE.fullmatch(match.group("lhs")):
            chain = _true_chain_ending_at(completion, line_start, line_end, end)
            # chain == start: the checked chain is itself the right side of an unchecked ``=``
            # (``2. + 1. = 3 + 5 = 8``, SmolLM2): refused, where reading it again would never end
            if chain is None or chain >= start:
                return "the answer ends an equation whose left side is not a variable"
            return context_reason(completion, chain, end)  # ``x = 13 + 5 = 18``: the checked chain, whole
        equation_start = line_start + match.start("lhs")  # ``x = 12`` must stand alone (``x = 7 or x = 12``)
        return operand_reason(completion, equation_start, end) or negation_reason(completion, start, end)
    return operand_reason(completion, start, end) or negation_reason(completion, start, end)


def _true_chain_ending_at(completion: str, line_start: int, line_end: int, end: int) -> int | None:
    """Start of the arithmetic chain that ends at ``end`` when :mod:`.steps` checks it true
    (``13 + 5 = 18``), else ``None``: its last side is then a value the chain computed."""
    from botgrpo.reward_server.math.steps import find_steps

    line = completion[line_start: len(completion) if line_end < 0 else line_end]
    for step in find_steps(line):
        if line_start + step.end == end and step.ok:
            return line_start + step.start
    return None


_MARKDOWN_AFTER = re.compile(r"(?:\*\*|__|\s)+")
_COMMAND_BEFORE = re.compile(r"\\[A-Za-z]+\s*$")
_WORD_BEFORE = re.compile(r"(?<![\\A-Za-z])([A-Za-z]+)$")
_OPENS = re.compile(r"(?:[(\[:$.!?]|\\boxed\s*\{|\\fbox\s*\{|\\[(\[])$")
_LIST_LABEL = re.compile(r"\s*(?:[*\u2022]|\(?[A-Za-z0-9]{1,3}[).])")  # "1)", "(a)", "b." or a bullet opening the line
_LIST_WORDS = frozenset({"or", "and", "nor"})
_VALUE_END = re.compile(r"[\d$})\]]\s*$")
# what may follow a value: prose, punctuation, a closing bracket or delimiter, a unit, a degree sign
_CLOSES = re.compile(r"\\(?:text|textrm|textnormal|textbf|textit|mbox|mathrm|rm|quad|qquad|[%$,;! )\]])(?![A-Za-z])"
                     r"|\^\s*\{?\s*\\circ")
_OPERATOR_CHARS = frozenset("+-*/^=<>|~&\\")


def _without_markdown_end(text: str) -> str:
    """``text`` without the spaces and markdown ``**`` / ``__`` it ends with."""
    while True:
        text = text.rstrip()
        if not text.endswith(("**", "__")):
            return text
        text = text[:-2]


def _is_operator(char: str) -> bool:
    """An operator or relation sign: ASCII ``+-*/^=<>|~&\\`` or a Unicode math symbol."""
    return char in _OPERATOR_CHARS or unicodedata.category(char) == "Sm"


def _is_dash(char: str) -> bool:
    """A Unicode dash (en, em, ...): punctuation in prose, a range between two values."""
    return char != "-" and unicodedata.category(char) == "Pd"


def operand_reason(completion: str, start: int, end: int) -> str | None:
    """Why a value read from running text (or from math the converter could not read) is not an
    answer on its own, or ``None``.

    The check reads only what it positively understands. Before the value (on its line, spaces
    and markdown ``**`` skipped) may stand nothing, a list label (``1)``, ``(a)``), a word, an
    opening bracket, ``:``, a sentence's end, a dash after a word, a math delimiter or a box
    opener; after it, nothing, prose, punctuation, a closing bracket or delimiter, a unit
    (``\\text{cm}``, ``\u20ac``, ``m\u00b2``) or a degree sign. Anything else
    (``13 | 12``, ``13 \\equiv 12``, ``11\u201312``, ``\\cancel{13} 12``, ``1 + \\frac{1}{e}``) makes it
    an operand of a relation or operation the check does not read: refused, not read as the
    statement's part. A value joined to a value before it by ``,``, ``;``, a dash, ``or``, ``and`` or
    ``nor`` ends a list or range: the list, not its last item, is what was said (a dash from the
    value to another starts one)."""
    return _after_reason(completion, end) or _before_reason(completion, start)


def _after_reason(completion: str, end: int) -> str | None:
    after = completion[end: end + CONTEXT_CHARS].split("\n", 1)[0]
    skipped = _MARKDOWN_AFTER.match(after)
    after = after[skipped.end():] if skipped else after
    if after and _is_dash(after[0]) and after[1:].lstrip()[:1].isdigit():
        return "the value starts a range"
    if after and not _CLOSES.match(after) and _is_operator(after[0]):
        return f"the value is an operand of {after[:12]!r}, which the check does not read"
    return None


def _before_reason(completion: str, start: int) -> str | None:
    line_start = completion.rfind("\n", max(0, start - CONTEXT_CHARS), start) + 1
    before = _without_markdown_end(completion[max(line_start, start - CONTEXT_CHARS):start])
    if not before or _OPENS.search(before) or _LIST_LABEL.fullmatch(before):
        return None
    command = _COMMAND_BEFORE.search(before)
    if command is not None:
        return f"the value is an operand of {command.group().strip()}"
    word = _WORD_BEFORE.search(before)
    if word is not None:
        joins_list = word.group(1).lower() in _LIST_WORDS and _VALUE_END.search(before[: word.start()])
        return "the value ends a list of values" if joins_list else None
    if before[-1] in ",;" or _is_dash(before[-1]):
        return "the value ends a list or range of values" if _VALUE_END.search(before[:-1]) else None
    return f"the value is an operand of {before[-12:]!r}, which the check does not read"


_NEGATION = re.compile(r"(?:not|never|cannot|neither|nor|[A-Za-z]+n['\u2019]t)", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.!?;:,](?=\s|$)|\n")
_OPENING = re.compile(r"(?:\\boxed\s*\{|\\fbox\s*\{|\$|\\[(\[]|\s|\*\*)+$")
_CLOSING = re.compile(r"(?:\}|\$|\\[)\]]|\s|\*\*)+")
_WORDS = re.compile(r"(?<![\\A-Za-z])[A-Za-z]+(?:['\u2019][A-Za-z]+)?")
_NEGATED_AFTER = re.compile(
    r"(?:is|are|was|were|be)\s+(?:not|never)\b|(?:isn|aren|wasn|weren)['\u2019]t\b", re.IGNORECASE)
NEGATION_REACH = 4  # words between a negation and the value it governs


def negation_reason(completion: str, start: int, end: int) -> str | None:
    """Why the answer at ``completion[start:end]`` is negated, or ``None``: "The answer is not 12",
    "certainly not \\boxed{12}", "12 is not the answer" state that 12 is *not* the answer.

    A negation (``not``, ``never``, ``cannot``, ``neither``, ``nor``, ``...n't``) governs the answer
    when it is among the :data:`NEGATION_REACH` words before it in its clause with no value in
    between ("not 10, it's 12" and "the number is not 10 which is 12" negate 10, not 12), or when
    the answer is followed by ``is not`` / ``isn't`` (box and math delimiters skipped)."""
    before = _OPENING.sub("", completion[max(0, start - CONTEXT_CHARS):start])
    clause_start = max((m.end() for m in _CLAUSE_END.finditer(before)), default=0)
    clause = before[clause_start:]
    value = max((m.end() for m in re.finditer(r"[\d$]", clause)), default=0)
    words = _WORDS.findall(clause[value:])[-NEGATION_REACH:]
    if any(_NEGATION.fullmatch(word) for word in words):
        return "the answer is negated"
    after = _CLOSING.match(completion, end)
    if _NEGATED_AFTER.match(completion, after.end() if after else end):
        return "the answer is negated"
    return None


# how an answer read under each extraction method is checked in the text around it (``latex``
# readings are checked in the worker, where math-verify's own extraction is seen)
READING_CHECKS: dict[str, Callable[[str, int, int], str | None]] = {
    "phrase": context_reason, "last_number": context_reason, "boxed": negation_reason, "boxes": negation_reason,
}


def reading_reason(completion: str, method: str, start: int, end: int) -> str | None:
    """Why the answer read by ``method`` at ``completion[start:end]`` is not what the completion
    answers (:data:`READING_CHECKS`), or ``None``."""
    check = READING_CHECKS.get(method)
    return None if check is None else check(completion, start, end)
