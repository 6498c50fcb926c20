"""/pretrained in headless Chromium: the line view and two sentences compared.

Fixtures (the server, the browser, a fresh page) are in ``conftest.py``.
"""

from __future__ import annotations

import urllib.parse

import numpy as np
import pytest
from browser_support import assert_healthy, look_at, open_app, query, wait_settled

from app.state import controls
from app.views import model_view
from engine import bert, checkpoint
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

#: The model view's shapes as plotly.js holds them, and its plot's node (marked once).
OUTLINE = """() => {
    const plot = document.querySelector('.st-key-pretrained_model_view .js-plotly-plot');
    plot.aeMarked ??= Math.random();
    const shapes = plot._fullLayout.shapes.map(s => [s.x0, s.x1, s.y0, s.y1]);
    return {shapes, node: plot.aeMarked};
}"""


#: The head view's heatmap as drawn: its title and its weights.
HEAD_VIEW = """() => {
    const plot = document.querySelector('.st-key-pretrained_heatmap .js-plotly-plot');
    const z = Array.from(plot._fullData[0].z, (row) => Array.from(row));
    return {title: plot._fullLayout.title.text, z};
}"""


def test_a_head_picked_moves_the_outline_in_place_goes_into_the_link_and_a_reload_shows_it(
    page, app_url
):
    """A head switch moves the model view's outline over the grid drawn before (the same
    plot), and the page receives the grid no more: well under the 294 KB it alone came to.
    The head goes into the link, and a reload draws it in the head view."""
    received = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda data: received.append(len(data))))
    open_app(page, app_url + "/pretrained")
    look_at(page, "pretrained_model_view")
    attentions = bert.run(checkpoint.load_minilm(), controls.DEFAULT_TEXT).attentions
    layer, best = (int(i) for i in np.unravel_index(np.argmax(attentions[:, :, 11, 2]), (6, 12)))
    rect = model_view.outline(attentions, (layer, best))  # "it" → "restaurant"
    first = page.evaluate(OUTLINE)
    assert first["shapes"] == [[rect["x0"], rect["x1"], rect["y0"], rect["y1"]]]
    received.clear()
    page.locator(".st-key-pretrained_head input[type=range]").first.focus()
    page.keyboard.press("ArrowLeft" if best else "ArrowRight")
    head = best - 1 if best else 1
    wait_settled(page)
    look_at(page, "pretrained_model_view")  # far from the slider: drawn when near again
    rect = model_view.outline(attentions, (layer, head))
    moved = page.evaluate(OUTLINE)
    assert moved["shapes"] == [[rect["x0"], rect["x1"], rect["y0"], rect["y1"]]]
    assert moved["node"] == first["node"], "the model view was drawn anew, not updated in place"
    assert sum(received) < 200_000
    assert query(page)["view_head"] == str(head)

    page.reload()
    page.runs_seen = 0
    wait_settled(page)
    look_at(page, "pretrained_heatmap")
    drawn = page.evaluate(HEAD_VIEW)
    assert f"Layer {layer}, head {head}" in drawn["title"]
    np.testing.assert_allclose(drawn["z"], attentions[layer, head], atol=1e-6)
    assert_healthy(page)


TROPHY_A = "The trophy doesn't fit into the brown suitcase because it is too big."
TROPHY_B = "The trophy doesn't fit into the brown suitcase because it is too small."


#: Each line-view path as drawn: where its segments start and end on screen (y, in pixels),
#: and the (query row, key row) pairs its shape holds.
DRAWN = """(key) => {
    const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    return [...plot.querySelectorAll('.shapelayer path[data-index]')].map(path => ({
        ends: [...path.getAttribute('d').matchAll(/M[^,]+,([^L]+)L[^,]+,([^M]+)/g)]
            .map(m => [+m[1], +m[2]]),
        pairs: [...plot._fullLayout.shapes[+path.dataset.index].path
            .matchAll(/M0,(\\d+)L1,(\\d+)/g)].map(m => [+m[1], +m[2]]),
    }));
}"""

#: Where token ``row`` of column ``side`` (0 the queries, 1 the keys) is on screen, and
#: its height in the chart's own pixels (those of the paths).
TOKEN_AT = """([key, side, row]) => {
    const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const {xaxis, yaxis} = plot._fullLayout;
    const box = plot.getBoundingClientRect();
    const y = yaxis._offset + yaxis.c2p(row);
    return {x: box.left + xaxis._offset + xaxis.c2p(side), y: box.top + y, own: y};
}"""


def lines_drawn(page, key, side, row):
    """Wait until each path draws its shape's lines of token ``row`` on ``side``; the ends."""
    page.wait_for_function(
        """([key, side, row]) => {
            const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
            return [...plot.querySelectorAll('.shapelayer path[data-index]')].every(path => {
                const pairs = [...plot._fullLayout.shapes[+path.dataset.index].path
                    .matchAll(/M0,(\\d+)L1,(\\d+)/g)];
                const kept = pairs.filter(m => side === null || +m[side + 1] === row).length;
                return (path.getAttribute('d').match(/M/g) || []).length === kept;
            });
        }""",
        arg=[key, side, row],
    )
    return page.evaluate(DRAWN, key)


def assert_pointer_keeps_the_tokens_lines(page, key, side, row):
    """Token ``row`` of column ``side`` (0 the queries, 1 the keys) under the pointer keeps
    its lines alone; the pointer away, every line again."""
    every = page.evaluate(DRAWN, key)
    total = sum(len(path["pairs"]) for path in every)
    token = page.evaluate(TOKEN_AT, [key, side, row])
    page.mouse.move(token["x"], token["y"])
    kept = lines_drawn(page, key, side, row)
    ends = [end[side] for path in kept for end in path["ends"]]
    assert 0 < len(ends) < total, (side, row)
    assert max(ends) - min(ends) < 0.5, (side, row)  # every line left starts (or ends) there
    assert ends[0] == pytest.approx(token["own"], abs=0.5), (side, row)
    page.mouse.move(1, 1)  # away: every line again
    back = lines_drawn(page, key, None, None)
    assert sum(len(path["ends"]) for path in back) == total, (side, row)


def test_line_view_draws_every_token_keeps_the_pointers_and_a_clicked_tokens_lines(page, app_url):
    """A line per token; a query token under the pointer keeps the lines from it, a key
    token those into it (as in BertViz); a click keeps one token's lines, in the picker."""
    open_app(page, app_url + "/pretrained")
    look_at(page, "pretrained_lines")
    drawn = page.evaluate(LINES, ["pretrained_lines", 5])
    assert {int(q) for q, _ in drawn["pairs"]} == set(range(drawn["n"]))  # a line per token
    assert drawn["paths"] > 0
    for side, row in ((0, 11), (1, 2)):
        assert_pointer_keeps_the_tokens_lines(page, "pretrained_lines", side, row)
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


def test_multi_heads_line_view_keeps_the_lines_of_the_token_under_the_pointer(page, app_url):
    open_app(page, app_url + "/multi-head")
    look_at(page, "mh_lines")
    assert_pointer_keeps_the_tokens_lines(page, "mh_lines", 0, 3)
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
    look_at(page, "pretrained_lines_b")
    assert page.locator(".st-key-pretrained_lines_b .js-plotly-plot").count() == 1
    assert query(page)["text_b"] == TROPHY_B
    assert_healthy(page)
