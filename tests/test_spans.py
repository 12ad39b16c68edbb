"""The shared span -> token mapper."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from botgrpo.reward_server.scorers.base import SpanScore
from botgrpo.reward_server.spans import char_scores, check_offsets, default_split, token_minima


def test_hand_computed_mapping():
    chars = char_scores([SpanScore(4, 8, -1.0), SpanScore(6, 10, -0.5)], -0.2, 12)
    assert chars.tolist() == [-0.2] * 4 + [-1.0] * 4 + [-0.5] * 2 + [-0.2] * 2  # overlap: lowest wins
    # a token touching one blamed character is blamed; empty spans take the character at start
    got = token_minima(chars, [(0, 4), (3, 5), (8, 12), (5, 5), (12, 12)], fill=0.0)
    assert got.tolist() == [-0.2, -1.0, -0.5, -1.0, -0.2]


def test_an_empty_completion_takes_the_fill():
    assert token_minima(np.zeros(0), [(0, 0)], fill=-1.0).tolist() == [-1.0]


def test_spans_outside_the_completion_are_clipped():
    assert char_scores([SpanScore(3, 99, -1)], 0, 5).tolist() == [0, 0, 0, -1, -1]


def test_check_offsets():
    assert check_offsets([(0, 2), (2, 5)], 5) is None
    assert "token_offsets[1] = [3, 6]" in check_offsets([(0, 2), (3, 6)], 5)
    assert "token_offsets[0] = [2, 1]" in check_offsets([(2, 1)], 5)
    assert "pairs" in check_offsets([(0, 1, 2)], 5)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.sampled_from([-1.0, -0.2, 0.3, 1.0]), min_size=0, max_size=40), data=st.data())
def test_token_value_is_the_minimum_of_its_characters(values, data):
    chars = np.array(values, dtype=np.float64)
    n = len(chars)
    spans = data.draw(st.lists(st.tuples(st.integers(0, n), st.integers(0, n)).map(sorted), max_size=20))
    got = token_minima(chars, spans, fill=0.5)
    for (s, e), value in zip(spans, got):
        expected = chars[s:e].min() if e > s else (chars[s] if s < n else (chars[-1] if n else 0.5))
        assert value == pytest.approx(float(expected))


@given(st.text(max_size=200))
def test_default_split_covers_every_character_once(text):
    spans = default_split(text)
    assert "".join(text[s:e] for s, e in spans) == text
    assert all(s < e for s, e in spans)
