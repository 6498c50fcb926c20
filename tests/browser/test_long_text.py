"""A long text on /pretrained in headless Chromium (issue #52): tiles drawn, the zoom exact.

The tiny Llama with 8,192 positions (as tests/pages/test_long_text.py makes it), typed in
the path box, and 3,039 tokens typed in the text box (too long for a link): the head
view's tiles are the engine's, the zoom draws the exact weights with their tokens, and a
click on a tile moves the zoom there, and a click on the grid of every head's summaries
opens that head.
"""

from __future__ import annotations

import numpy as np
import pytest
import tiny_models
from browser_support import assert_healthy, look_at, open_app, wait_settled

from app.views import long_head
from app.widgets import model_box
from engine import bert, checkpoint, one_layer, tiling

pytestmark = pytest.mark.browser

TEXT = "The restaurant refused to serve me because it only cooks vegetarian food. " * 62

#: The first trace of chart ``key`` as plotly.js drew it: z, x and y, and the shapes drawn.
DRAWN = """(key) => {
    const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const trace = plot._fullData[0];
    return {z: trace.z, x: Array.from(trace.x), y: Array.from(trace.y),
            shapes: (plot._fullLayout.shapes || []).length};
}"""
#: Where the point (y, x) of chart ``key`` (in its axes' units) is on the page.
POINT = """([key, y, x]) => {
    const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const layout = plot._fullLayout;
    const box = plot.getBoundingClientRect();
    return {x: box.left + layout.xaxis._offset + layout.xaxis.l2p(x),
            y: box.top + layout.yaxis._offset + layout.yaxis.l2p(y)};
}"""
#: Where cell (layer, head) of the summary grid is on the page.
CELL = """([layer, head]) => {
    const plot = document.querySelector('.st-key-pretrained_summaries .js-plotly-plot');
    const layout = plot._fullLayout;
    const box = plot.getBoundingClientRect();
    return {x: box.left + layout.xaxis._offset + layout.xaxis.c2p(head),
            y: box.top + layout.yaxis._offset + layout.yaxis.c2p(layer)};
}"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("long") / "llama_long"
    return tiny_models.with_positions("llama", path, 8192)


def _selected(page, key):
    return int(page.locator(f".st-key-{key}").get_by_role("slider").get_attribute("aria-valuetext"))


def test_a_long_texts_tiles_are_drawn_and_the_zoom_shows_exact_cells(page, app_url, folder):
    open_app(page, app_url + "/pretrained")
    box = page.locator(f".st-key-{model_box.PATH_KEY} input")
    if not box.is_visible():
        page.get_by_text("Your own model: a checkpoint folder").click()
    box.fill(str(folder))
    box.press("Enter")
    wait_settled(page)
    text = page.locator(".st-key-text textarea")
    text.fill(TEXT)
    text.press("Control+Enter")
    wait_settled(page, timeout=120_000)
    assert_healthy(page)

    model = checkpoint.load(folder)
    run = bert.run(model, TEXT)
    layer, head = _selected(page, "pretrained_layer"), _selected(page, "pretrained_head")
    weights = one_layer.head_weights(model, run, layer, head)
    look_at(page, "pretrained_tiles")
    tiles = page.evaluate(DRAWN, "pretrained_tiles")
    expected = tiling.tile(weights, long_head.OVERVIEW_TILES, "max").values
    np.testing.assert_allclose(np.array(tiles["z"], dtype=np.float32), expected, rtol=1e-6)
    assert tiles["shapes"] == 1  # the zoom's box

    look_at(page, "pretrained_zoom")
    zoom = page.evaluate(DRAWN, "pretrained_zoom")
    first, last = (int(label.split(" ", 1)[0]) for label in (zoom["y"][0], zoom["y"][-1]))
    k0 = int(zoom["x"][0].split(" ", 1)[0])
    assert last - first + 1 == long_head.ZOOM_CELLS
    cells = weights[first : last + 1, k0 : k0 + len(zoom["x"])]
    np.testing.assert_allclose(np.array(zoom["z"], dtype=np.float32), cells, rtol=1e-6)
    assert zoom["y"][1].replace("\u200b", "") == f"{first + 1} {run.labels[first + 1]}"

    look_at(page, "pretrained_tiles")  # a click on a tile far down the map moves the zoom there
    spot = page.evaluate(POINT, ["pretrained_tiles", 2000, 1000])
    page.mouse.click(spot["x"], spot["y"])
    wait_settled(page)
    look_at(page, "pretrained_zoom")
    zoom = page.evaluate(DRAWN, "pretrained_zoom")
    first, k0 = (int(labels[0].split(" ", 1)[0]) for labels in (zoom["y"], zoom["x"]))
    assert first <= 2000 < first + long_head.ZOOM_CELLS
    assert k0 <= 1000 < k0 + long_head.ZOOM_CELLS
    cells = weights[first : first + len(zoom["y"]), k0 : k0 + len(zoom["x"])]
    np.testing.assert_allclose(np.array(zoom["z"], dtype=np.float32), cells, rtol=1e-6)

    other = (1 - layer, (head + 1) % model.config.n_heads)
    page.locator(".st-key-pretrained_summaries").scroll_into_view_if_needed()
    cell = page.evaluate(CELL, list(other))
    page.mouse.click(cell["x"], cell["y"])
    wait_settled(page)
    assert (_selected(page, "pretrained_layer"), _selected(page, "pretrained_head")) == other
    assert_healthy(page)
