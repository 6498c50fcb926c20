"""Scores into weights: the softmax and Gemma's soft cap, applied to every row of attention.

``softmax(s · q · kᵀ + M)`` (Vaswani et al. 2017, section 3.2.1, eq. 1): the two row
operations that :mod:`engine.attention` (a whole head), :mod:`engine.blocked` (a long
text's head, a block of query rows at a time) and the pretrained pass share, kept here
so that each imports them and none imports another for them. The soft cap follows the
Gemma 2 report (Gemma Team 2024, section 2) and transformers' eager Gemma.
"""

from __future__ import annotations

import numpy as np

__all__ = ["soft_cap", "softmax"]


def softmax(x, axis=-1, out=None):
    r"""Numerically stable softmax along ``axis``.

    .. math:: \operatorname{softmax}(x)_i = \frac{e^{x_i - m}}{\sum_j e^{x_j - m}},
              \quad m = \max_j x_j

    Subtracting the maximum changes nothing mathematically (it cancels between
    numerator and denominator) but keeps every exponent <= 0, so ``exp`` never
    overflows and the largest term is exactly 1, so the denominator is >= 1.

    A slice that is entirely ``-inf`` (a query whose every key is masked) has no
    valid distribution; it returns all zeros rather than ``0/0 = NaN``, so a fully
    masked row contributes nothing to the output instead of poisoning it.

    Parameters
    ----------
    x : ndarray of any shape, real; ``-inf`` marks excluded entries
    axis : int
    out : floating ndarray of x's shape, optional; receives the result (may be ``x``)

    Returns
    -------
    ndarray of the same shape and a floating dtype; slices sum to 1 (or are all 0)
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    m[~np.isfinite(m)] = 0.0  # all -inf slice: shift by 0, exp gives 0s
    with np.errstate(over="ignore"):  # x - m <= 0 can only overflow to -inf, and exp(-inf) = 0
        e = np.subtract(x, m, out=out)  # the one array written; exp and the division work in it
        np.exp(e, out=e)
    total = np.sum(e, axis=axis, keepdims=True)
    total[total == 0] = 1.0  # an all -inf slice is all 0 already: 0/1 keeps it so, 0/0 is NaN
    e /= total
    return e


def soft_cap(x, cap, out=None):
    r"""Gemma 2's soft-capping (Gemma Team 2024, section 2): ``x`` squashed into ``(-c, c)``.

    .. math:: \operatorname{cap}_c(x) = c \tanh(x / c)

    Near 0 it is ``x``; far out it tends to ``±c``. Gemma 2 caps the scores at 50 and the
    logits at 30; Gemma 3's config.json may set either (``attn_logit_softcapping``,
    ``final_logit_softcapping``). None leaves ``x`` as it is.

    Parameters
    ----------
    x : floating ndarray of any shape
    cap : float or None
    out : ndarray of x's shape, optional; receives the result (may be ``x``)

    Returns
    -------
    ndarray of the same shape
    """
    if cap is None:
        return x
    cap = float(cap)  # a Python float keeps float32 float32
    out = np.divide(x, cap, out=out)
    np.tanh(out, out=out)
    out *= cap
    return out
