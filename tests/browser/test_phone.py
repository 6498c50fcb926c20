"""A phone (390 × 844) and a desktop in headless Chromium: nothing cut off or covered.

Measured from the bounding boxes the browser lays out (``browser_support.CLIPPED``; the
walk through the tour in test_lecture.py checks a desktop's steps with it too): no
equation wider than its box, no element wider than the page's column and no page that
scrolls sideways; every chart's labels inside the chart (a chart too crowded for the phone
is drawn wider, and its own column scrolls); plotly.js's toolbar (the mode bar) over no
title; every row of a short table inside the table, and each row's text inside its row's
borders.
"""

from __future__ import annotations

import contextlib
import re

import pytest
from browser_support import (
    LABEL_OVERLAPS,
    assert_healthy,
    clipped,
    look_at,
    next_tour_step,
    open_app,
    wait_settled,
)
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from app.lecture import tour
from app.state import controls
from engine.resources import smollm2_file

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1400, "height": 1000}


@pytest.mark.parametrize("size", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_nothing_is_cut_or_covered_on_pretrained(page, app_url, size):
    """(/attention: the first checks of the two tests that open it on a phone and a desktop.)"""
    page.set_viewport_size(size)
    open_app(page, f"{app_url}/pretrained")
    assert_healthy(page)
    assert clipped(page) == []


def test_nothing_is_cut_on_a_phone_and_a_tables_height_holds_when_its_numbers_change(page, app_url):
    """/attention on a phone: nothing cut or covered. The phone wraps the means table's
    header; new numbers (the mask) keep every row shown.

    The fit is measured once per width, layout and header: a redraw with new data is not
    measured again, so the height it found must outlive the data it was found with.
    """
    page.set_viewport_size(PHONE)
    open_app(page, f"{app_url}/attention")
    assert_healthy(page)
    assert clipped(page) == []
    look_at(page, "att_saturation_mean")
    assert [found for found in clipped(page) if "att_saturation_mean" in found] == []
    page.locator(".st-key-causal_control input").focus()
    page.keyboard.press("Space")
    wait_settled(page)
    look_at(page, "att_saturation_mean")
    assert [found for found in clipped(page) if "att_saturation_mean" in found] == []
    assert_healthy(page)


#: Each line of chart ``key``'s title as drawn, and its right edge within the chart.
TITLE_LINES = """(key) => {
    const chart = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const box = chart.getBoundingClientRect();
    return [...chart.querySelectorAll('.gtitle tspan.line')].map((line) => ({
        text: line.textContent, right: line.getBoundingClientRect().right - box.left,
        width: box.width,
    }));
}"""


def test_the_home_pages_note_keeps_its_numbers_whole_on_a_phone(page, app_url):
    """/'s X on a phone: its note, "colours clipped at ±1.64 (99th percentile); |max| 9.66",
    broke between "|max|" and 9.66, and onto a second line it did not need (the fit measured
    it at the title's size; plotly.js writes a note at 70 %)."""
    page.set_viewport_size(PHONE)
    open_app(page, f"{app_url}/")
    assert_healthy(page)
    look_at(page, "home_x")
    lines = page.evaluate(TITLE_LINES, "home_x")
    notes = [line for line in lines if "clipped" in line["text"]]
    assert len(notes) == 1, lines
    note = notes[0]["text"].strip("\u200b")  # plotly.js's markers around a <sup>
    assert re.search(r"at\s±[\d.]+ .*\|max\|\s[\d.]+$", note), lines  # one line, numbers whole
    assert all(line["right"] <= line["width"] for line in lines), lines


#: What of chart ``key`` a phone cannot show: its panels and their titles past the window's
#: sides (a plot cannot be scrolled sideways by touch: plotly.js takes the drag), and panel
#: titles that run into each other.
OFF_THE_PHONE = """(key) => {
    const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const named = (selector) => [...gd.querySelectorAll(selector)]
        .map((e) => [e.textContent || e.parentElement.className.baseVal, e.getBoundingClientRect()])
        .filter(([, r]) => r.width);
    const off = named('.nsewdrag, .annotation-text, .gtitle, .cbtitle text')
        .filter(([, r]) => r.left < -1 || r.right > window.innerWidth + 1)
        .map(([name]) => `off the side: ${name}`);
    const titles = named('.annotation-text');
    const into = titles.flatMap(([a, p], i) => titles.slice(i + 1)
        .filter(([, q]) => p.left < q.right && q.left < p.right && p.top < q.bottom
            && q.top < p.bottom)
        .map(([b]) => `${a} runs into ${b}`));
    return [...off, ...into];
}"""


@pytest.mark.parametrize(
    ("path", "keys"),
    [
        ("/attention", ["att_saturation"]),
        ("/tour?step=4", ["tour_step_4"]),
        ("/multi-head", ["mh_heads"]),
        ("/encoder-layer", ["enc_norms"]),
        ("/pretrained", ["pretrained_neuron", "pretrained_sinks"]),
    ],
)
def test_figures_of_several_panels_are_stacked_to_fit_a_phone(page, app_url, path, keys):
    """Panels side by side that do not fit a phone's width stand in fewer columns: every
    panel and title inside the window, no two panel titles over each other ("head 4 ·
    3.17 bitshead 5 · 3.08 bits"); nothing else on the page cut off."""
    page.set_viewport_size(PHONE)
    open_app(page, f"{app_url}{path}")
    for key in keys:
        look_at(page, key)
        with contextlib.suppress(PlaywrightTimeoutError):  # the fit lands a frame or two later
            fits = f"(key) => ({OFF_THE_PHONE})(key).length === 0"
            page.wait_for_function(fits, arg=key, timeout=5000)
        assert page.evaluate(OFF_THE_PHONE, key) == [], key
    assert clipped(page) == []


#: Chart ``key``'s colour bars: the long side of each bar, whether it lies inside the chart,
#: and the panels (their drag areas) it covers.
COLOUR_BARS = """(key) => {
    const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const box = gd.getBoundingClientRect();
    const panels = [...gd.querySelectorAll('.nsewdrag')].map((e) => e.getBoundingClientRect());
    return [...gd.querySelectorAll('.colorbar')].map((bar) => {
        const fill = bar.querySelector('.cbfill').getBoundingClientRect();
        const all = bar.getBoundingClientRect();
        return {
            long: Math.max(fill.width, fill.height),
            inside: all.left >= box.left - 1 && all.right <= box.right + 1,
            covers: panels.filter((p) => p.left < fill.right && fill.left < p.right
                && p.top < fill.bottom && fill.top < p.bottom).length,
        };
    });
}"""


def test_a_stacked_neuron_views_colour_bar_stays_a_bar_under_its_panel(page, app_url):
    """/pretrained's neuron view on a phone: its panels stacked, the horizontal colour bar
    of k and q⊙k stays a bar as long as half its panel, under it, over no panel; before,
    stacking gave it a vertical panel's place and length, and it shrank to a few pixels
    of tick labels beside the keys' panel (390 × 844)."""
    page.set_viewport_size(PHONE)
    open_app(page, f"{app_url}/pretrained")
    look_at(page, "pretrained_neuron")
    with contextlib.suppress(PlaywrightTimeoutError):  # the fit lands a frame or two later
        fits = f"(key) => ({OFF_THE_PHONE})(key).length === 0"
        page.wait_for_function(fits, arg="pretrained_neuron", timeout=5000)
    [bar] = page.evaluate(COLOUR_BARS, "pretrained_neuron")
    assert bar["long"] >= 120, bar
    assert bar["inside"], bar
    assert bar["covers"] == 0, bar


#: The text of every label or button Streamlit cuts short with an ellipsis ("Keys use W_Q
#: (attention by simi…").
CUT_SHORT = """() => [...document.querySelectorAll(
        '[data-testid="stMainBlockContainer"] :is([data-testid="stWidgetLabel"], button)')]
    .flatMap((el) => [el, ...el.querySelectorAll('*')])
    .filter((e) => e.clientWidth && e.scrollWidth > e.clientWidth + 1
        && getComputedStyle(e).textOverflow === 'ellipsis')
    .map((e) => e.textContent)"""


@pytest.mark.parametrize("path", ["/vision", "/pretrained"])
def test_no_label_or_button_is_cut_short_on_a_laptop(page, app_url, path):
    """1280 × 720: /vision's switch said "Keys use W_Q (attention by simi…" and /pretrained's
    last minimal pair "councilmen: feared / advo…" (equal columns, the longest name cut)."""
    page.set_viewport_size({"width": 1280, "height": 720})
    open_app(page, f"{app_url}{path}")
    assert page.evaluate(CUT_SHORT) == []


#: How far chart ``key``'s table cells' borders reach past the right of the figure, in px.
TABLE_OVERHANG = """(key) => {
    const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const svg = gd.querySelector('.main-svg').getBoundingClientRect();
    const cells = [...gd.querySelectorAll('.table .cell-rect')];
    const stroke = parseFloat(getComputedStyle(cells[0]).strokeWidth);
    return Math.max(...cells.map((c) => c.getBoundingClientRect().right)) + stroke / 2 - svg.right;
}"""


@pytest.mark.parametrize("size", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_the_tours_token_table_keeps_its_right_border(page, app_url, size):
    """Step 1's table of tokens and ids: its last column's border inside the figure; at a
    right margin of 0 the figure's edge cut it off and the table stood open on the right."""
    page.set_viewport_size(size)
    open_app(page, f"{app_url}/tour")
    assert page.evaluate(TABLE_OVERHANG, "tour_step_1") <= 0


#: The smallest type an equation fitted to a narrow screen may be scaled down to, in px.
EQUATION_MIN_FONT = 7
#: ``window.__fittedTo``: chart/equations.js's note of the room (the width of its layout
#: block) and the text each display equation was last fitted for.
FITTED_TO = """async () => {
    const url = '/_stcore/bidi-components/attention-explorer.page/equations.js';
    window.__fittedTo = (await import(url)).fittedTo;
}"""
#: True once every display equation is fitted to the room it has now (:data:`FITTED_TO`).
EQUATIONS_FITTED = """() => [...document.querySelectorAll('.katex-display')].every((display) => {
    const katex = display.querySelector(':scope > .katex');
    const block = '[data-testid="stVerticalBlock"], [data-testid="stHorizontalBlock"]';
    const room = (display.closest(block) ?? display).clientWidth;
    return !katex || room === 0 || window.__fittedTo(katex, room);
})"""


def wait_fitted(page):
    """After a change of the window or the column: wait for the two animation frames that
    run the page's fitting (the resize or its observer, then the fit it schedules), and
    until every equation is fitted to its room."""
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.evaluate(FITTED_TO)
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


#: The sidebar's mask switch: its box's width, and its label's height in lines of its type.
MASK_SWITCH = """() => {
    const box = document.querySelector('.st-key-causal_control input').getBoundingClientRect();
    const label = document.querySelector('.st-key-causal_control label span');
    const size = parseFloat(getComputedStyle(label).fontSize);
    return {box: box.width, lines: label.getBoundingClientRect().height / (1.7 * size)};
}"""


def test_nothing_is_cut_on_a_desktop_and_equations_fit_again_when_their_column_narrows(
    page, app_url
):
    """/attention on a desktop: nothing cut or covered, the mask switch a box beside its
    label on one line. The sidebar opening or presentation mode changes the column's width,
    not the window's: equations fit to the narrower column, and grow back when it widens
    again."""
    page.set_viewport_size(DESKTOP)
    open_app(page, f"{app_url}/attention")
    assert_healthy(page)
    assert clipped(page) == []
    switch = page.evaluate(MASK_SWITCH)
    assert switch["box"] < 40, switch  # a box, not the sidebar's width
    assert switch["lines"] <= 1, switch
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


def test_no_step_of_the_tour_is_cut_or_covered_on_a_phone(page, app_url):
    """Every step on a phone (on a desktop: test_lecture.py's walk through the tour)."""
    page.set_viewport_size(PHONE)
    open_app(page, f"{app_url}/tour")
    for step in range(1, len(tour.STEPS) + 1):
        assert clipped(page) == [], f"step {step}"
        if step < len(tour.STEPS):
            next_tour_step(page, step)


#: The model view as plotly.js drew it: the bottom of its plot and of its grid (the heatmap's
#: image), in the window's pixels.
MODEL_VIEW = """() => {
    const gd = document.querySelector('.st-key-pretrained_model_view .js-plotly-plot');
    const size = gd._fullLayout._size;
    const grid = gd.querySelector('.heatmaplayer image').getBoundingClientRect();
    return {plot: gd.getBoundingClientRect().top + size.t + size.h, grid: grid.bottom};
}"""


@pytest.mark.parametrize(
    "model",
    [
        pytest.param(
            "smollm2",
            marks=pytest.mark.skipif(smollm2_file() is None, reason="SmolLM2 is not installed"),
        ),
        pytest.param(
            "minilm",
            marks=pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed"),
        ),
    ],
)
def test_on_a_phone_the_model_view_is_as_tall_as_its_grid_its_labels_apart(page, app_url, model):
    """SmolLM2's ``H3 · KV1`` slanted into each other on a phone, and its grid, drawn to the
    phone's width, left 1,660 px blank under it (MiniLM's 400 px): the browser cuts the
    figure to the grid (the chart component's narrow.js)."""
    page.set_viewport_size(PHONE)
    open_app(page, f"{app_url}/pretrained?model={model}")
    look_at(page, "pretrained_model_view")
    with contextlib.suppress(PlaywrightTimeoutError):  # the fit lands a frame or two later
        cut = f"() => {{ const d = ({MODEL_VIEW})(); return d.plot - d.grid < 2; }}"
        page.wait_for_function(cut, timeout=5000)
    drawn = page.evaluate(MODEL_VIEW)
    assert drawn["plot"] - drawn["grid"] < 2, drawn
    overlaps = page.evaluate(LABEL_OVERLAPS)
    assert [hit for hit in overlaps if hit.startswith("pretrained_model_view")] == []
    assert clipped(page) == []
