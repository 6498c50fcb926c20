"""The book's exercise (UDL notebook 12.1), computed once: loop and matrix forms, a permutation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from engine import book


@st.cache_resource(show_spinner=False)
def exercise():
    """The notebook's set-up and every result the book page shows."""
    X, params = book.notebook_setup()
    all_x = [X[:, [n]] for n in range(X.shape[1])]
    return {
        "X": X,
        "params": params,
        "loop": book.self_attention_loop(all_x, **params),
        "matrix": book.self_attention_stages(X, **params),
        "loop_scaled": book.self_attention_loop(all_x, **params, scaled=True),
        "matrix_scaled": book.self_attention_stages(X, **params, scaled=True),
    }


def comparison(scaled=False):
    """The notebook's outputs by loop and by matrix (and, unscaled, as the book prints them).

    Parameters
    ----------
    scaled : bool

    Returns
    -------
    DataFrame, one row per output x′ₙ and source, with the largest difference
    """
    done = exercise()
    suffix = "_scaled" if scaled else ""
    loop = np.hstack(done["loop" + suffix][1])  # N columns of [D, 1] -> [D, N]
    matrix = done["matrix" + suffix].X_prime
    sources = {"loop": loop, "matrix": matrix}
    if not scaled:
        sources["book prints"] = book.NOTEBOOK_X_PRIME
    rows = []
    for n in range(matrix.shape[1]):
        for name, values in sources.items():
            rows.append(
                {
                    "output": f"x′{n}",
                    "source": name,
                    **{f"d{i}": values[i, n] for i in range(matrix.shape[0])},
                    "max |Δ| to matrix": float(np.max(np.abs(values[:, n] - matrix[:, n]))),
                }
            )
    return pd.DataFrame(rows)


@st.cache_data(max_entries=8, show_spinner=False)
def permuted(permutation):
    """The notebook's self-attention on permuted inputs against its permuted outputs.

    Returns
    -------
    dict with "permuted_output" Sa[XP], "output_permuted" Sa[X]P (each D × N) and
    "difference", their largest absolute difference
    """
    X, params = book.notebook_setup()
    order = list(permutation)
    permuted_output = book.self_attention(X[:, order], **params)
    output_permuted = book.self_attention(X, **params)[:, order]
    return {
        "permuted_output": permuted_output,
        "output_permuted": output_permuted,
        "difference": float(np.max(np.abs(permuted_output - output_permuted))),
    }
