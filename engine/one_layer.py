"""One layer of a pretrained run, computed again from the hidden state it read.

``head_h = softmax(s (XW^Q_h + b^Q_h)(XW^K_h + b^K_h)ᵀ + M)(XW^V_h + b^V_h)`` (Vaswani
et al. 2017, section 3.2.2): what the pages draw of one layer of a
:class:`engine.bert.BertRun`. :func:`layer_run` is the layer's multi-head attention,
:func:`head_weights` one head's weights, :func:`head_vectors` one head's queries and keys
before the rotation, :func:`layer_stages` every stage of the layer
(:func:`engine.layers.encoder_layer`); each starts from ``run.hidden_states[layer]``
with the settings the pass used (:mod:`engine.layer_config`), so at the model's own
scale and mask it gives the pass's numbers to the bit.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from engine import blas
from engine.attention import (
    MultiHeadResult,
    kv_head_of,
    linear,
    merge_heads,
    multi_head_attention,
)
from engine.layer_config import _layer_settings, _norm, attention_mask
from engine.layers import encoder_layer
from engine.parts import parts_for

__all__ = [
    "LayerRun",
    "LayerWeights",
    "head_vectors",
    "head_weights",
    "layer_run",
    "layer_stages",
]


class LayerWeights(NamedTuple):
    """One layer's attention parameters, applied as ``x @ w + b``.

    ``w_q`` and ``w_o`` have shape (d_model, d_model), ``w_k`` and ``w_v`` (d_model,
    n_kv_heads · d_head) (d_model without grouped-query attention), the biases as many
    features, or None where the model has none (the Llama family; Qwen2's output); head
    ``h`` owns columns ``h*d_head:(h+1)*d_head`` of W_Q, and those of its key/value head
    of W_K and W_V. Where heads do not share d_model out (Qwen3, Gemma 3), ``w_q`` is
    (d_model, n_heads · d_head) and ``w_o`` (n_heads · d_head, d_model). ``q_norm`` and
    ``k_norm`` (d_head,): the gains of Qwen3's and Gemma 3's norms of q and k, or None.
    The first four fields are named as :class:`engine.toy.ToyWeights`'s, so a page can
    draw either. float32, whatever the checkpoint's precision.
    """

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray
    b_q: np.ndarray
    b_k: np.ndarray
    b_v: np.ndarray
    b_o: np.ndarray
    q_norm: np.ndarray | None = None
    k_norm: np.ndarray | None = None


class LayerRun(NamedTuple):
    """The attention of one trained layer, in the fields of :class:`engine.toy.ToyRun`.

    Attributes
    ----------
    layer : int
    x : ndarray of shape (n, d_model)
        The attention's input: the hidden state entering the layer (``hidden_states[layer]``
        of the run), or its LayerNorm ``ln_1`` in a pre-LN model (GPT-2).
    weights : LayerWeights
    q, k, v : ndarray of shape (n, n_heads · d_head)
        ``x @ w_q + b_q`` etc., per query head (a shared key/value head repeated, after
        the norms of q and k and the rotation where the model has them).
    mask : bool ndarray of shape (n, n) or None
    attention : engine.attention.MultiHeadResult
        Every head; ``output`` is ``concat @ w_o + b_o``.
    """

    layer: int
    x: np.ndarray
    weights: LayerWeights
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    mask: np.ndarray | None
    attention: MultiHeadResult


def _check_layer(model, layer):
    if not 0 <= layer < model.config.n_layers:
        raise ValueError(f"layer must lie in [0, {model.config.n_layers}), got {layer}")


@blas.one_thread
def layer_run(model, run, layer, scale=None, causal=None, parallel=True, keep_weights=True):
    r"""One layer's multi-head attention, recomputed from the run's hidden state.

    .. math:: \text{head}_h = \operatorname{softmax}\!\left(s\,(XW^Q_h + b^Q_h)
              (XW^K_h + b^K_h)^\top + M\right)(XW^V_h + b^V_h)

    The attention :func:`engine.layers.encoder_layer` computes in the pass (from the
    queries and keys the pass kept, where it kept them: the same bits), so at the model's
    own scale ``s = 1/√d_head`` and mask the weights are the model's,
    ``run.attentions[layer]``, to the bit; another scale, the causal mask on an encoder or
    none on a decoder shows what this trained layer would do if its scores were scaled or
    masked differently. A run without its positions (``run.positions`` False) is
    recomputed without them: a rotary model's layer does not rotate its q and k either.

    Parameters
    ----------
    model : engine.checkpoint.Model
    run : BertRun, of ``model``
    layer : int, 0 <= layer < n_layers
    scale : float, optional; default ``1/√d_head``
    causal : bool, optional
        None: the model's own mask; True: causal on an encoder too; False: no mask, a
        decoder's neither (:func:`engine.layer_config.attention_mask`)
    parallel : bool or int, as in :func:`engine.bert.run_ids`: the same bits
    keep_weights : bool
        False keeps no head's weights (``attention.heads.weights`` None): a long text's
        queries, keys, values and outputs, without every head's ``n × n`` (one head's:
        :func:`head_weights`).

    Returns
    -------
    LayerRun
    """
    _check_layer(model, layer)
    c, block = _config(model, run), model.block(layer)
    x = run.hidden_states[layer]  # the input of layer ℓ, [n, d_model]
    if c.norm_first:
        x = _norm(c)(x, **block["ln_1"], eps=c.eps)  # as the layer normalises it
    weights = LayerWeights(**{name: block["attn"].get(name) for name in LayerWeights._fields})
    mask = attention_mask(c, len(x), causal, layer)
    settings = _layer_settings(c, layer)
    n_heads = c.n_heads
    attention = multi_head_attention(
        x,
        **weights._asdict(),
        n_heads=n_heads,
        mask=mask,
        scale=settings["scale"] if scale is None else scale,
        rotary=settings["rotary"],
        parts=min(parts_for(len(x)), n_heads),  # the pass's split, so its rounding
        parallel=parallel,
        n_kv_heads=c.n_kv_heads,
        qk_norm=functools.partial(settings["norm"], eps=c.eps),
        softcap=settings["softcap"],
        keep=keep_weights,
        qk=_kept_qk(run, layer),
    )
    q, k, v = (merge_heads(m) for m in (attention.q, attention.k, attention.v))  # -> [n, h·d_head]
    return LayerRun(layer, x, weights, q, k, v, mask, attention)


def _config(model, run):
    """The config the run's pass computed with: a rotary model without its positions, unrotated.

    As :func:`engine.bert.run_ids` runs it: ``positions=False`` removes a rotary model's
    rotation from every layer, so a layer computed again from that run has none either.
    """
    c = model.config
    return c._replace(rope_theta=None) if not run.positions and c.rotary else c


def _kept_qk(run, layer):
    """The layer's queries and keys as the pass kept them, or None: :func:`layer_run` projects.

    A short text's pass holds them (ndarrays), the bits the layer would compute again; a
    long text's (:class:`engine.long_run.PerLayer`) are computed when read anyway; a pass
    without the model's positions keeps ones its layer computes the same way (projected
    again here: one code path for the what-if).
    """
    kept = isinstance(run.queries, np.ndarray) and isinstance(run.keys, np.ndarray)
    if kept and run.positions:
        return run.queries[layer], run.keys[layer]
    return None


def head_weights(model, run, layer, head):
    r"""One head's weights, shape (n, n): ``run.attentions[layer, head]``, checked.

    .. math:: A^{(\ell, h)} = \operatorname{softmax}\!\left(s\,Q_h K_h^\top + M\right)

    What the pass computed, to the bit: kept by a short text's pass, computed again from
    the layer's hidden state for a long one (:class:`engine.long_run.Attentions`).

    Parameters
    ----------
    model : engine.checkpoint.Model
    run : BertRun, of ``model``
    layer, head : int

    Returns
    -------
    float32 ndarray of shape (n, n)
    """
    _check_layer(model, layer)
    if not 0 <= head < model.config.n_heads:
        raise ValueError(f"head must lie in [0, {model.config.n_heads}), got {head}")
    return np.asarray(run.attentions[layer, head])


@blas.one_thread
def head_vectors(model, run, layer, head):
    r"""One head's queries and keys before any rotation: ``x W^Q_h + b^Q_h``, ``x W^K_j + b^K_j``.

    ``j`` is the key/value head that query head ``h`` reads
    (:func:`engine.attention.kv_head_of`). In a rotary model these are the vectors the
    layer rotates by their positions, after Qwen3's and Gemma 3's norms of q and k where
    the model has them; :func:`engine.analysis.rotary_scores` moves them apart.

    Parameters
    ----------
    model : engine.checkpoint.Model
    run : BertRun, of ``model``
    layer, head : int

    Returns
    -------
    q, k : ndarray of shape (n, d_head)
    """
    _check_layer(model, layer)
    c, block = model.config, model.block(layer)
    x = run.hidden_states[layer]
    if c.norm_first:
        x = _norm(c)(x, **block["ln_1"], eps=c.eps)
    d = c.d_head
    j = int(kv_head_of(c.n_heads, c.kv_heads)[head])
    f, g = slice(head * d, (head + 1) * d), slice(j * d, (j + 1) * d)
    attn = block["attn"]
    q = linear(x, attn["w_q"][:, f], None if "b_q" not in attn else attn["b_q"][f])
    k = linear(x, attn["w_k"][:, g], None if "b_k" not in attn else attn["b_k"][g])
    if "q_norm" in attn:  # normalised over d_head before the rotation
        norm = _norm(c)
        q, k = norm(q, attn["q_norm"], eps=c.eps), norm(k, attn["k_norm"], eps=c.eps)
    return q, k  # [n, d_head] each


@blas.one_thread
def layer_stages(model, run, layer, parallel=True, keep_weights=True):
    r"""Every stage of one trained layer, as the pass computed it.

    .. math:: h = \operatorname{LN}_1(x + \operatorname{MultiHead}(x)),\qquad
              y = \operatorname{LN}_2\bigl(h + \operatorname{GELU}(hW_1 + b_1)W_2 + b_2\bigr)

    (pre-LN for GPT-2: :func:`engine.layers.encoder_layer`'s other form.)

    :func:`engine.layers.encoder_layer` on the run's hidden state, the call the pass
    made: ``streams[-1]`` is ``run.hidden_states[layer + 1]`` to the bit.

    Parameters
    ----------
    model : engine.checkpoint.Model
    run : BertRun, of ``model``
    layer : int
    parallel : bool or int, as in :func:`engine.bert.run_ids`: the same bits
    keep_weights : bool
        False keeps no head's weights (``attention.heads.weights`` None), as a long
        text's pass keeps none: its stages without every head's ``n × n``.

    Returns
    -------
    engine.layers.EncoderLayerResult, with ``ffn_hidden`` of shape (n, d_ff)
    """
    _check_layer(model, layer)
    c, x = _config(model, run), run.hidden_states[layer]
    mask = attention_mask(c, len(x), layer=layer)
    return encoder_layer(
        x,
        **model.block(layer),
        **_layer_settings(c, layer),
        mask=mask,
        parallel=parallel,
        keep=keep_weights,
    )
