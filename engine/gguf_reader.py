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

What the converter changes is undone. It permutes the rows of a Llama's W_Q and W_K,
head by head, from the two halves that Hugging Face's rotary code pairs (i with
i + d_head/2) to the adjacent pairs llama.cpp rotates (2i with 2i + 1)
(:func:`_unpermute`); it transposes GPT-2's ``Conv1D`` weights; it stores Gemma 3's norm
weights as 1 + w (:func:`_gemma_gain`); and it writes Llama 3.x's ``llama3`` rope scaling
as no key but a tensor of per-pair factors, ``rope_freqs`` (:func:`_llama3_scaling`).

Where a file says nothing, it means what llama.cpp (``llama-model.cpp``) makes of it,
transformers' GGUF integration being silent or wrong there: Gemma 3's kind of each layer
and its scores' scale (:func:`_gemma3`), Qwen3's and Gemma 3's ``head_dim`` from
``attention.key_length``. One exception, Phi-3's sliding window: llama.cpp turns it off,
the model (and this engine, as for a folder) keeps it.

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

from engine.checkpoint import MissingFileError, Model, UnsupportedModelError, read_params
from engine.configs import parse_config
from engine.families import FAMILIES, GLOBAL, LOCAL
from engine.positional import rotary_frequencies
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
    "head_dim": "{arch}.attention.key_length",
}
#: Gemma 3 adds its local layers' rotary base and the logits' soft-capping.
_GEMMA3_KEYS = {
    **_LLAMA_KEYS,
    "rope_local_base_freq": "{arch}.rope.freq_base_swa",
    "final_logit_softcapping": "{arch}.final_logit_softcapping",
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
_CONFIG_KEYS = {
    "llama": _LLAMA_KEYS,
    "qwen2": _LLAMA_KEYS,
    "qwen3": _LLAMA_KEYS,
    "gemma3": _GEMMA3_KEYS,
    "phi3": _LLAMA_KEYS,
    "gpt2": _GPT2_KEYS,
}
#: The architectures this engine reads from a GGUF file: those of
#: :data:`engine.families.FAMILIES` that llama.cpp stores (Mistral, SmolLM2 and Llama 3.x
#: are ``llama`` in GGUF).
ARCHITECTURES = tuple(_CONFIG_KEYS)
#: The architectures whose ``attention.sliding_window`` this engine applies (a Llama with one
#: is Mistral); Qwen2's and Qwen3's are off unless ``use_sliding_window``, which GGUF lacks.
_WINDOWED = ("llama", "gemma3", "phi3")
#: GGUF's architecture -> config.json's ``model_type`` (Gemma 3's text model in GGUF:
#: llama.cpp keeps the vision tower in a separate ``mmproj`` file).
_MODEL_TYPES = {"gemma3": "gemma3_text"}
#: What llama.cpp assumes where a file is silent (``llama-model.cpp``'s ``load_hparams``):
#: Llama 3.x's ``original_max_position_embeddings`` (the converter's fallback when it
#: computes ``rope_freqs``), Gemma 3's local rotary base and its layer pattern (every
#: sixth layer global), and its band boundaries ``low_freq_factor``/``high_freq_factor``.
LLAMA3_ORIGINAL = 8192
LLAMA3_BANDS = (1.0, 4.0)
GEMMA3_LOCAL_BASE = 10000.0
GEMMA3_PATTERN = 6
#: Gemma 3 27B (62 layers) scales its scores by (d_model / n_heads)^-1/2 rather than
#: key_length^-1/2, as llama.cpp's ``load_hparams`` and Google's gemma_pytorch config say.
GEMMA3_27B_LAYERS = 62

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
_QWEN3_LAYER = {
    **_LLAMA_LAYER,
    "attn_q_norm.weight": "self_attn.q_norm.weight",
    "attn_k_norm.weight": "self_attn.k_norm.weight",
}
#: Gemma 3's four norms a layer: llama.cpp's ``ffn_norm`` is the pre-feed-forward one.
_GEMMA3_LAYER = {
    **_QWEN3_LAYER,
    "post_attention_norm.weight": "post_attention_layernorm.weight",
    "ffn_norm.weight": "pre_feedforward_layernorm.weight",
    "post_ffw_norm.weight": "post_feedforward_layernorm.weight",
}
#: Phi-3 keeps transformers' fused ``qkv_proj`` as ``attn_qkv`` and its fused
#: ``gate_up_proj`` (gate, then up) as ``ffn_up``, with no ``ffn_gate``.
_PHI3_LAYER = {
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_qkv.weight": "self_attn.qkv_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_up.weight": "mlp.gate_up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
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
    "qwen3": (_LLAMA_TENSORS, _QWEN3_LAYER, "layers.{i}."),
    "gemma3": (_LLAMA_TENSORS, _GEMMA3_LAYER, "layers.{i}."),
    "phi3": (_LLAMA_TENSORS, _PHI3_LAYER, "layers.{i}."),
    "gpt2": (_GPT2_TENSORS, _GPT2_LAYER, "h.{i}."),
}
#: GPT-2's Conv1D weights, which the converter transposes to (d_out, d_in).
_CONV1D = ("attn_qkv.weight", "attn_output.weight", "ffn_up.weight", "ffn_down.weight")
#: Tensors the reader skips: llama.cpp's precomputed rotary factors (``rope_freqs``, read
#: into the config by :func:`_llama3_scaling`) and GPT-2's copy of the embeddings as
#: ``output`` (tied, as the family says).
_ROPE_FREQS = "rope_freqs.weight"
_SKIPPED = {"llama": (_ROPE_FREQS,), "gpt2": ("output.weight",)}
#: The prefixes of a vision tower's tensors kept in the model's own file (llama.cpp keeps
#: them in a separate ``mmproj`` file).
_VISION = ("v.", "mm.")
#: Rotary factors of scalings this engine does not compute, refused by name.
_NOT_READ_TENSORS = {
    "rope_factors_long.weight": "Phi-3's longrope scaling (rope_factors_long, "
    "rope_factors_short: Phi-3-mini-128k, Phi-3.5, Phi-4-mini)",
    "rope_factors_short.weight": "Phi-3's longrope scaling (rope_factors_long, "
    "rope_factors_short: Phi-3-mini-128k, Phi-3.5, Phi-4-mini)",
}

_PLAIN = {
    gguf.GGMLQuantizationType.F32: np.dtype(np.float32),
    gguf.GGMLQuantizationType.F16: np.dtype(np.float16),
}
_BF16 = gguf.GGMLQuantizationType.BF16


def _decodes(qtype):
    """Whether ``gguf.quants.dequantize`` decodes ``qtype``: asked of one block of zeros."""
    if qtype not in gguf.GGML_QUANT_SIZES:
        return False
    size = gguf.GGML_QUANT_SIZES[qtype][1]  # bytes per block
    try:
        gguf.quants.dequantize(np.zeros((1, size), dtype=np.uint8), qtype)
    except NotImplementedError:
        return False
    return True


#: Every block type ``gguf.quants.dequantize`` decodes: Q4_0 … Q8_0, the K-quants, the IQ types.
_QUANTIZED = frozenset(
    t for t in gguf.GGMLQuantizationType if t not in _PLAIN and t != _BF16 and _decodes(t)
)


class _Reader(gguf.GGUFReader):
    """``gguf.GGUFReader`` reading through a plain array of its file's mapping.

    The reader slices its ``np.memmap`` once or more for every value of the metadata (a
    vocabulary's every token and merge), and each slice of a memmap runs NumPy's
    Python-level ``memmap.__array_finalize__`` (docs/benchmarks.md). A plain ``ndarray``
    view of the same mapping slices in C; the bytes read are the same.
    """

    @property
    def data(self):
        return self._plain

    @data.setter
    def data(self, mapped):  # the memmap GGUFReader.__init__ opens
        self._plain = mapped.view(np.ndarray)


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
        return _Reader(path)
    except Exception as error:  # a truncated file, a type llama.cpp's reader does not know
        raise UnsupportedModelError(
            f"{path.name} could not be read as GGUF ({type(error).__name__}: {error}); "
            "a file cut short by an interrupted download reads so"
        ) from error


def _shape(tensor):
    """A stored tensor's shape as (rows, features): ggml lists the fastest axis first."""
    return tuple(int(n) for n in reversed(tensor.shape.tolist()))


def _raw_config(metadata, arch, tensors):
    """config.json's keys and values for a file of architecture ``arch``.

    ``tensors``: every stored tensor (``gguf``'s ``ReaderTensor``) by its GGUF name.
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
    raw["vocab_size"] = int(
        metadata.get(f"{arch}.vocab_size", _shape(tensors["token_embd.weight"])[0])
    )
    if arch == "gpt2":
        return {"model_type": "gpt2", **raw}
    vision = sorted(name for name in tensors if name.startswith(_VISION))
    if vision or any(key.startswith(f"{arch}.vision.") for key in metadata):
        raise UnsupportedModelError(
            f"this engine reads text models; the file holds a vision tower too ({arch}.vision.* "
            f"keys, tensors such as {', '.join(vision[:2]) or 'none'}, as Ollama may keep a "
            "multimodal model). llama.cpp's text-only GGUF of the same model is read"
        )
    for name, what in _NOT_READ_TENSORS.items():
        if name in tensors:
            raise UnsupportedModelError(
                f"this engine does not implement {what}: the file has {name}"
            )
    if raw.get("head_dim") == raw["hidden_size"] // raw["num_attention_heads"]:
        del raw["head_dim"]  # the usual width: the config says nothing, as a folder's
    raw.update(_rope_scaling(metadata, arch, raw, tensors))
    _check_head_dim(metadata, arch, raw)
    raw["tie_word_embeddings"] = "output.weight" not in tensors
    model_type = _MODEL_TYPES.get(arch, arch)
    window = raw.pop("sliding_window", None) or None  # 0: none (Phi-4's converter writes 0)
    if arch == "llama" and window:
        model_type = "mistral"  # Mistral's window: the one setting its family adds
    if arch in _WINDOWED and window:
        raw["sliding_window"] = window
    if arch == "gemma3":
        raw.update(_gemma3(raw))
    return {"model_type": model_type, **raw}


def _rope_scaling(metadata, arch, raw, tensors):
    """``rope_scaling`` from ``ARCH.rope.scaling.*``, or Llama 3.x's from ``rope_freqs``."""
    scaling = metadata.get(f"{arch}.rope.scaling.type", "none")
    if scaling not in ("none", "linear"):
        raise UnsupportedModelError(
            f"this engine implements rope_scaling of type 'default', 'linear' or 'llama3', "
            f"the file has {arch}.rope.scaling.type {scaling!r}"
        )
    if scaling == "linear":
        factor = float(metadata[f"{arch}.rope.scaling.factor"])
        return {"rope_scaling": {"type": "linear", "factor": factor}}
    if _ROPE_FREQS in tensors:
        if arch != "llama":
            raise UnsupportedModelError(
                f"this engine reads {_ROPE_FREQS} as Llama 3.x's scaling only, not in a "
                f"file of architecture {arch!r}"
            )
        return _llama3_scaling(metadata, arch, raw, tensors[_ROPE_FREQS])
    return {}


def _llama3_scaling(metadata, arch, raw, tensor):
    """Llama 3.x's ``llama3`` rope scaling, from the factors llama.cpp's converter stores.

    For ``llama3`` scaling ``convert_hf_to_gguf.py`` writes no ``rope.scaling.*`` key but
    ``rope_freqs.weight``: the number each pair's frequency is divided by (1 for the fast
    pairs, ``factor`` for the slow ones, a blend between), computed with Llama 3's
    ``low_freq_factor`` 1, ``high_freq_factor`` 4 and ``original_max_position_embeddings``
    8192 (or the file's ``rope.scaling.original_context_length``). Those settings are read
    back here: the factor is the largest divisor, and the divisors the settings give must
    be the file's, else the file is refused rather than guessed.
    """
    divisors = np.asarray(tensor.data, dtype=np.float64).reshape(-1)
    d_head = int(raw.get("head_dim") or raw["hidden_size"] // raw["num_attention_heads"])
    theta = float(raw.get("rope_theta", 10000.0))
    if divisors.shape != (d_head // 2,):
        raise UnsupportedModelError(
            f"{_ROPE_FREQS} holds {divisors.size} factors, not one per rotary pair ({d_head // 2})"
        )
    if np.all(divisors == 1.0):
        return {}
    original = float(metadata.get(f"{arch}.rope.scaling.original_context_length", LLAMA3_ORIGINAL))
    factor = float(divisors.max())
    llama3 = (*LLAMA3_BANDS, original)
    plain = rotary_frequencies(d_head, theta)
    expected = plain / rotary_frequencies(d_head, theta, factor, llama3)
    if not np.allclose(divisors, expected, rtol=1e-5, atol=0):
        raise UnsupportedModelError(
            f"{_ROPE_FREQS} is not Llama 3.x's llama3 scaling (factor {factor:g}, "
            f"low_freq_factor {LLAMA3_BANDS[0]:g}, high_freq_factor {LLAMA3_BANDS[1]:g}, "
            f"original_max_position_embeddings {original:g}); this engine computes no other "
            "per-pair factors"
        )
    rope = dict(zip(("low_freq_factor", "high_freq_factor"), LLAMA3_BANDS, strict=True))
    rope.update(rope_type="llama3", factor=factor, original_max_position_embeddings=original)
    return {"rope_scaling": rope}


def _check_head_dim(metadata, arch, raw):
    """``head_dim`` from ``attention.key_length``; every feature of a head rotated."""
    d_head = int(raw.get("head_dim") or raw["hidden_size"] // raw["num_attention_heads"])
    for key in ("rope.dimension_count", "attention.value_length"):
        value = metadata.get(f"{arch}.{key}", d_head)
        if value != d_head:
            raise UnsupportedModelError(
                f"this engine rotates and attends over all d_head = {d_head} features of a "
                f"head, the file has {arch}.{key} = {value}"
            )


def _gemma3(raw):
    """What llama.cpp's ``load_hparams`` makes of a Gemma 3 file where its metadata is silent.

    No key gives the kind of each layer: with a sliding window, every sixth layer is global
    (``set_swa_pattern(6)``), else every layer; nor the scores' scale: key_length^-1/2
    (Gemma 3's ``query_pre_attn_scalar`` = head_dim in every size but 27B, whose is
    d_model / n_heads); the local layers' rotary base is 10,000 unless the file gives
    ``rope.freq_base_swa``.
    """
    n_layers = int(raw["num_hidden_layers"])
    if raw.get("sliding_window"):
        types = [LOCAL if (i + 1) % GEMMA3_PATTERN else GLOBAL for i in range(n_layers)]
    else:
        types = [GLOBAL] * n_layers
    d_head = int(raw.get("head_dim") or raw["hidden_size"] // raw["num_attention_heads"])
    if n_layers == GEMMA3_27B_LAYERS:
        scalar = raw["hidden_size"] // raw["num_attention_heads"]
    else:
        scalar = d_head
    return {
        "layer_types": types,
        "head_dim": d_head,
        "query_pre_attn_scalar": scalar,
        "rope_local_base_freq": float(raw.get("rope_local_base_freq", GEMMA3_LOCAL_BASE)),
    }


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


def _gemma_gain(stored, config=None):
    """Gemma 3's norm weight w from the 1 + w llama.cpp's converter stores (``norm_shift``).

    Gemma's RMSNorm multiplies by 1 + w; the converter adds the 1 so that llama.cpp's
    plain RMSNorm applies it, and the family here reads w, as transformers stores it
    (its GGUF reader subtracts the 1 too). In float32, as the gain is stored: a bf16 w
    comes back exactly (1 + w holds its 8 bits), a float32 w within an ulp of the gain.
    """
    return np.asarray(stored, dtype=np.float32) - np.float32(1.0)


def _undo_q(rows, config):
    return _unpermute(rows, config.n_heads)


def _undo_k(rows, config):
    return _unpermute(rows, config.kv_heads)  # K is permuted over the key/value heads


def _conv1d(matrix, config=None):  # [d_out, d_in] -> [d_in, d_out]
    """GPT-2's weight back to Conv1D's (d_in, d_out), as the family reads it."""
    return np.ascontiguousarray(matrix.T)


#: What the converter did to a tensor, undone, by architecture: the tensor's name within
#: its layer (``blk.N.`` dropped; whole outside the layers) -> a function of the array and
#: the config.
_GEMMA3_NORMS = (
    "attn_norm.weight",
    "post_attention_norm.weight",
    "ffn_norm.weight",
    "post_ffw_norm.weight",
    "attn_q_norm.weight",
    "attn_k_norm.weight",
    "output_norm.weight",
)
_UNDONE = {
    "llama": {"attn_q.weight": _undo_q, "attn_k.weight": _undo_k},
    "gpt2": dict.fromkeys(_CONV1D, _conv1d),
    "gemma3": dict.fromkeys(_GEMMA3_NORMS, _gemma_gain),
}


def _in_layer(name):
    """``blk.12.attn_q.weight`` -> ``attn_q.weight``; a tensor outside the layers as it is."""
    block, _, rest = name.partition(".")
    index, _, leaf = rest.partition(".")
    return leaf if block == "blk" and index.isdigit() else name


def _array(tensor, path, copy):
    """A stored tensor as an array of (rows, features), at its precision or dequantized.

    ``copy``: a plain tensor (F32, F16, BF16) copied out of the file's mapping rather than
    a view of it. :func:`read` copies in a file that holds quantized tensors, where one
    view would keep the whole file mapped, and every page of blocks the load read
    resident, for as long as the model lives (docs/benchmarks.md); in a file of plain
    tensors alone the mapping is the weights themselves, shared with the page cache.
    """
    kind = tensor.tensor_type
    plain = np.array if copy else np.asarray
    if kind in _PLAIN:
        return plain(tensor.data, dtype=_PLAIN[kind])
    if kind == _BF16:  # bf16 kept as it is: the pass upcasts a layer at a time, exactly
        shape = tuple(int(n) for n in reversed(tensor.shape))
        return plain(tensor.data).view(ml_dtypes.bfloat16).reshape(shape)
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
            f"{', '.join(ARCHITECTURES)} (Llama 2 and 3.x, SmolLM2, TinyLlama and Mistral are "
            "llama; Gemma 3's text model is gemma3)"
        )
    tensors = {t.name: t for t in reader.tensors}
    if "token_embd.weight" not in tensors:
        raise UnsupportedModelError(f"{path.name} has no tensor token_embd.weight")
    return parse_config(_raw_config(metadata, arch, tensors))[0], arch


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
    quantized = any(tensor.tensor_type in _QUANTIZED for tensor in stored.values())
    for done, (name, tensor) in enumerate(stored.items(), start=1):
        key = _hf_name(arch, name)
        if key is None:
            if name not in _SKIPPED.get(arch, ()):
                raise UnsupportedModelError(
                    f"{path.name} holds a tensor {name}, which the {arch} architecture as "
                    "this engine reads it has no place for"
                )
            continue
        array = _array(tensor, path, copy=quantized)
        undo = _UNDONE.get(arch, {}).get(_in_layer(name))
        array = array if undo is None else undo(array, config)
        if key.endswith("_proj.weight"):
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
