"""Attention Explorer's entry point: the page router and the frame every page shares.

Run with ``streamlit run app/main.py``. URL paths are part of the product: a shared
link opens the same page with the same controls.
"""

import streamlit as st

from app import cli, controls, render, state

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")

PAGES = {
    "Start here": [
        st.Page("../pages/tour.py", title="Guided tour", icon=":material/school:", url_path="tour"),
        st.Page(
            "../pages/home.py",
            title="Tokens → Q, K, V",
            icon=":material/token:",
            url_path="home",
            default=True,
        ),
    ],
    "One attention layer": [
        st.Page(
            "../pages/attention.py",
            title="Attention & scaling",
            icon=":material/grid_on:",
            url_path="attention",
        ),
        st.Page(
            "../pages/causal_mask.py",
            title="Causal mask",
            icon=":material/change_history:",
            url_path="causal-mask",
        ),
        st.Page(
            "../pages/positional_encoding.py",
            title="Positional encoding",
            icon=":material/linear_scale:",
            url_path="positional-encoding",
        ),
        st.Page(
            "../pages/multi_head.py",
            title="Multi-head",
            icon=":material/view_module:",
            url_path="multi-head",
        ),
    ],
    "Beyond one layer": [
        st.Page(
            "../pages/encoder_layer.py",
            title="Encoder layer",
            icon=":material/layers:",
            url_path="encoder-layer",
        ),
        st.Page(
            "../pages/decoder.py",
            title="Decoder & cross-attention",
            icon=":material/translate:",
            url_path="decoder",
        ),
        st.Page(
            "../pages/efficient.py",
            title="Efficient attention",
            icon=":material/speed:",
            url_path="efficient",
        ),
        st.Page(
            "../pages/vision.py", title="Vision patches", icon=":material/image:", url_path="vision"
        ),
    ],
    "Real weights, and the book": [
        st.Page(
            "../pages/pretrained.py",
            title="Pretrained MiniLM",
            icon=":material/neurology:",
            url_path="pretrained",
        ),
        st.Page(
            "../pages/summarize.py",
            title="Summarize",
            icon=":material/summarize:",
            url_path="summarize",
        ),
        st.Page(
            "../pages/book.py",
            title="The book's exercise",
            icon=":material/menu_book:",
            url_path="book",
        ),
    ],
}

#: Pages that use only part of the shared sidebar, and the part they use.
SIDEBAR_SUBSET = {"pretrained": ("text",), "summarize": (), "decoder": (), "book": ()}

url_warnings = state.load_url(start=cli.start_values())
state.reconcile()
page = st.navigation(PAGES, expanded=True)  # 13 pages: Streamlit would fold all past 10
state.open_page(page.url_path)
render.presentation_frame()
st.sidebar.title("Attention Explorer")
controls.sidebar(SIDEBAR_SUBSET.get(page.url_path, controls.SHARED))
render.sidebar_tools()
controls.url_warnings(url_warnings)
page.run()
state.write_url(keep_step=page.url_path == "tour", page=page.url_path)
