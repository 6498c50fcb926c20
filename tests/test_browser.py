"""The real app in headless Chromium: every page draws, the scale slider works from the
keyboard, links restore and validate state, and typed text never becomes markup.

Fixtures (the server, the browser, a fresh page) are in ``conftest.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from browser_support import assert_healthy, chart, open_app, query, slider, wait_settled, z_shape

from app import state

pytestmark = pytest.mark.browser

#: Every page's URL path, read from the router so a new page is tested as soon as it exists.
URL_PATHS = re.findall(
    r'url_path="([^"]+)"', (Path(__file__).parents[1] / "app/main.py").read_text()
)
#: Pages with inputs of their own, whose sidebar has no text box.
OWN_INPUTS = {"decoder", "book"}
D_MODEL, HEADS = state.CONTROLS["d_model"].default, state.CONTROLS["heads"].default
INJECTION = "<img src=x onerror=alert(1)><script>alert(2)</script>"


def test_router_lists_the_pages_we_test(page, app_url):
    open_app(page, app_url)
    links = page.locator('[data-testid="stSidebarNavLink"]')
    paths = {urlsplit(link.get_attribute("href")).path.strip("/") for link in links.all()}
    assert paths - {""} <= set(URL_PATHS)
    assert len(links.all()) == len(URL_PATHS)


@pytest.mark.parametrize("path", ["", *URL_PATHS])
def test_page_draws_without_errors(page, app_url, path):
    open_app(page, f"{app_url}/{path}")
    assert_healthy(page)
    boxes = page.locator('[data-testid="stSidebar"] textarea').count()
    assert boxes == (0 if path in OWN_INPUTS else 1)


def test_scale_slider_moves_with_the_keyboard(page, app_url):
    open_app(page, app_url + "/attention")
    scale = slider(page, "att_scale")
    assert scale.get_attribute("aria-valuetext").endswith("(default)")
    options, default = state.scale_options(D_MODEL, HEADS), state.default_scale(D_MODEL, HEADS)
    expected = options[options.index(default) + 1]  # one stop up from 1/√d_k
    raw_before = chart(page, "att_raw")
    scaled_before, weights_before = chart(page, "att_scaled"), chart(page, "att_weights")

    scale.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_url(re.compile(r"[?&]scale="))
    wait_settled(page)

    assert float(query(page)["scale"]) == pytest.approx(expected)
    assert scale.get_attribute("aria-valuetext") == f"{expected:.4g}"
    assert f"× {expected:.4g}" in page.locator(".st-key-att_scaled .gtitle").text_content()
    assert chart(page, "att_scaled") != scaled_before
    assert chart(page, "att_weights") != weights_before
    assert chart(page, "att_raw") == raw_before  # q·kᵀ does not depend on the scale
    assert_healthy(page)


def test_link_sets_the_controls_and_the_figures(page, app_url):
    open_app(
        page,
        app_url + "/attention?d_model=32&heads=4&causal=1&pe=sinusoidal&scale=1.0"
        "&text=Hello%20world%20it%20is",
    )
    assert_healthy(page)
    assert page.locator('[data-testid="stAlert"]').count() == 0
    assert page.locator(".st-key-text textarea").input_value() == "Hello world it is"
    assert page.locator(".st-key-causal input[role=switch]").is_checked()
    assert page.locator(".st-key-pe input[role=combobox]").input_value() == "Sinusoidal"
    assert slider(page, "d_model").get_attribute("aria-valuetext") == "32"
    assert slider(page, "heads").get_attribute("aria-valuetext") == "4"
    assert slider(page, "att_scale").get_attribute("aria-valuetext") == "1 (no scaling)"
    assert page.locator(".st-key-attention_head").count() == 1  # four heads: a head picker

    assert z_shape(page, "att_weights") == [4, 4]
    assert z_shape(page, "att_output") == [4, 8]  # d_head = 32 / 4
    assert "× 1" in page.locator(".st-key-att_scaled .gtitle").text_content()
    weights = page.evaluate(
        "() => Array.from(document.querySelector('.st-key-att_weights .js-plotly-plot')"
        "._fullData[0].z, row => Array.from(row))"
    )
    for i, row in enumerate(weights):  # causal: no weight on a later token
        assert all(w == 0 for w in row[i + 1 :])
        assert sum(row) == pytest.approx(1, abs=1e-5)


def test_bad_link_values_warn_and_fall_back(page, app_url):
    open_app(page, app_url + "/attention?scale=abc&heads=0&d_model=-3")
    assert_healthy(page)
    warning = page.locator('[data-testid="stAlertContentWarning"]')
    assert warning.count() == 1
    text = warning.inner_text()
    for fragment in ("scale=“abc”", "heads=“0”", "d_model=“-3”"):
        assert fragment in text
    assert slider(page, "d_model").get_attribute("aria-valuetext") == str(D_MODEL)
    assert slider(page, "heads").get_attribute("aria-valuetext") == str(HEADS)


def test_typed_markup_stays_text(page, app_url):
    dialogs = []

    def record(dialog):
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    open_app(page, app_url + "/attention")
    box = page.locator(".st-key-text textarea")
    box.fill(INJECTION)
    box.press("Control+Enter")
    page.wait_for_url(re.compile(r"[?&]text="))
    wait_settled(page)
    page.wait_for_timeout(500)  # time for an injected handler to fire, if there were one

    assert dialogs == []
    assert query(page)["text"] == INJECTION
    injected = page.evaluate(
        """() => ({
            images: document.querySelectorAll('img[src="x"]').length,
            scripts: [...document.querySelectorAll('script')]
                .filter(s => s.textContent.includes('alert(')).length,
        })"""
    )
    assert injected == {"images": 0, "scripts": 0}
    ticks = [tick.text_content() for tick in page.locator(".st-key-att_weights .xtick").all()]
    assert any("<" in tick for tick in ticks)  # the markup is drawn as plain text
    assert_healthy(page)
