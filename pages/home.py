"""Home: text → tokens → embeddings X → Q, K, V."""

import pandas as pd
import streamlit as st

from app import controls, equations, figures, render, state, tables

st.title("Tokens → Q, K, V")
st.caption(
    "Type a sentence in the sidebar. It is cut into tokens, each token becomes a vector, "
    "and three matrices turn every vector into a query, a key and a value."
)

tokenization, run = controls.toy_run()
labels = tokenization.labels

st.subheader(f"{len(labels)} tokens")
st.dataframe(
    pd.DataFrame({"token": labels, "id": tokenization.ids}).astype(str).T,
    hide_index=False,
    width="stretch",
)

convention = st.segmented_control(
    "Convention",
    state.CONVENTIONS,
    key="convention",
    required=True,
    format_func={"rows": "Rows (papers): X is n × d", "columns": "Columns (book): X is D × N"}.get,
    persist_state="session",
)
columns = convention == "columns"
st.latex(equations.PROJECTIONS[convention])

features = figures.feature_labels(run.x.shape[1])
render.chart(
    st,
    figures.token_features_heatmap(run.x, labels, "Embeddings X (+ positions)", transpose=columns),
    key="home_x",
    table=tables.token_features(run.x, labels),
)
weight_cols = st.columns(3)
names = equations.WEIGHT_NAMES[convention]
for col, name, w, part in zip(weight_cols, names, run.weights[:3], "qkv", strict=True):
    render.chart(
        col,
        figures.matrix_heatmap(
            w,
            features,
            features,
            name,
            transpose=columns,
            max_rows=figures.FEATURE_LIMIT,
            max_cols=figures.FEATURE_LIMIT,
        ),
        key=f"home_w{part}",
        table=tables.matrix_frame(w, features, features),
    )
proj_cols = st.columns(3)
for col, name, m in zip(proj_cols, ("Q", "K", "V"), (run.q, run.k, run.v), strict=True):
    render.chart(
        col,
        figures.token_features_heatmap(m, labels, name, transpose=columns),
        key=f"home_{name}",
        table=tables.token_features(m, labels),
    )
