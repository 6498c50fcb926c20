"""How saturated a softmax is: the numbers behind "watch the softmax saturate".

As the scale that multiplies ``q · kᵀ`` grows, each row of weights moves from uniform
towards one-hot on its largest score. Entropy falls from ``log₂ n_k`` to 0, the
largest weight rises to 1, the effective number of attended keys ``2^H`` falls from
``n_k`` to 1, and the softmax Jacobian ``diag(p) − p pᵀ`` shrinks to zero — which is
why unscaled dot products in high dimensions starve training of gradient
(Vaswani et al. 2017, footnote 4; UDL book, section 12.3.3).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "SaturationStats",
    "entropy_bits",
    "saturation",
    "saturation_sweep",
    "softmax_jacobian_norm",
]


def entropy_bits(p, axis=-1):
    r"""Shannon entropy of each distribution, in bits: :math:`H = -\sum_j p_j \log_2 p_j`.

    ``0 · log 0`` counts as 0, so masked keys (weight exactly 0) add nothing. A weight
    over 1/2 has its term from the others' sum r, as ``-(1 - r) log₂(1 - r)``: near
    one-hot the weight itself carries r only to its last bits, and once r < 1e-16 it
    rounds to 1 and its term, about r / ln 2 and 1-3 % of the entropy, is lost.

    Parameters
    ----------
    p : ndarray of shape (..., n_k), rows summing to 1

    Returns
    -------
    ndarray of shape (...)
    """
    p = np.moveaxis(np.asarray(p, dtype=float), axis, -1)
    terms = p * np.log2(p, out=np.zeros_like(p), where=p > 0)
    if p.shape[-1]:
        top = np.argmax(p, axis=-1)[..., None]
        largest = np.take_along_axis(p, top, axis=-1)
        rest = np.sum(np.where(np.arange(p.shape[-1]) == top, 0.0, p), axis=-1, keepdims=True)
        from_rest = (1.0 - rest) * np.log1p(-np.minimum(rest, 0.5)) / np.log(2.0)  # r < 1/2
        kept = np.take_along_axis(terms, top, axis=-1)
        np.put_along_axis(terms, top, np.where(largest > 0.5, from_rest, kept), axis=-1)
    return np.maximum(-np.sum(terms, axis=-1), 0.0)  # clamp -0.0 and round-off below 0


def softmax_jacobian_norm(p, axis=-1):
    r"""Frobenius norm of the softmax Jacobian ``J = diag(p) − p pᵀ`` of each row.

    .. math:: \lVert J \rVert_F^2 = \sum_j p_j^2 - 2\sum_j p_j^3 + \Bigl(\sum_j p_j^2\Bigr)^2

    Equal to ``√(n−1)/n`` for a uniform row over ``n`` keys and 0 for a one-hot row.

    Computed as :math:`\sum_j p_j^2\bigl((1-p_j)^2 + \sum_{k \ne j} p_k^2\bigr)`: the
    closed form above subtracts numbers near 1 and loses everything once a row is
    nearly one-hot (it returns 0 where the norm is 5e-9), the very regime this measures.

    Parameters
    ----------
    p : ndarray of shape (..., n_k)

    Returns
    -------
    ndarray of shape (...)
    """
    p = np.moveaxis(np.asarray(p, dtype=float), axis, -1)
    if p.shape[-1] == 0:
        return np.zeros(p.shape[:-1])
    is_top = np.arange(p.shape[-1]) == np.argmax(p, axis=-1)[..., None]  # [..., n_k]
    rest = np.where(is_top, 0.0, p)  # every weight but the largest
    # 1 − p_j and Σ_{k≠j} p_k² without cancellation: for the largest weight, sum the
    # others; any other weight is at most 1/2, so subtracting it loses nothing.
    complement = np.where(is_top, np.sum(rest, axis=-1, keepdims=True), 1.0 - p)
    others_sq = np.where(
        is_top, np.sum(rest**2, axis=-1, keepdims=True), np.sum(p**2, axis=-1, keepdims=True) - p**2
    )
    return np.sqrt(np.sum(p**2 * (complement**2 + others_sq), axis=-1))


class SaturationStats(NamedTuple):
    """Per-row saturation of a weights matrix; each array has shape (...,) (one per query).

    Attributes
    ----------
    entropy : entropy in bits
    max_weight : the largest weight in the row
    effective_tokens : ``2^entropy``, the number of keys a uniform row with that
        entropy would spread over
    jacobian_norm : Frobenius norm of ``diag(p) − p pᵀ``; None when not asked for (it
        costs as much as the three others together)
    """

    entropy: np.ndarray
    max_weight: np.ndarray
    effective_tokens: np.ndarray
    jacobian_norm: np.ndarray


def saturation(weights, jacobian=True):
    """Saturation statistics of each row of ``weights``.

    Parameters
    ----------
    weights : ndarray of shape (..., n_q, n_k)
    jacobian : bool, whether to compute ``jacobian_norm`` (else None)

    Returns
    -------
    SaturationStats with arrays of shape (..., n_q)
    """
    weights = np.asarray(weights, dtype=float)
    entropy = entropy_bits(weights)
    return SaturationStats(
        entropy=entropy,
        max_weight=np.max(weights, axis=-1),
        effective_tokens=np.exp2(entropy),
        jacobian_norm=softmax_jacobian_norm(weights) if jacobian else None,
    )


def saturation_sweep(scores, scales, mask=None, jacobian=True):
    """Mean saturation over the query rows of ``softmax(scale · scores)`` for each scale.

    Rows that the mask leaves with no key are left out of the means.

    Parameters
    ----------
    scores : ndarray of shape (n_q, n_k)
        Raw dot products ``q · kᵀ``.
    scales : ndarray of shape (n_s,)
    mask : bool ndarray of shape (n_q, n_k), optional
    jacobian : bool, whether to compute ``jacobian_norm`` (else None)

    Returns
    -------
    SaturationStats with arrays of shape (n_s,)
    """
    scores = np.asarray(scores, dtype=float)
    scales = np.asarray(scales, dtype=float)
    live = np.ones(scores.shape[0], dtype=bool) if mask is None else np.any(mask, axis=-1)
    scores = scores[live]
    keep = None if mask is None else np.asarray(mask)[live]
    # softmax's e^(x - m), m the row's largest x = scale · score: scale · (score - the
    # row's largest score) for a scale >= 0, its smallest for a negative one. That key's
    # term is exactly 1 and is counted apart: the others sum to S - 1 without the rounding
    # of adding them to 1, so log S = log1p(S - 1) keeps an almost one-hot row's entropy.
    allowed = scores if keep is None else np.where(keep, scores, np.nan)
    rows = np.arange(len(scores))
    shifted = np.empty((scales.size, *scores.shape))
    tops = np.empty((scales.size, len(scores)), dtype=np.intp)  # [n_s, n_live]: that key
    for side, pick in ((scales >= 0, np.nanargmax), (scales < 0, np.nanargmin)):
        if side.any():
            top = pick(allowed, axis=-1)
            gaps = scores - scores[rows, top][:, None]
            if keep is not None:
                gaps[~keep] = 0.0  # its term is zeroed below, and 0 · gap adds nothing
            shifted[side] = scales[side, None, None] * gaps
            tops[side] = top
    e = np.exp(shifted)
    if keep is not None:
        e *= keep
    largest = (np.arange(scales.size)[:, None], rows, tops)
    e[largest] = 0.0
    rest = np.sum(e, axis=-1)  # [n_s, n_live]: S - 1
    total = 1.0 + rest
    # H = -Σ p log p = log S + Σ p (m - x), two sums of non-negative terms (no
    # cancellation, however one-hot the row), and no logarithm of every weight.
    spread = -np.einsum("srk,srk->sr", e, shifted) / total
    entropy = np.maximum((np.log1p(rest) + spread) / np.log(2.0), 0.0)
    jacobian_norm = None
    if jacobian:
        weights = e / total[..., None]
        weights[largest] = 1.0 / total
        jacobian_norm = softmax_jacobian_norm(weights)
    stats = (entropy, 1.0 / total, np.exp2(entropy), jacobian_norm)
    return SaturationStats(*(None if field is None else field.mean(axis=-1) for field in stats))
