"""Figure builders: pure functions from engine arrays and token labels to Plotly figures.

No Streamlit here, so every builder is tested on its own. Conventions shared by all:
token labels on both axes (made unique and escaped, see :func:`axis_labels`); weights
on a fixed 0–1 sequential scale; scores, Q, K, V on a diverging scale centred at 0;
cell text only for small matrices; data sent as float32 to keep reruns compact. The
colour scales (Viridis, RdBu) stay readable with the common colour-vision deficiencies.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

WEIGHTS_SCALE = "Viridis"
DIVERGING_SCALE = "RdBu_r"
MASK_SCALE = [[0.0, "#d9d9d9"], [1.0, "#2c7bb6"]]
#: Matrices with at most this many rows and columns get their values written in the cells.
CELL_TEXT_MAX = 16
LABEL_MAX_CHARS = 18
_ZERO_WIDTH = "\u200b"


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


def _cell_text(z, fmt="{:.2f}"):
    if max(z.shape) > CELL_TEXT_MAX:
        return None
    return [
        [("−∞" if v == -np.inf else "" if np.isnan(v) else fmt.format(v)) for v in row] for row in z
    ]


def _layout(fig, title, n_rows, n_cols, x_title, y_title):
    side = 28 + 14 * max(n_rows, n_cols)
    fig.update_layout(
        title={"text": title, "x": 0.0, "xanchor": "left"},
        height=int(min(max(side, 320), 900)),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    every = max(1, max(n_rows, n_cols) // 64)  # every label up to 64 tokens, then thinned
    fig.update_xaxes(
        title_text=x_title, tickangle=-60, type="category", dtick=every if n_cols > 1 else None
    )
    fig.update_yaxes(
        title_text=y_title,
        autorange="reversed",
        type="category",
        dtick=every if n_rows > 1 else None,
    )
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
    """
    z = np.asarray(matrix, dtype=np.float32)
    if transpose:
        z, row_labels, col_labels = z.T, col_labels, row_labels
        x_title, y_title = y_title, x_title
    finite = z[np.isfinite(z)]
    limit = float(np.max(np.abs(finite))) if finite.size else 1.0
    colour = (
        {"colorscale": DIVERGING_SCALE, "zmid": 0.0, "zmin": -limit, "zmax": limit}
        if diverging
        else {"colorscale": WEIGHTS_SCALE, "zmin": 0.0, "zmax": 1.0}
    )
    text = _cell_text(z)
    trace = go.Heatmap(
        z=np.where(np.isfinite(z), z, np.nan).astype(np.float32),
        x=axis_labels(col_labels),
        y=axis_labels(row_labels),
        text=text,
        texttemplate="%{text}" if text else None,
        hovertemplate="row %{y}<br>column %{x}<br>value %{z:.4f}<extra></extra>",
        colorbar={"thickness": 12},
        **colour,
    )
    fig = _layout(go.Figure(trace), title, *z.shape, x_title, y_title)
    width = z.shape[1] // column_groups
    for g in range(1, column_groups):
        fig.add_vline(x=g * width - 0.5, line={"color": "black", "width": 2})
    return fig


def attention_heatmap(weights, labels, title="Attention weights", *, scores=None, scaled=None):
    """Attention weights (rows: queries, columns: keys) on a fixed 0–1 scale.

    Hovering a cell names the query and key tokens and gives the raw score, the scaled
    score and the weight, when ``scores`` and ``scaled`` are given.

    Parameters
    ----------
    weights : ndarray of shape (n_q, n_k)
    labels : sequence of n str (self-attention: the same tokens on both axes)
    scores, scaled : ndarray of shape (n_q, n_k), optional
    """
    z = np.asarray(weights, dtype=np.float32)
    hover = "query %{y}<br>key %{x}<br>"
    customdata = None
    if scores is not None and scaled is not None:
        customdata = np.stack([scores, scaled], axis=-1).astype(np.float32)
        hover += "raw score %{customdata[0]:.3f}<br>scaled score %{customdata[1]:.3f}<br>"
    text = _cell_text(z)
    trace = go.Heatmap(
        z=z,
        x=axis_labels(labels),
        y=axis_labels(labels),
        customdata=customdata,
        text=text,
        texttemplate="%{text}" if text else None,
        hovertemplate=hover + "weight %{z:.4f}<extra></extra>",
        colorscale=WEIGHTS_SCALE,
        zmin=0.0,
        zmax=1.0,
        colorbar={"thickness": 12},
    )
    return _layout(go.Figure(trace), title, *z.shape, "key", "query")


def scores_heatmap(scores, labels, title):
    """Scores on a diverging scale; ``-inf`` (masked) cells are left blank and written −∞.

    Parameters
    ----------
    scores : ndarray of shape (n_q, n_k), may hold -inf
    labels : sequence of n str
    """
    fig = matrix_heatmap(scores, labels, labels, title, x_title="key", y_title="query")
    if np.isneginf(scores).any():
        fig.update_traces(
            hovertemplate="query %{y}<br>key %{x}<br>score %{z:.4f}<extra></extra>",
            hoverongaps=False,
        )
        fig.add_annotation(
            text="blank cells are −∞ (masked)",
            xref="paper",
            yref="paper",
            x=1.0,
            y=1.06,
            showarrow=False,
            xanchor="right",
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


def heads_heatmaps(weights, labels, title="Attention weights per head", stat=None):
    """One 0–1 heatmap per head, side by side in rows of up to four.

    Parameters
    ----------
    weights : ndarray of shape (n_heads, n, n)
    labels : sequence of n str
    stat : sequence of n_heads str, optional, written under each head's name
    """
    n_heads, n, _ = weights.shape
    cols = min(n_heads, 4)
    rows = -(-n_heads // cols)
    names = [f"head {h}" + (f" · {stat[h]}" if stat is not None else "") for h in range(n_heads)]
    fig = make_subplots(
        rows=rows, cols=cols, subplot_titles=names, horizontal_spacing=0.04, vertical_spacing=0.08
    )
    axis = axis_labels(labels)
    show_ticks = n <= 24
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
    fig.update_xaxes(showticklabels=show_ticks, tickangle=-60, type="category")
    fig.update_yaxes(showticklabels=show_ticks, autorange="reversed", type="category")
    fig.update_layout(
        title={"text": title, "x": 0.0},
        height=min(320 * rows, 1400),
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
    )
    return fig


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
            marker={"color": row, "colorscale": WEIGHTS_SCALE, "cmin": 0.0, "cmax": 1.0},
            hovertemplate="key %{x}<br>weight %{y:.4f}<extra></extra>",
        )
    )
    fig.update_layout(
        title={"text": f"What “{axis_labels([query_label])[0]}” attends to", "x": 0.0},
        yaxis={"range": [0, 1], "title": "weight"},
        xaxis={"tickangle": -60, "type": "category"},
        height=340,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def saturation_figure(scales, stats, current_scale, default_scale):
    """Entropy, largest weight and effective tokens against the scale (log axis).

    Parameters
    ----------
    scales : ndarray of shape (n_s,)
    stats : engine.SaturationStats with arrays of shape (n_s,)
    current_scale, default_scale : float, marked with vertical lines
    """
    panels = (
        ("entropy (bits)", stats.entropy),
        ("largest weight", stats.max_weight),
        ("effective tokens", stats.effective_tokens),
    )
    fig = make_subplots(rows=1, cols=3, subplot_titles=[name for name, _ in panels])
    for i, (name, values) in enumerate(panels, start=1):
        fig.add_trace(
            go.Scatter(
                x=np.asarray(scales, dtype=np.float32),
                y=np.asarray(values, dtype=np.float32),
                mode="lines",
                name=name,
                hovertemplate="scale %{x:.4g}<br>" + name + " %{y:.3f}<extra></extra>",
            ),
            row=1,
            col=i,
        )
        fig.add_vline(x=current_scale, line={"color": "#d62728", "width": 2}, row=1, col=i)
        fig.add_vline(x=default_scale, line={"color": "#7f7f7f", "dash": "dot"}, row=1, col=i)
    fig.update_xaxes(type="log", title_text="scale")
    fig.update_layout(
        title={"text": "Mean over query rows — red: current scale, dotted: 1/√d_k", "x": 0.0},
        showlegend=False,
        height=300,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
    )
    return fig


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
    fig.update_xaxes(type="category", tickangle=-60)
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
