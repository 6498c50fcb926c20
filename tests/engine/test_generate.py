"""The next token at a temperature, its frames over a grid, and generation (engine.generate).

Laws (hypothesis) for the temperature; the tiny GPT-2 of ``tests/data/tiny_models`` for
generation, whose logits ``tests/engine/test_checkpoints.py`` holds to transformers'; every
tiny decoder for generation with the key/value cache against the whole pass
(:func:`whole_pass_greedy`, the oracle) and against transformers' greedy tokens.
"""

from pathlib import Path

import numpy as np
import pytest
import tiny_models
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from engine import bert, generate
from engine.checkpoint import load
from engine.scores import softmax

TINY = Path(__file__).parents[1] / "data" / "tiny_models"
#: Every tiny decoder: the 2026 families' q/k norms (Qwen3, Gemma 3), local layers with their
#: own window and rotary base (Gemma 3), score scale and soft caps (Gemma 2), Llama 3's
#: rotation and Phi-3's window run in a step as in the whole pass.
DECODERS = (
    "gpt2",
    "llama",
    "llama_fp32",
    "mistral",
    "qwen2",
    "llama3",
    "qwen3",
    "gemma3",
    "gemma3_fp32",
    "gemma2",
    "phi3",
)
TEXT = "The restaurant refused to serve me because it only cooks vegetarian food."
#: A step's attention row against the whole pass's: the same float32 sums in other orders
#: (each cached key and value holds the rounding of the pass that first computed it, and
#: one row is a matrix-vector product, which BLAS rounds unlike a row of a matrix product);
#: measured at most 2.0e-6 over up to 100 steps of every tiny decoder (docs/benchmarks.md).
ATOL_ATTENTION = 1e-5
#: The logits, of size about 10: measured at most 1.5e-5 (gemma3_fp32).
ATOL_LOGITS = 5e-5
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
@given(
    hnp.arrays(
        np.float32,
        st.integers(1, 300),
        elements=st.one_of(st.integers(-3, 3).map(float), st.floats(-30, 30, width=32)),
    ),
    st.integers(1, 310),
)
def test_the_top_ids_are_a_stable_sort_s_first_k(z, k):
    """Ties (few distinct values) and k beyond the vocabulary too: the smaller id first."""
    np.testing.assert_array_equal(generate.top_ids(z, k), np.argsort(-z, kind="stable")[:k])


def test_the_top_ids_of_logits_with_a_nan_are_the_sort_s():
    z = np.array([1.0, np.nan, 3.0, 3.0, -2.0], dtype=np.float32)
    for k in range(1, 6):
        np.testing.assert_array_equal(generate.top_ids(z, k), np.argsort(-z, kind="stable")[:k])


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


def whole_pass_greedy(model, text, n_new):
    """The oracle: a whole pass over the tokens so far for each new token, its argmax."""
    ids = bert.run(model, text).ids.tolist()
    runs = []
    for _ in range(n_new):
        runs.append(bert.run_ids(model, ids))
        ids.append(int(np.argmax(runs[-1].next_logits)))
    return runs, ids


@pytest.fixture(scope="module")
def decoders():
    return {name: load(TINY / name) for name in DECODERS}


@pytest.mark.parametrize("name", DECODERS)
def test_greedy_generation_is_the_whole_pass_s_token_by_token(decoders, name):
    """40 steps: past Mistral's window of 16."""
    model = decoders[name]
    steps = generate.generate(model, TEXT, 40)
    runs, ids = whole_pass_greedy(model, TEXT, 40)
    assert [step.id for step in steps] == ids[-40:]
    for step, whole in zip(steps, runs, strict=True):
        assert len(step.labels) == len(whole.ids)
        np.testing.assert_allclose(
            step.attention, whole.last_token_attention, rtol=0, atol=ATOL_ATTENTION
        )
        own = generate.probabilities(whole.next_logits)[step.id]
        assert step.probability == pytest.approx(own, abs=1e-5)


@pytest.mark.parametrize("name", DECODERS)
def test_greedy_generation_gives_transformers_tokens(decoders, name):
    reference = tiny_models.references([name])[name]
    steps = generate.generate(decoders[name], str(reference["short/text"]), 10)
    assert [step.id for step in steps] == reference["short/greedy"].tolist()


@pytest.mark.parametrize("name", DECODERS)
def test_a_step_is_the_whole_pass_s_last_row(decoders, name):
    """Logits, attention row and the cache a step hands on, against a whole pass."""
    model = decoders[name]
    ids = bert.run(model, TEXT).ids.tolist()
    cache = bert.run_ids(model, ids[:3], cache=True).cache
    for n in range(4, len(ids) + 1):
        step = bert.step(model, cache, ids[n - 1])
        whole = bert.run_ids(model, ids[:n], cache=True)
        np.testing.assert_allclose(step.next_logits, whole.next_logits, rtol=0, atol=ATOL_LOGITS)
        np.testing.assert_allclose(
            step.last_token_attention, whole.last_token_attention, rtol=0, atol=ATOL_ATTENTION
        )
        assert step.cache.keys.shape == whole.cache.keys.shape
        np.testing.assert_allclose(step.cache.keys, whole.cache.keys, rtol=0, atol=ATOL_LOGITS)
        np.testing.assert_allclose(step.cache.values, whole.cache.values, rtol=0, atol=ATOL_LOGITS)
        cache = step.cache


def test_the_cache_is_every_layer_s_keys_and_values_per_shared_head(decoders):
    """Llama: 4 query heads over 2 key/value heads, keys after the rotation."""
    model = decoders["llama"]
    run = bert.run(model, TEXT, cache=True)
    n = len(run.ids)
    assert run.cache.keys.shape == run.cache.values.shape == (2, 2, n, 8)
    np.testing.assert_array_equal(run.cache.keys, run.keys[:, ::2])  # heads 0, 2 read 0, 1
    np.testing.assert_array_equal(run.keys[:, 1], run.keys[:, 0])  # head 1 shares head 0's
    assert bert.run(model, TEXT).cache is None  # kept only when asked for


def test_a_step_leaves_its_cache_as_it_was(decoders):
    """Stateless: the cache is a value, and the same step twice gives the same bits."""
    model = decoders["mistral"]
    cache = bert.run(model, TEXT, cache=True).cache
    before = cache.keys.copy(), cache.values.copy()
    first, again = bert.step(model, cache, 42), bert.step(model, cache, 42)
    np.testing.assert_array_equal(cache.keys, before[0])
    np.testing.assert_array_equal(cache.values, before[1])
    np.testing.assert_array_equal(first.next_logits, again.next_logits)
    assert first.cache.n == cache.n + 1


def test_steps_from_one_cache_each_keep_their_own_rows(decoders):
    """A step writes its token in the room after the cache's rows; a second step from the
    same cache finds that row taken and copies: neither branch changes the other."""
    model = decoders["llama"]
    start = bert.step(model, bert.run(model, TEXT, cache=True).cache, 42).cache
    kept = start.keys.copy(), start.values.copy()
    one = bert.step(model, start, 7)
    one_keys = one.cache.keys.copy()
    other = bert.step(model, start, 9)  # the same position, another token
    np.testing.assert_array_equal(start.keys, kept[0])
    np.testing.assert_array_equal(start.values, kept[1])
    np.testing.assert_array_equal(one.cache.keys, one_keys)
    assert not np.array_equal(one.cache.keys[:, :, -1], other.cache.keys[:, :, -1])
    np.testing.assert_array_equal(other.cache.keys[:, :, :-1], kept[0])
    again = bert.step(model, one.cache, 5)  # on from the first branch, in its room
    np.testing.assert_array_equal(again.cache.keys[:, :, :-1], one_keys)
    assert again.cache.room is one.cache.room
    whole = bert.run_ids(model, [*bert.run(model, TEXT).ids, 42, 9, 5], cache=False)
    after = bert.step(model, other.cache, 5)
    np.testing.assert_allclose(after.next_logits, whole.next_logits, rtol=0, atol=ATOL_LOGITS)


def test_a_step_is_refused_past_the_positions_and_on_an_encoder(decoders, gpt2):
    ids = list(range(3, 131))  # the tiny models' 128 positions, full
    full = bert.run_ids(gpt2, ids[:128], cache=True).cache
    with pytest.raises(bert.TooLongError):
        bert.step(gpt2, full, 5)
    with pytest.raises(ValueError, match="token ids"):
        bert.step(gpt2, bert.run_ids(gpt2, ids[:4], cache=True).cache, 600)
    encoder = load(TINY / "bert")
    with pytest.raises(ValueError, match="not causal"):
        bert.step(encoder, bert.run(encoder, "The cat", cache=True).cache, 5)


def test_greedy_steps_show_the_model_s_own_probability_not_one(gpt2):
    """Issue #55, item 17: at T = 0 the pick's probability is softmax(z) at T = 1, not 1."""
    steps = generate.generate(gpt2, "The cat sat on the", 3)
    runs, _ = whole_pass_greedy(gpt2, "The cat sat on the", 3)
    for step, whole in zip(steps, runs, strict=True):
        own = generate.probabilities(whole.next_logits, 1.0)
        assert 0 < step.probability < 1
        assert step.probability == pytest.approx(own[step.id], abs=1e-6)
        assert step.candidates.temperature == 1.0  # the runners-up at the model's own T too
        np.testing.assert_allclose(
            step.candidates.probabilities, np.sort(own)[::-1][:10], rtol=0, atol=1e-6
        )


def test_greedy_generation_takes_the_argmax_at_every_step(gpt2):
    steps = generate.generate(gpt2, "The cat sat on the", 6)
    assert len(steps) == 6
    prompt = bert.run(gpt2, "The cat sat on the")
    for i, step in enumerate(steps):
        assert step.candidates.ids[0] == step.id
        assert step.token == gpt2.tokenizer.id_to_token(step.id)
        assert step.text == gpt2.tokenizer.decode([step.id])
        n = len(prompt.ids) + i
        assert step.attention.shape == (2, 4, n)  # the last token's row, not n x n
        assert step.labels[: len(prompt.ids)] == prompt.labels
        for label, before in zip(step.labels[len(prompt.ids) :], steps[:i], strict=True):
            assert label in (before.text.strip(), before.token)
            assert label
            assert "\ufffd" not in label


def test_sampling_is_the_same_for_the_same_seed(gpt2):
    def draw(seed):
        return [s.id for s in generate.generate(gpt2, "The cat", 8, temperature=1.5, seed=seed)]

    first = draw(7)
    assert draw(7) == first
    assert any(draw(seed) != first for seed in range(8, 12))


def test_sampling_keeps_the_model_s_own_probability_beside_the_temperature_s(gpt2):
    steps = generate.generate(gpt2, "The cat sat on the", 1, temperature=2.0, seed=0)
    logits = bert.run(gpt2, "The cat sat on the").next_logits
    assert steps[0].probability == pytest.approx(generate.probabilities(logits)[steps[0].id])
    assert steps[0].candidates.temperature == 2.0


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
    assert len(steps) == 2  # the 127th and the 128th token: then no position is left
    assert steps[-1].attention.shape[-1] == 127
