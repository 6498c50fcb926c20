"""The model view (:mod:`app.views.model_view`), as pure figures: on a projector
(:func:`app.views.model_view.projected`), on a phone, and Gemma 3's kinds of layer.

Turned or not, each thumbnail is its own head's weights, its tick and outline on it; the
labels drawn are far enough apart for their font; the grid fits its room, and the figure
is as tall as the grid; every layer's kind is drawn, its label thinned or not.
"""

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.views import axes, chart, layer_kinds, model_view

#: A tick label's box is 1.3 to 1.4 fonts tall in Chromium (:data:`app.views.axes.LABEL_PITCH`).
LINE = 1.3
FONT = 20
#: A 390 px phone's chart: the page less Streamlit's padding (1 rem a side), as Chromium drew it.
PHONE_CHART = 358
#: Gemma 3 1B's 26 layers: five local (a window of 512 tokens), then a global one.
GEMMA_3 = [None if layer % 6 == 5 else 512 for layer in range(26)]


def thumbnails(n_layers, n_heads, side, seed=0):
    """Every head's thumbnail distinct: random weights in [0, 1]."""
    return np.random.default_rng(seed).random((n_layers, n_heads, side, side))


def tile(z, row, col, side):
    """The thumbnail at ``row``, ``col`` of a grid's heatmap."""
    step = side + model_view.THUMBNAIL_GAP
    return np.asarray(z)[row * step : row * step + side, col * step : col * step + side]


@pytest.mark.parametrize("room", [None, (1192, 544), (1832, 904)], ids=["desktop", "720", "1080"])
def test_each_thumbnail_is_its_own_heads_weights_where_its_ticks_and_outline_say(room):
    n_layers, n_heads, side = 30, 9, 16
    shape = (n_layers, n_heads, side, side)
    grid, kv_of = thumbnails(n_layers, n_heads, side), np.repeat(np.arange(3), 3)
    fig = model_view.grid_figure(grid, side, kv_of, room=room)
    plan = (
        None if room is None else model_view.projected(n_layers, n_heads, side, room, FONT, kv_of)
    )
    across = plan is not None and plan.across
    assert across == (room is not None)  # a landscape screen turns a tall grid
    z = fig.data[0].z
    columns, rows = np.asarray(fig.layout.xaxis.tickvals), np.asarray(fig.layout.yaxis.tickvals)
    for layer, head in [(0, 0), (13, 8), (29, 4)]:
        row, col = (head, layer) if across else (layer, head)
        np.testing.assert_array_equal(tile(z, row, col, side), np.round(grid[layer, head] * 254))
        box = model_view.outline(shape, (layer, head), across)
        assert abs(columns - (box["x0"] + box["x1"]) / 2).argmin() == col
        assert abs(rows - (box["y0"] + box["y1"]) / 2).argmin() == row


def test_on_a_desktop_every_layer_and_head_is_named_layers_down():
    fig = model_view.grid_figure(thumbnails(30, 9, 8), 8, np.repeat(np.arange(3), 3))
    assert fig.layout.xaxis.ticktext == tuple(f"H{h}<br>KV{h // 3}" for h in range(9))
    assert fig.layout.yaxis.ticktext == tuple(f"L{layer}" for layer in range(30))


def test_a_turned_grid_draws_each_local_layers_window_edge_on_its_own_column():
    """Gemma 3's edges follow their layer's thumbnails across (the layer a column)."""
    n, windows = 12, [4, None, 4, None]
    attentions = np.zeros((4, 2, n, n))
    step = n + model_view.THUMBNAIL_GAP
    edges = model_view.window_edges(attentions, windows, across=True)
    down = model_view.window_edges(attentions, windows)
    assert len(edges) == len(down) == 4  # two local layers, two heads each
    local = [(layer, head) for layer in (0, 2) for head in range(2)]  # in the edges' order
    for edge, flat, (layer, head) in zip(edges, down, local, strict=True):
        within = (flat["x0"] - head * step, flat["y0"] - layer * step)  # in its thumbnail
        assert 0 <= within[1] < n
        assert (edge["x0"] - layer * step, edge["y0"] - head * step) == pytest.approx(within)
        assert (edge["x1"] - layer * step, edge["y1"] - head * step) == pytest.approx(
            (flat["x1"] - head * step, flat["y1"] - layer * step)
        )


@pytest.mark.parametrize(
    ("n_layers", "n_heads", "kv_of"),
    [(30, 9, np.repeat(np.arange(3), 3)), (6, 12, None)],
    ids=["smollm2", "minilm"],
)
def test_on_a_phone_the_heads_labels_fit_their_columns_level(n_layers, n_heads, kv_of):
    """On a 390 px phone SmolLM2's ``H3 · KV1`` ran into each other, slanted by plotly.js.

    The grid is as wide as the chart less its margins (the browser cuts the height to it),
    so each column is that width over the heads; every label, on its lines, must fit its
    column, level. (The width is :func:`app.views.axes.text_width`'s estimate, which runs
    wide: MiniLM's ``H10``, 22 px by it, was 20 px as Chromium drew it, 6 px from ``H11``.)
    """
    side = 16
    fig = model_view.grid_figure(thumbnails(n_layers, n_heads, side), side, kv_of)
    margin, step = fig.layout.margin, side + model_view.THUMBNAIL_GAP
    pixel = (PHONE_CHART - margin.l - margin.r) / (n_heads * step - model_view.THUMBNAIL_GAP)
    pitch = pixel * step
    font = axes.SCREEN_FONT
    widest = max(axes.text_width(label.split("<br>"), font) for label in fig.layout.xaxis.ticktext)
    assert widest < pitch, (widest, pitch)
    assert fig.layout.xaxis.tickangle == 0
    lines = max(label.count("<br>") + 1 for label in fig.layout.xaxis.ticktext)
    assert margin.t >= lines * LINE * font


def test_off_a_projector_the_grid_is_drawn_to_scale_and_cut_to_it_by_the_browser():
    """The server cannot know a phone's width: the figure says it is drawn to scale, and the
    browser cuts the blank under its grid (narrow.js's blankUnder, tests/js)."""
    fig = model_view.grid_figure(thumbnails(30, 9, 8), 8)
    assert fig.layout.meta == chart.TO_SCALE
    assert fig.layout.yaxis.scaleanchor == "x"
    assert (fig.layout.yaxis.constrain, fig.layout.yaxis.constraintoward) == ("domain", "top")


@pytest.mark.parametrize("kv_of", [np.repeat(np.arange(3), 3), None], ids=["smollm2", "plain"])
def test_on_a_projector_the_figure_is_as_tall_as_the_grid_it_draws(kv_of):
    """SmolLM2's grid turned at 1280 × 720 was drawn 320 px tall in a figure of 544 px: the
    projector's floor of 560 px raised it. Measured on the figure as presentation mode lays
    it out: its plot (height less margins) holds the grid and no more."""
    n_layers, n_heads, side = 30, 9, 16
    room = chart.present_room()
    fig = model_view.grid_figure(thumbnails(n_layers, n_heads, side), side, kv_of, room=room)
    chart.presentation_layout(fig)
    z, margin = np.asarray(fig.data[0].z), fig.layout.margin
    pixel = min(
        (room[0] - margin.l - margin.r) / z.shape[1],
        (fig.layout.height - margin.t - margin.b) / z.shape[0],
    )
    assert fig.layout.height - margin.t - margin.b <= z.shape[0] * pixel + 1
    assert fig.layout.height <= room[1]


def band_colours(trace):
    """The colour of each cell of a heatmap of codes, from its own colour scale."""
    codes = np.ravel(np.asarray(trace.z, dtype=float))
    position = (codes - trace.zmin) / (trace.zmax - trace.zmin)
    stops = [(float(at), colour) for at, colour in trace.colorscale]
    return [
        None if np.isnan(p) else [colour for at, colour in stops if at <= p][-1] for p in position
    ]


@pytest.mark.parametrize("room", [None, (1192, 544), (1832, 904)], ids=["desktop", "720", "1080"])
def test_every_gemma_3_layer_shows_its_kind_where_its_label_is_thinned_too(room):
    """Thinned one in 2, Gemma 3's labels named only even layers: never a global one (5, 11,
    17, 23). A band beside each layer's thumbnails, in its kind's colour that the legend
    names, says every layer's kind; its hover names the layer and its kind."""
    n_layers, n_heads, side = len(GEMMA_3), 4, 16
    fig = model_view.grid_figure(
        thumbnails(n_layers, n_heads, side), side, np.arange(4) // 2, GEMMA_3, room
    )
    plan = None if room is None else model_view.projected(n_layers, n_heads, side, room, FONT)
    across = plan is not None and plan.across
    layer_axis = fig.layout.xaxis if across else fig.layout.yaxis
    if room == (1192, 544):
        assert "" in layer_axis.ticktext  # thinned: some layers are not labelled
    band = next(trace for trace in fig.data[1:] if trace.type == "heatmap")
    legend = {trace.name: trace.marker.color for trace in fig.data if trace.type == "scatter"}
    assert legend == {
        "local (a window of 512 tokens)": layer_kinds.KIND_COLORS["local"],
        "global (every token before)": layer_kinds.KIND_COLORS["global"],
    }
    colours = band_colours(band)
    names = np.ravel(np.asarray(band.text, dtype=object))
    edges = np.asarray(band.x if across else band.y, dtype=float)  # along the layers
    beside = np.asarray(band.y if across else band.x, dtype=float)  # across them
    assert beside.max() < -0.5  # before the grid's first row or column, apart from it
    ticks = np.asarray(layer_axis.tickvals)
    for layer, window in enumerate(GEMMA_3):
        kind = "local" if window else "global"
        cell = 2 * layer  # a layer's bin, then the gap to the next (blank)
        assert colours[cell] == layer_kinds.KIND_COLORS[kind]
        assert kind in names[cell]
        assert names[cell].startswith(f"L{layer}:")
        assert (edges[cell] + edges[cell + 1]) / 2 == pytest.approx(ticks[layer])
        assert edges[cell + 1] - edges[cell] == side
        if cell + 1 < len(colours):
            assert colours[cell + 1] is None


@settings(max_examples=60, deadline=None)
@given(
    n_layers=st.integers(1, 48),
    n_heads=st.integers(1, 40),
    side=st.integers(1, model_view.THUMBNAIL_MAX),
    width=st.integers(900, 2600),
    height=st.integers(450, 1400),
    grouped=st.booleans(),
    local=st.booleans(),
)
def test_labels_drawn_on_a_projector_never_touch_and_the_grid_fits_its_room(
    n_layers, n_heads, side, width, height, grouped, local
):
    kv_of = np.arange(n_heads) // 2 if grouped else None
    windows = [512 if layer % 2 else None for layer in range(n_layers)] if local else None
    plan = model_view.projected(n_layers, n_heads, side, (width, height), FONT, kv_of, windows)
    cols, rows = (n_layers, n_heads) if plan.across else (n_heads, n_layers)
    assert (len(plan.top), len(plan.down)) == (cols, rows)
    pixel = plan.pitch / (side + model_view.THUMBNAIL_GAP)
    gap = model_view.THUMBNAIL_GAP * pixel
    band = (
        0
        if not local
        else (layer_kinds.band_cells(side, model_view.THUMBNAIL_GAP) + model_view.THUMBNAIL_GAP)
        * pixel
    )
    grid = (
        cols * plan.pitch - gap + (0 if plan.across else band),
        rows * plan.pitch - gap + (band if plan.across else 0),
    )
    assert plan.margin_left + grid[0] <= width + 1e-6
    assert plan.margin_top + grid[1] + plan.margin_bottom <= height + 1e-6
    drawn = plan.margin_top + grid[1] + plan.margin_bottom  # as tall as it draws, to a pixel
    assert plan.height == pytest.approx(min(height, drawn), abs=1)
    assert plan.top[0]
    assert plan.down[0]
    top = [(i * plan.pitch, label.split("<br>")) for i, label in enumerate(plan.top) if label]
    for (a, first), (b, second) in pairwise(top):
        assert b - a >= (axes.text_width(first, FONT) + axes.text_width(second, FONT)) / 2
    side_drawn = [i * plan.pitch for i, label in enumerate(plan.down) if label]
    assert all(b - a >= LINE * FONT for a, b in pairwise(side_drawn))
    lines = max(len(label.split("<br>")) for label in plan.top)
    assert plan.margin_top >= lines * LINE * FONT
    assert plan.margin_left >= axes.text_width(plan.down, FONT)
