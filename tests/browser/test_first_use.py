"""What a new user hit, in headless Chromium (issue #13): pickers after new text, the
positional-encoding page's first view, and the tour's layout (its first step's "Next" and
the heads' token labels: test_lecture.py's walk through the tour).

Fixtures (the server, the browser, a fresh page) are in ``conftest.py``.
"""

from __future__ import annotations

import re

import pytest
from browser_support import assert_healthy, in_view, look_at, open_app, query, wait_settled
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from app.state import controls

pytestmark = pytest.mark.browser

TROPHY = "The trophy would not fit in the suitcase because it was too big."


def picker_shows(page, key):
    """The token a selectbox picker shows, without its position: "10: it" → "it"."""
    shown = page.locator(f".st-key-{key} input[role=combobox]").input_value()
    return shown.split(": ", 1)[1]


def chart_title(page, key):
    look_at(page, key)  # drawn once near the window
    return page.locator(f".st-key-{key} .gtitle").first.text_content()


def choose(page, key, option):
    box = page.locator(f".st-key-{key} input[role=combobox]")
    box.click()
    box.press_sequentially(option)  # filters the list, which draws only what is in view
    page.get_by_role("option", name=option, exact=True).click()
    wait_settled(page)


def type_text(page, text):
    box = page.locator(".st-key-text textarea")
    box.fill(text)
    box.press("Control+Enter")
    wait_settled(page)


@pytest.mark.parametrize("word", ["it", "because"])
def test_query_picker_names_the_token_the_chart_uses_after_new_text(page, app_url, word):
    """The default query ("it") or a chosen one ("because", in the link, which brings it
    back) stays the query of picker and chart when the text changes."""
    open_app(page, app_url + "/attention?weights=random&tokenizer=words")
    labels = page.locator(".st-key-attention_query input[role=combobox]")
    if word != "it":
        position = controls.DEFAULT_TEXT.split().index(word)
        choose(page, "attention_query", f"{position}: {word}")
        assert query(page)["query"] == f"{position}:{word}"
        link = page.url
    assert picker_shows(page, "attention_query") == word
    type_text(page, TROPHY)

    assert labels.input_value() == f"{TROPHY.split().index(word)}: {word}"
    assert f"What “{picker_shows(page, 'attention_query')}” attends to" in chart_title(
        page, "att_bar"
    )
    assert_healthy(page)
    if word != "it":  # a copied link brings back the chosen query
        open_app(page, link)
        assert picker_shows(page, "attention_query") == word
        assert f"What “{word}” attends to" in chart_title(page, "att_bar")
        assert_healthy(page)


def z_range(page, key):
    """The smallest and largest value of chart ``key``'s first trace, as drawn."""
    look_at(page, key)
    return page.evaluate(
        """(key) => {
            const z = document.querySelector(`.st-key-${key} .js-plotly-plot`)._fullData[0].z;
            const values = z.flatMap(row => Array.from(row));
            return [Math.min(...values), Math.max(...values)];
        }""",
        key,
    )


def test_positional_encoding_opens_on_charts_that_show_something(page, app_url):
    open_app(page, app_url + "/positional-encoding?weights=random")
    assert page.locator(".st-key-pe input[role=combobox]").input_value() == "Sinusoidal"
    low, high = z_range(page, "pe_table")
    assert high - low > 1  # sines and cosines, not a grey square
    low, high = z_range(page, "pe_similarity")
    assert high - low > 0.5
    assert query(page)["pe"] == "sinusoidal"
    assert_healthy(page)


def test_positional_encoding_none_says_nothing_is_added(page, app_url):
    open_app(page, app_url + "/positional-encoding?weights=random&pe=none")
    assert page.locator(".st-key-pe input[role=combobox]").input_value() == "None"
    assert page.locator(".st-key-pe_table").count() == 0
    info = page.locator('[data-testid="stAlertContentInfo"]').first
    assert "nothing is added" in info.inner_text()
    assert query(page)["pe"] == "none"
    assert_healthy(page)


#: Whether the element matched by the selector is inside the window without scrolling.
IN_VIEW = """(selector) => {
    const box = document.querySelector(selector)?.getBoundingClientRect();
    return box !== undefined && box.top >= 0 && box.bottom <= window.innerHeight;
}"""


def scroll_down(page):
    """Scroll to the page's end, as a reader does for the figure, until its heading is gone."""
    page.evaluate(
        """() => { for (const pane of [document.scrollingElement,
            ...document.querySelectorAll('[data-testid="stMain"]')]) pane.scrollTo(0, 1e6); }"""
    )
    page.wait_for_function(f"() => !({IN_VIEW})('[data-testid=stMain] h1')")


def test_tour_next_shows_the_new_steps_heading(page, app_url):
    page.set_viewport_size({"width": 1280, "height": 700})  # a laptop
    open_app(page, app_url + "/tour?step=3")
    scroll_down(page)
    heading = page.locator("[data-testid=stMain] h1").first
    assert not in_view(page, heading)  # the reader scrolled down to the figure
    page.keyboard.press("ArrowRight")
    page.wait_for_url(re.compile(r"[?&]step=4"))
    wait_settled(page)
    assert "4 ·" in heading.inner_text()
    try:  # the page scrolls up as it draws
        page.wait_for_function(IN_VIEW, arg="[data-testid=stMain] h1", timeout=10_000)
    except PlaywrightTimeoutError as error:
        scrolled = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTop")
        raise AssertionError(f"the new heading is out of view: scrollTop {scrolled}") from error
    assert in_view(page, heading)
    assert_healthy(page)


def test_pretrained_pickers_name_the_tokens_the_charts_use_after_new_text(page, app_url):
    open_app(page, app_url + "/pretrained")
    if page.locator(".st-key-pretrained_finder_query").count() == 0:
        pytest.skip("MiniLM is not installed")
    type_text(page, TROPHY)
    query_word = picker_shows(page, "pretrained_finder_query")
    assert query_word == "it"
    assert f"query “{picker_shows(page, 'pretrained_token')}”" in chart_title(
        page, "pretrained_neuron"
    )
    assert f"What “{picker_shows(page, 'pretrained_token')}” attends to" in chart_title(
        page, "pretrained_bar"
    )
    assert_healthy(page)
