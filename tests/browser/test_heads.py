"""/heads in headless Chromium: a click on a cell of the atlas opens that head.

The click is a real one on the drawn grid (plotly.js's ``plotly_click``, reported by the
chart component), on MiniLM's sink grid; the page then names the head and draws its
pattern on the repeated tokens.
"""

from __future__ import annotations

import pytest
from browser_support import assert_healthy, open_app, wait_settled

from engine import checkpoint, roles
from engine.resources import minilm_dir

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed"),
]

#: Where cell (layer, head) of the grid's trace ``trace`` is on the page.
CELL = """([trace, layer, head]) => {
    const plot = document.querySelector('.st-key-heads_grid .js-plotly-plot');
    const data = plot._fullData[trace];
    const xaxis = plot._fullLayout[data.xaxis.replace('x', 'xaxis')];
    const yaxis = plot._fullLayout[data.yaxis.replace('y', 'yaxis')];
    const box = plot.getBoundingClientRect();
    return {x: box.left + xaxis._offset + xaxis.c2p(head),
            y: box.top + yaxis._offset + yaxis.c2p(layer)};
}"""


def test_a_click_on_the_sink_grid_opens_that_head(page, app_url):
    open_app(page, app_url + "/heads")
    assert_healthy(page)
    result = roles.head_roles(checkpoint.load("minilm"))
    k = result.roles.index("sink")
    layer, head = 4, 10
    page.locator(".st-key-heads_grid").scroll_into_view_if_needed()
    cell = page.evaluate(CELL, [k, layer, head])
    page.mouse.click(cell["x"], cell["y"])
    wait_settled(page)
    said = page.get_by_text(f"Layer {layer}, head {head}: sink score")
    said.first.wait_for(timeout=30_000)
    assert f"{result.scores[k, layer, head]:.3f}" in said.first.inner_text()
    title = page.evaluate(
        "() => document.querySelector('.st-key-heads_pattern .js-plotly-plot')"
        "._fullLayout.title.text"
    )
    assert "sink line" in title
    assert_healthy(page)
