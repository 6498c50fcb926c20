"""Positional encoding: the tables, their similarity, their effect, and the permutation test."""

import streamlit as st

from app import compute, controls, equations, figures, render, state, tables

st.title("Positional encoding")
st.caption(
    "Attention by itself has no idea of order: shuffle the tokens and the outputs shuffle "
    "with them. A positional encoding gives each position its own signature. Choose one in "
    "the sidebar."
)
st.latex(equations.SINUSOIDAL)
st.latex(equations.ROTARY)

tokenization, run = controls.toy_run()
labels = tokenization.labels
values = state.current()
n, d_model = run.x.shape

n_positions = st.slider(
    "Positions to draw", 2, 512, min(max(n, 32), 512), key="pe_positions", persist_state="session"
)
encoding = compute.encoding_table(values["pe"], n_positions, d_model, values["seed"])
left, right = st.columns(2)
render.chart(
    left,
    figures.matrix_heatmap(
        encoding,
        range(n_positions),
        [f"f{i}" for i in range(d_model)],
        f"{state.PE_LABELS[values['pe']]} table (positions × dimensions)",
        x_title="dimension",
        y_title="position",
        max_cols=figures.FEATURE_LIMIT,
    ),
    key="pe_table",
    table=tables.matrix_frame(encoding, range(n_positions), figures.feature_labels(d_model)),
)
similarity = compute.encoding_similarity(values["pe"], n_positions, d_model, values["seed"])
render.chart(
    right,
    figures.matrix_heatmap(
        similarity,
        range(n_positions),
        range(n_positions),
        "Cosine similarity between positions",
        x_title="position",
        y_title="position",
    ),
    key="pe_similarity",
    table=tables.matrix_frame(similarity, range(n_positions), range(n_positions)),
)
sinusoidal = compute.encoding_table("sinusoidal", n_positions, d_model, 0)
dims = range(0, min(d_model, 8), 2)
render.chart(
    st,
    figures.encoding_curves(sinusoidal, dims),
    key="pe_curves",
    table=tables.matrix_frame(sinusoidal[:, dims], range(n_positions), [f"f{i}" for i in dims]),
)
if values["pe"] == "rotary":
    st.info(
        "Rotary encoding adds nothing to X: it rotates each head's queries and keys, so "
        "its table is zero and its effect shows only in the attention weights below."
    )

st.subheader("Effect on attention")
head = controls.head_picker("pe_head", run.attention.weights.shape[0])
without = compute.toy(**state.model_inputs(values | {"pe": "none"})).attention.weights[head]
left, right = st.columns(2)
render.chart(
    left,
    figures.attention_heatmap(without, labels, "Weights without positions"),
    key="pe_without",
    table=tables.matrix_frame(without, labels, labels),
)
render.chart(
    right,
    figures.attention_heatmap(
        run.attention.weights[head], labels, f"Weights with {state.PE_LABELS[values['pe']].lower()}"
    ),
    key="pe_with",
    table=tables.matrix_frame(run.attention.weights[head], labels, labels),
)

st.subheader("Is self-attention equivariant to permutation?")
st.latex(equations.PERMUTATION)
shuffle_seed = st.number_input(
    "Shuffle seed", 0, 10_000, 1, key="pe_shuffle", persist_state="session"
)
result = compute.permutation_demo(
    values["text"], values["tokenizer"], values["seed"], d_model, values["heads"], shuffle_seed
)
st.text("Shuffled: " + " ".join(labels[i] for i in result["permutation"]))
st.dataframe(result["table"], hide_index=True)
