"""What a pretrained model's config fixes for each layer: its settings and its mask.

``softmax(s · QKᵀ + M)``, ``M_ij = 0`` where query ``i`` may see key ``j`` and ``-inf``
elsewhere: no mask in an encoder, causal in a decoder (Vaswani et al. 2017, section
3.2.3), Mistral's sliding window (Jiang et al. 2023, section 2) and Gemma 3's local
layers. With it, the arguments of :func:`engine.layers.encoder_layer` that only the
config and the layer's index decide: the norm and activation, pre- or post-LN, the
rotary base, grouped-query heads, the scores' scale ``s`` and soft cap. The pass
(:func:`engine.bert.transformer`), a long text's rows read again (:mod:`engine.long_run`)
and one layer computed again (:mod:`engine.one_layer`) all take them from here, so each
computes a layer as the pass did.
"""

from __future__ import annotations

from engine.attention import causal_mask, sliding_window_mask
from engine.layers import ACTIVATIONS, NORMS

__all__ = ["attention_mask", "visible_keys"]


def _norm(config):
    return NORMS[config.norm]


def _layer_settings(config, layer):
    """The arguments of :func:`engine.layers.encoder_layer` that the config fixes for ``layer``."""
    return {
        "n_heads": config.n_heads,
        "activation": ACTIVATIONS[config.activation],
        "norm_first": config.norm_first,
        "eps": config.eps,
        "norm": _norm(config),
        "rotary": config.rotary_at(layer) or False,
        "n_kv_heads": config.n_kv_heads,
        "scale": config.attn_scale,
        "softcap": config.attn_softcap,
    }


def visible_keys(config, query, layer=None):
    """The keys query ``query`` may attend to in layer ``layer``, as a slice of the tokens.

    All of them in an encoder; up to itself in a causal model; within Mistral's sliding
    window (or a Gemma 3 local layer's), its last ``sliding_window`` tokens.
    """
    if not config.causal:
        return slice(None)
    window = config.window(layer)
    return slice(0 if window is None else max(0, query - window + 1), query + 1)


def attention_mask(config, n, causal=None, layer=None):
    """Where each query may attend: None (everywhere), causal, or a sliding window.

    Mistral's and Phi-3's window holds in every layer, Gemma 3's in its local layers
    (``layer`` None: a global layer's mask).

    Parameters
    ----------
    config : engine.checkpoint.ModelConfig
    n : int, tokens
    causal : bool, optional
        None: the model's own mask. True: the causal mask on an encoder too (a what-if).
        False: no mask at all, a decoder's too (a what-if: every token sees every other,
        as the model never reads).
    layer : int, optional

    Returns
    -------
    bool ndarray of shape (n, n), or None
    """
    if causal is False:
        return None
    window = config.window(layer)
    if window is not None and window < n:
        return sliding_window_mask(n, window)
    return causal_mask(n) if causal or config.causal else None


def _masks(config, n):
    """Every layer's mask, one array per distinct mask (Gemma 3's local layers share one)."""
    made = {}
    for layer in range(config.n_layers):
        window = config.window(layer)
        if window not in made:
            made[window] = attention_mask(config, n, layer=layer)
    return [made[config.window(layer)] for layer in range(config.n_layers)]
