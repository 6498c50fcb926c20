"""Two sentences compared: their head-finder grids side by side, and what moved between them.

A minimal pair changes one word; the heads whose weight moves between the two grids are
the ones that read that word (:mod:`app.words.minimal_pairs`).
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.state.controls import md_escape
from app.views import axes, chart, heatmap, style

#: The A − B colour scale of two sentences' grids runs at least this far either side of 0:
#: stretched to its own largest entry, a change of 0.03 looked as dramatic as one of 0.5.
CHANGE_FLOOR = 0.1


def change_limit(change):
    """The A − B colour scale's half-range: :data:`CHANGE_FLOOR`, or the largest change."""
    return float(max(np.abs(change).max(initial=0.0), CHANGE_FLOOR))


def figure(grid_a, grid_b, pair_a, pair_b, names=("A", "B")):
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
        What the two sentences are called (:func:`app.words.minimal_pairs.names`: their differing
        words, or "A" and "B").
    """
    grid_a, grid_b = np.asarray(grid_a, dtype=np.float32), np.asarray(grid_b, dtype=np.float32)
    change = np.asarray(grid_a, dtype=np.float64) - grid_b  # exact A − B of what is drawn
    limit = change_limit(change)
    (qa, ka), (qb, kb) = axes.axis_labels(pair_a), axes.axis_labels(pair_b)
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
        (grid_a, (1, 1), {"colorscale": style.WEIGHTS_SCALE, "zmin": 0.0, "zmax": 1.0}, "A", None),
        (
            grid_b,
            (1, 2),
            {"colorscale": style.WEIGHTS_SCALE, "zmin": 0.0, "zmax": 1.0},
            "B",
            weights_bar,
        ),
        (
            change,
            (2, 1),
            {"colorscale": style.DIVERGING_SCALE, "zmin": -limit, "zmax": limit, "zmid": 0.0},
            "A − B",
            change_bar,
        ),
    )
    for z, (row, col), colour, name, bar in panels:
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=x,
                y=y,
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
    for index, (z, _, _, name, _) in enumerate(panels):  # the panels stay traces 0, 1 and 2
        written = [[_two_decimals(v, name == "A − B") for v in values] for values in z]
        heatmap.write_legibly(fig, index, written)
    fig.update_yaxes(autorange="reversed")
    title = (
        "Which heads moved between the two sentences"
        if letters[0] == "A"
        else f"Which heads moved between “{name_a}” and “{name_b}”"
    )
    return style.frame(fig, title, 600, top=70)


def _two_decimals(value, signed=False):
    """A cell's number: two decimals, a change signed, and no sign on a change that rounds to 0."""
    text = f"{value:+.2f}" if signed else f"{value:.2f}"
    return "0.00" if text in ("+0.00", "-0.00") else text


def table(changes, names=("A", "B")):
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


def change_note(changes, names=("A", "B")):
    """A sentence on what size of change stands out between the two sentences' grids.

    From the changes themselves: the median head's, the largest, how many heads reach
    :data:`CHANGE_FLOOR` (the colour scale's floor), in Markdown with the
    sentences' names escaped.

    Parameters
    ----------
    changes : list of engine.analysis.HeadChange, largest first
        (:func:`engine.analysis.rank_changes`)
    names : (str, str)
    """
    sizes = np.abs([change.change for change in changes])
    top = changes[0]
    floor = CHANGE_FLOOR
    limit = change_limit(sizes)
    difference = " − ".join(f"“{md_escape(name)}”" for name in names)
    return (
        f"What stands out: the colours of {difference} run to ±{limit:.2g} (never less "
        f"than ±{floor:g}), so a change of a few hundredths stays pale. Here the median head "
        f"moves by {np.median(sizes):.3f} and {int((sizes >= floor).sum())} of the "
        f"{len(sizes)} heads by {floor:g} or more; a change stands out when it is several "
        f"times the median. The largest: layer {top.layer}, head {top.head}, "
        f"{top.change:+.3f}."
    )


def show(container, key, grids, pairs, names, changes):
    """Draw :func:`figure` of both ``grids``, what stands out, and the heads that moved most.

    ``pairs`` are each sentence's (query, key) labels, ``changes`` every head's change,
    largest first (:func:`engine.analysis.rank_changes`); the CSV is :func:`table`.
    """
    chart.draw(container, figure(*grids, *pairs, names), key, table=table(changes, names))
    container.caption(change_note(changes, names))
    container.caption("The heads that moved most:")
    container.table(table(changes[:8], names))
