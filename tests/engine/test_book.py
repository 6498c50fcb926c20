"""Tests for engine.book: the textbook notebook 12.1 worked out (UDL, ch. 12, column convention).

Golden values are typed here from the notebook's printed text
(shared/seeds/udl-chapter12-self-attention-notebook.txt), independently of the
constant in engine.book, so a typo in either shows up. Everything else is an oracle
(loop form = matrix form) or a parity check against the row convention of
engine.attention.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine import book

# print(all_x) after np.random.seed(3): three inputs x_n of shape (D, 1), D = 4.
PRINTED_ALL_X = [
    [1.78862847, 0.43650985, 0.09649747, -1.8634927],
    [-0.2773882, -0.35475898, -0.08274148, -0.62700068],
    [-0.04381817, -0.47721803, -1.31386475, 0.88462238],
]

# print("x_prime_n_true: ...") for n = 0, 1, 2.
PRINTED_X_PRIME = [
    [0.94744244, -0.24348429, -0.91310441, -0.44522983],
    [1.64201168, -0.08470004, 4.02764044, 2.18690791],
    [1.61949281, -0.06641533, 3.96863308, 2.15858316],
]

SETTINGS = settings(deadline=None, max_examples=100)


def _notebook_softmax_cols(data_in):
    """The notebook's own softmax_cols, as printed (no max subtraction)."""
    exp_values = np.exp(data_in)
    denom = np.sum(exp_values, axis=0)
    denom = np.matmul(np.ones((data_in.shape[0], 1)), denom[np.newaxis, :])
    return exp_values / denom


def _random_params(rng, d, d_q, d_v, biases=True):
    scale = 1.0 if biases else 0.0
    return {
        "omega_v": rng.standard_normal((d_v, d)),
        "omega_q": rng.standard_normal((d_q, d)),
        "omega_k": rng.standard_normal((d_q, d)),
        "beta_v": scale * rng.standard_normal((d_v, 1)),
        "beta_q": scale * rng.standard_normal((d_q, 1)),
        "beta_k": scale * rng.standard_normal((d_q, 1)),
    }


# --- the notebook's printed numbers ----------------------------------------------


def test_notebook_setup_draws_the_printed_inputs():
    X, params = book.notebook_setup()
    assert X.shape == (4, 3)
    np.testing.assert_allclose(X, np.array(PRINTED_ALL_X).T, rtol=0, atol=1e-8)
    assert {name: p.shape for name, p in params.items()} == {
        "omega_v": (4, 4),
        "omega_q": (4, 4),
        "omega_k": (4, 4),
        "beta_v": (4, 1),
        "beta_q": (4, 1),
        "beta_k": (4, 1),
    }


def test_notebook_setup_leaves_global_random_state_alone():
    np_state = np.random.get_state()  # noqa: NPY002 (the global state is what is checked)
    before = np_state[1].copy(), np_state[2]
    book.notebook_setup()
    after = np.random.get_state()  # noqa: NPY002
    np.testing.assert_array_equal(after[1], before[0])
    assert after[2] == before[1]


def test_notebook_constant_matches_the_printed_text():
    assert book.NOTEBOOK_X_PRIME.shape == (4, 3)  # [D, N], one output per column
    np.testing.assert_allclose(book.NOTEBOOK_X_PRIME, np.array(PRINTED_X_PRIME).T, rtol=0, atol=0)


def test_matrix_form_reproduces_the_printed_outputs():
    X, params = book.notebook_setup()
    X_prime = book.self_attention(X, **params)
    np.testing.assert_allclose(X_prime, np.array(PRINTED_X_PRIME).T, rtol=0, atol=1e-6)
    np.testing.assert_allclose(X_prime, book.NOTEBOOK_X_PRIME, rtol=0, atol=1e-6)


def test_loop_form_reproduces_the_printed_outputs():
    X, params = book.notebook_setup()
    all_x = [X[:, [n]] for n in range(X.shape[1])]
    attentions, all_x_prime = book.self_attention_loop(all_x, **params)
    for attention in attentions:  # "should be positive sum to one"
        assert np.all(attention > 0)
        assert attention.sum() == pytest.approx(1.0, abs=1e-12)
    for x_prime, printed in zip(all_x_prime, PRINTED_X_PRIME, strict=True):
        assert x_prime.shape == (4, 1)
        np.testing.assert_allclose(x_prime.T[0], printed, rtol=0, atol=1e-6)


def test_scaling_softens_the_notebooks_extreme_attention():
    """The notebook: unscaled weights are extreme (one near 1); eq. 12.9 fixes that."""
    X, params = book.notebook_setup()
    unscaled = book.self_attention_stages(X, **params).attention
    scaled = book.self_attention_stages(X, **params, scaled=True).attention
    assert np.all(unscaled.max(axis=0) > 0.98)
    assert np.all(scaled.max(axis=0) < unscaled.max(axis=0))
    np.testing.assert_allclose(scaled.sum(axis=0), 1.0, atol=1e-12)


# --- oracle: loop form equals matrix form --------------------------------------------


@pytest.mark.parametrize("scaled", [False, True])
def test_loop_equals_matrix_on_the_notebook(scaled):
    X, params = book.notebook_setup()
    stages = book.self_attention_stages(X, **params, scaled=scaled)
    attentions, all_x_prime = book.self_attention_loop(
        [X[:, [n]] for n in range(3)], **params, scaled=scaled
    )
    np.testing.assert_allclose(np.column_stack(attentions), stages.attention, atol=1e-14)
    np.testing.assert_allclose(np.hstack(all_x_prime), stages.X_prime, atol=1e-13)


@SETTINGS
@given(
    st.integers(1, 6),  # N
    st.integers(1, 5),  # D
    st.integers(1, 5),  # D_q
    st.integers(1, 5),  # D_v
    st.integers(0, 2**32 - 1),
    st.booleans(),
)
def test_loop_equals_matrix_for_any_shape(n, d, d_q, d_v, seed, scaled):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((d, n))
    params = _random_params(rng, d, d_q, d_v)
    X_prime = book.self_attention(X, **params, scaled=scaled)
    attentions, all_x_prime = book.self_attention_loop(
        [X[:, [i]] for i in range(n)], **params, scaled=scaled
    )
    assert X_prime.shape == (d_v, n)
    np.testing.assert_allclose(np.hstack(all_x_prime), X_prime, rtol=1e-10, atol=1e-10)
    stages = book.self_attention_stages(X, **params, scaled=scaled)
    np.testing.assert_allclose(np.column_stack(attentions), stages.attention, atol=1e-12)


def test_stages_are_the_books_matrices():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((3, 5))
    params = _random_params(rng, 3, 2, 4)
    stages = book.self_attention_stages(X, **params, scaled=True)
    for m in range(5):
        k_m = params["beta_k"][:, 0] + params["omega_k"] @ X[:, m]
        for n in range(5):
            q_n = params["beta_q"][:, 0] + params["omega_q"] @ X[:, n]
            assert stages.dot[m, n] == pytest.approx(k_m @ q_n, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(stages.scaled, stages.dot / np.sqrt(2), rtol=1e-15)
    np.testing.assert_allclose(stages.attention.sum(axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(stages.X_prime, stages.V @ stages.attention, rtol=1e-15)


@SETTINGS
@given(st.integers(1, 5), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_softmax_cols_equals_the_notebooks_version(rows, cols, seed):
    data = np.random.default_rng(seed).uniform(-30, 30, (rows, cols))
    np.testing.assert_allclose(book.softmax_cols(data), _notebook_softmax_cols(data), rtol=1e-12)


# --- parity with the row convention --------------------------------------------------


@SETTINGS
@given(
    st.integers(1, 6),
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(0, 2**32 - 1),
    st.booleans(),
)
def test_book_equals_row_convention_with_biases_folded_in(n, d, d_q, d_v, seed, scaled):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((d, n))
    p = _random_params(rng, d, d_q, d_v)
    stages = book.self_attention_stages(X, **p, scaled=scaled)
    # Fold each bias into its weights: [Ω β] acting on X with a row of ones appended.
    x_aug = np.vstack([X, np.ones((1, n))]).T  # [N, D + 1], tokens as rows
    w_q = np.hstack([p["omega_q"], p["beta_q"]]).T  # [D + 1, D_q]
    w_k = np.hstack([p["omega_k"], p["beta_k"]]).T
    w_v = np.hstack([p["omega_v"], p["beta_v"]]).T
    row = engine.scaled_dot_product_attention(
        x_aug @ w_q, x_aug @ w_k, x_aug @ w_v, scale=None if scaled else 1.0
    )
    np.testing.assert_allclose(row.weights, stages.attention.T, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(row.output, stages.X_prime.T, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(row.scores, stages.dot.T, rtol=1e-9, atol=1e-10)


def _book_heads(rng, d, n_heads, biases=False):
    d_head = d // n_heads
    return [_random_params(rng, d, d_head, d_head, biases=biases) for _ in range(n_heads)]


@SETTINGS
@given(
    st.integers(1, 6),
    st.sampled_from([(1, 1), (4, 1), (4, 2), (6, 3), (8, 4), (6, 6)]),
    st.integers(0, 2**32 - 1),
)
def test_book_multihead_equals_row_convention_without_biases(n, shape, seed):
    d, n_heads = shape
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((d, n))
    heads = _book_heads(rng, d, n_heads)
    omega_c = rng.standard_normal((d, d))
    book_out = book.multihead_self_attention(X, heads, omega_c)
    row = engine.multi_head_attention(
        X.T,
        np.vstack([h["omega_q"] for h in heads]).T,
        np.vstack([h["omega_k"] for h in heads]).T,
        np.vstack([h["omega_v"] for h in heads]).T,
        omega_c.T,
        n_heads,
    )
    assert book_out.shape == (d, n)
    np.testing.assert_allclose(row.output, book_out.T, rtol=1e-9, atol=1e-10)
    for h, head in enumerate(heads):
        attention = book.self_attention_stages(X, **head, scaled=True).attention
        np.testing.assert_allclose(row.weights[h], attention.T, rtol=1e-9, atol=1e-12)


def test_book_multihead_uses_each_heads_biases():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((4, 3))
    heads = _book_heads(rng, 4, 2, biases=True)
    omega_c = rng.standard_normal((4, 4))
    stacked = np.vstack([book.self_attention(X, **head, scaled=True) for head in heads])
    np.testing.assert_allclose(
        book.multihead_self_attention(X, heads, omega_c), omega_c @ stacked, rtol=1e-14
    )


@pytest.mark.parametrize("n_heads", [0, 3])
def test_book_multihead_rejects_heads_not_dividing_d(n_heads):
    rng = np.random.default_rng(0)
    heads = [_random_params(rng, 4, 1, 1) for _ in range(n_heads)]
    with pytest.raises(ValueError, match="must divide D=4"):
        book.multihead_self_attention(rng.standard_normal((4, 2)), heads, np.eye(4))


# --- permutation ---------------------------------------------------------------------


@SETTINGS
@given(st.integers(2, 6), st.integers(0, 2**32 - 1), st.booleans(), st.data())
def test_permuting_columns_of_x_permutes_columns_of_x_prime(n, seed, scaled, data):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((4, n))
    params = _random_params(rng, 4, 3, 2)
    perm = np.array(data.draw(st.permutations(range(n))))
    np.testing.assert_allclose(
        book.self_attention(X[:, perm], **params, scaled=scaled),
        book.self_attention(X, **params, scaled=scaled)[:, perm],
        rtol=1e-9,
        atol=1e-12,
    )
    heads = _book_heads(rng, 4, 2, biases=True)
    omega_c = rng.standard_normal((4, 4))
    np.testing.assert_allclose(
        book.multihead_self_attention(X[:, perm], heads, omega_c),
        book.multihead_self_attention(X, heads, omega_c)[:, perm],
        rtol=1e-9,
        atol=1e-12,
    )


def test_permuting_the_notebook_inputs_moves_the_printed_outputs():
    X, params = book.notebook_setup()
    perm = [2, 0, 1]
    X_prime = book.self_attention(X[:, perm], **params)
    np.testing.assert_allclose(X_prime, np.array(PRINTED_X_PRIME).T[:, perm], atol=1e-6)
