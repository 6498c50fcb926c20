"""Rotary positions: one head's score of a fixed query–key pair against their distance.

Su et al. (2021), "RoFormer", section 3.4.2: rotating q and k by their positions makes
the score depend on the distance between them alone. The same two vectors are moved
apart, and their score drawn at each distance, against the model with the rotation
removed (the same at every distance). The numbers are
:func:`engine.analysis.rotary_scores`'. Llama 3.x stretches the slow pairs' rotation
(``rope_scaling`` of type ``llama3``): :func:`wavelength_figure` draws each pair's
wavelength as the model turns it against the unscaled one
(:func:`engine.positional.rotary_frequencies`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.views import axes, chart, style


def figure(scores, query_label, key_label, distance=None):
    """The pair's scaled score at each distance, with rotary positions and without.

    Parameters
    ----------
    scores : engine.analysis.RotaryScores
    query_label, key_label : str
    distance : int, optional; the pair's distance in the text, marked
    """
    query, key = axes.axis_labels([query_label, key_label])
    x = np.asarray(scores.distances)
    traces = [
        go.Scatter(
            x=x,
            y=np.asarray(scores.rotary, dtype=np.float32),
            mode="lines",
            name="with rotary positions",
            line={"color": style.COMPARE_COLORS[1]},
            hovertemplate="distance %{x}<br>score %{y:.3f}<extra></extra>",
        ),
        go.Scatter(
            x=x,
            y=np.full(len(x), scores.plain, dtype=np.float32),
            mode="lines",
            name="rotary positions removed",
            line={"color": style.COMPARE_COLORS[0], "dash": "dash"},
            hovertemplate="distance %{x}<br>score %{y:.3f}<extra></extra>",
        ),
    ]
    if distance is not None and 0 <= distance < len(x):
        traces.append(
            go.Scatter(
                x=[distance],
                y=[float(scores.rotary[distance])],
                mode="markers",
                name="in your text",
                marker={"size": 10, "color": style.COMPARE_COLORS[2]},
                hovertemplate="in your text: distance %{x}<br>score %{y:.3f}<extra></extra>",
            )
        )
    return style.framed(
        traces,
        f"Score of “{query}” (query) and “{key}” (key) as they are moved apart",
        340,
        xaxis={"title": "distance: query position − key position"},
        yaxis={"title": "scaled score q·k/√d"},
        legend={"orientation": "h", "y": -0.25},
        bottom=60,
    )


def table(scores):
    """One row per distance: the score with rotary positions and without."""
    return pd.DataFrame(
        {"distance": scores.distances, "rotary": scores.rotary, "no_rotary": scores.plain}
    )


def show(container, key, scores, query_label, key_label, distance=None):
    """Draw :func:`figure`; the CSV is the score at every distance."""
    chart.draw(
        container, figure(scores, query_label, key_label, distance), key, table=table(scores)
    )


def wavelength_figure(plain, scaled, llama3):
    """Each feature pair's wavelength, unscaled and as Llama 3.x's scaling stretches it.

    Parameters
    ----------
    plain, scaled : ndarray of shape (d_head // 2,), the angle per token θ_i of each pair
    llama3 : (low_freq_factor, high_freq_factor, original_max_position_embeddings)
    """
    low, high, original = llama3
    pairs = np.arange(len(plain))
    traces = [
        go.Scatter(
            x=pairs,
            y=2 * np.pi / np.asarray(plain, dtype=np.float64),
            mode="lines+markers",
            name="unscaled",
            line={"color": style.COMPARE_COLORS[0], "dash": "dash"},
            hovertemplate="pair %{x}<br>%{y:.4g} tokens a turn<extra></extra>",
        ),
        go.Scatter(
            x=pairs,
            y=2 * np.pi / np.asarray(scaled, dtype=np.float64),
            mode="lines+markers",
            name="as the model turns it (llama3 scaling)",
            line={"color": style.COMPARE_COLORS[1]},
            hovertemplate="pair %{x}<br>%{y:.4g} tokens a turn<extra></extra>",
        ),
    ]
    edges = [
        {
            "type": "line",
            "xref": "paper",
            "x0": 0,
            "x1": 1,
            "y0": y,
            "y1": y,
            "line": {"color": "#888888", "width": 1, "dash": "dot"},
        }
        for y in (original / high, original / low)
    ]
    return style.framed(
        traces,
        "Wavelength of each feature pair: kept below the lower dotted line, stretched above "
        "the upper, blended between",
        340,
        xaxis={"title": "feature pair i"},
        yaxis={"title": "tokens per full turn, 2π/θᵢ", "type": "log"},
        legend={"orientation": "h", "y": -0.25},
        bottom=60,
        shapes=edges,
    )


def wavelength_table(plain, scaled):
    """One row per feature pair: its angle per token and wavelength, unscaled and scaled."""
    plain, scaled = np.asarray(plain, dtype=np.float64), np.asarray(scaled, dtype=np.float64)
    return pd.DataFrame(
        {
            "pair": np.arange(len(plain)),
            "theta_unscaled": plain,
            "theta_scaled": scaled,
            "wavelength_unscaled": 2 * np.pi / plain,
            "wavelength_scaled": 2 * np.pi / scaled,
        }
    )


def show_wavelengths(container, key, plain, scaled, llama3):
    """Draw :func:`wavelength_figure`; the CSV is :func:`wavelength_table`."""
    chart.draw(
        container,
        wavelength_figure(plain, scaled, llama3),
        key,
        table=wavelength_table(plain, scaled),
    )
