"""Tables the pages show and export: pandas frames with token labels, built from engine arrays.

Every chart's CSV button writes one of these: the engine's numbers at full precision with
the full token labels, never the figure's clipped labels or float32 copy.
"""

from __future__ import annotations

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
            "entropy Hᵢ (bits)": stats.entropy,
            "largest weight": stats.max_weight,
            "effective tokens 2^Hᵢ": stats.effective_tokens,
            "‖Jᵢ‖_F": stats.jacobian_norm,
        }
    )
    # Means of each row's numbers: the mean of 2^Hᵢ, which is not 2^(mean Hᵢ).
    summary = per_row.drop(columns="query").mean().to_frame().T
    summary.columns = SATURATION_MEANS
    summary.insert(0, "uniform would be", f"{len(labels)} tokens")
    return summary, per_row


#: The saturation summary's columns: each the mean over the query rows of a row's number.
SATURATION_MEANS = (
    "mean Hᵢ (bits)",
    "mean largest weight",
    "effective tokens: mean of 2^Hᵢ",
    "mean ‖Jᵢ‖_F",
)


def matrix_frame(matrix, row_labels, col_labels):
    """A matrix with its labels, ready to show or to save as CSV.

    Repeated labels are kept as they are; pandas allows duplicate index labels.
    """
    return pd.DataFrame(matrix, index=list(row_labels), columns=list(col_labels))


def head_entropy(weights):
    """Mean entropy and effective tokens (the mean of 2^Hᵢ, not 2^(mean H)) of each head's rows.

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
            "effective tokens: mean of 2^Hᵢ": stats.effective_tokens.mean(axis=-1),
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


def token_features(matrix, labels):
    """A tokens × features matrix (X, Q, K, V, outputs), every feature named: f0, f1 and so on."""
    return matrix_frame(matrix, labels, [f"f{i}" for i in range(np.shape(matrix)[1])])


def panels(matrices, names, row_labels, col_labels):
    """Several matrices with the same labels (one per head or layer), stacked.

    The panel's name is the first column; each panel keeps its row labels.
    """
    frames = []
    for name, matrix in zip(names, matrices, strict=True):
        frame = matrix_frame(matrix, row_labels, col_labels)
        frame.insert(0, "panel", name)
        frames.append(frame)
    return pd.concat(frames)


def patch_matrix(weights, grid):
    """Attention between image patches, rows and columns named "row,column" of the patch."""
    n_rows, n_cols = grid
    names = [f"{r},{c}" for r in range(n_rows) for c in range(n_cols)]
    return matrix_frame(weights, names, names)


def norms(stream_norms, update_norms, labels):
    """Per-token norms of the residual stream and of each sub-layer's update, one row a token."""
    columns = ("input", "after attention", "after FFN", "attention update", "FFN update")
    values = dict(zip(columns, [*stream_norms, *update_norms], strict=True))
    return pd.DataFrame(values, index=list(labels))


def head_grid(grid):
    """One number per (layer, head): rows L0, L1, …, columns H0, H1, …."""
    n_layers, n_heads = np.shape(grid)
    return matrix_frame(grid, [f"L{i}" for i in range(n_layers)], [f"H{h}" for h in range(n_heads)])


def cost(rows):
    """Measured cost, one row per method and n (seconds and peak bytes as measured)."""
    return pd.DataFrame(list(rows))


def weights_row(row, labels):
    """One query's weights over the keys, one row per key."""
    return pd.DataFrame({"key": list(labels), "weight": row})


def neuron_view(stages, k, labels):
    """The neuron view's numbers: each key's features, q ⊙ k, q·k, the scaled score, the weight.

    Parameters
    ----------
    stages : engine.attention.QueryStages
    k : ndarray of shape (n_k, d_k)
    labels : sequence of n_k str
    """
    d_k = np.shape(k)[1]
    frame = pd.DataFrame(k, index=list(labels), columns=[f"k f{i}" for i in range(d_k)])
    products = pd.DataFrame(
        stages.product, index=frame.index, columns=[f"q⊙k f{i}" for i in range(d_k)]
    )
    frame = pd.concat([frame, products], axis=1)
    frame["q·k"] = stages.scores
    frame[f"× {stages.scale:.6g}"] = stages.scaled
    frame["weight"] = stages.weights
    return frame


def saturation_curve(scales, stats):
    """The saturation sweep: one row per scale, one column per measure."""
    return pd.DataFrame(
        {
            "scale": scales,
            "mean Hᵢ (bits)": stats.entropy,
            "mean largest weight": stats.max_weight,
            "effective tokens: mean of 2^Hᵢ": stats.effective_tokens,
        }
    )


def to_csv(table):
    """A table as CSV at full precision (the engine's float64); masked (−∞) cells empty."""
    return table.replace(-np.inf, np.nan).to_csv()


def centrality(labels, scores, received=None):
    """The centrality chart's numbers: each sentence's LexRank score, and its attention.

    The attention a sentence's tokens received from the other sentences' tokens is there
    when the document was read whole (``received`` not None).
    """
    frame = pd.DataFrame({"LexRank score": np.asarray(scores, dtype=np.float64)}, index=labels)
    if received is not None:
        frame["attention received"] = np.asarray(received, dtype=np.float64)
    return frame


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


def head_changes(changes, names=("A", "B")):
    """Every head's weight in two sentences and the change, largest change first (rank 1).

    The weight columns are named after the sentences (``names``, their differing words:
    "weight, too big"), and the change after both ("change, too big − too small").
    """
    frame = pd.DataFrame([change._asdict() for change in changes])
    a, b = names
    frame = frame.rename(
        columns={
            "weight_a": f"weight, {a}",
            "weight_b": f"weight, {b}",
            "change": f"change, {a} − {b}",
        }
    )
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="rank")
    return frame


def links(found, labels, heads, offset=0):
    """The line view's lines: head, query and key (positions and full labels), weight.

    ``found`` indexes ``labels``; ``offset`` is the text position of ``labels[0]`` (1 when
    [CLS] is hidden), so the positions written are the text's.
    """
    labels = list(labels)
    return pd.DataFrame(
        {
            "head": np.asarray(heads, dtype=int)[found.head],
            "query": found.query + offset,
            "query token": [labels[i] for i in found.query],
            "key": found.key + offset,
            "key token": [labels[i] for i in found.key],
            "weight": found.weight,
        }
    )
