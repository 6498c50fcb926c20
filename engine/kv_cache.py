"""Attention of new tokens against a key/value cache: a decoder's next token, incrementally.

A causal model's key and value for a token never change once computed, so generation
keeps each layer's keys and values and computes only the new tokens' (as transformers'
``past_key_values`` does). :func:`cached_attention` follows
:func:`engine.attention.multi_head_attention` (Vaswani et al. 2017, section 3.2.2) for
those rows: the whole attention's last rows, up to rounding.
:func:`engine.layers.encoder_layer` runs it per layer, :func:`engine.bert.step` per token.
"""

from __future__ import annotations

import numpy as np

from engine import blas
from engine.attention import (
    AttentionResult,
    MultiHeadResult,
    _check_heads,
    kv_head_of,
    linear,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
)
from engine.positional import rotary_embedding

__all__ = ["cached_attention"]


@blas.one_thread
def cached_attention(
    x,
    w_q,
    w_k,
    w_v,
    w_o,
    n_heads,
    past,
    first,
    mask=None,
    scale=None,
    rotary=False,
    b_q=None,
    b_k=None,
    b_v=None,
    b_o=None,
    n_kv_heads=None,
    q_norm=None,
    k_norm=None,
    qk_norm=None,
    softcap=None,
):
    r"""Multi-head attention of new tokens against a key/value cache: a decoder's next token.

    .. math:: \text{head}_i = \operatorname{Attention}\bigl(XW^Q_i + b^Q_i,\;
              [K_j;\ XW^K_j + b^K_j],\; [V_j;\ XW^V_j + b^V_j]\bigr)

    :func:`multi_head_attention` for the rows of ``x``, tokens at positions ``first,
    first + 1, …``, whose keys and values follow the cached ones (``K_j``, ``V_j``) of the
    tokens before them, ``j`` the key/value head query head ``i`` reads: a causal model's
    key and value for a token never change once computed (:func:`engine.bert.step`). The
    query heads that share a key/value head attend to it together, broadcast, not copied
    once per head. Each layer's own settings as the whole pass takes them: the q and k norms
    before the rotation (Qwen3, Gemma 3), the layer's rotary base (Gemma 3's local layers),
    the scores' scale and soft cap (Gemma 2).

    Parameters
    ----------
    x : ndarray of shape (n_q, d_model)
    w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o, n_heads, scale, rotary, n_kv_heads, q_norm,
    k_norm, qk_norm, softcap : as :func:`multi_head_attention` takes them
    past : (k, v), each an ndarray of shape (n_kv_heads, n_past, d_head)
        The earlier tokens' keys (rotated, in a rotary model) and values, ``n_past`` =
        ``first``; or of shape (n_kv_heads, first + n_q, d_head), their first ``first``
        rows the earlier tokens' and the rest room for these tokens', written there in
        place rather than joined in a new array (:class:`engine.bert.CacheRoom`)
    first : int, the position of ``x``'s first row: the tokens before it
    mask : bool ndarray broadcastable to (n_q, n_past + n_q), optional

    Returns
    -------
    MultiHeadResult, its ``k`` and ``v`` per key/value head, of shape
    (n_kv_heads, n_past + n_q, d_head): the cache with these tokens added
    """
    x = np.asarray(x)
    _check_heads(w_q.shape[-1], n_heads)
    n_kv = n_heads if n_kv_heads is None else n_kv_heads
    group = len(kv_head_of(n_heads, n_kv)) // n_kv  # query heads per key/value head
    q = split_heads(linear(x, w_q, b_q), n_heads)  # -> [n_heads, n_q, d_head]
    k = split_heads(linear(x, w_k, b_k), n_kv)  # -> [n_kv, n_q, d_head]
    v = split_heads(linear(x, w_v, b_v), n_kv)
    if q_norm is not None:  # each head's q and k normalised over d_head (Qwen3, Gemma 3)
        q, k = qk_norm(q, q_norm), qk_norm(k, k_norm)
    if rotary:
        rotation = {} if rotary is True else rotary
        positions = first + np.arange(len(x))
        q, k = (
            rotary_embedding(q, positions, **rotation),
            rotary_embedding(k, positions, **rotation),
        )
    if past[0].shape[1] == first + len(x):  # room for these tokens: no copy of the cache
        past[0][:, first:], past[1][:, first:] = k, v
        k, v = past
    else:
        k = np.concatenate([past[0], k], axis=1)  # -> [n_kv, n_past + n_q, d_head]
        v = np.concatenate([past[1], v], axis=1)
    grouped = q.reshape(n_kv, group, *q.shape[1:])  # -> [n_kv, group, n_q, d_head]
    attended = scaled_dot_product_attention(
        grouped, k[:, None], v[:, None], mask, scale, softcap=softcap
    )
    weights = attended.weights.reshape(n_heads, *attended.weights.shape[2:])  # -> [n_heads, n_q, n]
    output = attended.output.reshape(
        n_heads, *attended.output.shape[2:]
    )  # -> [n_heads, n_q, d_head]
    concat = merge_heads(output)  # -> [n_q, d_model]
    heads = AttentionResult(q, k, weights, output, attended.scale, attended.mask)
    return MultiHeadResult(q, k, v, heads, concat, linear(concat, w_o, b_o))
