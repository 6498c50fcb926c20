"""Multi-head attention: one 0–1 heatmap per head, in full rows that share their axes.

The panels of a row share the query axis, those of a column the key axis (each labelled
once), so no panel's labels run into its neighbour's. The heads' entropy, each panel's
second name on the multi-head page, is a table of its own.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

import engine
from app.views import axes, chart, heatmap, style


def figure(
    weights,
    labels,
    title="Attention weights per head",
    stat=None,
    names=None,
    per_row=4,
):
    """One 0–1 heatmap per head, in full rows of up to ``per_row`` that share their axes.

    The panels of a row share the query axis, labelled once at the row's left; those of
    a column share the key axis, labelled once under the grid: no panel's labels run into
    its neighbour. Each axis labels its tokens by the rule of :mod:`app.views.axes`, for the room
    a panel has (one label in k, said on the axis, when they do not all fit).

    Parameters
    ----------
    weights : ndarray of shape (n_heads, n, n)
    labels : sequence of n str
    stat : sequence of n_heads str, optional, written under each head's name
    names : sequence of n_heads str, optional, the panels' names (default "head h")
    per_row : int, the most panels a row holds; a row holds the largest divisor of
        ``n_heads`` up to it, so that every row is full
    """
    n_heads, n, _ = weights.shape
    cols = max(c for c in range(1, min(n_heads, per_row) + 1) if n_heads % c == 0)
    rows = n_heads // cols
    names = [f"head {h}" for h in range(n_heads)] if names is None else list(names)
    if stat is not None:
        names = [f"{name} · {value}" for name, value in zip(names, stat, strict=True)]
    row_height = int(min(max(12 * n + 70, 240), 400))
    height = rows * row_height + 150
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=names,
        shared_xaxes=True,
        shared_yaxes=True,
        horizontal_spacing=0.015,
        vertical_spacing=0.06 if rows > 1 else 0.0,  # a panel's name under the one above
    )
    axis = axes.axis_labels(labels)
    for h in range(n_heads):
        fig.add_trace(
            go.Heatmap(
                z=np.asarray(weights[h], dtype=np.float32),
                x=axis,
                y=axis,
                colorscale=style.WEIGHTS_SCALE,
                zmin=0.0,
                zmax=1.0,
                showscale=h == 0,
                colorbar=style.COLORBAR,
                hovertemplate=f"head {h}<br>query %{{y}}<br>key %{{x}}<br>"
                "weight %{z:.4f}<extra></extra>",
            ),
            row=h // cols + 1,
            col=h % cols + 1,
        )
    style.frame(fig, title, height, top=70)
    panel_width = axes.PAGE_WIDTH / cols  # the page's width is the browser's to know
    fig.update_xaxes(
        axes.token_axis(axis, "key", room=panel_width), autotickangles=axes.TICK_ANGLES
    )
    fig.update_yaxes(axes.token_axis(axis, "query", room=row_height - 60), autorange="reversed")
    # One title a side, clear of the figure's: the middle row's query axis, the first key axis.
    titled = {_axis_name("y", rows // 2 * cols + 1), _axis_name("x", n_heads - cols + 1)}
    for name in axes.token_axes(fig.layout, drawn=False):
        if name not in titled:
            fig.layout[name].title.text = None
        if fig.layout[name].showticklabels is False:
            fig.layout[name].ticks = ""  # no marks where no labels are, nor into panel names
    return fig


def _axis_name(letter, panel):
    """The layout name of panel ``panel``'s axis (1-based, as make_subplots numbers them)."""
    return f"{letter}axis{panel if panel > 1 else ''}"


def table(weights, labels, names=None):
    """Every head's matrix with the same labels, stacked, the head's name the first column."""
    names = [f"head {h}" for h in range(len(weights))] if names is None else names
    frames = []
    for name, matrix in zip(names, weights, strict=True):
        frame = heatmap.table(matrix, labels, labels)
        frame.insert(0, "panel", name)
        frames.append(frame)
    return pd.concat(frames)


def entropy_table(weights):
    """Mean entropy and effective tokens (the mean of 2^Hᵢ, not 2^(mean H)) of each head's rows.

    Parameters
    ----------
    weights : ndarray of shape (n_heads, n, n)

    Returns
    -------
    DataFrame, one row per head
    """
    stats = engine.saturation(weights)
    return entropy_rows(
        stats.entropy.mean(axis=-1),
        stats.effective_tokens.mean(axis=-1),
        stats.max_weight.mean(axis=-1),
    )


def entropy_rows(entropy, effective, largest):
    """:func:`entropy_table` from each head's means: entropy, 2^Hᵢ, largest weight."""
    return pd.DataFrame(
        {
            "head": range(len(entropy)),
            "mean entropy (bits)": entropy,
            "effective tokens: mean of 2^Hᵢ": effective,
            "mean largest weight": largest,
        }
    )


def tile_names(edges):
    """Each tile's tokens, ``"0–15"``, for the panels' axes of a long text's tiles."""
    return [f"{a}–{b - 1}" for a, b in itertools.pairwise(edges)]


def show(container, key, weights, labels, *, clicks=False, **options):
    """Draw :func:`figure` of every head; the CSV is :func:`table`.

    With ``clicks`` it returns the cell clicked since the last run (its trace is the head).
    """
    return chart.draw(
        container,
        figure(weights, labels, **options),
        key,
        table=table(weights, labels),
        clicks=clicks,
    )
