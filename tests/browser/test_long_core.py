"""A core page on a long text in headless Chromium (issue #52): SmolLM2 past 512 tokens.

/causal-mask on the packaged SmolLM2 (``weights=smollm2``) and 600-odd tokens typed in the
text box (too long for a link): the page draws its first chart, the mask as tiles, and the
weights' zoom exact against the engine, without an error.
"""

from __future__ import annotations

import numpy as np
import pytest
from browser_support import assert_healthy, look_at, open_app, wait_settled

from app.data import passes
from engine import bert, checkpoint, one_layer
from engine.resources import smollm2_file

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(smollm2_file() is None, reason="SmolLM2 is not installed"),
]
TEXT = "The restaurant refused to serve me because it only cooks vegetarian food. " * 42
#: The first trace of chart ``key`` as plotly.js drew it: z, and the first row's label.
DRAWN = """(key) => {
    const trace = document.querySelector(`.st-key-${key} .js-plotly-plot`)._fullData[0];
    return {z: trace.z, x: Array.from(trace.x), y: Array.from(trace.y)};
}"""


def test_causal_mask_draws_a_long_texts_maps_as_tiles(page, app_url):
    open_app(page, f"{app_url}/causal-mask?weights=smollm2")
    text = page.locator(".st-key-text textarea")
    text.fill(TEXT)
    text.press("Control+Enter")
    wait_settled(page, timeout=240_000)
    assert_healthy(page)
    look_at(page, "causal_mask")
    assert page.locator(".st-key-causal_mask .js-plotly-plot .main-svg").count() > 0
    look_at(page, "causal_weights_masked")
    title = page.locator(".st-key-causal_weights_masked .gtitle").first.text_content()
    assert "each the maximum of its block" in title

    model = checkpoint.load("smollm2")
    run = bert.run(model, TEXT)
    assert len(run.ids) > passes.LONG_TOKENS
    look_at(page, "causal_weights_masked_zoom")
    zoom = page.evaluate(DRAWN, "causal_weights_masked_zoom")
    first = int(zoom["y"][0].replace("\u200b", "").split(" ", 1)[0])
    k0 = int(zoom["x"][0].replace("\u200b", "").split(" ", 1)[0])
    layer, head = 22, 0  # SmolLM2's default head on the core pages
    weights = one_layer.head_weights(model, run, layer, head)
    cells = weights[first : first + len(zoom["y"]), k0 : k0 + len(zoom["x"])]
    np.testing.assert_allclose(np.array(zoom["z"], dtype=np.float32), cells, rtol=1e-6)
