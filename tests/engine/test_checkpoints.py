"""Any BERT-family or GPT-2 checkpoint folder, read by the engine: parity, tokenizers, refusals.

The tiny checkpoints in ``tests/data/tiny_models/`` (one per family, 2 layers, 4 heads,
hidden size 32) come with what transformers computed from them
(``scripts/make_tiny_checkpoints.py``, ``tests/data/tiny_models/README.md``). The refusal
cases are made here, in ``tmp_path``: a copy of a folder with one thing broken.
"""

import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import tiny_models
from safetensors.numpy import load_file, save_file

from engine import bert, checkpoint, generate, one_layer
from engine.checkpoint import (
    MissingFileError,
    MissingTensorError,
    PickleCheckpointError,
    ShapeMismatchError,
    UnsupportedModelError,
    load,
)
from engine.families import FAMILIES

TINY = tiny_models.TINY
FOLDERS = ("bert", "bert_variant", "roberta", "distilbert", "electra", "gpt2")
ATOL = 1e-5  # the bound; measured in docs/benchmarks.md


@pytest.fixture(scope="module")
def models():
    return {name: load(TINY / name) for name in FOLDERS}


@pytest.fixture(scope="module")
def references():
    return tiny_models.references(FOLDERS)


def _cases(reference):
    return sorted({key.split("/")[0] for key in reference if key.endswith("/ids")})


def _ran(model, reference, case):
    return bert.run_ids(model, reference[f"{case}/ids"], types=reference[f"{case}/token_type_ids"])


# Parity with transformers


@pytest.mark.parametrize("name", FOLDERS)
def test_every_attention_map_matches_transformers(models, references, name):
    for case in _cases(references[name]):
        result = _ran(models[name], references[name], case)
        np.testing.assert_allclose(
            result.attentions, references[name][f"{case}/attentions"], rtol=0, atol=ATOL
        )


@pytest.mark.parametrize("name", FOLDERS)
def test_every_hidden_state_matches_transformers(models, references, name):
    """transformers' last hidden state is after GPT-2's final LayerNorm: our
    ``last_hidden_state``; ``hidden_states`` keep each layer's own output."""
    for case in _cases(references[name]):
        result = _ran(models[name], references[name], case)
        expected = references[name][f"{case}/hidden_states"]
        np.testing.assert_allclose(result.hidden_states[:-1], expected[:-1], rtol=0, atol=ATOL)
        np.testing.assert_allclose(result.last_hidden_state, expected[-1], rtol=0, atol=ATOL)
        if not models[name].config.lm_head:
            assert np.shares_memory(result.last_hidden_state, result.hidden_states[-1])


def test_gpt2_logits_match_transformers(models, references):
    model, reference = models["gpt2"], references["gpt2"]
    for case in _cases(reference):
        result = _ran(model, reference, case)
        expected = reference[f"{case}/logits"]
        np.testing.assert_allclose(generate.logits(model, result), expected, rtol=0, atol=ATOL)
        np.testing.assert_allclose(result.next_logits, expected[-1], rtol=0, atol=ATOL)


@pytest.mark.parametrize("name", FOLDERS)
def test_the_config_is_read_as_transformers_ran_it(models, references, name):
    c, facts = models[name].config, references[name]
    expected = {key.removeprefix("model/"): facts[key].item() for key in facts if "model/" in key}
    assert c.model_type == expected["model_type"]
    for field in ("n_vocab", "n_positions", "n_types", "n_layers", "n_heads", "d_model"):
        assert getattr(c, field) == expected[field], field
    assert (c.d_embedding, c.d_ff, c.activation) == (
        expected["d_embedding"],
        expected["d_ff"],
        expected["activation"],
    )
    assert (c.eps, c.position_offset, c.causal) == (
        expected["eps"],
        expected["position_offset"],
        expected["causal"],
    )


def test_gpt2_attends_only_backwards(models, references):
    result = _ran(models["gpt2"], references["gpt2"], "long")
    n = len(result.ids)
    assert not result.attentions[..., np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]].any()
    last = result.last_token_attention  # the attention behind the next-token prediction
    assert last.shape == (2, 4, n)
    np.testing.assert_array_equal(last, result.attentions[:, :, n - 1, :])
    np.testing.assert_allclose(last.sum(axis=-1), 1, atol=1e-6)


# Tokenizers: the model's own, from tokenizer.json


@pytest.mark.parametrize("name", FOLDERS)
def test_the_tokenizer_gives_the_reference_ids_and_tokens(models, references, name):
    model, reference = models[name], references[name]
    for case in _cases(reference):
        text = reference[f"{case}/text"]
        if text.shape == ():
            result = bert.run(model, str(text))
            assert result.ids.tolist() == reference[f"{case}/ids"].tolist()
            assert result.tokens == reference[f"{case}/tokens"].tolist()
        else:  # a pair of segments
            encoding = model.tokenizer.encode(str(text[0]), str(text[1]))
            assert encoding.ids == reference[f"{case}/ids"].tolist()
            assert encoding.type_ids == reference[f"{case}/token_type_ids"].tolist()


@pytest.mark.parametrize(
    ("name", "specials"),
    [("bert", ["[CLS]", "[SEP]"]), ("roberta", ["<s>", "</s>"]), ("gpt2", [])],
)
def test_special_tokens_are_the_models_own(models, name, specials):
    model = models[name]
    assert model.special_tokens == specials
    result = bert.run(model, "The cat sat.")
    if specials:
        assert [result.tokens[0], result.tokens[-1]] == specials
        assert [result.labels[0], result.labels[-1]] == specials
    else:
        assert result.labels[0] == "The"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("bert", r"130 tokens, counting \[CLS\] and \[SEP\]; .* at most 128 \(126 plus"),
        ("roberta", r"counting <s> and </s>; .* at most 128 \(126 plus"),
        ("gpt2", r"This text is \d+ tokens; the model reads at most 128\. "),
    ],
)
def test_too_long_names_the_models_own_limit_and_special_tokens(models, name, message):
    model = models[name]
    word = "a"
    assert len(model.tokenizer.encode(word, add_special_tokens=False).ids) == 1
    specials = len(model.special_tokens)
    fits = " ".join([word] * (128 - specials))
    assert len(bert.run(model, fits).ids) == 128
    with pytest.raises(bert.TooLongError, match=message):
        bert.run(model, " ".join([word] * (128 - specials + 2)))


def test_roberta_numbers_positions_after_its_padding_token():
    """transformers' create_position_ids_from_input_ids: pads keep pad_id, the rest count."""
    ids = np.array([0, 5, 1, 7, 1, 9])
    assert bert.position_ids(ids, offset=2, pad_id=1).tolist() == [2, 3, 1, 4, 1, 5]
    assert bert.position_ids(ids, offset=0).tolist() == [0, 1, 2, 3, 4, 5]


# One layer function, one split, for every family


@pytest.mark.parametrize("name", ["electra", "gpt2", "distilbert"])
def test_layer_views_recompute_the_pass_to_the_bit(models, references, name):
    model = models[name]
    result = _ran(model, references[name], "long")
    for layer in range(model.config.n_layers):
        again = one_layer.layer_run(model, result, layer)
        np.testing.assert_array_equal(again.attention.weights, result.attentions[layer])
        stages = one_layer.layer_stages(model, result, layer)
        np.testing.assert_array_equal(stages.output, result.hidden_states[layer + 1])


@pytest.mark.parametrize("name", ["bert", "gpt2"])
def test_a_full_context_is_split_in_parts_with_the_same_bits_on_one_thread(models, name):
    model = models[name]
    ids = (np.arange(128) * 7 + 5) % model.config.n_vocab
    threaded = bert.run_ids(model, ids)
    alone = bert.run_ids(model, ids, parallel=False)
    for a, b in zip(threaded[3:8], alone[3:8], strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(threaded.attentions.sum(axis=-1), 1, atol=1e-5)


# Keys with or without the base model's prefix; buffers and heads ignored


def _copy(name, tmp_path):
    folder = tmp_path / name
    shutil.copytree(TINY / name, folder)
    return folder


def _rewrite_tensors(folder, change):
    path = folder / "model.safetensors"
    tensors = change(dict(load_file(str(path))))
    save_file(tensors, str(path))


@pytest.mark.parametrize(
    ("name", "prefix"),
    [("gpt2", "transformer."), ("bert_variant", "bert."), ("distilbert", None)],
)
def test_keys_are_read_with_or_without_the_prefix(models, tmp_path, name, prefix):
    folder = _copy(name, tmp_path)
    if prefix is None:  # DistilBERT's MLM layout: every key under "distilbert."
        _rewrite_tensors(folder, lambda t: {"distilbert." + k: v for k, v in t.items()})
    else:
        _rewrite_tensors(folder, lambda t: {k.removeprefix(prefix): v for k, v in t.items()})
    again = load(folder)
    for layer, block in enumerate(again.params["blocks"]):
        for group, params in block.items():
            for key, value in params.items():
                expected = models[name].params["blocks"][layer][group][key]
                np.testing.assert_array_equal(value, expected)
    np.testing.assert_array_equal(again.params["wte"], models[name].params["wte"])


def test_buffers_and_heads_are_ignored(models, tmp_path):
    folder = _copy("gpt2", tmp_path)
    n = 128
    mask = np.tril(np.ones((n, n), dtype=np.float32))[None, None]

    def add(tensors):
        tensors["transformer.h.0.attn.bias"] = mask  # the causal buffer older files keep
        tensors["transformer.h.0.attn.masked_bias"] = np.array(-1e4, dtype=np.float32)
        tensors["lm_head.weight"] = tensors["transformer.wte.weight"]
        return tensors

    _rewrite_tensors(folder, add)
    text = "The cat sat on the mat."
    again = bert.run(load(folder), text)
    np.testing.assert_array_equal(again.attentions, bert.run(models["gpt2"], text).attentions)


def _shard(folder, names=("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")):
    """Split model.safetensors in two, as transformers saves a large model."""
    tensors = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    keys = sorted(tensors)
    halves = {names[0]: keys[: len(keys) // 2], names[1]: keys[len(keys) // 2 :]}
    for name, part in halves.items():
        save_file({key: tensors[key] for key in part}, str(folder / name))
    weight_map = {key: name for name, part in halves.items() for key in part}
    index = {"metadata": {}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")


def test_a_sharded_checkpoint_is_read_from_its_index(models, tmp_path):
    folder = _copy("gpt2", tmp_path)
    _shard(folder)
    text = "The cat sat on the mat."
    again = bert.run(load(folder), text)
    np.testing.assert_array_equal(again.next_logits, bert.run(models["gpt2"], text).next_logits)


def test_an_index_naming_files_outside_its_folder_is_refused(tmp_path):
    folder = _copy("gpt2", tmp_path)
    _shard(folder, names=("../outside.safetensors", "model-2.safetensors"))
    with pytest.raises(UnsupportedModelError, match="lists no files of its folder"):
        load(folder)


# Refusals: each a typed error whose message names what is missing or unsupported


def test_a_folder_without_config_json_is_refused(tmp_path):
    folder = _copy("bert", tmp_path)
    (folder / "config.json").unlink()
    with pytest.raises(MissingFileError, match=r"no config\.json"):
        load(folder)


def test_a_path_that_is_no_folder_is_refused(tmp_path):
    with pytest.raises(MissingFileError, match="is not a folder"):
        load(tmp_path / "nowhere")


def _edit_config(folder, **changes):
    raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps({**raw, **changes}), encoding="utf-8")


def test_an_unknown_model_type_is_refused_naming_the_supported_ones(tmp_path):
    folder = _copy("bert", tmp_path)
    _edit_config(folder, model_type="mamba")
    with pytest.raises(UnsupportedModelError, match="not 'mamba'") as caught:
        load(folder)
    for family in FAMILIES:
        assert family in str(caught.value)


def test_code_in_the_folder_is_never_run(tmp_path):
    """A remote-code model (auto_map) is refused by its model_type; its module is never
    imported."""
    folder = _copy("bert", tmp_path)
    marker = tmp_path / "imported"
    (folder / "modeling_custom.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8"
    )
    _edit_config(folder, model_type="custom", auto_map={"AutoModel": "modeling_custom.CustomModel"})
    with pytest.raises(UnsupportedModelError, match="not 'custom'"):
        load(folder)
    assert not marker.exists()


class _Payload:
    """Unpickling this creates a file: what a malicious pytorch_model.bin could do."""

    def __init__(self, marker):
        self.marker = Path(marker)

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_pickle_is_refused_and_never_opened(tmp_path):
    folder = _copy("bert", tmp_path)
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "unpickled"
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(_Payload(marker)))
    proof = tmp_path / "proof"
    pickle.loads(pickle.dumps(_Payload(proof)))  # the payload does act when unpickled
    assert proof.exists()
    with pytest.raises(PickleCheckpointError, match=r"pytorch_model\.bin") as caught:
        load(folder)
    assert "only safetensors are read" in str(caught.value).lower()
    assert "save_pretrained" in str(caught.value)
    assert not marker.exists()


def test_a_folder_without_weights_is_refused(tmp_path):
    folder = _copy("bert", tmp_path)
    (folder / "model.safetensors").unlink()
    with pytest.raises(MissingFileError, match=r"no model\.safetensors"):
        load(folder)


def test_a_folder_without_tokenizer_json_is_refused(tmp_path):
    folder = _copy("gpt2", tmp_path)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(MissingFileError, match=r"no tokenizer\.json"):
        load(folder)


def test_a_tensor_of_the_wrong_shape_is_refused_by_name(tmp_path):
    folder = _copy("bert", tmp_path)
    key = "encoder.layer.1.attention.self.key.weight"
    _rewrite_tensors(folder, lambda t: {**t, key: np.zeros((32, 31), dtype=np.float32)})
    with pytest.raises(
        ShapeMismatchError, match=rf"{key} \(blocks.attn.w_k\).*\(32, 32\).*\(32, 31\)"
    ):
        load(folder)


def test_a_config_that_disagrees_with_the_tensors_is_refused(tmp_path):
    folder = _copy("gpt2", tmp_path)
    _edit_config(folder, n_embd=48, n_head=4)
    with pytest.raises(
        ShapeMismatchError, match=r"transformer.wte.weight \(wte\).*\(600, 48\).*\(600, 32\)"
    ):
        load(folder)


def test_a_fused_tensor_of_the_wrong_shape_is_refused(tmp_path):
    folder = _copy("gpt2", tmp_path)
    key = "transformer.h.0.attn.c_attn.weight"
    _rewrite_tensors(folder, lambda t: {**t, key: np.zeros((32, 64), dtype=np.float32)})
    with pytest.raises(ShapeMismatchError, match=rf"{key} .*\(32, 96\).*\(32, 64\)"):
        load(folder)


def test_a_missing_tensor_is_refused_by_name(tmp_path):
    folder = _copy("distilbert", tmp_path)
    key = "transformer.layer.1.ffn.lin2.bias"
    _rewrite_tensors(folder, lambda t: {k: v for k, v in t.items() if k != key})
    with pytest.raises(MissingTensorError, match=key):
        load(folder)


@pytest.mark.parametrize(
    ("name", "changes", "message"),
    [
        ("gpt2", {"scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx"),
        ("gpt2", {"tie_word_embeddings": False}, "tie_word_embeddings"),
        ("gpt2", {"activation_function": "swish"}, "no activation 'swish'"),
        ("bert", {"is_decoder": True}, "is_decoder"),
        ("roberta", {"position_embedding_type": "relative_key"}, "position_embedding_type"),
    ],
)
def test_settings_this_engine_does_not_compute_are_refused(tmp_path, name, changes, message):
    folder = _copy(name, tmp_path)
    _edit_config(folder, **changes)
    with pytest.raises(UnsupportedModelError, match=message):
        load(folder)


def test_every_refusal_is_a_checkpoint_error_and_a_value_error():
    for error in (
        MissingFileError,
        PickleCheckpointError,
        UnsupportedModelError,
        MissingTensorError,
        ShapeMismatchError,
    ):
        assert issubclass(error, checkpoint.CheckpointError)
        assert issubclass(error, ValueError)
