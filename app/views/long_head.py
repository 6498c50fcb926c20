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
#: The sizes a long text's map is computed at: :data:`OVERVIEW_TILES`, :data:`ZOOM_CELLS`.
SIZES = (OVERVIEW_TILES, ZOOM_CELLS)
#: What each reduction is called in a title.
REDUCTION_NAMES = {"max": "maximum", "mean": "mean"}


def tile_figure(tiles, title, *, rows=(0, None), cols=(0, None), value="weight", blank=""):
    """An attention map's tiles as one heatmap, on the tokens' positions.

    Parameters
    ----------
    tiles : engine.tiling.Tiles, of the block starting at query ``rows[0]``, key ``cols[0]``
    title : str
    rows, cols : (int, int), the queries and keys the block covers (for the axes)
    value : str, what the cells are: ``"weight"`` on 0–1 (or 0 to the largest mean), any
        other name (``"score"``) on the diverging scale around 0
    blank : str, what the note says of blank (non-finite) tiles, when there are some
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
    finite = np.isfinite(values)
    n_q, n_k = tiles.row_edges[-1], tiles.col_edges[-1]
    note = f"{len(y)} × {len(x)} tiles of {n_q:,} × {n_k:,} tokens, each the {name} of its block"
    if value == "weight":
        top = float(values.max()) if tiles.reduction == "mean" else 1.0
        colours = {"colorscale": style.WEIGHTS_SCALE, "zmin": 0.0, "zmax": top if top > 0 else 1.0}
        if tiles.reduction == "mean":
            note += f"; colours up to the largest mean, {top:.4f}"
    else:
        limit = float(np.abs(values[finite]).max()) if finite.any() else 1.0
        limit = limit if limit > 0 else 1.0
        colours = {"colorscale": style.DIVERGING_SCALE, "zmid": 0.0, "zmin": -limit, "zmax": limit}
    if blank and not finite.all():
        note += f"; {blank}"
    trace = go.Heatmap(
        z=np.where(finite, values, np.nan).astype(np.float32),
        x=x,
        y=y,
        customdata=span,
        colorbar=style.COLORBAR,
        hovertemplate="queries %{customdata[0]}–%{customdata[1]}<br>keys "
        f"%{{customdata[2]}}–%{{customdata[3]}}<br>{name} {value} %{{z:.4f}}<extra></extra>",
        **colours,
    )
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


def cells_figure(weights, labels, rows, cols, title, value="weight"):
    """The exact weights of queries ``rows`` × keys ``cols``, each axis with its tokens.

    Parameters
    ----------
    weights : ndarray of shape (rows[1] - rows[0], cols[1] - cols[0])
    labels : sequence of n str, every token of the text
    rows, cols : (int, int), start and stop positions
    value : str, as :func:`tile_figure` takes it: other than ``"weight"``, on the diverging
        scale, a −∞ cell (masked) blank and the title saying so
    """
    z = np.asarray(weights, dtype=np.float32)
    finite = np.isfinite(z)
    if value == "weight":
        colours = {"colorscale": style.WEIGHTS_SCALE, "zmin": 0.0, "zmax": 1.0}
    else:
        limit = float(np.abs(z[finite]).max()) if finite.any() else 1.0
        limit = limit if limit > 0 else 1.0
        colours = {"colorscale": style.DIVERGING_SCALE, "zmid": 0.0, "zmin": -limit, "zmax": limit}
        if not finite.all():
            title = style.with_note(title, "blank cells are −∞ (masked)")
    z = np.where(finite, z, np.nan).astype(np.float32)  # a masked cell: a gap
    trace = go.Heatmap(
        z=z,
        x=axes.axis_labels(token_labels(labels, *cols)),
        y=axes.axis_labels(token_labels(labels, *rows)),
        hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{value} %{{z:.4f}}<extra></extra>",
        colorbar=style.COLORBAR,
        **colours,
    )
    top = 50 if finite.all() or value == "weight" else style.NOTE_TOP
    fig = heatmap.token_figure(trace, title, *z.shape, "key", "query", top=top)
    return heatmap.write_legibly(fig, 0, heatmap.numbers(z))


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


def show_overview(container, key, tiles, title, rows, cols, *, zoom=None, **options):
    """Draw :func:`tile_figure` of the whole map with the zoom's box; the CSV is the tiles.

    A click on a tile moves the zoom of :func:`zoom_sliders` (key ``zoom``, by default
    ``key``: several maps may share one zoom) to the tile's middle token, query and key,
    and runs the page again. ``options`` go to :func:`tile_figure`.
    """
    click = chart.draw(
        container,
        chart.remembered(tile_figure, tiles, title, **options),
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
    st.session_state[_moved(zoom or key)] = tuple(int(m) for m in middles)
    st.rerun()


def show_zoom(container, key, zoomed, labels, rows, cols, title, value="weight", blank=""):
    """Draw the zoom: exact cells (an ndarray) with their tokens, or the tiles of its block.

    Returns the cell clicked since the last run, as :func:`app.views.chart.draw` does
    (exact cells only). ``value`` and ``blank`` as :func:`tile_figure` takes them.
    """
    if isinstance(zoomed, np.ndarray):
        row_names, col_names = token_labels(labels, *rows), token_labels(labels, *cols)
        return chart.draw(
            container,
            cells_figure(zoomed, labels, rows, cols, title, value),
            key,
            table=heatmap.table(zoomed, row_names, col_names),
            clicks=True,
        )
    chart.draw(
        container,
        tile_figure(zoomed, title, rows=rows, cols=cols, value=value, blank=blank),
        key,
        table=tile_table(zoomed, rows, cols),
    )
    return None


def show_map(container, key, maps, labels, rows, cols, title, *, zoom, value="weight", blank=""):
    """One n × n map of a long text: the tiles with the zoom's box, and beside them the zoom.

    ``maps`` is ``(overview, zoomed)`` (:func:`app.data.long_layers.head_map`); ``zoom``
    the key of the :func:`zoom_sliders` the page's maps share; ``value`` and ``blank`` as
    :func:`tile_figure` takes them. Returns the zoom's cell clicked since the last run, in
    the zoom's own rows and columns (exact cells only).
    """
    overview, zoomed = maps
    left, right = container.columns(2)
    show_overview(left, key, overview, title, rows, cols, zoom=zoom, value=value, blank=blank)
    return show_zoom(
        right, f"{key}_zoom", zoomed, labels, rows, cols, f"Zoom: {title}", value, blank
    )


def controls(reduction_key, zoom_key, token, n):
    """A long map's controls: the tiles' reduction (a radio) and the zoom (:func:`zoom_sliders`).

    Returns
    -------
    reduction : ``"max"`` or ``"mean"``
    rows, cols : (int, int), the zoom's queries and keys, start and stop
    """
    reduction = st.radio(
        "Each tile shows its block's",
        list(REDUCTION_NAMES),
        format_func=REDUCTION_NAMES.get,
        horizontal=True,
        key=reduction_key,
    )
    return (reduction, *zoom_sliders(st, zoom_key, token, n))
