"""config.json read into a :class:`engine.checkpoint.ModelConfig`, by the family's row.

:func:`parse_config` takes config.json's keys (or the same keys a GGUF file's metadata is
turned into, :mod:`engine.gguf_reader`), finds the family in
:data:`engine.families.FAMILIES` by ``model_type``, and reads only the keys the family's
row names, with transformers' defaults for those the file omits; a setting this engine
does not compute (an activation, a rotary scaling, a kind of layer) is refused with
:class:`engine.checkpoint.UnsupportedModelError`. Rotary settings follow transformers'
``rope_theta``/``rope_scaling`` and transformers 5's ``rope_parameters``. Also here: the
packaged models' sizes, read without their weights (:func:`packaged_config`).
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.checkpoint import ModelConfig, UnsupportedModelError
from engine.families import FAMILIES, GLOBAL, LOCAL, PHI3, ROBERTA
from engine.layers import ACTIVATIONS
from engine.resources import MINILM_NAME, SMOLLM2_NAME, minilm_dir, smollm2_file

__all__ = ["ROPE_TYPES", "minilm_config", "packaged_config", "parse_config", "read_config"]

#: rope_scaling types this engine computes: none, positions stretched linearly, and Llama
#: 3.x's stretch of the low frequencies only (:func:`engine.positional.rotary_frequencies`).
ROPE_TYPES = ("default", "linear", "llama3")
#: The keys of ``llama3`` scaling, besides its factor.
_LLAMA3_KEYS = ("low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
#: Model types refused by name, with what is not read.
_NOT_READ = {
    "gemma3": "a Gemma 3 checkpoint with its vision tower (model_type 'gemma3'); this engine "
    "reads Gemma 3's text models (model_type 'gemma3_text': Gemma 3 270M and 1B)",
}


def read_config(path):
    """The :class:`ModelConfig` of a ``config.json``, and the family it belongs to.

    Only the keys the family's :class:`~engine.families.Family` names are read; ``auto_map``,
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
