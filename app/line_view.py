"""The line view (BertViz's head view) as a page section: its controls and its chart.

Tokens in two columns, a line from each query to each key whose weight reaches the
threshold, one colour per head, any subset of the layer's heads at once; a token chosen
(clicked, or in the picker) keeps only its lines, and one under the pointer shows only
its lines while it is there (the chart component does that in the browser). Follows
BertViz's head view (Vig 2019, "A Multiscale Visualization of Attention in the
Transformer Model", section 3.1); the links come from :func:`engine.attention.strong_links`.
"""

from __future__ import annotations

import streamlit as st

from app import figures, render, tables
from app.state import session
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

    A token clicked in the chart (:func:`draw`) is taken here, before the widget; a
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


def draw(container, key, weights, labels, heads, threshold, token, title, *, picker, offset=0):
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
    click = render.chart(
        container,
        figures.line_view_figure(found, labels, heads, threshold, title, chosen=token),
        key=key,
        table=tables.links(found, labels, heads, offset),
        clicks=True,
    )
    if click is not None and click.get("trace") in (0, 1) and click.get("row") is not None:
        row = int(click["row"])
        st.session_state[f"_{picker}_clicked"] = None if row == token else row  # twice: all
        st.rerun()
