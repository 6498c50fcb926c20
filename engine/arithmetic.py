"""Attention worked out by hand: one query's stages and one cell's arithmetic, step by step.

``a_ij = exp(s q_i · k_j + M_ij - m_i) / Σ_j' exp(s q_i · k_j' + M_ij' - m_i)`` (Vaswani
et al. 2017, eq. 1, with the softmax's shift by the row's maximum, :func:`engine.scores.softmax`):
what the neuron view draws of one query against every key (:func:`query_stages`, after
BertViz's neuron view, Vig 2019) and what a clicked cell of a heatmap shows
(:func:`cell_arithmetic`). Each runs the row through the same functions as
:func:`engine.attention.scaled_dot_product_attention`, so its weights are the matrix
form's to the last bit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine import blas
from engine.attention import scaled_dot_product_attention
from engine.scores import soft_cap, softmax

__all__ = ["CellArithmetic", "QueryStages", "cell_arithmetic", "query_stages"]


class QueryStages(NamedTuple):
    """One query against every key, stage by stage (the neuron view).

    Attributes
    ----------
    product : ndarray of shape (n_k, d_k), ``q ⊙ k_j`` for each key
    scores : ndarray of shape (n_k,), ``q · k_j``, the row sums of ``product``
    scaled : ndarray of shape (n_k,)
    weights : ndarray of shape (n_k,)
    scale : float
    softcap : float or None, the soft cap in ``scaled`` (Gemma 2), or None
    """

    product: np.ndarray
    scores: np.ndarray
    scaled: np.ndarray
    weights: np.ndarray
    scale: float
    softcap: float | None = None


def query_stages(q, k, scale=None, softcap=None):
    r"""Every stage of one row of attention, down to the elementwise products.

    .. math:: a_j = \operatorname{softmax}_j\Bigl(s \sum_f q_f\, k_{j,f}\Bigr)

    Parameters
    ----------
    q : ndarray of shape (d_k,)
    k : ndarray of shape (n_k, d_k)
    scale : float, optional; default ``1/√d_k``
    softcap : float, optional; the scores' soft cap (Gemma 2), applied in ``scaled``

    Returns
    -------
    QueryStages
    """
    q, k = np.asarray(q), np.asarray(k)
    row = scaled_dot_product_attention(q[None, :], k, k, scale=scale, softcap=softcap)
    return QueryStages(k * q, row.scores[0], row.scaled[0], row.weights[0], row.scale, softcap)


class CellArithmetic(NamedTuple):
    """The numbers behind one cell ``(i, j)`` of the weights, step by step.

    Attributes
    ----------
    q : ndarray of shape (d_k,), the query ``q_i``
    k : ndarray of shape (d_k,), the key ``k_j``
    dot : float, ``q_i · k_j``
    scale : float
    scaled : float, ``scale · q_i · k_j``, before the mask
    mask_term : float, ``M_ij``: 0 where key ``j`` is visible to query ``i``, ``-inf`` where
        masked (0 without a mask)
    masked : float, ``capped + M_ij``: the score the softmax reads
    row_max : float, the largest masked score of row ``i``
    shifted : float, ``masked − row_max``
    exp : float, ``exp(shifted)``
    row_sum : float, the sum of ``exp`` over row ``i``
    weight : float, ``exp / row_sum``: the cell's weight
    v : ndarray of shape (d_v,), the value ``v_j`` (None without values)
    contribution : ndarray of shape (d_v,), ``weight · v_j`` (None without values)
    output : ndarray of shape (d_v,), ``o_i = Σ_j a_ij v_j`` (None without values)
    softcap : float or None, the scores' soft cap ``c`` (Gemma 2), or None
    capped : float, ``c tanh(scaled / c)``, before the mask (``scaled`` without a cap)
    """

    q: np.ndarray
    k: np.ndarray
    dot: float
    scale: float
    scaled: float
    mask_term: float
    masked: float
    row_max: float
    shifted: float
    exp: float
    row_sum: float
    weight: float
    v: np.ndarray
    contribution: np.ndarray
    output: np.ndarray
    softcap: float | None = None
    capped: float | None = None


@blas.one_thread
def cell_arithmetic(q, k, v, i, j, scale=None, mask=None, softcap=None):
    r"""One weight of the attention matrix worked out by hand: what a clicked cell shows.

    .. math:: a_{ij} = \frac{e^{s\,q_i \cdot k_j + M_{ij} - m_i}}
              {\sum_{j'} e^{s\,q_i \cdot k_{j'} + M_{ij'} - m_i}},
              \quad m_i = \max_{j'} \left(s\,q_i \cdot k_{j'} + M_{ij'}\right),
              \qquad o_i = \sum_j a_{ij} v_j

    ``M_ij`` is 0 where the mask lets query ``i`` see key ``j`` and ``-inf`` where it does not
    (the causal mask of Vaswani et al. 2017, §3.2.3).

    Row ``i`` goes through :func:`softmax`, so ``weight`` is the same number as the
    cell of :func:`engine.attention.scaled_dot_product_attention`'s weights, to the last bit.

    Parameters
    ----------
    q : ndarray of shape (n_q, d_k)
    k : ndarray of shape (n_k, d_k)
    v : ndarray of shape (n_k, d_v), or None when the values were not kept (the output
        part is then None too)
    i, j : int, the query row and the key column
    scale : float, optional; default ``1/√d_k``
    mask : bool ndarray of shape (n_q, n_k), optional
    softcap : float, optional; the scaled scores soft-capped first (:func:`soft_cap`)

    Returns
    -------
    CellArithmetic
    """
    q, k = np.asarray(q), np.asarray(k)
    if scale is None:
        scale = 1.0 / np.sqrt(q.shape[-1])
    scores = q @ k.T  # [n_q, d_k] @ [d_k, n_k] -> [n_q, n_k], as the matrix form computes it
    scaled = scores[i] * scale  # [n_k]
    row = soft_cap(scaled, softcap)  # Gemma 2's cap, into a new array: scaled is kept
    capped = float(row[j])
    if mask is not None:
        row = np.where(np.asarray(mask, dtype=bool)[i], row, -np.inf)
    weights = softmax(row)
    row_max = float(np.max(row))
    finite = np.isfinite(row_max)
    shifted = row - (row_max if finite else 0.0)  # a fully masked row: all -inf, weights 0
    exps = np.exp(shifted)
    return CellArithmetic(
        q=q[i],
        k=k[j],
        dot=float(scores[i, j]),
        scale=float(scale),
        scaled=float(scaled[j]),
        mask_term=0.0 if np.isfinite(row[j]) else -np.inf,
        masked=float(row[j]),
        row_max=row_max,
        shifted=float(shifted[j]),
        exp=float(exps[j]),
        row_sum=float(np.sum(exps)),
        weight=float(weights[j]),
        v=None if v is None else np.asarray(v)[j],
        contribution=None if v is None else weights[j] * np.asarray(v)[j],
        output=None if v is None else weights @ np.asarray(v),  # [n_k] @ [n_k, d_v] -> [d_v]
        softcap=None if softcap is None else float(softcap),
        capped=capped,
    )
