"""benchmarks.chain_blame's two measures on hand-made scorer results (the sampling and scoring
around them are the trainer's and the math scorer's, tested where they live)."""
from benchmarks.chain_blame import blamed_share, first_blamed_line
from botgrpo.reward_server.scorers.base import ScoreResult, SpanScore

TEXT = "1: 5 + 3 = 8\n2: 8 - 2 = 7\n3: 7 + 1 = 8\nThe answer is \\boxed{8}."  # lines start at 0, 13, 26, 39


def result(spans, default=0.0):
    return ScoreResult(score=-1.0, passed=False, local=[SpanScore(*s) for s in spans], local_default=default)


def test_the_first_blamed_line_is_the_line_of_the_earliest_negative_span():
    assert first_blamed_line(result([(26, 38, -1.0), (13, 25, -0.5)]), TEXT) == 1
    assert first_blamed_line(result([(0, 12, 0.0), (39, 64, -1.0)]), TEXT) == 3  # a zero span blames nothing
    assert first_blamed_line(result([]), TEXT) is None
    assert first_blamed_line(result([], default=-1.0), TEXT) == 0  # blame everywhere starts at the first line


def test_the_blamed_share_counts_characters_once():
    assert blamed_share(result([(13, 26, -1.0)]), TEXT) == 13 / len(TEXT)
    assert blamed_share(result([(13, 26, -1.0), (20, 26, -0.5)]), TEXT) == 13 / len(TEXT)  # overlap once
    assert blamed_share(result([], default=-1.0), TEXT) == 1.0
    assert blamed_share(result([(0, 5, 0.0)]), TEXT) == 0.0
    # a covered character takes the lowest of its spans, an uncovered one the default
    assert blamed_share(result([(0, 13, 0.0)], default=-1.0), TEXT) == (len(TEXT) - 13) / len(TEXT)
    assert blamed_share(result([(0, 13, 0.0), (0, 13, -1.0)]), TEXT) == 13 / len(TEXT)
