"""Tests for engine.bert, engine.checkpoint and engine.analysis: parity with the reference
BertModel, tokenization, loading, properties.

The golden file ``tests/data/minilm_golden.npz`` holds what Hugging Face transformers'
``BertModel`` (PyTorch, eager attention) computed for three texts, with token ids from
transformers' pure-Python WordPiece; ``scripts/make_bert_golden.py`` wrote it. Every
other expectation here is a property (rows sum to 1, tokens cover the text, ...).
"""

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from engine.analysis import attention_rollout, permutation_error, rank_changes, rank_heads
from engine.attention import attention_loop
from engine.bert import TooLongError, run, run_ids
from engine.checkpoint import ModelUnavailableError, load_minilm
from engine.configs import read_config
from engine.layers import encoder_layer, erf, gelu
from engine.one_layer import layer_run, layer_stages
from engine.resources import MINILM_INSTALL_HINT, minilm_dir
from engine.scores import softmax

pytestmark = pytest.mark.skipif(
    minilm_dir() is None, reason=f"all-MiniLM-L6-v2 is not installed ({MINILM_INSTALL_HINT})"
)

GOLDEN = Path(__file__).parents[1] / "data" / "minilm_golden.npz"
NAMES = ("accents", "restaurant", "long")
# The bound; measured 1.9e-6 and 5.5e-6 (docs/benchmarks.md, "Parity").
ATTENTION_ATOL = 1e-5
HIDDEN_ATOL = 1e-5


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture(scope="module")
def golden():
    with np.load(GOLDEN) as data:
        return {key: data[key] for key in data.files}


@pytest.fixture(scope="module")
def runs(model, golden):
    return {name: run(model, str(golden[f"{name}/text"])) for name in NAMES}


def _arrays(tree):
    for value in tree.values():
        if isinstance(value, np.ndarray):
            yield value
        elif isinstance(value, tuple):
            for item in value:
                yield from _arrays(item)
        else:
            yield from _arrays(value)


# Parity with the reference implementation


@pytest.mark.parametrize("name", NAMES)
def test_attentions_match_reference(runs, golden, name):
    rows = golden[f"{name}/query_rows"]
    ours = runs[name].attentions[:, :, rows]
    reference = golden[f"{name}/attentions"]
    assert ours.shape == reference.shape
    np.testing.assert_allclose(ours, reference, rtol=0, atol=ATTENTION_ATOL)


@pytest.mark.parametrize("name", NAMES)
def test_last_hidden_state_matches_reference(runs, golden, name):
    reference = golden[f"{name}/last_hidden_state"]
    np.testing.assert_allclose(runs[name].hidden_states[-1], reference, rtol=0, atol=HIDDEN_ATOL)


def test_long_text_is_long(golden):
    assert len(golden["long/ids"]) >= 128


@pytest.mark.parametrize("name", NAMES)
def test_ids_match_reference_tokenizer(runs, golden, name):
    np.testing.assert_array_equal(runs[name].ids, golden[f"{name}/ids"])


@pytest.mark.parametrize("name", NAMES)
def test_run_ids_equals_run(model, runs, name):
    from_ids = run_ids(model, runs[name].ids)
    np.testing.assert_array_equal(from_ids.attentions, runs[name].attentions)
    assert from_ids.tokens == runs[name].tokens


def test_it_restaurant_head_matches_reference(runs, golden):
    tokens = runs["restaurant"].tokens
    it, restaurant = tokens.index("it"), tokens.index("restaurant")
    ours = rank_heads(runs["restaurant"].attentions, it, restaurant)
    reference = rank_heads(golden["restaurant/attentions"], it, restaurant)
    print(f"'it' -> 'restaurant': layer {ours[0].layer}, head {ours[0].head}, {ours[0].weight:.4f}")
    assert (ours[0].layer, ours[0].head) == (reference[0].layer, reference[0].head)
    assert ours[0].weight == pytest.approx(reference[0].weight, abs=ATTENTION_ATOL)


# Tokenization


def test_special_tokens_at_the_ends(runs):
    for result in runs.values():
        assert result.tokens[0] == "[CLS]"
        assert result.tokens[-1] == "[SEP]"
        assert "[CLS]" not in result.tokens[1:-1]
        assert "[SEP]" not in result.tokens[1:-1]


@pytest.mark.parametrize("text", ["Café", "CAFÉ", "cafe\u0301"])
def test_uncased_and_accents_stripped(model, text):
    assert run(model, text).tokens == ["[CLS]", "cafe", "[SEP]"]


def test_rare_word_splits_into_pieces(model):
    word = "antidisestablishmentarianism"
    pieces = run(model, word).tokens[1:-1]
    assert len(pieces) > 1
    assert not pieces[0].startswith("##")
    assert all(piece.startswith("##") for piece in pieces[1:])
    assert "".join(piece.removeprefix("##") for piece in pieces) == word


@pytest.mark.parametrize("text", ["Tokenization of Zürich", "  two   spaces, café!  "])
def test_labels_are_the_text_each_token_covers(model, text):
    result = run(model, text)
    assert result.labels[0] == "[CLS]"
    assert result.labels[-1] == "[SEP]"
    assert result.offsets[0] == result.offsets[-1] == (0, 0)
    starts = [start for start, _ in result.offsets[1:-1]]
    assert starts == sorted(starts)
    for label, (start, end) in zip(result.labels[1:-1], result.offsets[1:-1], strict=True):
        assert label
        assert label.removeprefix("##") == text[start:end]


def test_labels_keep_the_hashes_of_a_words_later_pieces(model):
    result = run(model, "Their ambiance was good.")
    assert result.labels == ["[CLS]", "Their", "am", "##bian", "##ce", "was", "good", ".", "[SEP]"]


def test_empty_text_runs_cls_and_sep(model):
    result = run(model, "")
    assert result.tokens == ["[CLS]", "[SEP]"]
    c = model.config
    assert result.attentions.shape == (c.n_layers, c.n_heads, 2, 2)
    np.testing.assert_allclose(result.attentions.sum(axis=-1), 1, atol=1e-6)


# The 512-position cap


def _text_of(model, n_tokens):
    word = "hello"
    assert len(model.tokenizer.encode(word, add_special_tokens=False).ids) == 1
    return " ".join([word] * n_tokens)


def test_longest_text_that_fits_runs(model):
    result = run(model, _text_of(model, 510))
    assert len(result.tokens) == 512
    assert result.attentions.shape == (6, 12, 512, 512)
    assert np.isfinite(result.hidden_states).all()


def test_one_token_too_many_raises_clear_error(model):
    with pytest.raises(TooLongError, match=r"513 tokens.*at most 512 \(510 plus") as caught:
        run(model, _text_of(model, 511))
    assert isinstance(caught.value, ValueError)
    assert (caught.value.n_tokens, caught.value.limit) == (513, 512)


def test_run_ids_caps_too(model):
    with pytest.raises(TooLongError):
        run_ids(model, [101] * 513)


@pytest.mark.parametrize("ids", [[], [-1], [30522]])
def test_run_ids_rejects_bad_ids(model, ids):
    with pytest.raises(ValueError, match="token"):
        run_ids(model, ids)


# Loading


def test_weights_are_read_only_float32_contiguous(model):
    arrays = list(_arrays(model.params))
    assert len(arrays) == 5 + 16 * model.config.n_layers
    for array in arrays:
        assert array.dtype == np.float32
        assert array.flags.c_contiguous
        assert not array.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        model.params["wte"][0, 0] = 1.0


def test_params_cannot_be_replaced(model):
    with pytest.raises(TypeError):
        model.params["wte"] = None


def test_blocks_are_named_as_the_shared_layer_takes_them(model):
    c = model.config
    for block in model.params["blocks"]:
        assert set(block) == {"attn", "ln_1", "ffn", "ln_2"}
        assert block["attn"]["w_q"].shape == block["attn"]["w_o"].shape == (c.d_model, c.d_model)
        assert block["ffn"]["w_1"].shape == (c.d_model, c.d_ff)


def test_config_is_read_from_config_json(model):
    c = model.config
    assert (c.n_layers, c.n_heads, c.d_model, c.d_ff, c.d_head) == (6, 12, 384, 1536, 32)
    assert (c.activation, c.norm_first, c.eps) == ("gelu", False, 1e-12)


def _edited_config(tmp_path, model, **changes):
    raw = json.loads((model.folder / "config.json").read_text(encoding="utf-8"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**raw, **changes}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"model_type": "t5"},
            r"reads bert, roberta, distilbert, electra, gpt2, llama, mistral, qwen2, qwen3, "
            r"gemma2, gemma3_text, phi3 models .*, not 't5'",
        ),
        ({"hidden_act": "swish"}, "no activation 'swish'"),
        ({"position_embedding_type": "relative_key"}, "position_embedding_type='absolute'"),
        ({"num_attention_heads": 5}, "does not divide"),
    ],
)
def test_configs_this_engine_does_not_implement_are_refused(tmp_path, model, changes, message):
    with pytest.raises(ValueError, match=message):
        read_config(_edited_config(tmp_path, model, **changes))


def test_a_relu_bert_is_read_as_data(tmp_path, model):
    config, _ = read_config(_edited_config(tmp_path, model, hidden_act="relu"))
    assert config.activation == "relu"


def test_a_checkpoint_of_another_shape_is_refused(tmp_path, model):
    for name in ("model.safetensors", "tokenizer.json"):
        shutil.copy(model.folder / name, tmp_path / name)
    _edited_config(tmp_path, model, intermediate_size=1024)
    stored = r"encoder.layer.0.intermediate.dense.weight \(blocks.ffn.w_1\)"
    with pytest.raises(
        ValueError, match=stored + r" should have shape \(1024, 384\).*\(1536, 384\)"
    ):
        load_minilm(tmp_path)


def test_missing_files_say_how_to_install(tmp_path):
    with pytest.raises(ModelUnavailableError, match=MINILM_INSTALL_HINT):
        load_minilm(tmp_path)


def test_load_from_explicit_path_matches_default(model):
    again = load_minilm(model.folder)
    np.testing.assert_array_equal(again.params["wpe"], model.params["wpe"])


# Properties of one forward pass


def test_shapes_and_dtypes(runs, model):
    c = model.config
    for result in runs.values():
        n = len(result.tokens)
        assert result.attentions.shape == (c.n_layers, c.n_heads, n, n)
        assert result.hidden_states.shape == (c.n_layers + 1, n, c.d_model)
        assert result.queries.shape == result.keys.shape == (c.n_layers, c.n_heads, n, c.d_head)
        for array in (result.attentions, result.hidden_states, result.queries, result.keys):
            assert array.dtype == np.float32


def test_attention_rows_sum_to_one(runs):
    for result in runs.values():
        assert (result.attentions >= 0).all()
        np.testing.assert_allclose(result.attentions.sum(axis=-1), 1, atol=1e-5)


def test_queries_and_keys_reproduce_attention(runs):
    # The reference in float64 from the returned float32 q and k; the engine's scores are a
    # float32 dot of d terms, each within γ_d·Σ|q||k|/√d of the exact one (γ_d = d·ε/(1-d·ε),
    # the textbook bound), and a weight p_j moves by at most p_j·2·max δ when its row's
    # scores move by δ. A wrong q, k or scale moves weights by 1e-2 and more.
    for result in runs.values():
        queries, keys = result.queries.astype(np.float64), result.keys.astype(np.float64)
        size = queries.shape[-1]
        scores = queries @ keys.swapaxes(-1, -2) / math.sqrt(size)
        reference = softmax(scores)
        unit = np.finfo(np.float32).eps / 2
        gamma = size * unit / (1 - size * unit)
        error = gamma * (np.abs(queries) @ np.abs(keys).swapaxes(-1, -2)) / math.sqrt(size)
        bound = 2 * reference * error.max(axis=-1, keepdims=True) + 1e-6
        assert (np.abs(result.attentions - reference) <= bound).all()


def test_erf_matches_math_erf():
    x = np.linspace(-6, 6, 200_001, dtype=np.float32)
    reference = np.array([math.erf(float(value)) for value in x])
    approx = erf(x)
    assert approx.dtype == np.float32
    assert np.abs(approx - reference).max() < 5e-7


def test_gelu_is_exact_erf_form_in_float32():
    x = np.linspace(-8, 8, 20_001, dtype=np.float32)
    reference = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.tolist()])
    y = gelu(x)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, reference, rtol=0, atol=2e-6)


# Rollout and the head finder


def test_rollout_rows_sum_to_one(runs):
    for result in runs.values():
        cumulative = attention_rollout(result.attentions, cumulative=True)
        assert cumulative.shape == result.attentions.shape[:1] + result.attentions.shape[2:]
        np.testing.assert_allclose(cumulative.sum(axis=-1), 1, atol=1e-5)
        np.testing.assert_array_equal(attention_rollout(result.attentions), cumulative[-1])


def test_rollout_multiplies_layer_by_layer(runs):
    attentions = runs["restaurant"].attentions.astype(np.float64)
    n = attentions.shape[-1]
    expected = np.eye(n)
    for layer in attentions:
        expected = 0.5 * (layer.mean(axis=0) + np.eye(n)) @ expected
    np.testing.assert_allclose(attention_rollout(attentions), expected, atol=1e-12)


def test_rank_heads_lists_every_head_once_descending(runs):
    result = runs["restaurant"]
    n_layers, n_heads = result.attentions.shape[:2]
    ranked = rank_heads(result.attentions, 3, 1)
    assert len(ranked) == n_layers * n_heads == 72
    assert {(h.layer, h.head) for h in ranked} == {
        (layer, head) for layer in range(n_layers) for head in range(n_heads)
    }
    weights = [h.weight for h in ranked]
    assert weights == sorted(weights, reverse=True)
    for h in ranked:
        assert h.weight == result.attentions[h.layer, h.head, 3, 1]


# One layer recomputed from its input: what the core pages draw


@pytest.mark.parametrize("layer", range(6))
def test_layer_run_gives_the_models_weights_for_every_head(model, runs, layer):
    """The pages' layer is the attention the pass ran: the same bits, not a second copy."""
    result = runs["restaurant"]
    recomputed = layer_run(model, result, layer)
    np.testing.assert_array_equal(recomputed.attention.weights, result.attentions[layer])
    np.testing.assert_array_equal(recomputed.attention.q, result.queries[layer])
    np.testing.assert_array_equal(recomputed.attention.k, result.keys[layer])
    assert recomputed.attention.heads.scale == pytest.approx(1 / math.sqrt(32))
    np.testing.assert_array_equal(recomputed.x, result.hidden_states[layer])  # the input


def test_default_passage_it_finds_restaurant_in_layer_3_head_1(model):
    from app.state.controls import DEFAULT_TEXT

    result = run(model, DEFAULT_TEXT)
    weights = layer_run(model, result, 3).attention.weights[1]
    it = result.labels.index("it")
    assert result.labels[int(weights[it].argmax())] == "restaurant"
    assert weights[it].max() == pytest.approx(0.430, abs=5e-4)


def test_layer_run_weights_are_the_heads_projections_with_biases(model, runs):
    result = runs["accents"]
    recomputed = layer_run(model, result, 2)
    w = recomputed.weights
    x = result.hidden_states[2]
    head = slice(5 * 32, 6 * 32)
    q, k = x @ w.w_q[:, head] + w.b_q[head], x @ w.w_k[:, head] + w.b_k[head]
    v = x @ w.w_v[:, head] + w.b_v[head]
    loop_weights, loop_output = attention_loop(q.astype(np.float64), k, v)  # the oracle
    np.testing.assert_allclose(recomputed.attention.weights[5], loop_weights, atol=1e-5)
    np.testing.assert_allclose(recomputed.attention.heads.output[5], loop_output, atol=1e-4)
    assert w.w_q.shape == w.w_o.shape == (384, 384)


def test_layer_run_what_ifs_change_the_scale_and_mask(model, runs):
    result = runs["restaurant"]
    base = layer_run(model, result, 3)
    sharp = layer_run(model, result, 3, scale=1.0)
    np.testing.assert_allclose(sharp.attention.heads.scores, base.attention.heads.scores)
    assert sharp.attention.weights.max(axis=-1).mean() > base.attention.weights.max(axis=-1).mean()
    causal = layer_run(model, result, 3, causal=True).attention.weights
    n = causal.shape[-1]
    assert np.all(causal[:, np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] == 0)
    np.testing.assert_allclose(causal.sum(axis=-1), 1.0, atol=1e-5)


def test_layer_stages_end_in_the_next_hidden_state(model, runs):
    result = runs["restaurant"]
    for layer in range(6):
        stages = layer_stages(model, result, layer)
        np.testing.assert_array_equal(stages.output, result.hidden_states[layer + 1])
        np.testing.assert_array_equal(stages.streams[0], result.hidden_states[layer])
        np.testing.assert_array_equal(stages.attention.weights, result.attentions[layer])
        assert stages.ffn_hidden.shape == (len(result.ids), 1536)


def test_every_layer_of_the_pass_is_the_shared_encoder_layer(model, runs):
    """An oracle: the shared layer function, called here on each layer's input with
    BERT's settings, gives the pass's next hidden state to the bit."""
    result, c = runs["long"], model.config
    for layer, block in enumerate(model.params["blocks"]):
        shared = encoder_layer(
            result.hidden_states[layer], **block, n_heads=c.n_heads, activation=gelu, eps=c.eps
        )
        np.testing.assert_array_equal(shared.output, result.hidden_states[layer + 1])


def test_the_encoder_layer_is_bert_written_out(model, runs):
    """The same layer from its equations, in float64 and nothing shared but the weights."""
    x = runs["accents"].hidden_states[2].astype(np.float64)
    block = model.params["blocks"][2]
    a, f = block["attn"], block["ffn"]

    def norm(y, ln):
        mean, var = y.mean(axis=-1, keepdims=True), y.var(axis=-1, keepdims=True)
        return (y - mean) / np.sqrt(var + 1e-12) * ln["g"] + ln["b"]

    q, k, v = (x @ a[f"w_{m}"] + a[f"b_{m}"] for m in "qkv")
    heads = []
    for h in range(12):
        cols = slice(32 * h, 32 * (h + 1))
        scores = q[:, cols] @ k[:, cols].T / math.sqrt(32)
        weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        heads.append(weights / weights.sum(axis=1, keepdims=True) @ v[:, cols])
    h_ = norm(x + np.hstack(heads) @ a["w_o"] + a["b_o"], block["ln_1"])
    inner = h_ @ f["w_1"] + f["b_1"]
    gelu_ = 0.5 * inner * (1 + np.vectorize(math.erf)(inner / math.sqrt(2)))
    y = norm(h_ + gelu_ @ f["w_2"] + f["b_2"], block["ln_2"])
    np.testing.assert_allclose(runs["accents"].hidden_states[3], y, rtol=0, atol=2e-5)


def test_without_positions_the_model_only_permutes(model, runs):
    ids = runs["restaurant"].ids
    permutation = np.random.default_rng(0).permutation(len(ids))
    assert permutation_error(model, ids, permutation, positions=False) < 1e-4
    assert permutation_error(model, ids, permutation) > 0.1


def test_rank_changes_puts_the_largest_absolute_change_first():
    rng = np.random.default_rng(3)
    grid_a, grid_b = rng.random((6, 12)), rng.random((6, 12))
    grid_b[4, 7] = grid_a[4, 7] + 0.99  # a head that moved a lot, downwards (A − B < 0)
    changes = rank_changes(grid_a, grid_b)
    assert len(changes) == 72
    assert (changes[0].layer, changes[0].head) == (4, 7)
    assert changes[0].change == pytest.approx(-0.99)
    magnitudes = [abs(c.change) for c in changes]
    assert magnitudes == sorted(magnitudes, reverse=True)
    for c in changes:
        assert c.change == grid_a[c.layer, c.head] - grid_b[c.layer, c.head]
        assert (c.weight_a, c.weight_b) == (grid_a[c.layer, c.head], grid_b[c.layer, c.head])
