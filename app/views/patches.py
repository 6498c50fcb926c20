"""Attention over image patches: the image with its patch grid, and patches attending to patches.

What one patch attends to is drawn over the picture, transparent where a patch gets
nothing; the full patch × patch matrix is a heatmap whose rows and columns are patches in
raster order.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.views import chart, heatmap, style

#: Attention over an image: transparent where a patch gets nothing, opaque yellow at the
#: row's largest weight, so the picture shows through everywhere else.
OVERLAY_SCALE = [
    [0.0, "rgba(68, 1, 84, 0)"],
    [0.5, "rgba(33, 145, 140, 0.55)"],
    [1.0, "rgba(253, 231, 37, 0.9)"],
]


def image_figure(image, patch, grid, selected=None, overlay=None, title=""):
    """An image with its patch grid, a query patch outlined, and optionally attention on top.

    Parameters
    ----------
    image : uint8 ndarray of shape (H, W, 3)
    patch : int, patch side in pixels
    grid : tuple (n_rows, n_cols); the grid covers the top-left n_rows·patch × n_cols·patch
    selected : tuple (row, col), optional, the patch to outline
    overlay : ndarray of shape (n_rows·patch, n_cols·patch), optional
        Weights per pixel; drawn from transparent (0) to opaque (the largest weight).
    title : str
    """
    image = np.asarray(image, dtype=np.uint8)
    n_rows, n_cols = grid
    fig = go.Figure(go.Image(z=image, hoverinfo="skip"))
    if overlay is not None:
        z = np.asarray(overlay, dtype=np.float32)
        top = float(z.max()) if z.size and z.max() > 0 else 1.0
        title = style.with_note(title, f"clear at 0, yellow at the row's largest weight, {top:.3g}")
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=np.arange(z.shape[1]),
                y=np.arange(z.shape[0]),
                colorscale=OVERLAY_SCALE,
                zmin=0.0,
                zmax=top,
                colorbar=style.COLORBAR | {"title": {"text": "weight"}},
                hovertemplate="pixel (%{x}, %{y})<br>weight %{z:.4f}<extra></extra>",
            )
        )
    xs, ys = [], []
    for c in range(n_cols + 1):  # vertical lines, separated by None
        xs += [c * patch - 0.5, c * patch - 0.5, None]
        ys += [-0.5, n_rows * patch - 0.5, None]
    for r in range(n_rows + 1):
        xs += [-0.5, n_cols * patch - 0.5, None]
        ys += [r * patch - 0.5, r * patch - 0.5, None]
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            line={"color": "rgba(255, 255, 255, 0.45)", "width": 1},
            hoverinfo="skip",
            showlegend=False,
        )
    )
    if selected is not None:
        r, c = selected
        fig.add_shape(
            type="rect",
            x0=c * patch - 0.5,
            x1=(c + 1) * patch - 0.5,
            y0=r * patch - 0.5,
            y1=(r + 1) * patch - 0.5,
            line={"color": "#ff00ff", "width": 3},
        )
    height, width = image.shape[:2]
    # Square pixels shrink the plot to the image's shape: hung from the top left, so the
    # image beside it (its colour bar takes room) starts at the same height.
    fig.update_xaxes(
        showticklabels=False,
        range=[-0.5, width - 0.5],
        showgrid=False,
        constrain="domain",
        constraintoward="left",
    )
    fig.update_yaxes(
        showticklabels=False,
        range=[height - 0.5, -0.5],
        scaleanchor="x",
        showgrid=False,
        constrain="domain",
        constraintoward="top",
    )
    return style.frame(fig, title, 460, top=style.NOTE_TOP if "<br>" in title else 50)


def attention_figure(weights, grid, selected=None, title="Attention between patches"):
    """The full patch × patch attention matrix, on a 0 to largest-weight scale.

    Rows and columns are patches in raster order, labelled ``row,col``. Over many
    patches the weights are small, so the scale runs to the largest weight, not to 1,
    and a second title line says so.

    Parameters
    ----------
    weights : ndarray of shape (n_patches, n_patches)
    grid : tuple (n_rows, n_cols)
    selected : int, optional, the query patch's index, marked by a horizontal line
    """
    z = np.asarray(weights, dtype=np.float32)
    labels = _patch_names(grid)
    top = float(z.max()) if z.size and z.max() > 0 else 1.0
    if top < 1.0:
        title = style.with_note(
            title, f"{heatmap.top_note(top)}: {len(labels)} patches share each row"
        )
    trace = go.Heatmap(
        z=z,
        x=labels,
        y=labels,
        colorscale=style.WEIGHTS_SCALE,
        zmin=0.0,
        zmax=top,
        colorbar=style.COLORBAR,
        hovertemplate="query patch %{y}<br>key patch %{x}<br>weight %{z:.4f}<extra></extra>",
    )
    top_margin = style.NOTE_TOP if top < 1.0 else 50
    fig = heatmap.token_figure(
        trace, title, *z.shape, "key patch (row,col)", "query patch", top_margin
    )
    if selected is not None:
        fig.add_hline(y=selected, line={"color": "#ff00ff", "width": 1})
    return fig


def _patch_names(grid):
    n_rows, n_cols = grid
    return [f"{r},{c}" for r in range(n_rows) for c in range(n_cols)]


def show_image(container, key, image, patch, grid, selected, overlay=None, title="", weights=None):
    """Draw :func:`image_figure`; with an overlay its CSV is the query's ``weights`` on the grid."""
    table = None
    if weights is not None:
        n_rows, n_cols = grid
        table = heatmap.table(np.reshape(weights, grid), range(n_rows), range(n_cols))
    chart.draw(
        container, image_figure(image, patch, grid, selected, overlay, title), key, table=table
    )


def show_attention(container, key, weights, grid, selected=None):
    """Draw :func:`attention_figure`; the CSV is the matrix, patches named "row,column"."""
    names = _patch_names(grid)
    chart.draw(
        container,
        attention_figure(weights, grid, selected),
        key,
        table=heatmap.table(weights, names, names),
    )
