"""benchmarks/blame_policy.py's test of where blame falls, on hand-placed blame."""
import numpy as np

from benchmarks.blame_policy import blamed_at_close

CODE = "```tsx\n<main>\n  <p>x\n</main>\n```"


def blame(start, end):
    chars = np.zeros(len(CODE), dtype=bool)
    chars[start:end] = True
    return chars


def test_blame_on_the_outer_close_counts_blame_at_the_open_tag_does_not():
    span = [7, len(CODE) - 4]
    close, opening = CODE.index("</main>"), CODE.index("<p>")
    assert blamed_at_close(CODE, span, blame(close, close + 3))
    assert not blamed_at_close(CODE, span, blame(opening, opening + 3))
    assert blamed_at_close(CODE, span, blame(len(CODE) - 2, len(CODE)))  # after the code: the fence
    assert not blamed_at_close("no tags", None, np.ones(7, dtype=bool))
