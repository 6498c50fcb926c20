"""Gemma 3's kinds of layer beside the model view's grid: a band per layer, and a legend.

Gemma 3 interleaves five local layers, whose attention is a sliding window, with one
global layer (Gemma Team 2025, "Gemma 3 Technical Report", its architecture). When the grid's
labels are thinned on a projector (:func:`app.views.model_view.projected`) one in 2 named
only even layers, never a global one: so the kind is not in the label but in a band beside
each layer's thumbnails, coloured by kind, named in the legend. The pattern, five light
then one dark, reads at a glance.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go

#: The band's width, in cells: at least one, and about this fraction of a thumbnail's step.
BAND_FRACTION = 1 / 8
#: The band's colours: light orange for a local layer, blue for a global one (apart in hue
#: and in lightness, so in grey and to the common colour-vision deficiencies too).
KIND_COLORS = {"local": "#fdae61", "global": "#2c7bb6"}


def band_cells(side, gap):
    """The band's width in cells beside thumbnails ``side`` cells wide, ``gap`` apart."""
    return max(1, math.ceil((side + gap) * BAND_FRACTION))


def band(windows, side, gap, across=False):
    """The band beside each layer's thumbnails in its kind's colour, and the legend naming them.

    The band lies left of the grid (layers down) or above it (``across``), ``gap`` cells
    from it, as long as the layer's thumbnails (``side`` cells, ``gap`` apart); its hover
    names the layer and its kind.

    Parameters
    ----------
    windows : sequence of (int or None), one per layer: a local layer's sliding window, or
        None for a global layer

    Returns
    -------
    list of traces: the band (a heatmap between bin edges: layers, and the gaps between
    them, blank), then one legend entry per kind of layer
    """
    step = side + gap
    across_edges = [-0.5 - gap - band_cells(side, gap), -0.5 - gap]  # before the grid
    along_edges = [
        edge
        for layer in range(len(windows))
        for edge in (layer * step - 0.5, layer * step + side - 0.5)
    ]
    kinds = [kind(window) for window in windows]
    codes = [value for name in kinds for value in (float(name == "global"), None)][:-1]
    names = [
        text for layer, window in enumerate(windows) for text in (f"L{layer}: {said(window)}", "")
    ][:-1]
    scale = [[0.0, KIND_COLORS["local"]], [0.5, KIND_COLORS["local"]]]
    scale += [[0.5, KIND_COLORS["global"]], [1.0, KIND_COLORS["global"]]]
    edges = dict(zip("yx" if across else "xy", (across_edges, along_edges), strict=True))
    out = [
        go.Heatmap(
            z=[codes] if across else [[code] for code in codes],
            text=[names] if across else [[name] for name in names],
            **edges,
            colorscale=scale,
            zmin=0,
            zmax=1,
            showscale=False,
            hovertemplate="%{text}<extra></extra>",
            name="kind of layer",
        )
    ]
    for name in ("local", "global"):
        first = next((window for window in windows if kind(window) == name), False)
        if first is False:
            continue
        out.append(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                marker={"symbol": "square", "size": 14, "color": KIND_COLORS[name]},
                name=said(first),
                hoverinfo="skip",
            )
        )
    return out


def kind(window):
    """A layer's kind: ``"local"`` (a sliding window, an int) or ``"global"`` (None)."""
    return "global" if window is None else "local"


def said(window):
    """A layer's kind as the legend says it: ``local (a window of 512 tokens)``, ``global …``."""
    if window is None:
        return "global (every token before)"
    return f"local (a window of {window} tokens)"
