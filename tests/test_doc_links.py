"""Every relative link in the README and the docs points to a file that exists, and every
``#anchor`` to a heading of the page it names (GitHub's heading slugs)."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), ROOT / "sandbox" / "README.md",
         ROOT / "reward_server" / "math" / "README.md"]
PAGES = [p for p in PAGES if "runs" not in p.relative_to(ROOT).parts]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(h) for h in re.findall(r"^#+ (.+)$", page.read_text(), flags=re.M)}


def broken_links(page: Path) -> list[str]:
    """The page's relative links (outside code blocks) whose file or anchor does not exist."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue  # http:, https:, mailto:
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page.resolve()
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no such heading)")
    return broken


def test_the_checker_finds_a_missing_file_and_a_missing_heading(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# A title: with `code`\n")
    page.write_text("[ok](other.md#a-title-with-code) [gone](nope.md) [bad](other.md#nope)\n"
                    "```\n[in code](ignored.md)\n```\n")
    assert broken_links(page) == ["nope.md (no such file)", "other.md#nope (no such heading)"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    assert broken_links(page) == []
