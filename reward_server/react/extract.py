"""Find the code in a completion: a fenced block if there is one, else the whole text.

Linear in the completion, whatever it holds: an opening fence is three backticks, an optional
tag, and the rest of its line, which must end in a newline before any further backtick. The
line is scanned once, up to the next backtick (a regex with a greedy tag followed by
``[^\n`]*`` backtracked quadratically on an unclosed fence: ``"```" + "a" * 50000`` took 10 s
while holding the GIL).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_TAG = re.compile(r"[ \t]*([A-Za-z0-9_+.-]*)")  # the two parts share no character: no backtracking
_PREFERRED = {"tsx", "jsx", "typescript", "ts", "javascript", "js", "react"}


@dataclass(frozen=True)
class CodeBlock:
    """``completion[start:end] == code``. ``terminated`` is False when a fence was opened and
    never closed: the output was cut off, so the whole of it is suspect."""

    code: str
    start: int
    end: int
    fenced: bool
    terminated: bool = True


def extract_code(completion: str, truncated: bool = False) -> CodeBlock | None:
    """The first fenced block tagged as TS/JS (else the first fenced block), or the whole text
    when there is no fence. None when there is no code at all (empty or whitespace).

    ``truncated``: the completion was cut off by a token limit (``finish_reason: length``).
    Unfenced code is then cut off too, so its block is unterminated: without this, a policy
    learns to drop the fence and run into the limit, where the parser reports at the end of
    the file and the cut-off text goes unblamed."""
    blocks = list(_fenced_blocks(completion))
    if blocks:
        preferred = [b for lang, b in blocks if lang.lower() in _PREFERRED]
        block = preferred[0] if preferred else blocks[0][1]
        return block if block.code.strip() or not block.terminated else None
    if not completion.strip():
        return None
    return CodeBlock(completion, 0, len(completion), fenced=False, terminated=not truncated)


def _opening(completion: str, position: int) -> tuple[str, int] | None:
    """``(tag, offset after the fence's line)`` of the first opening fence at or after ``position``.

    Each attempt scans at most to the next backtick, and the next attempt starts after this
    fence, so the scans do not overlap: linear overall.
    """
    while (fence := completion.find("```", position)) >= 0:
        tag = _TAG.match(completion, fence + 3)
        backtick = completion.find("`", tag.end())
        newline = completion.find("\n", tag.end(), backtick if backtick >= 0 else len(completion))
        if newline >= 0:
            return tag.group(1), newline + 1
        position = fence + 1
    return None


def _fenced_blocks(completion: str):
    position = 0
    while (opening := _opening(completion, position)) is not None:
        tag, start = opening
        close = completion.find("```", start)
        if close < 0:
            yield tag, CodeBlock(completion[start:], start, len(completion), True, terminated=False)
            return
        yield tag, CodeBlock(completion[start:close], start, close, True)
        position = close + 3
