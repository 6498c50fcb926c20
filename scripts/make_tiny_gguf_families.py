"""Write tests/data/tiny_gguf_families/: the 2026 families' tiny folders as GGUF files.

The four tiny folders of issue #53 in ``tests/data/tiny_models`` (``llama3``, ``qwen3``,
``gemma3``, ``phi3``: ``scripts/make_tiny_families.py``) written as llama.cpp's
``convert_hf_to_gguf.py`` writes each (its ``LlamaModel``, ``Qwen3Model``, ``Gemma3Model``
and ``Phi3MiniModel``), in BF16 (the folders' own bf16 weights, exactly) and Q8_0, and the
float32 ``gemma3_fp32`` in F32, with the ``gguf`` package's writer, beside an ``.npz`` of
what transformers computes on each. The config is read as the converter reads it
(``AutoConfig.from_pretrained(folder).to_dict()``).

What the converter writes, and so what a file holds (tests/data/tiny_gguf_families/README.md):

- ``llama`` (Llama 3.x): no ``rope.scaling.*`` key for ``llama3`` scaling; instead a tensor
  ``rope_freqs.weight`` (F32, d_head / 2 values, first in the file) of the factor each
  rotary pair's frequency is divided by, computed by ``LlamaModel.generate_extra_tensors``
  with ``original_max_position_embeddings`` looked up at the top level of the config
  (8192 when absent, as it is in Llama 3.x's configs, which keep it inside
  ``rope_scaling``). Q and K rows permuted; ``attention.key_length``/``value_length``
  where the config gives ``head_dim``.
- ``qwen3``: ``attn_q_norm``/``attn_k_norm``, ``attention.key_length`` = head_dim, no
  permutation, no ``rope.dimension_count``.
- ``gemma3``: every ``*norm.weight`` stored as 1 + w; ``attention.key_length``,
  ``attention.sliding_window``, ``rope.freq_base`` (the global layers') and
  ``rope.freq_base_swa`` (the local ones'); no key for ``query_pre_attn_scalar`` nor for
  the layer pattern (llama.cpp assumes 1/√key_length and every sixth layer global).
- ``phi3``: ``attn_qkv`` (q, k, v fused) and ``ffn_up`` holding gate and up fused, no
  ``ffn_gate``; ``rope.scaling.original_context_length``; ``attention.sliding_window``.

The reference: transformers reading each file (``from_pretrained(folder, gguf_file=...)``,
float32, eager) with the config of what the file means to llama.cpp, since transformers'
GGUF integration reads none of Llama 3's scaling, Qwen3's head_dim, Gemma 3's local base,
scale and layer pattern; what transformers makes of each file alone is recorded too
(``alone/*``). Run once, offline, in the development environment:

    HF_HUB_OFFLINE=1 /tmp/torchenv/bin/python scripts/make_tiny_gguf_families.py
"""

import os

os.environ["HF_HUB_OFFLINE"] = "1"

import json
import math
import shutil
import sys
import tempfile
from pathlib import Path

import gguf
import numpy as np
import tokenizers
import torch
import transformers
from gguf import GGMLQuantizationType as T
from gguf import LlamaFileType
from tokenizers import Tokenizer
from transformers import AutoConfig, AutoModelForCausalLM

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ROOT / "tests" / "data" / "tiny_models"
OUT = ROOT / "tests" / "data" / "tiny_gguf_families"
N_GREEDY = 10
#: The folder, its GGUF architecture (the converter's class follows from it).
FAMILIES = {
    "llama3": gguf.MODEL_ARCH.LLAMA,
    "qwen3": gguf.MODEL_ARCH.QWEN3,
    "gemma3": gguf.MODEL_ARCH.GEMMA3,
    "gemma3_fp32": gguf.MODEL_ARCH.GEMMA3,
    "phi3": gguf.MODEL_ARCH.PHI3,
}
FILE_TYPES = {
    "BF16": (LlamaFileType.MOSTLY_BF16, T.BF16),
    "Q8_0": (LlamaFileType.MOSTLY_Q8_0, T.Q8_0),
    "F32": (LlamaFileType.ALL_F32, T.F32),
}
#: The files: each bf16 folder in BF16 (its weights exactly) and Q8_0; the float32 Gemma 3
#: (three layers, linear scaling on its global layers, soft-capped logits) in F32.
BF16_FOLDERS = ("llama3", "qwen3", "gemma3", "phi3")
FILES = [
    *((family, kind) for family in BF16_FOLDERS for kind in ("BF16", "Q8_0")),
    ("gemma3_fp32", "F32"),
]
LLAMA3_ORIGINAL_DEFAULT = 8192  # LlamaModel.generate_extra_tensors' fallback


def kind_of(family):
    """The converter's class for a folder: gemma3_fp32 is a Gemma 3 as gemma3 is."""
    return "gemma3" if family.startswith("gemma3") else family


def llama_permute(weights, n_head):
    """LlamaModel.permute: each head's rows from rotate-half order to adjacent pairs."""
    rows = weights.shape[0]
    return (
        weights.reshape(n_head, 2, rows // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def llama3_factors(config):
    """rope_freqs.weight as LlamaModel.generate_extra_tensors computes it."""
    rope = config["rope_parameters"]  # transformers 5's; the converter's rope_parameters
    base = rope["rope_theta"]
    dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
    old = config.get("original_max_position_embeddings", LLAMA3_ORIGINAL_DEFAULT)
    low_wavelen, high_wavelen = old / low, old / high
    factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            factors.append(1)
        elif wavelen > low_wavelen:
            factors.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float32)


def gguf_tensors(family, config, state):
    """(gguf name, float32 array) in the converter's order: extra tensors, then the file's."""
    arch = FAMILIES[family]
    name_map = gguf.get_tensor_name_map(arch, config["num_hidden_layers"])
    family = kind_of(family)
    if family == "llama3":
        yield gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.ROPE_FREQS] + ".weight", llama3_factors(config)
    for key in state:  # safetensors' order, as the converter reads the file
        data = state[key].float().numpy()
        if family == "llama3" and key.endswith("q_proj.weight"):
            data = llama_permute(data, config["num_attention_heads"])
        elif family == "llama3" and key.endswith("k_proj.weight"):
            data = llama_permute(data, config["num_key_value_heads"])
        if family == "gemma3" and key.endswith("norm.weight"):
            data = data + np.float32(1.0)  # Gemma3Model.norm_shift: the gain 1 + w stored
        name = name_map.get_name(key, try_suffixes=(".weight", ".bias"))
        if name is None:
            raise SystemExit(f"{family}: no GGUF name for {key}")
        yield name, data


def add_metadata(writer, family, config, file_type):
    """The keys the converter's set_gguf_parameters writes for this family."""
    c = config
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_name(f"Tiny {family} {file_type.name}")
    family = kind_of(family)
    writer.add_block_count(c["num_hidden_layers"])
    writer.add_context_length(c["max_position_embeddings"])
    writer.add_embedding_length(c["hidden_size"])
    writer.add_feed_forward_length(c["intermediate_size"])
    writer.add_head_count(c["num_attention_heads"])
    writer.add_head_count_kv(c["num_key_value_heads"])
    rope = c["rope_parameters"]
    full = rope.get("full_attention", rope)
    if family != "phi3" and full.get("rope_type") == "linear":  # TextModel: the global layers'
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(full["factor"])
    writer.add_rope_freq_base(full["rope_theta"])
    if "sliding_attention" in rope:
        writer.add_rope_freq_base_swa(rope["sliding_attention"]["rope_theta"])
    writer.add_layer_norm_rms_eps(c["rms_norm_eps"])
    if family != "phi3" and c.get("head_dim") is not None:
        writer.add_key_length(c["head_dim"])
        writer.add_value_length(c["head_dim"])
    writer.add_file_type(file_type)
    if family == "llama3":  # LlamaModel.set_gguf_parameters
        writer.add_vocab_size(c["vocab_size"])
        writer.add_rope_dimension_count(c["head_dim"])
    if family == "gemma3":  # Gemma3Model.set_gguf_parameters
        if c.get("final_logit_softcapping"):
            writer.add_final_logit_softcapping(c["final_logit_softcapping"])
        if c.get("sliding_window_pattern") != 1:
            writer.add_sliding_window(c["sliding_window"])
    if family == "phi3":  # Phi3MiniModel.set_gguf_parameters
        writer.add_rope_scaling_orig_ctx_len(c["original_max_position_embeddings"])
        writer.add_rope_dimension_count(c["hidden_size"] // c["num_attention_heads"])
        writer.add_sliding_window(c["sliding_window"] or 0)


def add_tokenizer(writer, folder):
    """_set_vocab_gpt2: the byte-level BPE, its specials CONTROL, merges and special ids."""
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    vocab = tokenizer.get_vocab()
    tokens = sorted(vocab, key=vocab.get)
    specials = {t.content for t in tokenizer.get_added_tokens_decoder().values() if t.special}
    types = [gguf.TokenType.CONTROL if t in specials else gguf.TokenType.NORMAL for t in tokens]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")  # the folders' ByteLevel split is GPT-2's regex
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    gguf.SpecialVocab(folder, load_merges=True, n_vocab=len(tokens)).add_to_gguf(writer, quiet=True)


def write_gguf(path, family, folder, file_type, qtype):
    # ModelBase.load_hparams: the config as transformers reads it, as a dict
    config = AutoConfig.from_pretrained(folder).to_dict()
    model = AutoModelForCausalLM.from_pretrained(folder, dtype="auto")  # as stored
    state = dict(model.state_dict())
    if config.get("tie_word_embeddings"):
        state.pop("lm_head.weight", None)
    writer = gguf.GGUFWriter(path, gguf.MODEL_ARCH_NAMES[FAMILIES[family]])
    add_metadata(writer, family, config, file_type)
    add_tokenizer(writer, folder)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for name, data in gguf_tensors(family, config, state):
        if data.ndim == 1 or qtype == T.F32:
            writer.add_tensor(name, data.astype(np.float32))
        else:
            writer.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def gguf_meaning(family, folder):
    """The folder's config changed to what the GGUF file means to llama.cpp."""
    config = AutoConfig.from_pretrained(folder)
    family = kind_of(family)
    if family == "llama3":  # the converter's factors use the top-level key, absent: 8192
        rope = dict(config.rope_parameters)
        rope["original_max_position_embeddings"] = LLAMA3_ORIGINAL_DEFAULT
        config.rope_parameters = rope
    if family == "gemma3":  # llama.cpp: scores × 1/√key_length, every sixth layer global
        config.query_pre_attn_scalar = config.head_dim
        n = config.num_hidden_layers
        config.layer_types = [
            "full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(n)
        ]
    return config


def run(model, ids):
    with torch.inference_mode():
        return model(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)


def greedy(model, ids):
    tokens = list(ids)
    for _ in range(N_GREEDY):
        with torch.inference_mode():
            logits = model(torch.tensor([tokens])).logits[0, -1]
        tokens.append(int(torch.argmax(logits)))
    return np.array(tokens[len(ids) :], dtype=np.int64)


def reference(path, family, folder):
    """What transformers computes on the file as llama.cpp reads it, and on the file alone."""
    folder_ref = np.load(FOLDERS / f"{family}.npz")
    texts = {case: str(folder_ref[f"{case}/text"]) for case in ("short", "long")}
    config = gguf_meaning(family, folder)
    model, info = AutoModelForCausalLM.from_pretrained(
        path.parent,
        gguf_file=path.name,
        config=config,
        dtype=torch.float32,
        attn_implementation="eager",
        output_loading_info=True,
    )
    model.eval()
    lost = {k: v for k, v in info.items() if k != "error_msgs" and v}
    print(f"{path.name}: transformers with the file's config: loading info {lost}")
    if info["missing_keys"] or info["mismatched_keys"]:
        raise SystemExit(f"{path.name}: transformers did not read every weight: {info}")
    rust = Tokenizer.from_file(str(folder / "tokenizer.json"))
    arrays = {}
    for case, text in texts.items():
        ids = rust.encode(text).ids
        if ids != folder_ref[f"{case}/ids"].tolist():
            raise SystemExit(f"{family}: the folder's tokenizer changed")
        out = run(model, ids)
        arrays[f"{case}/text"] = np.array(text)
        arrays[f"{case}/ids"] = np.array(ids, dtype=np.int64)
        arrays[f"{case}/tokens"] = np.array(rust.encode(text).tokens)
        arrays[f"{case}/attentions"] = torch.stack(out.attentions)[:, 0].numpy()
        arrays[f"{case}/hidden_states"] = torch.stack(out.hidden_states)[:, 0].numpy()
        arrays[f"{case}/logits"] = out.logits[0].numpy()
    arrays["short/greedy"] = greedy(model, arrays["short/ids"].tolist())
    meant = json.loads(config.to_json_string(use_diff=False))
    meant.pop("_name_or_path", None)
    arrays["config_json"] = np.array(json.dumps(meant, indent=2, sort_keys=True))
    # against the folder's own reference: the same model where the file means the same
    for case in texts:
        diff = np.abs(arrays[f"{case}/attentions"] - folder_ref[f"{case}/attentions"]).max()
        print(f"  {case}: attention vs the folder's reference {diff:.2e}")
    # transformers alone: its own reading of the metadata
    try:
        alone = AutoModelForCausalLM.from_pretrained(
            path.parent, gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
        ).eval()
        diff = 0.0
        for case in texts:
            out = run(alone, arrays[f"{case}/ids"].tolist())
            theirs = torch.stack(out.attentions)[:, 0].numpy()
            diff = max(diff, float(np.abs(theirs - arrays[f"{case}/attentions"]).max()))
        said = json.loads(alone.config.to_json_string(use_diff=False))
        said.pop("_name_or_path", None)
        arrays["alone/config_json"] = np.array(json.dumps(said, indent=2, sort_keys=True))
        arrays["alone/attention_diff"] = np.array(diff)
        print(f"  transformers alone: attention differs by {diff:.2e}")
    except Exception as error:  # what transformers says is the record
        arrays["alone/error"] = np.array(f"{type(error).__name__}: {error}"[:2000])
        print(f"  transformers alone: {type(error).__name__}: {str(error)[:300]}")
    arrays["versions"] = np.array(
        json.dumps(
            {
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "gguf": gguf.__version__ if hasattr(gguf, "__version__") else "",
                "tokenizers": tokenizers.__version__,
            }
        )
    )
    return arrays


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for family, kind in FILES:
        folder = FOLDERS / family
        file_type, qtype = FILE_TYPES[kind]
        path = OUT / f"{family}-{kind}.gguf"
        write_gguf(path, family, folder, file_type, qtype)
        with tempfile.TemporaryDirectory() as scratch:
            copy = Path(scratch) / path.name
            shutil.copy(path, copy)
            arrays = reference(copy, family, folder)
        np.savez_compressed(path.with_suffix(".npz"), **arrays)
        print(f"wrote {path.name} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
