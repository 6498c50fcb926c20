"""Encoder layer: attention → add & norm → feed-forward → add & norm, post-LN or pre-LN."""

import streamlit as st

from app import compute, controls, equations, figures, render, state, tables

st.title("One encoder layer")
st.caption(
    "Attention mixes information between tokens; the feed-forward network then transforms "
    "each token on its own. Each sub-layer adds its result to the residual stream, and "
    "LayerNorm keeps the stream's scale in check — after the addition (post-LN, the "
    "original transformer) or before the sub-layer (pre-LN, most models today)."
)

tokenization, run = controls.toy_run()
labels = tokenization.labels
values = state.current()
norm = st.segmented_control(
    "LayerNorm placement",
    ("post", "pre"),
    key="encoder_norm",
    required=True,
    default="post",
    format_func={"post": "Post-LN (Vaswani et al.)", "pre": "Pre-LN"}.get,
    persist_state="session",
)
st.latex(equations.ENCODER[norm])
d_ff = 4 * values["d_model"]
if values["pe"] == "rotary":
    st.info("This page adds positions to X; rotary encoding is shown on the attention pages.")
layer = compute.encoder(
    **state.layer_inputs(values),
    norm_first=norm == "pre",
    d_ff=d_ff,
)

render.chart(
    st,
    figures.stream_norms_figure(layer.stream_norms, layer.update_norms, labels),
    key="enc_norms",
    table=tables.norms(layer.stream_norms, layer.update_norms, labels),
)
left, right = st.columns(2)
render.chart(
    left,
    figures.token_features_heatmap(layer.attention_update, labels, "Attention sub-layer's update"),
    key="enc_attention_update",
    table=tables.token_features(layer.attention_update, labels),
)
render.chart(
    right,
    figures.token_features_heatmap(
        layer.ffn_update, labels, f"Feed-forward update (d_ff = {d_ff})"
    ),
    key="enc_ffn_update",
    table=tables.token_features(layer.ffn_update, labels),
)
left, right = st.columns(2)
render.chart(
    left,
    figures.token_features_heatmap(layer.streams[0], labels, "Input X"),
    key="enc_input",
    table=tables.token_features(layer.streams[0], labels),
)
render.chart(
    right,
    figures.token_features_heatmap(layer.output, labels, "Layer output"),
    key="enc_output",
    table=tables.token_features(layer.output, labels),
)
