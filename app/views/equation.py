"""A displayed equation, centred, wrapping between its formulas where the width runs out."""

from __future__ import annotations

import streamlit as st

from app.words import equations


def show(latex, container=st):
    r"""Display ``latex`` centred, wrapping between its formulas where the width runs out.

    A display equation does not wrap, so a long one ran off a projector's 1024 px or
    presentation mode's large type; here each formula (see
    :func:`app.words.equations.formulas`) is its own display, side by side while they fit.
    """
    parts = equations.formulas(latex)
    if len(parts) == 1:
        container.latex(latex)
        return
    row = container.container(
        horizontal=True, horizontal_alignment="center", vertical_alignment="center", gap="medium"
    )
    for part in parts:
        row.latex(part, width="content")
