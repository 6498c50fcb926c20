"""Token axes: which tick labels a chart draws, at what size, and where.

One rule for every chart with a token on each row or column, on screen, in presentation
mode and in print (:mod:`app.views.export`):

- every label sits on its own token's tick: the ticks are explicit (``tickvals``
  computed here), never plotly.js's automatic thinning, which picks a different spacing
  per chart and per redraw and, under slanted labels, left the largest bars of a chart
  under their neighbours' names;
- up to :data:`FULL_LABELS_MAX` tokens every label is drawn, in a smaller font as the
  tokens get more (down to :data:`SCREEN_MIN_FONT`);
- past that, or when the room the axis has (known in presentation mode and in print)
  cannot hold every label at the smallest font the mode allows, one label in k is drawn,
  k as small as fits, and the axis title says "one label in k".

A numbered axis (features f0, f1 …, positions 0, 1 …) is not a token axis: every label
need not be drawn, since the numbers say where the others are, so while the room is
unknown (on screen) it draws at most :data:`NUMBERED_LABELS_MAX` labels, one in a power
of two (f0, f4, f8 … of 32 features in a third of the page, which drawn all ran into a
smear).

Repeated tokens keep their own rows and columns: :func:`axis_labels` makes
each category distinct (invisible zero-width spaces), so two "the" are two ticks.
"""

from __future__ import annotations

import html
import math
import re

#: A token label longer than this is clipped, with an ellipsis.
LABEL_MAX_CHARS = 18
_ZERO_WIDTH = "\u200b"
#: Column labels stay level while they fit side by side, else they stand upright, each
#: centred on its own column (a slanted label ends under its neighbour's column).
TICK_ANGLES = [0, -90]
#: Up to this many tokens an axis labels every one of them on screen.
FULL_LABELS_MAX = 64
#: Neighbouring labels' centres at least this many font sizes apart: a label's box is 1.3 to
#: 1.4 fonts tall in Chromium.
LABEL_PITCH = 1.4
#: Average advance of a character in Plotly's default font, in font sizes.
CHAR_WIDTH = 0.62
#: Tick labels on screen: this size when there is room, shrinking to the minimum.
SCREEN_FONT, SCREEN_MIN_FONT = 12, 8
#: The pixels a token axis is taken to span on screen when the server cannot know it: a
#: chart in half of a desktop page (the browser, not the server, knows the width).
SCREEN_ROOM = 420
#: The pixels a chart as wide as a desktop page spans (its panels share them).
PAGE_WIDTH = 2 * SCREEN_ROOM
#: The smallest label a projector shows (presentation mode).
PRESENT_MIN_FONT = 16
_NOTE = re.compile(r"\s*\(?one label in \d+\)?$")
#: A numbered axis whose room is unknown draws at most this many labels.
NUMBERED_LABELS_MAX = 8
_NUMBERED = re.compile(r"f?\d+")


def axis_labels(labels):
    """Token labels safe and distinct as Plotly categories.

    Plotly merges equal category names and reads a little HTML in labels. So each
    label is clipped, HTML-escaped (user text never becomes markup), and a repeated
    label gets invisible zero-width spaces appended to keep its own row and column.
    """
    seen = {}
    out = []
    for label in labels:
        text = str(label) or " "
        if len(text) > LABEL_MAX_CHARS:
            text = text[: LABEL_MAX_CHARS - 1] + "…"
        text = html.escape(text, quote=False)
        count = seen.get(text, 0)
        seen[text] = count + 1
        out.append(text + _ZERO_WIDTH * count)
    return out


def label_step(pitch, font):
    """Draw one label in this many so that drawn labels are ``LABEL_PITCH`` fonts apart.

    Parameters
    ----------
    pitch : float, pixels from one token's tick to the next
    font : float, the labels' font size in pixels
    """
    return max(1, math.ceil(LABEL_PITCH * font / pitch - 1e-9))


def choose(n, room=None, font=SCREEN_FONT, min_font=SCREEN_MIN_FONT):
    """The label step and font size for ``n`` tokens along ``room`` pixels.

    Without ``room`` (on screen, where the browser decides the width) every label is
    drawn up to :data:`FULL_LABELS_MAX` tokens, in a font that shrinks with the count as
    if the axis spanned :data:`SCREEN_ROOM`; past that, one in ``ceil(n / 64)``. With
    ``room`` the font shrinks from ``font`` to ``min_font`` to fit, and below that the
    labels are thinned; never more than :data:`FULL_LABELS_MAX` are drawn.

    Returns
    -------
    step : int, one label in ``step`` is drawn (1: every label)
    size : float, the labels' font size in pixels
    """
    n = max(int(n), 1)
    least = math.ceil(n / FULL_LABELS_MAX)
    pitch = (SCREEN_ROOM if room is None else max(room, 1.0)) / min(n, FULL_LABELS_MAX * 1.0)
    size = min(font, max(min_font, pitch / LABEL_PITCH))
    if room is None:
        return least, size
    return max(least, label_step(room / n, size)), size


def numbered(categories):
    """Whether an axis's categories are the numbers 0, 1, 2 … or f0, f1, f2 … in order."""
    numbers = [c[c.startswith("f") :] for c in categories if _NUMBERED.fullmatch(c)]
    return len(numbers) == len(categories) > 1 and all(
        int(number) == i for i, number in enumerate(numbers)
    )


def numbered_step(n):
    """One label in this many on a numbered axis of ``n``: a power of two, few enough labels.

    At most :data:`NUMBERED_LABELS_MAX` labels are drawn.
    """
    return 1 << max(0, math.ceil(math.log2(max(n, 1) / NUMBERED_LABELS_MAX)))


def titled(title, step):
    """An axis title with the thinning said: "key (one label in 3)"; as it was at step 1."""
    title = _NOTE.sub("", title or "")
    if step == 1:
        return title
    return f"{title} (one label in {step})" if title else f"one label in {step}"


def token_axis(categories, title="", room=None, font=SCREEN_FONT, min_font=SCREEN_MIN_FONT):
    """A Plotly axis of token categories with explicit ticks, every ``step``-th labelled.

    ``categoryarray`` holds every token in order (it marks the axis as a token axis, so
    :func:`fit` can lay it out again); ``tickvals`` the labelled ones, each its own
    category, the first token first, written as it is named (no ``ticktext``: the names
    are not sent twice).

    Parameters
    ----------
    categories : sequence of str, distinct (:func:`axis_labels`)
    title : str or None, the axis title without the thinning note; None for an axis that
        has no title, not even the note (a panel whose neighbour's title speaks for it)
    room, font, min_font : as :func:`choose` takes them

    Returns
    -------
    dict, Plotly axis properties
    """
    categories = list(categories)
    step, size = choose(len(categories), room, font, min_font)
    if room is None and numbered(categories):
        step = max(step, numbered_step(len(categories)))
    shown = categories[::step]
    return {
        "type": "category",
        "categoryorder": "array",
        "categoryarray": categories,
        "tickmode": "array",
        "tickvals": shown,  # each drawn as its category's name
        "tickfont": {"size": round(size, 1)},
        "showgrid": False,  # a line through every bar, under every label, says nothing
        "title": {"text": None if title is None else titled(title, step)},
    }


def column_labels(categories, room=None, font=SCREEN_FONT, min_font=SCREEN_MIN_FONT):
    """Token labels written as text beside markers (the line view's two columns).

    Returns
    -------
    shown : list of str, every ``step``-th label and blanks between
    step : int
    size : float, the font size
    """
    step, size = choose(len(categories), room, font, min_font)
    return [c if i % step == 0 else "" for i, c in enumerate(categories)], step, size


def text_width(labels, font):
    """The width in pixels of the longest label at ``font``, estimated."""
    longest = max((len(str(label).rstrip("\u200b")) for label in labels), default=1)
    return CHAR_WIDTH * font * longest


def token_axes(layout, drawn=True):
    """The names of the layout's token axes (``xaxis``, ``yaxis2`` …) with their categories.

    ``drawn``: only those that draw their labels (a panel sharing its neighbour's does not).
    """
    found = {}
    for name in layout:
        if re.fullmatch(r"[xy]axis\d*", name):
            axis = layout[name]
            if axis.categoryarray is not None and (axis.showticklabels is not False or not drawn):
                found[name] = list(axis.categoryarray)
    return found


def fitted(fig, width, height, font=PRESENT_MIN_FONT, min_font=None):
    """Every token axis of ``fig`` laid out for a figure ``width`` × ``height`` pixels.

    Labels are written at ``font``, smaller down to ``min_font`` where the room along
    their axis needs it, and thinned when even that cannot hold them all: that room is
    the axis's share of the figure (its domain) less what the other axis's labels, the
    title and a colour bar take.

    Parameters
    ----------
    fig : plotly Figure
    width, height : float, the figure's size in pixels
    font : float
    min_font : float, optional; ``font`` by default (labels keep their size)

    Returns
    -------
    dict of axis name (``xaxis``, ``yaxis2`` …) to Plotly axis properties
    """
    axes = token_axes(fig.layout)
    widest = {name[0]: text_width(labels, font) for name, labels in axes.items()}
    out = {}
    for name, categories in axes.items():
        axis = fig.layout[name]
        low, high = axis.domain if axis.domain else (0.0, 1.0)
        if name.startswith("x"):
            room = (width - widest.get("y", 0.0) - 140) * (high - low)
        else:
            room = (height - widest.get("x", 0.0) - 130) * (high - low)
        out[name] = token_axis(categories, axis.title.text, room, font, min_font or font)
    for name in token_axes(fig.layout, drawn=False).keys() - axes.keys():
        out[name] = {"tickfont": {"size": font}}  # not drawn: the size of those that are
    return out


def fit(fig, width, height, font=PRESENT_MIN_FONT, min_font=None):
    """Lay ``fig``'s token axes and line-view columns out again, in place (:func:`fitted`)."""
    if fig.layout.meta == LINE_VIEW:
        _fit_columns(fig, height, font, min_font or font)
    fig.update_layout(fitted(fig, width, height, font, min_font))


#: ``layout.meta`` of a line view (:func:`app.views.line_view.figure`), whose tokens are
#: text in its first two traces, not axis labels.
LINE_VIEW = "line-view"


def _fit_columns(fig, height, font, min_font):
    """The line view's token columns again, for a figure ``height`` pixels tall."""
    categories = list(fig.data[0].hovertext)
    room = height - 170  # its title and the heads' legend under it
    shown, step, size = column_labels(categories, room, font, min_font)
    fig.update_traces(text=shown, textfont_size=size, selector={"mode": "markers+text"})
    first, _, rest = fig.layout.title.text.partition("<br>")
    fig.layout.title.text = titled(first, step) + (f"<br>{rest}" if rest else "")
