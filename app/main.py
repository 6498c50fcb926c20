"""Attention Explorer's entry point: the page router and the frame every page shares.

Run with ``streamlit run app/main.py``. The pages, their URL paths and the sidebar each
shows are registered in :mod:`app.registry`.
"""

import os

# Sessions run in threads already: NumPy's products outside the engine get one BLAS thread too.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import streamlit as st  # noqa: E402

from app import cli, registry  # noqa: E402
from app.data import cache  # noqa: E402
from app.lecture import presentation, share  # noqa: E402
from app.state import session  # noqa: E402
from app.widgets import notices, sidebar  # noqa: E402

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")
cache.freeze_long_lived()  # Streamlit collects after each run: then only what runs made

PAGES = {
    section: [
        st.Page(
            page.path,
            title=page.title,
            icon=page.icon,
            url_path=page.url_path,
            default=page.default,
        )
        for page in pages
    ]
    for section, pages in registry.sections().items()
}

url_warnings = session.load_url(start=cli.start_values())
session.reconcile()
page = st.navigation(PAGES, expanded=True)  # 13 pages: Streamlit would fold all past 10
session.open_page(page.url_path)
presenter_bar = presentation.frame()
share.page_frame()
st.sidebar.title("Attention Explorer")
sidebar.draw(registry.sidebar(page.url_path), presenter_bar)
sidebar.export_format()
share.link_box(presenter_bar)
notices.url_warnings(url_warnings)
session.name_files(None)  # a page that shows another model names its files (/pretrained)
page.run()
session.write_url(keep_step=page.url_path == "tour", page=page.url_path)
