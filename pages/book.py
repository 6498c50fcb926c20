"""The book's exercise: UDL notebook 12.1, loop form and matrix form, against its printed values."""

import inspect
import itertools

import streamlit as st

from app import compute, equations, figures, render, tables
from engine import book

st.title("The book's exercise (UDL notebook 12.1)")
st.caption(
    "N = 3 inputs of D = 4 dimensions, drawn with the notebook's own seeds (3 for the "
    "inputs, one column at a time; 0 for the parameters). Column convention: each input is "
    "a column of X, and the softmax runs down each column of KᵀQ."
)
render.equation(equations.BOOK_SA)

exercise = compute.book_exercise()
inputs = [f"x{n}" for n in range(3)]
dims = [f"d{i}" for i in range(4)]

st.subheader("Unscaled (eq. 12.8): loop form, matrix form and the book's printed values")
st.dataframe(tables.book_comparison(exercise), hide_index=True)
st.caption(
    "The unscaled attention is extreme: almost all weight on one input per column. "
    "Scaling by 1/√D_q (eq. 12.9) softens it."
)
left, right = st.columns(2)
render.chart(
    left,
    figures.matrix_heatmap(
        exercise["matrix"].attention,
        inputs,
        inputs,
        "Attention Softmax[KᵀQ] (columns sum to 1)",
        diverging=False,
        x_title="output n",
        y_title="value m",
    ),
    key="book_attention",
    table=tables.matrix_frame(exercise["matrix"].attention, inputs, inputs),
)
render.chart(
    right,
    figures.matrix_heatmap(
        exercise["matrix_scaled"].attention,
        inputs,
        inputs,
        "Scaled: Softmax[KᵀQ/√D_q]",
        diverging=False,
        x_title="output n",
        y_title="value m",
    ),
    key="book_attention_scaled",
    table=tables.matrix_frame(exercise["matrix_scaled"].attention, inputs, inputs),
)

st.subheader("Scaled (eq. 12.9): loop form and matrix form")
st.dataframe(tables.book_comparison(exercise, scaled=True), hide_index=True)

st.subheader("Is self-attention covariant with respect to permutation?")
permutation = st.selectbox(
    "Permute the columns of X as",
    list(itertools.permutations(range(3))),
    index=3,
    key="book_permutation",
    format_func=lambda p: "(" + ", ".join(inputs[i] for i in p) + ")",
    persist_state="session",
)
check = compute.book_permutation(permutation)
# Column n of X P is input x_{p(n)}, so column n of both outputs is x′_{p(n)}.
permuted = [f"x′{i}" for i in permutation]
st.caption(
    "Sa is the unscaled self-attention of eq. 12.8. The columns of both outputs are in "
    "the permuted order, " + ", ".join(permuted) + ": each labelled with the input it belongs to."
)
left, right = st.columns(2)
render.chart(
    left,
    figures.matrix_heatmap(check["permuted_output"], dims, permuted, "Sa[X P]"),
    key="book_perm_a",
    table=tables.matrix_frame(check["permuted_output"], dims, permuted),
)
render.chart(
    right,
    figures.matrix_heatmap(check["output_permuted"], dims, permuted, "Sa[X] P"),
    key="book_perm_b",
    table=tables.matrix_frame(check["output_permuted"], dims, permuted),
)
st.metric("max |Sa[XP] − Sa[X]P|", f"{check['difference']:.2e}")
st.caption("Yes: permuting the inputs permutes the outputs the same way, to round-off.")

with st.expander("The code that computed this"):
    st.code(inspect.getsource(book.self_attention_loop), language="python")
    st.code(inspect.getsource(book.self_attention_stages), language="python")
