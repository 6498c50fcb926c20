"""Linear attention and sparse patterns: oracles, properties, and the tutorial formula's flaw."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import engine
from engine.efficient import (
    PATTERNS,
    attention_patterns,
    block_sparse_mask,
    elu_feature_map,
    linear_attention,
    linear_attention_weights,
    pattern_errors,
    sliding_window_mask,
    strided_mask,
)

finite = st.floats(-4, 4, allow_nan=False, allow_infinity=False)


@st.composite
def qkv(draw, same_length=False):
    n_q = draw(st.integers(1, 150))
    n_k = n_q if same_length else draw(st.integers(1, 40))
    d_k, d_v = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    return (
        draw(arrays(np.float64, (n_q, d_k), elements=finite)),
        draw(arrays(np.float64, (n_k, d_k), elements=finite)),
        draw(arrays(np.float64, (n_k, d_v), elements=finite)),
    )


def quadratic_form(q, k, v, causal):
    """φ(Q)φ(K)ᵀ, masked, row-normalised, times V: the (n, n) form written out."""
    kernel = elu_feature_map(q) @ elu_feature_map(k).T
    if causal:
        kernel = np.tril(kernel)
    return (kernel / kernel.sum(axis=1, keepdims=True)) @ v


def causal_cumsum_form(q, k, v):
    """The paper's causal form with every prefix sum S_i = Σ_{j<=i} φ(k_j) v_jᵀ materialised."""
    phi_q, phi_k = elu_feature_map(q), elu_feature_map(k)
    s = np.cumsum(phi_k[:, :, None] * v[:, None, :], axis=0)  # [n, d_k, d_v]
    z = np.cumsum(phi_k, axis=0)  # [n, d_k]
    return np.einsum("nd,nde->ne", phi_q, s) / np.einsum("nd,nd->n", phi_q, z)[:, None]


def test_elu_feature_map_is_elu_plus_one_and_positive():
    x = np.array([-800.0, -3.0, -1e-9, 0.0, 0.5, 3.0, 1e6])
    phi = elu_feature_map(x)
    np.testing.assert_allclose(phi[1:], [np.exp(-3.0), np.exp(-1e-9), 1.0, 1.5, 4.0, 1e6 + 1])
    assert phi[0] == 0.0  # underflow, quietly: no overflow warning from the unused branch
    assert np.all(elu_feature_map(np.linspace(-50, 50, 101)) > 0)


@settings(max_examples=60, deadline=None)
@given(qkv())
def test_linear_attention_equals_its_quadratic_form(args):
    q, k, v = args
    out = linear_attention(q, k, v)
    assert out.shape == (q.shape[0], v.shape[1])
    np.testing.assert_allclose(out, quadratic_form(q, k, v, causal=False), rtol=1e-9, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(qkv(same_length=True))
def test_causal_linear_attention_equals_masked_quadratic_and_prefix_sum_forms(args):
    q, k, v = args  # up to 150 tokens: several chunks of 64
    out = linear_attention(q, k, v, causal=True)
    np.testing.assert_allclose(out, quadratic_form(q, k, v, causal=True), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out, causal_cumsum_form(q, k, v), rtol=1e-9, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(qkv(same_length=True), st.booleans())
def test_weights_matrix_is_what_linear_attention_applies(args, causal):
    q, k, v = args
    weights = linear_attention_weights(q, k, causal=causal)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(weights >= 0)
    if causal:
        assert np.all(np.triu(weights, k=1) == 0)
    np.testing.assert_allclose(linear_attention(q, k, v, causal), weights @ v, atol=1e-9)


def test_causal_output_of_a_token_ignores_later_tokens():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((200, 8)) for _ in range(3))
    out = linear_attention(q, k, v, causal=True)
    k2, v2 = k.copy(), v.copy()
    k2[100:], v2[100:] = 0.0, 99.0
    np.testing.assert_allclose(linear_attention(q, k2, v2, causal=True)[:100], out[:100])


def test_engine_exports_linear_attention():
    assert engine.linear_attention is linear_attention


@pytest.mark.parametrize(
    ("shapes", "causal", "message"),
    [
        (((4, 3), (4, 2), (4, 5)), False, "same d_k"),
        (((4, 3), (4, 3), (5, 5)), False, "same number of keys"),
        (((4, 3), (6, 3), (6, 5)), True, "as many queries as keys"),
        (((2, 4, 3), (2, 4, 3), (2, 4, 3)), False, "2-D"),
    ],
)
def test_bad_shapes_are_named(shapes, causal, message):
    q, k, v = (np.ones(shape) for shape in shapes)
    with pytest.raises(ValueError, match=message):
        linear_attention(q, k, v, causal=causal)


def test_tutorial_formula_is_not_kernel_attention():
    """The circulating formula fails on its own example and is not an average of values."""

    def tutorial(Q, K, V):
        q_sum = np.sum(Q, axis=1, keepdims=True)
        k_sum = np.sum(K, axis=1, keepdims=True)
        return np.dot(Q, np.dot(K.T, V)) / np.dot(q_sum, k_sum.T)

    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1000, 64)) for _ in range(3))
    with pytest.raises(ValueError, match="broadcast"):
        tutorial(q, k, v)  # (1000, 64) / (1000, 1000)
    implied = q @ k.T  # the weights it would apply, without a feature map
    assert (implied < 0).any()
    out = linear_attention(q, k, v)
    assert np.all(out <= v.max(axis=0) + 1e-12)  # a convex combination of the values
    assert np.all(out >= v.min(axis=0) - 1e-12)


@pytest.mark.parametrize("n", [1, 2, 7, 16])
@pytest.mark.parametrize("window", [0, 1, 3, 20])
def test_sliding_window_is_a_band(n, window):
    mask = sliding_window_mask(n, window)
    i, j = np.indices((n, n))
    np.testing.assert_array_equal(mask, np.abs(i - j) <= window)
    assert np.array_equal(mask, mask.T)
    assert mask.diagonal().all()
    if window < n:
        assert mask.sum() == n + 2 * sum(n - d for d in range(1, window + 1))


def test_strided_and_fixed_patterns_follow_child_et_al():
    strided = strided_mask(10, 3)
    i, j = np.indices((10, 10))
    causal = np.tril(strided)
    np.testing.assert_array_equal(causal, (j <= i) & ((i - j <= 3) | ((i - j) % 3 == 0)))
    assert strided[[9, 9], [0, 1]].tolist() == [True, False]  # 9 is a multiple of 3; 8 is not
    fixed = block_sparse_mask(9, 3)
    assert fixed[4, [3, 5]].all()  # same block
    assert fixed[7, [2, 5]].all()  # the summary columns of the earlier blocks
    assert not fixed[7, [0, 1, 3, 4]].any()
    for mask in (strided, fixed):
        assert mask.diagonal().all()


@pytest.mark.parametrize("bad", [(sliding_window_mask, -1), (strided_mask, 0)])
def test_masks_reject_bad_sizes(bad):
    fn, size = bad
    with pytest.raises(ValueError, match=">="):
        fn(5, size)


@pytest.fixture(scope="module")
def toy_head():
    rng = np.random.default_rng(3)
    return tuple(rng.standard_normal((30, 8)) for _ in range(3))


@pytest.mark.parametrize("causal", [False, True])
def test_every_pattern_has_rows_that_sum_to_one(toy_head, causal):
    patterns = attention_patterns(*toy_head, window=2, stride=5, causal=causal)
    assert tuple(p.name for p in patterns) == PATTERNS
    for pattern in patterns:
        np.testing.assert_allclose(pattern.weights.sum(axis=1), 1.0)
        assert np.all(pattern.weights[~pattern.mask] == 0)
        np.testing.assert_allclose(pattern.output, pattern.weights @ toy_head[2], atol=1e-12)
        if causal:
            assert not np.triu(pattern.mask, k=1).any()


def test_patterns_with_everything_in_view_are_full_softmax(toy_head):
    patterns = attention_patterns(*toy_head, window=30, stride=30)
    errors = {row.name: row for row in pattern_errors(patterns)}
    assert errors["full softmax"].output_max == 0.0
    assert errors["sliding window"].density == 1.0
    assert errors["sliding window"].weights_max < 1e-15
    assert errors["linear (elu + 1)"].weights_mae > 0  # a different kernel, not an approximation


def test_errors_are_measured_against_full_softmax(toy_head):
    patterns = attention_patterns(*toy_head, window=1, stride=4)
    rows = pattern_errors(patterns)
    window = rows[2]
    expected = np.abs(patterns[2].output - patterns[0].output)
    assert window.output_mae == pytest.approx(expected.mean())
    assert window.output_max == pytest.approx(expected.max())
    assert window.density == pytest.approx(patterns[2].mask.sum() / 900)
    assert window.output_relative > 0


def test_causal_form_carries_its_sums_across_many_chunks():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1000, 4)) for _ in range(3))
    np.testing.assert_allclose(
        linear_attention(q, k, v, causal=True), quadratic_form(q, k, v, True), atol=1e-12
    )
