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
    "rotary_frequencies",
    "sinusoidal_positional_encoding",
]

ENCODINGS = ("none", "sinusoidal", "learned", "rotary")
_BASE = 10000.0


def _frequencies(d, base=_BASE):
    """Angular frequency of each feature pair: ``1 / base^(2i/d)``, shape (ceil(d/2),)."""
    return base ** (-np.arange(0, d, 2) / d)


def sinusoidal_positional_encoding(n_positions, d_model, base=_BASE):
    r"""Fixed sinusoidal encoding (Vaswani et al. 2017, section 3.5).

    .. math:: PE_{pos, 2i} = \sin\!\left(pos / 10000^{2i/d}\right), \quad
              PE_{pos, 2i+1} = \cos\!\left(pos / 10000^{2i/d}\right)

    With another ``base`` (a rotary model's θ, over its d_head) the same table holds the
    sines and cosines of the angles ``pos · θ^{-2i/d}`` by which rotary positions turn
    each feature pair of a query or key.

    Returns
    -------
    ndarray of shape (n_positions, d_model)
    """
    angles = np.arange(n_positions)[:, None] * _frequencies(d_model, base)  # [n, ceil(d/2)]
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


def rotary_frequencies(d, base=_BASE, factor=1.0, llama3=None, dtype=np.float64):
    r"""The angle per position of each feature pair, ``θ_i``, as a checkpoint scales it.

    .. math:: \theta_i = \beta^{-2i/d} / \lambda \quad\text{(linear)};\qquad
              \theta_i' = \begin{cases} \theta_i & L_i < L/h \\
              \theta_i/\lambda & L_i > L/l \\
              (1 - s_i)\,\theta_i/\lambda + s_i\,\theta_i & \text{else},\
              s_i = \frac{L/L_i - l}{h - l} \end{cases}\quad\text{(llama3)}

    Llama 3.x (``rope_scaling`` of type ``llama3``) stretches only the slow pairs: a pair
    whose wavelength ``L_i = 2π/θ_i`` is longer than ``L / l`` (``L`` the
    ``original_max_position_embeddings`` it was trained on, ``l`` the
    ``low_freq_factor``) turns λ times slower, one shorter than ``L / h`` (``h`` the
    ``high_freq_factor``) is kept, and those between are blended, as transformers'
    ``_compute_llama3_parameters`` computes them (Meta's Llama 3.1 release).

    Parameters
    ----------
    d : int, features per head
    base : float, β
    factor : float, λ
    llama3 : (l, h, L), optional; llama3 scaling rather than linear
    dtype : float32 (as transformers computes them) or float64

    Returns
    -------
    ndarray of shape (d // 2,)
    """
    pairs = d // 2
    frequencies = 1.0 / dtype(base) ** (np.arange(0, 2 * pairs, 2, dtype=dtype) / dtype(d))
    if llama3 is None:
        return frequencies / dtype(factor)
    low, high, original = llama3
    wavelength = 2 * np.pi / frequencies
    stretched = np.where(wavelength > original / low, frequencies / factor, frequencies)
    smooth = (original / wavelength - low) / (high - low)
    blended = (1 - smooth) * stretched / factor + smooth * stretched
    medium = (wavelength >= original / high) & (wavelength <= original / low)
    return np.where(medium, blended, stretched).astype(dtype, copy=False)


def rotary_embedding(x, positions=None, base=_BASE, factor=1.0, halves=False, llama3=None):
    r"""Rotate each feature pair of ``x`` by an angle proportional to its position (RoPE).

    .. math:: (x_{a}, x_{b}) \mapsto
              (x_{a}\cos p\theta_i - x_{b}\sin p\theta_i,\;
               x_{a}\sin p\theta_i + x_{b}\cos p\theta_i),
              \quad \theta_i = \frac{\beta^{-2i/d}}{\lambda}

    Rotating queries and keys this way makes ``q_m · k_n`` depend on their positions
    only through ``m - n`` (Su et al. 2021, section 3.4.2). RoFormer pairs neighbouring
    features, ``(a, b) = (2i, 2i+1)``; Llama, Mistral and Qwen2 as transformers stores them
    pair the two halves of each head, ``(a, b) = (i, i + d/2)`` (its ``rotate_half``):
    ``halves``. ``β`` is the base (config.json's ``rope_theta``), ``λ`` the linear
    ``rope_scaling`` factor (positions stretched λ times), or Llama 3.x's, applied to the
    slow pairs only (``llama3``: :func:`rotary_frequencies`). With an odd ``d`` the last
    feature has no partner and is left as it is.

    A float32 ``x`` is rotated in float32, the angles computed as transformers computes
    them (float32 frequencies times float32 positions); anything else in float64.

    Parameters
    ----------
    x : ndarray of shape (..., n, d)
    positions : ndarray of shape (n,), optional; default ``0 … n-1``
    base : float, β
    factor : float, λ
    halves : bool, pair feature ``i`` with ``i + d/2`` rather than ``2i`` with ``2i + 1``
    llama3 : (low_freq_factor, high_freq_factor, original_max_position_embeddings), optional

    Returns
    -------
    ndarray of shape (..., n, d), float32 for a float32 x, else float64
    """
    x = np.asarray(x)
    dtype = np.float32 if x.dtype == np.float32 else np.float64
    x = x.astype(dtype, copy=False)
    n, d = x.shape[-2:]
    positions = np.arange(n) if positions is None else np.asarray(positions)
    pairs = d // 2
    if dtype == np.float64 and base == _BASE and factor == 1.0 and llama3 is None:
        frequencies = _frequencies(d)[:pairs]  # the positional page's numbers, as they were
    else:
        frequencies = rotary_frequencies(d, base, factor, llama3, dtype)
    angles = positions.astype(dtype)[:, None] * frequencies[None, :]  # [n, pairs]
    cos, sin = np.cos(angles), np.sin(angles)
    a, b = (
        (slice(0, pairs), slice(pairs, 2 * pairs))
        if halves
        else (
            slice(0, 2 * pairs, 2),
            slice(1, 2 * pairs, 2),
        )
    )
    first, second = x[..., a], x[..., b]
    out = x.copy()
    out[..., a] = first * cos - second * sin
    out[..., b] = first * sin + second * cos
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
