"""Causal mask: what each token may see, and what masking does to the weights."""

import streamlit as st

import engine
from app.data import layers
from app.lecture.presentation import control_hint
from app.views import arithmetic, attention_maps, equation, heatmap
from app.widgets import notices, pickers
from app.words import equations

st.title("The causal mask")
equation.show(equations.CAUSAL)
st.caption(
    "A decoder writes one token at a time, so a token may only attend to itself and to the "
    "tokens before it. Masked scores become −∞ and the softmax turns them into exactly 0."
    + control_hint(" The sidebar's “Mask future tokens” switch applies the mask on every page.")
)

settings, tokenization, run = notices.layer_or_stop()
labels = tokenization.labels
head = pickers.shared_head(run)
st.caption(notices.weights_note(settings, head))
if settings.trained:
    st.info(
        "MiniLM is an encoder: it was trained reading in both directions, so every token "
        "sees every other. Masking it here is a what-if — the same trained scores with the "
        "later tokens cut off — not something the model ever does. Side by side, with and "
        "without."
    )
masked_run = layers.layer(settings.replace(causal=True))
masked = masked_run.attention.heads
unmasked = layers.layer(settings.replace(causal=False)).attention.heads

left, right = st.columns(2)
heatmap.show_mask(left, "causal_mask", engine.causal_mask(len(labels)), labels)
attention_maps.show_scores(
    right, "causal_scores", masked.masked[head], labels, "Masked scaled scores"
)
left, right = st.columns(2)
click = attention_maps.show_weights(
    left,
    "causal_weights_masked",
    masked.weights[head],
    labels,
    "Weights with the mask" + (" (what-if)" if settings.trained else ""),
    scores=masked.scores[head],
    scaled=masked.masked[head],
    clicks=True,
)
attention_maps.show_weights(
    right,
    "causal_weights_unmasked",
    unmasked.weights[head],
    labels,
    "Weights without the mask" + (" (as MiniLM reads)" if settings.trained else ""),
    scores=unmasked.scores[head],
    scaled=unmasked.scaled[head],
)

with left:
    attention = masked_run.attention
    arithmetic.panel(
        arithmetic.clicked_cell("causal_weights_masked", click, *masked.weights[head].shape),
        (attention.q[head], attention.k[head], attention.v[head]),
        masked.scale,
        masked_run.mask,
        labels,
    )

st.subheader("What each token can see")
query = pickers.token_picker("causal_query", labels)
st.text("Visible with the mask: " + " ".join(labels[: query + 1]))
st.text(f"Hidden by the mask: {len(labels) - query - 1} later tokens")
