"""Names a new user meets in the sidebar are distinct (issue #13, item 9)."""

from apptest_support import RANDOM, open_app, sidebar_controls

from app import registry

#: Every page title the router registers.
TITLES = {page.title for page in registry.PAGES}


def test_titles_were_found():
    assert {"Causal mask", "Positional encoding", "Multi-head"} <= TITLES


def test_no_sidebar_control_is_named_like_a_page():
    at = open_app("attention", RANDOM)  # the random model shows every shared control
    labels = {data["label"] for data in sidebar_controls(at)}  # layer, head, mask: the browser's
    for kind in ("selectbox", "select_slider", "number_input", "text_area"):
        labels |= {widget.label for widget in at.sidebar.get(kind)}
    assert {"Mask future tokens", "Add positions"} <= labels  # the causal switch, the encoding
    assert not {label.casefold() for label in labels} & {title.casefold() for title in TITLES}
