"""Tests for engine.positional: sinusoidal (Vaswani et al. 3.5), learned, rotary (RoFormer)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import engine
from engine.positional import learned_positional_encoding, position_similarity, rotary_embedding

SETTINGS = settings(deadline=None, max_examples=100)


def _sinusoidal_loop(n_positions, d_model):
    pe = np.zeros((n_positions, d_model))
    for pos in range(n_positions):
        for col in range(d_model):
            i = col // 2  # column 2i is sin, column 2i+1 is cos, of the same angle
            angle = pos / 10000 ** (2 * i / d_model)
            pe[pos, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return pe


@pytest.mark.parametrize("d_model", [1, 2, 3, 4, 7, 8, 15, 64, 65])
@pytest.mark.parametrize("n_positions", [0, 1, 5, 50])
def test_sinusoidal_matches_the_formula_entry_by_entry(n_positions, d_model):
    pe = engine.sinusoidal_positional_encoding(n_positions, d_model)
    assert pe.shape == (n_positions, d_model)
    np.testing.assert_allclose(pe, _sinusoidal_loop(n_positions, d_model), rtol=0, atol=1e-12)


def test_sinusoidal_rows_are_distinct_and_bounded():
    pe = engine.sinusoidal_positional_encoding(64, 16)
    assert np.all(np.abs(pe) <= 1.0)
    similarity = position_similarity(pe)
    off_diagonal = similarity[~np.eye(64, dtype=bool)]
    assert np.all(off_diagonal < 1 - 1e-6)  # every position is told apart


def test_learned_table_is_seeded_and_prefix_stable():
    short = learned_positional_encoding(4, 6, seed=3)
    long = learned_positional_encoding(10, 6, seed=3)
    np.testing.assert_array_equal(long[:4], short)
    np.testing.assert_array_equal(learned_positional_encoding(10, 6, seed=3), long)
    assert not np.allclose(learned_positional_encoding(10, 6, seed=4), long)


def test_position_similarity_is_cosine():
    pe = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0], [0.0, 0.0]])
    similarity = position_similarity(pe)
    for i in range(4):
        for j in range(4):
            norms = np.linalg.norm(pe[i]) * np.linalg.norm(pe[j])
            expected = pe[i] @ pe[j] / norms if norms > 0 else 0.0
            assert similarity[i, j] == pytest.approx(expected, abs=1e-15)


def _rotate_at(x, position):
    return rotary_embedding(x[None, :], positions=np.array([position]))[0]


vectors = st.integers(1, 9).flatmap(
    lambda d: st.tuples(*(hnp.arrays(np.float64, d, elements=st.floats(-10, 10)) for _ in range(2)))
)


@SETTINGS
@given(vectors, st.integers(0, 200), st.integers(0, 200), st.integers(-100, 100))
def test_rotary_dot_product_depends_only_on_the_offset(qk, m, n, shift):
    q, k = qk
    shift = max(shift, -min(m, n))  # keep both positions non-negative
    here = _rotate_at(q, m) @ _rotate_at(k, n)
    shifted = _rotate_at(q, m + shift) @ _rotate_at(k, n + shift)
    assert shifted == pytest.approx(here, rel=1e-9, abs=1e-9 * (1 + np.abs(q) @ np.abs(k)))


def test_rotary_dot_product_changes_with_the_offset():
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal(8), rng.standard_normal(8)
    dots = [_rotate_at(q, m) @ _rotate_at(k, 0) for m in range(4)]
    assert len({round(d, 9) for d in dots}) == 4


@SETTINGS
@given(
    hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 3), st.integers(1, 8), st.integers(1, 9)),
        elements=st.floats(-100, 100),
    )
)
def test_rotary_preserves_norms(x):
    rotated = rotary_embedding(x)
    assert rotated.shape == x.shape
    np.testing.assert_allclose(
        np.linalg.norm(rotated, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-12, atol=1e-12
    )


def test_rotary_matches_the_pairwise_rotation_formula():
    rng = np.random.default_rng(1)
    n, d = 5, 7  # odd d: the last feature has no partner
    x = rng.standard_normal((n, d))
    rotated = rotary_embedding(x)
    for p in range(n):
        for i in range(d // 2):
            theta = p * 10000 ** (-2 * i / d)
            a, b = x[p, 2 * i], x[p, 2 * i + 1]
            assert rotated[p, 2 * i] == pytest.approx(a * math.cos(theta) - b * math.sin(theta))
            assert rotated[p, 2 * i + 1] == pytest.approx(a * math.sin(theta) + b * math.cos(theta))
    np.testing.assert_array_equal(rotated[:, -1], x[:, -1])
    np.testing.assert_allclose(rotated[0], x[0], rtol=0, atol=0)  # position 0 is not rotated
