"""The last token's attention in every layer and head: what a causal model's next token reads.

In GPT-2 the next token is predicted from the last position alone, so its row of each
head's weights (:attr:`engine.bert.BertRun.last_token_attention`) is the attention behind
the prediction. One row per (layer, head), one column per token, on the weights' 0–1 scale.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.views import axes, chart, heatmap, style
from engine import tiling

#: A text of more tokens is drawn with its keys in this many tiles, each their maximum.
KEY_TILES = 512


def _heads(n_layers, n_heads):
    return [f"L{layer} H{head}" for layer in range(n_layers) for head in range(n_heads)]


def title(labels, step=None, chosen=None):
    """What the chart says: the last token, and at a step of generation the token it chose."""
    last = axes.axis_labels(labels[-1:])[0]  # escaped: user text is never markup
    if step is None:
        return f"What the last token “{last}” attends to, in every layer and head"
    chosen = axes.axis_labels([chosen])[0]
    return f"Step {step}: “{last}” attends so, in every layer and head, and “{chosen}” follows"


def figure(attention, labels, step=None, chosen=None):
    """The last token's weights over the tokens, one row per (layer, head).

    Parameters
    ----------
    attention : ndarray of shape (n_layers, n_heads, n)
    labels : sequence of n str
    step : int, optional; the step of generation this is
    chosen : str, optional; the token chosen at that step
    """
    n_layers, n_heads, n = np.shape(attention)
    z = np.asarray(attention, dtype=np.float32).reshape(n_layers * n_heads, n)
    heading = title(labels, step, chosen)
    if n <= KEY_TILES:
        x = axes.axis_labels(labels)
        hover = "key %{x}"
        x_axis = axes.token_axis(x, "key") | {"autotickangles": axes.TICK_ANGLES}
    else:  # each column the largest weight of a block of keys, at its middle position
        tiles = tiling.tile(z, (len(z), KEY_TILES), "max")
        z, edges = tiles.values, tiles.col_edges
        x = (edges[:-1] + edges[1:] - 1) / 2
        hover, x_axis = "keys around %{x:.0f}", {"title": "key position"}
        heading = style.with_note(heading, f"{n:,} keys in {len(x)} tiles, each their maximum")
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=x,
            y=_heads(n_layers, n_heads),
            colorscale=style.WEIGHTS_SCALE,
            zmin=0.0,
            zmax=1.0,
            hovertemplate=f"%{{y}}<br>{hover}<br>weight %{{z:.4f}}<extra></extra>",
            colorbar=style.COLORBAR,
        )
    )
    top = 50 if n <= KEY_TILES else style.NOTE_TOP
    style.frame(fig, heading, 120 + 18 * n_layers * n_heads, xaxis=x_axis, top=top)
    fig.update_yaxes(autorange="reversed")
    return fig


def table(attention, labels):
    """One row per (layer, head), one column per token (its position and label)."""
    n_layers, n_heads, n = np.shape(attention)
    columns = [f"{i}:{label}" for i, label in enumerate(labels)]
    return heatmap.table(
        np.reshape(attention, (n_layers * n_heads, n)), _heads(n_layers, n_heads), columns
    )


def show(container, key, attention, labels, step=None, chosen=None):
    """Draw :func:`figure`; the CSV is :func:`table`."""
    fig = figure(attention, labels, step, chosen)
    chart.draw(container, fig, key, table=table(attention, labels))
