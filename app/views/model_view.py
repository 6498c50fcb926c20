"""BertViz's model view: every head of every layer as a thumbnail, the layers × heads grid.

Follows Vig (2019), "A Multiscale Visualization of Attention in the Transformer Model",
section 3.2. Thumbnails are pooled and tiled into one heatmap, so that the grid stays
light at 512 tokens; the head view (:mod:`app.views.line_view`) shows any head in full.
Each thumbnail's cell is the maximum of its block of queries and keys
(:func:`engine.tiling.tile`): a sink head's first column stays bright, where a mean of
its block would dim a weight of 0.73 on the first token to under 0.2 (issue #52).

On a projector (presentation mode) the grid is laid out for the room it has
(:func:`projected`): SmolLM2's 30 layers × 9 heads, drawn layers down, were a narrow
column of small thumbnails on a 1280 × 720 screen, under labels that ran into each
other. There the grid turns (layers across) when that draws its thumbnails larger, and
labels one layer or head in k when they cannot all fit at the projector's type; the
figure is as tall as the grid it draws. Elsewhere the browser alone knows the width: the
labels along the top are written on two lines (``H3`` over ``KV1``: on a phone, 9 heads
of ``H3 · KV1`` ran into each other), and the browser cuts the figure to the grid's
height (:data:`app.views.chart.TO_SCALE`).

Gemma 3's layers alternate five local (sliding-window) layers and a global one: a band
beside each layer's thumbnails is coloured by its kind, named in the legend, so that the
pattern reads at a glance and no layer loses its kind where its label is thinned.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go

from app.state import session
from app.views import axes, chart, layer_kinds, style
from engine import tiling

#: The model view's thumbnails are pooled to at most this many rows and columns, each cell
#: the maximum of its block.
THUMBNAIL_MAX = 48


#: Cells between two thumbnails of the model view, drawn blank (level :data:`_GAP`).
THUMBNAIL_GAP = 2


_GAP = 255

#: The room of a legend's row under the grid: this many pixels and font sizes (plotly.js
#: pushed the margin to 39 px at 12 px and 49 px at 20 px in Chromium).
_LEGEND_ROOM = (26, 1.3)

#: The figure's margins on a projector beyond its labels, in pixels: right and bottom,
#: and the room of a tick and the gap after it, beside each label.
_EDGE, _TICK = 10, 14
#: A line of a tick label is this many font sizes tall (Chromium's box: 1.3 to 1.4).
_LINE = 1.4
#: Room above the top labels for plotly.js's toolbar, which shows over the figure's top
#: right corner while the pointer is on it (a lecturer's pointer often is).
_TOOLBAR = 34


class Projected(NamedTuple):
    """The grid laid out for a room of known size (:func:`projected`)."""

    across: bool  # layers along the top and heads down the side (else as on a desktop)
    pitch: float  # pixels from one thumbnail to the next, as drawn
    top: list  # the labels along the top, "" where one in k is drawn
    down: list  # the labels down the left side, likewise
    margin_top: int
    margin_left: int
    margin_bottom: int  # the legend's room (Gemma 3's kinds of layer), else the edge
    height: int  # the figure's height: the grid's, under its labels


def labels(n_layers, n_heads, kv_of=None, joiner=" · "):
    """The layers' labels (``L3``) and the heads' (``H3 · KV1``).

    ``joiner`` sits between a head's two parts: ``"<br>"`` writes them as two lines. A
    layer's kind (Gemma 3's local and global layers) is said by its band
    (:func:`app.views.layer_kinds.band`), not its label: a label thinned away would take it along.
    """
    layers = [f"L{layer}" for layer in range(n_layers)]
    heads = [
        f"H{head}" if kv_of is None else f"H{head}{joiner}KV{kv_of[head]}"
        for head in range(n_heads)
    ]
    return layers, heads


def projected(n_layers, n_heads, side, room, font, kv_of=None, windows=None):
    """The grid of thumbnails ``side`` cells wide laid out for ``room`` (width, height) pixels.

    Of the two ways to lay it (layers down, as on a desktop, or across) the one whose
    thumbnails are larger; the labels along the top are written on two lines (``H3`` over
    ``KV1``), so that more of them fit. Where the thumbnails are too close for every label
    at ``font`` (a label's width and half a font, or :data:`app.views.axes.LABEL_PITCH`
    fonts of height), one in k is drawn: layers and heads are numbered, so the others are
    found by counting, as on any numbered axis (:mod:`app.views.axes`). With ``windows``
    (Gemma 3) the band of each layer's kind lies beside the grid and the legend under it
    (:func:`app.views.layer_kinds.band`). The figure is as tall as the grid, its labels
    and its legend.

    Returns
    -------
    Projected
    """
    width, height = room
    step = side + THUMBNAIL_GAP
    band = 0 if windows is None else layer_kinds.band_cells(side, THUMBNAIL_GAP) + THUMBNAIL_GAP
    margin_bottom = _EDGE if windows is None else _legend_room(font)
    layers_top, heads_top = labels(n_layers, n_heads, kv_of, "<br>")
    layers_down, heads_down = labels(n_layers, n_heads, kv_of)
    best = None
    for across in (False, True):
        top, down = (layers_top, heads_down) if across else (heads_top, layers_down)
        lines = max(label.count("<br>") + 1 for label in top)
        margin_top = math.ceil(_TOOLBAR + lines * _LINE * font + _TICK)
        margin_left = math.ceil(axes.text_width(down, font) + _TICK)
        cells = (  # the grid's cells across and down, the band with them
            len(top) * step - THUMBNAIL_GAP + (0 if across else band),
            len(down) * step - THUMBNAIL_GAP + (band if across else 0),
        )
        pixel = min(  # a cell of the tiled heatmap, in pixels: x and y share one scale
            (width - margin_left - _EDGE) / cells[0],
            (height - margin_top - margin_bottom) / cells[1],
        )
        if best is None or pixel > best[0]:
            best = (pixel, across, top, down, margin_top, margin_left, cells[1])
    pixel, across, top, down, margin_top, margin_left, rows = best
    pitch = pixel * step
    widest = max(axes.text_width(label.split("<br>"), font) for label in top)
    top_step = max(1, math.ceil((widest + font / 2) / pitch))
    down_step = axes.label_step(pitch, font)
    grid_height = pixel * rows
    return Projected(
        across,
        pitch,
        [label if i % top_step == 0 else "" for i, label in enumerate(top)],
        [label if i % down_step == 0 else "" for i, label in enumerate(down)],
        margin_top,
        margin_left,
        margin_bottom,
        min(height, math.ceil(margin_top + grid_height + margin_bottom)),
    )


def _legend_room(font):
    pixels, fonts = _LEGEND_ROOM
    return math.ceil(pixels + fonts * font)


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


def grid_figure(thumbnails, n, kv_of=None, windows=None, room=None):
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
        Gemma 3's local and global layers, ``local`` (its sliding window, an int) or
        ``global`` (None): a band beside each layer's thumbnails in its kind's colour,
        named in a legend under the grid (:func:`app.views.layer_kinds.band`), and each
        local thumbnail gets its window's edge drawn, a dashed line beyond which its heads
        give no weight.
    room : (int, int), optional
        The figure's width and height in pixels where they are known (presentation mode:
        :func:`app.views.chart.present_room`): the grid is laid out for them
        (:func:`projected`), its labels at :data:`app.views.chart.PRESENT_FONT`, the figure
        as tall as the grid. None (a desktop, a phone: the browser alone knows the width):
        layers down, every label, the heads' on two lines; the browser cuts the figure to
        the grid's height (:data:`app.views.chart.TO_SCALE`).

    The outline of the head shown is drawn over it apart (:func:`outline`).
    """
    n_layers, n_heads = thumbnails.shape[:2]
    shape = (n_layers, n_heads, n, n)
    side, step = _tiling(shape)
    plan = (
        None
        if room is None
        else projected(n_layers, n_heads, side, room, chart.PRESENT_FONT, kv_of, windows)
    )
    across = plan is not None and plan.across
    rows, cols = (n_heads, n_layers) if across else (n_layers, n_heads)
    tiles = np.full((rows * step - THUMBNAIL_GAP, cols * step - THUMBNAIL_GAP), _GAP)
    for layer in range(n_layers):
        for head in range(n_heads):
            row, col = (head, layer) if across else (layer, head)
            tiles[row * step : row * step + side, col * step : col * step + side] = np.round(
                np.clip(thumbnails[layer, head], 0.0, 1.0) * (_GAP - 1)
            )
    viridis = style.weight_colors(np.linspace(0.0, 1.0, 11))
    top = (_GAP - 1) / _GAP
    colorscale = [[top * i / 10, colour] for i, colour in enumerate(viridis)]
    colorscale += [[top + 1e-6, "#ffffff"], [1.0, "#ffffff"]]
    grid = go.Heatmap(
        z=tiles.astype(np.uint8),
        colorscale=colorscale,
        zmin=0,
        zmax=_GAP,
        showscale=False,
        hoverinfo="skip",
    )
    if plan is None:  # the heads' labels on two lines: on a phone, one ran into the next
        down_side = labels(n_layers, n_heads, kv_of)[0]
        along_top = labels(n_layers, n_heads, kv_of, "<br>")[1]
    else:
        along_top, down_side = plan.top, plan.down
    x_axis = {
        "tickvals": np.arange(cols) * step + (side - 1) / 2,
        "ticktext": along_top,
        "tickangle": 0,  # level, every label on its own column: plotly.js would slant them
        "side": "top",
        "showgrid": False,
        "zeroline": False,
        "constrain": "domain",  # the grid under its labels, not a blank range between
    }
    y_axis = {
        "tickvals": np.arange(rows) * step + (side - 1) / 2,
        "ticktext": down_side,
        "autorange": "reversed",
        "showgrid": False,
        "zeroline": False,
        "scaleanchor": "x",
        "constrain": "domain",
        "constraintoward": "top",
    }
    traces, kinds = [grid], {}
    if windows is not None:
        traces += layer_kinds.band(windows, side, THUMBNAIL_GAP, across)
        kinds = {
            "shapes": window_edges(shape, windows, across),
            "showlegend": True,  # under the grid, at its left
            "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yanchor": "top"},
        }
    if plan is None:
        lines = max(label.count("<br>") + 1 for label in along_top)
        font = axes.SCREEN_FONT
        sizes = {
            "height": 90 * n_layers + 60,  # the browser cuts it to the grid's (chart.TO_SCALE)
            "top": math.ceil(lines * _LINE * font + _TICK),
            "left": 30,
            "bottom": _EDGE if windows is None else _legend_room(font),
        }
    else:
        sizes = {
            "height": plan.height,
            "top": plan.margin_top,
            "left": plan.margin_left,
            "bottom": plan.margin_bottom,
        }
    return style.framed(
        traces,
        plot_bgcolor="white",
        xaxis=x_axis,
        yaxis=y_axis,
        meta=chart.TO_SCALE,
        **sizes,
        **kinds,
    )


def window_edges(attentions, windows, across=False):
    """The dashed edge of each local layer's window on each of its thumbnails.

    ``attentions`` is the run's weights, or their shape (n_layers, n_heads, n, n);
    ``across``: the grid has its layers across (:func:`projected`).

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
            dx, dy = (layer * step, head * step) if across else (head * step, layer * step)
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


def outline(attentions, selected, across=False):
    """The rectangle around the thumbnail of ``selected`` (layer, head) in :func:`figure`.

    ``across``: the grid has its layers across (:func:`projected`).
    """
    layer, head = selected
    row, col = (head, layer) if across else (layer, head)
    side, step = _tiling(attentions)
    return {
        "type": "rect",
        "x0": col * step - 1.5,
        "x1": col * step + side + 0.5,
        "y0": row * step - 1.5,
        "y1": row * step + side + 0.5,
        "line": {"color": "#d62728", "width": 3},
    }


def show(container, key, thumbnails, n, selected=None, kv_of=None, windows=None):
    """Draw :func:`grid_figure` (no CSV: the thumbnails are pooled, the heads have their own).

    ``thumbnails`` are every head's, pooled (:func:`engine.tiling.tile_heads`), of a text
    of ``n`` tokens. The outline of ``selected`` goes to the browser apart
    (:func:`app.views.chart.draw`'s ``shapes``): the grid, a large figure, is then the
    same whatever head is selected, and Streamlit resends it as a reference when the head
    or layer changes. ``kv_of`` names each head's key/value head, ``windows`` each
    layer's sliding window (:func:`grid_figure`). In presentation mode the grid is laid
    out for the screen (:func:`projected`).
    """
    shape = (*thumbnails.shape[:2], n, n)
    room = chart.present_room() if session.presenting() else None
    across = (
        room is not None
        and projected(
            *shape[:2], _tiling(shape)[0], room, chart.PRESENT_FONT, kv_of, windows
        ).across
    )
    shapes = None if selected is None else [outline(shape, selected, across)]
    drawn = chart.remembered(grid_figure, thumbnails, n, kv_of, windows, room)
    chart.draw(container, drawn, key, shapes=shapes)
