"""A phone (390 × 844) and a desktop in headless Chromium: nothing cut off or covered.

Measured from the bounding boxes the browser lays out: no equation wider than its box,
no element wider than the page's column and no page that scrolls sideways; every chart's
labels inside the chart (a chart too crowded for the phone is drawn wider, and its own
column scrolls); plotly.js's toolbar (the mode bar) over no title; every row of a short
table inside the table, and each row's text inside its row's borders.
"""

from __future__ import annotations

import contextlib

import pytest
from browser_support import assert_healthy, look_at, next_tour_step, open_app, wait_settled
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from app.lecture import tour

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1400, "height": 1000}

#: Everything cut off or covered on the page, as readable strings (empty when none is).
CLIPPED = """() => {
    const found = [];
    const name = (el) => el.closest('[class*="st-key-"]')?.className.match(/st-key-(\\S+)/)?.[1]
        ?? el.tagName;
    const main = document.querySelector('[data-testid="stMainBlockContainer"]');
    const column = main.getBoundingClientRect();
    if (document.documentElement.scrollWidth > window.innerWidth) {
        found.push('page scrolls sideways');
    }
    for (const el of main.querySelectorAll('[data-testid="stElementContainer"]')) {
        const r = el.getBoundingClientRect();
        if (r.width && (r.right > column.right + 1 || r.left < column.left - 1)) {
            found.push(`element ${name(el)} runs off the column`);
        }
    }
    for (const el of main.querySelectorAll('.katex-display')) {
        if (el.clientWidth && el.scrollWidth > el.clientWidth + 4) {  // KaTeX overhangs 1-2 px
            found.push(`equation cut: ${el.textContent.slice(0, 30)}`);
        }
    }
    const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom
        && b.top < a.bottom;
    for (const gd of main.querySelectorAll('.js-plotly-plot')) {
        const box = gd.getBoundingClientRect();
        if (!box.width) continue;
        const key = name(gd);
        const texts = gd.querySelectorAll('.gtitle, .annotation-text, .legendtext, '
            + '.g-xtitle text, .g-ytitle text, .cbtitle text, .colorbar text');
        for (const t of texts) {
            const r = t.getBoundingClientRect();
            if (r.width && (r.right > box.right + 1 || r.left < box.left - 1)) {
                found.push(`${key}: “${t.textContent.slice(0, 30)}” runs off the chart`);
            }
        }
        const titles = [...gd.querySelectorAll('.gtitle, .annotation-text')]
            .map((t) => [t.textContent, t.getBoundingClientRect()]).filter(([, r]) => r.width);
        const bar = gd.querySelector('.modebar');
        if (bar) {
            for (const [text, r] of titles) {
                if (overlap(bar.getBoundingClientRect(), r)) {
                    found.push(`${key}: the mode bar covers “${text.slice(0, 30)}”`);
                }
            }
        }
        const table = gd.querySelector('.table');
        const rows = gd.data?.[0]?.cells?.values?.[0]?.length ?? 0;
        if (table && rows <= 20) {  // a longer table scrolls its rows, as meant
            for (const cell of table.querySelectorAll('.column-cell')) {
                const text = cell.querySelector('.cell-text')?.getBoundingClientRect();
                const rect = cell.querySelector('.cell-rect')?.getBoundingClientRect();
                if (!text || !rect || !text.height) continue;
                if (text.bottom > box.bottom + 0.5 || text.top < box.top - 0.5) {
                    found.push(`${key}: a row is cut off (“${cell.textContent.slice(0, 20)}”)`);
                } else if (text.bottom > rect.bottom + 0.5) {
                    found.push(`${key}: “${cell.textContent.slice(0, 20)}” crosses its border`);
                }
            }
        }
    }
    return [...new Set(found)];
}"""


def clipped(page, settle_ms=5000):
    """What is cut or covered once the page's own fitting has run (it runs after a frame).

    Under load the fitting (equations scaled, titles wrapped) can land a few frames after
    the page reports settled: wait up to ``settle_ms`` for nothing to be found, then report.
    """
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function(f"() => ({CLIPPED})().length === 0", timeout=settle_ms)
    return page.evaluate(CLIPPED)


@pytest.mark.parametrize("size", [PHONE, DESKTOP], ids=["phone", "desktop"])
@pytest.mark.parametrize("path", ["attention", "pretrained"])
def test_nothing_is_cut_or_covered(page, app_url, path, size):
    page.set_viewport_size(size)
    open_app(page, f"{app_url}/{path}")
    assert_healthy(page)
    assert clipped(page) == []


def test_a_tables_fitted_height_holds_when_its_numbers_change(page, app_url):
    """A phone wraps the means table's header; new numbers (the mask) keep every row shown.

    The fit is measured once per width, layout and header: a redraw with new data is not
    measured again, so the height it found must outlive the data it was found with.
    """
    page.set_viewport_size(PHONE)
    open_app(page, f"{app_url}/attention")
    look_at(page, "att_saturation_mean")
    assert [found for found in clipped(page) if "att_saturation_mean" in found] == []
    page.locator(".st-key-causal_control input").focus()
    page.keyboard.press("Space")
    wait_settled(page)
    look_at(page, "att_saturation_mean")
    assert [found for found in clipped(page) if "att_saturation_mean" in found] == []
    assert_healthy(page)


#: The smallest type an equation fitted to a narrow screen may be scaled down to, in px.
EQUATION_MIN_FONT = 7
#: True once every display equation is fitted to the room it has now: chart/equations.js
#: notes on each the room (the width of its layout block) and the text it last fitted.
EQUATIONS_FITTED = """() => [...document.querySelectorAll('.katex-display')].every((display) => {
    const katex = display.querySelector(':scope > .katex');
    const block = '[data-testid="stVerticalBlock"], [data-testid="stHorizontalBlock"]';
    const room = (display.closest(block) ?? display).clientWidth;
    return !katex || room === 0 || (katex.aeRoom === room && katex.aeText === katex.textContent);
})"""


def wait_fitted(page):
    """After a change of the window or the column: wait for the two animation frames that
    run the page's fitting (the resize or its observer, then the fit it schedules), and
    until every equation is fitted to its room."""
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.wait_for_function(EQUATIONS_FITTED, polling=100)
EQUATION_FONTS = """() => [...document.querySelectorAll('.katex-display > .katex')]
    .filter((k) => k.getBoundingClientRect().width)
    .map((k) => parseFloat(getComputedStyle(k).fontSize))"""


def test_equations_stay_readable_when_the_window_changes(page, app_url):
    """Fitted to a phone, an equation shrinks to its column once, not again and again."""
    page.set_viewport_size(PHONE)
    open_app(page, f"{app_url}/attention")
    for height in (3000, PHONE["height"], 5000):  # as a full-page screenshot grows it
        page.set_viewport_size({"width": PHONE["width"], "height": height})
        wait_fitted(page)
        fonts = page.evaluate(EQUATION_FONTS)
        assert fonts
        assert min(fonts) >= EQUATION_MIN_FONT, (height, fonts)
    assert clipped(page) == []


def test_equations_fit_again_when_their_column_narrows_without_the_window(page, app_url):
    # The sidebar opening or presentation mode changes the column's width, not the window's:
    # equations fit to the narrower column, and grow back when it widens again.
    page.set_viewport_size(DESKTOP)
    open_app(page, f"{app_url}/attention")
    assert clipped(page) == []
    wide = page.evaluate(EQUATION_FONTS)
    column = "document.querySelector('[data-testid=\"stMainBlockContainer\"]').style.maxWidth"
    page.evaluate(f"{column} = '{PHONE['width']}px'")
    wait_fitted(page)
    assert [found for found in clipped(page) if found.startswith("equation")] == []
    narrow = page.evaluate(EQUATION_FONTS)
    assert min(narrow) < min(wide)  # fitted to the narrow column …
    assert min(narrow) >= EQUATION_MIN_FONT  # … and still readable
    page.evaluate(f"{column} = ''")
    wait_fitted(page)
    assert page.evaluate(EQUATION_FONTS) == wide


@pytest.mark.parametrize("size", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_no_step_of_the_tour_is_cut_or_covered(page, app_url, size):
    page.set_viewport_size(size)
    open_app(page, f"{app_url}/tour")
    for step in range(1, len(tour.STEPS) + 1):
        assert clipped(page) == [], f"step {step}"
        if step < len(tour.STEPS):
            next_tour_step(page, step)
