"""The residual stream through one encoder layer: each token's norm at each stage.

Beside it, the norm of what each sub-layer (attention, the feed-forward network) adds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.views import axes, chart, style

#: The residual stream's norms are drawn on a log axis when the largest is this many times
#: their median.
LOG_RATIO = 20


def figure(stream_norms, update_norms, labels):
    """Per-token norms of the residual stream at each stage and of each sub-layer's update.

    Parameters
    ----------
    stream_norms : ndarray of shape (3, n), input / after attention / after FFN
    update_norms : ndarray of shape (2, n), attention and FFN updates
    labels : sequence of n str
    """
    axis = axes.axis_labels(labels)
    stream = np.asarray(stream_norms, np.float64)
    # A massive activation (SmolLM2's first token, in its middle layers) flattens every other
    # token's norm to a line along zero: a log axis shows both.
    log = stream.max() > LOG_RATIO * max(float(np.median(stream)), 1e-12)
    stream_title = "‖residual stream‖ (log scale)" if log else "‖residual stream‖"
    fig = make_subplots(rows=1, cols=2, subplot_titles=[stream_title, "‖what each sub-layer adds‖"])
    for name, values in zip(("input", "after attention", "after FFN"), stream_norms, strict=True):
        fig.add_trace(
            go.Scatter(x=axis, y=np.asarray(values, np.float32), mode="lines+markers", name=name),
            row=1,
            col=1,
        )
    for name, values in zip(("attention update", "FFN update"), update_norms, strict=True):
        fig.add_trace(go.Bar(x=axis, y=np.asarray(values, np.float32), name=name), row=1, col=2)
    fig.update_xaxes(axes.token_axis(axis, "token"), autotickangles=axes.TICK_ANGLES)
    if log:
        fig.update_yaxes(type="log", row=1, col=1)
    return style.frame(fig, height=380, barmode="group")


def table(stream_norms, update_norms, labels):
    """Per-token norms of the residual stream and of each sub-layer's update, one row a token."""
    columns = ("input", "after attention", "after FFN", "attention update", "FFN update")
    values = dict(zip(columns, [*stream_norms, *update_norms], strict=True))
    return pd.DataFrame(values, index=list(labels))


def show(container, key, stream_norms, update_norms, labels):
    """Draw :func:`figure`; the CSV is every norm (:func:`table`)."""
    chart.draw(
        container,
        figure(stream_norms, update_norms, labels),
        key,
        table=table(stream_norms, update_norms, labels),
    )
