"""Figure builders: pure functions from engine arrays and token labels to Plotly figures.

No Streamlit here, so every builder is tested on its own. Conventions shared by all:
token labels on both axes (made unique and escaped, see :func:`axis_labels`); weights
on a fixed 0–1 sequential scale; scores, Q, K, V on a diverging scale centred at 0;
cell text only for small matrices; data sent as float32 to keep reruns compact. The
colour scales (Viridis, RdBu) stay readable with the common colour-vision deficiencies.
"""

from __future__ import annotations

import copy
import functools
import html
import re

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale, hex_to_rgb
from plotly.subplots import make_subplots

from app import axes

WEIGHTS_SCALE = "Viridis"
DIVERGING_SCALE = "RdBu_r"
MASK_SCALE = [[0.0, "#d9d9d9"], [1.0, "#2c7bb6"]]
#: Matrices with at most this many rows and columns get their values written in the cells.
CELL_TEXT_MAX = 16
#: Weights heatmaps carry the raw and scaled scores for hovering up to this many tokens.
HOVER_SCORES_MAX = 128
#: What hovering a masked cell says in place of its scaled score, −∞ (plotly.js would
#: write "−Infinity"). The chart component (``chart.js``) reads it from the figure.
MASKED_HOVER = "masked (−∞ before softmax)"
#: The name of the invisible trace that gives a scores heatmap's masked cells their hover.
MASKED_OVERLAY = "masked"
#: Feature axes wider than this are cropped when drawn (d_model runs to 768).
FEATURE_LIMIT = 128
LABEL_MAX_CHARS = 18
#: Bars compared side by side: a baseline in grey, then the one to look at in red.
COMPARE_COLORS = ("#9aa0a6", "#d62728", "#1f77b4")
#: The shapes of :func:`saturation_figure` that mark the current scale, one per panel.
CURRENT_SCALE_MARKERS = (0, 2, 4)
_ZERO_WIDTH = "\u200b"
#: Column labels stay level while they fit side by side, else they stand upright, each
#: centred on its own column (a slanted label ends under its neighbour's column).
TICK_ANGLES = [0, -90]


def axis_labels(labels):
    """Token labels safe and distinct as Plotly categories.

    Plotly merges equal category names and reads a little HTML in labels. So each
    label is clipped, HTML-escaped (user text never becomes markup), and a repeated
    label gets invisible zero-width spaces appended to keep its own row and column.
    """
    seen = {}
    out = []
    for label in labels:
        text = str(label) or " "
        if len(text) > LABEL_MAX_CHARS:
            text = text[: LABEL_MAX_CHARS - 1] + "…"
        text = html.escape(text, quote=False)
        count = seen.get(text, 0)
        seen[text] = count + 1
        out.append(text + _ZERO_WIDTH * count)
    return out


def _scale_stops(name):
    """A named Plotly colour scale as its positions and its colours (RGB in [0, 1])."""
    scale = get_colorscale(name)
    colors = [np.array(hex_to_rgb(color)) / 255 for _, color in scale]
    return np.array([position for position, _ in scale]), np.array(colors)


_WEIGHT_STOPS = _scale_stops(WEIGHTS_SCALE)


def weight_colors(weights):
    """Bar colours for weights in [0, 1] on the weights scale, as CSS colour strings.

    Computed here rather than sent as numbers with a colour scale: the plotly.js in
    Streamlit (4.2) draws numeric bar colours right but logs a stack trace per bar and
    redraw, which costs more than the chart itself. Interpolated with NumPy, as plotly's
    ``sample_colorscale`` does it one colour at a time (under 1 ms for 512 bars, not 170 ms).
    """
    weights = np.clip(np.nan_to_num(np.asarray(weights, dtype=float), nan=0.0), 0.0, 1.0)
    positions, colors = _WEIGHT_STOPS
    rgb = np.round(
        255 * np.stack([np.interp(weights, positions, colors[:, c]) for c in range(3)], axis=-1)
    ).astype(int)
    return [f"rgb({r}, {g}, {b})" for r, g, b in rgb.tolist()]


def _cell_text(shape, digits=2):
    """A small matrix's cell text: a template plotly.js fills from ``z`` (gaps stay blank)."""
    return {"texttemplate": f"%{{z:.{digits}f}}"} if max(shape) <= CELL_TEXT_MAX else {}


def _layout(fig, title, n_rows, n_cols, x_title, y_title):
    """A single heatmap's title, size and token axes (:func:`app.axes.token_axis`)."""
    side = 28 + 14 * max(n_rows, n_cols)
    height = int(min(max(side, 320), 900))
    fig.update_layout(
        title={"text": title, "x": 0.0, "xanchor": "left"},
        height=height,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    trace = fig.data[0]
    # Columns are as narrow as the chart's share of the page, which the server does not
    # know; rows are as tall as the figure says, less its title and the column labels.
    fig.update_xaxes(axes.token_axis(trace.x, x_title), autotickangles=TICK_ANGLES)
    fig.update_yaxes(axes.token_axis(trace.y, y_title, room=height - 130), autorange="reversed")
    return fig


def matrix_heatmap(
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
        title += f"<br><sup>{clipped_note(limit, largest)}</sup>"
    colour = (
        {"colorscale": DIVERGING_SCALE, "zmid": 0.0, "zmin": -limit, "zmax": limit}
        if diverging
        else {"colorscale": WEIGHTS_SCALE, "zmin": 0.0, "zmax": 1.0}
    )
    trace = go.Heatmap(
        z=np.where(np.isfinite(z), z, np.nan).astype(np.float32),
        x=axis_labels(col_labels),
        y=axis_labels(row_labels),
        **_cell_text(z.shape),
        hovertemplate="row %{y}<br>column %{x}<br>value %{z:.4f}<extra></extra>",
        colorbar={"thickness": 12},
        **colour,
    )
    fig = _layout(go.Figure(trace), title, *z.shape, x_title, y_title)
    if limit < largest:
        fig.update_layout(margin_t=75)  # room for the second title line
    for g in range(1, column_groups):
        if g * width < z.shape[1]:
            fig.add_vline(x=g * width - 0.5, line={"color": "black", "width": 2})
    return fig


def _cropped_note(shape, max_rows, max_cols, transpose=False):
    """What the title says of a crop, in the drawn matrix's terms: transposed, rows are columns."""
    names = ("columns", "rows") if transpose else ("rows", "columns")
    notes = [
        f"first {limit} of {size} {name}"
        for size, limit, name in ((shape[0], max_rows, names[0]), (shape[1], max_cols, names[1]))
        if limit is not None and size > limit
    ]
    return f" ({', '.join(notes)})" if notes else ""


#: A diverging colour scale is clipped when its largest |value| is more than this many
#: times the 99th percentile: a few entries would otherwise leave the rest one colour.
OUTLIER_RATIO = 3.0


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


def feature_labels(n):
    """Names for ``n`` feature columns: f0, f1 and so on."""
    return [f"f{i}" for i in range(n)]


def token_features_heatmap(matrix, labels, title, *, transpose=False, column_groups=1, clip=False):
    """A tokens × features matrix (X, Q, K, V, outputs) with its feature axis cropped.

    Parameters
    ----------
    matrix : ndarray of shape (n, d)
    labels : sequence of n str
    title : str
    transpose, column_groups, clip : as in :func:`matrix_heatmap`
    """
    return matrix_heatmap(
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
    )


def attention_heatmap(weights, labels, title="Attention weights", *, scores=None, scaled=None):
    """Attention weights (rows: queries, columns: keys) on a fixed 0–1 scale.

    Hovering a cell names the query and key tokens and gives the raw score, the scaled
    score and the weight, when ``scores`` and ``scaled`` are given and the matrix has at
    most :data:`HOVER_SCORES_MAX` tokens (above that the two extra matrices would triple
    what every rerun sends; the scores have their own heatmaps). A masked cell's hover
    says :data:`MASKED_HOVER` in place of its scaled score.

    Parameters
    ----------
    weights : ndarray of shape (n_q, n_k)
    labels : sequence of n str (self-attention: the same tokens on both axes)
    scores, scaled : ndarray of shape (n_q, n_k), optional
        The raw scores, and the scaled ones softmax reads (``-inf`` where masked).
    """
    z = np.asarray(weights, dtype=np.float32)
    hover = "query %{y}<br>key %{x}<br>"
    customdata = None
    if scores is not None and scaled is not None and max(z.shape) <= HOVER_SCORES_MAX:
        customdata, lines = _score_hover(scores, scaled)
        hover += lines
    trace = go.Heatmap(
        z=z,
        x=axis_labels(labels),
        y=axis_labels(labels),
        customdata=customdata,
        **_cell_text(z.shape),
        hovertemplate=hover + "weight %{z:.4f}<extra></extra>",
        colorscale=WEIGHTS_SCALE,
        zmin=0.0,
        zmax=1.0,
        colorbar={"thickness": 12},
    )
    return _layout(go.Figure(trace), title, *z.shape, "key", "query")


def _score_hover(scores, scaled):
    """The customdata and hover lines that give each cell's raw and scaled scores.

    Without masked cells the scores are a compact float32 array of shape (n_q, n_k, 2).
    A masked cell's scaled score is −∞: there the line says :data:`MASKED_HOVER`.
    plotly.js formats a template's value only when it is not ``""``, so each cell becomes
    ``[raw, scaled, ""]``, or ``[raw, "", MASKED_HOVER]`` when masked (plain lists, since a
    typed array holds no text).

    Returns
    -------
    customdata : ndarray of shape (n_q, n_k, 2), or nested lists of shape (n_q, n_k, 3)
    lines : str, the hover template's score lines
    """
    raw = np.asarray(scores, dtype=np.float32)
    scaled = np.asarray(scaled, dtype=np.float32)
    lines = "raw score %{customdata[0]:.3f}<br>scaled score %{customdata[1]:.3f}"
    masked = np.isneginf(scaled)
    if not masked.any():
        return np.stack([raw, scaled], axis=-1), lines + "<br>"
    cells = [
        [
            [_short(r), "", MASKED_HOVER] if gone else [_short(r), _short(s), ""]
            for r, s, gone in zip(raw_row, scaled_row, masked_row, strict=True)
        ]
        for raw_row, scaled_row, masked_row in zip(raw, scaled, masked, strict=True)
    ]
    return cells, lines + "%{customdata[2]}<br>"


def _short(value):
    """A score to seven significant digits, for compact JSON (the hover shows three decimals)."""
    return float(f"{value:.7g}")


def scores_heatmap(scores, labels, title):
    """Scores on a diverging scale; ``-inf`` (masked) cells are left blank and written −∞.

    Hovering a masked cell says :data:`MASKED_HOVER` (an invisible second trace).

    Parameters
    ----------
    scores : ndarray of shape (n_q, n_k), may hold -inf
    labels : sequence of n str
    """
    fig = matrix_heatmap(scores, labels, labels, title, x_title="key", y_title="query")
    masked = np.isneginf(scores)
    if masked.any():
        fig.update_traces(
            hovertemplate="query %{y}<br>key %{x}<br>score %{z:.4f}<extra></extra>",
            hoverongaps=False,
        )
        # The blank cells' hover: an invisible trace over them alone (plotly.js writes a
        # gap's missing value as a warning). Masking does not depend on the scale, so
        # it holds at every stop the browser draws from the frames.
        fig.add_trace(
            go.Heatmap(
                z=np.where(masked, 0.0, np.nan).astype(np.float32),
                x=fig.data[0].x,
                y=fig.data[0].y,
                name=MASKED_OVERLAY,
                opacity=0.0,
                colorscale=MASK_SCALE,
                showscale=False,
                hoverongaps=False,
                hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{MASKED_HOVER}<extra></extra>",
                hoverlabel={"bgcolor": MASK_SCALE[0][1]},
                # the masked cells' −∞, written where the scores' values are
                **(
                    _cell_text(masked.shape)
                    and {"text": np.where(masked, "−∞", "").tolist(), "texttemplate": "%{text}"}
                ),
            )
        )
        # A second title line, not an annotation: it takes the room it needs at any font
        # size (presentation mode's too) instead of sitting on the plot's top edge.
        fig.update_layout(
            title_text=f"{fig.layout.title.text}<br><sup>blank cells are −∞ (masked)</sup>",
            margin_t=75,
        )
    return fig


def mask_heatmap(mask, labels, title="Causal mask"):
    """Which key each query may see: blue where allowed, grey where masked."""
    z = np.asarray(mask, dtype=np.float32)
    trace = go.Heatmap(
        z=z,
        x=axis_labels(labels),
        y=axis_labels(labels),
        colorscale=MASK_SCALE,
        zmin=0.0,
        zmax=1.0,
        showscale=False,
        hovertemplate="query %{y}<br>key %{x}<br>%{z}<extra>1 = may attend</extra>",
        xgap=1,
        ygap=1,
    )
    return _layout(go.Figure(trace), title, *z.shape, "key", "query")


def heads_heatmaps(
    weights,
    labels,
    title="Attention weights per head",
    stat=None,
    names=None,
    per_row=4,
):
    """One 0–1 heatmap per head, in full rows of up to ``per_row`` that share their axes.

    The panels of a row share the query axis, labelled once at the row's left; those of
    a column share the key axis, labelled once under the grid: no panel's labels run into
    its neighbour. Each axis labels its tokens by the rule of :mod:`app.axes`, for the room
    a panel has (one label in k, said on the axis, when they do not all fit).

    Parameters
    ----------
    weights : ndarray of shape (n_heads, n, n)
    labels : sequence of n str
    stat : sequence of n_heads str, optional, written under each head's name
    names : sequence of n_heads str, optional, the panels' names (default "head h")
    per_row : int, the most panels a row holds; a row holds the largest divisor of
        ``n_heads`` up to it, so that every row is full
    """
    n_heads, n, _ = weights.shape
    cols = max(c for c in range(1, min(n_heads, per_row) + 1) if n_heads % c == 0)
    rows = n_heads // cols
    names = [f"head {h}" for h in range(n_heads)] if names is None else list(names)
    if stat is not None:
        names = [f"{name} · {value}" for name, value in zip(names, stat, strict=True)]
    row_height = int(min(max(12 * n + 70, 240), 400))
    height = rows * row_height + 150
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=names,
        shared_xaxes=True,
        shared_yaxes=True,
        horizontal_spacing=0.015,
        vertical_spacing=0.06 if rows > 1 else 0.0,  # a panel's name under the one above
    )
    axis = axis_labels(labels)
    for h in range(n_heads):
        fig.add_trace(
            go.Heatmap(
                z=np.asarray(weights[h], dtype=np.float32),
                x=axis,
                y=axis,
                colorscale=WEIGHTS_SCALE,
                zmin=0.0,
                zmax=1.0,
                showscale=h == 0,
                colorbar={"thickness": 12},
                hovertemplate=f"head {h}<br>query %{{y}}<br>key %{{x}}<br>"
                "weight %{z:.4f}<extra></extra>",
            ),
            row=h // cols + 1,
            col=h % cols + 1,
        )
    fig.update_layout(
        title={"text": title, "x": 0.0},
        height=height,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
    )
    panel_width = axes.PAGE_WIDTH / cols  # the page's width is the browser's to know
    fig.update_xaxes(axes.token_axis(axis, "key", room=panel_width), autotickangles=TICK_ANGLES)
    fig.update_yaxes(axes.token_axis(axis, "query", room=row_height - 60), autorange="reversed")
    # One title a side, clear of the figure's: the middle row's query axis, the first key axis.
    titled = {_axis_name("y", rows // 2 * cols + 1), _axis_name("x", n_heads - cols + 1)}
    for name in axes.token_axes(fig.layout, drawn=False):
        if name not in titled:
            fig.layout[name].title.text = None
        if fig.layout[name].showticklabels is False:
            fig.layout[name].ticks = ""  # no marks where no labels are, nor into panel names
    return fig


def _axis_name(letter, panel):
    """The layout name of panel ``panel``'s axis (1-based, as make_subplots numbers them)."""
    return f"{letter}axis{panel if panel > 1 else ''}"


def _title_labelled_axes_only(fig):
    """Leave the axes of shared subplots that draw no labels without a title too."""
    for name in fig.layout:
        if re.fullmatch(r"[xy]axis\d*", name) and fig.layout[name].showticklabels is False:
            fig.layout[name].title.text = None


def weights_bar(row, labels, query_label):
    """One query's attention over the keys, as bars (what does this token attend to?).

    Parameters
    ----------
    row : ndarray of shape (n_k,)
    labels : sequence of n_k str
    query_label : str
    """
    row = np.asarray(row, dtype=np.float32)
    fig = go.Figure(
        go.Bar(
            x=axis_labels(labels),
            y=row,
            marker={"color": weight_colors(row)},
            hovertemplate="key %{x}<br>weight %{y:.4f}<extra></extra>",
        )
    )
    fig.update_layout(
        title={"text": f"What “{axis_labels([query_label])[0]}” attends to", "x": 0.0},
        yaxis={"range": [0, 1], "title": "weight"},
        xaxis=axes.token_axis(fig.data[0].x, "key") | {"autotickangles": TICK_ANGLES},
        height=340,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def weights_bars_compared(rows, labels, query_label):
    """Several versions of one query's attention over the keys, as grouped bars.

    Parameters
    ----------
    rows : dict of name -> ndarray of shape (n_k,), e.g. random against trained weights;
        the first drawn grey, the second red (:data:`COMPARE_COLORS`)
    labels : sequence of n_k str
    query_label : str
    """
    axis = axis_labels(labels)
    fig = go.Figure(
        [
            go.Bar(
                x=axis,
                y=np.asarray(row, dtype=np.float32),
                name=name,
                marker={"color": color},
                hovertemplate=f"{name}<br>key %{{x}}<br>weight %{{y:.4f}}<extra></extra>",
            )
            for (name, row), color in zip(rows.items(), COMPARE_COLORS, strict=False)
        ]
    )
    fig.update_layout(
        title={"text": f"What “{axis_labels([query_label])[0]}” attends to", "x": 0.0},
        barmode="group",
        yaxis={"range": [0, 1], "title": "weight"},
        xaxis=axes.token_axis(axis, "key") | {"autotickangles": TICK_ANGLES},
        legend={"orientation": "h", "y": 1.12, "x": 1.0, "xanchor": "right"},
        height=380,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
    )
    return fig


@functools.cache
def _three_panels(titles):
    """The layout of three side-by-side panels with ``titles``, made once.

    ``make_subplots`` costs 25 ms a call, more than the rest of the saturation figure.
    """
    return make_subplots(rows=1, cols=3, subplot_titles=titles).layout.to_plotly_json()


def saturation_figure(scales, stats, current_scale, default_scale, rows=None):
    """Entropy, largest weight and effective tokens against the scale (log axis).

    Parameters
    ----------
    scales : ndarray of shape (n_s,)
    stats : engine.SaturationStats with arrays of shape (n_s,)
    current_scale, default_scale : float, marked with vertical lines
    rows : int, optional, how many query rows the means are over
    """
    panels = (
        ("entropy Hᵢ (bits)", stats.entropy),
        ("largest weight", stats.max_weight),
        ("effective tokens 2^Hᵢ", stats.effective_tokens),
    )
    layout = copy.deepcopy(_three_panels(tuple(name for name, _ in panels)))
    traces, markers = [], []
    for i, (name, values) in enumerate(panels, start=1):
        axis = "" if i == 1 else str(i)
        traces.append(
            go.Scatter(
                x=np.asarray(scales, dtype=np.float32),
                y=np.asarray(values, dtype=np.float32),
                mode="lines",
                name=name,
                hovertemplate="scale %{x:.4g}<br>" + name + " %{y:.3f}<extra></extra>",
                xaxis=f"x{axis}",
                yaxis=f"y{axis}",
            )
        )
        layout[f"xaxis{axis}"] |= {"type": "log", "title": {"text": "scale"}}
        for x, line in (
            (current_scale, {"color": "#d62728", "width": 2}),
            (default_scale, {"color": "#7f7f7f", "dash": "dot"}),
        ):  # one list of shapes: add_vline per panel costs a layout pass each
            markers.append(
                {"type": "line", "x0": x, "x1": x, "xref": f"x{axis}", "y0": 0, "y1": 1,
                 "yref": f"y{axis} domain", "line": line}
            )  # fmt: skip
    layout |= {
        "shapes": markers,
        "title": {
            "text": f"Means over {rows or 'all'} query rows — red: current scale, dotted: 1/√d_k",
            "x": 0.0,
        },
        "showlegend": False,
        "height": 300,
        "margin": {"l": 10, "r": 10, "t": 70, "b": 10},
    }
    return go.Figure(traces, layout)


def encoding_curves(pe, dims):
    """Chosen columns of a positional encoding as curves over position.

    Parameters
    ----------
    pe : ndarray of shape (n_positions, d_model)
    dims : sequence of int, the columns to draw
    """
    fig = go.Figure()
    positions = np.arange(pe.shape[0])
    for d in dims:
        fig.add_trace(
            go.Scatter(
                x=positions,
                y=np.asarray(pe[:, d], dtype=np.float32),
                mode="lines+markers" if pe.shape[0] <= 64 else "lines",
                name=f"dimension {d}",
            )
        )
    fig.update_layout(
        title={"text": "Encoding value by position, for a few dimensions", "x": 0.0},
        xaxis_title="position",
        yaxis_title="value",
        height=320,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def stream_norms_figure(stream_norms, update_norms, labels):
    """Per-token norms of the residual stream at each stage and of each sub-layer's update.

    Parameters
    ----------
    stream_norms : ndarray of shape (3, n), input / after attention / after FFN
    update_norms : ndarray of shape (2, n), attention and FFN updates
    labels : sequence of n str
    """
    axis = axis_labels(labels)
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=["‖residual stream‖", "‖what each sub-layer adds‖"]
    )
    for name, values in zip(("input", "after attention", "after FFN"), stream_norms, strict=True):
        fig.add_trace(
            go.Scatter(x=axis, y=np.asarray(values, np.float32), mode="lines+markers", name=name),
            row=1,
            col=1,
        )
    for name, values in zip(("attention update", "FFN update"), update_norms, strict=True):
        fig.add_trace(go.Bar(x=axis, y=np.asarray(values, np.float32), name=name), row=1, col=2)
    fig.update_xaxes(axes.token_axis(axis), autotickangles=TICK_ANGLES)
    fig.update_layout(height=380, margin={"l": 10, "r": 10, "t": 50, "b": 10}, barmode="group")
    return fig


def token_ids_figure(labels, ids):
    """The tokens and their vocabulary ids as a table, one row per token."""
    fig = go.Figure(
        go.Table(
            header={"values": ["position", "token", "id"], "align": "left"},
            cells={
                "values": [list(range(len(labels))), axis_labels(labels), list(ids)],
                "align": "left",
            },
        )
    )
    fig.update_layout(
        height=min(120 + 26 * len(labels), 700), margin={"l": 0, "r": 0, "t": 10, "b": 0}
    )
    return fig


def numbers_table(frame, height=None):
    """A DataFrame as a table: text columns as labels (escaped), numbers to four decimals.

    Parameters
    ----------
    frame : DataFrame
    height : int, optional; by default every row shows (up to 700 px, then it scrolls)

    Rows are :data:`TABLE_ROW` px, so the text's descenders clear the line under it; a
    header wrapped on a narrow screen makes the browser grow the table (``chart.js``).
    """
    numeric = [frame[c].dtype.kind in "fiu" for c in frame.columns]
    values = [
        frame[c].to_numpy(float).tolist() if is_number else axis_labels(frame[c])
        for c, is_number in zip(frame.columns, numeric, strict=True)
    ]
    fig = go.Figure(
        go.Table(
            header={
                "values": [html.escape(str(c)) for c in frame.columns],
                "align": "left",
                "height": TABLE_HEADER,
            },
            cells={
                "values": values,
                "format": [".4f" if is_number else None for is_number in numeric],
                "align": "left",
                "height": TABLE_ROW,
            },
        )
    )
    rows = len(frame)
    # 1 px either side: the outer borders are drawn on the figure's edge, not cut by it.
    margin = {"l": 1, "r": 1, "t": 4, "b": 2}
    fitted = margin["t"] + TABLE_HEADER + TABLE_ROW * rows + margin["b"] + 2
    fig.update_layout(height=height or min(fitted, 700), margin=margin)
    return fig


#: A table's header and body rows, in px (plotly.js's own 20 px rows put the text's
#: descenders on the line under it).
TABLE_HEADER, TABLE_ROW = 28, 24


#: Colour of each cost series: softmax warm, linear cool; causal a darker shade.
COST_COLOURS = {
    "softmax": "#d6604d",
    "softmax, causal": "#b2182b",
    "linear": "#4393c3",
    "linear, causal": "#2166ac",
}


def cost_figure(rows, title="Measured cost against n"):
    """Wall time and peak memory against n on log-log axes, with n² and n guide lines.

    The guides are dashed, through each family's largest measurement: the softmax
    points should run parallel to n², the linear ones to n.

    Parameters
    ----------
    rows : sequence of dict with "method", "n", "seconds", "peak_bytes"
        (as :func:`app.cost.measure_cost` returns)
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=["wall time (ms)", "peak memory (MiB)"])
    methods = list(dict.fromkeys(row["method"] for row in rows))
    panels = (("seconds", 1e3, "ms"), ("peak_bytes", 2.0**-20, "MiB"))
    for col, (field, unit, unit_name) in enumerate(panels, start=1):
        for method in methods:
            mine = sorted((r for r in rows if r["method"] == method), key=lambda r: r["n"])
            fig.add_trace(
                go.Scatter(
                    x=np.array([r["n"] for r in mine], dtype=np.float32),
                    y=np.array([r[field] * unit for r in mine], dtype=np.float32),
                    mode="lines+markers",
                    name=method,
                    legendgroup=method,
                    showlegend=col == 1,
                    line={"color": COST_COLOURS.get(method)},
                    hovertemplate=f"{method}<br>n %{{x}}<br>%{{y:.3g}} {unit_name}<extra></extra>",
                ),
                row=1,
                col=col,
            )
        for family, power in (("softmax", 2), ("linear", 1)):
            mine = [r for r in rows if r["method"].startswith(family)]
            if not mine:
                continue
            anchor = max(mine, key=lambda r: (r["n"], r[field]))
            n = np.array(sorted({r["n"] for r in rows}), dtype=np.float64)
            guide = anchor[field] * unit * (n / anchor["n"]) ** power
            fig.add_trace(
                go.Scatter(
                    x=n.astype(np.float32),
                    y=guide.astype(np.float32),
                    mode="lines",
                    name=f"∝ n{'²' if power == 2 else ''}",
                    legendgroup=f"guide{power}",
                    showlegend=col == 1,
                    line={"color": "#7f7f7f", "dash": "dash" if power == 2 else "dot", "width": 1},
                    hoverinfo="skip",
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(type="log", title_text="n (tokens)")
    fig.update_yaxes(type="log")
    fig.update_layout(
        title={"text": title, "x": 0.0},
        height=400,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
    )
    return fig


#: Attention over an image: transparent where a patch gets nothing, opaque yellow at the
#: row's largest weight, so the picture shows through everywhere else.
OVERLAY_SCALE = [
    [0.0, "rgba(68, 1, 84, 0)"],
    [0.5, "rgba(33, 145, 140, 0.55)"],
    [1.0, "rgba(253, 231, 37, 0.9)"],
]


def image_figure(image, patch, grid, selected=None, overlay=None, title=""):
    """An image with its patch grid, a query patch outlined, and optionally attention on top.

    Parameters
    ----------
    image : uint8 ndarray of shape (H, W, 3)
    patch : int, patch side in pixels
    grid : tuple (n_rows, n_cols); the grid covers the top-left n_rows·patch × n_cols·patch
    selected : tuple (row, col), optional, the patch to outline
    overlay : ndarray of shape (n_rows·patch, n_cols·patch), optional
        Weights per pixel; drawn from transparent (0) to opaque (the largest weight).
    title : str
    """
    image = np.asarray(image, dtype=np.uint8)
    n_rows, n_cols = grid
    fig = go.Figure(go.Image(z=image, hoverinfo="skip"))
    if overlay is not None:
        z = np.asarray(overlay, dtype=np.float32)
        top = float(z.max()) if z.size and z.max() > 0 else 1.0
        title += f"<br><sup>clear at 0, yellow at the row's largest weight, {top:.3g}</sup>"
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=np.arange(z.shape[1]),
                y=np.arange(z.shape[0]),
                colorscale=OVERLAY_SCALE,
                zmin=0.0,
                zmax=top,
                colorbar={"thickness": 12, "title": {"text": "weight"}},
                hovertemplate="pixel (%{x}, %{y})<br>weight %{z:.4f}<extra></extra>",
            )
        )
    xs, ys = [], []
    for c in range(n_cols + 1):  # vertical lines, separated by None
        xs += [c * patch - 0.5, c * patch - 0.5, None]
        ys += [-0.5, n_rows * patch - 0.5, None]
    for r in range(n_rows + 1):
        xs += [-0.5, n_cols * patch - 0.5, None]
        ys += [r * patch - 0.5, r * patch - 0.5, None]
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            line={"color": "rgba(255, 255, 255, 0.45)", "width": 1},
            hoverinfo="skip",
            showlegend=False,
        )
    )
    if selected is not None:
        r, c = selected
        fig.add_shape(
            type="rect",
            x0=c * patch - 0.5,
            x1=(c + 1) * patch - 0.5,
            y0=r * patch - 0.5,
            y1=(r + 1) * patch - 0.5,
            line={"color": "#ff00ff", "width": 3},
        )
    height, width = image.shape[:2]
    fig.update_xaxes(showticklabels=False, range=[-0.5, width - 0.5], showgrid=False)
    fig.update_yaxes(
        showticklabels=False,
        range=[height - 0.5, -0.5],
        scaleanchor="x",
        showgrid=False,
    )
    fig.update_layout(
        title={"text": title, "x": 0.0},
        height=460,
        margin={"l": 10, "r": 10, "t": 75 if "<br>" in title else 50, "b": 10},
    )
    return fig


def patch_attention_heatmap(weights, grid, selected=None, title="Attention between patches"):
    """The full patch × patch attention matrix, on a 0 to largest-weight scale.

    Rows and columns are patches in raster order, labelled ``row,col``. Over many
    patches the weights are small, so the scale runs to the largest weight, not to 1,
    and a second title line says so.

    Parameters
    ----------
    weights : ndarray of shape (n_patches, n_patches)
    grid : tuple (n_rows, n_cols)
    selected : int, optional, the query patch's index, marked by a horizontal line
    """
    z = np.asarray(weights, dtype=np.float32)
    n_rows, n_cols = grid
    labels = [f"{r},{c}" for r in range(n_rows) for c in range(n_cols)]
    top = float(z.max()) if z.size and z.max() > 0 else 1.0
    if top < 1.0:
        title += f"<br><sup>{top_note(top)}: {len(labels)} patches share each row</sup>"
    trace = go.Heatmap(
        z=z,
        x=labels,
        y=labels,
        colorscale=WEIGHTS_SCALE,
        zmin=0.0,
        zmax=top,
        colorbar={"thickness": 12},
        hovertemplate="query patch %{y}<br>key patch %{x}<br>weight %{z:.4f}<extra></extra>",
    )
    fig = _layout(go.Figure(trace), title, *z.shape, "key patch (row,col)", "query patch")
    if top < 1.0:
        fig.update_layout(margin_t=75)  # room for the second title line
    if selected is not None:
        fig.add_hline(y=selected, line={"color": "#ff00ff", "width": 1})
    return fig


#: The model view's thumbnails are pooled to at most this many rows and columns.
THUMBNAIL_MAX = 48


def _pool(matrix, size):
    """Block-average a square matrix down to at most ``size`` × ``size`` (display only)."""
    n = matrix.shape[-1]
    if n <= size:
        return matrix
    edges = np.linspace(0, n, size + 1).round().astype(int)
    rows = np.add.reduceat(matrix, edges[:-1], axis=-2) / np.diff(edges)[:, None]
    return np.add.reduceat(rows, edges[:-1], axis=-1) / np.diff(edges)[None, :]


#: Cells between two thumbnails of the model view, drawn blank (level :data:`_GAP`).
THUMBNAIL_GAP = 2
_GAP = 255


def model_view_figure(attentions, selected=None):
    """Every head of every layer as a thumbnail: the layers × heads grid.

    Thumbnails are block-averaged to at most :data:`THUMBNAIL_MAX` tokens a side, sent
    as 8-bit levels (weight × 254; 255 marks the gaps between them) and tiled into one
    heatmap: one trace, where 72 subplots cost plotly.py and plotly.js about a second
    each. The grid stays under a megabyte even at 512 tokens; the head view shows any
    head in full.

    Parameters
    ----------
    attentions : ndarray of shape (n_layers, n_heads, n, n)
    selected : (int, int), optional, the (layer, head) to outline
    """
    n_layers, n_heads = attentions.shape[:2]
    side = min(attentions.shape[-1], THUMBNAIL_MAX)
    step = side + THUMBNAIL_GAP
    tiles = np.full((n_layers * step - THUMBNAIL_GAP, n_heads * step - THUMBNAIL_GAP), _GAP)
    for layer in range(n_layers):
        for head in range(n_heads):
            pooled = _pool(np.asarray(attentions[layer, head], dtype=np.float64), THUMBNAIL_MAX)
            tiles[layer * step : layer * step + side, head * step : head * step + side] = np.round(
                np.clip(pooled, 0.0, 1.0) * (_GAP - 1)
            )
    viridis = weight_colors(np.linspace(0.0, 1.0, 11))
    top = (_GAP - 1) / _GAP
    colorscale = [[top * i / 10, colour] for i, colour in enumerate(viridis)]
    colorscale += [[top + 1e-6, "#ffffff"], [1.0, "#ffffff"]]
    centres = np.arange(n_heads) * step + (side - 1) / 2
    fig = go.Figure(
        go.Heatmap(
            z=tiles.astype(np.uint8),
            colorscale=colorscale,
            zmin=0,
            zmax=_GAP,
            showscale=False,
            hoverinfo="skip",
        )
    )
    fig.update_xaxes(
        tickvals=centres,
        ticktext=[f"H{head}" for head in range(n_heads)],
        side="top",
        showgrid=False,
        zeroline=False,
    )
    fig.update_yaxes(
        tickvals=np.arange(n_layers) * step + (side - 1) / 2,
        ticktext=[f"L{layer}" for layer in range(n_layers)],
        autorange="reversed",
        showgrid=False,
        zeroline=False,
        scaleanchor="x",
    )
    if selected is not None:
        layer, head = selected
        fig.add_shape(
            type="rect",
            x0=head * step - 1.5,
            x1=head * step + side + 0.5,
            y0=layer * step - 1.5,
            y1=layer * step + side + 0.5,
            line={"color": "#d62728", "width": 3},
        )
    fig.update_layout(
        height=90 * n_layers + 60, margin={"l": 30, "r": 10, "t": 40, "b": 10}, plot_bgcolor="white"
    )
    return fig


def head_grid_figure(grid, query_label, key_label):
    """Weight from one query token to one key token in every (layer, head).

    Parameters
    ----------
    grid : ndarray of shape (n_layers, n_heads)
    query_label, key_label : str
    """
    query, key = axis_labels([query_label, key_label])
    z = np.asarray(grid, dtype=np.float32)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[f"H{h}" for h in range(z.shape[1])],
            y=[f"L{layer}" for layer in range(z.shape[0])],
            text=[[f"{v:.2f}" for v in row] for row in z],
            texttemplate="%{text}",
            colorscale=WEIGHTS_SCALE,
            zmin=0.0,
            zmax=1.0,
            hovertemplate="%{y} %{x}<br>weight %{z:.4f}<extra></extra>",
            colorbar={"thickness": 12},
        )
    )
    fig.update_layout(
        title={"text": f"How much “{query}” attends to “{key}”, in every head", "x": 0.0},
        height=330,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    fig.update_yaxes(autorange="reversed")
    return fig


#: The neuron view's two score bars: q·k grey, scaled q·k red.
NEURON_BAR_COLOURS = ("#8c8c8c", "#d6604d")


def neuron_view_figure(stages, k, labels, query_label):
    """One query against every key, stage by stage: k, q⊙k, q·k, scaled, softmax.

    Parameters
    ----------
    stages : engine.attention.QueryStages for the query
    k : ndarray of shape (n, d_head), the keys
    labels : sequence of n str
    query_label : str
    """
    k, product = np.asarray(k), np.asarray(stages.product)
    dots, scaled, weights, scale = stages.scores, stages.scaled, stages.weights, stages.scale
    axis = axis_labels(labels)
    fig = make_subplots(
        rows=1,
        cols=4,
        shared_yaxes=True,
        column_widths=[0.32, 0.32, 0.18, 0.18],
        horizontal_spacing=0.015,
        subplot_titles=["keys k", "q ⊙ k", "q · k and scaled", "softmax"],
    )
    limit = float(max(np.abs(k).max(), np.abs(product).max(), 1e-12))
    for col, z in ((1, k), (2, product)):
        fig.add_trace(
            go.Heatmap(
                z=z.astype(np.float32),
                y=axis,
                colorscale=DIVERGING_SCALE,
                zmid=0.0,
                zmin=-limit,
                zmax=limit,
                showscale=col == 1,
                # Under the two heatmaps it explains, clear of the bars beside them.
                colorbar={
                    "orientation": "h",
                    "x": 0.32,
                    "xanchor": "center",
                    "len": 0.5,
                    "y": -0.1,
                    "yanchor": "top",
                    "thickness": 10,
                    "title": {"text": "k, q⊙k", "side": "right"},
                },
                hovertemplate="key %{y}<br>feature %{x}<br>%{z:.3f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
    for name, values, colour in (
        ("q·k", dots, NEURON_BAR_COLOURS[0]),
        (f"scaled, × {scale:.3g}", scaled, NEURON_BAR_COLOURS[1]),
    ):
        fig.add_trace(
            go.Bar(
                x=values.astype(np.float32),
                y=axis,
                orientation="h",
                name=name,
                marker={"color": colour},
                showlegend=True,
            ),
            row=1,
            col=3,
        )
    fig.add_trace(
        go.Bar(
            x=weights.astype(np.float32),
            y=axis,
            orientation="h",
            name="weight",
            marker={"color": weight_colors(weights)},
            showlegend=False,
        ),
        row=1,
        col=4,
    )
    height = max(360, 16 * len(labels) + 120) + 60
    fig.update_yaxes(axes.token_axis(axis, "key", room=height - 210), autorange="reversed")
    _title_labelled_axes_only(fig)
    fig.update_layout(
        title={"text": f"Neuron view: query “{axis_labels([query_label])[0]}”", "x": 0.0},
        barmode="group",
        showlegend=True,
        # Under the q·k bars, beside the colour bar.
        legend={"orientation": "h", "x": 0.66, "y": -0.1, "yanchor": "top"},
        height=height,
        margin={"l": 10, "r": 10, "t": 70, "b": 80},
    )
    return fig


def sentence_heatmap(
    matrix, labels, title, *, value_name, x_title="sentence", y_title="sentence", digits=2
):
    """A sentences × sentences matrix (similarity, attention between sentences), 0 upwards.

    The colour scale runs from 0 to the largest value rather than to 1: the mean
    attention between two sentences is a few hundredths, and a 0–1 scale would show it
    all dark; when the largest is below 1 a second title line says so. Cells that are
    NaN (a sentence without tokens) stay blank.

    Parameters
    ----------
    matrix : ndarray of shape (n_sent, n_sent), non-negative
    labels : sequence of n_sent str
    value_name : str, what a cell holds, for the hover text
    digits : int, the decimals of the values written in the cells
    """
    z = np.asarray(matrix, dtype=np.float32)
    finite = z[np.isfinite(z)]
    top = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    if top < 1.0:
        title += f"<br><sup>{top_note(top, value_name)}</sup>"
    trace = go.Heatmap(
        z=z,
        x=axis_labels(labels),
        y=axis_labels(labels),
        **_cell_text(z.shape, digits),
        hovertemplate=f"{y_title} %{{y}}<br>{x_title} %{{x}}<br>"
        f"{value_name} %{{z:.4f}}<extra></extra>",
        hoverongaps=False,
        colorscale=WEIGHTS_SCALE,
        zmin=0.0,
        zmax=top,
        colorbar={"thickness": 12},
    )
    fig = _layout(go.Figure(trace), title, *z.shape, x_title, y_title)
    if top < 1.0:
        fig.update_layout(margin_t=75)  # room for the second title line
    return fig


def top_note(top, value_name="weight"):
    """A second title line for weights drawn on a scale from 0 to their largest, not to 1."""
    return f"colour scale 0 to {top:.3g}, the largest {value_name}, not 0 to 1"


#: The summary's colour (the page highlights its sentences in orange) and attention's.
CENTRALITY_COLOURS = {"LexRank score": "#e6550d", "attention received": "#3182bd"}


def centrality_figure(labels, scores, chosen, received=None, title="Centrality per sentence"):
    """LexRank's score per sentence, beside the share of attention it receives, as bars.

    Both are shares of 1 over the sentences, so their bars compare directly; the
    summary's sentences are starred on the axis.

    Parameters
    ----------
    labels : sequence of n_sent str
    scores : ndarray of shape (n_sent,), summing to 1
    chosen : sequence of int, the summary's sentences
    received : ndarray of shape (n_sent,), optional, summing to 1
    """
    chosen = set(np.asarray(chosen).tolist())
    starred = [("★ " if i in chosen else "") + str(label) for i, label in enumerate(labels)]
    axis = axis_labels(starred)
    series = {"LexRank score": scores}
    if received is not None:
        series["attention received"] = received
    fig = go.Figure(
        [
            go.Bar(
                x=axis,
                y=np.asarray(values, dtype=np.float32),
                name=name,
                marker={"color": CENTRALITY_COLOURS[name]},
                hovertemplate=f"%{{x}}<br>{name} %{{y:.3f}}<extra></extra>",
            )
            for name, values in series.items()
        ]
    )
    fig.update_layout(
        title={"text": title, "x": 0.0},
        barmode="group",
        yaxis={"title": "share of 1", "rangemode": "tozero"},
        xaxis=axes.token_axis(axis) | {"autotickangles": TICK_ANGLES},
        legend={"orientation": "h", "x": 0.0, "xanchor": "left", "y": 1.0, "yanchor": "bottom"},
        height=400,
        margin={"l": 10, "r": 10, "t": 80, "b": 10},
    )
    return fig


#: The A − B colour scale of two sentences' grids runs at least this far either side of 0:
#: stretched to its own largest entry, a change of 0.03 looked as dramatic as one of 0.5.
CHANGE_FLOOR = 0.1


def change_limit(change):
    """The A − B colour scale's half-range: :data:`CHANGE_FLOOR`, or the largest change."""
    return float(max(np.abs(change).max(initial=0.0), CHANGE_FLOOR))


def head_grids_compared(grid_a, grid_b, pair_a, pair_b, names=("A", "B")):
    """Two sentences' head-finder grids and their difference, side by side, with numbers.

    Each grid writes its weights in its cells (two decimals, the difference signed), as
    the single sentence's grid does. The difference is on a diverging scale symmetric
    about 0 that runs to ± :func:`change_limit` (the floor, or the largest change), said
    in its colour bar's title.

    Parameters
    ----------
    grid_a, grid_b : ndarray of shape (n_layers, n_heads)
        Each sentence's weight from its query token to its key token, in every head.
    pair_a, pair_b : (str, str)
        Each sentence's (query, key) labels.
    names : (str, str)
        What the two sentences are called (:func:`app.compare.names`: their differing
        words, or "A" and "B").
    """
    grid_a, grid_b = np.asarray(grid_a, dtype=np.float32), np.asarray(grid_b, dtype=np.float32)
    change = np.asarray(grid_a, dtype=np.float64) - grid_b  # exact A − B of what is drawn
    limit = change_limit(change)
    (qa, ka), (qb, kb) = axis_labels(pair_a), axis_labels(pair_b)
    name_a, name_b = (html.escape(name, quote=False) for name in names)
    letters = ("A", "B") if (name_a, name_b) == ("A", "B") else (f"A, “{name_a}”", f"B, “{name_b}”")
    difference = "A − B" if letters[0] == "A" else f"“{name_a}” − “{name_b}”"
    # A and B side by side, their difference under them across the width: 12 columns a
    # grid leave room for two decimals in every cell, on a desktop and on a projector.
    fig = make_subplots(
        rows=2,
        cols=2,
        specs=[[{}, {}], [{"colspan": 2}, None]],
        horizontal_spacing=0.06,
        vertical_spacing=0.16,
        subplot_titles=[
            f"{letters[0]}: “{qa}” → “{ka}”",
            f"{letters[1]}: “{qb}” → “{kb}”",
            difference,
        ],
    )
    x = [f"H{h}" for h in range(grid_a.shape[1])]
    y = [f"L{layer}" for layer in range(grid_a.shape[0])]
    floor = "the floor" if limit == CHANGE_FLOOR else "the largest change"
    weights_bar = {"y": 0.79, "len": 0.42, "title": {"text": "weight", "side": "right"}}
    change_bar = {
        "y": 0.21,
        "len": 0.42,
        "title": {"text": f"±{limit:.2g} ({floor})", "side": "right"},
    }
    panels = (
        (grid_a, (1, 1), {"colorscale": WEIGHTS_SCALE, "zmin": 0.0, "zmax": 1.0}, "A", None),
        (grid_b, (1, 2), {"colorscale": WEIGHTS_SCALE, "zmin": 0.0, "zmax": 1.0}, "B", weights_bar),
        (
            change,
            (2, 1),
            {"colorscale": DIVERGING_SCALE, "zmin": -limit, "zmax": limit, "zmid": 0.0},
            "A − B",
            change_bar,
        ),
    )
    for z, (row, col), colour, name, bar in panels:
        signed = name == "A − B"
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=x,
                y=y,
                text=[[_two_decimals(v, signed) for v in values] for values in z],
                texttemplate="%{text}",
                textfont={"size": 11},
                name=name,
                showscale=bar is not None,
                colorbar={"thickness": 10, **(bar or {})},
                hovertemplate=f"{name}<br>%{{y}} %{{x}}<br>%{{z:.4f}}<extra></extra>",
                **colour,
            ),
            row=row,
            col=col,
        )
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(
        title={
            "text": "Which heads moved between the two sentences"
            if letters[0] == "A"
            else f"Which heads moved between “{name_a}” and “{name_b}”",
            "x": 0.0,
        },
        height=600,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
    )
    return fig


def _two_decimals(value, signed=False):
    """A cell's number: two decimals, a change signed, and no sign on a change that rounds to 0."""
    text = f"{value:+.2f}" if signed else f"{value:.2f}"
    return "0.00" if text in ("+0.00", "-0.00") else text


#: One colour per head in the line view (Tableau 10, then two more), as BertViz does.
HEAD_COLOURS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a",
)  # fmt: skip
#: The line view's opacity steps: a link's weight falls in one bucket, drawn at its alpha.
LINE_BUCKETS = (0.25, 0.5, 0.75)
LINE_ALPHAS = (0.3, 0.55, 0.8, 1.0)


def _rgba(colour, alpha):
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def line_view_figure(links, labels, heads, threshold, title, chosen=None):
    """BertViz's head view: tokens in two columns, a line from each query to each key.

    One colour per head; a line's opacity steps with its weight (:data:`LINE_BUCKETS`).
    Lines are the links :func:`engine.attention.strong_links` found, drawn as one SVG path
    per (head, opacity step) — a layout shape ``M0,i L1,j M0,i′ L1,j′ …`` named after its
    head — so the browser draws at most 4 · n_heads paths whatever the length (a trace
    with gaps would be one path per line: 7,000 at 256 tokens). Traces 0 and 1 are the
    query and key columns (a click on a token reports trace 0 or 1 and the token's row);
    then one legend entry per head.

    Parameters
    ----------
    links : engine.attention.Links, with query and key indices into ``labels``
    labels : sequence of n str, the tokens drawn (perhaps without [CLS] and [SEP])
    heads : sequence of int, the model's head number of each ``links.head`` index
    threshold : float, the smallest weight drawn (stated in the title)
    title : str
    chosen : int, optional, the token (index into ``labels``) whose lines are shown
    """
    n = len(labels)
    axis = axis_labels(labels)
    rows = np.arange(n)
    colour = ["#d62728" if i == chosen else "#222222" for i in rows]
    pitch = 22 if n <= axes.FULL_LABELS_MAX else 14  # pixels from one token to the next
    shown, step, size = axes.column_labels(axis, room=pitch * n)
    fig = go.Figure()
    for x, side, anchor in ((0.0, "query", "middle left"), (1.0, "key", "middle right")):
        fig.add_trace(
            go.Scatter(
                x=np.full(n, x, dtype=np.float32),
                y=rows.astype(np.float32),
                mode="markers+text",
                text=shown,
                hovertext=axis,  # every token, labelled or not
                textposition=anchor,
                textfont={"color": colour, "size": size},
                marker={"size": 6, "color": "#bbbbbb"},
                hovertemplate=f"{side} %{{hovertext}}<extra>click: keep only its lines</extra>",
                showlegend=False,
            )
        )
    bucket = np.digitize(links.weight, LINE_BUCKETS)
    shapes = []
    for index, head in enumerate(heads):
        colour = HEAD_COLOURS[head % len(HEAD_COLOURS)]
        fig.add_trace(  # the head's legend entry; its lines are the shapes below
            go.Scatter(x=[None], y=[None], mode="lines", name=f"H{head}", line={"color": colour})
        )
        for step, alpha in enumerate(LINE_ALPHAS):
            picked = (links.head == index) & (bucket == step)
            if picked.any():
                segments = zip(links.query[picked], links.key[picked], strict=True)
                shapes.append(
                    {
                        "type": "path",
                        "path": "".join(f"M0,{q}L1,{k}" for q, k in segments),
                        "name": f"H{head}",
                        "line": {"color": _rgba(colour, alpha), "width": 1 + step},
                        "layer": "below",
                    }
                )
    fig.update_layout(shapes=shapes)
    drawn = len(links.weight)
    fig.update_layout(
        title={
            "text": f"{axes.titled(title, step)}<br><sup>{drawn:,} lines: weights ≥ "
            f"{threshold:g} of "
            f"{links.considered:,} cells; the rest hold {links.omitted_mass:.0%} of the "
            "attention and are not drawn</sup>",
            "x": 0.0,
        },
        height=int(max(320, pitch * n + 110)),
        margin={"l": 10, "r": 10, "t": 100, "b": 10},
        xaxis={"visible": False, "range": [-0.6, 1.6], "fixedrange": True},
        yaxis={"visible": False, "autorange": "reversed", "range": None, "fixedrange": True},
        # Under the lines: above them, in large type, the heads' keys ran into the title.
        legend={"orientation": "h", "y": 0.0, "x": 0.5, "xanchor": "center", "yanchor": "top"},
        hovermode="closest",
        plot_bgcolor="white",
        meta=axes.LINE_VIEW,  # the chart component keeps a hovered token's lines
    )
    return fig
