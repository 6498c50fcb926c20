"""One head of a long text's layer on the core pages: its n × n maps as tiles and a zoom.

Past :data:`app.data.passes.LONG_TOKENS` tokens a core page's layer keeps no head's
weights (:func:`app.data.layers.layer` with ``keep_weights=False``): one head's map is
computed here from the layer's queries and keys by the blocked attention the pass runs
(:func:`engine.attention.blocked_attention`: at the model's own scale and mask, its
weights to the bit, :func:`engine.bert.head_weights`), reduced to tiles
(:func:`engine.tiling.tile`) and to the zoom's block, and let go. Only the tiles and the
zoom are cached: one head's n × n lives while it is reduced, never every head's.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import engine
from app.data import cache, trained
from app.views import long_head
from engine import tiling
from engine.attention import AttentionResult, blocked_attention

__all__ = ["MAPS", "EveryHead", "every_head", "head_map", "layer"]

#: The maps of one head a page draws, by name: what each cell is.
MAPS = {
    "weights": "weight",
    "masked": "score",  # the scaled scores, −∞ where masked
    "mask": "weight",  # 1 where the query sees the key: a tile's share, or whether any
}


def layer(settings, positions=True):
    """The trained layer of ``settings`` without any head's weights (a long text's).

    ``positions`` False: the model run without its positions (a what-if).

    Returns
    -------
    engine.bert.LayerRun, ``attention.weights`` None
    """
    s = settings
    return trained.layer_run(
        s.weights, s.text, s.layer, s.scale, s.causal, positions, keep_weights=False
    )


def _head(settings, head, positions):
    """One head of the layer: its queries and keys, scale, mask and soft cap, no weights."""
    attention = layer(settings, positions).attention
    heads = attention.heads
    q, k, v = (m[head : head + 1] for m in (attention.q, attention.k, attention.v))
    return q, k, v, heads


def _matrix(settings, head, kind, positions):
    """Head ``head``'s map ``kind`` (:data:`MAPS`), shape (n, n), computed now."""
    q, k, v, heads = _head(settings, head, positions)
    n = q.shape[1]
    if kind == "weights":
        out = np.empty((1, n, n), dtype=np.float32)
        blocked_attention(q, k, v, heads.mask, heads.scale, heads.softcap, weights_out=out)
        return out[0]
    if kind == "mask":
        return (np.ones((n, n), bool) if heads.mask is None else heads.mask).astype(np.float32)
    one = AttentionResult(q[0], k[0], None, None, heads.scale, heads.mask, heads.softcap)
    return one.masked


def _tiles(matrix, size, reduction):
    """:func:`engine.tiling.tile`, a −∞ cell (masked) left out of its tile's mean.

    A tile whose cells are all −∞ stays −∞ (drawn blank).
    """
    hidden = np.isneginf(matrix)
    if reduction == "max" or not hidden.any():
        return tiling.tile(matrix, size, reduction)
    sums = tiling.tile(np.where(hidden, 0.0, matrix), size, "mean")
    seen = tiling.tile(~hidden, size, "mean").values  # each tile's share of finite cells
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.where(seen > 0, sums.values / seen, -np.inf).astype(np.float32)
    return sums._replace(values=values)


@cache.bounded
def head_map(settings, head, kind, reduction, rows, cols, positions=True):
    """Head ``head``'s map ``kind`` over a long text: the whole as tiles, and the zoom.

    Parameters
    ----------
    settings : app.state.controls.Settings, a trained model's
    head : int
    kind : str, a key of :data:`MAPS`
    reduction : ``"max"`` or ``"mean"``, each tile's (a masked score's mean over the
        cells the mask lets through)
    rows, cols : (int, int), the zoom's queries and keys, start and stop
    positions : bool, False for the model run without its positions

    Returns
    -------
    overview : engine.tiling.Tiles of the whole map, at most
        :data:`app.views.long_head.OVERVIEW_TILES` a side
    zoomed : ndarray of shape (rows, cols), the exact cells once they fit
        (:func:`app.views.long_head.fits`), else the Tiles of that block
    """
    matrix = _matrix(settings, head, kind, positions)  # [n, n], this head's alone
    overview = _tiles(matrix, long_head.OVERVIEW_TILES, reduction)
    block = matrix[rows[0] : rows[1], cols[0] : cols[1]]
    if long_head.fits(rows, cols):
        return overview, np.array(block)
    return overview, _tiles(block, long_head.OVERVIEW_TILES, reduction)


class EveryHead(NamedTuple):
    """Every head of a long text's layer, each reduced as it was computed, one at a time.

    Attributes
    ----------
    tiles : float32 ndarray of shape (n_heads, t, t), each head's tiles
    edges : int ndarray of shape (t + 1,), the tiles' token edges (the same on both axes)
    entropy, effective, largest : ndarray of shape (n_heads,), each head's mean over its
        queries of the entropy in bits, 2^entropy and the largest weight
    window : float32 ndarray of shape (n_heads, w, w), the weights among the tokens
        ``start`` … ``start + w - 1``
    """

    tiles: np.ndarray
    edges: np.ndarray
    entropy: np.ndarray
    effective: np.ndarray
    largest: np.ndarray
    window: np.ndarray


@cache.bounded(spinner="Computing each head, one at a time …")
def every_head(settings, reduction, size, window):
    """Every head's weights tiled to at most ``size`` a side, its entropy, and a window.

    One head's n × n at a time (:func:`head_map`'s arithmetic), let go before the next.

    Parameters
    ----------
    settings : app.state.controls.Settings, a trained model's
    reduction : ``"max"`` or ``"mean"``
    size : int, the most tiles on a side
    window : (int, int), the tokens whose weights among themselves are kept

    Returns
    -------
    EveryHead
    """
    n_heads = layer(settings).attention.q.shape[0]
    start, stop = window
    tiles, stats, kept, edges = [], [], [], None
    for head in range(n_heads):
        weights = _matrix(settings, head, "weights", True)  # [n, n], this head's alone
        tiled = tiling.tile(weights, size, reduction)
        tiles.append(tiled.values)
        edges = tiled.row_edges
        found = engine.saturation(weights, jacobian=False)  # per query row
        stats.append([found.entropy.mean(), found.effective_tokens.mean(), found.max_weight.mean()])
        kept.append(np.array(weights[start:stop, start:stop]))
    entropy, effective, largest = np.asarray(stats, dtype=np.float64).T
    return EveryHead(np.stack(tiles), edges, entropy, effective, largest, np.stack(kept))
