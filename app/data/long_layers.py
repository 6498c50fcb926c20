"""One head of a long text's layer on the core pages: its n × n maps as tiles and a zoom.

Past :data:`app.data.passes.LONG_TOKENS` tokens a core page's layer keeps no head's
weights (:func:`app.data.layers.layer` with ``keep_weights=False``): one head's map is
computed here from the layer's queries and keys by the blocked attention the pass runs
(:func:`engine.blocked.blocked_attention`: at the model's own scale and mask, its
weights to the bit, :func:`engine.one_layer.head_weights`), reduced to tiles
(:func:`engine.tiling.tile`) and to the zoom's block, and let go. Only the tiles and the
zoom are cached: one head's n × n lives while it is reduced, never every head's.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import engine
from app.data import cache, layers, threads, trained
from engine import bert, one_layer, tiling
from engine.attention import AttentionResult
from engine.blocked import attention_rows, blocked_attention
from engine.scores import soft_cap

__all__ = [
    "MAPS",
    "EveryHead",
    "every_head",
    "head_map",
    "head_saturation",
    "layer",
    "query_row",
    "row_saturation",
    "saturation_curve",
]

#: The maps of one head a page draws, by name: what each cell is.
MAPS = {
    "weights": "weight",
    "scores": "score",  # the raw q · kᵀ, unmasked, unscaled
    "masked": "score",  # the scaled scores, −∞ where masked
    "mask": "weight",  # 1 where the query sees the key: a tile's share, or whether any
}


def layer(settings, positions=True):
    """The trained layer of ``settings`` without any head's weights (a long text's).

    ``positions`` False: the model run without its positions (a what-if), up to this
    layer alone (:func:`engine.bert.hidden_state`): a second pass's every hidden state
    would hold hundreds of megabytes more at 4,096 tokens.

    Returns
    -------
    engine.one_layer.LayerRun, ``attention.weights`` None
    """
    s = settings
    if not positions:
        return _unpositioned(s.weights, s.text, s.layer, s.scale, s.causal)
    return trained.layer_run(s.weights, s.text, s.layer, s.scale, s.causal, keep_weights=False)


class _AtLayer(NamedTuple):
    """What :func:`engine.one_layer.layer_run` reads of a run: the hidden state entering a layer.

    A pass's :class:`engine.bert.BertRun` holds every layer's; this one layer's, of a pass
    without positions (which kept no queries or keys: the layer projects them).
    """

    hidden_states: dict
    queries: None = None
    keys: None = None
    positions: bool = False


@cache.bounded(spinner="Running the model without its positions, up to this layer …")
def _unpositioned(name, text, layer, scale, causal):
    model = trained.model(name)
    ids = trained.run(name, text).ids
    x = bert.hidden_state(model, ids, layer, positions=False, parallel=threads.parallel())
    run = _AtLayer({layer: x})
    return one_layer.layer_run(
        model, run, layer, scale, causal, threads.parallel(), keep_weights=False
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
    scores = AttentionResult(q[0], k[0], None, None, heads.scale).scores  # [n, n], q · kᵀ
    if kind == "masked":  # in place, as AttentionResult.masked computes it in new arrays
        scores *= heads.scale
        soft_cap(scores, heads.softcap, out=scores)
        if heads.mask is not None:
            np.copyto(scores, -np.inf, where=~heads.mask)
    return scores


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
def head_map(settings, head, kind, reduction, rows, cols, tiles, cells, positions=True):
    """Head ``head``'s map ``kind`` over a long text: the whole as tiles, and the zoom.

    Parameters
    ----------
    settings : app.state.controls.Settings, a trained model's
    head : int
    kind : str, a key of :data:`MAPS`
    reduction : ``"max"`` or ``"mean"``, each tile's (a masked score's mean over the
        cells the mask lets through)
    rows, cols : (int, int), the zoom's queries and keys, start and stop
    tiles : int, the most tiles on a side of the whole map and of a zoom too large for cells
    cells : int, the zoom holds exact cells once its rows and columns are this many or fewer
    positions : bool, False for the model run without its positions

    Returns
    -------
    overview : engine.tiling.Tiles of the whole map
    zoomed : ndarray of shape (rows, cols), the exact cells once they fit, else the Tiles
        of that block
    """
    matrix = _matrix(settings, head, kind, positions)  # [n, n], this head's alone
    overview = _tiles(matrix, tiles, reduction)
    block = matrix[rows[0] : rows[1], cols[0] : cols[1]]
    if rows[1] - rows[0] <= cells and cols[1] - cols[0] <= cells:
        return overview, np.array(block)
    return overview, _tiles(block, tiles, reduction)


#: Query rows whose saturation is computed at once: its float64 temporaries are a few MB,
#: not a head's n × n several times over (at 4,096 tokens 134 MB each).
STAT_ROWS = 256


#: Scales the saturation curve sweeps at once: 64 rows of 4,096 keys at 8 scales are
#: 16 MB an array, all 61 at once 128 MB.
SWEEP_SCALES = 8


def row_saturation(weights, jacobian=True):
    """:func:`engine.saturation` of each row of ``weights``, :data:`STAT_ROWS` rows at a time."""
    parts = [
        engine.saturation(weights[start : start + STAT_ROWS], jacobian)
        for start in range(0, len(weights), STAT_ROWS)
    ]
    return _joined(parts)


def _joined(parts):
    """Saturation statistics of consecutive parts, as one: each field concatenated."""
    return type(parts[0])(
        *(None if field[0] is None else np.concatenate(field) for field in zip(*parts, strict=True))
    )


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
        found = row_saturation(weights, jacobian=False)
        stats.append([found.entropy.mean(), found.effective_tokens.mean(), found.max_weight.mean()])
        kept.append(np.array(weights[start:stop, start:stop]))
    entropy, effective, largest = np.asarray(stats, dtype=np.float64).T
    return EveryHead(np.stack(tiles), edges, entropy, effective, largest, np.stack(kept))


@cache.bounded
def query_row(settings, head, query):
    """Token ``query``'s weights in head ``head``, shape (n,): its block's rows alone.

    :func:`engine.blocked.attention_rows`, the bits of the head's whole weights.
    """
    q, k, _, heads = _head(settings, head, True)
    rows = attention_rows(q, k, [query], heads.mask, heads.scale, heads.softcap)
    return rows[0, 0]


@cache.bounded
def head_saturation(settings, head):
    """:func:`engine.saturation` of each query row of head ``head``'s weights, computed now.

    Returns
    -------
    engine.SaturationStats, arrays of shape (n,)
    """
    return row_saturation(_matrix(settings, head, "weights", True))


@cache.bounded
def saturation_curve(settings, head, n_points=layers.CURVE_POINTS):
    """:func:`app.data.layers.saturation_curve` of a long text: the same sweep and rows.

    The scores of :data:`app.data.layers.SWEEP_ROWS` evenly spaced query rows alone, from
    the head's queries and keys (not every head's n × n scores).

    Returns
    -------
    scales, stats, rows : as :func:`app.data.layers.saturation_curve`
    """
    q, k, _, heads = _head(settings.replace(scale=None), head, True)
    n = q.shape[1]
    rows = np.unique(np.linspace(0, n - 1, layers.SWEEP_ROWS).round().astype(int))
    scores = q[0, rows] @ k[0].T  # [rows, n]: q_i · k_j
    mask = None if heads.mask is None else heads.mask[rows]
    scales = np.geomspace(1e-3, 1e3, n_points)
    parts = [  # a few scales at a time: each holds (scales, rows, n) float64 arrays
        engine.saturation_sweep(scores, scales[start : start + SWEEP_SCALES], mask, jacobian=False)
        for start in range(0, n_points, SWEEP_SCALES)
    ]
    return scales, _joined(parts), len(rows)
