"""BertViz's model view: every head of every layer as a thumbnail, the layers × heads grid.

Follows Vig (2019), "A Multiscale Visualization of Attention in the Transformer Model",
section 3.2. Thumbnails are pooled and tiled into one heatmap, so that the grid stays
light at 512 tokens; the head view (:mod:`app.views.line_view`) shows any head in full.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.views import chart, style

#: The model view's thumbnails are pooled to at most this many rows and columns.
THUMBNAIL_MAX = 48


def _pool(matrix, size):
    """Block-average a square matrix down to at most ``size`` × ``size`` (display only)."""
    n = matrix.shape[-1]
    if n <= size:
        return matrix
    edges = np.linspace(0, n, size + 1).round().astype(int)
    rows = np.add.reduceat(matrix, edges[:-1], axis=-2) / np.diff(edges)[:, None]
    return np.add.reduceat(rows, edges[:-1], axis=-1) / np.diff(edges)[None, :]


#: Cells between two thumbnails of the model view, drawn blank (level :data:`_GAP`).
THUMBNAIL_GAP = 2


_GAP = 255


def figure(attentions, kv_of=None, windows=None):
    """Every head of every layer as a thumbnail: the layers × heads grid.

    Thumbnails are block-averaged to at most :data:`THUMBNAIL_MAX` tokens a side, sent
    as 8-bit levels (weight × 254; 255 marks the gaps between them) and tiled into one
    heatmap: one trace, where 72 subplots cost plotly.py and plotly.js about a second
    each. The grid stays under a megabyte even at 512 tokens; the head view shows any
    head in full.

    Parameters
    ----------
    attentions : ndarray of shape (n_layers, n_heads, n, n)
    kv_of : int ndarray of shape (n_heads,), optional
        Grouped-query attention's key/value head of each query head, named under each
        column (``H3 · KV1``): the heads that share their keys and values.
    windows : sequence of (int or None), one per layer, optional
        Gemma 3's local and global layers: each row is named ``local`` (its sliding
        window, an int) or ``global`` (None), and each local thumbnail gets its window's
        edge drawn, a dashed line beyond which its heads give no weight.

    The outline of the head shown is drawn over it apart (:func:`outline`).
    """
    n_layers, n_heads = attentions.shape[:2]
    side, step = _tiling(attentions)
    tiles = np.full((n_layers * step - THUMBNAIL_GAP, n_heads * step - THUMBNAIL_GAP), _GAP)
    for layer in range(n_layers):
        for head in range(n_heads):
            pooled = _pool(np.asarray(attentions[layer, head], dtype=np.float64), THUMBNAIL_MAX)
            tiles[layer * step : layer * step + side, head * step : head * step + side] = np.round(
                np.clip(pooled, 0.0, 1.0) * (_GAP - 1)
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
    local = {} if windows is None else {"shapes": window_edges(attentions, windows)}
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

    Query ``i`` of a window of ``w`` tokens sees keys ``i - w + 1 … i``: the edge is the
    line ``key = query - w + ½`` between the last hidden key and the first seen, across
    the thumbnail, in its (pooled) cells.

    Returns
    -------
    list of dict, layout shapes (none where a window holds every token)
    """
    n_heads, n = attentions.shape[1], attentions.shape[-1]
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


def _tiling(attentions):
    """A thumbnail's side in cells, and the step from one thumbnail to the next."""
    side = min(attentions.shape[-1], THUMBNAIL_MAX)
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


def show(container, key, attentions, selected=None, kv_of=None, windows=None):
    """Draw :func:`figure` (no CSV: the thumbnails are pooled, the heads have their own).

    The outline of ``selected`` goes to the browser apart (:func:`app.views.chart.draw`'s
    ``shapes``): the grid, a large figure, is then the same whatever head is selected, and
    Streamlit resends it as a reference when the head or layer changes. ``kv_of`` names
    each head's key/value head, ``windows`` each layer's sliding window (:func:`figure`).
    """
    shapes = None if selected is None else [outline(attentions, selected)]
    drawn = chart.remembered(figure, attentions, kv_of, windows)
    chart.draw(container, drawn, key, shapes=shapes)
