"""Views over a document's sentences: how alike they are, how central, which are the summary.

The similarity of their embeddings and the attention between them as sentences ×
sentences heatmaps; LexRank's score beside the attention each receives, as bars; and
every sentence with its score as a table (the summarize page's).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.state import session
from app.views import axes, chart, heatmap, style, tables


def figure(matrix, labels, title, *, value_name, x_title="sentence", y_title="sentence", digits=2):
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
        title = style.with_note(title, heatmap.top_note(top, value_name))
    trace = go.Heatmap(
        z=z,
        x=axes.axis_labels(labels),
        y=axes.axis_labels(labels),
        hovertemplate=f"{y_title} %{{y}}<br>{x_title} %{{x}}<br>"
        f"{value_name} %{{z:.4f}}<extra></extra>",
        hoverongaps=False,
        colorscale=style.WEIGHTS_SCALE,
        zmin=0.0,
        zmax=top,
        colorbar=style.COLORBAR,
    )
    top_margin = style.NOTE_TOP if top < 1.0 else 50
    fig = heatmap.token_figure(trace, title, *z.shape, x_title, y_title, top_margin)
    return heatmap.write_legibly(fig, 0, heatmap.numbers(z, digits))


def show(container, key, matrix, labels, title, **options):
    """Draw :func:`figure`; the CSV is the matrix, sentences naming rows and columns."""
    chart.draw(
        container,
        figure(matrix, labels, title, **options),
        key,
        table=heatmap.table(matrix, labels, labels),
    )


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
    axis = axes.axis_labels(starred)
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
    return style.frame(
        fig,
        title,
        400,
        top=80,
        barmode="group",
        yaxis={"title": "share of 1", "rangemode": "tozero"},
        xaxis=axes.token_axis(axis) | {"autotickangles": axes.TICK_ANGLES},
        legend={"orientation": "h", "x": 0.0, "xanchor": "left", "y": 1.0, "yanchor": "bottom"},
    )


def centrality_table(labels, scores, received=None):
    """The centrality chart's numbers: each sentence's LexRank score, and its attention.

    The attention a sentence's tokens received from the other sentences' tokens is there
    when the document was read whole (``received`` not None).
    """
    frame = pd.DataFrame({"LexRank score": np.asarray(scores, dtype=np.float64)}, index=labels)
    if received is not None:
        frame["attention received"] = np.asarray(received, dtype=np.float64)
    return frame


def show_centrality(container, key, labels, scores, chosen, received=None, title=None):
    """Draw :func:`centrality_figure`; the CSV is each sentence's numbers."""
    chart.draw(
        container,
        centrality_figure(labels, scores, chosen, received, title or "Centrality per sentence"),
        key,
        table=centrality_table(labels, scores, received),
    )


def summary_table(sentences, scores, chosen):
    """One row per sentence: its number, its text, its LexRank score, whether it is chosen.

    The arguments are those of :func:`app.words.summary.highlighted_markdown` but the text.
    """
    chosen = set(np.asarray(chosen).tolist())
    return pd.DataFrame(
        {
            "sentence": range(1, len(sentences) + 1),
            "text": [sentence.text for sentence in sentences],
            "LexRank score": np.asarray(scores, dtype=np.float64),
            "in summary": [i in chosen for i in range(len(sentences))],
        }
    )


def show_table(sentences, scores, chosen, k):
    """Every sentence with its score and whether it is in the summary, with its CSV.

    In presentation mode, which offers no downloads, the table alone.
    """
    table = summary_table(sentences, scores, chosen)
    tables.show(st, table)
    if session.presenting():
        return
    st.download_button(
        "CSV: every sentence, its score, and whether it is in the summary",
        data=lambda: table.to_csv(index=False),
        file_name=f"attention-explorer_summary_k{k}.csv",
        mime="text/csv",
        key="summarize_csv",
        on_click="ignore",
        type="tertiary",
        icon=":material/download:",
    )
