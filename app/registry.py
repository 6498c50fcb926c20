"""The page registry: every page's script, URL path, title, icon, section and sidebar.

Registered once, here: the entry point builds its router from it, the tour links to its
pages through it, and the tests read it. URL paths are part of the product: a shared
link opens the same page with the same controls.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.state.controls import SHARED


@dataclass(frozen=True)
class PageInfo:
    """One page of the app.

    ``script`` is the page's file name in ``pages/`` without ``.py``; ``sidebar`` the
    shared controls it shows (the others keep their values for the pages that use them).
    """

    script: str
    url_path: str
    title: str
    icon: str
    section: str
    sidebar: tuple[str, ...] = SHARED
    default: bool = False

    @property
    def path(self):
        """The script's path relative to the entry point, as ``st.Page`` and links take it."""
        return f"../pages/{self.script}.py"


PAGES = (
    PageInfo("tour", "tour", "Guided tour", ":material/school:", "Start here"),
    PageInfo("home", "home", "Tokens → Q, K, V", ":material/token:", "Start here", default=True),
    PageInfo(
        "attention",
        "attention",
        "Attention & scaling",
        ":material/grid_on:",
        "One attention layer",
    ),
    PageInfo(
        "causal_mask",
        "causal-mask",
        "Causal mask",
        ":material/change_history:",
        "One attention layer",
    ),
    PageInfo(
        "positional_encoding",
        "positional-encoding",
        "Positional encoding",
        ":material/linear_scale:",
        "One attention layer",
    ),
    PageInfo(
        "multi_head", "multi-head", "Multi-head", ":material/view_module:", "One attention layer"
    ),
    PageInfo(
        "encoder_layer", "encoder-layer", "Encoder layer", ":material/layers:", "Beyond one layer"
    ),
    PageInfo(
        "decoder",
        "decoder",
        "Decoder & cross-attention",
        ":material/translate:",
        "Beyond one layer",
        sidebar=(),
    ),
    PageInfo(
        "efficient", "efficient", "Efficient attention", ":material/speed:", "Beyond one layer"
    ),
    PageInfo(
        "vision",
        "vision",
        "Vision patches",
        ":material/image:",
        "Beyond one layer",
        sidebar=("d_model", "seed"),
    ),
    PageInfo(
        "pretrained",
        "pretrained",
        "Pretrained model",
        ":material/neurology:",
        "Real weights, and the book",
        sidebar=("text",),
    ),
    PageInfo(
        "heads",
        "heads",
        "What heads do",
        ":material/hub:",
        "Real weights, and the book",
        sidebar=("text",),
    ),
    PageInfo(
        "summarize",
        "summarize",
        "Summarize",
        ":material/summarize:",
        "Real weights, and the book",
        sidebar=(),
    ),
    PageInfo(
        "book",
        "book",
        "The book's exercise",
        ":material/menu_book:",
        "Real weights, and the book",
        sidebar=(),
    ),
)

BY_SCRIPT = {page.script: page for page in PAGES}
BY_URL_PATH = {page.url_path: page for page in PAGES}


def sections():
    """The pages grouped by section, in order: {section: [PageInfo, ...]}."""
    grouped = {}
    for page in PAGES:
        grouped.setdefault(page.section, []).append(page)
    return grouped


def sidebar(url_path):
    """The shared controls the page at ``url_path`` shows (all of them for ``""``, home)."""
    page = BY_URL_PATH.get(url_path)
    return SHARED if page is None else page.sidebar
