"""The live head in headless Chromium: a head switch shown from the heads the browser holds.

Fixtures (the server, the browser, a fresh page) are in ``conftest.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from browser_support import assert_healthy, open_app, query, wait_settled

from app.state import controls
from engine import bert, checkpoint

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed"),
]

#: What the weights heatmap draws, as numbers.
WEIGHTS = """() => {
    const plot = document.querySelector('.st-key-att_weights .js-plotly-plot');
    return Array.from(plot._fullData[0].z, row => Array.from(row));
}"""

#: Drop every message the page sends the server from now on (until ``RECONNECT``).
UNPLUG = """() => {
    window.__sent = WebSocket.prototype.send;
    WebSocket.prototype.send = function () {};
}"""
RECONNECT = "() => { WebSocket.prototype.send = window.__sent; }"


def minilm_weights(head, layer=controls.DEFAULT_LAYER):
    """MiniLM's weights on the default passage at its default scale."""
    model = checkpoint.load_minilm()
    run = bert.run(model, controls.DEFAULT_TEXT)
    return bert.layer_run(model, run, layer, None, False).attention.weights[head]


def wait_for_weights(page, weights):
    """Wait until the weights heatmap's exact figure shows ``weights`` (to 1e-6), drawn."""
    page.wait_for_function(
        """(rows) => {
            const plot = document.querySelector('.st-key-att_weights .js-plotly-plot');
            const z = plot._fullData[0].z;
            return !plot.closest('.ae-chart').dataset.pending
                && rows.every((row, i) => row.every((w, j) => Math.abs(z[i][j] - w) < 1e-6));
        }""",
        arg=weights.tolist(),
    )


def step_head(page, key="ArrowRight"):
    page.locator(".st-key-att_head input").focus()
    page.keyboard.press(key)


def test_a_head_switch_is_shown_from_held_heads_with_no_server(page, app_url):
    """With nothing reaching the server, the new head's weights are drawn, to 1e-6."""
    open_app(page, app_url + "/attention")
    runs = page.evaluate("window.__runs.finished")
    page.evaluate("window.__aeFrames = []")
    page.evaluate(UNPLUG)
    step_head(page)
    expected = minilm_weights(controls.DEFAULT_HEAD + 1)
    wait_for_weights(page, expected)
    painted = page.evaluate("window.__aeFrames")
    assert painted  # the preview, first
    assert painted[0]["head"] == controls.DEFAULT_HEAD + 1
    assert {"att_weights", "att_scaled", "att_raw", "att_bar"} <= set(painted[0]["parts"])
    np.testing.assert_allclose(page.evaluate(WEIGHTS), expected, atol=1e-6)
    assert page.evaluate("window.__runs.finished") == runs  # no run: the server never heard
    assert query(page).get("head") is None  # the default head: the link waits for Python
    page.evaluate(RECONNECT)
    assert page.errors == []


def test_a_live_head_reaches_the_sidebar_the_link_and_a_reload(page, app_url):
    open_app(page, app_url + "/attention")
    step_head(page)
    step_head(page)
    head = controls.DEFAULT_HEAD + 2
    expected = minilm_weights(head)
    wait_for_weights(page, expected)
    wait_settled(page)
    assert query(page)["head"] == str(head)
    sidebar = page.locator(".st-key-head input[type=range]").first  # heads 0-11: the index
    assert sidebar.input_value() == str(head)
    assert page.locator(".st-key-att_head input").input_value() == str(head)
    page.reload()
    page.runs_seen = 0
    wait_settled(page)
    np.testing.assert_allclose(page.evaluate(WEIGHTS), expected, atol=1e-6)
    assert page.locator(".st-key-att_head input").input_value() == str(head)
    assert_healthy(page)


def test_the_sidebars_head_moves_the_live_control(page, app_url):
    open_app(page, app_url + "/attention")
    page.locator(".st-key-head input").first.focus()
    page.keyboard.press("ArrowLeft")
    expected = minilm_weights(controls.DEFAULT_HEAD - 1)
    wait_for_weights(page, expected)
    wait_settled(page)
    assert page.locator(".st-key-att_head input").input_value() == str(controls.DEFAULT_HEAD - 1)
    step_head(page)  # and back to the default head from the live control
    wait_for_weights(page, minilm_weights(controls.DEFAULT_HEAD))
    wait_settled(page)
    assert "head" not in query(page)
    assert_healthy(page)
