"""/pretrained in headless Chromium: the line view and two sentences compared.

Fixtures (the server, the browser, a fresh page) are in ``conftest.py``.
"""

from __future__ import annotations

import urllib.parse

import numpy as np
import pytest
from browser_support import assert_healthy, open_app, query, wait_settled

from engine.resources import minilm_dir

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed"),
]

#: What a line view draws: its token count, each line's (query row, key row), the SVG
#: paths plotly.js drew, and where a token of the query column is on screen.
LINES = """([key, token]) => {
    const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const data = plot._fullData;
    const pairs = [];
    for (const shape of plot._fullLayout.shapes) {
        for (const m of shape.path.matchAll(/M0,(\\d+)L1,(\\d+)/g)) pairs.push([+m[1], +m[2]]);
    }
    const {xaxis, yaxis} = plot._fullLayout;
    const box = plot.getBoundingClientRect();
    return {
        n: data[0].text.length,
        pairs,
        paths: plot.querySelectorAll('.shapelayer path').length,
        x: box.left + xaxis._offset + xaxis.c2p(0),
        y: box.top + yaxis._offset + yaxis.c2p(token),
    };
}"""

#: The comparison's three grids, as drawn.
GRIDS = """() => {
    const plot = document.querySelector('.st-key-pretrained_compare .js-plotly-plot');
    return plot._fullData.slice(0, 3).map(t => Array.from(t.z, row => Array.from(row)));
}"""

#: The line view has drawn the lines of one token (and only those) since its last data.
CHOSEN = """([key, token]) => {
    const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    if (!plot || plot.dataset.pending) return false;
    const queries = plot._fullLayout.shapes
        .flatMap(s => [...s.path.matchAll(/M0,(\\d+)L/g)].map(m => +m[1]));
    return queries.length > 0 && queries.every(q => q === token);
}"""

TROPHY_A = "The trophy doesn't fit into the brown suitcase because it is too big."
TROPHY_B = "The trophy doesn't fit into the brown suitcase because it is too small."


def test_line_view_draws_every_token_and_a_click_keeps_one_tokens_lines(page, app_url):
    open_app(page, app_url + "/pretrained")
    page.locator(".st-key-pretrained_lines").scroll_into_view_if_needed()
    drawn = page.evaluate(LINES, ["pretrained_lines", 5])
    assert {int(q) for q, _ in drawn["pairs"]} == set(range(drawn["n"]))  # a line per token
    assert drawn["paths"] > 0
    page.mouse.click(drawn["x"], drawn["y"])
    wait_settled(page)  # the click's run sets the picker and runs the page again (one run seen)
    picker = page.locator(".st-key-pretrained_lines_token input[role=combobox]")
    page.wait_for_function(CHOSEN, arg=["pretrained_lines", 5])
    assert picker.input_value().startswith("5: ")
    page.locator(".st-key-pretrained_lines").scroll_into_view_if_needed()
    one = page.evaluate(LINES, ["pretrained_lines", 5])
    assert one["pairs"]
    assert {int(q) for q, _ in one["pairs"]} == {5}
    assert len(one["pairs"]) < len(drawn["pairs"])
    assert_healthy(page)


def test_a_link_with_two_texts_draws_both_grids_and_their_difference(page, app_url):
    params = urllib.parse.urlencode({"text": TROPHY_A, "text_b": TROPHY_B})
    open_app(page, f"{app_url}/pretrained?{params}")
    grid_a, grid_b, change = (np.array(z) for z in page.evaluate(GRIDS))
    assert grid_a.shape == grid_b.shape == change.shape == (6, 12)
    np.testing.assert_allclose(change, grid_a - grid_b, rtol=0, atol=1e-12)
    assert np.abs(change).max() > 0.01  # the one word moves some head
    first = page.locator('[data-testid="stTable"] tbody tr').first.inner_text().split()
    top = np.unravel_index(np.argmax(np.abs(change)), change.shape)
    assert (int(first[0]), int(first[1])) == tuple(int(i) for i in top)  # layer, head
    assert page.locator(".st-key-pretrained_lines_b .js-plotly-plot").count() == 1
    assert query(page)["text_b"] == TROPHY_B
    assert_healthy(page)
