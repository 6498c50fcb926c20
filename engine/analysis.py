"""Analyses of a pretrained model's attention: rollout, the head finder, two sentences.

Also how far the model is from permutation-equivariant. Attention rollout follows
Abnar & Zuidema (2020), "Quantifying Attention Flow in Transformers", section 3. The runs
are :class:`engine.bert.BertRun`; everything here reads their ``attentions`` (n_layers,
n_heads, n, n) or runs the model again.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine import blas
from engine.bert import run_ids

__all__ = [
    "HeadChange",
    "HeadWeight",
    "attention_rollout",
    "permutation_error",
    "rank_changes",
    "rank_heads",
]


class HeadWeight(NamedTuple):
    """How much one head sends from a query token to a key token."""

    layer: int
    head: int
    weight: float


class HeadChange(NamedTuple):
    """How one head's weight differs between two sentences (a minimal pair)."""

    layer: int
    head: int
    weight_a: float
    weight_b: float
    change: float  # weight_a − weight_b


@blas.one_thread
def attention_rollout(attentions, cumulative=False):
    r"""Attention rollout (Abnar & Zuidema 2020, section 3): attention traced through layers.

    .. math:: \hat A_\ell = \tfrac12\bigl(\bar W_\ell + I\bigr),\qquad
              \tilde A_\ell = \hat A_\ell \hat A_{\ell-1} \cdots \hat A_1

    ``W̄`` averages the heads of layer ℓ; adding the identity accounts for the residual
    connection, which carries each token's own representation past the attention; the
    rows are then renormalised (dividing by 2, since each row of ``W̄ + I`` sums to 2).

    Parameters
    ----------
    attentions : ndarray of shape (n_layers, n_heads, n, n)
    cumulative : bool
        Return the rollout after every layer, not only the last.

    Returns
    -------
    ndarray of shape (n, n), or (n_layers, n, n) when ``cumulative``; rows sum to 1
    """
    attentions = np.asarray(attentions)
    n = attentions.shape[-1]
    a = attentions.mean(axis=1) + np.eye(n, dtype=attentions.dtype)  # -> [n_layers, n, n]
    a /= a.sum(axis=-1, keepdims=True)
    rollout = np.empty_like(a)
    rollout[0] = a[0]
    for layer in range(1, len(a)):
        rollout[layer] = a[layer] @ rollout[layer - 1]  # [n, n] @ [n, n] -> [n, n]
    return rollout if cumulative else rollout[-1]


def rank_heads(attentions, query_index, key_index):
    """The head finder: every head, ordered by how much ``query_index`` attends to ``key_index``.

    Parameters
    ----------
    attentions : ndarray of shape (n_layers, n_heads, n, n)
    query_index, key_index : int
        Token positions (row and column of the attention maps).

    Returns
    -------
    list of HeadWeight, n_layers · n_heads long, largest weight first (ties keep
    layer-then-head order)
    """
    weights = np.asarray(attentions)[:, :, query_index, key_index]  # -> [n_layers, n_heads]
    order = np.argsort(-weights, axis=None, kind="stable")
    layers, heads = np.unravel_index(order, weights.shape)
    return [
        HeadWeight(int(layer), int(head), float(weights[layer, head]))
        for layer, head in zip(layers, heads, strict=True)
    ]


def rank_changes(grid_a, grid_b):
    r"""The heads that moved most between two sentences, largest change first.

    .. math:: \Delta_{\ell h} = a^{A}_{\ell h} - a^{B}_{\ell h}

    ``grid_a`` and ``grid_b`` hold each sentence's weight from its own query token to
    its own key token in every head (the head finder's grids), so the two may pick the
    words at different positions.

    Parameters
    ----------
    grid_a, grid_b : ndarray of shape (n_layers, n_heads)

    Returns
    -------
    list of HeadChange, n_layers · n_heads long, by |change| descending (ties keep
    layer-then-head order)
    """
    grid_a, grid_b = np.asarray(grid_a), np.asarray(grid_b)
    change = grid_a - grid_b  # -> [n_layers, n_heads]
    order = np.argsort(-np.abs(change), axis=None, kind="stable")
    layers, heads = np.unravel_index(order, change.shape)
    return [
        HeadChange(
            int(layer),
            int(head),
            float(grid_a[layer, head]),
            float(grid_b[layer, head]),
            float(change[layer, head]),
        )
        for layer, head in zip(layers, heads, strict=True)
    ]


def permutation_error(model, ids, permutation, positions=True):
    r"""How far the whole model is from permutation-equivariant on these tokens.

    .. math:: \max \lvert \operatorname{Enc}(P X) - P \operatorname{Enc}(X) \rvert

    With its learned position embeddings the model knows where each token is, so
    shuffling the tokens changes what it computes; with them removed every layer treats
    the tokens as a set, and the outputs only shuffle (to float32 round-off).

    Parameters
    ----------
    model : engine.checkpoint.Model
    ids : int ndarray of shape (n,)
    permutation : sequence of int, a permutation of ``range(n)``
    positions : bool, as in :func:`engine.bert.run_ids`

    Returns
    -------
    float, over the last layer's hidden states
    """
    ids = np.asarray(ids)
    permutation = np.asarray(permutation)
    original = run_ids(model, ids, positions).hidden_states[-1]  # [n, d_model]
    shuffled = run_ids(model, ids[permutation], positions).hidden_states[-1]
    return float(np.max(np.abs(shuffled - original[permutation])))
