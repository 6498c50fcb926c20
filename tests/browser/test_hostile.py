"""Hostile and broken input in a real browser: typed into the UI and sent through the URL.

Each input gives a working page or a clear message: never a traceback, never a dialog,
never an element the input injected. The URL fuzz sends garbage for every state
parameter and expects the defaults and a warning.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from browser_support import (
    IMAGE_ERRORS_SEEN,
    IMAGES_DONE,
    assert_healthy,
    open_app,
    slider,
    wait_settled,
)

from app.state import controls

pytestmark = pytest.mark.browser

INPUTS = {
    "empty": "",
    "whitespace": "   \n\t   ",
    "one token": "it",
    "emoji": "😀 attention 🎉 is 👀 all you need",
    "cjk": "注意力机制 让 模型 关注 重要 的 词",
    "rtl": "الانتباه هو كل ما تحتاجه",
    "combining": "cafe\u0301 n\u0303o a\u030angstro\u0308m",
    "control": "tab\there bell\x07 escape\x1b[31m red zero\u200bwidth",
    "script": "<script>alert('script')</script> the restaurant",
    "img onerror": '<img src=x onerror="alert(1)"> it refused',
    "javascript link": "[click me](javascript:alert(1)) <a href='javascript:alert(2)'>x</a>",
    "markdown": "**bold** # heading | a | b | :red[colour] ![img](x)",
    "latex": r"$\href{javascript:alert(1)}{x}$ $$\alert{y}$$ \(z\)",
}
LONG = " ".join(f"w{i % 97}" for i in range(10_001))

#: Anything an input could have injected into the page.
INJECTED = """() => [
    ...document.querySelectorAll('img[src="x"], [onerror], a[href^="javascript"], iframe'),
    ...[...document.querySelectorAll('script')].filter(s => s.textContent.includes('alert')),
].length"""


@pytest.fixture
def dialogs(page):
    page.add_init_script(IMAGE_ERRORS_SEEN)  # for assert_safe's wait on the images
    seen = []

    def record(dialog):
        seen.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    return seen


def assert_safe(page, dialogs):
    # An image the input injected has failed to load, and its error handler has run.
    page.wait_for_function(IMAGES_DONE, polling=100)
    assert dialogs == []
    assert page.evaluate(INJECTED) == 0
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.errors == []


def assert_working_or_told(page):
    """Charts are drawn, or the page says why not."""
    main = page.locator('[data-testid="stMain"]')
    if "Type some text" in main.inner_text():
        return
    assert_healthy(page)


def settle(page, text):
    """Wait for the rerun: for drawn charts, or (no tokens) for the script to stop."""
    wait_settled(page, charts=any(ch.isalnum() for ch in text))


def test_typed_input(page, app_url, dialogs, subtests):
    """Each input typed in turn into one page, each a subtest of its own."""
    open_app(page, app_url + "/attention")
    box = page.locator(".st-key-text textarea")
    for name, text in INPUTS.items():
        with subtests.test(msg=name):
            box.fill(text)
            box.press("Control+Enter")
            settle(page, text)
            assert_safe(page, dialogs)
            assert_working_or_told(page)
        dialogs.clear()  # a dialog or page error fails the input it came with, not the next
        page.errors.clear()


@pytest.mark.parametrize("name", INPUTS)
def test_input_through_the_url(page, app_url, dialogs, name):
    page.goto(f"{app_url}/causal-mask?text={quote(INPUTS[name])}&tokenizer=words")
    settle(page, INPUTS[name])
    assert_safe(page, dialogs)
    assert_working_or_told(page)


def test_ten_thousand_words_are_cut_with_a_message(page, app_url, dialogs):
    open_app(page, app_url + "/attention?weights=random")
    box = page.locator(".st-key-text textarea")
    box.fill(LONG)
    box.press("Control+Enter")
    wait_settled(page)
    assert_safe(page, dialogs)
    assert_healthy(page)
    assert "first 512" in page.locator('[data-testid="stAlert"]').first.inner_text()


GARBAGE = ["NaN", "inf", "-inf", "-1", "1e400", "9" * 40, "%00", "<b>x</b>", "", "0x10"]


@pytest.mark.parametrize("value", GARBAGE)
def test_url_fuzz_gives_defaults_and_a_warning(page, app_url, dialogs, value):
    keys = ["seed", "d_model", "heads", "scale", "causal", "pe", "tokenizer", "convention"]
    keys += ["layer", "head"]
    params = "&".join(f"{key}={quote(value)}" for key in keys)
    url = f"{app_url}/attention?weights=random&{params}&unknown=1&seed=3&seed={quote(value)}"
    open_app(page, url)
    assert_safe(page, dialogs)
    assert_healthy(page)
    assert page.locator('[data-testid="stAlert"]').count() >= 1
    default_scale = controls.default_scale(16, 1)
    assert slider(page, "d_model").get_attribute("aria-valuetext") == "16"
    assert (
        slider(page, "att_scale").get_attribute("aria-valuetext").startswith(f"{default_scale:.4g}")
    )


@pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed")
def test_a_text_too_long_for_minilm_says_so_and_offers_random(page, app_url, dialogs):
    open_app(page, app_url + "/attention")
    box = page.locator(".st-key-text textarea")
    box.fill(LONG)
    box.press("Control+Enter")
    wait_settled(page, charts=False)
    assert_safe(page, dialogs)
    alert = page.locator('[data-testid="stAlert"]').first.inner_text()
    assert "512" in alert
    assert "Random" in alert
