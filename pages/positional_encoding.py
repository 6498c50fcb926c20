"""Positional encoding: the tables, their similarity, their effect, and the permutation test."""

import streamlit as st

from app import compute, controls, equations, figures, render, state

st.title("Positional encoding")
st.caption(
    "Attention by itself has no idea of order: shuffle the tokens and the outputs shuffle "
    "with them. A positional encoding gives each position its own signature. Choose one in "
    "the sidebar, under “Add positions”."
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
if values["pe"] == "none":
    st.info(
        "With the encoding “None”, nothing is added: every position's vector is zero, so "
        "there is no table to draw, and attention sees the tokens without their order. "
        "Choose one under “Add positions” in the sidebar to see its table and what it changes."
    )
else:
    table = compute.encoding_table(values["pe"], n_positions, d_model, values["seed"])
    left, right = st.columns(2)
    render.chart(
        left,
        figures.matrix_heatmap(
            table,
            range(n_positions),
            [f"f{i}" for i in range(d_model)],
            f"{state.PE_LABELS[values['pe']]} table (positions × dimensions)",
            x_title="dimension",
            y_title="position",
            max_cols=figures.FEATURE_LIMIT,
        ),
        key="pe_table",
    )
    render.chart(
        right,
        figures.matrix_heatmap(
            compute.encoding_similarity(values["pe"], n_positions, d_model, values["seed"]),
            range(n_positions),
            range(n_positions),
            "Cosine similarity between positions",
            x_title="position",
            y_title="position",
        ),
        key="pe_similarity",
    )
render.chart(
    st,
    figures.encoding_curves(
        compute.encoding_table("sinusoidal", n_positions, d_model, 0), range(0, min(d_model, 8), 2)
    ),
    key="pe_curves",
)
if values["pe"] == "rotary":
    st.info(
        "Rotary encoding adds nothing to X: it rotates each head's queries and keys. The "
        "table shows the cosines and sines of its rotation angles; its effect shows in the "
        "attention weights below."
    )

st.subheader("Effect on attention")
if values["pe"] == "none":
    st.caption("With “None” both heatmaps are the same: no position was added.")
head = controls.head_picker("pe_head", run.attention.weights.shape[0])
without = compute.toy(**state.model_inputs(values | {"pe": "none"})).attention.weights[head]
left, right = st.columns(2)
render.chart(
    left, figures.attention_heatmap(without, labels, "Weights without positions"), key="pe_without"
)
render.chart(
    right,
    figures.attention_heatmap(
        run.attention.weights[head], labels, f"Weights with {state.PE_LABELS[values['pe']].lower()}"
    ),
    key="pe_with",
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
