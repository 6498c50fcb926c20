"""Home: text → tokens → embeddings X → Q, K, V."""

import pandas as pd
import streamlit as st

from app import equations, figures, render, tables, wording
from app.lecture import presentation
from app.state import controls
from app.widgets import notices, pickers

st.title("Tokens → Q, K, V")
st.caption(
    presentation.control_hint("Type a sentence in the sidebar. ")
    + "The text is cut into tokens, each token becomes a vector, and three matrices turn "
    "every vector into a query, a key and a value."
)

settings, tokenization, run = notices.layer_or_stop()
labels = tokenization.labels
head = pickers.shared_head(run)
st.caption(notices.weights_note(settings, head))

st.subheader(f"{len(labels)} tokens")
st.dataframe(
    pd.DataFrame({"token": labels, "id": tokenization.ids}).astype(str).T,
    hide_index=False,
    width="stretch",
)
st.caption(
    " ".join(
        wording.tokens_sentences(
            tokenization, "wordpiece" if settings.trained else settings.tokenizer
        )
    )
)

convention = st.segmented_control(
    "Convention",
    controls.CONVENTIONS,
    key="convention",
    required=True,
    format_func={"rows": "Rows (papers): X is n × d", "columns": "Columns (book): X is D × N"}.get,
    persist_state="session",
)
columns = convention == "columns"
if settings.trained:
    render.equation(equations.HEAD_PROJECTIONS[convention])
    part, matrices = ("rows", "Ω_q, Ω_k and Ω_v") if columns else ("columns", "W_Q, W_K and W_V")
    st.caption(
        f"X is the hidden state entering layer {settings.layer}: 384 features per token, "
        f"drawn cropped to the first 128. Head {head} owns {part} {32 * head}–{32 * head + 31} "
        f"of the layer's {matrices} (and their biases): its queries, keys and values have "
        "32 features each. Layers, heads and features are counted from 0, as on the charts."
    )
    x_title = f"Hidden state X entering layer {settings.layer}"
    d_head = run.attention.q.shape[-1]
    cut = slice(head * d_head, (head + 1) * d_head)
    matrices = [w[:, cut] for w in run.weights[:3]]
    projections = [run.attention.q[head], run.attention.k[head], run.attention.v[head]]
    names = [f"{name}, head {head}" for name in equations.WEIGHT_NAMES[convention]]
    output_names = [f"{name}, head {head}" for name in "QKV"]
else:
    render.equation(equations.PROJECTIONS[convention])
    x_title = "Embeddings X (+ positions)"
    matrices = run.weights[:3]
    projections = [run.q, run.k, run.v]
    names = equations.WEIGHT_NAMES[convention]
    output_names = ["Q", "K", "V"]

render.chart(
    st,
    figures.token_features_heatmap(run.x, labels, x_title, transpose=columns, clip=True),
    key="home_x",
    table=tables.token_features(run.x, labels),
)
weight_cols = st.columns(3)
for col, name, w, part in zip(weight_cols, names, matrices, "qkv", strict=True):
    render.chart(
        col,
        figures.matrix_heatmap(
            w,
            figures.feature_labels(w.shape[0]),
            figures.feature_labels(w.shape[1]),
            name,
            transpose=columns,
            max_rows=figures.FEATURE_LIMIT,
            max_cols=figures.FEATURE_LIMIT,
        ),
        key=f"home_w{part}",
        table=tables.matrix_frame(
            w, figures.feature_labels(w.shape[0]), figures.feature_labels(w.shape[1])
        ),
    )
proj_cols = st.columns(3)
for col, name, m, part in zip(proj_cols, output_names, projections, "QKV", strict=True):
    render.chart(
        col,
        figures.token_features_heatmap(m, labels, name, transpose=columns),
        key=f"home_{part}",
        table=tables.token_features(m, labels),
    )
