"""The head summaries: their formulas on hand-made weights, and the pass's block-wise sums
against the whole-weights function (engine/summaries.py)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.summaries import HeadSummaries, SummarySums, head_summaries


def _softmax_rows(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def test_formulas_on_a_hand_made_head():
    w = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.25, 0.25, 0.5]], dtype=np.float32)
    s = head_summaries(w)
    assert s.first_token == pytest.approx((1 + 0.5 + 0.25) / 3)
    assert s.entropy == pytest.approx((0 + 1 + 1.5) / 3)  # bits
    assert s.distance == pytest.approx((0 + 0.5 + (0.25 * 2 + 0.25 * 1)) / 3)
    assert s.previous == pytest.approx((0.5 + 0.25) / 2)
    np.testing.assert_array_equal(s.strongest, [0, 0, 2])
    assert s.strongest.dtype == np.int32


def test_one_token_has_no_previous():
    s = head_summaries(np.ones((2, 1, 1), dtype=np.float32))
    np.testing.assert_array_equal(s.previous, [0, 0])
    np.testing.assert_array_equal(s.entropy, [0, 0])


def test_leading_dimensions_and_bad_shape():
    w = _softmax_rows(np.random.default_rng(0).standard_normal((2, 3, 5, 5)))
    s = head_summaries(w)
    assert isinstance(s, HeadSummaries)
    assert s.first_token.shape == (2, 3)
    assert s.strongest.shape == (2, 3, 5)
    with pytest.raises(ValueError, match=r"\(\.\.\., n, n\)"):
        head_summaries(np.ones((3, 4)))


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 40),
    block=st.integers(1, 17),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_block_sums_agree_with_whole_weights(n, block, causal, seed):
    x = np.random.default_rng(seed).standard_normal((2, n, n)) * 3
    if causal:
        x = np.where(np.tril(np.ones((n, n), dtype=bool)), x, -np.inf)
    w = _softmax_rows(x)
    sums = SummarySums(2, n)
    for head in range(2):
        for start in range(0, n, block):
            rows = slice(start, min(start + block, n))
            sums.add(head, rows, w[head, rows])
    whole = head_summaries(w)
    for ours, reference in zip(sums.summaries(), whole, strict=True):
        np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-5)
