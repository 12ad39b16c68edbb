"""Find the code in a completion: a fenced block if there is one, else the whole text."""
from __future__ import annotations

import re
from dataclasses import dataclass

_OPEN = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n`]*\n")
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


def extract_code(completion: str) -> CodeBlock | None:
    """The first fenced block tagged as TS/JS (else the first fenced block), or the whole text
    when there is no fence. None when there is no code at all (empty or whitespace)."""
    blocks = list(_fenced_blocks(completion))
    if blocks:
        preferred = [b for lang, b in blocks if lang.lower() in _PREFERRED]
        block = preferred[0] if preferred else blocks[0][1]
        return block if block.code.strip() or not block.terminated else None
    if not completion.strip():
        return None
    return CodeBlock(completion, 0, len(completion), fenced=False)


def _fenced_blocks(completion: str):
    position = 0
    while (opening := _OPEN.search(completion, position)) is not None:
        start = opening.end()
        close = completion.find("```", start)
        if close < 0:
            yield opening.group(1), CodeBlock(completion[start:], start, len(completion), True, terminated=False)
            return
        yield opening.group(1), CodeBlock(completion[start:close], start, close, True)
        position = close + 3
