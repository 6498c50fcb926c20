"""Scaled dot-product and multi-head attention in the row convention of the papers.

Follows Vaswani et al. (2017), "Attention Is All You Need", section 3.2: tokens are
rows, ``Attention(Q, K, V) = softmax(Q Kᵀ · scale) V`` with ``scale = 1/√d_k``.
The textbook's column convention lives in :mod:`engine.book`; both give the same
numbers up to a transpose. The softmax and the soft cap are :mod:`engine.scores`'; a long
text's heads are computed a block of query rows at a time by :mod:`engine.blocked`; one
query's stages and one cell's arithmetic, worked by hand, are :mod:`engine.arithmetic`'s.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine import blas
from engine.blocked import WHOLE_ROWS, _blocks, blocked_attention, query_blocks
from engine.parts import Joined, in_parts, share
from engine.positional import rotary_embedding
from engine.scores import soft_cap, softmax

__all__ = [
    "AttentionResult",
    "Links",
    "MultiHeadResult",
    "ScaleSweep",
    "attention_loop",
    "attention_over_scales",
    "causal_mask",
    "head_projections",
    "kv_head_of",
    "linear",
    "merge_heads",
    "multi_head_attention",
    "scaled_dot_product_attention",
    "sliding_window_mask",
    "split_heads",
    "strong_links",
]


@blas.one_thread
def linear(x, w, b=None):  # [n, d_in], [d_in, d_out], [d_out] -> [n, d_out]
    """A dense layer, ``x @ w + b`` (no bias when ``b`` is None).

    Parameters
    ----------
    x : ndarray of shape (n, d_in)
    w : ndarray of shape (d_in, d_out)
    b : ndarray of shape (d_out,), optional

    Returns
    -------
    ndarray of shape (n, d_out)
    """
    y = x @ w  # [n, d_in] @ [d_in, d_out] -> [n, d_out]
    if b is not None:
        y += b  # in place: one pass fewer over the product
    return y


class AttentionResult(NamedTuple):
    """Every stage of scaled dot-product attention, in the order the app draws them.

    Shapes use ``...`` for any leading batch or head dimensions.

    Attributes
    ----------
    q : ndarray of shape (..., n_q, d_k)
    k : ndarray of shape (..., n_k, d_k)
    weights : ndarray of shape (..., n_q, n_k)
        Softmax of ``masked`` over keys; each row sums to 1 (0 if fully masked).
    output : ndarray of shape (..., n_q, d_v)
        ``weights @ v``.
    scale : float
        The factor that multiplied the dot products.
    mask : bool ndarray broadcastable to (..., n_q, n_k), or None
        True where the query may attend to the key.
    softcap : float or None
        The scaled scores' soft cap (:func:`engine.scores.soft_cap`), or None.

    ``scores`` (the raw ``q · kᵀ``), ``scaled`` and ``masked`` are computed from these
    when read, by the operations the weights came from, so to the same bits: a pass
    writes one (n_q, n_k) array per head, not two, and a cached result keeps one where
    the four stages would take four (docs/benchmarks.md).
    """

    q: np.ndarray
    k: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    scale: float
    mask: np.ndarray | None = None
    softcap: float | None = None

    @property
    def scores(self):
        """Raw dot products ``q · kᵀ``, shape (..., n_q, n_k)."""
        return _dot_products(self.q, self.k)

    @property
    def scaled(self):
        """``scores · scale`` (soft-capped where the model caps it), shape (..., n_q, n_k)."""
        scaled = self.scores * self.scale
        return soft_cap(scaled, self.softcap, out=scaled)

    @property
    def masked(self):
        """``scaled`` with disallowed entries set to ``-inf``, shape (..., n_q, n_k)."""
        if self.mask is None:
            return self.scaled
        return np.where(self.mask, self.scaled, -np.inf)


@blas.one_thread
def _dot_products(q, k, out=None):  # [..., n_q, d_k], [..., n_k, d_k] -> [..., n_q, n_k]
    return np.matmul(q, np.swapaxes(k, -1, -2), out=out)


@blas.one_thread
def scaled_dot_product_attention(q, k, v, mask=None, scale=None, weights_out=None, softcap=None):
    r"""Scaled dot-product attention (Vaswani et al. 2017, eq. 1).

    .. math:: \operatorname{Attention}(Q, K, V) =
              \operatorname{softmax}\!\left(s\,QK^\top + M\right)V,
              \quad s = 1/\sqrt{d_k}\ \text{by default}

    where ``M`` is 0 where the mask allows attention and ``-inf`` elsewhere. With
    ``softcap`` ``c`` the scaled scores are first soft-capped, ``c tanh(s QKᵀ / c)``
    (Gemma 2 and 3: :func:`engine.scores.soft_cap`), before the mask, as transformers' eager Gemma.

    Parameters
    ----------
    q : ndarray of shape (..., n_q, d_k)
    k : ndarray of shape (..., n_k, d_k)
    v : ndarray of shape (..., n_k, d_v)
    mask : bool ndarray broadcastable to (..., n_q, n_k), optional
        True where the query may attend to the key.
    scale : float, optional
        Factor that multiplies ``q · kᵀ``; default ``1/√d_k``.
    weights_out : ndarray of shape (..., n_q, n_k), optional
        Receives the weights (a model's pass keeps every layer's in one array).
    softcap : float, optional; no cap when None

    Returns
    -------
    AttentionResult
    """
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    d_k = q.shape[-1]
    if k.shape[-1] != d_k:
        raise ValueError(f"q and k need the same last dimension d_k, got {d_k} and {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v need the same number of keys, got {k.shape[-2]} and {v.shape[-2]}"
        )
    if scale is None:
        scale = 1.0 / np.sqrt(d_k)
    scale = float(scale)  # a Python float keeps float32 scores float32
    mask = None if mask is None else np.asarray(mask, dtype=bool)
    weights = _dot_products(q, k, out=weights_out)  # the scores, [..., n_q, n_k]; in place:
    if not np.issubdtype(weights.dtype, np.floating):
        weights = weights.astype(np.float64)  # integer inputs: the softmax needs floats
    weights *= scale  # scaled,
    soft_cap(weights, softcap, out=weights)  # capped, where the model caps,
    if mask is not None:
        np.copyto(weights, -np.inf, where=~mask)  # masked,
    softmax(weights, axis=-1, out=weights)  # and the weights
    output = weights @ v  # [..., n_q, n_k] @ [..., n_k, d_v] -> [..., n_q, d_v]
    return AttentionResult(q, k, weights, output, scale, mask, softcap)


class ScaleSweep(NamedTuple):
    """Attention at every scale of a grid, computed at once: the frames the scale slider plays.

    Attributes
    ----------
    scales : ndarray of shape (n_s,)
    scores : ndarray of shape (n_q, n_k)
        Raw dot products ``q · kᵀ`` (the same at every scale).
    scaled : ndarray of shape (n_s, n_q, n_k)
        ``scales[t] · scores``, with ``-inf`` where the mask forbids.
    weights : ndarray of shape (n_s, n_q, n_k)
    output : ndarray of shape (n_s, n_q, d_v)
    """

    scales: np.ndarray
    scores: np.ndarray
    scaled: np.ndarray
    weights: np.ndarray
    output: np.ndarray


@blas.one_thread
def attention_over_scales(q, k, v, scales, mask=None):
    r"""Scaled dot-product attention for every scale in ``scales``, in one vectorised call.

    .. math:: A_t = \operatorname{softmax}\!\left(s_t\,QK^\top + M\right),
              \quad O_t = A_t V, \qquad t = 1, \dots, n_s

    Each frame equals :func:`scaled_dot_product_attention` at that scale (the same
    operations on the same numbers). Memory is ``n_s · n_q · n_k`` floats per array.

    Parameters
    ----------
    q : ndarray of shape (n_q, d_k)
    k : ndarray of shape (n_k, d_k)
    v : ndarray of shape (n_k, d_v)
    scales : ndarray of shape (n_s,)
    mask : bool ndarray broadcastable to (n_q, n_k), optional
        True where the query may attend to the key.

    Returns
    -------
    ScaleSweep
    """
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    scales = np.asarray(scales, dtype=float)
    scores = q @ k.T  # [n_q, d_k] @ [d_k, n_k] -> [n_q, n_k]
    scaled = scores[None] * scales[:, None, None]  # [1, n_q, n_k] * [n_s, 1, 1] -> [n_s, n_q, n_k]
    if mask is not None:
        scaled = np.where(np.asarray(mask, dtype=bool), scaled, -np.inf)
    weights = softmax(scaled, axis=-1)
    output = weights @ v  # [n_s, n_q, n_k] @ [n_k, d_v] -> [n_s, n_q, d_v]
    return ScaleSweep(scales, scores, scaled, weights, output)


def attention_loop(q, k, v, mask=None, scale=None):
    """The same attention written one query and one key at a time, as the textbook builds it.

    Slow on purpose: it is the oracle the matrix form is tested against, and the
    code the app shows beside the matrix form.

    Parameters
    ----------
    q : ndarray of shape (n_q, d_k)
    k : ndarray of shape (n_k, d_k)
    v : ndarray of shape (n_k, d_v)
    mask : bool ndarray of shape (n_q, n_k), optional
    scale : float, optional

    Returns
    -------
    weights : ndarray of shape (n_q, n_k)
    output : ndarray of shape (n_q, d_v)
    """
    n_q, d_k = q.shape
    n_k = k.shape[0]
    scale = 1.0 / np.sqrt(d_k) if scale is None else float(scale)
    weights = np.zeros((n_q, n_k))
    output = np.zeros((n_q, v.shape[1]))
    for i in range(n_q):
        row = [
            float(q[i] @ k[j]) * scale if mask is None or mask[i, j] else -np.inf
            for j in range(n_k)
        ]
        weights[i] = softmax(np.array(row))
        for j in range(n_k):
            output[i] += weights[i, j] * v[j]
    return weights, output


def causal_mask(n):
    """Lower-triangular mask: query ``i`` may attend to key ``j`` only when ``j <= i``.

    Returns
    -------
    bool ndarray of shape (n, n)
    """
    return np.tril(np.ones((n, n), dtype=bool))


def sliding_window_mask(n, window):
    """Causal, and at most ``window`` keys back: query ``i`` sees ``i - window < j <= i``.

    Mistral's sliding-window attention (Jiang et al. 2023, section 2), as transformers
    masks it: each token attends to itself and the ``window - 1`` tokens before it.

    Returns
    -------
    bool ndarray of shape (n, n)
    """
    i, j = np.indices((n, n))
    return (j <= i) & (j > i - window)


def kv_head_of(n_heads, n_kv_heads):
    """The key/value head each query head reads in grouped-query attention.

    Query heads ``g·j … g·j + g - 1`` share key/value head ``j``, ``g = n_heads /
    n_kv_heads`` (Ainslie et al. 2023, section 2.2; transformers' ``repeat_kv``).

    Returns
    -------
    int ndarray of shape (n_heads,)
    """
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError(f"n_kv_heads={n_kv_heads} does not divide n_heads={n_heads}")
    return np.arange(n_heads) // (n_heads // n_kv_heads)


def split_heads(x, n_heads):
    """Cut the feature columns into ``n_heads`` equal, contiguous groups.

    Head ``h`` gets columns ``h*d_head:(h+1)*d_head``.

    Parameters
    ----------
    x : ndarray of shape (n, d_model)
    n_heads : int, a divisor of d_model

    Returns
    -------
    ndarray of shape (n_heads, n, d_head)
    """
    n, d_model = x.shape
    _check_heads(d_model, n_heads)
    return x.reshape(n, n_heads, d_model // n_heads).transpose(1, 0, 2)  # -> [n_heads, n, d_head]


def merge_heads(x):
    """Concatenate heads back along the features, in head order; inverse of :func:`split_heads`.

    Parameters
    ----------
    x : ndarray of shape (n_heads, n, d_head)

    Returns
    -------
    ndarray of shape (n, n_heads * d_head)
    """
    n_heads, n, d_head = x.shape
    return x.transpose(1, 0, 2).reshape(n, n_heads * d_head)  # -> [n, d_model]


def _check_heads(d_model, n_heads):
    if not isinstance(n_heads, int | np.integer) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive integer, got {n_heads!r}")
    if d_model % n_heads:
        raise ValueError(
            f"n_heads={n_heads} does not divide d_model={d_model}: "
            f"each head needs an equal share of the {d_model} features"
        )


class MultiHeadResult(NamedTuple):
    """Multi-head attention with every intermediate.

    Attributes
    ----------
    q : ndarray of shape (n_heads, n_q, d_head)
    k, v : ndarray of shape (n_heads, n_k, d_head)
        Per-head projections, biases added (after rotary encoding, when it is on).
    heads : AttentionResult
        Each field has a leading ``n_heads`` dimension.
    concat : ndarray of shape (n_q, n_heads · d_head)
        Head outputs concatenated in head order.
    output : ndarray of shape (n_q, d_model)
        ``concat @ w_o + b_o``.
    """

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    heads: AttentionResult
    concat: np.ndarray
    output: np.ndarray

    @property
    def weights(self):
        """Attention weights of every head, shape (n_heads, n, n)."""
        return self.heads.weights


@blas.one_thread
def multi_head_attention(
    x,
    w_q,
    w_k,
    w_v,
    w_o,
    n_heads,
    mask=None,
    scale=None,
    rotary=False,
    b_q=None,
    b_k=None,
    b_v=None,
    b_o=None,
    memory=None,
    weights_out=None,
    parts=1,
    parallel=True,
    n_kv_heads=None,
    q_norm=None,
    k_norm=None,
    qk_norm=None,
    softcap=None,
    summaries=None,
    keep=True,
    qk=None,
):
    r"""Multi-head attention (Vaswani et al. 2017, section 3.2.2): self- or cross-attention.

    .. math:: \operatorname{MultiHead}(X) = \operatorname{Concat}(\text{head}_1, \dots,
              \text{head}_h)\,W^O + b^O,\quad \text{head}_i =
              \operatorname{Attention}(XW^Q_i + b^Q_i, XW^K_i + b^K_i, XW^V_i + b^V_i)

    ``W^Q_i`` is the ``i``-th block of ``d_head`` columns of ``w_q`` (likewise K, V).
    With ``memory`` the keys and values come from it instead of ``x``: the decoder's
    cross-attention (section 3.2.3), whose queries are the decoder's tokens. With
    ``n_kv_heads`` < ``n_heads``, grouped-query attention (Ainslie et al. 2023): ``w_k`` and
    ``w_v`` make ``n_kv_heads`` heads, each repeated for the query heads that share it
    (:func:`kv_head_of`), and then this is the same attention. Qwen3 and Gemma 3 normalise
    each head's query and key (``qk_norm`` with gains ``q_norm``, ``k_norm``) before the
    rotation, and their heads need not share d_model out: ``d_head`` is ``w_q``'s columns
    over ``n_heads``, and ``w_o`` takes the n_heads · d_head features back to d_model.

    Parameters
    ----------
    x : ndarray of shape (n_q, d_model)
    w_q : ndarray of shape (d_model, n_heads · d_head), applied as ``x @ w``
    w_o : ndarray of shape (n_heads · d_head, d_model)
    w_k, w_v : ndarray of shape (d_model, n_kv_heads · d_head)
    n_heads : int, a divisor of w_q's columns
    mask : bool ndarray broadcastable to (n_q, n_k), optional
    scale : float, optional; default ``1/√d_head``
    rotary : bool or mapping
        Rotate each head's queries and keys by their position (RoPE) before the dot
        products: True as the positional page does, a mapping with the keyword arguments
        of :func:`engine.positional.rotary_embedding` (``base``, ``factor``, ``halves``)
        as a checkpoint says.
    b_q : ndarray of shape (n_heads · d_head,), optional; no bias when None
    b_o : ndarray of shape (d_model,), optional
    b_k, b_v : ndarray of shape (n_kv_heads · d_head,), optional
    memory : ndarray of shape (n_k, d_model), optional; default ``x`` (self-attention)
    weights_out : ndarray of shape (n_heads, n_q, n_k), optional; receives the weights
    parts : int, at most n_heads
        The heads in this many groups, each projected by its rows of ``W^O``, the terms
        summed in order (:func:`engine.parts.in_parts`); rounds as the layer does.
    parallel : bool or int, the groups on the engine's threads (:func:`engine.parts.in_parts`)
    n_kv_heads : int, optional; a divisor of n_heads, default n_heads
    q_norm, k_norm : ndarray of shape (d_head,), optional; the gains of the q and k norms
    qk_norm : callable, ``qk_norm(x, g)`` over the last axis; needed with ``q_norm``
    softcap : float, optional; the scores' soft cap (:func:`scaled_dot_product_attention`)
    summaries : engine.summaries.SummarySums, optional
        Receives each head's summaries (head ``h`` at index ``h``), the heads computed a
        block of query rows at a time (:func:`engine.blocked.blocked_attention`), as they are anyway
        beyond :data:`engine.blocked.WHOLE_ROWS` queries.
    keep : bool
        False keeps no weights (``heads.weights`` None): a long text's pass, whose heads'
        ``n × n`` weights are never all held.
    qk : (ndarray, ndarray), optional
        Every head's queries and keys already projected, each of shape (n_heads, n, d_head)
        as this returns them (a pass's ``queries[layer]``, ``keys[layer]``): only the values
        are projected (:func:`head_projections`), and the attention is the same bits.

    Returns
    -------
    MultiHeadResult, with k and v per query head (a shared one repeated), q and k after
    their norms and rotation
    """
    x = np.asarray(x)
    memory = x if memory is None else np.asarray(memory)
    _check_heads(w_q.shape[-1], n_heads)
    d_head = w_q.shape[-1] // n_heads
    blocked = summaries is not None or not keep or len(x) > WHOLE_ROWS
    if blocked:  # what each block of queries sees, the same for every head
        mask = None if mask is None else np.asarray(mask, dtype=bool)
        if mask is not None:
            mask = np.broadcast_to(mask, (len(x), len(memory)))
        blocks = _blocks(mask, len(x), len(memory))
    found = [None] * parts
    joined = Joined(parts)
    projections = {
        "w_q": w_q,
        "w_k": w_k,
        "w_v": w_v,
        "b_q": b_q,
        "b_k": b_k,
        "b_v": b_v,
        "n_heads": n_heads,
        "memory": memory,
        "rotary": rotary,
        "n_kv_heads": n_kv_heads,
        "q_norm": q_norm,
        "k_norm": k_norm,
        "qk_norm": qk_norm,
        "qk": qk,
    }

    def attend(part):  # a group of heads, start to finish, and its term of Concat(...) W^O
        heads = share(n_heads, parts, part)
        f = slice(heads.start * d_head, heads.stop * d_head)  # their columns of W^Q
        q, k, v = head_projections(x, heads=heads, **projections)  # -> [count, n, d_head] each
        out = None if weights_out is None else weights_out[heads]
        if blocked:
            if keep and out is None:
                out = np.empty((len(q), len(x), len(memory)), dtype=np.result_type(q, k))
            attended = AttentionResult(
                q,
                k,
                out,
                blocked_attention(
                    q,
                    k,
                    v,
                    mask,
                    scale,
                    softcap,
                    out,
                    summaries,
                    range(heads.start, heads.stop),
                    blocks,
                ),
                float(1.0 / np.sqrt(d_head) if scale is None else scale),
                mask,
                softcap,
            )
        else:
            attended = scaled_dot_product_attention(
                q, k, v, mask=mask, scale=scale, weights_out=out, softcap=softcap
            )
        concat = merge_heads(attended.output)  # [count, n_q, d_head] -> [n_q, count * d_head]
        found[part] = attended
        for name, piece in (("q", q), ("k", k), ("v", v), ("output", attended.output)):
            joined.put(name, piece, (n_heads, *piece.shape[1:]), heads)  # -> [n_heads, ...]
        if weights_out is None and keep:
            joined.put("weights", attended.weights, (n_heads, *attended.weights.shape[1:]), heads)
        joined.put("concat", concat, (len(concat), n_heads * d_head), (slice(None), f))
        return linear(concat, w_o[f])  # [n_q, count * d_head] -> [n_q, d_model]

    output = in_parts(attend, parts, parallel)
    if b_o is not None:
        output += b_o
    whole = joined.arrays
    weights = weights_out if weights_out is not None or not keep else whole["weights"]
    heads = found[0]._replace(q=whole["q"], k=whole["k"], weights=weights, output=whole["output"])
    return MultiHeadResult(heads.q, heads.k, whole["v"], heads, whole["concat"], output)


@blas.one_thread
def head_projections(
    x,
    w_q,
    w_k,
    w_v,
    n_heads,
    heads=None,
    b_q=None,
    b_k=None,
    b_v=None,
    memory=None,
    rotary=False,
    n_kv_heads=None,
    q_norm=None,
    k_norm=None,
    qk_norm=None,
    qk=None,
    values=True,
    made=None,
    queries=None,
):
    r"""A group of heads' queries, keys and values: :func:`multi_head_attention`'s first step.

    .. math:: q_h = \operatorname{rot}(\operatorname{N}(XW^Q_h + b^Q_h)),\quad
              k_h = \operatorname{rot}(\operatorname{N}(MW^K_{j(h)} + b^K_{j(h)})),\quad
              v_h = MW^V_{j(h)} + b^V_{j(h)}

    The group's columns of the weights in one product each (the queries one a block of
    rows, :func:`engine.blocked.query_blocks`), so a group computed again has the bits of
    the pass that computed it in this group, and a query row those of its block's product.

    Parameters
    ----------
    x, w_q, w_k, w_v, n_heads, b_q, b_k, b_v, memory, rotary, n_kv_heads, q_norm, k_norm,
    qk_norm, qk : as :func:`multi_head_attention` takes them
    heads : slice of the query heads, optional; default all
    values : bool, False projects no values (``v`` None): the weights need none
    made : dict, optional; the keys already made for other groups, by their columns of
        ``W^K``: the same columns, the same product, so reused (and added to)
    queries : int ndarray, optional; the query rows wanted: only their blocks' queries
        are projected (the others' rows are 0). Default all

    Returns
    -------
    q : ndarray of shape (count, n_q, d_head)
    k, v : ndarray of shape (count, n_k, d_head), a shared key/value head repeated
    """
    memory = x if memory is None else memory
    heads = slice(0, n_heads) if heads is None else heads
    d_head = w_q.shape[-1] // n_heads
    kv_of = kv_head_of(n_heads, n_heads if n_kv_heads is None else n_kv_heads)
    rotation = {} if rotary is True else rotary
    f = slice(heads.start * d_head, heads.stop * d_head)  # their columns of W^Q
    count = heads.stop - heads.start
    shared = kv_of[heads]  # the key/value head of each of these query heads
    kv = slice(shared[0] * d_head, (shared[-1] + 1) * d_head)  # their columns of W^K, W^V
    n_kv = shared[-1] - shared[0] + 1
    if qk is not None:  # queries and keys as a pass made them: the values alone, as it did
        v = split_heads(linear(memory, w_v[:, kv], _cut(b_v, kv)), n_kv)
        v = v if n_kv == count else v[shared - shared[0]]  # -> [count, n_k, d_head]
        return qk[0][heads], qk[1][heads], v
    q = split_heads(_queries(x, w_q[:, f], _cut(b_q, f), queries), count)  # [count, n_q, d_head]
    made = {} if made is None else made
    k = made.get((kv.start, kv.stop))
    if k is None:
        k = split_heads(linear(memory, w_k[:, kv], _cut(b_k, kv)), n_kv)  # -> [n_kv, n_k, d_head]
        k = k if q_norm is None else qk_norm(k, k_norm)
        k = rotary_embedding(k, **rotation) if rotary else k
        made[(kv.start, kv.stop)] = k
    v = split_heads(linear(memory, w_v[:, kv], _cut(b_v, kv)), n_kv) if values else None
    if q_norm is not None:  # each head's q and k normalised over d_head (Qwen3, Gemma 3)
        q = qk_norm(q, q_norm)
    if rotary:
        q = rotary_embedding(q, **rotation)
    if n_kv != count:  # grouped-query: each key/value head once per query head reading it
        k = k[shared - shared[0]]  # -> [count, n_k, d_head]
        v = None if v is None else v[shared - shared[0]]
    return q, k, v


def _queries(x, w, b, queries=None):  # [n, d_in] -> [n, d_out]
    """The queries' product ``x @ w + b``, a block of rows at a time (:func:`query_blocks`).

    With ``queries``, the blocks holding those rows alone (the rest 0): a block's product
    computed again has its bits, where one row's own product may round differently.
    """
    blocks = query_blocks(len(x))
    if len(blocks) == 1:
        return linear(x, w, b)
    if queries is not None:
        starts = np.array([block.start for block in blocks])
        wanted = np.unique(np.searchsorted(starts, queries, side="right") - 1)
        blocks = [blocks[i] for i in wanted]
    out = np.zeros((len(x), w.shape[-1]), dtype=np.result_type(x, w, np.float32))
    for rows in blocks:
        out[rows] = linear(x[rows], w, b)
    return out


def _cut(bias, features):
    return None if bias is None else bias[features]


class Links(NamedTuple):
    """The cells of some heads' attention maps whose weight reaches a threshold.

    Attributes
    ----------
    head, query, key : int ndarrays of shape (n_links,)
        Where each link is: its head (an index into the heads given), row and column.
    weight : ndarray of shape (n_links,)
    considered : int
        Cells looked at (heads × queries × keys).
    omitted_mass : float
        The share of the attention those cells hold that the links leave out, in [0, 1].
    """

    head: np.ndarray
    query: np.ndarray
    key: np.ndarray
    weight: np.ndarray
    considered: int
    omitted_mass: float


def strong_links(weights, threshold, queries=None):  # [n_heads, n_q, n_k] -> Links
    r"""The links the line view draws: every weight ``a_{h,ij} ≥ threshold``.

    .. math:: L = \{(h, i, j) : a_{h,ij} \ge \tau\}

    Each row of a softmax sums to 1, so a row holds at most ``1/τ`` such links: the line
    view stays drawable at any length, and ``omitted_mass`` says how much of the
    attention the lines leave out.

    Parameters
    ----------
    weights : ndarray of shape (n_heads, n_q, n_k)
    threshold : float
    queries : sequence of int, optional
        Only these rows (the line view's chosen token); all by default.

    Returns
    -------
    Links, ordered by head, then query, then key
    """
    weights = np.asarray(weights)
    if queries is not None:
        rows = np.asarray(queries, dtype=np.intp).reshape(-1)
        picked = weights[:, rows]  # -> [n_heads, len(queries), n_k]
    else:
        rows, picked = np.arange(weights.shape[1]), weights
    head, row, key = np.nonzero(picked >= threshold)
    weight = picked[head, row, key]
    total = float(picked.sum(dtype=np.float64))
    omitted = 0.0 if total == 0 else max(0.0, 1.0 - float(weight.sum(dtype=np.float64)) / total)
    return Links(head, rows[row], key, weight, int(picked.size), omitted)
