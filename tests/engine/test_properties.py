"""Property tests (hypothesis) for softmax, attention, multi-head attention and the toy model.

The properties are the ones the explainer states on screen: rows sum to one, causal
weights vanish above the diagonal, attention without positions is permutation
equivariant (and is not once positions are added), the scale sweeps weights from
uniform to one-hot, and the same inputs give the same bits.
"""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import engine

SETTINGS = settings(deadline=None, max_examples=150)

BOUND = 1e4


def _floats(bound=BOUND):
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False)


def _matrix(rows, cols, bound=BOUND):
    return hnp.arrays(np.float64, (rows, cols), elements=_floats(bound))


@st.composite
def qkv(draw, bound=BOUND, max_n=6, max_d=5):
    n_q = draw(st.integers(1, max_n))
    n_k = draw(st.integers(1, max_n))
    d_k = draw(st.integers(1, max_d))
    d_v = draw(st.integers(1, max_d))
    q = draw(_matrix(n_q, d_k, bound))
    k = draw(_matrix(n_k, d_k, bound))
    v = draw(_matrix(n_k, d_v, bound))
    return q, k, v


@st.composite
def qkv_mask(draw, bound=BOUND):
    q, k, v = draw(qkv(bound=bound))
    mask = draw(hnp.arrays(np.bool_, (q.shape[0], k.shape[0])))
    return q, k, v, mask


scales = st.floats(1e-3, 1e3)


# --- softmax -------------------------------------------------------------------------


@SETTINGS
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
        elements=st.floats(allow_nan=False, allow_infinity=False),
    )
)
@example(np.array([1.7e308, -1.7e308]))  # x - max overflows to -inf: must stay silent
@example(np.array([[-1.7e308, 0.0, 1.7e308]]))
def test_softmax_is_finite_and_normalised_for_every_finite_input(x):
    p = engine.softmax(x)
    assert np.all(np.isfinite(p))
    assert np.all(p >= 0)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-12)


@SETTINGS
@given(
    hnp.arrays(np.float64, st.integers(1, 8), elements=_floats(100)),
    st.floats(-BOUND, BOUND),
)
def test_softmax_invariant_to_adding_a_constant(x, c):
    np.testing.assert_allclose(engine.softmax(x + c), engine.softmax(x), rtol=0, atol=1e-9)


@SETTINGS
@given(st.integers(1, 6), st.integers(1, 6), st.data())
def test_softmax_of_all_minus_inf_slice_is_zeros(rows, cols, data):
    x = data.draw(_matrix(rows, cols, 50))
    dead = data.draw(hnp.arrays(np.bool_, rows))
    x[dead] = -np.inf
    p = engine.softmax(x)
    assert not np.any(np.isnan(p))
    np.testing.assert_array_equal(p[dead], 0.0)
    np.testing.assert_allclose(p[~dead].sum(axis=-1), 1.0, atol=1e-12)


@SETTINGS
@given(hnp.arrays(np.float64, (3, 4), elements=_floats(50)), st.sampled_from([0, 1, -1, -2]))
def test_softmax_axis_matches_moving_the_axis_last(x, axis):
    expected = np.moveaxis(engine.softmax(np.moveaxis(x, axis, -1)), -1, axis)
    np.testing.assert_array_equal(engine.softmax(x, axis=axis), expected)


# --- scaled dot-product attention -----------------------------------------------------


@SETTINGS
@given(qkv_mask(), scales)
def test_rows_sum_to_one_whenever_any_key_is_allowed(inputs, scale):
    q, k, v, mask = inputs
    weights = engine.scaled_dot_product_attention(q, k, v, mask=mask, scale=scale).weights
    live = mask.any(axis=-1)
    np.testing.assert_allclose(weights[live].sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(weights[~live], 0.0)
    np.testing.assert_array_equal(weights[~mask], 0.0)


@SETTINGS
@given(qkv_mask(), scales, st.booleans())
def test_no_nan_or_inf_for_bounded_inputs_and_scales(inputs, scale, use_mask):
    q, k, v, mask = inputs
    result = engine.scaled_dot_product_attention(
        q, k, v, mask=mask if use_mask else None, scale=scale
    )
    assert np.all(np.isfinite(result.weights))
    assert np.all(np.isfinite(result.output))
    assert np.all(np.abs(result.output) <= BOUND * (1 + 1e-12))  # a convex mix of the values


@SETTINGS
@given(st.integers(1, 7), st.integers(1, 4), st.data())
def test_causal_weights_above_diagonal_are_exactly_zero(n, d_k, data):
    q, k, v = (data.draw(_matrix(n, d_k)) for _ in range(3))
    scale = data.draw(scales)
    weights = engine.scaled_dot_product_attention(q, k, v, engine.causal_mask(n), scale).weights
    assert np.all(weights[np.triu_indices(n, 1)] == 0.0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(weights[0, 0], 1.0, atol=1e-15)  # the first token sees itself only


@SETTINGS
@given(qkv_mask(bound=100.0))
def test_scale_zero_gives_uniform_rows_over_allowed_keys(inputs):
    q, k, v, mask = inputs
    weights = engine.scaled_dot_product_attention(q, k, v, mask=mask, scale=0.0).weights
    allowed = mask.sum(axis=-1, keepdims=True)
    expected = np.divide(mask, allowed, out=np.zeros(mask.shape), where=allowed > 0)
    np.testing.assert_allclose(weights, expected, rtol=0, atol=1e-15)


@SETTINGS
@given(qkv(bound=100.0))
def test_scale_towards_zero_gives_uniform_rows(inputs):
    q, k, v = inputs
    weights = engine.scaled_dot_product_attention(q, k, v, scale=1e-9).weights
    np.testing.assert_allclose(weights, 1.0 / k.shape[0], rtol=1e-4)


@st.composite
def scores_with_unique_argmax(draw):
    """A score matrix whose every row has a unique maximum, ahead by a known margin."""
    n_q, n_k = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    scores = draw(_matrix(n_q, n_k, 100.0))
    winners = draw(hnp.arrays(np.int64, n_q, elements=st.integers(0, n_k - 1)))
    margin = draw(st.floats(1e-2, 10.0))
    rows = np.arange(n_q)
    others = scores.copy()
    others[rows, winners] = -np.inf
    scores[rows, winners] = others.max(axis=-1) + margin if n_k > 1 else scores[rows, winners]
    return scores, winners, margin


@SETTINGS
@given(scores_with_unique_argmax())
def test_large_scale_gives_one_hot_on_the_argmax(case):
    scores, winners, margin = case
    n_q, n_k = scores.shape
    q, k = scores, np.eye(n_k)  # q · kᵀ reproduces the scores exactly
    v = np.random.default_rng(0).standard_normal((n_k, 3))
    scale = 800.0 / margin  # every loser is at least 800 below the winner: exp(-800) == 0
    result = engine.scaled_dot_product_attention(q, k, v, scale=scale)
    one_hot = np.zeros((n_q, n_k))
    one_hot[np.arange(n_q), winners] = 1.0
    np.testing.assert_array_equal(result.weights, one_hot)
    np.testing.assert_array_equal(result.output, v[winners])


@SETTINGS
@given(qkv_mask(bound=100.0), st.floats(1e-2, 1e2))
def test_attention_is_bit_identical_across_calls(inputs, scale):
    q, k, v, mask = inputs
    first = engine.scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)
    second = engine.scaled_dot_product_attention(q.copy(), k.copy(), v.copy(), mask, scale)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


# --- multi-head attention ----------------------------------------------------------


@st.composite
def mha_inputs(draw, max_n=6):
    n_heads = draw(st.integers(1, 4))
    d_head = draw(st.integers(1, 3))
    d_model = n_heads * d_head
    n = draw(st.integers(1, max_n))
    x = draw(_matrix(n, d_model, 10.0))
    weights = [draw(_matrix(d_model, d_model, 2.0)) for _ in range(4)]
    return x, weights, n_heads


@SETTINGS
@given(st.integers(1, 6), st.integers(1, 4), st.integers(1, 4), st.data())
def test_split_and_merge_heads_round_trip(n, n_heads, d_head, data):
    x = data.draw(_matrix(n, n_heads * d_head))
    heads = engine.split_heads(x, n_heads)
    assert heads.shape == (n_heads, n, d_head)
    np.testing.assert_array_equal(engine.merge_heads(heads), x)
    np.testing.assert_array_equal(engine.split_heads(engine.merge_heads(heads), n_heads), heads)


@SETTINGS
@given(mha_inputs(), st.booleans())
def test_multi_head_with_one_head_equals_single_head(inputs, causal):
    x, (w_q, w_k, w_v, w_o), _ = inputs
    mask = engine.causal_mask(x.shape[0]) if causal else None
    multi = engine.multi_head_attention(x, w_q, w_k, w_v, w_o, 1, mask=mask)
    single = engine.scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask=mask)
    np.testing.assert_allclose(multi.weights[0], single.weights, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(multi.output, single.output @ w_o, rtol=1e-9, atol=1e-9)


@SETTINGS
@given(mha_inputs(), st.booleans())
def test_multi_head_rows_sum_to_one_and_causal_zeros(inputs, causal):
    x, weights, n_heads = inputs
    n = x.shape[0]
    mask = engine.causal_mask(n) if causal else None
    result = engine.multi_head_attention(x, *weights, n_heads, mask=mask)
    assert result.weights.shape == (n_heads, n, n)
    np.testing.assert_allclose(result.weights.sum(axis=-1), 1.0, atol=1e-12)
    if causal:
        assert np.all(result.weights[:, *np.triu_indices(n, 1)] == 0.0)


def _moving_permutation(n, data):
    """A permutation of range(n) that moves at least one index (n >= 2)."""
    perm = np.array(data.draw(st.permutations(range(n))))
    if np.array_equal(perm, np.arange(n)):
        perm = np.roll(perm, 1)
    return perm


@SETTINGS
@given(mha_inputs(), st.data())
def test_multi_head_without_positions_is_permutation_equivariant(inputs, data):
    x, weights, n_heads = inputs
    n = x.shape[0]
    perm = _moving_permutation(n, data) if n > 1 else np.arange(1)
    plain = engine.multi_head_attention(x, *weights, n_heads)
    permuted = engine.multi_head_attention(x[perm], *weights, n_heads)
    np.testing.assert_allclose(permuted.output, plain.output[perm], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(
        permuted.weights, plain.weights[:, perm][:, :, perm], rtol=1e-9, atol=1e-12
    )


WORDS = ["the", "restaurant", "refused", "to", "serve", "me", "a", "ham", "sandwich", "it"]


@SETTINGS
@given(
    st.lists(st.sampled_from(WORDS), min_size=2, max_size=8, unique=True),
    st.sampled_from([(8, 2), (12, 3), (16, 4)]),
    st.integers(0, 2**31 - 1),
    st.data(),
)
def test_toy_model_equivariance_holds_without_positions_and_fails_with_them(
    tokens, shape, seed, data
):
    d_model, n_heads = shape
    perm = _moving_permutation(len(tokens), data)
    shuffled = [tokens[i] for i in perm]
    plain = engine.run_toy(tokens, d_model, n_heads, seed).attention.output
    moved = engine.run_toy(shuffled, d_model, n_heads, seed).attention.output
    np.testing.assert_allclose(moved, plain[perm], rtol=1e-9, atol=1e-12)
    for pe in ["sinusoidal", "learned", "rotary"]:
        plain = engine.run_toy(tokens, d_model, n_heads, seed, pe=pe).attention.output
        moved = engine.run_toy(shuffled, d_model, n_heads, seed, pe=pe).attention.output
        assert not np.allclose(moved, plain[perm], rtol=1e-6, atol=1e-6), pe


@SETTINGS
@given(
    st.sampled_from([(2, 4, 2), (3, 6, 3), (5, 8, 2), (6, 12, 4)]),
    st.integers(0, 2**31 - 1),
    st.data(),
)
def test_sinusoidal_positions_break_multi_head_equivariance(shape, seed, data):
    n, d_model, n_heads = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d_model))  # distinct tokens, almost surely
    weights = [rng.standard_normal((d_model, d_model)) / np.sqrt(d_model) for _ in range(4)]
    perm = _moving_permutation(n, data)
    plain = engine.multi_head_attention(x, *weights, n_heads)
    permuted = engine.multi_head_attention(x[perm], *weights, n_heads)
    np.testing.assert_allclose(permuted.output, plain.output[perm], rtol=1e-9, atol=1e-12)
    pe = engine.sinusoidal_positional_encoding(n, d_model)
    plain = engine.multi_head_attention(x + pe, *weights, n_heads)
    permuted = engine.multi_head_attention(x[perm] + pe, *weights, n_heads)
    assert not np.allclose(permuted.output, plain.output[perm], rtol=1e-6, atol=1e-6)


# --- determinism ---------------------------------------------------------------------


@SETTINGS
@given(mha_inputs(), st.booleans())
def test_multi_head_is_bit_identical_across_calls(inputs, rotary):
    x, weights, n_heads = inputs
    first = engine.multi_head_attention(x, *weights, n_heads, rotary=rotary)
    second = engine.multi_head_attention(
        x.copy(), *(w.copy() for w in weights), n_heads, rotary=rotary
    )
    np.testing.assert_array_equal(first.output, second.output)
    np.testing.assert_array_equal(first.weights, second.weights)


@pytest.mark.parametrize("pe", ["none", "sinusoidal", "learned", "rotary"])
@pytest.mark.parametrize("causal", [False, True])
def test_toy_model_is_deterministic_across_calls(pe, causal):
    tokens = ["the", "restaurant", "refused", "it", "because", "it", "cooks"]
    runs = [engine.run_toy(tokens, 12, 3, 7, causal=causal, pe=pe) for _ in range(2)]
    for name in ["embeddings", "positions", "x", "q", "k", "v"]:
        np.testing.assert_array_equal(getattr(runs[0], name), getattr(runs[1], name), name)
    np.testing.assert_array_equal(runs[0].attention.output, runs[1].attention.output)
    np.testing.assert_array_equal(runs[0].attention.weights, runs[1].attention.weights)
    other_seed = engine.run_toy(tokens, 12, 3, 8, causal=causal, pe=pe)
    assert not np.allclose(other_seed.attention.output, runs[0].attention.output)
