"""The book's exercise: UDL notebook 12.1, loop form and matrix form, against its printed values."""

import inspect
import itertools

import streamlit as st

from app.data import book
from app.views import equation, heatmap
from app.words import equations
from engine.book import self_attention_loop, self_attention_stages

st.title("The book's exercise (UDL notebook 12.1)")
st.caption(
    "N = 3 inputs of D = 4 dimensions, drawn with the notebook's own seeds (3 for the "
    "inputs, one column at a time; 0 for the parameters). Column convention: each input is "
    "a column of X, and the softmax runs down each column of KᵀQ."
)
equation.show(equations.BOOK_SA)

exercise = book.exercise()
inputs = [f"x{n}" for n in range(3)]
dims = [f"d{i}" for i in range(4)]
# Values to the book's eight printed decimals; a difference as 1.11e-16, not 0.0000000000000001.
NUMBERS = {d: st.column_config.NumberColumn(format="%.8f") for d in dims} | {
    "max |Δ| to matrix": st.column_config.NumberColumn(format="%.2e")
}

st.subheader("Unscaled (eq. 12.8): loop form, matrix form and the book's printed values")
st.dataframe(book.comparison(), hide_index=True, column_config=NUMBERS)
st.caption(
    "The unscaled attention is extreme: almost all weight on one input per column. "
    "Scaling by 1/√D_q (eq. 12.9) softens it."
)
left, right = st.columns(2)
for column, key, name, title in (
    (left, "book_attention", "matrix", "Attention Softmax[KᵀQ] (columns sum to 1)"),
    (right, "book_attention_scaled", "matrix_scaled", "Scaled: Softmax[KᵀQ/√D_q]"),
):
    heatmap.show(
        column,
        key,
        exercise[name].attention,
        inputs,
        inputs,
        title,
        diverging=False,
        x_title="output n",
        y_title="value m",
    )

st.subheader("Scaled (eq. 12.9): loop form and matrix form")
st.dataframe(book.comparison(scaled=True), hide_index=True, column_config=NUMBERS)

st.subheader("Is self-attention covariant with respect to permutation?")
permutation = st.selectbox(
    "Permute the columns of X as",
    list(itertools.permutations(range(3))),
    index=3,
    key="book_permutation",
    format_func=lambda p: "(" + ", ".join(inputs[i] for i in p) + ")",
    persist_state="session",
)
check = book.permuted(permutation)
# Column n of X P is input x_{p(n)}, so column n of both outputs is x′_{p(n)}.
permuted = [f"x′{i}" for i in permutation]
st.caption(
    "Sa is the unscaled self-attention of eq. 12.8. The columns of both outputs are in "
    "the permuted order, " + ", ".join(permuted) + ": each labelled with the input it belongs to."
)
left, right = st.columns(2)
heatmap.show(left, "book_perm_a", check["permuted_output"], dims, permuted, "Sa[X P]")
heatmap.show(right, "book_perm_b", check["output_permuted"], dims, permuted, "Sa[X] P")
st.metric("max |Sa[XP] − Sa[X]P|", f"{check['difference']:.2e}")
st.caption("Yes: permuting the inputs permutes the outputs the same way, to round-off.")

with st.expander("The code that computed this"):
    st.code(inspect.getsource(self_attention_loop), language="python")
    st.code(inspect.getsource(self_attention_stages), language="python")
