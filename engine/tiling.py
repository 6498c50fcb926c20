"""A long text's attention map cut into tiles: each tile's maximum or mean weight.

At 4,096 tokens one head's weights are 16.7 million cells, more than a screen has pixels;
a view draws them as an image of tiles instead, each one block of queries × keys reduced
to one number. The maximum keeps a lone strong weight visible (an attention sink's
column, a retrieval far back); the mean is the block's average weight. The blocks split
the tokens as evenly as whole tokens allow, so every cell lies in exactly one tile.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["REDUCTIONS", "Tiles", "tile", "tile_edges", "tile_heads"]

#: The ways a tile may reduce its block, by name.
REDUCTIONS = ("max", "mean")


class Tiles(NamedTuple):
    """A matrix reduced to tiles.

    Attributes
    ----------
    values : float32 ndarray of shape (n_row_tiles, n_col_tiles)
        Each tile's maximum or mean.
    row_edges : int ndarray of shape (n_row_tiles + 1,)
        Tile ``a`` covers rows ``row_edges[a]`` up to, not including, ``row_edges[a + 1]``.
    col_edges : int ndarray of shape (n_col_tiles + 1,)
    reduction : str, ``"max"`` or ``"mean"``
    """

    values: np.ndarray
    row_edges: np.ndarray
    col_edges: np.ndarray
    reduction: str


def tile_edges(n, size):
    """Split ``n`` tokens into ``min(n, size)`` blocks as even as whole tokens allow.

    Returns
    -------
    int ndarray of shape (min(n, size) + 1,), from 0 to n, strictly increasing
    """
    if n < 1 or size < 1:
        raise ValueError(f"need at least one token and one tile, got n={n}, size={size}")
    count = min(n, size)
    return np.linspace(0, n, count + 1).round().astype(np.intp)


def tile(matrix, size, reduction="max"):
    r"""Reduce ``matrix`` to at most ``size`` × ``size`` tiles, each its block's max or mean.

    .. math:: T_{ab} = \max_{i \in R_a,\ j \in C_b} W_{ij}
              \quad\text{or}\quad
              T_{ab} = \frac{1}{|R_a|\,|C_b|} \sum_{i \in R_a,\ j \in C_b} W_{ij}

    where :math:`R_a` and :math:`C_b` are the row and column blocks (:func:`tile_edges`).
    A matrix no larger than ``size`` on a side comes back as it is (each tile one cell).

    Parameters
    ----------
    matrix : ndarray of shape (n_q, n_k)
    size : int, the most tiles on a side; or (int, int), the most rows and columns of tiles
    reduction : ``"max"`` or ``"mean"``

    Returns
    -------
    Tiles
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ValueError(f"need a matrix, got shape {matrix.shape}")
    row_size, col_size = (size, size) if np.ndim(size) == 0 else size
    rows, cols = tile_edges(matrix.shape[0], row_size), tile_edges(matrix.shape[1], col_size)
    if reduction == "max":
        blocks = np.maximum.reduceat(matrix, rows[:-1], axis=0)  # -> [n_row_tiles, n_k]
        blocks = np.maximum.reduceat(blocks, cols[:-1], axis=1)  # -> [n_row_tiles, n_col_tiles]
    else:  # sums in float64, so that a tile of a million float32 cells keeps its digits
        blocks = np.add.reduceat(matrix, rows[:-1], axis=0, dtype=np.float64)
        blocks = np.add.reduceat(blocks, cols[:-1], axis=1)
        blocks /= np.outer(np.diff(rows), np.diff(cols))
    return Tiles(blocks.astype(np.float32), rows, cols, reduction)


def tile_heads(attentions, size, reduction="max"):
    """Every head's weights as :func:`tile` reduces them: the model view's thumbnails.

    One head at a time, so that a run whose heads are computed on demand never holds
    more than one head's n × n.

    Parameters
    ----------
    attentions : array-like of shape (n_layers, n_heads, n, n), indexable by [layer, head]
    size, reduction : as in :func:`tile`

    Returns
    -------
    float32 ndarray of shape (n_layers, n_heads, min(n, size), min(n, size))
    """
    n_layers, n_heads, n = attentions.shape[0], attentions.shape[1], attentions.shape[-1]
    side = min(n, size)
    out = np.empty((n_layers, n_heads, side, side), dtype=np.float32)
    for layer in range(n_layers):
        for head in range(n_heads):
            out[layer, head] = tile(attentions[layer, head], size, reduction).values
    return out
