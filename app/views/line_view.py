"""The line view (BertViz's head view) as a page section: its controls and its chart.

Tokens in two columns, a line from each query to each key whose weight reaches the
threshold, one colour per head, any subset of the layer's heads at once; a token chosen
(clicked, or in the picker) keeps only its lines, and one under the pointer shows only
its lines while it is there (the chart component does that in the browser). Follows
BertViz's head view (Vig 2019, "A Multiscale Visualization of Attention in the
Transformer Model", section 3.1); the links come from :func:`engine.attention.strong_links`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.state import session
from app.views import axes, chart, style
from engine.attention import strong_links

#: The smallest weight a line may stand for: a row holds at most 1/threshold lines.
THRESHOLDS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
DEFAULT_THRESHOLD = 0.05
_PERSIST = {"persist_state": "session"}


def controls(prefix, n_heads, head):
    """The heads shown (all at first; buttons for all, none and ``head``) and the threshold.

    Parameters
    ----------
    prefix : str, the page's key prefix (``pretrained_lines`` …)
    n_heads : int
    head : int, the head the page's other views show

    Returns
    -------
    heads : list of int, ascending
    threshold : float
    """
    heads_key = f"{prefix}_heads"
    every = list(range(n_heads))
    if heads_key not in st.session_state or any(h >= n_heads for h in st.session_state[heads_key]):
        st.session_state[heads_key] = every

    def choose(heads):
        st.session_state[heads_key] = heads

    picker, *buttons = st.columns([5, 1, 1, 1], vertical_alignment="bottom")
    heads = picker.multiselect(
        "Heads drawn", every, key=heads_key, format_func=lambda h: f"H{h}", **_PERSIST
    )
    shortcuts = (("All", every), ("None", []), (f"Only H{head}", [head]))
    for column, (name, chosen) in zip(buttons, shortcuts, strict=True):
        if not session.presenting():  # presentation mode hides the inputs, these with them
            column.button(
                name, key=f"{prefix}_{name.split()[0].lower()}", on_click=choose, args=(chosen,)
            )
    threshold = st.select_slider(
        "Draw lines for weights of at least",
        THRESHOLDS,
        value=DEFAULT_THRESHOLD,
        key=f"{prefix}_threshold",
        **_PERSIST,
    )
    return sorted(heads), threshold


def token_picker(container, key, labels):
    """Every token, or the one whose lines alone are drawn; returns its index or None.

    A token clicked in the chart (:func:`show`) is taken here, before the widget; a
    token beyond new, shorter text goes back to every token.
    """
    clicked = f"_{key}_clicked"
    if clicked in st.session_state:
        st.session_state[key] = st.session_state.pop(clicked)
    if st.session_state.get(key) is not None and st.session_state[key] >= len(labels):
        st.session_state[key] = None
    return container.selectbox(
        "Only the lines of",
        [None, *range(len(labels))],
        key=key,
        format_func=lambda i: "every token" if i is None else f"{i}: {labels[i]}",
        help="Or click a token in the chart; choose “every token” to see them all again.",
        **_PERSIST,
    )


def show(container, key, weights, labels, heads, threshold, token, title, *, picker, offset=0):
    """The line view of ``weights[heads]``; a click on a token keeps only its lines.

    A click sets the token picker ``picker`` and runs the page again, so the picker
    always names the token the chart shows.

    Parameters
    ----------
    container : a Streamlit container
    key : str, the chart's key
    weights : ndarray of shape (n_heads, n, n), one layer, the tokens drawn only
    labels : sequence of n str
    heads : list of int
    threshold : float
    token : int or None, an index into ``labels``
    title : str
    picker : str, the key of the token picker
    offset : int, the text position of ``labels[0]`` (for the CSV)
    """
    found = strong_links(weights[heads], threshold, None if token is None else [token])
    click = chart.draw(
        container,
        chart.remembered(figure, found, labels, heads, threshold, title, chosen=token),
        key,
        table=table(found, labels, heads, offset),
        clicks=True,
    )
    if click is not None and click.get("trace") in (0, 1) and click.get("row") is not None:
        row = int(click["row"])
        st.session_state[f"_{picker}_clicked"] = None if row == token else row  # twice: all
        st.rerun()


def show_layer(container, key, run, layer, heads, threshold, name="", *, hide_special=False):
    """The line view of one MiniLM ``run``'s ``layer``, with its token picker.

    ``name`` ("A", "B" or "") starts the title; ``hide_special`` leaves [CLS] and [SEP]
    out (the CSV's positions stay the text's).
    """
    cut = slice(1, -1) if hide_special and len(run.labels) > 2 else slice(None)
    drawn = run.labels[cut]
    picker = f"{key}_token"
    chosen = token_picker(container, picker, drawn)
    listed = ", ".join(f"H{h}" for h in heads) if heads else "none"
    title = f"{name + ': ' if name else ''}layer {layer}, heads {listed}"
    weights = run.attentions[layer][:, cut, cut]
    show(
        container,
        key,
        weights,
        drawn,
        heads,
        threshold,
        chosen,
        title,
        picker=picker,
        offset=cut.start or 0,
    )


def show_window(container, key, weights, labels, start, layer, heads, threshold):
    """The line view of a long text's tokens ``start`` … ``start + w - 1``, with its picker.

    ``weights`` (n_heads, w, w) are the layer's heads cut to those tokens as queries and as
    keys (the weights on the other tokens are left out, so a row may sum to less than 1).
    """
    picker = f"{key}_token"
    chosen = token_picker(container, picker, labels)
    listed = ", ".join(f"H{h}" for h in heads) if heads else "none"
    title = f"Layer {layer}, heads {listed}: tokens {start}–{start + len(labels) - 1}"
    drawn = (weights, labels, heads, threshold, chosen, title)
    show(container, key, *drawn, picker=picker, offset=start)


#: One colour per head in the line view (Tableau 10, then two more), as BertViz does.
HEAD_COLOURS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a",
)  # fmt: skip


#: The line view's opacity steps: a link's weight falls in one bucket, drawn at its alpha.
LINE_BUCKETS = (0.25, 0.5, 0.75)
LINE_ALPHAS = (0.3, 0.55, 0.8, 1.0)


def _rgba(colour, alpha):
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def figure(links, labels, heads, threshold, title, chosen=None):
    """BertViz's head view: tokens in two columns, a line from each query to each key.

    One colour per head; a line's opacity steps with its weight (:data:`LINE_BUCKETS`).
    Lines are the links :func:`engine.attention.strong_links` found, drawn as one SVG path
    per (head, opacity step) — a layout shape ``M0,i L1,j M0,i′ L1,j′ …`` named after its
    head — so the browser draws at most 4 · n_heads paths whatever the length (a trace
    with gaps would be one path per line: 7,000 at 256 tokens). Traces 0 and 1 are the
    query and key columns (a click on a token reports trace 0 or 1 and the token's row);
    then one legend entry per head.

    Parameters
    ----------
    links : engine.attention.Links, with query and key indices into ``labels``
    labels : sequence of n str, the tokens drawn (perhaps without [CLS] and [SEP])
    heads : sequence of int, the model's head number of each ``links.head`` index
    threshold : float, the smallest weight drawn (stated in the title)
    title : str
    chosen : int, optional, the token (index into ``labels``) whose lines are shown
    """
    n = len(labels)
    axis = axes.axis_labels(labels)
    rows = np.arange(n)
    colour = ["#d62728" if i == chosen else "#222222" for i in rows]
    pitch = 22 if n <= axes.FULL_LABELS_MAX else 14  # pixels from one token to the next
    shown, step, size = axes.column_labels(axis, room=pitch * n)
    fig = go.Figure()
    for x, side, anchor in ((0.0, "query", "middle left"), (1.0, "key", "middle right")):
        fig.add_trace(
            go.Scatter(
                x=np.full(n, x, dtype=np.float32),
                y=rows.astype(np.float32),
                mode="markers+text",
                text=shown,
                hovertext=axis,  # every token, labelled or not
                textposition=anchor,
                textfont={"color": colour, "size": size},
                marker={"size": 6, "color": "#bbbbbb"},
                hovertemplate=f"{side} %{{hovertext}}<extra>click: keep only its lines</extra>",
                showlegend=False,
            )
        )
    bucket = np.digitize(links.weight, LINE_BUCKETS)
    shapes = []
    for index, head in enumerate(heads):
        colour = HEAD_COLOURS[head % len(HEAD_COLOURS)]
        fig.add_trace(  # the head's legend entry; its lines are the shapes below
            go.Scatter(x=[None], y=[None], mode="lines", name=f"H{head}", line={"color": colour})
        )
        for bucket_index, alpha in enumerate(LINE_ALPHAS):
            picked = (links.head == index) & (bucket == bucket_index)
            if picked.any():
                segments = zip(links.query[picked], links.key[picked], strict=True)
                shapes.append(
                    {
                        "type": "path",
                        "path": "".join(f"M0,{q}L1,{k}" for q, k in segments),
                        "name": f"H{head}",
                        "line": {"color": _rgba(colour, alpha), "width": 1 + bucket_index},
                        "layer": "below",
                    }
                )
    fig.update_layout(shapes=shapes)
    drawn = len(links.weight)
    note = (
        f"{drawn:,} lines: weights ≥ {threshold:g} of {links.considered:,} cells; the rest "
        f"hold {links.omitted_mass:.0%} of the attention and are not drawn"
    )
    return style.frame(
        fig,
        style.with_note(axes.titled(title, step), note),
        int(max(320, pitch * n + 110)),
        top=100,
        xaxis={"visible": False, "range": [-0.6, 1.6], "fixedrange": True},
        yaxis={"visible": False, "autorange": "reversed", "range": None, "fixedrange": True},
        # Under the lines: above them, in large type, the heads' keys ran into the title.
        legend={"orientation": "h", "y": 0.0, "x": 0.5, "xanchor": "center", "yanchor": "top"},
        hovermode="closest",
        plot_bgcolor="white",
        meta=axes.LINE_VIEW,  # the chart component keeps a hovered token's lines
    )


def table(found, labels, heads, offset=0):
    """The line view's lines: head, query and key (positions and full labels), weight.

    ``found`` indexes ``labels``; ``offset`` is the text position of ``labels[0]`` (1 when
    [CLS] is hidden), so the positions written are the text's.
    """
    labels = list(labels)
    return pd.DataFrame(
        {
            "head": np.asarray(heads, dtype=int)[found.head],
            "query": found.query + offset,
            "query token": [labels[i] for i in found.query],
            "key": found.key + offset,
            "key token": [labels[i] for i in found.key],
            "weight": found.weight,
        }
    )
