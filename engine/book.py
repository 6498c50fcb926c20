"""Self-attention in the textbook's column convention (Prince, Understanding Deep Learning, ch. 12).

Inputs are the columns of a ``D × N`` matrix ``X``; queries, keys and values carry
biases ``β``; the softmax runs down each column of ``KᵀQ``. This is the notebook
``12_1_Self_Attention`` (``shared/seeds/udl-chapter12-self-attention-notebook.txt``)
worked out, loop form and matrix form, with its seeded set-up reproduced draw for
draw so the printed results can be checked. The same numbers in the papers' row
convention come from :mod:`engine.attention`, transposed.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine.scores import softmax

__all__ = [
    "NOTEBOOK_X_PRIME",
    "SelfAttentionStages",
    "multihead_self_attention",
    "notebook_setup",
    "self_attention",
    "self_attention_loop",
    "self_attention_stages",
    "softmax_cols",
]

#: The unscaled outputs x′₀, x′₁, x′₂ the notebook prints as the true values.
NOTEBOOK_X_PRIME = np.array(
    [
        [0.94744244, -0.24348429, -0.91310441, -0.44522983],
        [1.64201168, -0.08470004, 4.02764044, 2.18690791],
        [1.61949281, -0.06641533, 3.96863308, 2.15858316],
    ]
).T  # [N, D] as printed -> [D, N], one output per column


def notebook_setup():
    """The notebook's inputs and parameters, drawn exactly as it draws them.

    ``np.random.seed(3)`` then three ``normal(size=(D, 1))`` draws, one column at a
    time (N=3, D=4); then ``np.random.seed(0)`` and ω_q, ω_k, ω_v (D×D), β_q, β_k,
    β_v (D×1) in that order. A private ``RandomState`` gives the same stream as the
    notebook's global seed without touching global state.

    Returns
    -------
    X : ndarray of shape (D, N)
    params : dict with keys omega_v, omega_q, omega_k, beta_v, beta_q, beta_k
    """
    n, d = 3, 4
    rng = np.random.RandomState(3)
    X = np.hstack([rng.normal(size=(d, 1)) for _ in range(n)])  # N draws of [D, 1] -> [D, N]
    rng = np.random.RandomState(0)
    omega_q, omega_k, omega_v = (rng.normal(size=(d, d)) for _ in range(3))
    beta_q, beta_k, beta_v = (rng.normal(size=(d, 1)) for _ in range(3))
    params = {
        "omega_v": omega_v,
        "omega_q": omega_q,
        "omega_k": omega_k,
        "beta_v": beta_v,
        "beta_q": beta_q,
        "beta_k": beta_k,
    }
    return X, params


def softmax_cols(data):
    """Softmax applied independently to each column (book eq. 12.5, matrix form).

    Parameters
    ----------
    data : ndarray of shape (N, N)

    Returns
    -------
    ndarray of shape (N, N), each column non-negative and summing to one
    """
    return softmax(data, axis=0)


class SelfAttentionStages(NamedTuple):
    """Every matrix of book eqs. 12.6–12.9 (column convention).

    Attributes
    ----------
    Q, K, V : ndarray of shape (D_q, N), (D_q, N), (D_v, N)
    dot : ndarray of shape (N, N)
        ``KᵀQ``; entry ``[m, n]`` is ``k_m · q_n``.
    scaled : ndarray of shape (N, N)
        ``dot`` divided by ``√D_q`` when scaled, else ``dot``.
    attention : ndarray of shape (N, N)
        Column ``n`` holds the weights ``a[x_m, x_n]`` output ``n`` gives each value.
    X_prime : ndarray of shape (D_v, N)
    """

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    dot: np.ndarray
    scaled: np.ndarray
    attention: np.ndarray
    X_prime: np.ndarray


def self_attention_stages(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k, scaled=False):
    r"""Self-attention in matrix form, returning every intermediate (book eqs. 12.6–12.9).

    .. math:: \mathbf{Sa}[\mathbf{X}] = \mathbf{V}\cdot
              \mathbf{Softmax}\!\left[\mathbf{K}^T\mathbf{Q} / \sqrt{D_q}\right],
              \quad \mathbf{V} = \boldsymbol\beta_v\mathbf{1}^T + \boldsymbol\Omega_v\mathbf{X}
              \ \text{(likewise } \mathbf{Q}, \mathbf{K}\text{)}

    The ``/√D_q`` (eq. 12.9) applies only when ``scaled`` is true.

    Parameters
    ----------
    X : ndarray of shape (D, N)
    omega_v : ndarray of shape (D_v, D); omega_q, omega_k : ndarray of shape (D_q, D)
    beta_v : ndarray of shape (D_v, 1); beta_q, beta_k : ndarray of shape (D_q, 1)
    scaled : bool

    Returns
    -------
    SelfAttentionStages
    """
    V = beta_v + omega_v @ X  # [D_v, D] @ [D, N] -> [D_v, N]; β broadcasts as β1ᵀ
    Q = beta_q + omega_q @ X  # -> [D_q, N]
    K = beta_k + omega_k @ X  # -> [D_q, N]
    dot = K.T @ Q  # [N, D_q] @ [D_q, N] -> [N, N]
    scaled_dot = dot / np.sqrt(Q.shape[0]) if scaled else dot
    attention = softmax_cols(scaled_dot)
    return SelfAttentionStages(Q, K, V, dot, scaled_dot, attention, V @ attention)


def self_attention(X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k, scaled=False):
    """Self-attention in matrix form (book eq. 12.8, or 12.9 when ``scaled``).

    Parameters
    ----------
    X : ndarray of shape (D, N)
    (the parameters as in :func:`self_attention_stages`)

    Returns
    -------
    ndarray of shape (D_v, N)
    """
    return self_attention_stages(
        X, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k, scaled=scaled
    ).X_prime


def self_attention_loop(all_x, omega_v, omega_q, omega_k, beta_v, beta_q, beta_k, scaled=False):
    """Self-attention one input at a time, as the notebook's first exercise builds it.

    Book eqs. 12.2–12.5: a query, key and value per input; for output ``n`` the dot
    product of its query with every key, a softmax over them, and the weighted sum
    of the values.

    Parameters
    ----------
    all_x : list of N ndarrays of shape (D, 1)
    (the parameters as in :func:`self_attention_stages`)

    Returns
    -------
    attentions : list of N ndarrays of shape (N,); attentions[n][m] = a[x_m, x_n]
    all_x_prime : list of N ndarrays of shape (D_v, 1)
    """
    queries = [beta_q + omega_q @ x for x in all_x]
    keys = [beta_k + omega_k @ x for x in all_x]
    values = [beta_v + omega_v @ x for x in all_x]
    d_q = queries[0].shape[0]
    attentions, all_x_prime = [], []
    for query in queries:
        dots = np.array([(key.T @ query).item() for key in keys])  # k_m · q_n
        if scaled:
            dots = dots / np.sqrt(d_q)
        attention = softmax(dots)
        attentions.append(attention)
        all_x_prime.append(sum(a * value for a, value in zip(attention, values, strict=True)))
    return attentions, all_x_prime


def multihead_self_attention(X, heads, omega_c):
    r"""Multi-head self-attention in the column convention (book eq. 12.10).

    .. math:: \mathbf{MhSa}[\mathbf{X}] = \boldsymbol\Omega_c
              \left[\mathbf{Sa}_1[\mathbf{X}]^T, \dots, \mathbf{Sa}_H[\mathbf{X}]^T\right]^T

    Each head is scaled dot-product self-attention with its own parameters, scaled by
    ``√(D/H)``; head outputs are stacked vertically in order, then mixed by ``Ω_c``.

    Parameters
    ----------
    X : ndarray of shape (D, N)
    heads : list of H dicts with keys omega_q, omega_k, omega_v (each (D/H, D)) and
        beta_q, beta_k, beta_v (each (D/H, 1))
    omega_c : ndarray of shape (D, D)

    Returns
    -------
    ndarray of shape (D, N)
    """
    d = X.shape[0]
    if not heads or d % len(heads):
        raise ValueError(f"the number of heads ({len(heads)}) must divide D={d}")
    stacked = np.vstack([self_attention(X, **head, scaled=True) for head in heads])  # -> [D, N]
    return omega_c @ stacked  # [D, D] @ [D, N] -> [D, N]
