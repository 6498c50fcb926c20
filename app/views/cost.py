"""Measured cost against n: wall time and peak memory of softmax and linear attention.

Log-log axes with n² and n guide lines through each family's largest measurement: the
softmax points should run parallel to n², the linear ones to n.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.views import chart, style

#: Colour of each cost series: softmax warm, linear cool; causal a darker shade.
COST_COLOURS = {
    "softmax": "#d6604d",
    "softmax, causal": "#b2182b",
    "linear": "#4393c3",
    "linear, causal": "#2166ac",
}


def figure(rows, title="Measured cost against n"):
    """Wall time and peak memory against n on log-log axes, with n² and n guide lines.

    The guides are dashed, through each family's largest measurement: the softmax
    points should run parallel to n², the linear ones to n.

    Parameters
    ----------
    rows : sequence of dict with "method", "n", "seconds", "peak_bytes"
        (as :func:`app.data.efficient.measure_cost` returns)
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=["wall time (ms)", "peak memory (MiB)"])
    methods = list(dict.fromkeys(row["method"] for row in rows))
    panels = (("seconds", 1e3, "ms"), ("peak_bytes", 2.0**-20, "MiB"))
    for col, (field, unit, unit_name) in enumerate(panels, start=1):
        for method in methods:
            mine = sorted((r for r in rows if r["method"] == method), key=lambda r: r["n"])
            fig.add_trace(
                go.Scatter(
                    x=np.array([r["n"] for r in mine], dtype=np.float32),
                    y=np.array([r[field] * unit for r in mine], dtype=np.float32),
                    mode="lines+markers",
                    name=method,
                    legendgroup=method,
                    showlegend=col == 1,
                    line={"color": COST_COLOURS.get(method)},
                    hovertemplate=f"{method}<br>n %{{x}}<br>%{{y:.3g}} {unit_name}<extra></extra>",
                ),
                row=1,
                col=col,
            )
        for family, power in (("softmax", 2), ("linear", 1)):
            mine = [r for r in rows if r["method"].startswith(family)]
            if not mine:
                continue
            anchor = max(mine, key=lambda r: (r["n"], r[field]))
            n = np.array(sorted({r["n"] for r in rows}), dtype=np.float64)
            guide = anchor[field] * unit * (n / anchor["n"]) ** power
            fig.add_trace(
                go.Scatter(
                    x=n.astype(np.float32),
                    y=guide.astype(np.float32),
                    mode="lines",
                    name=f"∝ n{'²' if power == 2 else ''}",
                    legendgroup=f"guide{power}",
                    showlegend=col == 1,
                    line={"color": "#7f7f7f", "dash": "dash" if power == 2 else "dot", "width": 1},
                    hoverinfo="skip",
                ),
                row=1,
                col=col,
            )
    # Labels at the measured n (every other power of two) and at powers of ten: plotly.js's
    # own log ticks label 2 and 5 between the decades, and "5" under "0.1" reads as five.
    sizes = sorted({r["n"] for r in rows})[::2]
    fig.update_xaxes(
        type="log", title_text="n (tokens)", tickvals=sizes, ticktext=[f"{n:,}" for n in sizes]
    )
    fig.update_yaxes(type="log", dtick=1)
    return style.frame(fig, title, 400, top=70)


def table(rows):
    """Measured cost, one row per method and n (seconds and peak bytes as measured)."""
    return pd.DataFrame(list(rows))


def show(container, key, rows, title):
    """Draw :func:`figure`; the CSV is every measurement."""
    chart.draw(container, figure(rows, title), key, table=table(rows))
