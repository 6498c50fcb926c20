"""Heatmaps of any matrix: embeddings, Q, K, V, outputs, weight matrices, the mask.

Token labels on both axes (made unique and escaped, :func:`app.views.axes.axis_labels`);
a diverging scale centred at 0, or the weights' fixed 0–1 scale; the values written in
the cells of small matrices; data sent as float32 to keep reruns compact. The attention
matrices themselves, with their scores in the hover, are :mod:`app.views.attention_maps`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.views import axes, chart, style

#: Matrices with at most this many rows and columns get their values written in the cells.
CELL_TEXT_MAX = 16
#: Feature axes wider than this are cropped when drawn (d_model runs to 768).
FEATURE_LIMIT = 128
#: A diverging colour scale is clipped when its largest |value| is more than this many
#: times the 99th percentile: a few entries would otherwise leave the rest one colour.
OUTLIER_RATIO = 3.0


#: A cell's text is black or white, whichever stands out more from the cell's colour.
TEXT_COLOURS = ("#000000", "#ffffff")


def text_colours(z, colorscale, zmin, zmax):
    """Each cell's text colour: black or white, whichever contrasts more with the cell.

    The cell's colour is ``colorscale`` at ``z`` between ``zmin`` and ``zmax``, as plotly.js
    draws it (:func:`app.views.style.scale_rgb`); the contrast is WCAG 2's,
    (L₁ + 0.05) / (L₂ + 0.05) of the relative luminances. One of black and white reaches
    4.58:1 on any colour (they tie at L = 0.179), past the 4.5:1 that WCAG asks of text.
    plotly.js's own choice, white or dark grey (#444), reached 3.1:1 on Viridis's greens.

    Parameters
    ----------
    z : array_like of shape (n_rows, n_cols), NaN where a cell is a gap
    colorscale : a Plotly colour scale's name, or a trace's stops
    zmin, zmax : float, the values at the scale's ends

    Returns
    -------
    list of lists of str, a CSS colour per cell ("" at a gap)
    """
    z = np.asarray(z, dtype=float)
    span = zmax - zmin if zmax > zmin else 1.0
    cell = style.luminance(style.scale_rgb((z - zmin) / span, colorscale))
    black_wins = (cell + 0.05) / 0.05 >= 1.05 / (cell + 0.05)
    colours = np.where(black_wins, *TEXT_COLOURS)
    return np.where(np.isnan(z), "", colours).tolist()


def cell_text(z, digits=2):
    """The cells' text for a matrix ``z`` the browser redraws from the scale's frames.

    A template plotly.js fills from ``z`` (a gap stays blank), so the text follows the
    numbers wherever they are drawn: from Python's figure, or from the scale's frames in
    the browser, in plotly.js's own colour (a colour chosen here would not follow). A
    figure drawn as it is gets :func:`write_legibly`'s instead. Returns the trace's
    ``texttemplate`` option, or nothing for a large matrix.
    """
    return {"texttemplate": f"%{{z:.{digits}f}}"} if max(np.shape(z)) <= CELL_TEXT_MAX else {}


def numbers(z, digits=2):
    """A small matrix's values as its cells write them ("" at a gap); None for a large one."""
    if max(np.shape(z)) > CELL_TEXT_MAX:
        return None
    return [["" if np.isnan(v) else f"{v:.{digits}f}" for v in row] for row in np.asarray(z, float)]


#: A colour scale drawing nothing: the cells of the layer that writes the black text.
_CLEAR = [[0.0, "rgba(0,0,0,0)"], [1.0, "rgba(0,0,0,0)"]]
#: What stands for a number in the other layer: a figure space per character, as wide as a
#: digit, so that plotly.js, which sizes a trace's text by its longest, sizes both alike.
_FIGURE_SPACE = "\u2007"


def write_legibly(fig, index, texts):
    """Write ``texts`` in the cells of heatmap ``fig.data[index]``, each in black or white.

    The colour is :func:`text_colours`' for the cell. plotly.js gives a trace's text one
    colour (or picks white or dark grey itself), and reads a colour written into the text
    as characters, which shrinks its automatic font size: so the heatmap writes the white
    numbers and a clear heatmap over it, of the same cells (``style.TEXT_OVERLAY``, no
    hover, no clicks), the black ones, each with the other's numbers as blanks of their
    length. The trace needs its ``colorscale``, ``zmin`` and ``zmax``. ``texts`` None
    (a large matrix) writes nothing.
    """
    if texts is None:
        return fig
    trace = fig.data[index]
    colours = text_colours(trace.z, trace.colorscale, trace.zmin, trace.zmax)
    black, white = TEXT_COLOURS

    def layer(colour):
        return [
            [t if c == colour else _FIGURE_SPACE * len(t) for t, c in zip(row, cs, strict=True)]
            for row, cs in zip(texts, colours, strict=True)
        ]

    size = trace.textfont.size
    trace.update(text=layer(white), texttemplate="%{text}", textfont={"color": white})
    fig.add_trace(
        go.Heatmap(
            z=np.zeros(np.shape(trace.z), dtype=np.float32),
            x=trace.x,
            y=trace.y,
            xaxis=trace.xaxis,
            yaxis=trace.yaxis,
            xgap=trace.xgap,
            ygap=trace.ygap,
            text=layer(black),
            texttemplate="%{text}",
            textfont={"color": black, "size": size},
            colorscale=_CLEAR,
            showscale=False,
            hoverinfo="skip",
            name=style.TEXT_OVERLAY,
        )
    )
    return fig


#: A heatmap's height less its rows' room: the title, the column labels and the margins.
AXIS_MARGIN = 130
#: Pixels per row wanted: a label's font (10 px) at :data:`app.views.axes.LABEL_PITCH`.
ROW_PITCH = 14


def token_figure(trace, title, n_rows, n_cols, x_title, y_title, top=50, shapes=None):
    """A figure of one heatmap ``trace`` with its title, size and token axes.

    Built at once (:func:`app.views.style.framed`): plotly.py's ``update_xaxes`` and the
    like cost 4-5 ms a call, and a page's run draws dozens of heatmaps.

    Parameters
    ----------
    trace : plotly Heatmap with its ``x`` and ``y`` token categories
    title : str
    n_rows, n_cols : int, the matrix's shape
    x_title, y_title : str, the axes' titles (:func:`app.views.axes.token_axis`)
    top : int, the top margin (:data:`app.views.style.NOTE_TOP` for a two-line title)
    shapes : list of dict, optional, lines to draw over the heatmap
    """
    side = 28 + 14 * max(n_rows, n_cols)
    # Rows ROW_PITCH px apart below the title and the column labels, so that every row is
    # labelled up to 64 tokens (a text's "it" must be findable by name).
    labelled = AXIS_MARGIN + ROW_PITCH * min(n_rows, axes.FULL_LABELS_MAX)
    height = int(min(max(side, labelled, 320), 900))
    # Columns are as narrow as the chart's share of the page, which the server does not
    # know; rows are as tall as the figure says, less its title and the column labels.
    x_axis = axes.token_axis(trace.x, x_title) | {"autotickangles": axes.TICK_ANGLES}
    y_axis = axes.token_axis(trace.y, y_title, room=height - AXIS_MARGIN)
    more = {"shapes": shapes} if shapes else {}
    return style.framed(
        trace, title, height, top=top, xaxis=x_axis, yaxis=y_axis | _REVERSED, **more
    )


_REVERSED = {"autorange": "reversed"}


def feature_labels(n):
    """Names for ``n`` feature columns: f0, f1 and so on."""
    return [f"f{i}" for i in range(n)]


def figure(
    matrix,
    row_labels,
    col_labels,
    title,
    *,
    diverging=True,
    x_title="",
    y_title="",
    transpose=False,
    column_groups=1,
    max_rows=None,
    max_cols=None,
    clip=False,
    follows_frames=False,
):
    """A labelled heatmap of any matrix: embeddings, weights, Q, K, V, outputs.

    Parameters
    ----------
    matrix : ndarray of shape (n_rows, n_cols)
    row_labels, col_labels : sequences of str
    diverging : bool
        A red–blue scale centred at 0 (scores, projections) rather than 0–1 Viridis.
    transpose : bool
        Draw the transpose (the book's column convention), swapping labels and titles.
    column_groups : int
        Mark this many equal groups of columns (the heads' slices) with dividing lines.
    max_rows, max_cols : int, optional
        Draw only the first rows or columns (before any transpose), and say so in the
        title: a 768-feature axis would send megabytes per rerun and show nothing more.
    clip : bool
        On a diverging scale, when a few outliers would set the colour range
        (:func:`colour_limit`), clip the colours at the 99th percentile and say so in a
        second title line; hovering still gives every value.
    follows_frames : bool
        The browser redraws the cells from the scale's frames: their numbers are written
        from them, in plotly.js's colour (:func:`cell_text`), not :func:`write_legibly`.
    """
    z = np.asarray(matrix, dtype=np.float32)
    width = z.shape[1] // column_groups
    title += _cropped_note(z.shape, max_rows, max_cols, transpose)
    z = z[:max_rows, :max_cols]
    row_labels, col_labels = list(row_labels)[:max_rows], list(col_labels)[:max_cols]
    if transpose:
        z, row_labels, col_labels = z.T, col_labels, row_labels
        x_title, y_title = y_title, x_title
    limit, largest = colour_limit(z, clip)
    if limit < largest:
        title = style.with_note(title, clipped_note(limit, largest))
    colour = (
        {"colorscale": style.DIVERGING_SCALE, "zmid": 0.0, "zmin": -limit, "zmax": limit}
        if diverging
        else {"colorscale": style.WEIGHTS_SCALE, "zmin": 0.0, "zmax": 1.0}
    )
    z = np.where(np.isfinite(z), z, np.nan).astype(np.float32)
    trace = go.Heatmap(
        z=z,
        x=axes.axis_labels(col_labels),
        y=axes.axis_labels(row_labels),
        hovertemplate="row %{y}<br>column %{x}<br>value %{z:.4f}<extra></extra>",
        colorbar=style.COLORBAR,
        **(cell_text(z) if follows_frames else {}),
        **colour,
    )
    top = style.NOTE_TOP if limit < largest else 50
    dividers = [  # as add_vline draws them, in one layout
        {"type": "line", "x0": g * width - 0.5, "x1": g * width - 0.5, "xref": "x",
         "y0": 0, "y1": 1, "yref": "y domain", "line": {"color": "black", "width": 2}}
        for g in range(1, column_groups) if g * width < z.shape[1]
    ]  # fmt: skip
    fig = token_figure(trace, title, *z.shape, x_title, y_title, top, dividers)
    return fig if follows_frames else write_legibly(fig, 0, numbers(z))


def _cropped_note(shape, max_rows, max_cols, transpose=False):
    """What the title says of a crop, in the drawn matrix's terms: transposed, rows are columns."""
    names = ("columns", "rows") if transpose else ("rows", "columns")
    notes = [
        f"first {limit} of {size} {name}"
        for size, limit, name in ((shape[0], max_rows, names[0]), (shape[1], max_cols, names[1]))
        if limit is not None and size > limit
    ]
    return f" ({', '.join(notes)})" if notes else ""


def clipped_note(limit, largest):
    """A figure's second title line when its colour scale is clipped at ``±limit``."""
    return f"colours clipped at ±{limit:.3g} (99th percentile); |max| {largest:.3g}"


def colour_limit(z, clip=True):
    """The ± limit of a diverging colour scale for ``z``, and its largest finite |value|.

    Without ``clip``, or without outliers, the limit is the largest |value|. With them
    (largest > :data:`OUTLIER_RATIO` × the 99th percentile of |values|) it is the 99th
    percentile, and the caller says so.
    """
    finite = np.abs(z[np.isfinite(z)])
    if not finite.size:
        return 1.0, 1.0
    largest = float(finite.max())
    typical = float(np.percentile(finite, 99))
    if clip and typical > 0.0 and largest > OUTLIER_RATIO * typical:
        return typical, largest
    return largest, largest


def top_note(top, value_name="weight"):
    """A second title line for weights drawn on a scale from 0 to their largest, not to 1."""
    return f"colour scale 0 to {top:.3g}, the largest {value_name}, not 0 to 1"


def table(matrix, row_labels, col_labels):
    """A matrix with its labels, ready to show or to save as CSV.

    Repeated labels are kept as they are; pandas allows duplicate index labels.
    """
    return pd.DataFrame(matrix, index=list(row_labels), columns=list(col_labels))


def show(container, key, matrix, row_labels, col_labels, title, *, clicks=False, **options):
    """Draw :func:`figure` of ``matrix`` in ``container``, its :func:`table` as the CSV."""
    return chart.draw(
        container,
        chart.remembered(figure, matrix, row_labels, col_labels, title, **options),
        key,
        table=table(matrix, row_labels, col_labels),
        clicks=clicks,
    )


def features_figure(
    matrix, labels, title, *, transpose=False, column_groups=1, clip=False, follows_frames=False
):
    """A tokens × features matrix (X, Q, K, V, outputs) with its feature axis cropped.

    Parameters
    ----------
    matrix : ndarray of shape (n, d)
    labels : sequence of n str
    title : str
    transpose, column_groups, clip, follows_frames : as in :func:`figure`
    """
    return figure(
        matrix,
        labels,
        feature_labels(np.shape(matrix)[1]),
        title,
        x_title="feature",
        y_title="token",
        transpose=transpose,
        column_groups=column_groups,
        max_cols=FEATURE_LIMIT,
        clip=clip,
        follows_frames=follows_frames,
    )


def features_table(matrix, labels):
    """A tokens × features matrix, every feature named: f0, f1 and so on."""
    return table(matrix, labels, feature_labels(np.shape(matrix)[1]))


def show_features(container, key, matrix, labels, title, *, csv=None, live=None, **options):
    """Draw :func:`features_figure`; its CSV is every feature (``csv`` replaces it)."""
    options["follows_frames"] = live is not None
    return chart.draw(
        container,
        chart.remembered(features_figure, matrix, labels, title, **options),
        key,
        table=features_table(matrix, labels) if csv is None else csv,
        live=live,
    )


def mask_figure(mask, labels, title="Causal mask"):
    """Which key each query may see: blue where allowed, grey where masked."""
    z = np.asarray(mask, dtype=np.float32)
    trace = go.Heatmap(
        z=z,
        x=axes.axis_labels(labels),
        y=axes.axis_labels(labels),
        colorscale=style.MASK_SCALE,
        zmin=0.0,
        zmax=1.0,
        showscale=False,
        hovertemplate="query %{y}<br>key %{x}<br>%{z}<extra>1 = may attend</extra>",
        xgap=1,
        ygap=1,
    )
    return token_figure(trace, title, *z.shape, "key", "query")


def show_mask(container, key, mask, labels, title="Causal mask"):
    """Draw :func:`mask_figure`, the mask itself as the CSV."""
    drawn = chart.remembered(mask_figure, mask, labels, title)
    chart.draw(container, drawn, key, table=table(mask, labels, labels))
