"""Axis labels and presentation mode as the browser draws them (issue #26, items 3, 4, 5).

Each tick label is read where it is drawn (its SVG text's box) and matched with the bar or
the heatmap column nearest to it: that must be its own token's; no two overlap. Presentation
mode must fit every figure below its bar on a projector's screen, in type of 16 px or more,
and let the presenter change the layer, the head and the query token from its bar. (The
tour's labels on a desktop: test_lecture.py's walk through the tour.)
"""

from __future__ import annotations

import itertools
import re
from urllib.parse import quote

import numpy as np
import pytest
from browser_support import (
    LABEL_OVERLAPS,
    assert_healthy,
    look_at,
    look_at_every_chart,
    next_tour_step,
    open_app,
    open_presenting,
    query,
    slider,
    wait_settled,
)

from app.lecture import tour
from app.state import controls

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed"),
]

SCREENS = {"1280x720": (1280, 720), "1920x1080": (1920, 1080), "desktop": (1400, 1000)}
TROPHY = (
    "The trophy doesn't fit into the brown suitcase because it is too big.",
    "The trophy doesn't fit into the brown suitcase because it is too small.",
)

# Every tick label of chart `key`, with the token of the bar, column or row nearest to it.
_LABELS_AND_NEAREST = r"""(key) => {
    const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const trace = plot._fullData[0];
    const image = plot.querySelector('.heatmaplayer image');
    const bars = [...plot.querySelectorAll('.barlayer .trace:first-child .point path')];
    const out = [];
    for (const letter of ['x', 'y']) {
        const tokens = trace[letter];
        if (!tokens || typeof tokens[0] !== 'string') continue;
        let centres;
        if (image) {  // a heatmap: equal columns (rows) across its image
            const box = image.getBoundingClientRect();
            const [start, size] = letter === 'x' ? [box.left, box.width] : [box.top, box.height];
            centres = tokens.map((_, j) => start + (j + 0.5) * size / tokens.length);
        } else if (letter === 'x' && bars.length === tokens.length) {  // a bar each
            centres = bars.map((bar) => {
                const box = bar.getBoundingClientRect();
                return box.left + box.width / 2;
            });
        } else continue;
        const pitch = Math.abs(centres[1] - centres[0]) || Infinity;
        for (const text of plot.querySelectorAll(`.${letter}axislayer-above .${letter}tick text`)) {
            const box = text.getBoundingClientRect();
            const at = letter === 'x' ? box.left + box.width / 2 : box.top + box.height / 2;
            const gaps = centres.map((c) => Math.abs(c - at));
            const nearest = gaps.indexOf(Math.min(...gaps));
            out.push({label: text.textContent, token: tokens[nearest],
                      off: gaps[nearest] / pitch, axis: letter});
        }
    }
    return out;
}"""


def assert_labels_on_their_tokens(page, key):
    look_at(page, key)  # drawn once near the window
    found = page.evaluate(_LABELS_AND_NEAREST, key)
    assert found, key
    wrong = [f for f in found if f["label"] != f["token"] or f["off"] > 0.5]
    assert wrong == [], (key, wrong[:5])
    return found


def assert_attentions_labels(page, present):
    """On /attention as opened: each tick label on its own token; the bar chart's labels."""
    bar = assert_labels_on_their_tokens(page, "att_bar")
    assert sum(f["axis"] == "x" for f in bar) == 45  # the default passage: every label
    if not present:
        assert len(assert_labels_on_their_tokens(page, "att_weights")) == 90
    assert_labels_on_their_tokens(page, "att_weights")
    return bar


def assert_labels_stay_after_a_step(page, bar):
    """A step of the scale: the charts redraw from the frames, their labels where they were."""
    scale = slider(page, "att_scale")
    scale.focus()
    scale.press("ArrowRight")
    page.wait_for_url(re.compile(r"[?&]scale="))
    wait_settled(page)
    after = assert_labels_on_their_tokens(page, "att_bar")
    # The same labels, placed alike: a redraw updates the plot in place, which may move a
    # label by a fraction of a pixel (0.0003 of the pitch was seen at 1280 × 720).
    assert [(f["label"], f["axis"]) for f in after] == [(f["label"], f["axis"]) for f in bar]
    assert np.allclose([f["off"] for f in after], [f["off"] for f in bar], rtol=0, atol=0.02)
    assert_labels_on_their_tokens(page, "att_weights")


#: /pretrained comparing the two trophy sentences.
TWO_TROPHIES = f"/pretrained?text={quote(TROPHY[0])}&text_b={quote(TROPHY[1])}"


@pytest.mark.parametrize(
    ("screen", "present"),
    [("1280x720", False), ("1920x1080", False), ("desktop", False), ("desktop", True)],
    ids=["1280x720-normal", "1920x1080-normal", "desktop-normal", "desktop-presentation"],
)
def test_every_label_stands_under_its_own_bar_and_column(page, app_url, screen, present):
    """On /attention, after a step of the scale, and on /pretrained comparing two sentences
    (presenting on a projector's screen: test_presentation_mode_fits_a_projector)."""
    page.set_viewport_size(dict(zip(("width", "height"), SCREENS[screen], strict=True)))
    opened = open_presenting if present else open_app
    opened(page, app_url + "/attention")
    assert_healthy(page)
    bar = assert_attentions_labels(page, present)
    assert_labels_stay_after_a_step(page, bar)

    opened(page, app_url + TWO_TROPHIES)
    assert_healthy(page)
    assert_labels_on_their_tokens(page, "pretrained_bar")
    assert_labels_on_their_tokens(page, "pretrained_heatmap")


# Each chart's box, and the smallest type drawn in it.
_FIGURES = r"""() => [...document.querySelectorAll('.js-plotly-plot')]
    .filter((plot) => plot.getBoundingClientRect().height > 0)  // not in a closed expander
    .map((plot) => {
        const box = plot.getBoundingClientRect();
        const sizes = [...plot.querySelectorAll('.main-svg text')]
            .filter((t) => t.textContent.trim())
            .map((t) => parseFloat(getComputedStyle(t).fontSize));
        return {key: plot.closest("[class*='st-key-']")?.className.match(/st-key-(\S+)/)?.[1],
                height: box.height, width: box.right, smallest: Math.min(...sizes)};
    })"""


def assert_figures_fit(page, where):
    look_at_every_chart(page)
    below_bar = page.evaluate(
        "innerHeight - document.querySelector('.st-key-presenter').getBoundingClientRect().bottom"
    )
    width = page.evaluate("innerWidth")
    figures = page.evaluate(_FIGURES)
    assert figures, where
    for figure in figures:
        assert figure["height"] <= below_bar, (where, figure)
        assert figure["width"] <= width, (where, figure)
        assert figure["smallest"] >= 16, (where, figure)


#: Display equations wider than their box (KaTeX overhangs a pixel or two).
EQUATIONS_CUT = """() => [...document.querySelectorAll('.katex-display')]
    .filter((e) => e.scrollWidth > e.clientWidth + 4)
    .map((e) => e.textContent.slice(0, 40))"""


def assert_attention_fits_the_screen(page, width):
    """No equation cut off on the right, nor the scale slider; the weights heatmap's
    rotated key labels apart, none piled on another."""
    assert page.evaluate(EQUATIONS_CUT) == []
    scale = slider(page, "att_scale").bounding_box()
    assert scale["x"] >= 0
    assert scale["x"] + scale["width"] <= width  # the slider is not cut off on the right
    look_at(page, "att_weights")  # drawn once near the window
    ends = page.evaluate(  # a rotated label ends at its tick
        """() => [...document.querySelectorAll('.st-key-att_weights .xtick text')]
            .map((t) => t.getBoundingClientRect().right).sort((a, b) => a - b)"""
    )
    assert min(b - a for a, b in itertools.pairwise(ends)) >= 12  # no pile of keys


@pytest.mark.parametrize("screen", ["1280x720", "1920x1080"])
def test_presentation_mode_fits_a_projector(page, app_url, screen):
    """Presenting on a projector's screen: every figure below the presenter bar in type of
    16 px or more, on /attention, /multi-head, /pretrained and every step of the tour;
    nothing cut off on the right; every tick label under its own bar and column (after a
    step of the scale too), none over another on any step of the tour."""
    width, height = SCREENS[screen]
    page.set_viewport_size({"width": width, "height": height})
    open_presenting(page, app_url + "/attention")
    assert_healthy(page)
    assert_attention_fits_the_screen(page, width)
    bar = assert_attentions_labels(page, present=True)
    assert_figures_fit(page, "/attention")
    assert_labels_stay_after_a_step(page, bar)

    open_presenting(page, app_url + "/multi-head")
    assert_healthy(page)
    assert_figures_fit(page, "/multi-head")

    open_presenting(page, app_url + TWO_TROPHIES)
    assert_healthy(page)
    assert_labels_on_their_tokens(page, "pretrained_bar")
    assert_labels_on_their_tokens(page, "pretrained_heatmap")
    assert_figures_fit(page, TWO_TROPHIES)

    open_presenting(page, app_url + "/tour?step=1")
    for step in range(1, len(tour.STEPS) + 1):
        assert query(page)["step"] == str(step)
        assert_healthy(page)
        assert page.evaluate(LABEL_OVERLAPS) == [], f"tour step {step}"
        assert_figures_fit(page, f"tour step {step}")
        if step < len(tour.STEPS):
            next_tour_step(page, step)


def choose(page, key, option):
    """Pick ``option`` in the selectbox with widget key ``key``."""
    box = page.locator(f".st-key-{key} input[role=combobox]")
    box.click()
    box.press_sequentially(option)  # filters the list, which draws only what is in view
    page.get_by_role("option", name=option, exact=True).click()


def test_the_presenter_bar_changes_head_layer_and_query_and_the_link_follows(page, app_url):
    page.set_viewport_size({"width": 1280, "height": 720})
    open_presenting(page, app_url + "/attention")
    for key in ("leave_presentation", "present_layer", "present_head", "presenter_query"):
        box = page.locator(f".st-key-{key}").bounding_box()
        assert box is not None, key
        assert box["y"] < 76, key  # in the bar at the top of the screen
        assert box["x"] + box["width"] <= 1280, key
    choose(page, "present_head", "Head 7")
    page.wait_for_url(re.compile(r"[?&]head=7\b"))
    wait_settled(page)
    choose(page, "present_layer", "Layer 4")
    page.wait_for_url(re.compile(r"[?&]layer=4\b"))
    wait_settled(page)
    choose(page, "attention_query", "Query token: restaurant (2)")
    page.wait_for_url(re.compile(r"[?&]query=2(:|%3A)restaurant"))
    wait_settled(page)
    assert_healthy(page)
    assert "MiniLM's layer 4, head 7" in page.locator('[data-testid="stMain"]').inner_text()
    look_at(page, "att_bar")  # a chart far from the window is drawn when it comes near
    assert page.locator(".st-key-att_bar .gtitle").text_content() == "What “restaurant” attends to"
    assert query(page)["present"] == "1"
    assert not page.locator('[data-testid="stSidebar"]').is_visible()


@pytest.mark.parametrize("width", [1024, 1920])
def test_the_presenter_bar_holds_its_controls_on_one_line(page, app_url, width):
    page.set_viewport_size({"width": width, "height": 768})
    open_presenting(page, app_url + "/attention")
    boxes = [
        page.locator(f".st-key-{key}").bounding_box()
        for key in ("leave_presentation", "present_layer", "present_head", "presenter_query")
    ]
    for box in boxes:
        assert box["y"] >= 0
        assert box["y"] + box["height"] <= 76  # inside the bar
    for left, right in itertools.pairwise(boxes):
        assert left["x"] + left["width"] <= right["x"]  # side by side, none over another
    assert boxes[-1]["x"] + boxes[-1]["width"] <= width


# The line view's chart: its drawn height, its width, its element's width, its figure's height,
# and the lines its title takes.
_LINES_CHART = """() => {
    const gd = document.querySelector('.st-key-mh_lines .js-plotly-plot');
    return {height: gd._fullLayout.height, width: gd._fullLayout.width, element: gd.clientWidth,
            title: gd.querySelectorAll('.g-gtitle .gtitle .line').length};
}"""

# The line view's chart is drawn at its element's width.
_FOLLOWED = """() => {
    const gd = document.querySelector('.st-key-mh_lines .js-plotly-plot');
    return Math.abs(gd._fullLayout.width - gd.clientWidth) <= 1;
}"""
# No chart has a redraw queued or under way (plot.js).
_DRAWN = "() => !document.querySelector('[data-pending]')"


def test_a_chart_drawn_narrow_is_drawn_again_at_its_new_width(page, app_url):
    # Presentation mode's columns stack, the sidebar closes: a chart drawn in a narrow column
    # gets its figure's height back when its element widens, not the height a title wrapped
    # to the narrow width took (a CI failure: the line view 13 px taller than the room below
    # the presenter bar).
    page.set_viewport_size({"width": 1400, "height": 1000})
    open_app(page, app_url + "/multi-head")
    look_at(page, "mh_lines")  # a chart far from the window follows its width when near
    wide = page.evaluate(_LINES_CHART)
    page.evaluate("document.querySelector('.st-key-mh_lines').style.maxWidth = '360px'")
    page.wait_for_function(_FOLLOWED)  # drawn again, narrow, with no run
    page.wait_for_function(_DRAWN)
    narrow = page.evaluate(_LINES_CHART)
    assert narrow["width"] == narrow["element"] < wide["width"], (wide, narrow)
    assert narrow["title"] > wide["title"], (wide, narrow)  # its title wrapped …
    assert narrow["height"] > wide["height"], (wide, narrow)  # … and took room above the plot
    slider(page, "mh_lines_threshold").press("ArrowRight")  # a new figure, drawn narrow
    wait_settled(page)
    assert page.evaluate(_LINES_CHART)["height"] == narrow["height"]
    page.evaluate("document.querySelector('.st-key-mh_lines').style.maxWidth = ''")
    page.wait_for_function(_FOLLOWED)
    page.wait_for_function(_DRAWN)
    assert page.evaluate(_LINES_CHART) == wide
