"""Tables the pages show and export: pandas frames with token labels, built from engine arrays."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

import engine


def saturation_tables(weights, labels):
    """Saturation of each query row, and its mean, as tables.

    Parameters
    ----------
    weights : ndarray of shape (n, n)
    labels : sequence of n str

    Returns
    -------
    summary : DataFrame, one row of means
    per_row : DataFrame, one row per query token
    """
    stats = engine.saturation(weights)
    per_row = pd.DataFrame(
        {
            "query": list(labels),
            "entropy (bits)": stats.entropy,
            "largest weight": stats.max_weight,
            "effective tokens": stats.effective_tokens,
            "‖Jacobian‖": stats.jacobian_norm,
        }
    )
    summary = per_row.drop(columns="query").mean().to_frame().T
    summary.insert(0, "uniform would be", f"{len(labels)} tokens")
    return summary, per_row


def matrix_frame(matrix, row_labels, col_labels):
    """A matrix with its labels, ready to show or to save as CSV.

    Repeated labels are kept as they are; pandas allows duplicate index labels.
    """
    return pd.DataFrame(matrix, index=list(row_labels), columns=list(col_labels))


def head_entropy(weights):
    """Mean entropy and effective tokens of each head's rows.

    Parameters
    ----------
    weights : ndarray of shape (n_heads, n, n)

    Returns
    -------
    DataFrame, one row per head
    """
    stats = engine.saturation(weights)
    return pd.DataFrame(
        {
            "head": range(weights.shape[0]),
            "mean entropy (bits)": stats.entropy.mean(axis=-1),
            "mean effective tokens": stats.effective_tokens.mean(axis=-1),
            "mean largest weight": stats.max_weight.mean(axis=-1),
        }
    )


def book_comparison(exercise, scaled=False):
    """The notebook's outputs by loop and by matrix (and, unscaled, as the book prints them).

    Parameters
    ----------
    exercise : dict from ``app.compute.book_exercise``
    scaled : bool

    Returns
    -------
    DataFrame, one row per output x′ₙ and source, with the largest difference
    """
    suffix = "_scaled" if scaled else ""
    loop = np.hstack(exercise["loop" + suffix][1])  # N columns of [D, 1] -> [D, N]
    matrix = exercise["matrix" + suffix].X_prime
    sources = {"loop": loop, "matrix": matrix}
    if not scaled:
        sources["book prints"] = engine.book.NOTEBOOK_X_PRIME
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


def _plain(labels):
    """Axis labels as the user typed them: escapes undone, de-duplicating marks removed."""
    return [html.unescape(str(label)).rstrip("\u200b") for label in labels]


def has_matrix(fig):
    """Whether the figure draws data that :func:`figure_csv` can export."""
    return any(trace.type == "heatmap" for trace in fig.data)


def figure_csv(fig):
    """The matrices behind a figure's heatmaps as CSV, token labels on rows and columns.

    A figure with several heatmaps (one per head) stacks them, the panel's name in the
    first column. Masked (−∞) cells are empty.
    """
    frames = []
    heatmaps = [trace for trace in fig.data if trace.type == "heatmap"]
    for i, trace in enumerate(heatmaps):
        frame = matrix_frame(trace.z, _plain(trace.y), _plain(trace.x))
        if len(heatmaps) > 1:
            frame.insert(0, "panel", f"panel {i}")
        frames.append(frame)
    return pd.concat(frames).to_csv(float_format="%.6g")  # the figure holds float32


def summary_table(sentences, scores, chosen):
    """One row per sentence: its number, its text, its LexRank score, whether it is chosen.

    Parameters
    ----------
    sentences : sequence of engine.summarize.Sentence
    scores : ndarray of shape (n_sent,)
    chosen : sequence of int, the summary's sentences

    Returns
    -------
    DataFrame
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
