"""The scale view on its own: one head's weights at every stop of the scale, as Plotly frames.

The live slider of /attention plays the engine's frames through the app's chart component
(:mod:`app.live`); this view holds the same numbers in a plain Plotly figure instead, one
``go.Frame`` per stop under a Plotly slider, so that it plays with plotly.js alone: in a
notebook (:mod:`aeviews`) and in one HTML file (:mod:`app.views.page`). The figure at each
stop is :func:`app.views.attention_maps.weights_figure`'s, hover included: raw score,
scaled score and weight. A frame holds only what a stop changes (the weights, the scaled
scores in the hover and the title); the raw scores are the same at every stop.

Frames grow as n² per stop. Past :data:`FRAME_BUDGET` bytes the view keeps every k-th stop
(the model's own scale and 1 always among them), and past
:data:`app.views.attention_maps.HOVER_SCORES_MAX` tokens the hover gives the weight alone,
as the app's heatmap does: the title's second line says what was left out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import engine
from app.state import controls
from app.views import attention_maps, axes, style

#: The most bytes a figure's frames may hold, as plotly.py writes them (base64 float32).
FRAME_BUDGET = 8 * 1024 * 1024
#: Bytes one cell costs in a frame: its weight, and its raw and scaled scores when hovered
#: (float32, base64), or about this much text when masked cells make the hover lists.
_CELL_BYTES = {"weight": 4 * 4 / 3, "scores": 8 * 4 / 3, "masked": 30}
#: What a stop's slider step plays: that frame at once, with no transition.
_JUMP = {
    "mode": "immediate",
    "frame": {"duration": 0, "redraw": True},
    "transition": {"duration": 0},
}


def cell_bytes(n, masked):
    """What one stop's frame costs for ``n`` tokens, in bytes, as :func:`figure` writes it."""
    cost = _CELL_BYTES["weight"]
    if n <= attention_maps.HOVER_SCORES_MAX:
        cost += _CELL_BYTES["masked" if masked else "scores"]
    return cost * n * n


def kept_stops(scales, keep, n, masked, budget=FRAME_BUDGET):
    """The stops a figure of ``n`` tokens keeps: every k-th, the smallest k within ``budget``.

    Parameters
    ----------
    scales : sequence of float, the slider's stops, ascending
    keep : sequence of float, stops always kept (the model's own scale, 1)
    n : int, tokens
    masked : bool, whether any cell is masked (the hover then carries text)
    budget : float, bytes

    Returns
    -------
    list of int, indices into ``scales``, ascending
    """
    per_stop = cell_bytes(n, masked)
    step = max(1, int(np.ceil(len(scales) * per_stop / budget)))
    kept = set(range(0, len(scales), step)) | {i for i, s in enumerate(scales) if s in keep}
    return sorted(kept)


def _stop_title(title, scale_label, weights):
    """The title at one stop: the scale, then the means over the rows the saturation panel gives."""
    stats = engine.saturation(weights, jacobian=False)
    note = (
        f"mean entropy {np.mean(stats.entropy):.2f} bits, mean largest weight "
        f"{np.mean(stats.max_weight):.2f}, mean effective tokens "
        f"{np.mean(stats.effective_tokens):.1f}"
    )
    return style.with_note(f"{title} at scale {scale_label}", note)


#: The slider's own height, its current value above its rail, in pixels.
SLIDER_HEIGHT = 80


def _label_room(axis):
    """Pixels under a plot that a token axis's labels (upright at worst) and title take."""
    font = axis.tickfont.size or axes.SCREEN_FONT
    longest = max((len(str(label)) for label in axis.tickvals or ()), default=1)
    return round(axes.CHAR_WIDTH * font * longest + 2.5 * axes.SCREEN_FONT + 10)


def figure(sweep, labels, stop_labels, start, title="Attention weights", omitted=""):
    """One head's weights at each stop of ``sweep``, a Plotly frame per stop, under a slider.

    Parameters
    ----------
    sweep : engine.attention.ScaleSweep, the stops to draw (``scales`` of shape (n_s,))
    labels : sequence of n str
    stop_labels : sequence of n_s str, each stop as the slider writes it
    start : int, the stop shown first (the model's own scale)
    title : str, the title before "at scale …"
    omitted : str, optional, what was left out (a third title line when not empty)

    Returns
    -------
    plotly Figure whose frame ``i`` (named ``str(i)``) is stop ``i``: trace 0's ``z`` is
    ``sweep.weights[i]`` and, up to :data:`app.views.attention_maps.HOVER_SCORES_MAX`
    tokens, its ``customdata`` the raw and scaled scores of
    :func:`app.views.attention_maps.score_hover`
    """
    scales, weights, scaled = sweep.scales, sweep.weights, sweep.scaled
    fig = attention_maps.weights_figure(  # its frames redraw the cells: plotly.js's text colour
        weights[start],
        labels,
        title,
        scores=sweep.scores,
        scaled=scaled[start],
        follows_frames=True,
    )
    hovered = fig.data[0].customdata is not None
    titles = [_stop_title(title, stop_labels[i], weights[i]) for i in range(len(scales))]
    if omitted:
        titles = [f"{text}<br><sup>{omitted}</sup>" for text in titles]
    frames = []
    for i in range(len(scales)):
        data = {"type": "heatmap", "z": np.asarray(weights[i], dtype=np.float32)}
        if hovered:
            data["customdata"] = attention_maps.score_hover(sweep.scores, scaled[i])[0]
        frames.append(
            {
                "name": str(i),
                "data": [data],
                "traces": [0],
                "layout": {"title": {"text": titles[i]}},
            }
        )
    steps = [
        {"label": stop_labels[i], "method": "animate", "args": [[str(i)], _JUMP]}
        for i in range(len(scales))
    ]
    # Under the key axis: its labels, turned upright at worst, and its title.
    below = _label_room(fig.layout.xaxis)
    slider = {
        "active": start,
        "steps": steps,
        "currentvalue": {"prefix": "scale ", "font": {"size": 14, "color": "#222"}},
        # Every stop's label under the slider would overlap: the current one says it.
        "font": {"color": "rgba(0,0,0,0)"},
        "y": 0,
        "yanchor": "top",
        "pad": {"t": below},
        "len": 1.0,
    }
    top = style.NOTE_TOP + (20 if omitted else 0)
    bottom = below + SLIDER_HEIGHT
    fig.update_layout(
        title_text=titles[start], sliders=[slider], height=fig.layout.height + bottom,
        margin_t=top, margin_b=bottom,
    )  # fmt: skip
    fig.frames = frames
    return fig


def head_figure(
    q, k, v, labels, mask=None, title="Attention weights", budget=FRAME_BUDGET, start=None
):
    """The scale view of one head from its queries, keys and values: the engine's sweep, drawn.

    The stops are the slider's of /attention for ``d_k`` (:func:`app.state.controls.scale_options`),
    thinned to fit ``budget`` (:func:`kept_stops`); the first shown is ``start``, by default
    1/√d_k, the scale the model was trained at. The weights of every stop are
    :func:`engine.attention.attention_over_scales`'.

    Parameters
    ----------
    q : ndarray of shape (n_q, d_k)
    k : ndarray of shape (n_k, d_k)
    v : ndarray of shape (n_k, d_v)
    labels : sequence of n str
    mask : bool ndarray of shape (n_q, n_k), optional, True where a query may attend
    title : str
    budget : float, the most bytes the frames may hold
    start : float, optional, the stop shown first (one of the slider's; it is always kept)

    Returns
    -------
    fig : plotly Figure (:func:`figure`)
    sweep : engine.attention.ScaleSweep of the stops drawn
    """
    d_k = np.shape(q)[-1]
    options = controls.scale_options(d_k, 1)
    default = controls.default_scale(d_k, 1)
    start = default if start is None else start
    n = len(labels)
    masked = mask is not None and not np.all(mask)
    kept = kept_stops(options, (default, 1.0, start), n, masked, budget)
    scales = np.array([options[i] for i in kept])
    sweep = engine.attention_over_scales(q, k, v, scales, mask)
    stop_labels = [controls.scale_label(s, d_k, 1) for s in scales]
    left_out = []
    if len(kept) < len(options):
        left_out.append(f"{len(kept)} of the slider's {len(options)} stops kept, to stay small")
    if n > attention_maps.HOVER_SCORES_MAX:
        left_out.append(
            f"hover gives the weight alone past {attention_maps.HOVER_SCORES_MAX} tokens"
        )
    first = list(scales).index(start)
    return figure(sweep, labels, stop_labels, first, title, "; ".join(left_out)), sweep


def table(sweep, labels):
    """Every stop's weights in one long table: scale, query, key, raw and scaled score, weight."""
    n_s, n_q, n_k = sweep.weights.shape
    labels = list(labels)
    return pd.DataFrame(
        {
            "scale": np.repeat(sweep.scales, n_q * n_k),
            "query": np.tile(np.repeat(np.arange(n_q), n_k), n_s),
            "query token": np.tile(np.repeat(labels, n_k), n_s),
            "key": np.tile(np.arange(n_k), n_s * n_q),
            "key token": np.tile(labels, n_s * n_q),
            "raw score": np.tile(sweep.scores.ravel(), n_s),
            "scaled score": sweep.scaled.ravel(),
            "weight": sweep.weights.ravel(),
        }
    )
