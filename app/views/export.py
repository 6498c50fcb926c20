"""Figures laid out for print: a size from the token count, tick labels that never overlap.

On screen a chart takes the width of its column; an exported PNG or SVG goes on a
slide or into a paper, at :data:`EXPORT_SCALE` times the size given here. So the export
gets a layout of its own: each heatmap cell a fixed size chosen from the number of
tokens, labels in a font that stays legible at that scale, every label shown while
they fit and every k-th one (stated in the axis title) when they would touch.
:func:`print_layout` returns that layout as overrides the chart component merges into
the figure when, and only when, it exports.
"""

from __future__ import annotations

from app.views import axes, style

#: The toolbar's images are this many times the size :func:`print_layout` gives.
EXPORT_SCALE = 3
#: Font size of the exported figure, in CSS pixels before the export scale: 14 px at 3×
#: is 42 px, about 10 pt on a figure printed 14 cm wide.
PRINT_FONT = 14
#: Neighbouring tick labels need at least this many font sizes between their centres.
LABEL_PITCH = axes.LABEL_PITCH
#: Average advance of a character in Plotly's default font, in font sizes.
CHAR_WIDTH = axes.CHAR_WIDTH
#: The plot area of a heatmap aims at this many pixels a side …
TARGET_SIDE = 900
#: … with cells no smaller and no larger than these.
CELL_MIN, CELL_MAX = 2, 36
#: Figures that are not one heatmap (bars, curves, panels) export at this size, or at
#: their own height when that is larger.
PLAIN_SIZE = (1600, 700)


def label_step(cell, font=PRINT_FONT):
    """Show every k-th category label so that shown labels are ``LABEL_PITCH`` fonts apart."""
    return axes.label_step(cell, font)


def _text_width(labels, font):
    return CHAR_WIDTH * font * max((len(str(label)) for label in labels), default=1)


def _axis(categories, step, title, font):
    shown = list(categories)[::step]
    return {
        "tickmode": "array",
        "tickvals": shown,
        "ticktext": shown,
        "tickfont": {"size": font},  # not the screen's, which shrinks with the count
        "automargin": True,  # the title goes beyond the labels; our margins are the floor
        "title": {"text": axes.titled(title, step)},
    }, shown


def _cell(n):
    return min(max(TARGET_SIDE / n, CELL_MIN), CELL_MAX)


def _heatmap_layout(trace, layout, font):
    n_rows, n_cols = len(trace.y), len(trace.x)
    cell_x, cell_y = _cell(n_cols), _cell(n_rows)  # tokens × features need not be square
    x_title = layout.xaxis.title.text if layout.xaxis.title else ""
    y_title = layout.yaxis.title.text if layout.yaxis.title else ""
    xaxis, x_shown = _axis(trace.x, label_step(cell_x, font), x_title, font)
    yaxis, y_shown = _axis(trace.y, label_step(cell_y, font), y_title, font)
    xaxis["tickangle"] = -90
    title_room = 2.2 * font  # the axis title beside its tick labels
    margin = {
        "l": round(20 + _text_width(y_shown, font) + title_room),
        "b": round(20 + _text_width(x_shown, font) + title_room),
        "t": round(30 + 2.5 * font),
        "r": 110,  # the colour bar and its numbers
    }
    return {
        "width": round(margin["l"] + n_cols * cell_x + margin["r"]),
        "height": round(margin["t"] + n_rows * cell_y + margin["b"]),
        "margin": margin,
        "xaxis": xaxis,
        "yaxis": yaxis,
    }


def print_layout(fig, font=PRINT_FONT):
    """Layout overrides that make ``fig`` fit for a slide or a paper when exported.

    A figure with one heatmap of token labels is sized from its number of rows and
    columns; any other figure gets :data:`PLAIN_SIZE` (or its own height, if larger)
    and the print font.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
    font : float, the font size in pixels before :data:`EXPORT_SCALE`

    Returns
    -------
    dict, a partial Plotly layout: width, height, font, and for a heatmap the margins
    and both axes' tick labels
    """
    # The masked cells' invisible hover trace and the black numbers' clear one are part of
    # their heatmap, not others.
    overlays = (style.MASKED_OVERLAY, style.TEXT_OVERLAY)
    drawn = [trace for trace in fig.data if trace.name not in overlays]
    heatmaps = [trace for trace in drawn if trace.type == "heatmap"]
    overrides = {"font": {"size": font}}
    if (
        len(drawn) == 1
        and len(heatmaps) == 1
        and heatmaps[0].x is not None
        and heatmaps[0].y is not None
    ):
        return overrides | _heatmap_layout(heatmaps[0], fig.layout, font)
    width, height = PLAIN_SIZE
    height = max(height, fig.layout.height or 0)
    return overrides | axes.fitted(fig, width, height, font) | {"width": width, "height": height}
