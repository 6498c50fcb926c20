"""The model view on a projector (:func:`app.views.model_view.projected`), as pure figures.

Turned or not, each thumbnail is its own head's weights, its tick and outline on it; the
labels drawn are far enough apart for their font; the grid fits its room.
"""

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.views import axes, model_view

#: A tick label's box is 1.3 to 1.4 fonts tall in Chromium (:data:`app.views.axes.LABEL_PITCH`).
LINE = 1.3
FONT = 20


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
    assert fig.layout.xaxis.ticktext == tuple(f"H{h} · KV{h // 3}" for h in range(9))
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
    grid = (cols * plan.pitch - gap, rows * plan.pitch - gap)
    assert plan.margin_left + grid[0] <= width + 1e-6
    assert plan.margin_top + grid[1] <= height + 1e-6
    assert plan.height <= height
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
