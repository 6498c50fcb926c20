"""The trained date translator in NumPy: accuracy, decoding, attention properties, loading."""

import datetime as dt

import numpy as np
import pytest

from engine import dates, seq2seq
from engine.attention import attention_loop, multi_head_attention
from engine.layers import encoder_layer

#: docs/benchmarks.md reports the held-out exact match measured by the NumPy engine; a retrained
#: model that falls below this has regressed.
MIN_HELD_OUT_ACCURACY = 0.99
EXAMPLE = "the third of march 2021"


@pytest.fixture(scope="module")
def model():
    return seq2seq.load_translator()


@pytest.fixture(scope="module")
def example(model):
    return seq2seq.translate(model, EXAMPLE)


# --- the data --------------------------------------------------------------------------


def test_dataset_is_deterministic_and_held_out_dates_are_unseen():
    train, held_out = dates.dataset(dates.SEED, 2000, 300)
    again_train, again_held_out = dates.dataset(dates.SEED, 2000, 300)
    assert train == again_train
    assert held_out == again_held_out
    assert not {ex.target for ex in train} & {ex.target for ex in held_out}
    assert dates.dataset(dates.SEED, 50, 300)[1] == held_out  # training size leaves it alone


def test_spelling_and_iso_form():
    date = dt.date(2021, 3, 3)
    assert dates.spell(date, 0) == EXAMPLE
    assert dates.spell(date, 2) == "march third 2021"
    assert dates.iso(date) == "2021-03-03"
    assert dates.DAY_WORDS[20] == "twenty-first"
    assert len(dates.DAY_WORDS) == 31
    assert len(dates.all_dates()) == 73_049


# --- accuracy and decoding --------------------------------------------------------------


def test_held_out_exact_match_stays_above_the_threshold(model):
    _, held_out = dates.dataset(dates.SEED, 0, dates.N_HELD_OUT)
    hits = 0
    for ex in held_out:
        translation = seq2seq.translate(model, ex.source)
        hits += translation.finished and translation.text == ex.target
    assert hits / len(held_out) >= MIN_HELD_OUT_ACCURACY


def test_example_translates(example):
    assert example.text == "2021-03-03"
    assert example.source == ("the", "third", "of", "march", "2021")
    assert example.unknown == ()


def test_greedy_decoding_stops_at_the_end_token(example):
    assert example.finished
    assert example.steps[-1].token == seq2seq.END
    assert seq2seq.END not in example.tokens
    assert len(example.steps) == len(example.tokens) + 1
    assert [step.token for step in example.steps[:-1]] == list(example.tokens)
    for t, step in enumerate(example.steps, start=1):
        assert step.inputs == (seq2seq.START, *example.tokens[: t - 1])
        assert 0.0 < step.probability <= 1.0


def test_max_len_cuts_decoding_short(model):
    translation = seq2seq.translate(model, EXAMPLE, max_len=3)
    assert not translation.finished
    assert translation.text == "202"
    assert len(translation.steps) == 3
    with pytest.raises(ValueError, match="max_len"):
        seq2seq.translate(model, EXAMPLE, max_len=0)


def test_punctuation_and_case_are_ignored(model, example):
    assert seq2seq.translate(model, "  The THIRD of March, 2021. ").text == example.text


# --- attention properties ---------------------------------------------------------------


def test_decoder_self_attention_is_causal_and_rows_sum_to_one(model, example):
    c = model.config
    for t, step in enumerate(example.steps, start=1):
        weights = step.self_attention
        assert weights.shape == (c.n_layers, c.n_heads, t, t)
        assert np.all(np.triu(weights, k=1) == 0.0)  # exactly zero above the diagonal
        np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-5)


def test_cross_attention_rows_sum_to_one(model, example):
    c = model.config
    n_src = len(example.source)
    for t, step in enumerate(example.steps, start=1):
        assert step.cross_attention.shape == (c.n_layers, c.n_heads, t, n_src)
        assert np.all(step.cross_attention >= 0.0)
        np.testing.assert_allclose(step.cross_attention.sum(axis=-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(example.encoder_attention.sum(axis=-1), 1.0, atol=1e-5)


def test_earlier_rows_do_not_change_as_the_mask_grows(example):
    """Causality: what step t computed for its rows, step t + 1 computes again, unchanged."""
    for before, after in zip(example.steps, example.steps[1:], strict=False):
        t = before.self_attention.shape[-1]
        np.testing.assert_allclose(
            after.self_attention[..., :t, :t], before.self_attention, atol=1e-5
        )
        np.testing.assert_allclose(
            after.cross_attention[..., :t, :], before.cross_attention, atol=1e-5
        )


def test_cross_attention_matrix_form_equals_the_loop_per_head(model, example):
    memory = seq2seq.encode(model, [model.source_index[w] for w in example.source]).memory
    rng = np.random.default_rng(0)
    y = rng.standard_normal((4, model.config.d_model)).astype(np.float32)
    weights = model.params["decoder"][0]["cross_attn"]
    result = multi_head_attention(y, **weights, n_heads=model.config.n_heads, memory=memory)
    for h in range(model.config.n_heads):
        loop_weights, loop_output = attention_loop(result.q[h], result.k[h], result.v[h])
        np.testing.assert_allclose(result.heads.weights[h], loop_weights, atol=1e-5)
        np.testing.assert_allclose(result.heads.output[h], loop_output, atol=1e-5)


def test_the_encoder_is_the_shared_encoder_layer(model, example):
    """The translator's encoder runs engine.layers.encoder_layer (post-LN, ReLU), as the
    toy model and MiniLM do: its layers called here give its memory to the bit."""
    ids = [model.source_index[w] for w in example.source]
    encoding = seq2seq.encode(model, ids)
    x = seq2seq._embed(ids, model.params["source_embedding"])
    for layer, block in enumerate(model.params["encoder"]):
        result = encoder_layer(x, **block, n_heads=model.config.n_heads, eps=1e-5)
        np.testing.assert_array_equal(result.attention.weights, encoding.self_attention[layer])
        x = result.output
    np.testing.assert_array_equal(x, encoding.memory)


def _word_kind(word):
    if word.isdigit():
        return "year"
    return "month" if word in dates.MONTHS else "day" if word in dates.DAY_WORDS else "filler"


#: Decoder inputs whose output is a digit of the year, month or day: input 0 (<s>)
#: predicts the year's first digit, input 5 (the first "-") the month's first, and so on.
ROWS_COPYING = {
    0: "year",
    1: "year",
    2: "year",
    3: "year",
    5: "month",
    6: "month",
    8: "day",
    9: "day",
}


def test_cross_attention_aligns_each_digit_with_its_source_word(model):
    """The alignment the page is about, on held-out sentences in every word order.

    In the first decoder layer, averaged over heads, each row that writes a digit puts
    its largest weight on the source word the digit comes from.
    """
    _, held_out = dates.dataset(dates.SEED, 0, 200)
    aligned = 0
    for ex in held_out:
        translation = seq2seq.translate(model, ex.source)
        final = translation.steps[-1].cross_attention[0].mean(axis=0)  # [t, n_src]
        looked_at = [_word_kind(translation.source[j]) for j in final.argmax(axis=-1)]
        aligned += all(looked_at[row] == kind for row, kind in ROWS_COPYING.items())
    assert aligned / len(held_out) >= 0.95


# --- inputs the model cannot read ---------------------------------------------------------


def test_unknown_words_are_read_as_unk_without_crashing(model):
    translation = seq2seq.translate(model, "the thrid of marchh 2021")
    assert translation.unknown == ("thrid", "marchh")
    assert translation.source == ("the", "thrid", "of", "marchh", "2021")
    _, ids, unknown = seq2seq.read_source(model, "thrid thrid")
    assert ids == [model.source_index[seq2seq.UNK]] * 2
    assert unknown == ["thrid"]  # each unknown word once


@pytest.mark.parametrize("text", ["", "   ", "?!, ."])
def test_empty_source_is_refused_clearly(model, text):
    with pytest.raises(seq2seq.UnreadableSourceError, match="nothing to translate"):
        seq2seq.translate(model, text)


def test_overlong_source_is_refused_clearly(model):
    with pytest.raises(seq2seq.UnreadableSourceError, match="at most"):
        seq2seq.translate(model, "of " * (seq2seq.MAX_SOURCE_WORDS + 1))


# --- the weights file -------------------------------------------------------------------


def test_file_holds_exactly_the_declared_weights(model):
    with np.load(seq2seq.TRANSLATOR_PATH) as archive:
        names = set(archive.files) - {"config", "source_vocab", "target_vocab"}
        assert all(archive[name].dtype == np.float32 for name in names)
    shapes = seq2seq.parameter_shapes(
        model.config, len(model.source_vocab), len(model.target_vocab)
    )
    assert names == set(shapes)
    assert seq2seq.TRANSLATOR_PATH.stat().st_size <= 5_000_000


def test_loaded_weights_are_read_only(model):
    with pytest.raises(ValueError, match="read-only"):
        model.params["decoder"][0]["cross_attn"]["w_q"][0, 0] = 1.0


def _rewrite(path, change):
    with np.load(seq2seq.TRANSLATOR_PATH) as archive:
        arrays = {name: archive[name] for name in archive.files}
    change(arrays)
    np.savez(path, **arrays)
    return path


def test_a_weight_of_the_wrong_shape_is_a_clear_error(tmp_path):
    def truncate(arrays):
        arrays["decoder.1.cross_attn.w_k"] = arrays["decoder.1.cross_attn.w_k"][:, :-1]

    path = _rewrite(tmp_path / "bad.npz", truncate)
    with pytest.raises(seq2seq.CorruptWeightsError, match=r"decoder\.1\.cross_attn\.w_k.*shape"):
        seq2seq.load_translator(path)


def test_a_missing_weight_is_a_clear_error(tmp_path):
    path = _rewrite(tmp_path / "bad.npz", lambda arrays: arrays.pop("encoder.0.ffn.b1"))
    with pytest.raises(seq2seq.CorruptWeightsError, match=r"missing encoder\.0\.ffn\.b1"):
        seq2seq.load_translator(path)


def test_a_file_that_is_not_a_model_is_a_clear_error(tmp_path):
    path = tmp_path / "junk.npz"
    path.write_bytes(b"not a zip file")
    with pytest.raises(seq2seq.CorruptWeightsError, match="not a translator weights file"):
        seq2seq.load_translator(path)


def test_a_missing_file_says_how_to_create_it(tmp_path):
    with pytest.raises(seq2seq.TranslatorUnavailableError, match=r"scripts/train_translator\.py"):
        seq2seq.load_translator(tmp_path / "nowhere.npz")


def test_save_refuses_wrong_shapes(tmp_path, model):
    weights = {
        name: np.zeros(shape, np.float32)
        for name, shape in seq2seq.parameter_shapes(
            model.config, len(model.source_vocab), len(model.target_vocab)
        ).items()
    }
    weights["out.b"] = np.zeros(3, np.float32)
    with pytest.raises(seq2seq.CorruptWeightsError, match=r"out\.b"):
        seq2seq.save_translator(
            tmp_path / "x.npz", model.config, model.source_vocab, model.target_vocab, weights
        )
