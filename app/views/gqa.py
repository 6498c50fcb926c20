"""Grouped-query attention: which query heads share each key/value head.

Ainslie et al. (2023), "GQA: Training Generalized Multi-Query Transformer Models from
Multi-Head Checkpoints", section 2.2: the query heads are in groups, each group reading
one key/value head. The grouping is :func:`engine.attention.kv_head_of`'s.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.views import chart, style

_QUERY, _SHARED = "#1f77b4", "#d62728"


def figure(kv_of, selected=None):
    """Query heads (top row) joined to the key/value head each reads (bottom row).

    Parameters
    ----------
    kv_of : int ndarray of shape (n_heads,), the key/value head of each query head
    selected : int, optional; the query head shown, drawn with its group in red
    """
    kv_of = np.asarray(kv_of)
    n_heads, n_kv = len(kv_of), int(kv_of.max()) + 1
    q_x = np.arange(n_heads, dtype=float)
    kv_x = np.array([q_x[kv_of == j].mean() for j in range(n_kv)])  # under its group
    group = None if selected is None else kv_of[selected]
    lines_x, lines_y, red_x, red_y = [], [], [], []
    for h, j in enumerate(kv_of):
        xs, ys = (red_x, red_y) if j == group else (lines_x, lines_y)
        xs += [q_x[h], kv_x[j], None]
        ys += [1.0, 0.0, None]
    traces = [
        go.Scatter(x=lines_x, y=lines_y, mode="lines", line={"color": "#9aa0a6"}, hoverinfo="skip"),
        go.Scatter(
            x=red_x, y=red_y, mode="lines", line={"color": _SHARED, "width": 3}, hoverinfo="skip"
        ),
        go.Scatter(
            x=q_x,
            y=np.ones(n_heads),
            mode="markers+text",
            text=[f"Q{h}" for h in range(n_heads)],
            textposition="top center",
            marker={"size": 14, "color": [_SHARED if j == group else _QUERY for j in kv_of]},
            hovertemplate="query head %{text}<extra></extra>",
        ),
        go.Scatter(
            x=kv_x,
            y=np.zeros(n_kv),
            mode="markers+text",
            text=[f"KV{j}" for j in range(n_kv)],
            textposition="bottom center",
            marker={
                "size": 18,
                "symbol": "square",
                "color": [_SHARED if j == group else "#2ca02c" for j in range(n_kv)],
            },
            hovertemplate="key/value head %{text}<extra></extra>",
        ),
    ]
    title = (
        f"Grouped-query attention: {n_heads} query heads share {n_kv} key/value "
        f"head{'s' if n_kv > 1 else ''}, {n_heads // n_kv} to each"
    )
    hidden = {"visible": False, "showgrid": False, "zeroline": False}
    return style.framed(
        traces,
        title,
        240,
        showlegend=False,
        plot_bgcolor="white",
        xaxis=hidden | {"range": [-0.7, n_heads - 0.3]},
        yaxis=hidden | {"range": [-0.5, 1.5]},
    )


def table(kv_of):
    """One row per query head: the key/value head it reads."""
    return pd.DataFrame({"query_head": np.arange(len(kv_of)), "kv_head": np.asarray(kv_of)})


def sharing(kv_of, head):
    """Words for the picker: which key/value head ``head`` reads, and who else reads it."""
    kv_of = np.asarray(kv_of)
    others = [int(h) for h in np.flatnonzero(kv_of == kv_of[head]) if h != head]
    if not others:
        return f"Head {head} has key/value head {kv_of[head]} to itself."
    names = ", ".join(map(str, others))
    return (
        f"Head {head} reads key/value head {kv_of[head]}, shared with head"
        f"{'s' if len(others) > 1 else ''} {names}: the same keys k and values v, "
        "its own queries q."
    )


def show(container, key, kv_of, selected=None):
    """Draw :func:`figure`; the CSV is each query head's key/value head."""
    chart.draw(container, figure(kv_of, selected), key, table=table(kv_of))
