"""Attention a block of query rows at a time: a long text's heads, never all their weights.

``O_B = softmax(s · Q_B Kᵀ + M_B) V`` for each block ``B`` of query rows, the
scaled dot-product attention of Vaswani et al. (2017, eq. 1) row by row: a softmax is
over one row, so a block of whole rows, cut to the keys any of them may see, gives each
row's weights exactly (a row is never split). Up to :data:`WHOLE_ROWS` queries a head
is one block, with the bits of :func:`engine.attention.scaled_dot_product_attention`;
beyond, :data:`BLOCK_ROWS` rows at a time, so a head's ``n × n`` weights need never be
held. :func:`engine.attention.multi_head_attention` runs its heads through
:func:`blocked_attention` for a long text; :func:`attention_rows` computes some rows of
them again, to the same bits, when a view reads them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine import blas
from engine.scores import soft_cap

__all__ = ["BLOCK_ROWS", "WHOLE_ROWS", "attention_rows", "blocked_attention", "query_blocks"]


#: A head over at most this many queries is computed whole, as
#: :func:`engine.attention.scaled_dot_product_attention` computes it (MiniLM's 512 tokens,
#: to its bits).
WHOLE_ROWS = 512


#: Beyond, its weights are computed this many query rows at a time: a block's scores and
#: weights stay in a core's cache, and a long text's peak stays bounded
#: (docs/benchmarks.md).
BLOCK_ROWS = 128


#: What a masked score is set to in a block: ``exp`` makes it exactly 0, as ``-inf``, but
#: times a weight of 0 it is 0 rather than NaN (the entropy's sum).
_HIDDEN = np.float32(-1e30)


def query_blocks(n):
    """The blocks of query rows a head's weights are computed in: one, or of :data:`BLOCK_ROWS`.

    A function of ``n`` alone, so a head computed again (:func:`attention_rows`) has the
    pass's bits.
    """
    size = n if n <= WHOLE_ROWS else BLOCK_ROWS
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


class _Block(NamedTuple):
    """What one block of query rows may see: the same for every head of a layer."""

    rows: slice
    keys: slice  # the keys any of the rows sees: the rest are 0 in every row
    hidden: tuple | None  # (columns, bool mask): masked scores within ``keys``
    empty: np.ndarray | None  # rows that see no key (all 0), or None
    distances: np.ndarray | None  # |i - j| over rows × keys, None when every key is <= its row


def _blocks(mask, n_q, n_k, blocks=None):
    """Each block's keys and masked cells, computed once for all heads of a layer."""
    out = []
    for rows in query_blocks(n_q) if blocks is None else blocks:
        keys, hidden, empty, causal = slice(0, n_k), None, None, False
        if mask is not None:
            seen = mask[rows]  # [b, n_k]
            columns = np.flatnonzero(seen.any(axis=0))
            keys = slice(columns[0], columns[-1] + 1) if len(columns) else slice(0, 1)
            masked = ~seen[:, keys]
            cut = np.flatnonzero(masked.any(axis=0))
            if len(cut):
                where = slice(cut[0], cut[-1] + 1)
                hidden = (where, masked[:, where])
            none = ~seen.any(axis=1)
            empty = none if none.any() else None
            # no key after its query: row r is query rows.start + r, column c key keys.start + c
            causal = n_q == n_k and not np.triu(seen[:, keys], rows.start + 1 - keys.start).any()
        distances = None
        if not causal:
            i = np.arange(rows.start, rows.stop, dtype=np.float32)[:, None]
            distances = np.abs(i - np.arange(keys.start, keys.stop, dtype=np.float32))
        out.append(_Block(rows, keys, hidden, empty, distances))
    return out


def _block_weights(q, k, block, scale, softcap, scratch, picked=None):
    """One head's weights over a block's rows and keys, as the whole softmax computes them.

    Returns the weights, the shifted scores ``x - max`` and the rows' sums of ``exp``,
    each a view of ``scratch`` (two buffers, reused block after block). With ``picked``
    (rows of the block, an int array), only those rows' weights: the scores are the
    whole block's product (a row's own product need not have its bits), the rest is
    done row by row, so the same bits for a fraction of the softmax.
    """
    b, n_k = block.rows.stop - block.rows.start, block.keys.stop - block.keys.start
    shifted = scratch[0][: b * n_k].reshape(b, n_k)
    np.matmul(q[block.rows], k[block.keys].T, out=shifted)  # the scores, [b, n_k]
    if picked is not None:  # -> [m, n_k]: the rows asked for
        b, shifted = len(picked), shifted[picked]
    shifted *= scale
    soft_cap(shifted, softcap, out=shifted)
    if block.hidden is not None:
        columns, masked = block.hidden
        masked = masked if picked is None else masked[picked]
        np.copyto(shifted[:, columns], _HIDDEN, where=masked)
    shifted -= np.max(shifted, axis=-1, keepdims=True)  # every exponent <= 0
    weights = np.exp(shifted, out=scratch[1][: b * n_k].reshape(b, n_k))
    total = np.sum(weights, axis=-1, keepdims=True)
    weights /= total
    if block.empty is not None:  # a row that sees nothing: 0, as softmax gives it
        weights[block.empty if picked is None else block.empty[picked]] = 0.0
    return weights, shifted, total


@blas.one_thread
def blocked_attention(
    q,
    k,
    v,
    mask=None,
    scale=None,
    softcap=None,
    weights_out=None,
    summaries=None,
    heads=None,
    blocks=None,
):
    r"""Scaled dot-product attention a block of query rows at a time, and what each head does.

    .. math:: O_{B} = \operatorname{softmax}\!\left(s\,Q_B K^\top + M_B\right)V
              \quad\text{for each block } B \text{ of query rows}

    Each row's softmax is the whole one's: a block holds whole rows, cut to the keys any
    of its rows may see (the others' weights are 0). Up to :data:`WHOLE_ROWS` queries a
    head is one block, and its weights and output have the bits of
    :func:`engine.attention.scaled_dot_product_attention`; beyond, :data:`BLOCK_ROWS` rows
    at a time, so a head's ``n × n`` weights need never be held: ``summaries`` takes what
    the views draw from each block (:class:`engine.summaries.SummarySums`) and
    ``weights_out`` keeps the weights where wanted. A query that sees no key gets weights 0
    and output 0.

    Parameters
    ----------
    q : ndarray of shape (n_heads, n_q, d_k)
    k : ndarray of shape (n_heads, n_k, d_k)
    v : ndarray of shape (n_heads, n_k, d_v)
    mask : bool ndarray of shape (n_q, n_k), optional; True where a query sees a key
    scale : float, optional; default ``1/√d_k``
    softcap : float, optional
    weights_out : ndarray of shape (n_heads, n_q, n_k), optional; receives the weights
    summaries : engine.summaries.SummarySums, optional; receives each block's summaries
    heads : sequence of int, optional; each head's index in ``summaries``
    blocks : the blocks :func:`_blocks` makes of the mask, optional: made once for a
        layer's heads

    Returns
    -------
    output : ndarray of shape (n_heads, n_q, d_v)
    """
    n_heads, n_q, d_k = q.shape
    n_k = k.shape[-2]
    scale = float(1.0 / np.sqrt(d_k) if scale is None else scale)
    mask = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), (n_q, n_k))
    dtype = np.result_type(q.dtype, k.dtype, np.float32)
    blocks = _blocks(mask, n_q, n_k) if blocks is None else blocks
    size = max((b.rows.stop - b.rows.start) * (b.keys.stop - b.keys.start) for b in blocks)
    scratch = (np.empty(size, dtype=dtype), np.empty(size, dtype=dtype))
    output = np.empty((n_heads, n_q, v.shape[-1]), dtype=np.result_type(dtype, v.dtype))
    heads = range(n_heads) if heads is None else heads
    for block in blocks:
        for h, head in enumerate(heads):
            weights, shifted, total = _block_weights(q[h], k[h], block, scale, softcap, scratch)
            np.matmul(weights, v[h, block.keys], out=output[h, block.rows])
            if weights_out is not None:
                row = weights_out[h, block.rows]
                row[:, : block.keys.start] = 0.0
                row[:, block.keys] = weights
                row[:, block.keys.stop :] = 0.0
            if summaries is not None:
                summaries.add(head, block, weights, shifted, total)
    return output


@blas.one_thread
def attention_rows(q, k, queries, mask=None, scale=None, softcap=None):
    """Rows ``queries`` of each head's weights, to the bits of :func:`blocked_attention`'s.

    Only the blocks (:func:`query_blocks`) that hold a row asked for are computed: each
    one's scores (one product, as the pass made it: a row's own product may round
    differently), then the softmax of the rows asked for alone.

    Parameters
    ----------
    q : ndarray of shape (n_heads, n_q, d_k)
    k : ndarray of shape (n_heads, n_k, d_k)
    queries : int ndarray of shape (m,), rows in [0, n_q)
    mask, scale, softcap : as :func:`blocked_attention` takes them

    Returns
    -------
    ndarray of shape (n_heads, m, n_k)
    """
    n_heads, n_q, d_k = q.shape
    n_k = k.shape[-2]
    queries = np.asarray(queries, dtype=np.intp).reshape(-1)
    scale = float(1.0 / np.sqrt(d_k) if scale is None else scale)
    mask = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), (n_q, n_k))
    every = query_blocks(n_q)
    starts = np.array([b.start for b in every])
    wanted = np.unique(np.searchsorted(starts, queries, side="right") - 1)
    blocks = _blocks(mask, n_q, n_k, [every[i] for i in wanted])
    dtype = np.result_type(q.dtype, k.dtype, np.float32)
    out = np.zeros((n_heads, len(queries), n_k), dtype=dtype)
    size = max((b.rows.stop - b.rows.start) * (b.keys.stop - b.keys.start) for b in blocks)
    scratch = (np.empty(size, dtype=dtype), np.empty(size, dtype=dtype))
    for block in blocks:
        inside = np.flatnonzero((queries >= block.rows.start) & (queries < block.rows.stop))
        picked, back = np.unique(queries[inside] - block.rows.start, return_inverse=True)
        if len(picked) == block.rows.stop - block.rows.start:
            picked = None  # every row: the block as the pass computes it
        for h in range(n_heads):
            weights, _, _ = _block_weights(q[h], k[h], block, scale, softcap, scratch, picked)
            out[h, inside, block.keys] = weights[back.reshape(-1)]
    return out
