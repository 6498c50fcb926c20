"""Saturation: how the softmax flattens or sharpens as the scale moves, measured.

The curves are means over the query rows of each row's entropy, largest weight and
effective tokens, against the scale on a log axis, with the current and the default
scale marked; the tables give the same measures at the current scale, per row and their
means (:func:`engine.saturation`).
"""

from __future__ import annotations

import copy
import functools

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

import engine
from app.views import chart, numbers, style

#: The shapes of :func:`figure` that mark the current scale, one per panel.
CURRENT_SCALE_MARKERS = (0, 2, 4)


@functools.cache
def _three_panels(titles):
    """The layout of three side-by-side panels with ``titles``, made once.

    ``make_subplots`` costs 25 ms a call, more than the rest of the saturation figure.
    """
    return make_subplots(rows=1, cols=3, subplot_titles=titles).layout.to_plotly_json()


def figure(scales, stats, current_scale, default_scale, rows=None, n_keys=None):
    """Entropy, largest weight and effective tokens against the scale (log axis).

    Parameters
    ----------
    scales : ndarray of shape (n_s,)
    stats : engine.SaturationStats with arrays of shape (n_s,)
    current_scale, default_scale : float, marked with vertical lines
    rows : int, optional, how many query rows the means are over
    n_keys : int, optional, the number of keys: each panel's y axis then spans what its
        measure can be (0 to log₂ n bits, 0 to 1, 1 to n tokens), the same for every head
    """
    panels = (
        ("entropy Hᵢ (bits)", stats.entropy),
        ("largest weight", stats.max_weight),
        ("effective tokens 2^Hᵢ", stats.effective_tokens),
    )
    layout = copy.deepcopy(_three_panels(tuple(name for name, _ in panels)))
    traces, markers = [], []
    for i, (name, values) in enumerate(panels, start=1):
        axis = "" if i == 1 else str(i)
        traces.append(
            go.Scatter(
                x=np.asarray(scales, dtype=np.float32),
                y=np.asarray(values, dtype=np.float32),
                mode="lines",
                name=name,
                hovertemplate="scale %{x:.4g}<br>" + name + " %{y:.3f}<extra></extra>",
                xaxis=f"x{axis}",
                yaxis=f"y{axis}",
            )
        )
        layout[f"xaxis{axis}"] |= {"type": "log", "title": {"text": "scale"}}
        if n_keys:
            layout[f"yaxis{axis}"] |= {"range": _padded(_possible(i, n_keys))}
        for x, line in (
            (current_scale, {"color": "#d62728", "width": 2}),
            (default_scale, {"color": "#7f7f7f", "dash": "dot"}),
        ):  # one list of shapes: add_vline per panel costs a layout pass each
            markers.append(
                {"type": "line", "x0": x, "x1": x, "xref": f"x{axis}", "y0": 0, "y1": 1,
                 "yref": f"y{axis} domain", "line": line}
            )  # fmt: skip
    title = f"Means over {rows or 'all'} query rows — red: current scale, dotted: 1/√d_k"
    layout |= style.layout(title, 300, top=70, shapes=markers, showlegend=False)
    return go.Figure(traces, layout)


def _possible(panel, n_keys):
    """What panel ``panel``'s measure can be with ``n_keys`` keys: (lowest, highest)."""
    return {1: (0.0, float(np.log2(n_keys))), 2: (0.0, 1.0), 3: (1.0, float(n_keys))}[panel]


def _padded(span):  # a margin of 4 % either side, as plotly.js's own ranges have
    low, high = span
    margin = 0.04 * ((high - low) or 1.0)
    return [low - margin, high + margin]


def curve_table(scales, stats):
    """The saturation sweep: one row per scale, one column per measure."""
    return pd.DataFrame(
        {
            "scale": scales,
            "mean Hᵢ (bits)": stats.entropy,
            "mean largest weight": stats.max_weight,
            "effective tokens: mean of 2^Hᵢ": stats.effective_tokens,
        }
    )


def show(
    container,
    key,
    scales,
    stats,
    current_scale,
    default_scale,
    rows=None,
    *,
    n_keys=None,
    csv=None,
    live=None,
):
    """Draw the curves (:func:`figure`); the CSV is the sweep (:func:`curve_table`).

    ``csv`` replaces the table (a figure drawn at a reference head saves the head shown's).
    """
    drawn = chart.remembered(figure, scales, stats, current_scale, default_scale, rows, n_keys)
    table = curve_table(scales, stats) if csv is None else csv
    chart.draw(container, drawn, key, table=table, live=live)


def tables(weights, labels, stats=None):
    """Saturation of each query row, and its mean, as tables.

    Parameters
    ----------
    weights : ndarray of shape (n, n)
    labels : sequence of n str
    stats : engine.SaturationStats of ``weights``, optional: computed already (a long
        text's, a block of rows at a time)

    Returns
    -------
    summary : DataFrame, one row of means
    per_row : DataFrame, one row per query token
    """
    stats = engine.saturation(weights) if stats is None else stats
    per_row = pd.DataFrame(
        {
            "query": list(labels),
            "entropy Hᵢ (bits)": stats.entropy,
            "largest weight": stats.max_weight,
            "effective tokens 2^Hᵢ": stats.effective_tokens,
            "‖Jᵢ‖_F": stats.jacobian_norm,
        }
    )
    # Means of each row's numbers: the mean of 2^Hᵢ, which is not 2^(mean Hᵢ).
    summary = per_row.drop(columns="query").mean().to_frame().T
    summary.columns = SATURATION_MEANS
    summary.insert(0, "uniform would be", f"{len(labels)} tokens")
    return summary, per_row


#: The saturation summary's columns: each the mean over the query rows of a row's number.
SATURATION_MEANS = (
    "mean Hᵢ (bits)",
    "mean largest weight",
    "effective tokens: mean of 2^Hᵢ",
    "mean ‖Jᵢ‖_F",
)


def show_table(container, key, weights, labels, per_row=False, *, csv=None, live=None):
    """The saturation at this scale: the means over the query rows (one row), or each row's.

    The table is :func:`tables`' first (the means) or, with ``per_row``, its second.
    """
    table = tables(weights, labels)[per_row]
    numbers.show(container, key, table, height=None if per_row else 64, csv=csv, live=live)
