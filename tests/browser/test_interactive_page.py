"""A view saved as one HTML page, opened in headless Chromium with the network unplugged.

The scale view of MiniLM's head (a text of 45 tokens) is saved by ``ae.save_html`` and opened
from a file: it must load nothing from anywhere, and dragging its Plotly slider must draw
the engine's weights of the stop it lands on, the hover giving that stop's numbers. The
line view's page keeps a hovered token's lines, as the app does, and a page's camera saves
the figure laid out for a slide, as the app's export lays it out. The app's own button on
/attention saves such a page, which plays the engine's sweep with the network unplugged.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import numpy as np
import pytest
from apptest_support import open_app as apptest_open
from browser_support import open_app, unplugged_page
from PIL import Image

import aeviews as ae
from app.data import layers
from app.state import controls
from app.views import export
from engine.attention import attention_over_scales

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed"),
]

#: 45 tokens with [CLS] and [SEP].
TEXT = (
    "The trophy would not fit in the brown suitcase because it was too big. The city "
    "council refused the demonstrators a permit because they feared violence, and the "
    "old animal did not cross the street because it was too tired."
)
PLOT = "document.getElementById('view')"


@pytest.fixture(scope="module")
def attention():
    att = ae.attention(TEXT)
    assert len(att.tokens) == 45
    return att


def opened(page, path):
    page.goto(path.as_uri())
    page.wait_for_function(f"{PLOT} && {PLOT}._fullLayout && {PLOT}._fullData.length > 0")


def drawn_weights(page):
    """What plotly.js draws: the heatmap's z as its full data holds it, row by row."""
    return np.array(page.evaluate(f"() => {PLOT}._fullData[0].z.map((row) => Array.from(row))"))


def drag_slider(page, fraction):
    grip = page.locator(".slider-grip-rect").bounding_box()
    rail = page.locator(".slider-rail-rect").bounding_box()
    y = grip["y"] + grip["height"] / 2
    page.mouse.move(grip["x"] + grip["width"] / 2, y)
    page.mouse.down()
    page.mouse.move(rail["x"] + rail["width"] * fraction, y, steps=12)
    page.mouse.up()
    page.wait_for_function(f"!{PLOT}._transitioning")
    return page.evaluate(f"() => {PLOT}._fullLayout.sliders[0].active")


def point_at(page, x, y):
    """Move the mouse to the point (x, y) of the plot's data coordinates."""
    x, y = page.evaluate(
        f"""([x, y]) => {{
            const layout = {PLOT}._fullLayout, box = {PLOT}.getBoundingClientRect();
            return [box.left + layout._size.l + layout.xaxis.l2p(x),
                    box.top + layout._size.t + layout.yaxis.l2p(y)];
        }}""",
        [x, y],
    )
    page.mouse.move(x, y)


def hover_cell(page, row, col):
    """Point at cell (row, col) of the heatmap; returns the hover label's text."""
    point_at(page, col, row)
    page.wait_for_selector(".hoverlayer .hovertext")
    return page.locator(".hoverlayer .hovertext").text_content()


def test_the_scale_page_plays_the_engines_frames_offline(browser, attention, tmp_path):
    fig = ae.scale_view(attention)
    path = tmp_path / "scale.html"
    ae.save_html(fig, path)
    att = attention
    scales = np.array(controls.scale_options(att.q.shape[-1], 1))
    sweep = attention_over_scales(att.q, att.k, att.v, scales, att.mask)
    assert len(fig.frames) == len(scales)  # 45 tokens: every stop of the app's slider
    with unplugged_page(browser) as page:
        opened(page, path)
        start = page.evaluate(f"() => {PLOT}._fullLayout.sliders[0].active")
        assert scales[start] == controls.default_scale(att.q.shape[-1], 1)
        np.testing.assert_array_equal(drawn_weights(page), sweep.weights[start].astype(np.float32))
        seen = {start}
        for fraction in (0.95, 0.15, 0.6):
            stop = drag_slider(page, fraction)
            assert stop not in seen  # the drag moved to a stop not drawn yet
            seen.add(stop)
            np.testing.assert_array_equal(
                drawn_weights(page), sweep.weights[stop].astype(np.float32)
            )
            title = page.evaluate(f"() => {PLOT}.layout.title.text")
            assert f"at scale {controls.scale_label(scales[stop], att.q.shape[-1], 1)}" in title
            row, col = att.labels.index("it"), 7
            text = hover_cell(page, row, col)
            assert f"weight {sweep.weights[stop][row, col]:.4f}" in text
            assert f"scaled score {sweep.scaled[stop][row, col]:.3f}" in text
            assert f"raw score {sweep.scores[row, col]:.3f}" in text
        assert page.outside == []  # nothing asked of the network
        assert page.errors == []
        assert not page.query_selector("script[src], link[href]")


def test_the_line_page_keeps_a_hovered_tokens_lines(browser, attention, tmp_path):
    fig = ae.line_view(attention)
    path = tmp_path / "lines.html"
    ae.save_html(fig, path)
    query = attention.labels.index("it")
    expected = sum(len(re.findall("M0,", s.path)) for s in fig.layout.shapes)
    mine = sum(len(re.findall(f"M0,{query}L", s.path)) for s in fig.layout.shapes)
    assert 0 < mine < expected
    with unplugged_page(browser) as page:
        opened(page, path)
        count = """() => Array.from(document.querySelectorAll('.shapelayer path[data-index]'))
            .reduce((sum, p) => sum + (p.getAttribute('d').match(/M/g) || []).length, 0)"""
        assert page.evaluate(count) == expected
        point_at(page, 0.0, query)  # the query column's token
        page.wait_for_function(f"({count})() === {mine}")
        page.mouse.move(5, 5)  # off the plot: every line again
        page.wait_for_function(f"({count})() === {expected}")
        assert page.outside == []
        assert page.errors == []


def test_the_pages_camera_saves_the_slide_layout(browser, attention, tmp_path):
    fig = ae.head_view(attention)
    path = tmp_path / "head.html"
    ae.save_html(fig, path)
    printed = export.print_layout(fig)
    with unplugged_page(browser, accept_downloads=True) as page:
        opened(page, path)
        page.hover("#view")
        with page.expect_download() as download:
            page.click('[data-title="Save as PNG, laid out for a slide"]')
        saved = tmp_path / download.value.suggested_filename
        download.value.save_as(saved)
        assert saved.name == "head.png"
        with Image.open(saved) as image:
            assert image.size == (
                printed["width"] * export.EXPORT_SCALE,
                printed["height"] * export.EXPORT_SCALE,
            )
        assert page.outside == []
        assert page.errors == []


def test_the_apps_button_saves_a_page_that_plays_offline(page, app_url, browser, tmp_path):
    text = "the cat sat on the mat because it was tired"
    open_app(page, f"{app_url}/attention?weights=random&tokenizer=words&text={quote(text)}")
    button = page.locator(".st-key-attention_page button")
    assert button.inner_text().strip().endswith("Download as an interactive page")
    with page.expect_download() as download:
        button.click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name.startswith("attention-explorer_scale-view_")
    at = apptest_open("attention", {"weights": "random", "tokenizer": "words", "text": text})
    values = {key: at.session_state[key] for key in controls.CONTROLS}  # the link's settings
    settings = controls.Settings.from_values(values)
    run = layers.layer(settings.replace(scale=None))  # the engine's toy model on the text
    q, k, v = (getattr(run.attention, name)[values["head"]] for name in "qkv")
    sweep = attention_over_scales(q, k, v, np.array(controls.scale_options(*settings.shape)))
    with unplugged_page(browser) as offline:
        opened(offline, saved)
        stop = drag_slider(offline, 0.9)
        np.testing.assert_array_equal(
            drawn_weights(offline), sweep.weights[stop].astype(np.float32)
        )
        assert offline.outside == []
        assert offline.errors == []
