"""Encoder layer: attention → add & norm → feed-forward → add & norm, post-LN or pre-LN."""

import streamlit as st

from app.data import layers, passes
from app.lecture.presentation import control_hint
from app.state import controls, session
from app.views import equation, heatmap, residual
from app.widgets import notices
from app.words import equations, long_texts, wording

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
long = len(labels) > passes.LONG_TOKENS  # the layer run without any head's n × n
if settings.trained:
    config = settings.config
    norm = "pre" if config.norm_first else "post"
    st.caption(
        wording.trained_layer(settings)
        + control_hint(
            f"; {'post' if config.norm_first else 'pre'}-LN stays available with “Random "
            "(seeded)” weights"
        )
        + "."
    )
    own_mask = settings.causal == config.causal
    if not own_mask or settings.scale != controls.default_scale(*controls.model_shape(values)):
        st.caption(
            "This page runs the layer as the model does: "
            + ("masked" if config.causal else "unmasked")
            + f", at its own scale 1/√{config.d_head}, whatever scale or mask the other pages try."
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
equation.show(equations.ENCODER[settings.config.model_type if settings.trained else norm])
layer = layers.encoder(settings, norm_first=norm == "pre", keep_weights=not long)
if long:
    st.caption(long_texts.long_features(len(labels)))
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
