"""Names a new user meets in the sidebar are distinct (issue #13, item 9)."""

import re
from pathlib import Path

from apptest_support import open_app

ROOT = Path(__file__).resolve().parents[1]
#: Every page title the router registers (``st.Page(..., title="...")``), wherever it lives.
TITLES = {
    title
    for path in (ROOT / "app").glob("*.py")
    for title in re.findall(r'st\.Page\([^)]*?\btitle="([^"]+)"', path.read_text(), re.DOTALL)
}


def test_titles_were_found():
    assert {"Causal mask", "Positional encoding", "Multi-head"} <= TITLES


def test_no_sidebar_control_is_named_like_a_page():
    at = open_app("attention")
    labels = {widget.label for widget in at.sidebar.get("toggle")}
    for kind in ("selectbox", "select_slider", "number_input", "text_area"):
        labels |= {widget.label for widget in at.sidebar.get(kind)}
    assert {"Mask future tokens", "Add positions"} <= labels  # the causal switch, the encoding
    assert not {label.casefold() for label in labels} & {title.casefold() for title in TITLES}
