"""The shared span -> token mapper."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from reward_server.scorers.base import ScoreResult, SpanScore
from reward_server.spans import char_scores, check_offsets, default_split, mix, result_from_chars, token_scores


def test_hand_computed_mapping():
    result = ScoreResult(score=-1, passed=False, default=-0.2,
                         spans=[SpanScore(4, 8, -1.0), SpanScore(6, 10, -0.5)])
    chars = char_scores(result, 12)
    assert chars.tolist() == [-0.2] * 4 + [-1.0] * 4 + [-0.5] * 2 + [-0.2] * 2  # overlap: lowest wins
    # a token touching one blamed character is blamed; empty spans take the character at start
    assert token_scores(chars, [(0, 4), (3, 5), (8, 12), (5, 5), (12, 12)]) == [-0.2, -1.0, -0.5, -1.0, -0.2]


def test_spans_replace_the_default_up_or_down():
    """A correct math step (+0.5) rises above a correct completion's neutral text (+0.1)."""
    result = ScoreResult(score=1, passed=True, default=0.1, spans=[SpanScore(0, 3, 0.5), SpanScore(2, 5, 1.0)])
    assert char_scores(result, 6).tolist() == [0.5, 0.5, 0.5, 1.0, 1.0, 0.1]


def test_bounds_and_non_finite_values():
    chars = np.array([5.0, -7.0, np.nan, np.inf])
    assert token_scores(chars, [(0, 1), (1, 2), (2, 3), (3, 4)], bounds=(-1, 1)) == [1.0, -1.0, -1.0, 1.0]


def test_spans_outside_the_completion_are_clipped():
    chars = char_scores(ScoreResult(score=0, passed=None, default=1, spans=[SpanScore(3, 99, -1)]), 5)
    assert chars.tolist() == [1, 1, 1, -1, -1]


def test_check_offsets():
    assert check_offsets([(0, 2), (2, 5)], 5) is None
    assert "token_offsets[1] = [3, 6]" in check_offsets([(0, 2), (3, 6)], 5)
    assert "token_offsets[0] = [2, 1]" in check_offsets([(2, 1)], 5)
    assert "pairs" in check_offsets([(0, 1, 2)], 5)


def test_mix_is_a_weighted_sum():
    a, b = np.array([1.0, -1.0]), np.array([1.0, 1.0])
    assert mix([(0.5, a), (0.5, b)]).tolist() == [1.0, 0.0]
    with pytest.raises(ValueError):
        mix([])


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.sampled_from([-1.0, -0.2, 0.3, 1.0]), min_size=0, max_size=40), data=st.data())
def test_token_score_is_the_minimum_of_its_characters(values, data):
    chars = np.array(values, dtype=np.float64)
    n = len(chars)
    spans = data.draw(st.lists(st.tuples(st.integers(0, n), st.integers(0, n)).map(sorted), max_size=20))
    got = token_scores(chars, spans, empty_default=0.5)
    for (s, e), score in zip(spans, got):
        expected = chars[s:e].min() if e > s else (chars[s] if s < n else (chars[-1] if n else 0.5))
        assert score == pytest.approx(float(np.clip(expected, -1, 1)))


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.sampled_from([-1.0, -0.6, -0.2, 0.4, 1.0]), max_size=60))
def test_result_from_chars_round_trips(values):
    chars = np.array(values, dtype=np.float64)
    result = result_from_chars(chars, score=0.0, passed=None, details={})
    assert char_scores(result, len(chars)).tolist() == chars.tolist()


@given(st.text(max_size=200))
def test_default_split_covers_every_character_once(text):
    spans = default_split(text)
    assert "".join(text[s:e] for s, e in spans) == text
    assert all(s < e for s, e in spans)
