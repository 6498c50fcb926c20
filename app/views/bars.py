"""One query's attention over the keys, as bars: what this token attends to.

The bars are coloured on the weights' 0–1 scale (:func:`app.views.style.weight_colors`);
versions of the same row (random against trained weights) are grouped side by side.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.views import axes, chart, style


def _attends_to(query_label):
    return f"What “{axes.axis_labels([query_label])[0]}” attends to"


def figure(row, labels, query_label):
    """One query's attention over the keys, as bars.

    Parameters
    ----------
    row : ndarray of shape (n_k,)
    labels : sequence of n_k str
    query_label : str
    """
    row = np.asarray(row, dtype=np.float32)
    axis = axes.axis_labels(labels)
    bar = go.Bar(
        x=axis,
        y=row,
        marker={"color": style.weight_colors(row)},
        hovertemplate="key %{x}<br>weight %{y:.4f}<extra></extra>",
    )
    return style.framed(
        bar,
        _attends_to(query_label),
        340,
        yaxis={"range": [0, 1], "title": "weight"},
        xaxis=axes.token_axis(axis, "key") | {"autotickangles": axes.TICK_ANGLES},
    )


def table(row, labels):
    """One query's weights over the keys, one row per key."""
    return pd.DataFrame({"key": list(labels), "weight": row})


def show(container, key, row, labels, query_label, *, query=None, csv=None, live=None):
    """Draw :func:`figure`; the CSV is the row's weights (``csv`` replaces them).

    ``query``, the query token's position in the text, names it in the files with its
    label (``…_att_bar_q11-it_…``).
    """
    return chart.draw(
        container,
        chart.remembered(figure, row, labels, query_label),
        key,
        table=table(row, labels) if csv is None else csv,
        live=live,
        about=None if query is None else chart.token_file_name(query, query_label),
    )


def compared_figure(rows, labels, query_label):
    """Several versions of one query's attention over the keys, as grouped bars.

    Parameters
    ----------
    rows : dict of name -> ndarray of shape (n_k,), e.g. random against trained weights;
        the first drawn grey, the second red (:data:`app.views.style.COMPARE_COLORS`)
    labels : sequence of n_k str
    query_label : str
    """
    axis = axes.axis_labels(labels)
    return style.framed(
        [
            go.Bar(
                x=axis,
                y=np.asarray(row, dtype=np.float32),
                name=name,
                marker={"color": color},
                hovertemplate=f"{name}<br>key %{{x}}<br>weight %{{y:.4f}}<extra></extra>",
            )
            for (name, row), color in zip(rows.items(), style.COMPARE_COLORS, strict=False)
        ],
        _attends_to(query_label),
        380,
        top=70,
        barmode="group",
        yaxis={"range": [0, 1], "title": "weight"},
        xaxis=axes.token_axis(axis, "key") | {"autotickangles": axes.TICK_ANGLES},
        legend={"orientation": "h", "y": 1.12, "x": 1.0, "xanchor": "right"},
    )


def compared_table(rows, labels):
    """The rows compared, one column each, one row per key."""
    return pd.DataFrame({"key": labels, **rows})


def show_compared(container, key, rows, labels, query_label):
    """Draw :func:`compared_figure`; the CSV is every version of the row."""
    chart.draw(
        container,
        chart.remembered(compared_figure, rows, labels, query_label),
        key,
        table=compared_table(rows, labels),
    )
