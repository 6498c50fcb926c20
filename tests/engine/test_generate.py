"""The next token at a temperature, its frames over a grid, and generation (engine.generate).

Laws (hypothesis) for the temperature; the tiny GPT-2 of ``tests/data/tiny_models`` for
generation, whose logits ``tests/engine/test_checkpoints.py`` holds to transformers'.
"""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from engine import bert, generate
from engine.attention import softmax
from engine.checkpoint import load

TINY = Path(__file__).parents[1] / "data" / "tiny_models"
SETTINGS = settings(deadline=None, max_examples=200)

logit_vectors = hnp.arrays(
    np.float32,
    st.integers(2, 60),
    elements=st.floats(-30, 30, width=32),
)
temperatures = st.floats(1e-3, 1e3)


@pytest.fixture(scope="module")
def gpt2():
    return load(TINY / "gpt2")


# Laws of softmax(z / T)


@SETTINGS
@given(logit_vectors, temperatures)
def test_probabilities_sum_to_one_and_are_never_negative(z, t):
    p = generate.probabilities(z, t)
    assert (p >= 0).all()
    assert abs(p.sum() - 1) < 1e-12


@SETTINGS
@given(logit_vectors)
def test_temperature_one_is_the_models_own_softmax(z):
    np.testing.assert_array_equal(generate.probabilities(z, 1.0), softmax(z.astype(np.float64)))


@SETTINGS
@given(logit_vectors, temperatures)
def test_no_temperature_changes_the_order(z, t):
    p = generate.probabilities(z, t)
    higher = z[:, None] > z[None, :]
    assert (p[:, None] >= p[None, :])[higher].all()


@SETTINGS
@given(logit_vectors)
def test_a_high_temperature_tends_to_uniform(z):
    p = generate.probabilities(z, 1e9)
    np.testing.assert_allclose(p, 1 / len(z), rtol=0, atol=1e-6)


@SETTINGS
@given(logit_vectors)
def test_a_small_temperature_tends_to_one_hot_on_the_argmax(z):
    top = np.sort(z)
    assume(top[-1] - top[-2] > 1e-3)
    p = generate.probabilities(z, 1e-6)
    expected = np.zeros(len(z))
    expected[np.argmax(z)] = 1
    np.testing.assert_array_equal(p, expected)


@SETTINGS
@given(logit_vectors)
def test_temperature_zero_is_the_limit_without_dividing_by_zero(z):
    with np.errstate(all="raise"):
        p = generate.probabilities(z, 0.0)
    maxima = z == z.max()
    np.testing.assert_array_equal(p, np.where(maxima, 1 / maxima.sum(), 0.0))


def test_extreme_temperatures_stay_finite():
    z = np.array([1e4, -1e4, 0.0, 3.0], dtype=np.float32)
    for t in (1e-300, 1e-30, 1e30, 1e300):
        p = generate.probabilities(z, t)
        assert np.isfinite(p).all()
        assert abs(p.sum() - 1) < 1e-12


@pytest.mark.parametrize("t", [-1.0, float("nan")])
def test_a_negative_temperature_is_refused(t):
    with pytest.raises(ValueError, match="temperature"):
        generate.probabilities(np.zeros(3), t)


# The frames a temperature slider plays


@SETTINGS
@given(logit_vectors, st.lists(st.floats(0, 100), min_size=1, max_size=8), st.integers(1, 10))
def test_each_frame_is_the_distribution_at_its_temperature(z, grid, k):
    sweep = generate.temperature_sweep(z, grid, k)
    k = min(k, len(z))
    assert sweep.probabilities.shape == (len(grid), k)
    np.testing.assert_array_equal(sweep.ids, np.argsort(-z, kind="stable")[:k])
    for t, frame, rest in zip(grid, sweep.probabilities, sweep.rest, strict=True):
        alone = generate.probabilities(z, t)
        np.testing.assert_allclose(frame, alone[sweep.ids], rtol=0, atol=1e-15)
        assert abs(rest - (1 - alone[sweep.ids].sum())) < 1e-12


def test_next_token_names_the_likeliest_tokens_first(gpt2):
    result = bert.run(gpt2, "The cat sat on the")
    shown = generate.next_token(gpt2, result, temperature=0.7, k=5)
    assert list(shown.probabilities) == sorted(shown.probabilities, reverse=True)
    assert shown.tokens == [gpt2.tokenizer.id_to_token(int(i)) for i in shown.ids]
    every = generate.probabilities(result.next_logits, 0.7)
    np.testing.assert_allclose(shown.probabilities, np.sort(every)[::-1][:5], rtol=0, atol=1e-15)


def test_an_encoder_has_no_next_token():
    encoder = load(TINY / "bert")
    result = bert.run(encoder, "The cat sat.")
    assert result.next_logits is None
    with pytest.raises(ValueError, match="no next-token head"):
        generate.next_token(encoder, result)
    with pytest.raises(ValueError, match="no next-token head"):
        generate.generate(encoder, "The cat", 2)


# Generation, step by step


def test_greedy_generation_takes_the_argmax_at_every_step(gpt2):
    steps = generate.generate(gpt2, "The cat sat on the", 6)
    assert len(steps) == 6
    prompt = bert.run(gpt2, "The cat sat on the").ids.tolist()
    for i, step in enumerate(steps):
        assert step.run.ids.tolist() == prompt + [s.id for s in steps[:i]]
        assert step.id == int(np.argmax(step.run.next_logits))
        assert step.candidates.ids[0] == step.id
        assert step.token == gpt2.tokenizer.id_to_token(step.id)
        n = len(step.run.ids)
        assert step.run.attentions.shape == (2, 4, n, n)  # each step's own attention
    again = bert.run_ids(gpt2, steps[-1].run.ids)
    np.testing.assert_array_equal(again.attentions, steps[-1].run.attentions)


def test_sampling_is_the_same_for_the_same_seed(gpt2):
    def draw(seed):
        return [s.id for s in generate.generate(gpt2, "The cat", 8, temperature=1.5, seed=seed)]

    first = draw(7)
    assert draw(7) == first
    assert any(draw(seed) != first for seed in range(8, 12))


def test_sampling_draws_from_the_distribution_at_the_temperature(gpt2):
    """Many one-token draws: each token's frequency is near its probability."""
    result = bert.run(gpt2, "The cat sat on the")
    p = generate.probabilities(result.next_logits, 2.0)
    rng = np.random.default_rng(0)
    draws = [generate.generate(gpt2, "The cat sat on the", 1, 2.0, rng)[0].id for _ in range(600)]
    counts = np.bincount(draws, minlength=len(p)) / len(draws)
    top = np.argsort(-p)[:3]
    np.testing.assert_allclose(counts[top], p[top], atol=0.05)


def test_sampling_needs_a_seed(gpt2):
    with pytest.raises(ValueError, match="seed"):
        generate.generate(gpt2, "The cat", 2, temperature=1.0)


def test_generation_stops_when_the_positions_are_full(gpt2):
    text = " ".join(["a"] * 126)
    steps = generate.generate(gpt2, text, 5)
    assert len(bert.run(gpt2, text).ids) == 126
    assert len(steps) == 2
    assert len(steps[-1].run.ids) == 127
