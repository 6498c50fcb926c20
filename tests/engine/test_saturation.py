"""Tests for engine.saturation: entropy, max weight, effective tokens, softmax Jacobian norm.

Monotonicity along the sweep is a theorem, not a measurement: for p = softmax(βs),
dH/dβ = −β·Var_p(s) ≤ 0 (in nats), so each row's entropy, and hence the mean over
rows, can only fall as the scale β ≥ 0 grows; and p_max = 1/Σ_j exp(β(s_j − s_max))
can only rise. The tolerance covers round-off in the sums (≈ n·1e-16 per entry).
"""

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import engine
from engine.saturation import entropy_bits, saturation, saturation_sweep, softmax_jacobian_norm

SETTINGS = settings(deadline=None, max_examples=150)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 512])
def test_uniform_row(n):
    stats = saturation(np.full((1, n), 1.0 / n))
    assert stats.entropy[0] == pytest.approx(math.log2(n), abs=1e-12)
    assert stats.max_weight[0] == pytest.approx(1.0 / n)
    assert stats.effective_tokens[0] == pytest.approx(n, rel=1e-12)
    assert stats.jacobian_norm[0] == pytest.approx(math.sqrt(n - 1) / n, abs=1e-12)


@pytest.mark.parametrize(("n", "hot"), [(1, 0), (2, 1), (5, 3), (64, 0)])
def test_one_hot_row(n, hot):
    p = np.zeros((1, n))
    p[0, hot] = 1.0
    stats = saturation(p)
    assert stats.entropy[0] == 0.0
    assert stats.max_weight[0] == 1.0
    assert stats.effective_tokens[0] == 1.0
    assert stats.jacobian_norm[0] == 0.0


distributions = (
    st.integers(1, 8)
    .flatmap(lambda n: hnp.arrays(np.float64, (3, n), elements=st.floats(0, 10)))
    .map(lambda w: np.where(w.sum(-1, keepdims=True) > 0, w, 1.0))
)


@SETTINGS
@given(distributions)
def test_metrics_equal_their_definitions(raw):
    p = raw / raw.sum(axis=-1, keepdims=True)
    stats = saturation(p)
    for row, entropy, jac in zip(p, stats.entropy, stats.jacobian_norm, strict=True):
        expected_h = -sum(x * math.log2(x) for x in row if x > 0)
        assert entropy == pytest.approx(max(expected_h, 0.0), abs=1e-12)
        jacobian = np.diag(row) - np.outer(row, row)
        assert jac == pytest.approx(np.linalg.norm(jacobian, "fro"), abs=1e-12)
    np.testing.assert_array_equal(stats.max_weight, p.max(axis=-1))
    np.testing.assert_allclose(stats.effective_tokens, 2.0**stats.entropy, rtol=1e-15)
    assert np.all(stats.effective_tokens >= 1 - 1e-12)
    assert np.all(stats.effective_tokens <= p.shape[-1] * (1 + 1e-12))


def _jacobian_norm_reference(scores):
    """‖diag(p) − p pᵀ‖_F for p = softmax(scores), in 50-digit decimal arithmetic."""
    with localcontext() as ctx:
        ctx.prec = 50
        exps = [(Decimal(float(s)) - Decimal(float(max(scores)))).exp() for s in scores]
        total = sum(exps)
        p = [e / total for e in exps]
        squared = sum(
            ((p[i] if i == j else 0) - p[i] * p[j]) ** 2
            for i in range(len(p))
            for j in range(len(p))
        )
        return float(squared.sqrt())


@SETTINGS
@given(hnp.arrays(np.float64, st.integers(2, 6), elements=st.floats(-150, 150)))
def test_jacobian_norm_stays_accurate_as_the_row_saturates(scores):
    """Near one-hot the norm is tiny; it must be tiny and right, not rounded to 0."""
    expected = _jacobian_norm_reference(scores)
    assert softmax_jacobian_norm(engine.softmax(scores)) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("gap", [10.0, 20.0, 30.0, 100.0])
def test_jacobian_norm_of_a_nearly_one_hot_row_is_not_zero(gap):
    scores = np.array([gap, 0.0, -1.0])
    norm = softmax_jacobian_norm(engine.softmax(scores))
    assert norm == pytest.approx(_jacobian_norm_reference(scores), rel=1e-9)
    assert norm > 0


def test_entropy_ignores_exact_zeros():
    assert entropy_bits(np.array([0.5, 0.0, 0.5, 0.0])) == pytest.approx(1.0, abs=1e-15)
    assert softmax_jacobian_norm(np.array([0.5, 0.0, 0.5])) == pytest.approx(0.5, abs=1e-15)


score_matrices = st.tuples(st.integers(1, 5), st.integers(1, 7)).flatmap(
    lambda shape: hnp.arrays(np.float64, shape, elements=st.floats(-20, 20))
)
SCALES = np.concatenate([[0.0], np.geomspace(1e-3, 1e3, 60)])


@SETTINGS
@given(score_matrices, st.data())
def test_entropy_never_rises_as_the_scale_grows(scores, data):
    mask = data.draw(hnp.arrays(np.bool_, scores.shape)) if data.draw(st.booleans()) else None
    if mask is not None and not mask.any():
        mask[0, 0] = True
    stats = saturation_sweep(scores, SCALES, mask=mask)
    assert np.all(np.diff(stats.entropy) <= 1e-12)
    assert np.all(np.diff(stats.effective_tokens) <= 1e-11)
    assert np.all(np.diff(stats.max_weight) >= -1e-12)
    assert np.all(np.isfinite(stats.jacobian_norm))


@SETTINGS
@given(score_matrices, st.floats(0, 100))
def test_sweep_equals_saturation_of_attention_weights(scores, scale):
    n_k = scores.shape[1]
    result = engine.scaled_dot_product_attention(scores, np.eye(n_k), np.eye(n_k), scale=scale)
    stats = saturation(result.weights)
    sweep = saturation_sweep(scores, [scale])
    for swept, direct in zip(sweep, stats, strict=True):
        assert swept[0] == pytest.approx(direct.mean(), rel=1e-12, abs=1e-12)


def _entropy_reference(scores, scale):
    """The entropy in bits of softmax(scale · scores), in 400-digit decimal arithmetic.

    So many digits because the largest weight is 1 - ε with ε down to 1e-320, and its
    term -p log p ≈ ε needs ε's digits after the 1's.
    """
    with localcontext() as ctx:
        ctx.prec = 400
        logits = [Decimal(float(scale)) * Decimal(float(s)) for s in scores]
        exps = [(x - max(logits)).exp() for x in logits]
        total = sum(exps)
        nats = -sum(e / total * (e / total).ln() for e in exps if e > 0)
        return float(nats / Decimal(2).ln())


@SETTINGS
@given(
    hnp.arrays(np.float64, st.integers(2, 6), elements=st.floats(-20, 20)),
    st.floats(1e-3, 1e3),
)
def test_sweep_entropy_stays_accurate_as_the_row_saturates(scores, scale):
    """Near one-hot a row's entropy is tiny; it must be right, not short of the largest term.

    Summed as -Σ p log p, the largest weight rounds to 1 once the others add up to less
    than 1e-16 and its share of the entropy (as large as theirs) is lost: 1-3 % of it.
    """
    expected = _entropy_reference(scores, scale)
    swept = saturation_sweep(scores[None], [scale], jacobian=False).entropy[0]
    assert swept == pytest.approx(expected, rel=1e-12, abs=1e-300)


@SETTINGS
@given(
    hnp.arrays(np.float64, st.integers(2, 6), elements=st.floats(-20, 20)),
    st.floats(1e-3, 1e3),
)
def test_a_rows_entropy_from_its_weights_stays_accurate_as_it_saturates(scores, scale):
    """The saturation tables' entropy, from the weights at the stop: the largest weight rounds
    to 1 near one-hot, and its term is taken from the others' sum, not lost."""
    n_k = len(scores)
    weights = engine.scaled_dot_product_attention(
        scores[None], np.eye(n_k), np.eye(n_k), scale=scale
    ).weights[0]
    expected = _entropy_reference(scores, scale)
    assert saturation(weights).entropy == pytest.approx(expected, rel=1e-10, abs=1e-300)


def test_sweep_excludes_fully_masked_rows():
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((4, 5))
    mask = rng.random((4, 5)) < 0.7
    mask[[0, 2]] = True
    mask[1] = False  # a query with no key at all
    scales = np.array([0.0, 0.5, 3.0])
    with_dead_row = saturation_sweep(scores, scales, mask=mask)
    live = [0, 2, 3]
    without = saturation_sweep(scores[live], scales, mask=mask[live])
    for a, b in zip(with_dead_row, without, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-15)
    # At scale 0 each live row is uniform over its allowed keys.
    expected = np.mean(np.log2(mask[live].sum(axis=1)))
    assert with_dead_row.entropy[0] == pytest.approx(expected, abs=1e-12)


def test_sweep_runs_from_uniform_to_one_hot():
    scores = np.array([[3.0, 1.0, 0.0, -2.0], [0.0, 0.5, 4.0, 1.0]])
    stats = saturation_sweep(scores, [0.0, 1e4])
    assert stats.entropy[0] == pytest.approx(2.0, abs=1e-12)
    assert stats.effective_tokens[0] == pytest.approx(4.0, abs=1e-12)
    assert stats.jacobian_norm[0] == pytest.approx(math.sqrt(3) / 4, abs=1e-12)
    assert stats.entropy[1] == 0.0
    assert stats.max_weight[1] == 1.0
    assert stats.jacobian_norm[1] == 0.0


@SETTINGS
@given(score_matrices, st.booleans())
def test_a_sweep_without_the_jacobian_gives_the_same_other_numbers(scores, masked):
    """The Jacobian is left out (None), and nothing else changes by a bit."""
    mask = np.tril(np.ones(scores.shape, dtype=bool)) if masked else None
    full = saturation_sweep(scores, SCALES, mask=mask)
    light = saturation_sweep(scores, SCALES, mask=mask, jacobian=False)
    assert light.jacobian_norm is None
    for name in ("entropy", "max_weight", "effective_tokens"):
        np.testing.assert_array_equal(getattr(light, name), getattr(full, name))
