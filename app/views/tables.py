"""Tables of numbers as Streamlit draws them: every cell of a column to the same decimals.

Streamlit writes a float with up to four decimals and drops its trailing zeros, so one
column shows 11.083 beside 10.2117. Each float column here gets a printf format
(``st.column_config.NumberColumn``) that fixes its decimals; a share (0 to 1) is written
as a percentage to one decimal, 19.0 % beside 100.0 %.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

#: Decimals of a float column unless the caller says otherwise.
DIGITS = 4
#: Decimals of a share written as a percentage.
PERCENT_DIGITS = 1


def number_format(digits=DIGITS, percent=False):
    """The printf format of a column: ``digits`` decimals, and a % sign for a percentage."""
    return f"%.{digits}f%%" if percent else f"%.{digits}f"


def formats(frame, digits=None, percent=()):
    """Each float column's printf format: ``digits[name]`` decimals, else :data:`DIGITS`.

    Parameters
    ----------
    frame : DataFrame
    digits : dict of str to int, optional; a column's decimals
    percent : sequence of str; shares (0 to 1), written as percentages
    """
    digits = digits or {}
    return {
        name: number_format(PERCENT_DIGITS, True)
        if name in percent
        else number_format(digits.get(name, DIGITS))
        for name in frame.columns
        if pd.api.types.is_float_dtype(frame[name])
    }


def show(container, frame, *, digits=None, percent=(), **options):
    """Draw ``frame`` without its index, each float column to fixed decimals (:func:`formats`).

    A share in ``percent`` is drawn × 100 (the printf format cannot scale); ``frame``
    itself is left as it is. ``options`` go to ``st.dataframe``.
    """
    frame = pd.DataFrame(frame)
    shown = frame.assign(**{name: frame[name] * 100 for name in percent})
    config = {
        name: st.column_config.NumberColumn(format=written)
        for name, written in formats(shown, digits, percent).items()
    }
    return container.dataframe(shown, hide_index=True, column_config=config, **options)
