"""How every figure reaches the screen, and the lecture features around it.

One place decides what a chart's toolbar exports (PNG or SVG at print resolution, with
a file name that says the page and the settings), offers its data as CSV, and how
presentation mode (``?present=1``: large type, no controls) looks.
"""

from __future__ import annotations

import urllib.parse

import streamlit as st

from app import state, tables

EXPORT_FORMATS = ("png", "svg")
#: Toolbar images at 3× the on-screen size: about 300 dpi for a figure printed 10 cm wide.
EXPORT_SCALE = 3
PRESENT_FONT = 20

#: Presentation mode: hide the sidebar, the header and every input; keep figures, text,
#: and the button that leaves the mode. Our own CSS, with no user text in it.
_PRESENT_CSS = """
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stHeader"], [data-testid="stToolbar"],
.stSlider, .stSelectbox, .stTextInput, .stTextArea, .stNumberInput, .stCheckbox,
.stDownloadButton, [data-testid="stButtonGroup"], .stPopover, .stExpander,
[data-testid="stDataFrame"] { display: none !important; }
.block-container { max-width: 100% !important; padding: 1rem 2rem !important; }
html, body, [data-testid="stMarkdownContainer"] p { font-size: 22px; }
</style>
"""


def presenting():
    """Whether this session is in presentation mode (``present=1`` in the URL)."""
    return st.query_params.get("present") == "1"


def presentation_frame():
    """Style the page for presentation mode and offer the way out; no-op otherwise."""
    if not presenting():
        return
    st.html(_PRESENT_CSS)
    if st.button("Leave presentation mode", key="leave_presentation", shortcut="Esc"):
        del st.query_params["present"]
        st.rerun()


def settings_slug(values):
    """The settings that shape a figure, as a short file-name-safe string."""
    tail = f"-s{values['scale']:.4g}-{'causal' if values['causal'] else 'full'}"
    if values["weights"] == "minilm":
        return f"minilm-l{values['layer']}-h{values['head']}{tail}"
    return f"d{values['d_model']}-h{values['heads']}{tail}-pe_{values['pe']}-seed{values['seed']}"


def chart(container, fig, key, csv=True):
    """Draw ``fig`` in ``container`` with export set up; offer its matrix as CSV.

    ``key`` names the chart in the page (it is also the widget key and the start of the
    exported file names). ``csv=False`` for figures whose data are not the numbers
    themselves (pooled, quantised thumbnails).
    """
    values = state.current()
    filename = f"attention-explorer_{key}_{settings_slug(values)}"
    if presenting():
        rows = max(
            (len(t.y) for t in fig.data if t.type == "heatmap" and t.y is not None), default=0
        )
        fig.update_layout(
            font={"size": PRESENT_FONT},
            template="simple_white",
            height=max(fig.layout.height or 0, 560, 24 * rows + 240),
        )
    config = {
        "displaylogo": False,
        "toImageButtonOptions": {
            "format": st.session_state.get("export_format", "png"),
            "filename": filename,
            "scale": EXPORT_SCALE,
        },
    }
    container.plotly_chart(fig, key=key, config=config)
    if csv and not presenting() and tables.has_matrix(fig):
        container.download_button(
            "CSV",
            data=lambda: tables.figure_csv(fig),
            file_name=f"{filename}.csv",
            mime="text/csv",
            key=f"{key}_csv",
            on_click="ignore",
            type="tertiary",
            icon=":material/download:",
        )


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
    """A box with this view's full link and a copy button, in the sidebar."""
    base = st.context.url or ""
    params = state.url_params(state.current())
    query = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
    link = base + (f"?{query}" if query else "")
    with st.sidebar.popover("Copy link to this view", icon=":material/link:"):
        st.caption("The link carries every control; the copy button is at the box's right.")
        st.code(link, language=None, wrap_lines=True)
        present = link + ("&" if query else "?") + "present=1"
        st.caption("The same view in presentation mode:")
        st.code(present, language=None, wrap_lines=True)


#: On the tour, scroll to the top whenever the page's heading changes (a new step):
#: Streamlit keeps the scroll position across reruns. Installed once per browser tab, it
#: watches the page rather than running on each step, because Streamlit may keep an
#: unchanged element, and its script, from one run to the next. Our own script, with no
#: user text in it.
_SCROLL_ON_NEW_HEADING = """
<script>
if (!window.__scrollOnNewHeading) {
    window.__scrollOnNewHeading = true;
    let heading;  // undefined until the first heading is seen
    new MutationObserver(() => {
        const h1 = document.querySelector('[data-testid="stMain"] h1');
        const text = h1 ? h1.textContent : null;
        if (text === heading) return;
        if (heading !== undefined && location.pathname.endsWith('/tour')) {
            for (const pane of [document.scrollingElement,
                                ...document.querySelectorAll('[data-testid="stMain"]')]) {
                pane.scrollTo({top: 0});
            }
        }
        heading = text;
    }).observe(document.body, {childList: true, subtree: true, characterData: true});
}
</script>
"""


def scroll_on_new_heading():
    """On the tour: bring a new step's heading into view, even when the reader had scrolled."""
    st.html(_SCROLL_ON_NEW_HEADING, unsafe_allow_javascript=True)
