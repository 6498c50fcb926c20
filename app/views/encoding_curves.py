"""The sinusoidal encoding's columns as curves over position: a different wave per dimension.

Column 2i of Vaswani et al.'s encoding (2017, §3.5) is sin(p / 10000^(2i/d)), a wave of
wavelength 2π · 10000^(2i/d) positions: the wavelengths grow geometrically from 2π to
10000 · 2π across the columns, so neighbouring columns of a wide model have nearly the
same wave, and the curves drawn are columns whose wavelengths double.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from app.views import chart, heatmap, style

#: How many columns the curves draw.
CURVES = 4


def wavelength(dim, d_model):
    """The wavelength in positions of column ``dim`` of the sinusoidal encoding (§3.5)."""
    return 2 * math.pi * 10000 ** ((dim - dim % 2) / d_model)


def doubling_dims(d_model, count=CURVES):
    """``count`` sine columns (even), the first 0, each wavelength about twice the last's.

    Column 2i's wavelength is 2π · 10000^(2i/d), so doubling it is a step of
    d · log 2 / log 10000 columns, rounded to an even column (at least 2): at d = 384,
    columns 0, 28, 56 and 84. A model narrower than ``count`` steps draws the columns it has.
    """
    step = max(2, 2 * round(d_model * math.log(2) / math.log(10000) / 2))
    return list(range(0, d_model, step))[:count]


def figure(pe, dims):
    """Chosen columns of the sinusoidal encoding as curves over position, their wavelengths said.

    Parameters
    ----------
    pe : ndarray of shape (n_positions, d_model), the sinusoidal encoding
    dims : sequence of int, the columns to draw
    """
    fig = go.Figure()
    positions = np.arange(pe.shape[0])
    d_model = pe.shape[1]
    for d in dims:
        fig.add_trace(
            go.Scatter(
                x=positions,
                y=np.asarray(pe[:, d], dtype=np.float32),
                mode="lines+markers" if pe.shape[0] <= 64 else "lines",
                name=f"dimension {d}: wavelength {wavelength(d, d_model):.1f}",
            )
        )
    title = "The sinusoidal encoding by position, for a few dimensions"
    lengths = [wavelength(d, d_model) for d in dims]
    if len(lengths) > 1:
        ratio = lengths[1] / lengths[0]
        title = style.with_note(
            title,
            f"d = {d_model}: wavelength 2π · 10000^(2i/d), × {ratio:.2f} from curve to curve",
        )
    return style.frame(
        fig, title, 340, top=style.NOTE_TOP, xaxis_title="position", yaxis_title="value"
    )


def table(pe, dims):
    """The columns drawn, one row per position."""
    return heatmap.table(pe[:, dims], range(pe.shape[0]), [f"f{i}" for i in dims])


def show(container, key, pe, dims):
    """Draw :func:`figure`; the CSV is the columns drawn."""
    chart.draw(container, figure(pe, dims), key, table=table(pe, dims))
