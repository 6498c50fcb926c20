"""The atlas of head roles: per role, a layers × heads grid coloured by the score.

The scores are :func:`engine.roles.head_roles`' (Olsson et al. 2022, "In-context Learning
and Induction Heads": R random tokens repeated twice); a clicked cell names a role and a
head, whose pattern on the repeated tokens :func:`pattern_figure` draws with the role's
diagonal. The sentences are computed from the numbers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from app.views import attention_maps, axes, chart, heatmap, style

#: Each role as the page names it.
TITLES = {
    "previous_token": "previous token",
    "induction": "induction",
    "duplicate_token": "duplicate token",
    "sink": "sink",
    "local": "local",
}
#: What each role's score reads, in words.
READS = {
    "previous_token": "the weight on the token just before",
    "induction": "the weight on the token after the query's earlier copy, i − R + 1",
    "duplicate_token": "the weight on the query's own earlier copy, i − R",
    "sink": "the weight on the first token",
    "local": "the share of the weight on the w tokens just before",
}
#: The heads named per role.
TOP = 5


def strongest(scores, spread, k=TOP):
    """The ``k`` heads with the highest score, highest first (ties: the earlier head).

    Parameters
    ----------
    scores, spread : ndarray of shape (n_layers, n_heads)

    Returns
    -------
    list of (layer, head, score, spread)
    """
    n_heads = scores.shape[1]
    order = np.argsort(-np.ravel(scores), kind="stable")[:k]
    return [
        (int(i) // n_heads, int(i) % n_heads, float(scores.flat[i]), float(spread.flat[i]))
        for i in order
    ]


def sentence(role, scores, spread, k=TOP):
    """Where the ``k`` strongest heads of ``role`` lie, and how they stand out, in words.

    Parameters
    ----------
    role : str, a key of :data:`TITLES`
    scores, spread : ndarray of shape (n_layers, n_heads)
    """
    n_layers = scores.shape[0]
    top = strongest(scores, spread, k)
    layers = sorted({layer for layer, *_ in top})
    if len(layers) == 1:
        where = f"all in layer {layers[0]}"
    elif layers[0] >= n_layers // 2:  # the model's second half
        where = f"all in layers ≥ {layers[0]} (of 0–{n_layers - 1})"
    else:
        where = f"spread over layers {layers[0]} to {layers[-1]} (of 0–{n_layers - 1})"
    named = ", ".join(f"L{layer} H{head} {score:.2f} ± {sd:.2f}" for layer, head, score, sd in top)
    return (
        f"The {len(top)} strongest {TITLES[role]} heads are {where}: {named}. "
        f"The median head scores {float(np.median(scores)):.2f}."
    )


def one_role(result, role):
    """``result`` (engine.roles.HeadRoles) with ``role`` alone among its scores."""
    k = result.roles.index(role)
    return result._replace(
        roles=(role,), scores=result.scores[k : k + 1], spread=result.spread[k : k + 1]
    )


def figure(result, title):
    """One layers × heads grid per role, each cell the head's score, on a 0–1 scale.

    Parameters
    ----------
    result : engine.roles.HeadRoles
    title : str
    """
    roles = result.roles
    n_layers, n_heads = result.scores.shape[1:]
    fig = make_subplots(
        rows=1,
        cols=len(roles),
        shared_yaxes=True,
        horizontal_spacing=0.02,
        subplot_titles=[TITLES[role] for role in roles],
    )
    y = [str(layer) for layer in range(n_layers)]  # numbered axes: thinned as every one is
    x = [str(head) for head in range(n_heads)]
    for k, role in enumerate(roles):
        z = result.scores[k].astype(np.float32)
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=x,
                y=y,
                customdata=result.spread[k].astype(np.float32),
                coloraxis="coloraxis",
                hovertemplate=f"{TITLES[role]}<br>layer %{{y}}, head %{{x}}<br>score %{{z:.3f}} "
                "± %{customdata:.3f}<extra></extra>",
            ),
            row=1,
            col=k + 1,
        )
    layers_axis = axes.token_axis(y, "layer")
    fig.update_yaxes(axes.token_axis(y, None), autorange="reversed")  # shared: titled once
    fig.update_yaxes(title=layers_axis["title"], row=1, col=1)
    fig.update_xaxes(axes.token_axis(x, "head"))
    fig.update_layout(
        coloraxis={"colorscale": style.WEIGHTS_SCALE, "cmin": 0.0, "cmax": 1.0}
        | {"colorbar": style.COLORBAR}
    )
    return style.frame(fig, title, 140 + 16 * n_layers, top=80)


def table(result):
    """One row per (layer, head): each role's score and its spread over the seeds."""
    n_layers, n_heads = result.scores.shape[1:]
    columns = {
        "layer": np.repeat(np.arange(n_layers), n_heads),
        "head": np.tile(np.arange(n_heads), n_layers),
    }
    for k, role in enumerate(result.roles):
        columns[role] = np.ravel(result.scores[k])
    for k, role in enumerate(result.roles):
        columns[f"{role}_spread"] = np.ravel(result.spread[k])
    return pd.DataFrame(columns)


def show(container, key, result, title):
    """Draw :func:`figure` with clicks on; the CSV is :func:`table`. Returns the click."""
    return chart.draw(container, figure(result, title), key, table=table(result), clicks=True)


def diagonal(role, start, repeat, n):
    """The cells a perfect head of ``role`` attends to, as a line ``(x0, y0, x1, y1)``.

    In cell coordinates (key, query) of the n-token repeated sequence; None for the
    local role, which spreads over w cells.
    """
    second = start + repeat, start + 2 * repeat - 1  # the second repeat's first and last query
    if role == "induction":
        return second[0] - repeat + 1, second[0], second[1] - repeat + 1, second[1]
    if role == "duplicate_token":
        return second[0] - repeat, second[0], second[1] - repeat, second[1]
    if role == "previous_token":
        return 0, 1, n - 2, n - 1
    if role == "sink":
        return 0, 1, 0, n - 1
    return None


def pattern_figure(weights, labels, title, line=None):
    """A head's weights with a role's diagonal drawn over them (dashed, in red).

    Parameters
    ----------
    weights : ndarray of shape (n, n)
    labels : sequence of n str
    title : str
    line : (x0, y0, x1, y1) in cell coordinates (key, query), optional
    """
    fig = attention_maps.weights_figure(weights, labels, title)
    if line is not None:
        x0, y0, x1, y1 = line
        fig.add_shape(
            type="line",
            x0=x0,
            y0=y0,
            x1=x1,
            y1=y1,
            xref="x",
            yref="y",
            line={"color": style.COMPARE_COLORS[1], "width": 2, "dash": "dash"},
        )
    return fig


def show_pattern(container, key, weights, labels, title, line=None):
    """Draw :func:`pattern_figure`; the CSV is the weights, queries by keys."""
    figure = pattern_figure(weights, labels, title, line)
    chart.draw(container, figure, key, table=heatmap.table(weights, labels, labels))


def clicked(key, click, n_roles, n_layers, n_heads):
    """The (role, layer, head) of the cell last clicked on chart ``key``, kept for the session.

    ``click`` is what :func:`app.views.chart.draw` returned this run. Returns the cell
    when it is new since the last call (for the page to show), else None.
    """
    name = f"{key}_cell"
    if click is not None and click.get("col") is not None:
        st.session_state[name] = (int(click["trace"]), int(click["row"]), int(click["col"]))
    cell = st.session_state.get(name)
    if cell is None or cell == st.session_state.get(f"{key}_shown"):
        return None
    st.session_state[f"{key}_shown"] = cell
    role, layer, head = cell
    if role >= n_roles or layer >= n_layers or head >= n_heads:
        return None
    return tuple(cell)
