"""The families of checkpoints this engine reads: data, one row per family.

A family is a :class:`Family` record, as nanoGPT's ``from_pretrained`` maps GPT-2's keys:
which ``config.json`` keys give a :class:`engine.checkpoint.ModelConfig`, what
transformers assumes when the file omits a key, what the family fixes, and which stored
tensor each of our parameters comes from (a key, or a :class:`Part` of one). The rows
follow transformers' own configuration and modelling files for each family (BERT,
RoBERTa, DistilBERT, ELECTRA, GPT-2, Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3,
Phi-3); :data:`FAMILIES` lists them by ``model_type``. No code here: the readers
(:mod:`engine.configs`, :func:`engine.checkpoint.read_params`) interpret the rows.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import NamedTuple

__all__ = [
    "BERT",
    "DISTILBERT",
    "ELECTRA",
    "FAMILIES",
    "GEMMA2",
    "GEMMA3",
    "GLOBAL",
    "GPT2",
    "LLAMA",
    "LOCAL",
    "MISTRAL",
    "PHI3",
    "QWEN2",
    "QWEN3",
    "ROBERTA",
    "Family",
    "Part",
]

#: Gemma 3's two kinds of layer (``layer_types``): a sliding window, or the whole text.
LOCAL, GLOBAL = "sliding_attention", "full_attention"


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
        :class:`~engine.checkpoint.ModelConfig` field -> the ``config.json`` key holding it.
    defaults : dict
        ``config.json`` key -> the value transformers assumes when the file omits it.
    implemented : dict
        ``config.json`` key -> the one value this engine computes (absent keys default
        to it); another value is refused.
    fixed : dict
        :class:`~engine.checkpoint.ModelConfig` fields the family fixes, whatever the file says.
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
#: ``pad_token_id + 1`` (see :class:`~engine.checkpoint.ModelConfig`).
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
#: ``tie_word_embeddings``). Rotary settings are read by :func:`engine.configs.read_config` itself:
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
