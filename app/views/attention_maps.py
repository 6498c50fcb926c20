"""The attention matrices: scores on a diverging scale, weights on 0–1, queries by keys.

Hovering a weight gives its raw and scaled scores; a masked cell says so, in the scores
(left blank, written −∞) and in the weights' hover alike. Masking does not depend on the
scale, so what a masked cell says holds at every stop the browser draws from the scale's
frames, which only put the stop's numbers into the figure (:mod:`app.live`).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.views import axes, chart, heatmap, style

#: Weights heatmaps carry the raw and scaled scores for hovering up to this many tokens.
HOVER_SCORES_MAX = 128
#: What hovering a masked cell says in place of its scaled score, −∞ (plotly.js would
#: write "−Infinity").
MASKED_HOVER = "masked (−∞ before softmax)"
#: The entry of a weights cell's ``customdata`` that holds its scaled score, which the
#: scale's frames replace at each stop.
SCALED_SCORE = 1
#: The entry of a weights cell's ``customdata`` that holds its raw score.
RAW_SCORE = 0
#: Which of the frames' arrays fill which entries of a weights cell's ``customdata``: the
#: scaled scores at the stop shown, the raw scores of the head shown
#: (:func:`app.live.protocol.follow`'s ``hover``).
HOVER_FRAMES = [["scaled", SCALED_SCORE], ["scores", RAW_SCORE]]
#: The key of a trace's ``meta`` that names the text of its customdata's gaps: the chart
#: component writes a cell ``[raw, NaN]`` as ``[raw, "", text]`` before plotly.js draws it
#: (``compact`` hover: :func:`score_hover`).
GAP_TEXT = "gap_text"


def scores_figure(scores, labels, title, follows_frames=False):
    """Scores on a diverging scale; ``-inf`` (masked) cells are left blank and written −∞.

    Hovering a masked cell says :data:`MASKED_HOVER`: an invisible second trace over the
    masked cells alone (plotly.js writes a gap's missing value as a warning), which also
    writes their −∞ in a small matrix.

    Parameters
    ----------
    scores : ndarray of shape (n_q, n_k), may hold -inf
    labels : sequence of n str
    follows_frames : bool, as :func:`app.views.heatmap.figure` takes it
    """
    fig = heatmap.figure(
        scores, labels, labels, title, x_title="key", y_title="query", follows_frames=follows_frames
    )
    masked = np.isneginf(scores)
    if masked.any():
        fig.update_traces(
            hovertemplate="query %{y}<br>key %{x}<br>score %{z:.4f}<extra></extra>",
            hoverongaps=False,
        )
        written = heatmap.cell_text(masked) and {
            "text": np.where(masked, "−∞", "").tolist(),
            "texttemplate": "%{text}",
        }
        fig.add_trace(
            go.Heatmap(
                z=np.where(masked, 0.0, np.nan).astype(np.float32),
                x=fig.data[0].x,
                y=fig.data[0].y,
                name=style.MASKED_OVERLAY,
                opacity=0.0,
                colorscale=style.MASK_SCALE,
                showscale=False,
                hoverongaps=False,
                hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{MASKED_HOVER}<extra></extra>",
                hoverlabel={"bgcolor": style.MASK_SCALE[0][1]},
                **written,
            )
        )
        # A second title line, not an annotation: it takes the room it needs at any font
        # size (presentation mode's too) instead of sitting on the plot's top edge.
        fig.update_layout(
            title_text=style.with_note(fig.layout.title.text, "blank cells are −∞ (masked)"),
            margin_t=style.NOTE_TOP,
        )
    return fig


def weights_figure(
    weights,
    labels,
    title="Attention weights",
    *,
    scores=None,
    scaled=None,
    compact=False,
    follows_frames=False,
):
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
    compact : bool
        For the app's chart component, which writes the masked cells' hover itself: the
        scores as one float32 array however many cells are masked (:func:`score_hover`).
    follows_frames : bool
        The browser redraws the cells from the scale's frames: their numbers are written
        from them (:func:`app.views.heatmap.cell_text`), not in each cell's best colour.
    """
    z = np.asarray(weights, dtype=np.float32)
    hover = "query %{y}<br>key %{x}<br>"
    customdata, meta = None, None
    if scores is not None and scaled is not None and max(z.shape) <= HOVER_SCORES_MAX:
        customdata, lines = score_hover(scores, scaled, compact)
        hover += lines
        if compact and "customdata[2]" in lines:
            meta = {GAP_TEXT: MASKED_HOVER}
    trace = go.Heatmap(
        z=z,
        x=axes.axis_labels(labels),
        y=axes.axis_labels(labels),
        customdata=customdata,
        meta=meta,
        hovertemplate=hover + "weight %{z:.4f}<extra></extra>",
        colorscale=style.WEIGHTS_SCALE,
        zmin=0.0,
        zmax=1.0,
        colorbar=style.COLORBAR,
        **(heatmap.cell_text(z) if follows_frames else {}),
    )
    fig = heatmap.token_figure(trace, title, *z.shape, "key", "query")
    return fig if follows_frames else heatmap.write_legibly(fig, 0, heatmap.numbers(z))


def score_hover(scores, scaled, compact=False):
    """The customdata and hover lines that give each cell's raw and scaled scores.

    Without masked cells the scores are a compact float32 array of shape (n_q, n_k, 2).
    A masked cell's scaled score is −∞: there the line says :data:`MASKED_HOVER`.
    plotly.js formats a template's value only when it is not ``""``, so each cell becomes
    ``[raw, scaled, ""]``, or ``[raw, "", MASKED_HOVER]`` when masked (plain lists, since a
    typed array holds no text). With ``compact``, the float32 array all the same, NaN
    where masked: the app's chart component writes those cells so before plotly.js draws
    them (the trace's ``meta`` names the text, :data:`GAP_TEXT`); as lists the text
    would be sent once per masked cell (700 KB for SmolLM2's 128 tokens, against 175 KB).

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
    if compact:
        cells = np.stack([raw, np.where(masked, np.float32(np.nan), scaled)], axis=-1)
        return cells, lines + "%{customdata[2]}<br>"
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


def show_scores(container, key, scores, labels, title, *, csv=None, live=None):
    """Draw :func:`scores_figure`; the CSV is the scores (``csv`` replaces them)."""
    return chart.draw(
        container,
        chart.remembered(scores_figure, scores, labels, title, live is not None),
        key,
        table=heatmap.table(scores, labels, labels) if csv is None else csv,
        live=live,
    )


def show_weights(
    container,
    key,
    weights,
    labels,
    title="Attention weights",
    *,
    scores=None,
    scaled=None,
    csv=None,
    live=None,
    clicks=False,
):
    """Draw :func:`weights_figure`; the CSV is the weights (``csv`` replaces them).

    With ``clicks`` it returns the cell clicked since the last run, as
    :func:`app.views.chart.draw` does.
    """
    return chart.draw(
        container,
        chart.remembered(
            weights_figure,
            weights,
            labels,
            title,
            scores=scores,
            scaled=scaled,
            compact=True,
            follows_frames=live is not None,
        ),
        key,
        table=heatmap.table(weights, labels, labels) if csv is None else csv,
        live=live,
        clicks=clicks,
    )
