"""Presentation mode (``?present=1``): a frame for a projector, and text that suits it.

Large type, one figure to a screen, each fitting the projector's screen below a presenter
bar (the button that leaves the mode, the page's query token, the layer and the head),
no other controls but the scale slider, and no text that points at the hidden ones
(:func:`control_hint`). Whether the session presents, and the screen's size the browser
reported, are in :mod:`app.state.session`; each figure is laid out for that screen where
it reaches the screen (:mod:`app.views.chart`).
"""

from __future__ import annotations

import streamlit as st

import attention_explorer
from app.state import session

#: The key of the element that reports the browser's size, in presentation mode.
VIEWPORT = "presenter_viewport"

#: Presentation mode: hide the sidebar, the header and every input; keep figures, text,
#: and the presenter bar, fixed at the top: the button that leaves the mode, the layer and
#: the head (``st-key-presenter``), and the page's query token (``st-key-presenter_query``,
#: wherever the page draws it). The attention page's scale slider stays, sized for a
#: projector: dragging it to watch softmax saturate is the page's demonstration. Tables
#: stay, zoomed (Streamlit draws their text at 14 px on a canvas that type sizes leave
#: alone): 1.2 times on a 1280 px screen, 1.4 from 1600 px, as wide as the page, a wide one
#: scrolling sideways and a tall one down inside its own box. Columns that hold charts are
#: stacked, one figure to the screen's width. A slide shows its figure first: the page's
#: title, then its first chart, then what the page says before the chart and everything
#: after it, in order (CSS ``order`` on the page's outermost block; the figure's height
#: leaves the title its room, :data:`app.views.chart.PRESENT_TITLE`), so a page draws no
#: heading right above its first chart when presenting. Our own CSS, with no user text in it.
_PRESENT_CSS = """
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stHeader"], [data-testid="stToolbar"],
.stSlider, .stSelectbox, .stMultiSelect, .stTextInput, .stTextArea, .stNumberInput, .stCheckbox,
.stDownloadButton, [data-testid="stButtonGroup"], .stPopover, .stExpander {
  display: none !important;
}
.stElementContainer:has(> [data-testid="stFullScreenFrame"] > [data-testid="stDataFrame"]) {
  zoom: 1.2;
}
@media (min-width: 1600px) {
  .stElementContainer:has(> [data-testid="stFullScreenFrame"] > [data-testid="stDataFrame"]) {
    zoom: 1.4;
  }
}
[data-testid="stDataFrame"], [data-testid="stDataFrame"] > div { width: 100% !important; }
.block-container { max-width: 100% !important; padding: 92px 2rem 1rem !important; }
html, body, [data-testid="stMarkdownContainer"] p { font-size: 22px; }
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p { font-size: 18px; }
[data-testid="stMainBlockContainer"] h1 { font-size: 40px; padding: 0; line-height: 1.3; }
PAGE > *, TITLED > [data-testid="stVerticalBlock"] > * { order: 1; }
TITLED, TITLED > [data-testid="stVerticalBlock"] { display: contents; }
PAGE > :is(:has(h1), :has(.ae-chart):not(:has(.ae-chart) ~ *)),
TITLED > [data-testid="stVerticalBlock"] > :has(h1) { order: 0; }
[data-testid="stHorizontalBlock"]:not(.st-key-presenter):has(.stBidiComponent) {
  flex-direction: column !important;
}
[data-testid="stHorizontalBlock"]:not(.st-key-presenter):has(.stBidiComponent)
  > [data-testid="stColumn"] {
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
  .st-key-presenter .st-key-present_layer,
  .st-key-presenter .st-key-present_head { flex: 0 0 130px !important; }
  .st-key-presenter_query { width: 260px; }
}
.ae-stop { font-size: 22px; padding: 0.5rem 0; }
.ae-stop .ae-control-value { font-size: 28px; font-weight: 600; }
.ae-stop input[type="range"] {
  appearance: none; -webkit-appearance: none; height: 40px; background: transparent;
}
.ae-stop input[type="range"]::-webkit-slider-runnable-track {
  height: 14px; border-radius: 7px; background: #d5d7de;
}
.ae-stop input[type="range"]::-moz-range-track {
  height: 14px; border-radius: 7px; background: #d5d7de;
}
.ae-stop input[type="range"]::-webkit-slider-thumb {
  -webkit-appearance: none; width: 40px; height: 40px; margin-top: -13px; border-radius: 50%;
  border: none; background: var(--st-primary-color); cursor: grab;
}
.ae-stop input[type="range"]::-moz-range-thumb {
  width: 40px; height: 40px; border-radius: 50%; border: none;
  background: var(--st-primary-color); cursor: grab;
}
</style>
"""
#: The page's outermost block, whose elements a slide orders, and a container in it that
#: holds the title with more (/pretrained's, which names the model): its elements are
#: ordered as the page's (``display: contents``).
_PAGE = (
    '[data-testid="stMainBlockContainer"] [data-testid="stVerticalBlock"]'
    ':not([data-testid="stVerticalBlock"] [data-testid="stVerticalBlock"])'
)
_PRESENT_CSS = _PRESENT_CSS.replace(
    "TITLED", f'{_PAGE} > [data-testid="stLayoutWrapper"]:has(h1):not(:has(.ae-chart))'
).replace("PAGE", _PAGE)

#: For a slide whose figure is not the sidebar's model's (the tour's SmolLM2 induction
#: step): the presenter bar's layer and head, which would name the sidebar's, hidden.
_HIDE_LAYER_AND_HEAD = (
    "<style>.st-key-present_layer, .st-key-present_head { display: none !important; }</style>"
)


def hide_layer_and_head():
    """Hide the presenter bar's layer and head: this slide's figure is not the sidebar's model's."""
    st.html(_HIDE_LAYER_AND_HEAD)


def control_hint(text):
    """``text``, which points at a control, or "" in presentation mode, which hides them.

    For the sentences that tell the reader to choose, type or set something in the
    sidebar or under a widget: a projector shows neither.
    """
    return "" if session.presenting() else text


def frame():
    """Style the page for presentation mode and draw the presenter bar; no-op otherwise.

    Returns
    -------
    the presenter bar (a container, where the shared layer and head selectors go), or
    None outside presentation mode
    """
    if not session.presenting():
        return None
    st.html(_PRESENT_CSS)
    bar = st.container(horizontal=True, key="presenter", vertical_alignment="center")
    if bar.button("Leave presentation mode", key="leave_presentation", shortcut="Esc"):
        del st.query_params["present"]
        st.rerun()
    attention_explorer.page(
        key=VIEWPORT,
        data={"kind": "viewport", "known": list(session.viewport())},
        on_size_change=_viewport_reported,
        height=0,
    )
    return bar


def _viewport_reported():
    """The browser said its size (first, or after a resize): lay the figures out for it."""
    session.set_viewport(*st.session_state[VIEWPORT]["size"])
