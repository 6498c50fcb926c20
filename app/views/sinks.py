"""Attention sinks: how much each head gives the first token, and the tokens most attended.

Xiao et al. (2024), "Efficient Streaming Language Models with Attention Sinks", section
3.1: trained decoders park much of their attention on the first token, whatever it is.
The numbers are :func:`engine.analysis.attention_sinks`'; the sentence is computed from
them, for the text on screen.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.views import axes, chart, heatmap, style

#: What the bars show: each token's mean weight received
#: (:func:`engine.analysis.attention_sinks`), or, for a long text, how often it is a
#: query's strongest key (:func:`engine.analysis.summary_sinks`).
RECEIVED = {
    False: ("most attended tokens", "mean weight received"),
    True: ("tokens most often the strongest key", "share of queries, all heads"),
}


def sentence(sinks, labels, strongest=False):
    """How much of the model's attention goes to the first token, in plain words.

    Parameters
    ----------
    sinks : engine.analysis.Sinks
    labels : sequence of n str, the tokens' labels
    strongest : bool, the Sinks of :func:`engine.analysis.summary_sinks` (every query)
    """
    n_heads = sinks.first.size
    over_half = int((sinks.first > 0.5).sum())
    first = labels[0]
    ratio = sinks.share / sinks.uniform if sinks.uniform > 0 else float("inf")
    queries = "every token" if strongest else "the tokens after the first"
    return (
        f"Across all {n_heads} heads, {sinks.share:.0%} of the attention of {queries} "
        f"goes to the first token, “{first}”: {ratio:.1f} times the "
        f"{sinks.uniform:.0%} it would get if every token spread its attention evenly. "
        f"In {over_half} of the {n_heads} heads it gets more than half."
    )


#: The gap between the heatmap and the bars, as a fraction of the plot's width: room for the
#: colour bar and the bars' token labels.
GAP = 0.22


def figure(sinks, labels, strongest=False):
    """Each head's weight on the first token (left); the tokens most attended (right).

    Parameters
    ----------
    sinks : engine.analysis.Sinks
    labels : sequence of n str
    strongest : bool, the Sinks of :func:`engine.analysis.summary_sinks`: the bars are how
        often each token is a query's strongest key (:data:`RECEIVED`)
    """
    bars_title, bars_axis = RECEIVED[strongest]
    first = np.asarray(sinks.first, dtype=np.float32)
    n_layers, n_heads = first.shape
    shown = [f"{i} {labels[i]}" if strongest else labels[i] for i in sinks.strongest]
    names = axes.axis_labels(shown)  # a long text's tokens with their positions
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.6, 0.4],
        horizontal_spacing=GAP,
        subplot_titles=["weight on the first token, per head", bars_title],
    )
    fig.add_trace(
        go.Heatmap(
            z=first,
            x=[f"H{h}" for h in range(n_heads)],
            y=[f"L{layer}" for layer in range(n_layers)],
            colorscale=style.WEIGHTS_SCALE,
            zmin=0.0,
            zmax=1.0,
            hovertemplate="%{y} %{x}<br>weight on the first token %{z:.4f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    # The colour bar in the gap right of the heatmap, before the bars' token labels: a bar
    # at a fixed x would cover the last heads' column where the figure is narrow.
    right = fig.layout.xaxis.domain[1]
    fig.update_traces(
        colorbar=style.COLORBAR | {"x": right + 0.01, "xanchor": "left"},
        selector={"type": "heatmap"},
    )
    received = np.asarray(sinks.received[sinks.strongest], dtype=np.float32)
    fig.add_trace(
        go.Bar(
            x=received,
            y=names,
            orientation="h",
            marker={"color": style.weight_colors(received)},
            hovertemplate=f"%{{y}}<br>{bars_axis} %{{x:.4f}}<extra></extra>",
        ),
        row=1,
        col=2,
    )
    heatmap.write_legibly(fig, 0, [[f"{v:.2f}" for v in row] for row in first])  # trace 2
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(range=None if strongest else [0, 1], title=bars_axis, row=1, col=2)
    title = f"Attention sinks: {sinks.share:.0%} of the attention goes to the first token"
    return style.frame(fig, title, 120 + 40 * max(n_layers, len(names)), top=80)


def table(sinks, labels):
    """One row per (layer, head): its weight on the first token."""
    n_layers, n_heads = np.shape(sinks.first)
    return pd.DataFrame(
        {
            "layer": np.repeat(np.arange(n_layers), n_heads),
            "head": np.tile(np.arange(n_heads), n_layers),
            "first_token": [labels[0]] * (n_layers * n_heads),
            "weight_on_first": np.ravel(sinks.first),
        }
    )


def show(container, key, sinks, labels, strongest=False):
    """Draw :func:`figure`; the CSV is each head's weight on the first token."""
    chart.draw(container, figure(sinks, labels, strongest), key, table=table(sinks, labels))
