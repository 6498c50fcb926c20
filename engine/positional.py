"""Positional encodings: sinusoidal, learned (seeded stand-in), rotary.

Self-attention alone is permutation-equivariant (UDL book, section 12.4.1): shuffle
the tokens and the outputs shuffle the same way. A positional encoding breaks that
symmetry. Sinusoidal encodings follow Vaswani et al. (2017), section 3.5; rotary
encodings (RoPE) follow Su et al. (2021), "RoFormer", section 3.4.2.
"""

from __future__ import annotations

import numpy as np

from engine import blas

__all__ = [
    "ENCODINGS",
    "learned_positional_encoding",
    "position_similarity",
    "rotary_embedding",
    "sinusoidal_positional_encoding",
]

ENCODINGS = ("none", "sinusoidal", "learned", "rotary")
_BASE = 10000.0


def _frequencies(d):
    """Angular frequency of each feature pair: ``1 / 10000^(2i/d)``, shape (ceil(d/2),)."""
    return _BASE ** (-np.arange(0, d, 2) / d)


def sinusoidal_positional_encoding(n_positions, d_model):
    r"""Fixed sinusoidal encoding (Vaswani et al. 2017, section 3.5).

    .. math:: PE_{pos, 2i} = \sin\!\left(pos / 10000^{2i/d}\right), \quad
              PE_{pos, 2i+1} = \cos\!\left(pos / 10000^{2i/d}\right)

    Returns
    -------
    ndarray of shape (n_positions, d_model)
    """
    angles = np.arange(n_positions)[:, None] * _frequencies(d_model)[None, :]  # [n, ceil(d/2)]
    pe = np.empty((n_positions, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d_model // 2])
    return pe


def learned_positional_encoding(n_positions, d_model, seed):
    """A learned position table, stood in for by seeded random vectors.

    A trained model learns this table; here its rows are drawn from N(0, 1) with the
    given seed, which is what such a table looks like before training. Row ``p`` does
    not depend on ``n_positions``, so longer inputs extend the same table.

    Returns
    -------
    ndarray of shape (n_positions, d_model)
    """
    rng = np.random.default_rng([int(seed), 0x9E37])  # its own stream, apart from the weights
    return rng.standard_normal((max(n_positions, 0), d_model))


def rotary_embedding(x, positions=None):
    r"""Rotate each feature pair of ``x`` by an angle proportional to its position (RoPE).

    .. math:: (x_{2i}, x_{2i+1}) \mapsto
              (x_{2i}\cos p\theta_i - x_{2i+1}\sin p\theta_i,\;
               x_{2i}\sin p\theta_i + x_{2i+1}\cos p\theta_i),
              \quad \theta_i = 10000^{-2i/d}

    Rotating queries and keys this way makes ``q_m · k_n`` depend on their positions
    only through ``m - n``. With an odd ``d`` the last feature has no partner and is
    left as it is.

    Parameters
    ----------
    x : ndarray of shape (..., n, d)
    positions : ndarray of shape (n,), optional; default ``0 … n-1``

    Returns
    -------
    ndarray of shape (..., n, d)
    """
    x = np.asarray(x, dtype=float)
    n, d = x.shape[-2:]
    positions = np.arange(n) if positions is None else np.asarray(positions)
    pairs = d // 2
    angles = positions[:, None] * _frequencies(d)[None, :pairs]  # [n, pairs]
    cos, sin = np.cos(angles), np.sin(angles)
    even, odd = x[..., 0 : 2 * pairs : 2], x[..., 1 : 2 * pairs : 2]
    out = x.copy()
    out[..., 0 : 2 * pairs : 2] = even * cos - odd * sin
    out[..., 1 : 2 * pairs : 2] = even * sin + odd * cos
    return out


@blas.one_thread
def position_similarity(pe):
    """Cosine similarity between every pair of position vectors.

    Parameters
    ----------
    pe : ndarray of shape (n_positions, d_model)

    Returns
    -------
    ndarray of shape (n_positions, n_positions), entries in [-1, 1]
    """
    norms = np.linalg.norm(pe, axis=1, keepdims=True)
    unit = np.divide(pe, norms, out=np.zeros_like(pe), where=norms > 0)
    return unit @ unit.T  # [n, d] @ [d, n] -> [n, n]
