"""Analyses of a pretrained model's attention: rollout, the head finder, two sentences.

Also how far the model is from permutation-equivariant, how much attention parks on the
first token (attention sinks: Xiao et al. 2024, "Efficient Streaming Language Models with
Attention Sinks", section 3.1), and how a rotary head's score of one query–key pair
changes with their distance (Su et al. 2021, section 3.4.3). Attention rollout follows
Abnar & Zuidema (2020), "Quantifying Attention Flow in Transformers", section 3. The runs
are :class:`engine.bert.BertRun`; everything here reads their ``attentions`` (n_layers,
n_heads, n, n) or runs the model again.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine import blas
from engine.bert import run_ids
from engine.layer_config import visible_keys
from engine.positional import rotary_embedding

__all__ = [
    "HeadChange",
    "HeadWeight",
    "RotaryScores",
    "Sinks",
    "attention_rollout",
    "attention_sinks",
    "permutation_error",
    "rank_changes",
    "rank_heads",
    "rotary_scores",
    "summary_sinks",
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
    attentions : ndarray of shape (n_layers, n_heads, n, n), or anything indexed by layer
    cumulative : bool
        Return the rollout after every layer, not only the last.

    Returns
    -------
    ndarray of shape (n, n), or (n_layers, n, n) when ``cumulative``; rows sum to 1
    """
    n_layers, n = attentions.shape[0], attentions.shape[-1]
    # One layer at a time: a run that computes its heads on demand holds one layer's.
    a = np.stack([np.asarray(attentions[i]).mean(axis=0) for i in range(n_layers)])
    a += np.eye(n, dtype=a.dtype)  # -> [n_layers, n, n]
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


def permutation_error(model, ids, permutation, positions=True, parallel=True):
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
    positions, parallel : as in :func:`engine.bert.run_ids`

    Returns
    -------
    float, over the last layer's hidden states
    """
    ids = np.asarray(ids)
    permutation = np.asarray(permutation)
    original = run_ids(model, ids, positions, parallel).hidden_states[-1]  # [n, d_model]
    shuffled = run_ids(model, ids[permutation], positions, parallel).hidden_states[-1]
    return float(np.max(np.abs(shuffled - original[permutation])))


class Sinks(NamedTuple):
    """Where a model parks its attention: the first token, and the tokens most attended.

    Attributes
    ----------
    first : ndarray of shape (n_layers, n_heads)
        Each head's mean weight on the first token, over the queries after it (the first
        query, which in a causal model sees only itself, is left out; a one-token text
        keeps it).
    share : float
        ``first`` averaged over every layer and head: the model's attention on the first
        token.
    uniform : float
        What ``share`` would be if every query spread its attention evenly over the keys
        it may see (1/n in an encoder; the mean of 1/(i+1) in a causal model).
    received : ndarray of shape (n,)
        Each token's mean weight received, over layers, heads and the queries after the
        first.
    strongest : ndarray of shape (k,)
        The tokens receiving most, most first (ties: the earlier token).
    """

    first: np.ndarray
    share: float
    uniform: float
    received: np.ndarray
    strongest: np.ndarray


@blas.one_thread
def attention_sinks(attentions, mask=None, k=5):
    r"""How much attention goes to the first token, per head, and which tokens are sinks.

    .. math:: s_{\ell h} = \frac{1}{n-1}\sum_{i=1}^{n-1} W^{\ell h}_{i,0},\qquad
              r_j = \frac{1}{L H (n-1)}\sum_{\ell, h}\sum_{i=1}^{n-1} W^{\ell h}_{i,j}

    Most heads of a trained decoder give the first token far more than its share: a
    "sink" where a head parks the attention it has no use for (Xiao et al. 2024,
    section 3.1).

    Parameters
    ----------
    attentions : ndarray of shape (n_layers, n_heads, n, n)
    mask : bool ndarray of shape (n, n) or (n_layers, n, n), optional
        The model's, for the uniform baseline: one for every layer, or each layer's own
        (Gemma 3's local and global layers see different keys)
    k : int, the strongest tokens kept

    Returns
    -------
    Sinks
    """
    n = attentions.shape[-1]
    queries = slice(1, None) if n > 1 else slice(None)
    rows = np.asarray(attentions[..., queries, :])  # [L, H, n - 1, n]
    # Summed in float64 as read: no float64 copy of every weight (141 MB at 256 tokens of
    # SmolLM2), the same bits as summing one.
    first = np.asarray(rows[..., 0], dtype=np.float64).mean(axis=-1)  # -> [L, H]
    received = np.mean(rows, axis=(0, 1, 2), dtype=np.float64)  # -> [n]
    visible = np.ones((n, n), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    uniform = float(np.mean(visible[..., queries, 0] / visible[..., queries, :].sum(axis=-1)))
    strongest = np.argsort(-received, kind="stable")[: min(k, n)]
    return Sinks(first, float(first.mean()), uniform, received, strongest)


def summary_sinks(summaries, config, k=5):
    r"""Attention sinks of a long text, from the summaries its pass kept (no n × n weights).

    .. math:: s_{\ell h} = \frac1n \sum_{i=0}^{n-1} W^{\ell h}_{i,0},\qquad
              r_j = \frac{1}{L H n}\,
              \bigl|\{(\ell, h, i) : \arg\max_{j'} W^{\ell h}_{i j'} = j\}\bigr|

    As :func:`attention_sinks`, but over every query (the first too: at a long text's
    length its share is under 1/n), and with ``received`` the share of the queries, over
    every layer and head, whose strongest key is token ``j`` (a sink is the strongest key
    of most queries), since the mean weight each token receives needs every weight.

    Parameters
    ----------
    summaries : engine.summaries.HeadSummaries of a run
    config : engine.checkpoint.ModelConfig, for the keys each query may see (the uniform
        baseline: 1/n in an encoder, the mean of 1/(i+1) in a causal model, its window's
        in a sliding-window layer)
    k : int, the strongest tokens kept

    Returns
    -------
    Sinks
    """
    first = np.asarray(summaries.first_token, dtype=np.float64)  # [L, H]
    strongest = np.asarray(summaries.strongest)  # [L, H, n]
    n_layers, n = first.shape[0], strongest.shape[-1]
    shares = []
    for layer in range(n_layers) if config.layer_types else [None]:  # each its own mask
        seen = [range(n)[visible_keys(config, i, layer)] for i in range(n)]
        shares.append(np.mean([(s.start == 0) / len(s) for s in seen]))
    received = np.bincount(strongest.ravel(), minlength=n) / strongest.size  # -> [n]
    top = np.argsort(-received, kind="stable")[: min(k, n)]
    return Sinks(first, float(first.mean()), float(np.mean(shares)), received, top)


class RotaryScores(NamedTuple):
    """One head's score of a fixed query–key pair at every distance, rotary on and off.

    Attributes
    ----------
    distances : int ndarray of shape (m,), the query's position minus the key's
    rotary : ndarray of shape (m,), ``s · R(Δ) q · k`` (the key at 0, the query at Δ)
    plain : float, ``s · q · k``: the same pair with rotary positions removed
    """

    distances: np.ndarray
    rotary: np.ndarray
    plain: float


@blas.one_thread
def rotary_scores(q, k, distances, scale, **rotary):
    r"""The score of query vector q and key vector k as they are moved apart, with RoPE.

    .. math:: \operatorname{score}(\Delta) = s\,(R_{m+\Delta}\,q)\cdot(R_m\,k)
              = s\,q^\top R_\Delta^\top k \quad(\text{any } m)

    Rotary positions make a score depend on the distance Δ alone (Su et al. 2021,
    section 3.4.2): the key is put at position 0 and the query at Δ, the pair's
    vectors unchanged. Without the rotation the score is the same at every distance.

    Parameters
    ----------
    q, k : ndarray of shape (d_head,), a head's query and key before the rotation
    distances : int ndarray of shape (m,), >= 0
    scale : float, the model's 1/√d_head
    rotary : the keyword arguments of :func:`engine.positional.rotary_embedding`

    Returns
    -------
    RotaryScores
    """
    distances = np.asarray(distances)
    q, k = np.asarray(q), np.asarray(k)
    moved = rotary_embedding(np.broadcast_to(q, (len(distances), len(q))), distances, **rotary)
    key = rotary_embedding(k[None], np.zeros(1, dtype=int), **rotary)[0]  # R_0 k = k
    return RotaryScores(distances, (moved @ key) * scale, float(q @ k) * scale)
