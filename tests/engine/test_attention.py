"""Oracle tests for engine.attention: the matrix form equals the loop form.

The loop form (:func:`engine.attention_loop`) builds attention one query and one key
at a time; every matrix-form result here is checked against it, or against a plain
per-head loop, with and without masks and explicit scales.
"""

import numpy as np
import pytest

import engine
from engine.attention import strong_links
from engine.kv_cache import cached_attention
from engine.positional import rotary_embedding

SEEDS = range(4)
SHAPES = [(1, 1, 1, 1), (3, 3, 4, 4), (5, 7, 3, 2), (6, 2, 8, 5)]  # n_q, n_k, d_k, d_v


def _qkv(seed, n_q, n_k, d_k, d_v):
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((n_q, d_k)),
        rng.standard_normal((n_k, d_k)),
        rng.standard_normal((n_k, d_v)),
    )


def _masks(seed, n_q, n_k):
    rng = np.random.default_rng([seed, 1])
    random_mask = rng.random((n_q, n_k)) < 0.6
    yield "none", None
    yield "random", random_mask
    if n_q == n_k:
        yield "causal", engine.causal_mask(n_q)
    fully_masked = random_mask.copy()
    fully_masked[0] = False
    yield "one row fully masked", fully_masked


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("scale", [None, 0.0, 0.37, 5.0])
def test_matrix_form_equals_loop_form(seed, shape, scale):
    q, k, v = _qkv(seed, *shape)
    for _, mask in _masks(seed, shape[0], shape[1]):
        result = engine.scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)
        weights, output = engine.attention_loop(q, k, v, mask=mask, scale=scale)
        np.testing.assert_allclose(result.weights, weights, rtol=0, atol=1e-13)
        np.testing.assert_allclose(result.output, output, rtol=0, atol=1e-12)


def test_intermediates_are_the_stages_they_name():
    q, k, v = _qkv(0, 4, 5, 3, 2)
    mask = np.random.default_rng(9).random((4, 5)) < 0.5
    result = engine.scaled_dot_product_attention(q, k, v, mask=mask, scale=0.25)
    np.testing.assert_allclose(result.scores, q @ k.T, rtol=1e-14)
    np.testing.assert_array_equal(result.scaled, result.scores * 0.25)
    np.testing.assert_array_equal(result.masked[mask], result.scaled[mask])
    assert np.all(result.masked[~mask] == -np.inf)
    np.testing.assert_array_equal(result.weights, engine.softmax(result.masked))
    np.testing.assert_array_equal(result.output, result.weights @ v)
    assert result.scale == 0.25


def test_weights_written_where_asked_are_the_softmax_of_the_stages_read_back():
    """A model's pass keeps only the weights (in its own array); the scores a page reads
    later are recomputed, and must be the ones the weights came from, to the bit."""
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((12, 50, 32)).astype(np.float32) for _ in range(3))
    out = np.empty((12, 50, 50), dtype=np.float32)
    result = engine.scaled_dot_product_attention(q, k, v, weights_out=out)
    assert result.weights is out
    assert result.scores.dtype == result.weights.dtype == np.float32
    np.testing.assert_array_equal(result.weights, engine.softmax(result.scaled))
    np.testing.assert_array_equal(result.scores, q @ k.swapaxes(-1, -2))


def test_integer_inputs_still_give_float_weights():
    result = engine.scaled_dot_product_attention([[1, 2]], [[1, 0], [0, 1]], [[1.0], [2.0]])
    assert result.weights.dtype == np.float64
    np.testing.assert_allclose(result.weights.sum(axis=-1), 1.0)


@pytest.mark.parametrize("d_k", [1, 4, 9, 64])
def test_default_scale_is_one_over_root_d_k(d_k):
    q, k, v = _qkv(d_k, 3, 3, d_k, 2)
    result = engine.scaled_dot_product_attention(q, k, v)
    assert result.scale == pytest.approx(1 / np.sqrt(d_k), rel=1e-15)
    explicit = engine.scaled_dot_product_attention(q, k, v, scale=1 / np.sqrt(d_k))
    np.testing.assert_allclose(result.weights, explicit.weights, rtol=0, atol=1e-15)


def test_scale_multiplies_rather_than_divides():
    q, k, v = _qkv(3, 3, 4, 2, 2)
    by_four = engine.scaled_dot_product_attention(q, k, v, scale=4.0)
    np.testing.assert_allclose(by_four.weights, engine.softmax(4.0 * (q @ k.T)), atol=1e-14)


def test_leading_batch_and_head_dims_broadcast():
    rng = np.random.default_rng(5)
    n, d_k, d_v = 4, 3, 2
    q = rng.standard_normal((2, 3, n, d_k))  # [batch, heads, n, d_k]
    k = rng.standard_normal((3, n, d_k))  # shared across the batch
    v = rng.standard_normal((1, 3, n, d_v))
    mask = engine.causal_mask(n)
    result = engine.scaled_dot_product_attention(q, k, v, mask=mask, scale=0.7)
    assert result.weights.shape == (2, 3, n, n)
    assert result.output.shape == (2, 3, n, d_v)
    for b in range(2):
        for h in range(3):
            weights, output = engine.attention_loop(q[b, h], k[h], v[0, h], mask=mask, scale=0.7)
            np.testing.assert_allclose(result.weights[b, h], weights, atol=1e-13)
            np.testing.assert_allclose(result.output[b, h], output, atol=1e-13)


def test_key_mask_broadcasts_over_queries():
    q, k, v = _qkv(6, 4, 5, 3, 2)
    keys_allowed = np.array([True, False, True, True, False])
    result = engine.scaled_dot_product_attention(q, k, v, mask=keys_allowed)
    weights, _ = engine.attention_loop(q, k, v, mask=np.broadcast_to(keys_allowed, (4, 5)))
    np.testing.assert_allclose(result.weights, weights, atol=1e-14)
    assert np.all(result.weights[:, ~keys_allowed] == 0)


def test_fully_masked_row_gives_zero_weights_and_zero_output():
    q, k, v = _qkv(7, 3, 4, 2, 3)
    mask = np.ones((3, 4), dtype=bool)
    mask[1] = False
    result = engine.scaled_dot_product_attention(q, k, v, mask=mask)
    assert np.all(np.isfinite(result.weights))
    assert np.all(np.isfinite(result.output))
    np.testing.assert_array_equal(result.weights[1], np.zeros(4))
    np.testing.assert_array_equal(result.output[1], np.zeros(3))
    np.testing.assert_allclose(result.weights[[0, 2]].sum(axis=-1), 1.0, atol=1e-15)


def test_causal_mask_is_lower_triangular():
    mask = engine.causal_mask(5)
    assert mask.dtype == bool
    for i in range(5):
        for j in range(5):
            assert mask[i, j] == (j <= i)


@pytest.mark.parametrize(("q_shape", "k_shape", "v_shape"), [((3, 4), (3, 5), (3, 2))])
def test_mismatched_d_k_is_a_clear_error(q_shape, k_shape, v_shape):
    with pytest.raises(ValueError, match="same last dimension"):
        engine.scaled_dot_product_attention(np.ones(q_shape), np.ones(k_shape), np.ones(v_shape))


def test_mismatched_key_count_is_a_clear_error():
    with pytest.raises(ValueError, match="same number of keys"):
        engine.scaled_dot_product_attention(np.ones((3, 4)), np.ones((3, 4)), np.ones((2, 4)))


def _mha_loop(x, w_q, w_k, w_v, w_o, n_heads, mask=None, rotary=False):
    """Multi-head attention by hand: slice the columns per head, loop, concatenate."""
    d_head = x.shape[1] // n_heads
    outputs, all_weights = [], []
    for h in range(n_heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        q, k, v = x @ w_q[:, cols], x @ w_k[:, cols], x @ w_v[:, cols]
        if rotary:
            q, k = rotary_embedding(q), rotary_embedding(k)
        weights, output = engine.attention_loop(q, k, v, mask=mask, scale=1 / np.sqrt(d_head))
        outputs.append(output)
        all_weights.append(weights)
    return np.hstack(outputs) @ w_o, np.array(all_weights)


def _mha_inputs(seed, n, d_model):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d_model))
    return x, *(rng.standard_normal((d_model, d_model)) / np.sqrt(d_model) for _ in range(4))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("n", "d_model", "n_heads"), [(1, 4, 2), (5, 6, 3), (4, 8, 4), (7, 12, 1)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("rotary", [False, True])
def test_multi_head_equals_per_head_loop(seed, n, d_model, n_heads, causal, rotary):
    x, w_q, w_k, w_v, w_o = _mha_inputs(seed, n, d_model)
    mask = engine.causal_mask(n) if causal else None
    result = engine.multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads, mask=mask, rotary=rotary)
    output, weights = _mha_loop(x, w_q, w_k, w_v, w_o, n_heads, mask=mask, rotary=rotary)
    assert result.output.shape == (n, d_model)
    assert result.weights.shape == (n_heads, n, n)
    np.testing.assert_allclose(result.weights, weights, atol=1e-13)
    np.testing.assert_allclose(result.output, output, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("n", "n_new", "n_heads", "n_kv"), [(5, 1, 4, 2), (6, 2, 4, 4), (4, 1, 6, 1)]
)
@pytest.mark.parametrize("rotary", [False, True])
def test_cached_attention_is_the_whole_attention_s_last_rows(seed, n, n_new, n_heads, n_kv, rotary):
    """The oracle: multi_head_attention over every token, causal; its first keys the cache."""
    d_model = 12
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d_model))
    w_q, w_o = (rng.standard_normal((d_model, d_model)) for _ in range(2))
    w_k, w_v = (rng.standard_normal((d_model, n_kv * d_model // n_heads)) for _ in range(2))
    b_k = rng.standard_normal(n_kv * d_model // n_heads)
    whole = engine.multi_head_attention(
        x,
        w_q,
        w_k,
        w_v,
        w_o,
        n_heads,
        mask=engine.causal_mask(n),
        rotary=rotary,
        b_k=b_k,
        n_kv_heads=n_kv,
    )
    group = n_heads // n_kv
    k, v = whole.k[::group], whole.v[::group]  # -> [n_kv, n, d_head]: a shared head once
    old = n - n_new
    past = (k[:, :old], v[:, :old])
    mask = engine.causal_mask(n)[old:]  # the new rows' mask over every key
    cached = cached_attention(
        x[old:],
        w_q,
        w_k,
        w_v,
        w_o,
        n_heads,
        past,
        old,
        mask=mask,
        rotary=rotary,
        b_k=b_k,
        n_kv_heads=n_kv,
    )
    np.testing.assert_allclose(cached.output, whole.output[old:], atol=1e-12)
    np.testing.assert_allclose(cached.weights, whole.weights[:, old:], atol=1e-13)
    np.testing.assert_allclose(cached.k, k, atol=1e-13)  # the cache with the new rows added
    np.testing.assert_allclose(cached.v, v, atol=1e-13)
    assert cached.q.shape == (n_heads, n_new, d_model // n_heads)
    np.testing.assert_array_equal(past[0], k[:, :old])  # the cache given, left as it was

    # The same with room for the new rows after the cache: written in place, the same bits.
    room = tuple(
        np.concatenate([part, np.full_like(part[:, :n_new], np.nan)], axis=1) for part in past
    )
    in_place = cached_attention(
        x[old:],
        w_q,
        w_k,
        w_v,
        w_o,
        n_heads,
        room,
        old,
        mask=mask,
        rotary=rotary,
        b_k=b_k,
        n_kv_heads=n_kv,
    )
    np.testing.assert_array_equal(in_place.output, cached.output)
    np.testing.assert_array_equal(in_place.weights, cached.weights)
    np.testing.assert_array_equal(room[0], cached.k)  # the room's rows hold the new keys
    np.testing.assert_array_equal(room[1], cached.v)
    assert in_place.k is room[0]


def test_multi_head_concat_is_head_outputs_in_order():
    x, w_q, w_k, w_v, w_o = _mha_inputs(11, 5, 8)
    result = engine.multi_head_attention(x, w_q, w_k, w_v, w_o, 4)
    for h in range(4):
        np.testing.assert_array_equal(result.concat[:, 2 * h : 2 * h + 2], result.heads.output[h])
    np.testing.assert_array_equal(result.output, result.concat @ w_o)


@pytest.mark.parametrize("seed", SEEDS)
def test_one_head_equals_single_head_attention(seed):
    x, w_q, w_k, w_v, w_o = _mha_inputs(seed, 6, 8)
    mask = engine.causal_mask(6)
    multi = engine.multi_head_attention(x, w_q, w_k, w_v, w_o, 1, mask=mask)
    single = engine.scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask=mask)
    np.testing.assert_allclose(multi.weights[0], single.weights, atol=1e-14)
    np.testing.assert_allclose(multi.output, single.output @ w_o, atol=1e-13)


@pytest.mark.parametrize(("d_model", "n_heads"), [(6, 4), (8, 3), (10, 20)])
def test_heads_not_dividing_d_model_is_a_clear_error(d_model, n_heads):
    x, w_q, w_k, w_v, w_o = _mha_inputs(0, 3, d_model)
    with pytest.raises(ValueError, match=rf"n_heads={n_heads} does not divide d_model={d_model}"):
        engine.multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads)


@pytest.mark.parametrize("n_heads", [0, -2, 2.0])
def test_n_heads_must_be_a_positive_integer(n_heads):
    x, w_q, w_k, w_v, w_o = _mha_inputs(0, 3, 4)
    with pytest.raises(ValueError, match="positive integer"):
        engine.multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads)


def test_split_heads_takes_contiguous_column_blocks():
    x = np.arange(3 * 12, dtype=float).reshape(3, 12)
    heads = engine.split_heads(x, 4)
    assert heads.shape == (4, 3, 3)
    for h in range(4):
        np.testing.assert_array_equal(heads[h], x[:, 3 * h : 3 * h + 3])
    np.testing.assert_array_equal(engine.merge_heads(heads), x)


def test_public_api_names():
    for name in [
        "softmax",
        "scaled_dot_product_attention",
        "causal_mask",
        "sinusoidal_positional_encoding",
        "multi_head_attention",
        "attention_loop",
        "run_toy",
        "split_heads",
        "merge_heads",
    ]:
        assert callable(getattr(engine, name)), name
    for name in ["self_attention", "self_attention_loop", "multihead_self_attention"]:
        assert callable(getattr(engine.book, name)), name
    for name in engine.__all__:
        assert hasattr(engine, name), name
    result = engine.scaled_dot_product_attention(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 1)))
    for field in ["weights", "output", "scores", "scaled", "masked"]:
        assert getattr(result, field).shape[-2] == 2, field


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("threshold", [0.0, 0.05, 0.3, 1.01])
def test_strong_links_are_exactly_the_cells_at_or_above_the_threshold(seed, threshold):
    rng = np.random.default_rng(seed)
    weights = engine.softmax(rng.normal(size=(3, 9, 9)) * 3)
    found = strong_links(weights, threshold)
    loop = {
        (h, i, j)
        for h in range(3)
        for i in range(9)
        for j in range(9)
        if weights[h, i, j] >= threshold
    }
    assert set(zip(found.head, found.query, found.key, strict=True)) == loop
    np.testing.assert_array_equal(found.weight, weights[found.head, found.query, found.key])
    assert found.considered == weights.size
    kept = sum(weights[cell] for cell in loop)
    assert found.omitted_mass == pytest.approx(1 - kept / weights.sum(), abs=1e-12)
    assert len(found.weight) <= 3 * 9 / max(threshold, 1e-9)  # a row holds at most 1/τ


def test_strong_links_of_one_query_keep_its_position():
    weights = engine.softmax(np.random.default_rng(0).normal(size=(2, 6, 6)))
    found = strong_links(weights, 0.0, queries=[4])
    assert set(found.query) == {4}
    assert len(found.weight) == 2 * 6
    assert found.omitted_mass == pytest.approx(0.0, abs=1e-12)
