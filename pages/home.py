"""Home: text → tokens → embeddings X → Q, K, V."""

import pandas as pd
import streamlit as st

from app.data import layers, passes
from app.lecture.presentation import control_hint
from app.state import controls
from app.views import equation, heatmap
from app.widgets import notices
from app.words import equations, long_texts, wording

st.title("Tokens → Q, K, V")
st.caption(
    control_hint("Type a sentence in the sidebar. ")
    + "The text is cut into tokens, each token becomes a vector, and three matrices turn "
    "every vector into a query, a key and a value."
)

settings, tokenization, run, head = notices.head_or_stop()
labels = tokenization.labels
if len(labels) > passes.LONG_TOKENS:  # n × d alone here, and no head's n × n kept
    st.caption(long_texts.long_features(len(labels)))

st.subheader(f"{len(labels)} tokens")
st.dataframe(
    pd.DataFrame({"token": labels, "id": tokenization.ids}).astype(str).T,
    hide_index=False,
    width="stretch",
)
kind = {"minilm": "wordpiece", "smollm2": "bpe"}.get(settings.weights, settings.tokenizer)
st.caption(" ".join(wording.tokens_sentences(tokenization, kind)))

convention = st.segmented_control(
    "Convention",
    controls.CONVENTIONS,
    key="convention",
    required=True,
    format_func={"rows": "Rows (papers): X is n × d", "columns": "Columns (book): X is D × N"}.get,
    persist_state="session",
)
columns = convention == "columns"
weights, outputs = layers.projections(settings, run, head)
if settings.trained:
    c = settings.config
    equation.show(
        equations.head_projections(convention, c.d_model, c.d_head, layers.adds_biases(settings))
    )
    part, matrices = ("rows", "Ω_q, Ω_k and Ω_v") if columns else ("columns", "W_Q, W_K and W_V")
    st.caption(wording.head_projections(settings, head, part, matrices))
    x_title, suffix = f"Hidden state X entering layer {settings.layer}", f", head {head}"
else:
    equation.show(equations.PROJECTIONS[convention])
    x_title, suffix = "Embeddings X (+ positions)", ""

heatmap.show_features(st, "home_x", run.x, labels, x_title, transpose=columns, clip=True)
names = [name + suffix for name in equations.WEIGHT_NAMES[convention]]
for col, name, w, part in zip(st.columns(3), names, weights, "qkv", strict=True):
    features = heatmap.feature_labels(w.shape[0]), heatmap.feature_labels(w.shape[1])
    heatmap.show(
        col,
        f"home_w{part}",
        w,
        *features,
        name,
        x_title=f"feature of {part.upper()}",
        y_title="feature of X",
        transpose=columns,
        max_rows=heatmap.FEATURE_LIMIT,
        max_cols=heatmap.FEATURE_LIMIT,
    )
for col, name, m, part in zip(st.columns(3), "QKV", outputs, "QKV", strict=True):
    heatmap.show_features(col, f"home_{part}", m, labels, name + suffix, transpose=columns)
