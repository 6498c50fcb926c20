"""/attention on a long text: the scale as a plain slider, each stop's figures from the server.

Past :data:`app.data.passes.LONG_TOKENS` tokens the browser holds no frames (one head's
weights at one stop are 16.7 million cells at 4,096 tokens): the slider is Streamlit's
own, and a release runs the page, which draws the stop's figures from the engine. The
raw scores, the scaled scores and the weights are tiles with one shared zoom
(:mod:`app.views.long_head`), one head's n × n computed at a time
(:mod:`app.data.long_layers`); the output is drawn whole; the query's row is its block's
rows alone (:func:`engine.blocked.attention_rows`); the saturation curve sweeps the
short text's 64 evenly spaced rows.
"""

from __future__ import annotations

import streamlit as st

from app.data import long_layers
from app.state import controls, session
from app.views import arithmetic, bars, equation, heatmap, long_head, numbers, saturation
from app.widgets import pickers
from app.words import equations, long_texts, wording

#: The plain slider's key; its stop is copied to the shared ``scale`` on each change.
SLIDER = "attention_long_scale"


def head_section(settings, head, labels):
    """The head's raw scores as tiles with the zoom; returns the zoom's rows and columns.

    Draws what the page says of a long text, the tiles' reduction and the zoom's sliders
    first (the maps below share them), then the query picker the zoom starts around.
    """
    n = len(labels)
    st.caption(
        long_texts.long_maps(
            n,
            "the raw scores, the scaled scores and the weights",
            long_head.OVERVIEW_TILES,
            long_head.ZOOM_CELLS,
            "The scale is a plain slider here: each stop's figures are drawn by the server "
            "when it is released, not live while it moves. The output is drawn whole; the "
            "query's row on the zoom's keys.",
        )
    )
    st.radio(
        "Each tile shows its block's",
        list(long_head.REDUCTION_NAMES),
        format_func=long_head.REDUCTION_NAMES.get,
        horizontal=True,
        key="attention_reduction",
    )
    query = pickers.token_picker(
        "attention_query", labels, default=wording.default_query(labels), url="query"
    )
    rows, cols = long_head.zoom_sliders(st, "att_tiles", query, n)
    maps = long_layers.head_map(
        settings, head, "scores", _reduction(), rows, cols, *long_head.SIZES
    )  # any scale's
    long_head.show_map(st, "att_raw", maps, labels, rows, cols, "Raw scores q·kᵀ", **_ZOOM)
    return query, rows, cols


_ZOOM = {"zoom": "att_tiles", "value": "score"}


def _reduction():
    return st.session_state["attention_reduction"]


def _scale_slider(settings):
    """Streamlit's own slider over the scale's stops; a change is the shared ``scale``'s."""
    d_model, heads = settings.shape
    options = controls.scale_options(d_model, heads)
    if st.session_state.get(SLIDER) not in options:
        st.session_state[SLIDER] = controls.nearest(options, st.session_state["scale"])

    def moved():
        st.session_state["scale"] = st.session_state[SLIDER]

    st.select_slider(
        "Scale",
        options,
        key=SLIDER,
        format_func=lambda value: controls.scale_label(value, d_model, heads),
        on_change=moved,
    )
    st.session_state["scale"] = st.session_state[SLIDER]
    return st.session_state[SLIDER]


def scale_section(settings, head, labels, zoom):
    """The slider and, at its stop, the scaled scores, the weights, the output, saturation.

    ``zoom`` is :func:`head_section`'s ``(query, rows, cols)``.
    """
    query, rows, cols = zoom
    stop = _scale_slider(settings)
    now = settings.replace(scale=stop)
    title = controls.scale_label(stop, *settings.shape)
    maps = long_layers.head_map(now, head, "masked", _reduction(), rows, cols, *long_head.SIZES)
    blank = "a tile the mask hides whole is blank (−∞)"
    long_head.show_map(
        st, "att_scaled", maps, labels, rows, cols, f"Scaled scores × {title}", blank=blank, **_ZOOM
    )
    maps = long_layers.head_map(now, head, "weights", _reduction(), rows, cols, *long_head.SIZES)
    click = long_head.show_map(
        st, "att_weights", maps, labels, rows, cols, f"Weights at {title}", zoom="att_tiles"
    )
    run = long_layers.layer(now)
    attention = run.attention
    left, right = st.columns(2)
    heatmap.show_features(
        left, "att_output", attention.heads.output[head], labels, "Output = weights · V"
    )
    row = long_layers.query_row(now, head, query)
    with right:
        bars.show(
            st,
            "att_bar",
            row[cols[0] : cols[1]],
            labels[cols[0] : cols[1]],
            labels[query],
            query=query,
        )
        st.caption(
            f"“{controls.md_escape(labels[query])}”'s weights on the zoom's keys "
            f"{cols[0]}–{cols[1] - 1}: {row[cols[0] : cols[1]].sum():.3f} of its attention."
        )
    st.subheader("One weight, worked out")
    cell = arithmetic.clicked_cell("att_weights_zoom", click, rows[1] - rows[0], cols[1] - cols[0])
    cell = None if cell is None else (cell[0] + rows[0], cell[1] + cols[0])
    arithmetic.panel(
        cell, (attention.q[head], attention.k[head], attention.v[head]), stop, run.mask, labels
    )
    st.subheader("Saturation")
    equation.show(equations.SATURATION)
    scales, sweep, n_rows = long_layers.saturation_curve(settings, head)
    default = controls.default_scale(*settings.shape)
    saturation.show(st, "att_saturation", scales, sweep, stop, default, n_rows, n_keys=len(labels))
    stats = long_layers.head_saturation(now, head)
    numbers_table(*saturation.tables(None, labels, stats))
    session.write_url()


def numbers_table(means, per_row):
    """The saturation at the stop: the means over the query rows, and each row's."""
    numbers.show(st, "att_saturation_mean", means, height=64)
    with st.expander("Per query row"):
        numbers.show(st, "att_saturation_rows", per_row)
