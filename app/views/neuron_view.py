"""BertViz's neuron view: one query against every key, stage by stage.

The keys k, the products q ⊙ k, their sums q·k and the scaled scores, then the softmax:
how one row of weights is made (Vig 2019, section 3.3). The numbers are
:func:`engine.arithmetic.query_stages`'.
"""

from __future__ import annotations

import copy
import functools
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.views import axes, chart, style

#: The neuron view's two score bars: q·k grey, scaled q·k red.
NEURON_BAR_COLOURS = ("#8c8c8c", "#d6604d")


@functools.cache
def _four_panels():
    """The layout of the four panels, sharing their token axis, made once.

    ``make_subplots`` costs about 25 ms a call, and ``add_trace`` with a row and a column
    a layout pass each: the neuron view is drawn again at every head.
    """
    return make_subplots(
        rows=1,
        cols=4,
        shared_yaxes=True,
        column_widths=[0.32, 0.32, 0.18, 0.18],
        horizontal_spacing=0.015,
        subplot_titles=["keys k", "q ⊙ k", "q · k and scaled", "softmax"],
    ).layout.to_plotly_json()


def figure(stages, k, labels, query_label):
    """One query against every key, stage by stage: k, q⊙k, q·k, scaled, softmax.

    Parameters
    ----------
    stages : engine.arithmetic.QueryStages for the query
    k : ndarray of shape (n, d_head), the keys
    labels : sequence of n str
    query_label : str
    """
    k, product = np.asarray(k), np.asarray(stages.product)
    dots, scaled, weights, scale = stages.scores, stages.scaled, stages.weights, stages.scale
    axis = axes.axis_labels(labels)
    limit = float(max(np.abs(k).max(), np.abs(product).max(), 1e-12))
    traces = [
        go.Heatmap(
            z=z.astype(np.float32),
            y=axis,
            colorscale=style.DIVERGING_SCALE,
            zmid=0.0,
            zmin=-limit,
            zmax=limit,
            showscale=panel == 1,
            # Under the two heatmaps it explains, clear of the bars beside them.
            colorbar={
                "orientation": "h",
                "x": 0.32,
                "xanchor": "center",
                "len": 0.5,
                "y": -0.1,
                "yanchor": "top",
                "thickness": 10,
                "title": {"text": "k, q⊙k", "side": "right"},
            },
            hovertemplate="key %{y}<br>feature %{x}<br>%{z:.3f}<extra></extra>",
            **_panel(panel),
        )
        for panel, z in ((1, k), (2, product))
    ]
    traces += [
        go.Bar(
            x=values.astype(np.float32),
            y=axis,
            orientation="h",
            name=name,
            marker={"color": colour},
            showlegend=True,
            **_panel(3),
        )
        for name, values, colour in (
            ("q·k", dots, NEURON_BAR_COLOURS[0]),
            (_scaled_name(scale, stages.softcap), scaled, NEURON_BAR_COLOURS[1]),
        )
    ]
    traces.append(
        go.Bar(
            x=weights.astype(np.float32),
            y=axis,
            orientation="h",
            name="weight",
            marker={"color": style.weight_colors(weights)},
            showlegend=False,
            **_panel(4),
        )
    )
    height = max(360, 16 * len(labels) + 120) + 60
    layout = copy.deepcopy(_four_panels())
    token_axis = axes.token_axis(axis, "key", room=height - 210) | {"autorange": "reversed"}
    for name in [name for name in layout if re.fullmatch(r"yaxis\d*", name)]:
        layout[name] = _merged(layout[name], token_axis)
    _title_labelled_axes_only(layout)
    layout |= style.layout(
        f"Neuron view: query “{axes.axis_labels([query_label])[0]}”",
        height,
        top=70,
        bottom=80,
        barmode="group",
        showlegend=True,
        # Under the q·k bars, beside the colour bar.
        legend={"orientation": "h", "x": 0.66, "y": -0.1, "yanchor": "top"},
    )
    return go.Figure(traces, layout)


def _scaled_name(scale, softcap):
    capped = "" if softcap is None else f", capped at {softcap:g}"
    return f"scaled, × {scale:.3g}{capped}"


def _panel(panel):
    """A trace's axes in panel ``panel`` (1 to 4), as ``make_subplots`` names them."""
    suffix = "" if panel == 1 else str(panel)
    return {"xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}


def _merged(base, more):
    """``base`` with ``more`` written over it, nested dicts merged (as update_yaxes does)."""
    out = dict(base)
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _title_labelled_axes_only(layout):
    """Leave the axes of shared subplots that draw no labels without a title too."""
    for name, axis in layout.items():
        if re.fullmatch(r"[xy]axis\d*", name) and axis.get("showticklabels") is False:
            axis["title"] = {**axis.get("title", {}), "text": None}


def table(stages, k, labels):
    """The neuron view's numbers: each key's features, q ⊙ k, q·k, the scaled score, the weight.

    Parameters
    ----------
    stages : engine.arithmetic.QueryStages
    k : ndarray of shape (n_k, d_k)
    labels : sequence of n_k str
    """
    d_k = np.shape(k)[1]
    frame = pd.DataFrame(k, index=list(labels), columns=[f"k f{i}" for i in range(d_k)])
    products = pd.DataFrame(
        stages.product, index=frame.index, columns=[f"q⊙k f{i}" for i in range(d_k)]
    )
    frame = pd.concat([frame, products], axis=1)
    frame["q·k"] = stages.scores
    frame[f"× {stages.scale:.6g}"] = stages.scaled
    frame["weight"] = stages.weights
    return frame


def keys_shown(stages, k, labels, keys):
    """``stages``, ``k`` and ``labels`` of the keys ``keys`` (a slice) alone.

    The weights stay those of the softmax over every key the query sees: a long text's
    neuron view draws the keys around its query, not a softmax over them alone.
    """
    cut = stages._replace(
        product=stages.product[keys],
        scores=stages.scores[keys],
        scaled=stages.scaled[keys],
        weights=stages.weights[keys],
    )
    return cut, k[keys], labels[keys]


def show(container, key, stages, k, labels, query_label):
    """Draw :func:`figure`; the CSV is every stage's numbers (:func:`table`)."""
    drawn = chart.remembered(figure, stages, k, labels, query_label)
    chart.draw(container, drawn, key, table=table(stages, k, labels))
