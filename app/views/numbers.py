"""A table of numbers drawn as a figure, so that it can follow the scale like any chart.

Text columns are labels (escaped), numbers are written to four decimals; the browser
grows a table whose header wraps on a narrow screen (``chart/narrow.js``).
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from app.views import axes, chart

#: How a table writes its numbers (plotly.js's d3 format; Python's format spec is the same).
NUMBER_FORMAT = ".4f"
#: A table's header and body rows, in px (plotly.js's own 20 px rows put the text's
#: descenders on the line under it).
TABLE_HEADER, TABLE_ROW = 28, 24


def figure(frame, height=None):
    """A DataFrame as a table: text columns as labels (escaped), numbers to four decimals.

    Parameters
    ----------
    frame : DataFrame
    height : int, optional; by default every row shows (up to 700 px, then it scrolls)

    Rows are :data:`TABLE_ROW` px, so the text's descenders clear the line under it.
    """
    return columns_figure(*columns(frame), height)


def columns(frame):
    """A DataFrame's column names (str) and columns: numbers as float arrays, text as str lists."""
    names = [str(c) for c in frame.columns]
    values = [
        frame[c].to_numpy(float) if frame[c].dtype.kind in "fiu" else [str(v) for v in frame[c]]
        for c in frame.columns
    ]
    return names, values


def columns_figure(names, values, height=None):
    """:func:`figure` of a table given as :func:`columns`: named, remembered by its content."""
    numeric = [isinstance(column, np.ndarray) for column in values]
    cells = [
        column.tolist() if is_number else axes.axis_labels(column)
        for column, is_number in zip(values, numeric, strict=True)
    ]
    table = go.Table(
        header={
            "values": [html.escape(name) for name in names],
            "align": "left",
            "height": TABLE_HEADER,
        },
        cells={
            "values": cells,
            "format": [NUMBER_FORMAT if is_number else None for is_number in numeric],
            "align": "left",
            "height": TABLE_ROW,
        },
    )
    rows = len(values[0]) if values else 0
    # 1 px either side: the outer borders are drawn on the figure's edge, not cut by it.
    margin = {"l": 1, "r": 1, "t": 4, "b": 2}
    fitted = margin["t"] + TABLE_HEADER + TABLE_ROW * rows + margin["b"] + 2
    return go.Figure(table, {"height": height or min(fitted, 700), "margin": margin})


def show(container, key, frame, *, height=None, csv=None, live=None):
    """Draw ``frame`` as a table; its CSV is ``frame`` itself (``csv`` replaces it)."""
    drawn = chart.remembered(columns_figure, *columns(frame), height)
    chart.draw(container, drawn, key, table=frame if csv is None else csv, live=live)


def table_texts(array):
    """An array's values as a table writes them (:data:`NUMBER_FORMAT`).

    The float32 values the frames hold, so that the text is the one plotly.js writes for
    the exact figure drawn from them; nested lists of the array's shape.
    """
    values = np.asarray(array, dtype="<f4")
    write = f"{{:{NUMBER_FORMAT}}}".format  # 3x faster than np.char.mod
    texts = np.array(list(map(write, values.ravel().tolist())), dtype=object)
    return texts.reshape(values.shape).tolist()
