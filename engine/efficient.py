"""Efficient attention: linear (kernel) attention and sparse attention patterns.

Full softmax attention builds the whole (n, n) matrix, so its time and memory grow as
n². Two ways around it, each checked here against full softmax on the same Q, K, V:

* Linear attention (Katharopoulos et al. 2020, "Transformers are RNNs", sections 3.2
  and 3.3) replaces ``exp(q·k)`` by a kernel ``φ(q)·φ(k)`` with the positive feature
  map ``φ(x) = elu(x) + 1``. Matrix products are associative, so ``φ(K)ᵀV`` (d_k × d_v)
  is formed once and every query reads it: O(n·d_k·d_v) instead of O(n²·d). The
  causal form keeps running sums of ``φ(k_j) v_jᵀ`` and ``φ(k_j)`` instead.
* Sparse patterns (Child et al. 2019, "Generating Long Sequences with Sparse
  Transformers", section 4.3; Beltagy et al. 2020, "Longformer", section 3.1) keep
  softmax but let each query see only some keys: a sliding window, a stride, or its
  block plus one summary column per block.

A note on a formula that circulates in tutorials, ``(Q·(KᵀV)) / (rowsum(Q)·rowsum(K)ᵀ)``:
it is not kernel attention. Without a positive feature map the "weights" ``q·k`` can be
negative and need not sum to anything sensible, and its normaliser is an (n, n) matrix
that does not even broadcast against the (n, d_v) numerator. The normaliser of real
linear attention is one number per query, ``φ(q_i)·Σ_j φ(k_j)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine import blas
from engine.attention import causal_mask, scaled_dot_product_attention

__all__ = [
    "PATTERNS",
    "Pattern",
    "PatternError",
    "attention_patterns",
    "block_sparse_mask",
    "elu_feature_map",
    "linear_attention",
    "linear_attention_weights",
    "pattern_errors",
    "sliding_window_mask",
    "strided_mask",
]

#: The patterns :func:`attention_patterns` returns, in order; the first is the reference.
PATTERNS = ("full softmax", "linear (elu + 1)", "sliding window", "strided", "fixed blocks")

#: Queries per step of the causal form: the (chunk, chunk) block inside a step is the
#: only quadratic piece, so time grows as n·(chunk·d + d²) and memory as chunk².
_CAUSAL_CHUNK = 64


def elu_feature_map(x):
    r"""The feature map of Katharopoulos et al. (2020, section 3.2.1).

    .. math:: \phi(x) = \operatorname{elu}(x) + 1 =
              \begin{cases} x + 1 & x > 0 \\ e^{x} & x \le 0 \end{cases}

    Strictly positive, so every kernel value ``φ(q)·φ(k)`` is positive and a row of
    kernel values normalises to a probability distribution, like a softmax row.

    Parameters
    ----------
    x : ndarray of any shape

    Returns
    -------
    ndarray of the same shape, every entry > 0 (underflows to 0 only below x ≈ -745)
    """
    x = np.asarray(x, dtype=np.float64)
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))  # min: exp never overflows


def linear_attention(q, k, v, causal=False):
    r"""Linear attention (Katharopoulos et al. 2020, sections 3.2 and 3.3), in O(n).

    .. math:: V'_i = \frac{\phi(Q_i)^\top \sum_j \phi(K_j) V_j^\top}
                         {\phi(Q_i)^\top \sum_j \phi(K_j)}

    with ``j`` over all keys, or over ``j <= i`` when ``causal``. Non-causal, the sums
    ``S = φ(K)ᵀV`` (d_k × d_v) and ``z = Σ_j φ(K_j)`` (d_k) are formed once.

    Causal, they become running sums ``S_i = S_{i-1} + φ(K_i) V_iᵀ`` and
    ``z_i = z_{i-1} + φ(K_i)``: the transformer as an RNN whose state is S (section
    3.4). Forming every S_i, as ``cumsum`` over an (n, d_k, d_v) array would, costs
    n·d_k·d_v memory traffic; instead the queries go in chunks of 64. A chunk reads the
    sums S, z of everything before it, adds the prefix inside the chunk through a
    small lower-triangular (64, 64) block ``tril(φ(Q_c) φ(K_c)ᵀ)``, then adds its own
    keys to S and z. Same numbers (up to round-off), O(n) time, O(64² + d_k·d_v) extra
    memory. There is no ``1/√d_k`` scale: the paper applies φ to the raw projections.

    Equals :func:`linear_attention_weights` ``@ v`` up to round-off, without ever
    forming the (n_q, n_k) matrix.

    Parameters
    ----------
    q : ndarray of shape (n_q, d_k)
    k : ndarray of shape (n_k, d_k)
    v : ndarray of shape (n_k, d_v)
    causal : bool
        Query ``i`` sees keys ``j <= i`` only; needs ``n_q == n_k``.

    Returns
    -------
    ndarray of shape (n_q, d_v)
        A row whose normaliser underflowed to 0 (only for features below about -745)
        is all zeros, as a fully masked softmax row is.
    """
    q, k, v = _check_qkv(q, k, v, causal)
    phi_q, phi_k = elu_feature_map(q), elu_feature_map(k)  # [n_q, d_k], [n_k, d_k]
    if not causal:
        kv = phi_k.T @ v  # [d_k, n_k] @ [n_k, d_v] -> [d_k, d_v]
        numerator = phi_q @ kv  # [n_q, d_k] @ [d_k, d_v] -> [n_q, d_v]
        denominator = phi_q @ phi_k.sum(axis=0)  # [n_q, d_k] @ [d_k] -> [n_q]
        return _divide_rows(numerator, denominator)
    n, d_k = phi_k.shape
    state = np.zeros((d_k, v.shape[1]))  # S = Σ_{j < start} φ(k_j) v_jᵀ, [d_k, d_v]
    norm = np.zeros(d_k)  # z = Σ_{j < start} φ(k_j), [d_k]
    output = np.empty((n, v.shape[1]))
    for start in range(0, n, _CAUSAL_CHUNK):
        rows = slice(start, min(start + _CAUSAL_CHUNK, n))
        local = np.tril(phi_q[rows] @ phi_k[rows].T)  # [c, d_k] @ [d_k, c] -> [c, c], j <= i
        numerator = phi_q[rows] @ state + local @ v[rows]  # [c, d_v]: φ(q_i)ᵀ S_i
        denominator = phi_q[rows] @ norm + local.sum(axis=1)  # [c]: φ(q_i)ᵀ z_i
        output[rows] = _divide_rows(numerator, denominator)
        state = state + phi_k[rows].T @ v[rows]  # [d_k, c] @ [c, d_v] -> [d_k, d_v]
        norm = norm + phi_k[rows].sum(axis=0)
    return output


def linear_attention_weights(q, k, causal=False):
    r"""The (n_q, n_k) matrix linear attention applies implicitly, for drawing and testing.

    .. math:: A_{ij} = \frac{\phi(q_i)\cdot\phi(k_j)}{\sum_{j'} \phi(q_i)\cdot\phi(k_{j'})}

    with ``j, j' <= i`` when ``causal``. Quadratic in n: it exists to be looked at,
    while :func:`linear_attention` never builds it.

    Parameters
    ----------
    q : ndarray of shape (n_q, d_k)
    k : ndarray of shape (n_k, d_k)
    causal : bool

    Returns
    -------
    ndarray of shape (n_q, n_k); rows sum to 1 (0 where the normaliser underflowed)
    """
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    _check_qkv(q, k, np.zeros((k.shape[0], 1)), causal)
    kernel = elu_feature_map(q) @ elu_feature_map(k).T  # [n_q, d_k] @ [d_k, n_k] -> [n_q, n_k]
    if causal:
        kernel = np.where(causal_mask(q.shape[0]), kernel, 0.0)
    return _divide_rows(kernel, kernel.sum(axis=1))


def _divide_rows(numerator, denominator):
    """``numerator / denominator[:, None]``, with zero rows where the denominator is 0."""
    return np.divide(
        numerator,
        denominator[:, None],
        out=np.zeros_like(numerator),
        where=denominator[:, None] > 0,
    )


def _check_qkv(q, k, v, causal):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    if q.ndim != 2 or k.ndim != 2 or v.ndim != 2:
        raise ValueError(
            f"q, k and v must be 2-D (tokens × features), got {q.ndim}-D, {k.ndim}-D, {v.ndim}-D"
        )
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"q and k need the same d_k, got {q.shape[1]} and {k.shape[1]}")
    if k.shape[0] != v.shape[0]:
        raise ValueError(f"k and v need the same number of keys, got {k.shape[0]} and {v.shape[0]}")
    if causal and q.shape[0] != k.shape[0]:
        raise ValueError(
            f"causal attention needs as many queries as keys, got {q.shape[0]} and {k.shape[0]}"
        )
    return q, k, v


def _offsets(n):
    """``i - j`` for query ``i`` (row) and key ``j`` (column), shape (n, n)."""
    positions = np.arange(n)
    return positions[:, None] - positions[None, :]


def sliding_window_mask(n, window):
    """Local attention: query ``i`` sees keys ``j`` with ``|i - j| <= window``.

    A band of width ``2·window + 1`` around the diagonal (Longformer's sliding window,
    Beltagy et al. 2020, section 3.1). Combined with the causal mask it keeps
    ``i - window <= j <= i``. The diagonal is always in, so no row is empty.

    Parameters
    ----------
    n : int
    window : int >= 0, keys on each side of the query

    Returns
    -------
    bool ndarray of shape (n, n)
    """
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    return np.abs(_offsets(n)) <= window


def strided_mask(n, stride):
    """Child et al.'s strided pattern: the last ``stride`` keys, and every ``stride``-th one.

    Query ``i`` sees key ``j`` when ``|i - j| <= stride`` or ``(i - j) mod stride = 0``
    (Child et al. 2019, section 4.3: A⁽¹⁾ the previous l positions, A⁽²⁾ every l-th).
    The paper states it for an autoregressive model; combined with the causal mask
    this is exactly its pattern, and without it the pattern is mirrored to both sides.

    Parameters
    ----------
    n : int
    stride : int >= 1, the paper's l (about √n in the paper)

    Returns
    -------
    bool ndarray of shape (n, n)
    """
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    offsets = _offsets(n)
    return (np.abs(offsets) <= stride) | (offsets % stride == 0)


def block_sparse_mask(n, block):
    """Child et al.'s fixed pattern: the query's own block, plus each block's last key.

    Query ``i`` sees key ``j`` when ``⌊i / block⌋ = ⌊j / block⌋`` or
    ``j mod block = block - 1`` (Child et al. 2019, section 4.3, the fixed pattern with
    c = 1 summary column per block). Information crosses blocks only through the
    summary columns. Combined with the causal mask it is the paper's autoregressive form.

    Parameters
    ----------
    n : int
    block : int >= 1, the paper's l

    Returns
    -------
    bool ndarray of shape (n, n)
    """
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    positions = np.arange(n)
    same_block = (positions[:, None] // block) == (positions[None, :] // block)
    summary = np.broadcast_to(positions[None, :] % block == block - 1, (n, n))
    return same_block | summary


class Pattern(NamedTuple):
    """One attention pattern applied to the same Q, K, V.

    Attributes
    ----------
    name : str, one of :data:`PATTERNS`
    weights : ndarray of shape (n, n), rows sum to 1
    output : ndarray of shape (n, d_v)
    mask : bool ndarray of shape (n, n), the pairs the pattern computes
    """

    name: str
    weights: np.ndarray
    output: np.ndarray
    mask: np.ndarray


@blas.one_thread
def attention_patterns(q, k, v, window, stride, causal=False, scale=None):
    """Full softmax, linear attention and three sparse patterns on one head's Q, K, V.

    The sparse patterns are masked softmax with the same scale as the full one (and
    the causal mask on top when ``causal``); linear attention uses φ(q)·φ(k), unscaled.

    Parameters
    ----------
    q, k, v : ndarray of shape (n, d_k), (n, d_k), (n, d_v)
    window : int, for :func:`sliding_window_mask`
    stride : int, the l of :func:`strided_mask` and :func:`block_sparse_mask`
    causal : bool
    scale : float, optional; default ``1/√d_k``

    Returns
    -------
    tuple of Pattern, in the order of :data:`PATTERNS`
    """
    q, k, v = _check_qkv(q, k, v, causal)
    n = q.shape[0]
    allowed = causal_mask(n) if causal else np.ones((n, n), dtype=bool)
    full = scaled_dot_product_attention(q, k, v, mask=allowed, scale=scale)
    patterns = [
        Pattern(PATTERNS[0], full.weights, full.output, allowed),
        Pattern(
            PATTERNS[1],
            linear_attention_weights(q, k, causal=causal),
            linear_attention(q, k, v, causal=causal),
            allowed,
        ),
    ]
    for name, mask in zip(
        PATTERNS[2:],
        (sliding_window_mask(n, window), strided_mask(n, stride), block_sparse_mask(n, stride)),
        strict=True,
    ):
        mask = mask & allowed
        result = scaled_dot_product_attention(q, k, v, mask=mask, scale=full.scale)
        patterns.append(Pattern(name, result.weights, result.output, mask))
    return tuple(patterns)


class PatternError(NamedTuple):
    """How far a pattern's weights and outputs are from the reference's.

    Attributes
    ----------
    name : str
    density : float, fraction of the (query, key) pairs the pattern computes
    weights_mae, weights_max : float, mean and largest |A - A_ref|
    output_mae, output_max : float, mean and largest |out - out_ref|
    output_relative : float, ‖out - out_ref‖_F / ‖out_ref‖_F
    """

    name: str
    density: float
    weights_mae: float
    weights_max: float
    output_mae: float
    output_max: float
    output_relative: float


def pattern_errors(patterns):
    """Each pattern's error against the first (full softmax), one row per pattern.

    Parameters
    ----------
    patterns : sequence of Pattern, the reference first (as :func:`attention_patterns`)

    Returns
    -------
    tuple of PatternError
    """
    reference = patterns[0]
    full_pairs = reference.mask.sum()
    reference_norm = np.linalg.norm(reference.output)
    rows = []
    for pattern in patterns:
        weights_gap = np.abs(pattern.weights - reference.weights)
        output_gap = np.abs(pattern.output - reference.output)
        gap_norm = np.linalg.norm(pattern.output - reference.output)
        rows.append(
            PatternError(
                pattern.name,
                float(pattern.mask.sum() / full_pairs),
                float(weights_gap.mean()),
                float(weights_gap.max()),
                float(output_gap.mean()),
                float(output_gap.max()),
                float(gap_norm / reference_norm) if reference_norm > 0 else float(gap_norm),
            )
        )
    return tuple(rows)
