"""Encoder layer: attention → add & norm → feed-forward → add & norm, post-LN or pre-LN."""

import streamlit as st

from app.data import layers
from app.lecture.presentation import control_hint
from app.state import controls, session
from app.views import equation, heatmap, residual
from app.widgets import notices
from app.words import equations

st.title("One encoder layer")
st.caption(
    "Attention mixes information between tokens; the feed-forward network then transforms "
    "each token on its own. Each sub-layer adds its result to the residual stream, and "
    "LayerNorm keeps the stream's scale in check — after the addition (post-LN, the "
    "original transformer) or before the sub-layer (pre-LN, most models today)."
)

values = session.current()
settings, tokenization, run = notices.layer_or_stop()
labels = tokenization.labels
if settings.trained:
    st.caption(
        f"MiniLM's layer {settings.layer}, as trained: BERT is post-LN, so that is what "
        "runs"
        + control_hint("; pre-LN stays available with “Random (seeded)” weights")
        + ". Every sub-layer has its trained biases and LayerNorm gains."
    )
    norm = "post"
    if settings.causal or settings.scale != controls.default_scale(*controls.model_shape(values)):
        st.caption(
            "This page runs the layer as the model does: unmasked, at its own scale "
            "1/√32, whatever scale or mask the other pages try."
        )
else:
    norm = st.segmented_control(
        "LayerNorm placement",
        ("post", "pre"),
        key="encoder_norm",
        required=True,
        default="post",
        format_func={"post": "Post-LN (Vaswani et al.)", "pre": "Pre-LN"}.get,
        persist_state="session",
    )
    if settings.pe == "rotary":
        st.info("This page adds positions to X; rotary encoding is shown on the attention pages.")
equation.show(equations.ENCODER["bert" if settings.trained else norm])
layer = layers.encoder(settings, norm_first=norm == "pre")
d_ff = layer.ffn_hidden.shape[1]

residual.show(st, "enc_norms", layer.stream_norms, layer.update_norms, labels)
left, right = st.columns(2)
heatmap.show_features(
    left,
    "enc_attention_update",
    layer.attention_update,
    labels,
    "Attention sub-layer's update",
    clip=True,
)
heatmap.show_features(
    right,
    "enc_ffn_update",
    layer.ffn_update,
    labels,
    f"Feed-forward update (d_ff = {d_ff})",
    clip=True,
)
left, right = st.columns(2)
heatmap.show_features(left, "enc_input", layer.streams[0], labels, "Input X", clip=True)
heatmap.show_features(right, "enc_output", layer.output, labels, "Layer output", clip=True)
