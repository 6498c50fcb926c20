"""The encoder layer: LayerNorm, feed-forward, residual arrangement, post-LN against pre-LN."""

import ast
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import engine
from engine import multi_head_attention, run_toy, softmax
from engine.layers import encoder_layer, feed_forward, gelu, layer_norm, toy_encoder_weights


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
    hidden, out = feed_forward(x, w_1, b_1, w_2, b_2)  # ReLU by default
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
    a, f = w["attn"], w["ffn"]
    layer = encoder_layer(x, **w, n_heads=4)
    attention = multi_head_attention(x, a["w_q"], a["w_k"], a["w_v"], a["w_o"], 4).output
    h = layer_norm(x + attention)
    ffn = np.maximum(h @ f["w_1"] + f["b_1"], 0) @ f["w_2"] + f["b_2"]
    np.testing.assert_allclose(layer.output, layer_norm(h + ffn))
    np.testing.assert_allclose(layer.streams[1], h)


def test_pre_ln_matches_its_equation(setup):
    x, w = setup
    a, f = w["attn"], w["ffn"]
    layer = encoder_layer(x, **w, n_heads=4, norm_first=True)
    attention = multi_head_attention(layer_norm(x), a["w_q"], a["w_k"], a["w_v"], a["w_o"], 4)
    h = x + attention.output
    ffn = np.maximum(layer_norm(h) @ f["w_1"] + f["b_1"], 0) @ f["w_2"] + f["b_2"]
    np.testing.assert_allclose(layer.output, h + ffn)
    np.testing.assert_allclose(layer.update_norms[1], np.linalg.norm(ffn, axis=-1))


def test_biases_gains_and_activation_are_parameters():
    """A trained layer's extras, each written out: biases on every projection, LayerNorm
    gains and biases, a GELU feed-forward, and the weights written where asked."""
    rng = np.random.default_rng(5)
    d, n = 8, 5

    def r(*shape):
        return rng.standard_normal(shape)

    attn = {f"{p}_{m}": r(d, d) if p == "w" else r(d) for p in "wb" for m in "qkvo"}
    ln_1, ln_2 = {"g": r(d), "b": r(d)}, {"g": r(d), "b": r(d)}
    ffn = {"w_1": r(d, 3 * d), "b_1": r(3 * d), "w_2": r(3 * d, d), "b_2": r(d)}
    x = r(n, d)
    weights = np.empty((2, n, n))
    layer = encoder_layer(
        x, attn, ln_1, ffn, ln_2, n_heads=2, activation=gelu, eps=1e-6, weights_out=weights
    )
    heads = []
    for h in range(2):
        cols = slice(4 * h, 4 * h + 4)
        q, k, v = (x @ attn[f"w_{m}"][:, cols] + attn[f"b_{m}"][cols] for m in "qkv")
        heads.append(softmax(q @ k.T / 2.0) @ v)
    h = layer_norm(x + np.hstack(heads) @ attn["w_o"] + attn["b_o"], **ln_1, eps=1e-6)
    inner = h @ ffn["w_1"] + ffn["b_1"]
    exact_gelu = 0.5 * inner * (1 + np.vectorize(math.erf)(inner / math.sqrt(2)))
    y = layer_norm(h + exact_gelu @ ffn["w_2"] + ffn["b_2"], **ln_2, eps=1e-6)
    np.testing.assert_allclose(layer.output, y, atol=1e-5)  # erf in float32's precision
    assert layer.attention.weights is weights


@settings(max_examples=20)
@given(st.permutations(range(7)))
def test_encoder_layer_is_permutation_equivariant(permutation):
    tokens = ["the", "restaurant", "refused", "because", "it", "only", "cooks"]
    x = run_toy(tokens, 16, 2, 0).x
    w = toy_encoder_weights(16, 64, 0)
    order = list(permutation)
    np.testing.assert_allclose(
        encoder_layer(x[order], **w, n_heads=2).output,
        encoder_layer(x, **w, n_heads=2).output[order],
        atol=1e-12,
    )


def test_toy_encoder_weights_are_seeded():
    a, b, c = (toy_encoder_weights(8, 32, s) for s in (1, 1, 2))
    for part in ("attn", "ffn"):
        assert a[part].keys() == b[part].keys()
        assert all(np.array_equal(a[part][name], b[part][name]) for name in a[part])
    assert not np.array_equal(a["ffn"]["w_1"], c["ffn"]["w_1"])


def test_each_operation_is_defined_once_in_the_engine():
    """One softmax, one attention, one layer: no model keeps a copy of its own."""
    shared = {
        "softmax",
        "linear",
        "layer_norm",
        "gelu",
        "feed_forward",
        "scaled_dot_product_attention",
        "multi_head_attention",
        "encoder_layer",
    }
    copies = {"attention", "cross_attention"}  # the names the copies had
    found = Counter(
        node.name
        for path in Path(engine.__file__).parent.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name in shared | copies
    )
    assert found == dict.fromkeys(shared, 1)
