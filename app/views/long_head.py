"""A long text's head view: the whole map as an image of tiles, and a zoom to exact cells.

At 4,096 tokens one head's weights are 16.7 million cells: the map is drawn as at most
:data:`OVERVIEW_TILES` × :data:`OVERVIEW_TILES` tiles, each its block's maximum or mean
(:func:`engine.tiling.tile`; the title says which), and the zoom's box drawn over it. The
zoom draws the same reduction over the queries and keys it covers, and once both ranges
fit :data:`ZOOM_CELLS` tokens, the exact weights with their tokens, as the short text's
head view does. The zoom is two range sliders (:func:`zoom_sliders`), and a click on a
tile of the map moves it there.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.views import axes, chart, heatmap, style

#: Tiles on a side of the whole map.
OVERVIEW_TILES = 256
#: The zoom draws exact cells once its queries and keys are each at most this many tokens.
ZOOM_CELLS = 64
#: The line and neuron views of a long text draw this many tokens around the picked query.
AROUND = 32
#: What each reduction is called in a title.
REDUCTION_NAMES = {"max": "maximum", "mean": "mean"}


def tile_figure(tiles, title, *, rows=(0, None), cols=(0, None)):
    """An attention map's tiles as one heatmap, on the tokens' positions.

    Parameters
    ----------
    tiles : engine.tiling.Tiles, of the block starting at query ``rows[0]``, key ``cols[0]``
    title : str
    rows, cols : (int, int), the queries and keys the block covers (for the axes)
    """
    values = np.asarray(tiles.values, dtype=np.float32)
    q0, k0 = rows[0], cols[0]
    y = q0 + (tiles.row_edges[:-1] + tiles.row_edges[1:] - 1) / 2  # each tile's middle token
    x = k0 + (tiles.col_edges[:-1] + tiles.col_edges[1:] - 1) / 2
    first = q0 + tiles.row_edges[:-1], k0 + tiles.col_edges[:-1]
    last = q0 + tiles.row_edges[1:] - 1, k0 + tiles.col_edges[1:] - 1
    span = np.stack(
        [np.broadcast_to(a[:, None] if i < 2 else a[None, :], values.shape) for i, a in
         enumerate((first[0], last[0], first[1], last[1]))],
        axis=-1,
    ).astype(np.int32)  # fmt: skip
    name = REDUCTION_NAMES[tiles.reduction]
    top = float(values.max()) if tiles.reduction == "mean" else 1.0
    trace = go.Heatmap(
        z=values,
        x=x,
        y=y,
        customdata=span,
        colorscale=style.WEIGHTS_SCALE,
        zmin=0.0,
        zmax=top if top > 0 else 1.0,
        colorbar=style.COLORBAR,
        hovertemplate="queries %{customdata[0]}–%{customdata[1]}<br>keys "
        f"%{{customdata[2]}}–%{{customdata[3]}}<br>{name} weight %{{z:.4f}}<extra></extra>",
    )
    n_q, n_k = tiles.row_edges[-1], tiles.col_edges[-1]
    note = f"{len(y)} × {len(x)} tiles of {n_q:,} × {n_k:,} tokens, each the {name} of its block"
    if tiles.reduction == "mean":
        note += f"; colours up to the largest mean, {top:.4f}"
    axis = {"showgrid": False, "zeroline": False}
    return style.framed(
        trace,
        style.with_note(title, note),
        520,
        top=style.NOTE_TOP,
        bottom=40,
        left=60,
        xaxis=axis
        | {"title": "key position", "side": "top", "constrain": "domain"}
        | {"range": [k0 - 0.5, k0 + n_k - 0.5]},
        yaxis=axis
        | {"title": "query position", "scaleanchor": "x", "constrain": "domain"}
        | {"range": [q0 + n_q - 0.5, q0 - 0.5]},
    )


def token_labels(labels, start, stop):
    """The tokens ``start`` … ``stop - 1`` named with their positions (``1203 it``)."""
    return [f"{i} {labels[i]}" for i in range(start, stop)]


def cells_figure(weights, labels, rows, cols, title):
    """The exact weights of queries ``rows`` × keys ``cols``, each axis with its tokens.

    Parameters
    ----------
    weights : ndarray of shape (rows[1] - rows[0], cols[1] - cols[0])
    labels : sequence of n str, every token of the text
    rows, cols : (int, int), start and stop positions
    """
    z = np.asarray(weights, dtype=np.float32)
    trace = go.Heatmap(
        z=z,
        x=axes.axis_labels(token_labels(labels, *cols)),
        y=axes.axis_labels(token_labels(labels, *rows)),
        hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.4f}<extra></extra>",
        colorscale=style.WEIGHTS_SCALE,
        zmin=0.0,
        zmax=1.0,
        colorbar=style.COLORBAR,
        **heatmap.cell_text(z.shape),
    )
    return heatmap.token_figure(trace, title, *z.shape, "key", "query")


def around(token, n, size):
    """The ``size`` tokens (fewer in a shorter text) centred on ``token``: (start, stop)."""
    start = min(max(token - size // 2, 0), max(n - size, 0))
    return start, min(start + size, n)


def keys_around(token, n, seen):
    """The keys around ``token`` (:data:`AROUND` tokens) among those it sees, a slice of ``seen``.

    ``seen`` is the slice of the ``n`` tokens the query may attend to
    (:func:`engine.layer_config.visible_keys`).
    """
    start, stop = around(token, n, AROUND)
    sees = range(n)[seen]
    return slice(max(start - sees.start, 0), max(min(stop, sees.stop) - sees.start, 0))


def fits(rows, cols):
    """Whether the zoom's queries and keys are few enough to draw as exact cells."""
    return rows[1] - rows[0] <= ZOOM_CELLS and cols[1] - cols[0] <= ZOOM_CELLS


def zoom_box(rows, cols):
    """The zoom's rectangle over the tiled map, in token positions (a layout shape)."""
    return {
        "type": "rect",
        "x0": cols[0] - 0.5,
        "x1": cols[1] - 0.5,
        "y0": rows[0] - 0.5,
        "y1": rows[1] - 0.5,
        "line": {"color": "#d62728", "width": 2},
    }


def tile_table(tiles, rows=(0, None), cols=(0, None)):
    """One row per query tile, one column per key tile, named by their token ranges."""
    q0, k0 = rows[0], cols[0]

    def names(edges, offset):
        return [f"{offset + a}-{offset + b - 1}" for a, b in itertools.pairwise(edges)]

    return pd.DataFrame(
        np.asarray(tiles.values, dtype=np.float64),
        index=pd.Index(names(tiles.row_edges, q0), name=f"queries ({tiles.reduction})"),
        columns=names(tiles.col_edges, k0),
    )


def show_tiles(container, key, tiles, title):
    """Draw :func:`tile_figure` of a whole map alone; the CSV is the tiles."""
    chart.draw(container, chart.remembered(tile_figure, tiles, title), key, table=tile_table(tiles))


def zoom_sliders(container, key, token, n):
    """The zoom: a range slider of queries and one of keys, each starting around ``token``.

    Their keys name ``token``, so that another token picked starts the zoom around it; a
    tile clicked on the map (:func:`show_overview`) moves both to that tile.

    Returns
    -------
    rows, cols : (int, int), the queries and keys shown, start and stop
    """
    names = f"{key}_queries_{token}", f"{key}_keys_{token}"
    moved = st.session_state.pop(_moved(key), None)  # a tile clicked in the last run
    for name, centre in zip(names, moved or (token, token), strict=True):
        if moved is not None or name not in st.session_state:
            start, stop = around(centre, n, ZOOM_CELLS)
            st.session_state[name] = (start, stop - 1)
    left, right = container.columns(2)
    first, last = left.slider("Zoom: queries", 0, n - 1, key=names[0])
    rows = (first, last + 1)
    first, last = right.slider("Zoom: keys", 0, n - 1, key=names[1])
    return rows, (first, last + 1)


def _moved(key):
    return f"_{key}_moved_to"


def show_overview(container, key, tiles, title, rows, cols):
    """Draw :func:`tile_figure` of the whole map with the zoom's box; the CSV is the tiles.

    A click on a tile moves the zoom of :func:`zoom_sliders` (same ``key``) to the tile's
    middle token, query and key, and runs the page again.
    """
    click = chart.draw(
        container,
        chart.remembered(tile_figure, tiles, title),
        key,
        table=tile_table(tiles),
        shapes=[zoom_box(rows, cols)],
        clicks=True,
    )
    if click is None or click.get("row") is None:
        return
    row, col = int(click["row"]), int(click["col"])
    down, across = tiles.row_edges, tiles.col_edges
    middles = (down[row] + down[row + 1] - 1) // 2, (across[col] + across[col + 1] - 1) // 2
    st.session_state[_moved(key)] = tuple(int(m) for m in middles)
    st.rerun()


def show_zoom(container, key, zoomed, labels, rows, cols, title):
    """Draw the zoom: exact cells (an ndarray) with their tokens, or the tiles of its block.

    Returns the cell clicked since the last run, as :func:`app.views.chart.draw` does
    (exact cells only).
    """
    if isinstance(zoomed, np.ndarray):
        row_names, col_names = token_labels(labels, *rows), token_labels(labels, *cols)
        return chart.draw(
            container,
            cells_figure(zoomed, labels, rows, cols, title),
            key,
            table=heatmap.table(zoomed, row_names, col_names),
            clicks=True,
        )
    chart.draw(
        container,
        tile_figure(zoomed, title, rows=rows, cols=cols),
        key,
        table=tile_table(zoomed, rows, cols),
    )
    return None
