"""The panel a clicked attention cell opens: that cell's numbers, step by step, from the engine.

The numbers come from :func:`engine.arithmetic.cell_arithmetic`, which runs the cell's row
through the same softmax as the heatmap, so the weight shown is the cell's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import engine
from app.state import controls

#: Vector entries shown before the rest is left out (with a note).
SHOWN_DIMS = 8


def _vector(values):
    return [f"{x:.4g}" for x in values[:SHOWN_DIMS]]


def clicked_cell(key, click, n_q, n_k, shown=slice(None)):
    """The cell last clicked on chart ``key``, kept in session state across reruns.

    ``click`` is what :func:`app.views.chart.draw` returned this run (None without a click);
    a remembered cell outside a new ``n_q × n_k`` matrix is forgotten. ``shown`` is the
    slice of the tokens the chart draws (the pretrained page can hide [CLS] and [SEP]).
    Returns ``(i, j)`` in the whole matrix, or None.
    """
    name = f"{key}_cell"
    if click is not None and click.get("col") is not None:
        st.session_state[name] = (int(click["row"]), int(click["col"]))
    cell = st.session_state.get(name)
    if cell is None or cell[0] >= n_q or cell[1] >= n_k:
        return None
    offset = shown.start or 0
    return cell[0] + offset, cell[1] + offset


def clicked_head(key, click, n_heads, default=0):
    """The head (the panel's trace) of the cell last clicked on chart ``key``.

    ``default`` (the sidebar's head) until one is clicked.
    """
    name = f"{key}_head"
    if click is not None:
        st.session_state[name] = int(click["trace"])
    head = st.session_state.get(name, default)
    return head if head < n_heads else default


def panel(cell, qkv, scale, mask, labels, softcap=None, head=None):
    """The arithmetic of weight ``cell = (i, j)``, or how to choose one when it is None.

    Parameters
    ----------
    cell : (int, int) or None
    qkv : (q, k, v), the head's arrays of shapes (n_q, d_k), (n_k, d_k), (n_k, d_v); v may
        be None when the model run keeps no values
    scale : float, or None for 1/√d_k
    mask : bool ndarray of shape (n_q, n_k), or None
    labels : sequence of str, the tokens (self-attention: queries and keys alike)
    softcap : float, optional; the model's soft cap of the scaled scores (Gemma 2)
    head : int, optional, the head ``qkv`` is, named where a page draws several heads
    """
    if cell is None:
        where = "any head's weights" if head is not None else "the weights"
        st.caption(f"Click a cell of {where} to see its arithmetic.")
        return
    i, j = cell
    cell_numbers = engine.cell_arithmetic(*qkv, i, j, scale, mask, softcap)
    _show(cell_numbers, labels[i], labels[j], i, j, mask is not None, head)


def number(value):
    """A step's value as the panel prints it: six significant digits, −∞ written so."""
    return "−∞" if value == -np.inf else f"{value:.6g}"


def steps(cell, masked):
    """The rows of a cell's worked weight: score, × scale, soft cap (Gemma 2), + M_ij, softmax.

    Parameters
    ----------
    cell : engine.arithmetic.CellArithmetic
    masked : bool, whether the page applies a mask (then the + M_ij step is shown, 0 or −∞)

    Returns
    -------
    list of (str, str), each step's name and value
    """
    rows = [("q_i · k_j", cell.dot), (f"× scale {cell.scale:.4g}", cell.scaled)]
    if cell.softcap is not None:
        rows.append((f"soft cap c·tanh(·/c), c = {cell.softcap:g}", cell.capped))
    if masked:
        seen = "visible" if cell.mask_term == 0.0 else "masked"
        # "+M_ij", not "+ M_ij": the table reads Markdown, where "+ " starts a list.
        rows.append((f"+M_ij = {number(cell.mask_term)} ({seen})", cell.masked))
    rows += [
        (f"− row maximum {cell.row_max:.6g}", cell.shifted),
        ("exp(·)", cell.exp),
        ("row sum Σ_j′ exp(·)", cell.row_sum),
        ("weight a_ij = exp(·) / row sum", cell.weight),
    ]
    return [(name, number(value)) for name, value in rows]


def _show(cell, query_label, key_label, i, j, masked, head):
    of_head = "" if head is None else f" of head {head}"
    st.markdown(
        f"**Cell ({i}, {j}){of_head}: query “{controls.md_escape(query_label)}” → "
        f"key “{controls.md_escape(key_label)}”**"
    )
    d_k = len(cell.q)
    vectors = {"q_i": cell.q, "k_j": cell.k}
    if cell.v is not None:
        vectors |= {
            "v_j": cell.v,
            "a_ij · v_j": cell.contribution,
            "o_i = Σ_j a_ij v_j": cell.output,
        }
    width = min(SHOWN_DIMS, max(len(v) for v in vectors.values()))
    st.table(
        pd.DataFrame(
            [_vector(v) + [""] * (width - min(len(v), SHOWN_DIMS)) for v in vectors.values()],
            index=list(vectors),
            columns=[f"f{f}" for f in range(width)],
        ),
    )
    if d_k > SHOWN_DIMS or (cell.v is not None and len(cell.v) > SHOWN_DIMS):
        st.caption(f"The first {SHOWN_DIMS} of {d_k} dimensions are shown.")
    st.table(pd.DataFrame(steps(cell, masked), columns=["step", "value"]), hide_index=True)
    if cell.v is None:
        st.caption("This model run keeps no values, so the output's sum is not shown.")
