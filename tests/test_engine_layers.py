"""The encoder layer: LayerNorm, feed-forward, residual arrangement, post-LN against pre-LN."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from engine import multi_head_attention, run_toy
from engine.layers import encoder_layer, feed_forward, layer_norm, toy_encoder_weights


@given(arrays(np.float64, (5, 8), elements=st.floats(-1e3, 1e3)))
def test_layer_norm_gives_zero_mean_unit_variance(x):
    out = layer_norm(x)
    np.testing.assert_allclose(out.mean(axis=-1), 0.0, atol=1e-9)
    var = x.var(axis=-1)
    expected = var / (var + 1e-5)  # eps inside the root shrinks tiny variances
    np.testing.assert_allclose(out.var(axis=-1), expected, rtol=1e-6, atol=1e-9)


def test_layer_norm_gain_and_bias():
    x = np.arange(12.0).reshape(3, 4)
    gamma, beta = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 0.0, -0.5, 1.0])
    np.testing.assert_allclose(layer_norm(x, gamma, beta), layer_norm(x) * gamma + beta)


def test_feed_forward_is_relu_mlp():
    rng = np.random.default_rng(0)
    x, w_1, b_1 = rng.standard_normal((4, 3)), rng.standard_normal((3, 5)), rng.standard_normal(5)
    w_2, b_2 = rng.standard_normal((5, 3)), rng.standard_normal(3)
    hidden, out = feed_forward(x, w_1, b_1, w_2, b_2)
    for i in range(4):
        h = np.array([max(0.0, x[i] @ w_1[:, j] + b_1[j]) for j in range(5)])
        np.testing.assert_allclose(hidden[i], h)
        np.testing.assert_allclose(out[i], h @ w_2 + b_2)


@pytest.fixture
def setup():
    tokens = ["the", "restaurant", "refused", "because", "it", "only", "cooks"]
    run = run_toy(tokens, 16, 4, 0)
    return run.x, toy_encoder_weights(16, 64, 0)


def test_post_ln_matches_its_equation(setup):
    x, w = setup
    layer = encoder_layer(x, w, 4)
    attention = multi_head_attention(x, w.w_q, w.w_k, w.w_v, w.w_o, 4).output
    h = layer_norm(x + attention)
    ffn = np.maximum(h @ w.w_1 + w.b_1, 0) @ w.w_2 + w.b_2
    np.testing.assert_allclose(layer.output, layer_norm(h + ffn))
    np.testing.assert_allclose(layer.streams[1], h)


def test_pre_ln_matches_its_equation(setup):
    x, w = setup
    layer = encoder_layer(x, w, 4, norm_first=True)
    attention = multi_head_attention(layer_norm(x), w.w_q, w.w_k, w.w_v, w.w_o, 4).output
    h = x + attention
    ffn = np.maximum(layer_norm(h) @ w.w_1 + w.b_1, 0) @ w.w_2 + w.b_2
    np.testing.assert_allclose(layer.output, h + ffn)
    np.testing.assert_allclose(layer.update_norms[1], np.linalg.norm(ffn, axis=-1))


@settings(max_examples=20)
@given(st.permutations(range(7)))
def test_encoder_layer_is_permutation_equivariant(permutation):
    tokens = ["the", "restaurant", "refused", "because", "it", "only", "cooks"]
    x = run_toy(tokens, 16, 2, 0).x
    w = toy_encoder_weights(16, 64, 0)
    order = list(permutation)
    np.testing.assert_allclose(
        encoder_layer(x[order], w, 2).output, encoder_layer(x, w, 2).output[order], atol=1e-12
    )


def test_toy_encoder_weights_are_seeded():
    a, b, c = (toy_encoder_weights(8, 32, s) for s in (1, 1, 2))
    assert all(np.array_equal(p, q) for p, q in zip(a, b, strict=True))
    assert not np.array_equal(a.w_1, c.w_1)
