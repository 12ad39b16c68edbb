"""The fenced code blocks of the README and docs/*.md, as CommonMark reads them.

A block's ``key`` is a hash of its exact text: tests/test_docs_commands.py registers each block
it runs under its key, so a changed block no longer matches and the test says which one.
``<!-- not run here: WHY -->`` on the line before a block marks it as one the tests do not run.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND_LANGUAGES = {"bash", "sh", "shell", "console", "python"}  # what a reader is told to run
MARKER = re.compile(r"<!--\s*not run here:\s*(.*?)\s*-->", re.S)


@dataclass(frozen=True)
class Block:
    doc: str              # relative to the repository, e.g. "docs/trainer.md"
    line: int             # 1-based line of the opening fence
    language: str         # the info string's first word ("" when untagged)
    text: str
    not_run: Optional[str]  # the marker's reason, when the block is marked

    @property
    def key(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:12]

    @property
    def is_command(self) -> bool:
        return self.language in COMMAND_LANGUAGES

    def where(self) -> str:
        return f"{self.doc}:{self.line} ({self.language or 'untagged'}, key {self.key})"


def blocks(path: Path) -> list[Block]:
    tokens = MarkdownIt("commonmark").parse(path.read_text())
    found, previous = [], None
    for token in tokens:
        if token.type == "fence":
            marker = MARKER.search(previous.content) if previous is not None and previous.type == "html_block" else None
            found.append(Block(str(path.relative_to(ROOT)), token.map[0] + 1, token.info.split(" ")[0] if token.info else "",
                               token.content, marker.group(1) if marker else None))
        if token.type != "inline":
            previous = token
    return found


def all_blocks() -> list[Block]:
    return [b for path in DOCS for b in blocks(path)]
