"""Every head at a glance: a layers × heads grid coloured by one summary of its weights.

The summaries are the engine's, computed during the pass for every head at any length
(:class:`engine.summaries.HeadSummaries`): the weight on the first token (an attention
sink, Xiao et al. 2024), the entropy of a row in bits (how spread a head is), the mean
distance attended (how far back it looks) and the weight on the previous token (a
previous-token head, Olsson et al. 2022), each averaged over the queries. A click on a
cell opens that head in the head view.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.views import chart, heatmap, style

#: The summaries drawn, in the order the picker offers them: field -> (name, hover format).
SUMMARIES = {
    "first_token": ("weight on the first token", ".2f"),
    "entropy": ("entropy of a row (bits)", ".2f"),
    "distance": ("mean distance attended (tokens)", ".1f"),
    "previous": ("weight on the previous token", ".2f"),
}
#: The summaries that are weights, drawn on the weights' fixed 0–1 scale.
WEIGHTS = ("first_token", "previous")


def figure(values, name, fmt=".2f", weight=False):
    """One summary of every head: rows the layers, columns the heads.

    Parameters
    ----------
    values : ndarray of shape (n_layers, n_heads)
    name : str, what the summary is
    fmt : str, the format of the numbers in the cells and the hover
    weight : bool, a weight (0–1 scale) rather than a number from 0 to its largest
    """
    z = np.asarray(values, dtype=np.float32)
    n_layers, n_heads = z.shape
    top = 1.0 if weight else max(float(np.nanmax(z)), 1e-9)
    trace = go.Heatmap(
        z=z,
        x=[f"H{h}" for h in range(n_heads)],
        y=[f"L{layer}" for layer in range(n_layers)],
        colorscale=style.WEIGHTS_SCALE,
        zmin=0.0,
        zmax=top,
        colorbar=style.COLORBAR,
        hovertemplate=f"%{{y}} %{{x}}<br>{name} %{{z:{fmt}}}<extra></extra>",
    )
    fig = style.framed(
        trace,
        f"Every head: {name}; click a head to open it",
        120 + 24 * n_layers,
        yaxis={"autorange": "reversed"},
    )
    if n_heads <= 16:  # the numbers in the cells; past 16 heads in the hover alone
        heatmap.write_legibly(fig, 0, [[format(v, fmt) for v in row] for row in z.tolist()])
    return fig


def table(summaries):
    """One row per (layer, head): every summary."""
    first = np.asarray(summaries.first_token)
    n_layers, n_heads = first.shape
    columns = {
        "layer": np.repeat(np.arange(n_layers), n_heads),
        "head": np.tile(np.arange(n_heads), n_layers),
    }
    columns |= {field: np.ravel(getattr(summaries, field)) for field in SUMMARIES}
    return pd.DataFrame(columns)


def show(container, key, summaries, field):
    """Draw :func:`figure` of ``summaries.<field>``; the CSV holds every summary.

    Returns
    -------
    (int, int) or None, the (layer, head) clicked since the last run
    """
    name, fmt = SUMMARIES[field]
    fig = chart.remembered(figure, getattr(summaries, field), name, fmt, field in WEIGHTS)
    click = chart.draw(container, fig, key, table=table(summaries), clicks=True)
    if click is None or click.get("row") is None:
        return None
    return int(click["row"]), int(click["col"])
