"""How every figure reaches the screen, and the lecture features around it.

One place decides what a chart's toolbar exports (PNG or SVG at print resolution, with
a file name that says the page and the settings), offers its data as CSV, and how
presentation mode (``?present=1``) looks: large type, one figure to a screen, each
fitting the projector's screen below a presenter bar (the page's query token, the layer
and the head), no other controls but the scale slider, and no text that points at the
hidden ones (:func:`control_hint`).
"""

from __future__ import annotations

import contextlib

import streamlit as st

import attention_explorer
from app import axes, equations, export, state, tables

EXPORT_FORMATS = ("png", "svg")
#: Presentation mode's type: titles, legends and numbers; tick labels are at least
#: :data:`app.axes.PRESENT_MIN_FONT`. A title's second line (``<sup>``) is written at
#: this size too, not at plotly.js's 70 %.
PRESENT_FONT = 20
#: Presentation mode gives a heatmap's labelled rows this many pixels each, up to the
#: height of the screen below the presenter bar (:func:`present_height`).
PRESENT_ROW = 24
PRESENT_MAX_ROWS = 64
#: The presenter bar's height in pixels: figures fit the screen below it.
PRESENTER_BAR = 76
#: The screen assumed until the browser has said its size: the smallest projector's.
DEFAULT_VIEWPORT = (1280, 720)
#: The key of the element that reports the browser's size, in presentation mode.
VIEWPORT = "presenter_viewport"

#: Presentation mode: hide the sidebar, the header and every input; keep figures, text,
#: and the presenter bar, fixed at the top: the button that leaves the mode, the layer and
#: the head (``st-key-presenter``), and the page's query token (``st-key-presenter_query``,
#: wherever the page draws it). The attention page's scale slider stays, sized for a
#: projector: dragging it to watch softmax saturate is the page's demonstration. Columns
#: that hold charts are stacked, one figure to the screen's width. Our own CSS, with no
#: user text in it.
_PRESENT_CSS = """
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stHeader"], [data-testid="stToolbar"],
.stSlider, .stSelectbox, .stMultiSelect, .stTextInput, .stTextArea, .stNumberInput, .stCheckbox,
.stDownloadButton, [data-testid="stButtonGroup"], .stPopover, .stExpander,
[data-testid="stDataFrame"] { display: none !important; }
.block-container { max-width: 100% !important; padding: 92px 2rem 1rem !important; }
html, body, [data-testid="stMarkdownContainer"] p { font-size: 22px; }
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p { font-size: 18px; }
[data-testid="stHorizontalBlock"]:has(.stBidiComponent) { flex-direction: column !important; }
[data-testid="stHorizontalBlock"]:has(.stBidiComponent) > [data-testid="stColumn"] {
  width: 100% !important; flex: 1 1 auto !important;
}
.st-key-presenter {
  position: fixed; top: 0; left: 0; right: 0; z-index: 999990; height: 76px;
  padding: 10px 400px 10px 2rem; align-items: center;
  background: var(--st-background-color, #fff); border-bottom: 1px solid #d5d7de;
}
.st-key-presenter_query {
  position: fixed; top: 10px; right: 2rem; z-index: 999991; width: 340px;
}
.st-key-presenter .stSelectbox, .st-key-presenter_query .stSelectbox { display: block !important; }
.st-key-presenter div, .st-key-presenter_query div { font-size: 18px; }
.st-key-presenter { flex-wrap: nowrap !important; }
@media (max-width: 1279px) {  /* a 1024 px projector: the bar stays one line */
  .st-key-presenter { padding-right: 300px; }
  .st-key-presenter .st-key-layer, .st-key-presenter .st-key-head { flex: 0 0 130px !important; }
  .st-key-presenter_query { width: 260px; }
}
.ae-scale { font-size: 22px; padding: 0.5rem 0; }
.ae-scale-value { font-size: 28px; font-weight: 600; }
.ae-scale input[type="range"] {
  appearance: none; -webkit-appearance: none; height: 40px; background: transparent;
}
.ae-scale input[type="range"]::-webkit-slider-runnable-track {
  height: 14px; border-radius: 7px; background: #d5d7de;
}
.ae-scale input[type="range"]::-moz-range-track {
  height: 14px; border-radius: 7px; background: #d5d7de;
}
.ae-scale input[type="range"]::-webkit-slider-thumb {
  -webkit-appearance: none; width: 40px; height: 40px; margin-top: -13px; border-radius: 50%;
  border: none; background: var(--st-primary-color); cursor: grab;
}
.ae-scale input[type="range"]::-moz-range-thumb {
  width: 40px; height: 40px; border-radius: 50%; border: none;
  background: var(--st-primary-color); cursor: grab;
}
</style>
"""


def presenting():
    """Whether this session is in presentation mode (``present=1`` in the URL)."""
    return st.query_params.get("present") == "1"


def equation(latex, container=st):
    r"""Display ``latex`` centred, wrapping between its formulas where the width runs out.

    A display equation does not wrap, so a long one ran off a projector's 1024 px or
    presentation mode's large type; here each formula (see
    :func:`app.equations.formulas`) is its own display, side by side while they fit.
    """
    parts = equations.formulas(latex)
    if len(parts) == 1:
        container.latex(latex)
        return
    row = container.container(
        horizontal=True, horizontal_alignment="center", vertical_alignment="center", gap="medium"
    )
    for part in parts:
        row.latex(part, width="content")


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


def control_hint(text):
    """``text``, which points at a control, or "" in presentation mode, which hides them.

    For the sentences that tell the reader to choose, type or set something in the
    sidebar or under a widget: a projector shows neither.
    """
    return "" if presenting() else text


def presentation_frame():
    """Style the page for presentation mode and draw the presenter bar; no-op otherwise.

    Returns
    -------
    the presenter bar (a container, where the shared layer and head selectors go), or
    None outside presentation mode
    """
    if not presenting():
        return None
    st.html(_PRESENT_CSS)
    bar = st.container(horizontal=True, key="presenter", vertical_alignment="center")
    if bar.button("Leave presentation mode", key="leave_presentation", shortcut="Esc"):
        del st.query_params["present"]
        st.rerun()
    attention_explorer.chart(
        key=VIEWPORT,
        data={"kind": "viewport", "known": list(viewport())},
        on_size_change=_viewport_reported,
        height=0,
    )
    return bar


def _viewport_reported():
    """The browser said its size (first, or after a resize): lay the figures out for it."""
    width, height = st.session_state[VIEWPORT]["size"]
    st.session_state["_viewport"] = (int(width), int(height))


def viewport():
    """The browser's (width, height) in CSS pixels, as it last said; else the default."""
    return tuple(st.session_state.get("_viewport") or DEFAULT_VIEWPORT)


def present_height(fig):
    """A figure's height in presentation mode: large type's room, within the screen.

    A heatmap's labelled rows get :data:`PRESENT_ROW` pixels each, but no figure is taller
    than the screen below the presenter bar: its labels are thinned instead (the rule of
    :mod:`app.axes`).
    """
    room = viewport()[1] - PRESENTER_BAR - 24
    return int(min(room, max(fig.layout.height or 0, 560, PRESENT_ROW * labelled_rows(fig) + 240)))


def presentation_layout(fig, live=None):
    """Lay ``fig`` out for a projector, in place: large type, the screen's size, its labels.

    Every figure is as wide as the page (presentation mode stacks the columns that hold
    charts) and fits the screen's height; token axes and the line view's columns keep
    labels of at least :data:`app.axes.PRESENT_MIN_FONT`, thinned when they would touch.
    ``live`` (a chart's binding to the scale's frames) gets the title as it is drawn.
    """
    fig.update_layout(
        font={"size": PRESENT_FONT}, template="simple_white", height=present_height(fig)
    )
    if fig.layout.title.text:
        fig.layout.title.text = _full_size(fig.layout.title.text)
    if live and "title" in live:
        live["title"] = _full_size(live["title"])
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
    axes.fit(fig, viewport()[0] - 64, fig.layout.height)


def _full_size(title):
    """A title with its second line at the title's size: plotly.js writes ``<sup>`` at 70 %."""
    return title.replace("<sup>", "").replace("</sup>", "")


def settings_slug(values, scale=None):
    """The settings that shape a figure, as a short file-name-safe string.

    ``scale`` replaces the scale's own text: a chart drawn from the scale's frames gets
    ``"{scale}"``, which the browser fills in with the stop it shows; ``""`` leaves the
    scale out.
    """
    scale = f"{values['scale']:.4g}" if scale is None else scale
    tail = f"{f'-s{scale}' if scale else ''}-{'causal' if values['causal'] else 'full'}"
    if values["weights"] == "minilm":
        return f"minilm-l{values['layer']}-h{values['head']}{tail}"
    return f"d{values['d_model']}-h{values['heads']}{tail}-pe_{values['pe']}-seed{values['seed']}"


def chart(container, fig, key, table=None, *, live=None, clicks=False):
    """Draw ``fig`` in ``container`` with export set up; offer ``table`` as CSV.

    Every chart goes through the app's chart component (:mod:`attention_explorer`), which
    keeps it mounted by ``key`` and updates it in place. ``key`` also starts the exported
    file names.

    Parameters
    ----------
    container : a Streamlit container (``st``, a column, ...)
    fig : plotly Figure
    key : str
    table : DataFrame or callable returning one, optional
        The engine's numbers behind the chart, with full token labels: its CSV button
        writes them at full precision (not the figure's float32 copy). No button without.
        A callable builds them when the button is clicked (outside the script thread):
        a chart drawn from the scale's frames passes one that reads the stop shown then,
        and its file name leaves the scale out (the name is fixed when the button is
        drawn, and a release of the slider does not redraw it).
    live : dict, optional
        Which traces follow the scale's frames while the slider moves (:mod:`app.live`).
    clicks : bool
        Report clicked cells; the return value is then the last click.

    Returns
    -------
    dict or None
        ``{"trace", "row", "col"}`` of a cell clicked since the last run, else None.
    """
    values = state.current()
    # A chart drawn from the scale's frames sends the same data at every stop.
    shown = "{scale}" if live is not None and "drawn" in live else None
    filename = f"attention-explorer_{key}_{settings_slug(values, '' if shown else None)}"
    figure_name = f"attention-explorer_{key}_{settings_slug(values, shown)}"
    fig.layout.template = None  # plotly.py's default template is 6 KB per chart; the JS themes
    if presenting():
        presentation_layout(fig, live)
    printed = export.print_layout(fig)
    config = {
        "displaylogo": False,
        "toImageButtonOptions": {
            "format": st.session_state.get("export_format", "png"),
            "filename": figure_name,
            "scale": export.EXPORT_SCALE,
            "width": printed["width"],
            "height": printed["height"],
        },
    }
    payload = {"spec": fig.to_json(), "config": config, "print": printed, "clicks": clicks}
    if live is not None:
        payload["live"] = live
    with _inside(container):
        result = attention_explorer.chart(key=key, data=payload, on_click_change=_ignore)
    if table is not None and not presenting():
        container.download_button(
            "CSV",
            data=lambda: tables.to_csv(table() if callable(table) else table),
            file_name=f"{filename}.csv",
            mime="text/csv",
            key=f"{key}_csv",
            on_click="ignore",
            type="tertiary",
            icon=":material/download:",
        )
    return result.click


def _ignore():
    """Clicks are read from the component's return value; the callback only registers them."""


def _inside(container):
    """A context that places elements in ``container`` (``st`` itself places them in order)."""
    return contextlib.nullcontext() if container is st else container


def sidebar_tools():
    """The export format and the copy-link box, at the foot of the sidebar."""
    st.sidebar.selectbox(
        "Chart downloads as",
        EXPORT_FORMATS,
        key="export_format",
        format_func=str.upper,
        help="What each chart's camera button saves, at print resolution.",
        persist_state="session",
    )
    share_link()


def share_link():
    """A box with this view's full link and a copy button, in the sidebar.

    The link is the address bar's, read in the browser (``chart/page.js``): the URL is
    the view's one record (:func:`app.state.write_url`, the token pickers, the scale
    slider's fragment all write it), and a box built here would keep the link of the
    last full run after a fragment's.
    """
    with st.sidebar.popover("Copy link to this view", icon=":material/link:"):
        attention_explorer.page(key="share_link", data={"kind": "share"})


def page_frame():
    """The page's browser side, on every page: the URL read again after a reconnection.

    When the connection comes back (a replica behind the proxy died and another took
    the page), the browser runs the page once from its address bar, so the new session
    starts from the link (:func:`app.state.load_url`) before any page switch; and it
    fits wide equations to narrow screens. An element of height 0 (``chart/page.js``).
    """
    with st.sidebar:
        attention_explorer.page(
            key="page_frame", data={"kind": "page"}, height=0, on_reconnected_change=_ignore
        )
