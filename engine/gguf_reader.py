"""The GGUF reader: a llama.cpp model file read into our config and arrays.

GGUF (llama.cpp's ``docs/gguf.md``) is one file: a header, metadata keys (the
architecture's sizes under ``ARCH.*``, the tokenizer under ``tokenizer.ggml.*``), then
the tensors, each in its own type, mostly quantized in blocks (``Q4_1``: 32 weights as
4-bit integers with a scale and a minimum). Ollama, LM Studio and llama.cpp keep their
models so. The file is read with ``gguf``, llama.cpp's own Python package: its reader for
the header and metadata, its ``gguf.quants.dequantize`` for the blocks; nothing here
decodes a quantized block itself.

What the keys mean follows llama.cpp's ``convert_hf_to_gguf.py``, which writes them from
a Hugging Face checkpoint, read backwards as transformers' GGUF integration does
(``integrations/ggml.py``, ``modeling_gguf_pytorch_utils.py``): each architecture's
metadata becomes the config.json keys the family tables read (:data:`_CONFIG_KEYS`), each
tensor the key transformers names it by (:func:`_hf_name`), so the one
:func:`engine.checkpoint.read_params` checks every shape and builds our parameters, and
the family is a row of data, as for a folder.

Two things the converter changes are undone. It permutes the rows of a Llama's W_Q and
W_K, head by head, from the two halves that Hugging Face's rotary code pairs (i with
i + d_head/2) to the adjacent pairs llama.cpp rotates (2i with 2i + 1)
(:func:`_unpermute`); and it transposes GPT-2's ``Conv1D`` weights.

Precision: F32 stays float32, F16 and BF16 stay as they are (the pass upcasts a layer at
a time, exactly), and a quantized tensor is dequantized once, at load, to float32: the
values the blocks encode, exactly (a block's scale times a small integer plus its
minimum, computed in float32 as llama.cpp's reference code does), but four bytes a
weight rather than the file's half-byte. docs/benchmarks.md gives what a packaged model
then holds.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import ml_dtypes
import numpy as np
from gguf.quants import dequantize

from engine.checkpoint import (
    FAMILIES,
    MissingFileError,
    Model,
    UnsupportedModelError,
    parse_config,
    read_params,
)
from engine.tokenize import GGUFTokenizerError, gguf_metadata, gguf_tokenizer

__all__ = ["ARCHITECTURES", "read", "read_config"]

_MAGIC = b"GGUF"

#: config.json key -> the GGUF key that holds it, ``{arch}`` standing for the architecture.
_LLAMA_KEYS = {
    "max_position_embeddings": "{arch}.context_length",
    "hidden_size": "{arch}.embedding_length",
    "intermediate_size": "{arch}.feed_forward_length",
    "num_hidden_layers": "{arch}.block_count",
    "num_attention_heads": "{arch}.attention.head_count",
    "num_key_value_heads": "{arch}.attention.head_count_kv",
    "rms_norm_eps": "{arch}.attention.layer_norm_rms_epsilon",
    "rope_theta": "{arch}.rope.freq_base",
    "sliding_window": "{arch}.attention.sliding_window",
}
_GPT2_KEYS = {
    "n_positions": "{arch}.context_length",
    "n_embd": "{arch}.embedding_length",
    "n_inner": "{arch}.feed_forward_length",
    "n_layer": "{arch}.block_count",
    "n_head": "{arch}.attention.head_count",
    "layer_norm_epsilon": "{arch}.attention.layer_norm_epsilon",
}
#: GGUF's ``general.architecture`` -> the config.json keys its metadata gives.
_CONFIG_KEYS = {"llama": _LLAMA_KEYS, "qwen2": _LLAMA_KEYS, "gpt2": _GPT2_KEYS}
#: The architectures this engine reads from a GGUF file: those of :data:`FAMILIES` that
#: llama.cpp stores (Mistral and SmolLM2 are ``llama`` in GGUF).
ARCHITECTURES = tuple(_CONFIG_KEYS)

#: GGUF's per-layer tensor names -> transformers' (``{i}`` the layer), by architecture.
_LLAMA_LAYER = {
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    **{f"attn_{x}.weight": f"self_attn.{x}_proj.weight" for x in "qkv"},
    **{f"attn_{x}.bias": f"self_attn.{x}_proj.bias" for x in "qkv"},
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
_GPT2_LAYER = {
    "attn_norm.weight": "ln_1.weight",
    "attn_norm.bias": "ln_1.bias",
    "attn_qkv.weight": "attn.c_attn.weight",
    "attn_qkv.bias": "attn.c_attn.bias",
    "attn_output.weight": "attn.c_proj.weight",
    "attn_output.bias": "attn.c_proj.bias",
    "ffn_norm.weight": "ln_2.weight",
    "ffn_norm.bias": "ln_2.bias",
    "ffn_up.weight": "mlp.c_fc.weight",
    "ffn_up.bias": "mlp.c_fc.bias",
    "ffn_down.weight": "mlp.c_proj.weight",
    "ffn_down.bias": "mlp.c_proj.bias",
}
_LLAMA_TENSORS = {
    "token_embd.weight": "embed_tokens.weight",
    "output_norm.weight": "norm.weight",
    "output.weight": "lm_head.weight",
}
_GPT2_TENSORS = {
    "token_embd.weight": "wte.weight",
    "position_embd.weight": "wpe.weight",
    "output_norm.weight": "ln_f.weight",
    "output_norm.bias": "ln_f.bias",
}
_NAMES = {
    "llama": (_LLAMA_TENSORS, _LLAMA_LAYER, "layers.{i}."),
    "qwen2": (_LLAMA_TENSORS, _LLAMA_LAYER, "layers.{i}."),
    "gpt2": (_GPT2_TENSORS, _GPT2_LAYER, "h.{i}."),
}
#: GPT-2's Conv1D weights, which the converter transposes to (d_out, d_in).
_CONV1D = ("attn_qkv.weight", "attn_output.weight", "ffn_up.weight", "ffn_down.weight")
#: Tensors the reader skips: llama.cpp's precomputed rotary factors (``rope_freqs``, for
#: scalings this engine refuses by their metadata anyway) and GPT-2's copy of the
#: embeddings as ``output`` (tied, as the family says).
_SKIPPED = {"llama": ("rope_freqs.weight",), "qwen2": (), "gpt2": ("output.weight",)}

_PLAIN = {
    gguf.GGMLQuantizationType.F32: np.dtype(np.float32),
    gguf.GGMLQuantizationType.F16: np.dtype(np.float16),
}
_BF16 = gguf.GGMLQuantizationType.BF16
#: Every block type ``gguf.quants.dequantize`` decodes: Q4_0 … Q8_0, the K-quants, the IQ types.
_QUANTIZED = frozenset(gguf.quants._type_traits) - {_BF16}


def _open(path):
    """The file's ``gguf.GGUFReader``; a file that is not a whole GGUF file refused."""
    if not path.is_file():
        raise MissingFileError(f"{path} is not a file")
    with path.open("rb") as file:
        magic = file.read(4)
    if magic != _MAGIC:
        raise UnsupportedModelError(
            f"{path.name} is not a GGUF file (it starts with {magic!r}, not b'GGUF'); "
            "a model folder in Hugging Face's layout is read as a folder, not a file"
        )
    try:
        return gguf.GGUFReader(path)
    except Exception as error:  # a truncated file, a type llama.cpp's reader does not know
        raise UnsupportedModelError(
            f"{path.name} could not be read as GGUF ({type(error).__name__}: {error}); "
            "a file cut short by an interrupted download reads so"
        ) from error


def _raw_config(metadata, arch, shapes):
    """config.json's keys and values for a file of architecture ``arch``.

    ``shapes``: every stored tensor's shape by its GGUF name, as (rows, features).
    """
    keys = _CONFIG_KEYS[arch]
    raw = {
        key: metadata[source.format(arch=arch)]
        for key, source in keys.items()
        if source.format(arch=arch) in metadata
    }
    for key, value in raw.items():
        if isinstance(value, list):  # per-layer head counts (OpenELM): not one shape
            raise UnsupportedModelError(f"this engine reads one {key} for every layer, not {value}")
    raw["vocab_size"] = int(metadata.get(f"{arch}.vocab_size", shapes["token_embd.weight"][0]))
    if arch == "gpt2":
        return {"model_type": "gpt2", **raw}
    scaling = metadata.get(f"{arch}.rope.scaling.type", "none")
    if scaling not in ("none", "linear"):
        raise UnsupportedModelError(
            f"this engine implements rope_scaling of type 'default' or 'linear', the file has "
            f"{arch}.rope.scaling.type {scaling!r}"
        )
    if scaling == "linear":
        raw["rope_scaling"] = {
            "type": "linear",
            "factor": float(metadata[f"{arch}.rope.scaling.factor"]),
        }
    d_head = raw["hidden_size"] // raw["num_attention_heads"]
    for key in ("rope.dimension_count", "attention.key_length", "attention.value_length"):
        value = metadata.get(f"{arch}.{key}", d_head)
        if value != d_head:
            raise UnsupportedModelError(
                f"this engine rotates and attends over all d_head = {d_head} features of a "
                f"head, the file has {arch}.{key} = {value}"
            )
    raw["tie_word_embeddings"] = "output.weight" not in shapes
    model_type = arch
    if arch == "llama" and raw.get("sliding_window"):
        model_type = "mistral"  # Mistral's window: the one setting its family adds
    else:
        raw.pop("sliding_window", None)
    return {"model_type": model_type, **raw}


def _hf_name(arch, name):
    """Transformers' key for GGUF's tensor ``name``, or None for a tensor this engine skips."""
    shared, layer, template = _NAMES[arch]
    if name in shared:
        return shared[name]
    block, dot, rest = name.partition(".")  # blk.12.attn_q.weight -> blk, 12.attn_q.weight
    index, _, leaf = rest.partition(".")
    if block == "blk" and dot and index.isdigit() and leaf in layer:
        return template.format(i=int(index)) + layer[leaf]
    return None


def _unpermute(rows, n_heads):  # [n_heads · d_head, d_in] -> the same, Hugging Face's order
    """Undo ``convert_hf_to_gguf.py``'s ``LlamaModel.permute`` of W_Q's or W_K's rows.

    Per head, the converter takes Hugging Face's rows (first half, second half) and
    interleaves them (row 2i from the first half's i, row 2i + 1 from the second's), so
    that llama.cpp rotates adjacent pairs; this puts them back.
    """
    d_head = rows.shape[0] // n_heads
    split = rows.reshape(n_heads, d_head // 2, 2, *rows.shape[1:])  # pair index, member
    return split.swapaxes(1, 2).reshape(rows.shape)


def _array(tensor, path):
    """A stored tensor as an array of (rows, features), at its precision or dequantized."""
    kind = tensor.tensor_type
    if kind in _PLAIN:
        return np.asarray(tensor.data, dtype=_PLAIN[kind])
    if kind == _BF16:  # bf16 kept as it is: the pass upcasts a layer at a time, exactly
        shape = tuple(int(n) for n in reversed(tensor.shape))
        return np.asarray(tensor.data).view(ml_dtypes.bfloat16).reshape(shape)
    if kind in _QUANTIZED:
        return dequantize(tensor.data, kind)
    read = ", ".join(sorted(t.name for t in (*_PLAIN, _BF16, *_QUANTIZED)))
    raise UnsupportedModelError(
        f"{path.name}'s tensor {tensor.name} is of type {kind.name}, which this engine does "
        f"not read (it reads {read})"
    )


def _config(reader, metadata, path):
    """The file's :class:`ModelConfig` and architecture; one this engine does not read refused."""
    arch = metadata.get("general.architecture")
    if arch not in _CONFIG_KEYS:
        raise UnsupportedModelError(
            f"{path.name} is a GGUF file of architecture {arch!r}; this engine reads "
            f"{', '.join(ARCHITECTURES)} (Llama, SmolLM2, TinyLlama and Mistral are llama)"
        )
    shapes = {t.name: tuple(int(n) for n in reversed(t.shape.tolist())) for t in reader.tensors}
    if "token_embd.weight" not in shapes:
        raise UnsupportedModelError(f"{path.name} has no tensor token_embd.weight")
    return parse_config(_raw_config(metadata, arch, shapes))[0], arch


def read_config(path):
    """The :class:`engine.checkpoint.ModelConfig` of a GGUF file, its tensors left unread.

    Raises
    ------
    as :func:`read`, for the file and its metadata
    """
    path = Path(path)
    reader = _open(path)
    return _config(reader, gguf_metadata(reader), path)[0]


def read(path, progress=None):
    """The model in a GGUF file: :func:`engine.checkpoint.load` for a ``.gguf``.

    Parameters
    ----------
    path : str or Path
    progress : callable, optional; called with the share of the tensors read, after each

    Returns
    -------
    engine.checkpoint.Model; its ``folder`` is the file's path

    Raises
    ------
    MissingFileError for no file; UnsupportedModelError for a file that is not GGUF or is
    cut short, an architecture or tensor type this engine does not read (named), or no
    tokenizer; MissingTensorError or ShapeMismatchError as for a folder
    """
    path = Path(path)
    reader = _open(path)
    metadata = gguf_metadata(reader)
    config, arch = _config(reader, metadata, path)
    stored = {tensor.name: tensor for tensor in reader.tensors}
    try:
        tokenizer = gguf_tokenizer(metadata)
    except GGUFTokenizerError as error:
        raise UnsupportedModelError(f"{path.name}: {error}") from error
    tensors = {}
    for done, (name, tensor) in enumerate(stored.items(), start=1):
        key = _hf_name(arch, name)
        if key is None:
            if name not in _SKIPPED[arch]:
                raise UnsupportedModelError(
                    f"{path.name} holds a tensor {name}, which the {arch} architecture as "
                    "this engine reads it has no place for"
                )
            continue
        array = _array(tensor, path)
        leaf = name.partition(".")[2].partition(".")[2]
        if arch == "llama" and leaf in ("attn_q.weight", "attn_k.weight"):
            heads = config.n_heads if leaf == "attn_q.weight" else config.kv_heads
            array = _unpermute(array, heads)
        if arch == "gpt2" and leaf in _CONV1D:
            array = np.ascontiguousarray(array.T)  # back to Conv1D's (d_in, d_out)
        elif key.endswith("_proj.weight"):
            # The family reads nn.Linear's (d_out, d_in) and applies its transpose: laid out
            # so now, that transpose is a view, and the file's copy is freed tensor by
            # tensor rather than held beside every transposed one until the end.
            array = np.ascontiguousarray(array.T).T
        tensors[key] = array
        if progress is not None:
            progress(done / len(stored))
    params = read_params(tensors, config, FAMILIES[config.model_type])
    config = config._replace(precision=params["wte"].dtype.name)
    return Model(config, params, tokenizer, path)
