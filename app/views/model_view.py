"""BertViz's model view: every head of every layer as a thumbnail, the layers × heads grid.

Follows Vig (2019), "A Multiscale Visualization of Attention in the Transformer Model",
section 3.2. Thumbnails are pooled and tiled into one heatmap, so that the grid stays
light at 512 tokens; the head view (:mod:`app.views.line_view`) shows any head in full.
Each thumbnail's cell is the maximum of its block of queries and keys
(:func:`engine.tiling.tile`): a sink head's first column stays bright, where a mean of
its block would dim a weight of 0.73 on the first token to under 0.2 (issue #52).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.views import chart, style
from engine import tiling

#: The model view's thumbnails are pooled to at most this many rows and columns, each cell
#: the maximum of its block.
THUMBNAIL_MAX = 48


#: Cells between two thumbnails of the model view, drawn blank (level :data:`_GAP`).
THUMBNAIL_GAP = 2


_GAP = 255


def figure(attentions, kv_of=None, windows=None):
    """Every head of every layer as a thumbnail: the layers × heads grid.

    Thumbnails are pooled to at most :data:`THUMBNAIL_MAX` tokens a side, each cell the
    maximum weight of its block (:func:`engine.tiling.tile_heads`), then drawn by
    :func:`grid_figure`.

    Parameters
    ----------
    attentions : ndarray of shape (n_layers, n_heads, n, n)
    kv_of, windows : as in :func:`grid_figure`
    """
    thumbnails = tiling.tile_heads(attentions, THUMBNAIL_MAX, "max")
    return grid_figure(thumbnails, attentions.shape[-1], kv_of, windows)


def grid_figure(thumbnails, n, kv_of=None, windows=None):
    """The layers × heads grid of thumbnails, in one heatmap.

    Sent as 8-bit levels (weight × 254; 255 marks the gaps between them) and tiled into
    one heatmap: one trace, where 72 subplots cost plotly.py and plotly.js about a second
    each. The grid stays under a megabyte even at 512 tokens; the head view shows any
    head in full.

    Parameters
    ----------
    thumbnails : ndarray of shape (n_layers, n_heads, side, side), each head's tiles
    n : int, the tokens each thumbnail covers
    kv_of : int ndarray of shape (n_heads,), optional
        Grouped-query attention's key/value head of each query head, named under each
        column (``H3 · KV1``): the heads that share their keys and values.
    windows : sequence of (int or None), one per layer, optional
        Gemma 3's local and global layers: each row is named ``local`` (its sliding
        window, an int) or ``global`` (None), and each local thumbnail gets its window's
        edge drawn, a dashed line beyond which its heads give no weight.

    The outline of the head shown is drawn over it apart (:func:`outline`).
    """
    n_layers, n_heads = thumbnails.shape[:2]
    shape = (n_layers, n_heads, n, n)
    side, step = _tiling(shape)
    tiles = np.full((n_layers * step - THUMBNAIL_GAP, n_heads * step - THUMBNAIL_GAP), _GAP)
    for layer in range(n_layers):
        for head in range(n_heads):
            tiles[layer * step : layer * step + side, head * step : head * step + side] = np.round(
                np.clip(thumbnails[layer, head], 0.0, 1.0) * (_GAP - 1)
            )
    viridis = style.weight_colors(np.linspace(0.0, 1.0, 11))
    top = (_GAP - 1) / _GAP
    colorscale = [[top * i / 10, colour] for i, colour in enumerate(viridis)]
    colorscale += [[top + 1e-6, "#ffffff"], [1.0, "#ffffff"]]
    centres = np.arange(n_heads) * step + (side - 1) / 2
    grid = go.Heatmap(
        z=tiles.astype(np.uint8),
        colorscale=colorscale,
        zmin=0,
        zmax=_GAP,
        showscale=False,
        hoverinfo="skip",
    )
    x_axis = {
        "tickvals": centres,
        "ticktext": [
            f"H{head}" if kv_of is None else f"H{head} · KV{kv_of[head]}" for head in range(n_heads)
        ],
        "side": "top",
        "showgrid": False,
        "zeroline": False,
    }
    y_axis = {
        "tickvals": np.arange(n_layers) * step + (side - 1) / 2,
        "ticktext": [
            f"L{layer}" if windows is None else f"L{layer} · {_kind(windows[layer])}"
            for layer in range(n_layers)
        ],
        "autorange": "reversed",
        "showgrid": False,
        "zeroline": False,
        "scaleanchor": "x",
    }
    local = {} if windows is None else {"shapes": window_edges(shape, windows)}
    return style.framed(
        grid,
        height=90 * n_layers + 60,
        top=40,
        left=30 if windows is None else 80,
        plot_bgcolor="white",
        xaxis=x_axis,
        yaxis=y_axis,
        **local,
    )


def _kind(window):
    return "global" if window is None else "local"


def window_edges(attentions, windows):
    """The dashed edge of each local layer's window on each of its thumbnails.

    ``attentions`` is the run's weights, or their shape (n_layers, n_heads, n, n).

    Query ``i`` of a window of ``w`` tokens sees keys ``i - w + 1 … i``: the edge is the
    line ``key = query - w + ½`` between the last hidden key and the first seen, across
    the thumbnail, in its (pooled) cells.

    Returns
    -------
    list of dict, layout shapes (none where a window holds every token)
    """
    n_heads, n = _shape(attentions)[1], _shape(attentions)[-1]
    side, step = _tiling(attentions)

    def cell(token):  # a token coordinate -> the thumbnail's cell coordinate
        return (token + 0.5) * side / n - 0.5

    edges = []
    for layer, window in enumerate(windows):
        if window is None or window >= n:
            continue
        x0, y0 = cell(-0.5), cell(window - 1)  # the left edge, at query w - 1's middle
        x1, y1 = cell(n - window), cell(n - 0.5)  # the bottom edge
        for head in range(n_heads):
            dx, dy = head * step, layer * step
            edges.append(
                {
                    "type": "line",
                    "x0": x0 + dx,
                    "x1": x1 + dx,
                    "y0": y0 + dy,
                    "y1": y1 + dy,
                    "line": {"color": "#d62728", "width": 1, "dash": "dot"},
                }
            )
    return edges


def _shape(attentions):
    return attentions if isinstance(attentions, tuple) else attentions.shape


def _tiling(attentions):
    """A thumbnail's side in cells, and the step from one thumbnail to the next."""
    side = min(_shape(attentions)[-1], THUMBNAIL_MAX)
    return side, side + THUMBNAIL_GAP


def outline(attentions, selected):
    """The rectangle around the thumbnail of ``selected`` (layer, head) in :func:`figure`."""
    layer, head = selected
    side, step = _tiling(attentions)
    return {
        "type": "rect",
        "x0": head * step - 1.5,
        "x1": head * step + side + 0.5,
        "y0": layer * step - 1.5,
        "y1": layer * step + side + 0.5,
        "line": {"color": "#d62728", "width": 3},
    }


def show(container, key, thumbnails, n, selected=None, kv_of=None, windows=None):
    """Draw :func:`grid_figure` (no CSV: the thumbnails are pooled, the heads have their own).

    ``thumbnails`` are every head's, pooled (:func:`engine.tiling.tile_heads`), of a text
    of ``n`` tokens. The outline of ``selected`` goes to the browser apart
    (:func:`app.views.chart.draw`'s ``shapes``): the grid, a large figure, is then the
    same whatever head is selected, and Streamlit resends it as a reference when the head
    or layer changes. ``kv_of`` names each head's key/value head, ``windows`` each
    layer's sliding window (:func:`grid_figure`).
    """
    shape = (*thumbnails.shape[:2], n, n)
    shapes = None if selected is None else [outline(shape, selected)]
    drawn = chart.remembered(grid_figure, thumbnails, n, kv_of, windows)
    chart.draw(container, drawn, key, shapes=shapes)
