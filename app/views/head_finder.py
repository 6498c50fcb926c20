"""The head finder: the weight from one query token to one key token in every (layer, head).

"Which head links *it* to *restaurant*?": the grid answers it in one look; the page ranks
the heads in words (:func:`app.words.wording.finder_answer`).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.views import axes, chart, heatmap, style


def figure(grid, query_label, key_label):
    """Weight from one query token to one key token in every (layer, head).

    Parameters
    ----------
    grid : ndarray of shape (n_layers, n_heads)
    query_label, key_label : str
    """
    query, key = axes.axis_labels([query_label, key_label])
    z = np.asarray(grid, dtype=np.float32)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[f"H{h}" for h in range(z.shape[1])],
            y=[f"L{layer}" for layer in range(z.shape[0])],
            colorscale=style.WEIGHTS_SCALE,
            zmin=0.0,
            zmax=1.0,
            hovertemplate="%{y} %{x}<br>weight %{z:.4f}<extra></extra>",
            colorbar=style.COLORBAR,
        )
    )
    style.frame(fig, f"How much “{query}” attends to “{key}”, in every head", 330)
    fig.update_yaxes(autorange="reversed")
    return heatmap.write_legibly(fig, 0, [[f"{v:.2f}" for v in row] for row in z])


def table(grid):
    """One number per (layer, head): rows L0, L1, …, columns H0, H1, …."""
    n_layers, n_heads = np.shape(grid)
    return heatmap.table(
        grid, [f"L{i}" for i in range(n_layers)], [f"H{h}" for h in range(n_heads)]
    )


def show(container, key, grid, query_label, key_label):
    """Draw :func:`figure`; the CSV is the grid, rows L0, L1, …, columns H0, H1, …."""
    chart.draw(container, figure(grid, query_label, key_label), key, table=table(grid))
