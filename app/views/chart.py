"""How every figure reaches the screen: the chart component, export, CSV, presentation layout.

One place decides what a chart's toolbar exports (PNG or SVG at print resolution, with
a file name that says the page and the settings), offers its data as CSV, and how a
figure is laid out in presentation mode (``?present=1``): large type, the width of the
screen, the height below the presenter bar (:mod:`app.lecture.presentation`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import streamlit as st

import attention_explorer
from app.data import cache
from app.state import session
from app.views import axes, export

#: Presentation mode's type: titles, legends, numbers, and token labels where they fit
#: (else smaller, down to :data:`app.views.axes.PRESENT_MIN_FONT`, then thinned). A title's
#: second line (``<sup>``) is written at this size too, not at plotly.js's 70 %.
PRESENT_FONT = 20
#: Presentation mode gives a heatmap's labelled rows this many pixels each, up to the
#: height of the screen below the presenter bar (:func:`present_height`).
PRESENT_ROW = 24
PRESENT_MAX_ROWS = 64
#: Room above the plot, in presentation mode, of a titled figure with an x axis on top (a
#: long text's tiles): a two-line title, then the axis's title and tick labels,
#: all at :data:`PRESENT_FONT`; the desktop's margin would put the axis over the title.
PRESENT_TOP_AXIS = 150
#: Room above the plot, in presentation mode, of a figure whose title has a second line
#: (:func:`app.views.style.with_note`): both lines at :data:`PRESENT_FONT` from the top, and
#: a gap; the desktop's :data:`app.views.style.NOTE_TOP` would put the note on the plot.
PRESENT_NOTE_TOP = 115
#: The presenter bar's height in pixels: figures fit the screen below it.
PRESENTER_BAR = 76
#: The room a slide's title takes above its first figure, in pixels: the page's padding
#: below the bar, the title's line at 40 px and the gap after it
#: (:mod:`app.lecture.presentation`), so title and figure share the first screen.
PRESENT_TITLE = 100
#: ``layout.meta`` of a figure drawn to scale (x and y share one scale), as tall as what it
#: draws: in presentation mode it keeps the height its builder laid it out with for its
#: room (:func:`present_room`), and the browser cuts any height below what it draws at the
#: width it has (the chart component's narrow.js), which the server cannot know. The model
#: view's grid (:mod:`app.views.model_view`).
TO_SCALE = "to-scale"
#: A figure in presentation mode is the window's width less this many pixels: the page's
#: padding (2rem) and the chart element's own, both sides together, as Chromium draws them.
PRESENT_SIDES = 88


def labelled_rows(fig):
    """The most rows with a label each in any heatmap of ``fig``, up to the cap.

    Only labels count: a heatmap over an image's pixels (numeric rows) has none.
    """
    rows = (
        len(t.y)
        for t in fig.data
        if t.type == "heatmap" and t.y is not None and len(t.y) and isinstance(t.y[0], str)
    )
    return min(max(rows, default=0), PRESENT_MAX_ROWS)


def present_room():
    """The (width, height) in pixels a figure may take in presentation mode.

    As wide as the page, and no taller than the screen below the presenter bar and the
    slide's title (the first figure shares the first screen with it).
    """
    width, height = session.viewport()
    return width - PRESENT_SIDES, height - PRESENTER_BAR - PRESENT_TITLE


def present_height(fig):
    """A figure's height in presentation mode: large type's room, within the screen.

    A heatmap's labelled rows get :data:`PRESENT_ROW` pixels each, but no figure is taller
    than its room (:func:`present_room`): its labels are thinned instead (the rule of
    :mod:`app.views.axes`). A figure drawn to scale (:data:`TO_SCALE`) keeps its own
    height, within the room: more would be blank under it.
    """
    room = present_room()[1]
    if fig.layout.meta == TO_SCALE:
        return int(min(room, fig.layout.height or room))
    return int(min(room, max(fig.layout.height or 0, 560, PRESENT_ROW * labelled_rows(fig) + 240)))


def presentation_layout(fig):
    """Lay ``fig`` out for a projector, in place: large type, the screen's size, its labels.

    Every figure is as wide as the page (presentation mode stacks the columns that hold
    charts) and fits the screen's height; token axes and the line view's columns write
    their labels at :data:`PRESENT_FONT` where they fit, smaller down to
    :data:`app.views.axes.PRESENT_MIN_FONT`, and thinned when even that would touch.
    """
    fig.update_layout(
        font={"size": PRESENT_FONT}, template="simple_white", height=present_height(fig)
    )
    if fig.layout.title.text:
        fig.layout.title.text = _full_size(fig.layout.title.text)
    top_axis = any(axis.side == "top" for axis in fig.select_xaxes())
    if top_axis and fig.layout.title.text:  # the title at the very top, the axis under it
        fig.layout.margin.t = max(fig.layout.margin.t or 0, PRESENT_TOP_AXIS)
        fig.update_layout(title={"yref": "container", "y": 1, "yanchor": "top", "pad_t": 30})
    elif "<br>" in (fig.layout.title.text or ""):  # two lines from the top, the plot under them
        fig.layout.margin.t = max(fig.layout.margin.t or 0, PRESENT_NOTE_TOP)
        fig.update_layout(title={"yref": "container", "y": 1, "yanchor": "top", "pad_t": 30})
    # A table's rows keep their height whatever the font: make room for the large type.
    fig.update_traces(
        cells_height=PRESENT_FONT + 12,
        header_height=PRESENT_FONT + 14,
        selector={"type": "table"},
    )
    for trace in fig.data:  # text in cells written small for a desktop's narrow columns
        size = trace.textfont.size if "textfont" in trace else None
        if isinstance(size, int | float) and size < axes.PRESENT_MIN_FONT:
            trace.textfont.size = axes.PRESENT_MIN_FONT
    # Token labels at the type's size where they fit, as small as the minimum where not.
    axes.fit(fig, present_room()[0], fig.layout.height, PRESENT_FONT, axes.PRESENT_MIN_FONT)


def _full_size(title):
    """A title with its second line at the title's size: plotly.js writes ``<sup>`` at 70 %."""
    return title.replace("<sup>", "").replace("</sup>", "")


#: A figure over more array bytes than this is built each time, not remembered: hashing its
#: arrays would cost more, and its JSON (MBs past ~300 tokens, new at every stop there)
#: would crowd the engine's results out of the shared memory budget.
REMEMBER_MAX_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Remembered:
    """A figure to build when it is drawn, named by its builder and the content of its arguments.

    Made by :func:`remembered`. Figure builders are pure functions of data, so the figure
    drawn (its JSON, as the page lays it out) is kept in the shared store under that name,
    and the next run that draws the same figure, in any session, sends it without building
    it: on a head switch the charts drawn at the reference head, for instance.
    """

    build: Callable
    args: tuple
    kwargs: dict = field(default_factory=dict)

    def name(self):
        """The builder's dotted name and its arguments' digest (:func:`app.data.cache.digest`)."""
        return f"{self.build.__module__}.{self.build.__qualname__}", cache.digest(
            (self.args, self.kwargs)
        )


def remembered(build, *args, **kwargs):
    """``build(*args, **kwargs)``, built only if :func:`draw` has not drawn it before.

    ``build`` must be a module-level function whose figure depends on its arguments alone
    (they are data: arrays, strings, numbers and containers of them).
    """
    if "<" in build.__qualname__:  # a lambda or a closure: its figure may depend on more
        raise ValueError(f"{build.__qualname__} is not a module-level figure builder")
    return Remembered(build, args, kwargs)


def _laid_out(fig):
    """``fig`` as the page draws it: its JSON without plotly.py's template, and its print size."""
    fig.layout.template = None  # plotly.py's default template is 6 KB per chart; the JS themes
    if session.presenting():
        presentation_layout(fig)
    return fig.to_json(), export.print_layout(fig)


@cache.bounded
def _remembered_figure(name, screen, _figure):
    """A remembered figure's JSON and print size, laid out for ``screen`` (None: the desktop)."""
    return _laid_out(_figure.build(*_figure.args, **_figure.kwargs))


def _drawn(fig):
    """``fig`` (a Figure or :class:`Remembered`) as JSON, and its print size."""
    if not isinstance(fig, Remembered):
        return _laid_out(fig)
    if cache.nbytes((fig.args, fig.kwargs)) > REMEMBER_MAX_BYTES:
        return _laid_out(fig.build(*fig.args, **fig.kwargs))
    screen = session.viewport() if session.presenting() else None
    spec, printed = _remembered_figure(fig.name(), screen, fig)
    return spec, dict(printed)


def settings_slug(values, scale=None, head=None):
    """The settings that shape a figure, as a short file-name-safe string.

    ``scale`` replaces the scale's own text: a chart drawn from the scale's frames gets
    ``"{scale}"``, which the browser fills in with the stop it shows; ``""`` leaves the
    scale out. ``head`` replaces the head's number the same way (``"{head}"``).
    """
    scale = f"{values['scale']:.4g}" if scale is None else scale
    head = values["head"] if head is None else head
    tail = f"{f'-s{scale}' if scale else ''}-{'causal' if values['causal'] else 'full'}"
    if values["weights"] != "random":  # a trained model: minilm-l3-h1, smollm2-l22-h0
        return f"{values['weights']}-l{values['layer']}-h{head}{tail}"
    return f"d{values['d_model']}-h{values['heads']}{tail}-pe_{values['pe']}-seed{values['seed']}"


def token_file_name(position, label, prefix="q"):
    """A token as a file name says it: ``q11-it`` (position and text, file-name safe)."""
    word = re.sub(r"[^A-Za-z0-9]+", "_", str(label)).strip("_")
    return f"{prefix}{position}-{word}" if word else f"{prefix}{position}"


def draw(container, fig, key, table=None, *, live=None, clicks=False, shapes=None, about=None):
    """Draw ``fig`` in ``container`` with export set up; offer ``table`` as CSV.

    Every chart goes through the app's chart component (:mod:`attention_explorer`), which
    keeps it mounted by ``key`` and updates it in place. ``key`` also starts the exported
    file names.

    Parameters
    ----------
    container : a Streamlit container (``st``, a column, ...)
    fig : plotly Figure, or :func:`remembered` (a figure built only if not drawn before)
    key : str
    table : DataFrame or callable returning one, optional
        The engine's numbers behind the chart, with full token labels: its CSV button
        writes them at full precision (not the figure's float32 copy). No button without.
        A callable builds them when the button is clicked (outside the script thread):
        a chart drawn from the scale's frames passes one that reads the stop shown then,
        and its button is in a fragment of its own (:func:`csv_fragment`), which a
        release of the slider reruns, so that its file name says the stop.
    live : dict, optional
        Which traces follow the scale's frames while the slider moves
        (:func:`app.live.protocol.follow`).
    clicks : bool
        Report clicked cells; the return value is then the last click.
    shapes : list of dict, optional
        Layout shapes the browser draws over ``fig``, sent apart from it (an element of
        height 0, before the chart): a figure the same in every run but for them stays
        the same data, which Streamlit resends as a reference.
    about : str, optional
        What the figure shows beyond the settings, for its file names (the query token
        of a row of weights: :func:`token_file_name`).

    Returns
    -------
    dict or None
        ``{"trace", "row", "col"}`` of a cell clicked since the last run, else None.
    """
    values, stem = session.current(), session.file_stem()
    # A chart drawn from the scale's frames sends the same data at every stop and head:
    # the browser names the stop and head it shows (a chart of the head alone, the head).
    drawn = live is not None and "drawn" in live
    stopless = drawn and live.get("stopless", False)
    shown = ("" if stopless else "{scale}") if drawn else None
    named = f"attention-explorer_{key}_{about}" if about else f"attention-explorer_{key}"
    slug = settings_slug(values, shown, "{head}" if drawn else None)
    figure_name = f"{named}_{stem or slug}"
    spec, printed = _drawn(fig)
    if live and "title" in live and session.presenting():
        live["title"] = _full_size(live["title"])
    config = {  # the camera's (plotly.js's own config is the chart component's)
        "toImageButtonOptions": {
            "format": st.session_state.get("export_format", "png"),
            "filename": figure_name,
            "scale": export.EXPORT_SCALE,
            "width": printed["width"],
            "height": printed["height"],
        },
    }
    payload = {"key": key, "spec": spec, "config": config, "print": printed, "clicks": clicks}
    if live is not None:
        payload["live"] = live
    with _inside(container):
        if shapes is not None:
            data = {"kind": "shapes", "chart": key, "shapes": shapes}
            attention_explorer.chart(key=f"{key}_shapes", data=data, height=0)
        result = attention_explorer.chart(key=key, data=payload, on_click_change=_ignore)
    if table is not None and not session.presenting():
        if drawn and not stopless:  # its name follows the stop: a fragment a release reruns
            with _inside(container):
                st.fragment(_csv_button, key=csv_fragment(key))(st, key, named, table)
        else:
            _csv_button(container, key, named, table, scale="" if stopless else None)
    return result.click


def csv_fragment(key):
    """The key of the fragment that holds chart ``key``'s CSV button when it follows the scale.

    The button's file name is fixed when it is drawn and names the stop chosen: a release
    of the scale reruns the slider's fragment and these (:mod:`app.live.section`).
    """
    return f"{key}_csv_name"


def _csv_button(container, key, named, table, scale=None):
    """The CSV button of chart ``key``, its file name the settings now.

    ``scale`` as :func:`settings_slug` takes it (None: the scale chosen).
    """
    stem = session.file_stem() or settings_slug(session.current(), scale)
    container.download_button(
        "CSV",
        data=lambda: to_csv(table() if callable(table) else table),
        file_name=f"{named}_{stem}.csv",
        mime="text/csv",
        key=f"{key}_csv",
        on_click="ignore",
        type="tertiary",
        icon=":material/download:",
    )


def _ignore():
    """Clicks are read from the component's return value; the callback only registers them."""


def _inside(container):
    """A context that places elements in ``container`` (``st`` itself places them in order)."""
    return contextlib.nullcontext() if container is st else container


def to_csv(table):
    """A table as CSV at full precision (the engine's float64); masked (−∞) cells empty.

    Rows or columns named by tokens that repeat (two "the") are each named with their
    position too, as the token pickers name them ("4: the", the table's row or column
    number), so that no two rows or columns share a name.
    """
    table = table.replace(-np.inf, np.nan)
    if table.index.has_duplicates:
        table.index = _numbered(table.index)
    if table.columns.has_duplicates:
        table.columns = _numbered(table.columns)
    return table.to_csv()


def _numbered(names):
    """An index's names, each after its position ("0: the", "1: cat" and so on)."""
    return pd.Index([f"{i}: {name}" for i, name in enumerate(names)], name=names.name)
