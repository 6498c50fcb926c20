"""The head summaries: their formulas on hand-made weights, and the pass's block-wise sums
against the whole-weights function (engine/summaries.py)."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.attention import causal_mask, scaled_dot_product_attention, sliding_window_mask
from engine.blocked import WHOLE_ROWS, blocked_attention
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


@settings(max_examples=30, deadline=None)
@example(n=600, mask="causal", softcap=None, seed=1)
@example(n=530, mask="window", softcap=5.0, seed=2)
@example(n=700, mask="none", softcap=None, seed=3)
@given(
    n=st.integers(1, 700),
    mask=st.sampled_from(["none", "causal", "window"]),
    softcap=st.sampled_from([None, 5.0]),
    seed=st.integers(0, 2**16),
)
def test_the_blocks_summaries_are_the_whole_weights(n, mask, softcap, seed):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((2, n, 8)).astype(np.float32) * 2 for _ in range(3))
    masks = {"none": None, "causal": causal_mask(n), "window": sliding_window_mask(n, 5)}
    sums = SummarySums(2, n)
    kept = np.empty((2, n, n), dtype=np.float32)
    output = blocked_attention(q, k, v, masks[mask], None, softcap, kept, sums)
    whole = scaled_dot_product_attention(q, k, v, mask=masks[mask], softcap=softcap)
    np.testing.assert_allclose(kept, whole.weights, atol=1e-6)
    np.testing.assert_allclose(output, whole.output, atol=1e-5)
    if n <= WHOLE_ROWS:  # one block: the bits of the whole
        np.testing.assert_array_equal(kept, whole.weights)
    reference = head_summaries(whole.weights)
    for ours, theirs, field in zip(sums.summaries(), reference, reference._fields, strict=True):
        if field == "strongest":  # a strongest key, whatever two weights tie within rounding
            picked = np.take_along_axis(whole.weights, ours[..., None].astype(np.intp), -1)
            np.testing.assert_allclose(picked[..., 0], whole.weights.max(axis=-1), rtol=1e-6)
        else:
            np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=2e-5, err_msg=field)
