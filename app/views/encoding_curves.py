"""A positional encoding's columns as curves over position: a different wave per dimension."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.views import chart, heatmap, style


def figure(pe, dims):
    """Chosen columns of a positional encoding as curves over position.

    Parameters
    ----------
    pe : ndarray of shape (n_positions, d_model)
    dims : sequence of int, the columns to draw
    """
    fig = go.Figure()
    positions = np.arange(pe.shape[0])
    for d in dims:
        fig.add_trace(
            go.Scatter(
                x=positions,
                y=np.asarray(pe[:, d], dtype=np.float32),
                mode="lines+markers" if pe.shape[0] <= 64 else "lines",
                name=f"dimension {d}",
            )
        )
    title = "Encoding value by position, for a few dimensions"
    return style.frame(fig, title, 320, xaxis_title="position", yaxis_title="value")


def table(pe, dims):
    """The columns drawn, one row per position."""
    return heatmap.table(pe[:, dims], range(pe.shape[0]), [f"f{i}" for i in dims])


def show(container, key, pe, dims):
    """Draw :func:`figure`; the CSV is the columns drawn."""
    chart.draw(container, figure(pe, dims), key, table=table(pe, dims))
