"""One style for every figure: colour scales, a title at the left, margins, colour bars.

Weights are on a fixed 0–1 sequential scale (Viridis); scores, Q, K, V and outputs on a
diverging scale centred at 0 (RdBu). Both stay readable with the common colour-vision
deficiencies. Titles start at the left edge; margins are 10 px but at the top, where the
title is (a second title line, in ``<sup>``, needs :data:`NOTE_TOP`).
"""

from __future__ import annotations

import functools
import math
import re

import numpy as np
import plotly.graph_objects as go
from plotly.colors import convert_colors_to_same_type, get_colorscale

WEIGHTS_SCALE = "Viridis"
DIVERGING_SCALE = "RdBu_r"
MASK_SCALE = [[0.0, "#d9d9d9"], [1.0, "#2c7bb6"]]
#: Bars compared side by side: a baseline in grey, then the one to look at in red.
COMPARE_COLORS = ("#9aa0a6", "#d62728", "#1f77b4")
#: A colour bar beside a heatmap.
COLORBAR = {"thickness": 12}
#: The top margin of a figure whose title has a second line (:func:`with_note`).
NOTE_TOP = 75
#: The name of the invisible trace that gives a scores heatmap's masked cells their hover
#: (:mod:`app.views.attention_maps`): part of its heatmap, for the print layout too.
MASKED_OVERLAY = "masked"
#: The name of the clear trace that writes a heatmap's numbers in black over its cells
#: (:func:`app.views.heatmap.write_legibly`): part of its heatmap, for the print layout too.
TEXT_OVERLAY = "black text"


def layout(title=None, height=None, *, top=50, bottom=10, left=10, right=10, **more):
    """A figure's layout: the title at the left, the height, the margins, and ``more``."""
    out = {"margin": {"l": left, "r": right, "t": top, "b": bottom}}
    if title is not None:
        out["title"] = {"text": title, "x": 0.0}
    if height is not None:
        out["height"] = height
    return out | more


def frame(fig, title=None, height=None, **options):
    """Lay ``fig`` out in place with :func:`layout`'s title, height and margins; return it."""
    fig.update_layout(**layout(title, height, **options))
    return fig


def framed(data, title=None, height=None, **options):
    """A figure of ``data`` (traces) laid out as :func:`frame` lays one out, built at once.

    plotly.py's ``update_layout`` costs 4-5 ms a call (its property paths, validated one
    by one); a layout given to the figure when it is made, about a quarter of that.
    """
    return go.Figure(data, layout(title, height, **options))


#: The space a line is not broken at.
NO_BREAK = "\u00a0"
#: A space before a number (its sign too), which a note writes as :data:`NO_BREAK`.
_BEFORE_NUMBER = re.compile(r" (?=[±−+-]?\d)")


def with_note(title, note):
    """A title with a second, smaller line (leave :data:`NOTE_TOP` of room above the plot).

    Each number in the note stays on one line with the word before it (a no-break space):
    the chart component wraps a title at its spaces on a narrow screen, and on a phone
    "|max|" ended one line and its 9.66 began the next.
    """
    return f"{title}<br><sup>{_BEFORE_NUMBER.sub(NO_BREAK, note)}</sup>"


@functools.cache
def _scale_stops(colorscale):
    """A Plotly colour scale (a name, or its stops) as its positions and colours (RGB in [0, 1])."""
    scale = get_colorscale(colorscale) if isinstance(colorscale, str) else colorscale
    colors, _ = convert_colors_to_same_type([color for _, color in scale], "tuple")
    return np.array([float(position) for position, _ in scale]), np.array(colors)


def scale_rgb(values, colorscale=WEIGHTS_SCALE):
    """The colours of ``values`` in [0, 1] on ``colorscale``: RGB in [0, 1], shape (..., 3).

    Linear between the scale's stops in sRGB, as plotly.js colours a heatmap's cells and
    plotly's ``sample_colorscale`` one colour at a time; NaN is taken as 0, values outside
    [0, 1] as the nearer end. ``colorscale`` is a name or a list of stops (a trace's own).
    """
    values = np.clip(np.nan_to_num(np.asarray(values, dtype=float), nan=0.0), 0.0, 1.0)
    if not isinstance(colorscale, str):  # remembered by its stops: a list is made a tuple
        colorscale = tuple(tuple(stop) for stop in colorscale)
    positions, colors = _scale_stops(colorscale)
    return np.stack([np.interp(values, positions, colors[:, c]) for c in range(3)], axis=-1)


def luminance(rgb):
    """WCAG 2's relative luminance of sRGB colours in [0, 1], shape (..., 3) -> (...)."""
    rgb = np.asarray(rgb, dtype=float)
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


def weight_colors(weights):
    """Bar colours for weights in [0, 1] on the weights scale, as CSS colour strings.

    Computed here rather than sent as numbers with a colour scale: the plotly.js in
    Streamlit (4.2) draws numeric bar colours right but logs a stack trace per bar and
    redraw, which costs more than the chart itself. Interpolated with NumPy (:func:`scale_rgb`),
    as plotly's ``sample_colorscale`` does it one colour at a time (under 1 ms for 512 bars,
    not 170 ms).
    """
    rgb = np.round(255 * scale_rgb(weights)).astype(int)
    return [f"rgb({r}, {g}, {b})" for r, g, b in rgb.tolist()]


#: A colour bar labelled from the frames has at most this many ticks either side of 0.
MAX_TICKS = 5


def colorbar_ticks(limit):
    """The ticks of a colour bar spanning ± ``limit``: values a round step apart, and labels.

    The step is 1, 2 or 5 times a power of ten, the smallest that leaves at most
    :data:`MAX_TICKS` ticks on each side of 0. The browser puts them on the colour bar of
    a heatmap it recolours from the frames, while the slider moves and in the figure of
    the stop it draws, so the bar's numbers always match the colours (scores grow with
    the scale: ± 8 at 1/√32 are ± 50,000 at 1024).

    Returns
    -------
    list of two lists: the values (float) and their labels (str, − for minus, k for
    thousands from 10,000)
    """
    if not limit > 0:
        return [[0.0], ["0"]]
    power = 10.0 ** math.floor(math.log10(limit / MAX_TICKS))
    step = next(m * power for m in (1, 2, 5, 10) if limit / (m * power) <= MAX_TICKS)
    count = math.floor(limit / step * (1 + 1e-9))
    values = [float(f"{k * step:.12g}") for k in range(-count, count + 1)]
    return [values, [_tick_label(v) for v in values]]


def _tick_label(value):
    text = f"{value / 1000:g}k" if abs(value) >= 10_000 else f"{value:g}"
    return text.replace("-", "−")
