"""The tokens of a text and their vocabulary ids, as a table."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from app.views import axes, chart, style


def figure(labels, ids):
    """The tokens and their vocabulary ids as a table, one row per token."""
    fig = go.Figure(
        go.Table(
            header={"values": ["position", "token", "id"], "align": "left"},
            cells={
                "values": [list(range(len(labels))), axes.axis_labels(labels), list(ids)],
                "align": "left",
            },
        )
    )
    return style.frame(
        fig, height=min(120 + 26 * len(labels), 700), top=10, bottom=0, left=1, right=1
    )


def table(labels, ids):
    """One row per token: the token as shown, its id."""
    return pd.DataFrame({"token": labels, "id": ids})


def show(container, key, labels, ids):
    """Draw :func:`figure`; the CSV is :func:`table`."""
    chart.draw(container, figure(labels, ids), key, table=table(labels, ids))
