"""How every figure reaches the screen, and the lecture features around it.

One place decides what a chart's toolbar exports (PNG or SVG at print resolution, with
a file name that says the page and the settings), offers its data as CSV, and how
presentation mode (``?present=1``: large type, no controls but the scale slider) looks.
"""

from __future__ import annotations

import contextlib

import streamlit as st

import attention_explorer
from app import equations, export, state, tables

EXPORT_FORMATS = ("png", "svg")
PRESENT_FONT = 20
#: Presentation mode gives a heatmap's labelled rows this many pixels each, so the large
#: type does not pile up, for at most :data:`PRESENT_MAX_ROWS` rows: past that a chart
#: would outgrow two projector screens, and Plotly thins the labels anyway.
PRESENT_ROW = 24
PRESENT_MAX_ROWS = 64

#: Presentation mode: hide the sidebar, the header and every input; keep figures, text,
#: and the button that leaves the mode. The attention page's scale slider stays, sized for
#: a projector: dragging it to watch softmax saturate is the page's demonstration. Our own
#: CSS, with no user text in it.
_PRESENT_CSS = """
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stHeader"], [data-testid="stToolbar"],
.stSlider, .stSelectbox, .stMultiSelect, .stTextInput, .stTextArea, .stNumberInput, .stCheckbox,
.stDownloadButton, [data-testid="stButtonGroup"], .stPopover, .stExpander,
[data-testid="stDataFrame"] { display: none !important; }
.block-container { max-width: 100% !important; padding: 1rem 2rem !important; }
html, body, [data-testid="stMarkdownContainer"] p { font-size: 22px; }
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


def presentation_frame():
    """Style the page for presentation mode and offer the way out; no-op otherwise."""
    if not presenting():
        return
    st.html(_PRESENT_CSS)
    if st.button("Leave presentation mode", key="leave_presentation", shortcut="Esc"):
        del st.query_params["present"]
        st.rerun()


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
        fig.update_layout(
            font={"size": PRESENT_FONT},
            template="simple_white",
            height=max(fig.layout.height or 0, 560, PRESENT_ROW * labelled_rows(fig) + 240),
        )
        # A table's rows keep their height whatever the font: make room for the large type.
        fig.update_traces(
            cells_height=PRESENT_FONT + 12,
            header_height=PRESENT_FONT + 14,
            selector={"type": "table"},
        )
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
