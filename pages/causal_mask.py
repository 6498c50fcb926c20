"""Causal mask: what each token may see, and what masking does to the weights."""

import streamlit as st

import engine
from app import arithmetic, compute, controls, equations, figures, render, state, tables

st.title("The causal mask")
st.latex(equations.CAUSAL)
st.caption(
    "A decoder writes one token at a time, so a token may only attend to itself and to the "
    "tokens before it. Masked scores become −∞ and the softmax turns them into exactly 0."
    " The sidebar's “Causal mask” switch applies the mask on every page."
)

tokenization, run = controls.toy_run()
labels = tokenization.labels
head = controls.head_picker("causal_head", run.attention.weights.shape[0])
values = state.current()
masked_run = compute.toy(**state.model_inputs(values | {"causal": True}))
masked = masked_run.attention.heads
unmasked = compute.toy(**state.model_inputs(values | {"causal": False})).attention.heads

left, right = st.columns(2)
mask = engine.causal_mask(len(labels))
render.chart(
    left,
    figures.mask_heatmap(mask, labels),
    key="causal_mask",
    table=tables.matrix_frame(mask, labels, labels),
)
render.chart(
    right,
    figures.scores_heatmap(masked.masked[head], labels, "Masked scaled scores"),
    key="causal_scores",
    table=tables.matrix_frame(masked.masked[head], labels, labels),
)
left, right = st.columns(2)
click = render.chart(
    left,
    figures.attention_heatmap(
        masked.weights[head],
        labels,
        "Weights with the mask",
        scores=masked.scores[head],
        scaled=masked.scaled[head],
    ),
    key="causal_weights_masked",
    table=tables.matrix_frame(masked.weights[head], labels, labels),
    clicks=True,
)
render.chart(
    right,
    figures.attention_heatmap(
        unmasked.weights[head],
        labels,
        "Weights without the mask",
        scores=unmasked.scores[head],
        scaled=unmasked.scaled[head],
    ),
    key="causal_weights_unmasked",
    table=tables.matrix_frame(unmasked.weights[head], labels, labels),
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
query = controls.token_picker("causal_query", labels)
st.text("Visible with the mask: " + " ".join(labels[: query + 1]))
st.text(f"Hidden by the mask: {len(labels) - query - 1} later tokens")
