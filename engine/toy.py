"""The toy model the explainer pages run: seeded embeddings and weights, one attention layer.

Nothing here is trained. Embeddings are random but fixed per token string, so the same
token gets the same vector in every sentence and session; weights are random but fixed
per seed. What the pages show is therefore the mechanism, not learned meaning (the
pretrained page shows that).
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

import numpy as np

from engine import blas
from engine.attention import MultiHeadResult, causal_mask, multi_head_attention
from engine.positional import (
    ENCODINGS,
    learned_positional_encoding,
    sinusoidal_positional_encoding,
)

__all__ = [
    "ToyRun",
    "ToyWeights",
    "permutation_error",
    "positional_table",
    "random_permutation",
    "run_toy",
    "token_embeddings",
    "toy_weights",
]


def _token_rng(token, seed):
    """A generator seeded by the seed and the token's text alone (not its position)."""
    digest = hashlib.blake2b(f"{int(seed)}\x00{token}".encode(), digest_size=16).digest()
    return np.random.default_rng(np.frombuffer(digest, dtype=np.uint32))


def token_embeddings(tokens, d_model, seed):
    """One N(0, 1) vector per token, fixed by the token string and the seed.

    Parameters
    ----------
    tokens : list of str, length n
    d_model : int
    seed : int

    Returns
    -------
    ndarray of shape (n, d_model)
    """
    table = {token: _token_rng(token, seed).standard_normal(d_model) for token in set(tokens)}
    return np.array([table[token] for token in tokens]).reshape(len(tokens), d_model)


class ToyWeights(NamedTuple):
    """Projection matrices, each of shape (d_model, d_model), applied as ``x @ w``."""

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray


def toy_weights(d_model, seed):
    """Random projections with entries N(0, 1/d_model), so ``x @ w`` keeps unit variance.

    Drawn in the order W_Q, W_K, W_V, W_O from a generator seeded by ``(seed, d_model)``.

    Returns
    -------
    ToyWeights
    """
    rng = np.random.default_rng([int(seed), int(d_model)])
    std = 1.0 / np.sqrt(d_model)
    return ToyWeights(*(rng.standard_normal((d_model, d_model)) * std for _ in range(4)))


def positional_table(kind, n, d_model, seed):
    """The table added to the embeddings for ``kind``; zeros for "none" and "rotary".

    Rotary encoding is not added to the input: it rotates queries and keys inside
    attention (see :func:`engine.positional.rotary_embedding`).

    Returns
    -------
    ndarray of shape (n, d_model)
    """
    if kind not in ENCODINGS:
        raise ValueError(
            f"unknown positional encoding {kind!r}; choose one of {', '.join(ENCODINGS)}"
        )
    if kind == "sinusoidal":
        return sinusoidal_positional_encoding(n, d_model)
    if kind == "learned":
        return learned_positional_encoding(n, d_model, seed)
    return np.zeros((n, d_model))


class ToyRun(NamedTuple):
    """One pass of the toy layer with everything the pages draw.

    Attributes
    ----------
    embeddings : ndarray of shape (n, d_model)
    positions : ndarray of shape (n, d_model), the table added to the embeddings
    x : ndarray of shape (n, d_model), ``embeddings + positions``
    weights : ToyWeights
    q, k, v : ndarray of shape (n, d_model), ``x @ w_q`` etc. before any rotation
    mask : bool ndarray of shape (n, n) or None
    attention : MultiHeadResult
    """

    embeddings: np.ndarray
    positions: np.ndarray
    x: np.ndarray
    weights: ToyWeights
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    mask: np.ndarray | None
    attention: MultiHeadResult


@blas.one_thread
def run_toy(tokens, d_model, n_heads, seed, scale=None, causal=False, pe="none"):
    """Embed ``tokens``, add positions, and run one multi-head self-attention layer.

    Parameters
    ----------
    tokens : list of str, length n >= 1
    d_model : int
    n_heads : int, a divisor of d_model
    seed : int
    scale : float, optional; default ``1/√d_head``
    causal : bool
    pe : {"none", "sinusoidal", "learned", "rotary"}

    Returns
    -------
    ToyRun
    """
    n = len(tokens)
    embeddings = token_embeddings(tokens, d_model, seed)
    positions = positional_table(pe, n, d_model, seed)
    x = embeddings + positions
    weights = toy_weights(d_model, seed)
    mask = causal_mask(n) if causal else None
    attention = multi_head_attention(
        x, *weights, n_heads=n_heads, mask=mask, scale=scale, rotary=pe == "rotary"
    )
    return ToyRun(
        embeddings,
        positions,
        x,
        weights,
        x @ weights.w_q,
        x @ weights.w_k,
        x @ weights.w_v,  # [n, d_model] each
        mask,
        attention,
    )


def permutation_error(tokens, permutation, d_model, n_heads, seed, pe="none"):
    r"""How far self-attention is from permutation-equivariant on these tokens.

    .. math:: \max \lvert \operatorname{Sa}[P X] - P \operatorname{Sa}[X] \rvert

    Without positional encoding (and without a causal mask, which is itself a
    statement about order) this is zero up to round-off: shuffling the tokens only
    shuffles the outputs (UDL book, section 12.4.1). Any positional encoding breaks it.

    Parameters
    ----------
    tokens : list of str, length n
    permutation : sequence of int, a permutation of ``range(n)``; token ``i`` of the
        shuffled text is ``tokens[permutation[i]]``
    (the rest as in :func:`run_toy`)

    Returns
    -------
    float
    """
    permutation = np.asarray(permutation)
    original = run_toy(tokens, d_model, n_heads, seed, pe=pe).attention.output
    shuffled = [tokens[i] for i in permutation]
    permuted = run_toy(shuffled, d_model, n_heads, seed, pe=pe).attention.output
    return float(np.max(np.abs(permuted - original[permutation])))


def random_permutation(n, seed):
    """A seeded shuffle of ``range(n)`` that moves at least one token when ``n >= 2``.

    Returns
    -------
    ndarray of shape (n,), int
    """
    permutation = np.random.default_rng(int(seed)).permutation(n)
    if n >= 2 and np.array_equal(permutation, np.arange(n)):
        permutation = np.roll(permutation, 1)
    return permutation
