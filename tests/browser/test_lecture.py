"""Lecture features in a real browser: the tour to its end, presentation mode, CSV, links."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import pytest
from apptest_support import chart_payloads
from apptest_support import open_app as apptest_open
from browser_support import (
    LABEL_OVERLAPS,
    assert_healthy,
    chart,
    clipped,
    drag,
    in_view,
    next_tour_step,
    open_app,
    open_presenting,
    query,
    slider,
    unplugged_page,
    wait_settled,
)
from PIL import Image

from app.lecture import tour
from app.state import controls
from app.views import axes

pytestmark = pytest.mark.browser


def test_the_tour_can_be_followed_to_its_end(page, app_url):
    """Every step in turn, on a desktop's window: its heading and link, no error, no tick
    labels over each other, nothing cut off or covered (on a phone: test_phone.py); the
    first step's "Next" on screen, the heads' step with token labels."""
    open_app(page, app_url + "/tour")
    assert in_view(page, page.locator(".st-key-tour_next button")), "step 1: Next is off screen"
    heads = next(i for i, s in enumerate(tour.STEPS, 1) if s.page == "multi_head")
    for step in range(1, len(tour.STEPS) + 1):
        heading = page.locator('[data-testid="stMain"] h1').first
        assert heading.inner_text().strip() == tour.STEPS[step - 1].title
        assert query(page)["step"] == str(step)
        assert_healthy(page)
        assert page.evaluate(LABEL_OVERLAPS) == [], f"step {step}"
        assert clipped(page) == [], f"step {step}"
        if step == heads:
            assert_heads_have_token_labels(page, step)
        if step < len(tour.STEPS):
            next_tour_step(page, step)
    assert "End of the tour" in page.locator('[data-testid="stMain"]').inner_text()


def assert_heads_have_token_labels(page, step):
    """The panels share their axes: keys along the bottom row, queries down the left
    column, one label in k when they do not all fit (their places: test_labels.py)."""
    chart = page.locator(f".st-key-tour_step_{step}")
    keys = chart.locator(".xaxislayer-above text").all_text_contents()
    queries = chart.locator(".yaxislayer-above text").all_text_contents()
    assert keys[:1] == queries[:1] == ["[CLS]"], (keys[:3], queries[:3])
    assert {"restaurant", "it"} & set(keys + queries)  # the words of step 5's row


def test_a_tour_link_opens_its_step(page, app_url):
    open_app(page, app_url + "/tour?step=6")
    assert page.locator('[data-testid="stMain"] h1').first.inner_text().strip() == (
        tour.STEPS[5].title
    )
    for key in ("tour_back", "tour_next"):  # one arrow: the badge that names the key
        text = page.locator(f".st-key-{key} button").inner_text()
        assert sum(text.count(arrow) for arrow in "←→") == 1, text


def test_presentation_mode_hides_the_controls_but_the_bar_and_scale_and_switches_off(page, app_url):
    open_app(page, app_url + "/attention?present=1")
    assert_healthy(page)
    assert not page.locator('[data-testid="stSidebar"]').is_visible()
    picker = page.locator(".st-key-attention_query")  # the token picker: in the presenter bar
    assert picker.is_visible()
    assert picker.bounding_box()["y"] < 76
    assert not page.locator(".st-key-attention_compare").is_visible()
    assert page.locator('[data-testid="stDownloadButton"]').count() == 0
    scale = slider(page, "att_scale")
    assert scale.is_visible()  # dragging it is the page's demonstration
    assert scale.bounding_box()["height"] >= 32  # a thumb to grab in front of a class

    scale.scroll_into_view_if_needed()
    page.evaluate("window.__aeFrames = []")
    drag(page, 0.5, 0.9, 20)
    assert len(set(page.evaluate("window.__aeFrames.map(f => f.stop)"))) >= 5  # played live
    page.mouse.up()
    page.wait_for_url(re.compile(r"[?&]scale="))
    wait_settled(page)
    assert query(page)["present"] == "1"
    assert_healthy(page)

    leave = page.locator(".st-key-leave_presentation button")
    assert leave.is_visible()
    leave.click()
    page.wait_for_function("() => !location.search.includes('present=1')")
    wait_settled(page)
    assert page.locator('[data-testid="stSidebar"]').is_visible()
    assert slider(page, "att_scale").is_visible()


def test_csv_download_has_the_matrix_and_its_labels(page, app_url):
    text = "the%20cat%20sat%20on%20the%20mat"
    open_app(page, f"{app_url}/attention?weights=random&tokenizer=words&text={text}")
    with page.expect_download() as download:
        page.locator(".st-key-att_weights_csv button").click()
    assert download.value.suggested_filename.startswith("attention-explorer_att_weights_")
    frame = pd.read_csv(download.value.path(), index_col=0)
    assert frame.shape == (6, 6)
    labels = ["0: the", "1: cat", "2: sat", "3: on", "4: the", "5: mat"]  # "the" twice
    assert list(frame.index) == labels
    assert frame.columns.tolist() == labels
    assert frame.sum(axis=1).round(4).eq(1.0).all()


def test_a_copied_link_reproduces_the_view_in_a_fresh_browser(page, app_url, browser):
    open_app(page, app_url + "/attention?tokenizer=words&text=the%20restaurant%20said%20it")
    slider(page, "att_scale").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_url(re.compile(r"[?&]scale="))
    wait_settled(page)
    page.locator(".st-key-causal_control label").click()
    page.wait_for_url(re.compile(r"[?&]causal=1"))
    wait_settled(page)
    page.get_by_text("Copy link to this view").click()
    link = page.locator('[data-testid="stSidebar"] .ae-share code').first.inner_text().strip()
    assert "causal=1" in link
    assert "scale=" in link
    before = chart(page, "att_weights")

    with unplugged_page(browser) as fresh:
        open_app(fresh, link)
        assert_healthy(fresh)
        assert fresh.locator(".st-key-causal_control input").is_checked()
        assert slider(fresh, "att_scale").get_attribute("aria-valuetext") == slider(
            page, "att_scale"
        ).get_attribute("aria-valuetext")
        assert chart(fresh, "att_weights") == before


def share_box(page):
    """The links the share box offers (the view's, and the same in presentation mode): each
    shown whole where the box folds out, not in a scrolling box (a popover at the sidebar's
    foot was one of 84 px, which hid the second)."""
    page.get_by_text("Copy link to this view").click()
    codes = page.locator('[data-testid="stSidebar"] .ae-share code')
    codes.first.wait_for()
    assert codes.count() == 2
    for code in codes.all():
        code.scroll_into_view_if_needed()
        assert in_view(page, code), code.inner_text()
        assert code.evaluate(SCROLLS_INSIDE) is None, code.inner_text()
    return [text.strip() for text in codes.all_inner_texts()]


#: The nearest ancestor of an element that scrolls within the sidebar (its own scroller
#: excepted), or null.
SCROLLS_INSIDE = """(el) => {
    const sidebar = el.closest('[data-testid="stSidebarContent"]');
    for (let node = el.parentElement; node && node !== sidebar; node = node.parentElement) {
        if (node.scrollHeight > node.clientHeight + 1
            && /auto|scroll/.test(getComputedStyle(node).overflowY)) return node.className;
    }
    return null;
}"""


#: A slide's first screen: the title, the first chart in the page's order, where it and its
#: texts are drawn, and the prose (paragraphs, captions, equations) drawn between them.
FIRST_SCREEN = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    const title = main.querySelector('h1').getBoundingClientRect();
    const first = [...main.querySelectorAll('.js-plotly-plot')][0];
    const box = first.getBoundingClientRect();
    const texts = [...first.querySelectorAll('.gtitle, .g-xtitle text, .g-ytitle text')]
        .map((t) => t.getBoundingClientRect()).filter((r) => r.width);
    const prose = '[data-testid="stMarkdownContainer"] p, .katex-display, '
        + '[data-testid="stCaptionContainer"]';
    const between = [...main.querySelectorAll(prose)]
        .map((e) => e.getBoundingClientRect())
        .filter((r) => r.height && r.top >= title.bottom - 1 && r.bottom <= box.top + 1);
    return {
        title: [title.top, title.bottom], figure: [box.top, box.bottom],
        texts: [Math.min(...texts.map((r) => r.top)), Math.max(...texts.map((r) => r.bottom))],
        between: between.length, screen: window.innerHeight,
    };
}"""


@pytest.mark.parametrize(
    ("size", "paths"),
    [
        (
            {"width": 1280, "height": 720},
            ["/attention", "/causal-mask", "/multi-head", "/pretrained"],
        ),
        ({"width": 1920, "height": 1080}, ["/attention"]),
    ],
    ids=["1280x720", "1920x1080"],
)
def test_a_slide_shows_its_title_and_first_figure_on_the_first_screen(page, app_url, size, paths):
    """Presentation mode: below the presenter bar the page's title, then its first figure
    whole, with its axis titles (the raw scores' rotated one was cut), and no prose between
    them: what the page says before the figure follows it."""
    page.set_viewport_size(size)
    for path in paths:
        open_presenting(page, app_url + path)
        screen = page.evaluate(FIRST_SCREEN)
        assert screen["title"][0] >= 76, (path, screen)  # below the bar
        assert screen["title"][1] <= screen["figure"][0], (path, screen)
        assert screen["figure"][1] <= screen["screen"], (path, screen)
        assert screen["texts"][0] >= screen["title"][1] - 4, (path, screen)  # glyph boxes overhang
        assert screen["texts"][1] <= min(screen["figure"][1], screen["screen"]), (path, screen)
        assert screen["between"] == 0, (path, screen)


def test_presentation_mode_copies_the_link_from_the_presenter_bar(page, app_url):
    """The README's "Copy link to this view" in presentation mode: a button in the bar (the
    sidebar's box is hidden there, at zero size) that copies the address bar's link."""
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    open_presenting(page, app_url + "/attention")
    button = page.locator(".st-key-presenter button.ae-share-copy")
    box = button.bounding_box()
    assert box is not None, "no copy button in the presenter bar"
    assert box["width"] > 40, box
    assert box["height"] > 20, box
    assert box["y"] + box["height"] <= 76, box  # in the bar
    button.click()
    page.wait_for_function(
        "() => document.querySelector('button.ae-share-copy').textContent === 'Copied'"
    )
    assert page.evaluate("() => navigator.clipboard.readText()") == page.url


def test_the_share_box_gives_the_address_bars_link_after_picks_and_steps(page, app_url, browser):
    text = "The lawyer asked the witness a question, but he was unwilling to answer it."
    open_app(page, f"{app_url}/attention?text={text}")
    box = page.locator(".st-key-attention_query input[role=combobox]")
    box.click()
    box.press_sequentially(": he")  # filters the list, which draws only what is in view
    page.get_by_role("option", name=re.compile(r"^\d+: he$")).click()
    page.wait_for_url(re.compile(r"[?&]query=\d+%3Ahe"))
    wait_settled(page)
    scale = slider(page, "att_scale")
    for _ in range(2):  # in-browser steps: each reruns the slider's fragment alone
        before = page.url
        scale.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function("(before) => location.href !== before", arg=before)
        wait_settled(page)
    shown = scale.get_attribute("aria-valuetext")
    link, present = share_box(page)
    assert link == page.url
    assert query(page) | {"present": "1"} == parse_qs_last(present)
    assert {"text", "query", "scale"} <= set(query(page))
    before = chart(page, "att_weights")
    bars = chart(page, "att_bar")

    with unplugged_page(browser) as fresh:
        open_app(fresh, link)
        assert_healthy(fresh)
        title = fresh.locator(".st-key-att_bar .gtitle").first.text_content()
        assert title == "What “he” attends to"  # the token picked
        assert slider(fresh, "att_scale").get_attribute("aria-valuetext") == shown
        assert fresh.locator(".st-key-text textarea").input_value() == text
        assert chart(fresh, "att_weights") == before
        assert chart(fresh, "att_bar") == bars
        assert query(fresh) == query(page)


def parse_qs_last(url):
    """A link's query parameters, last value of each."""
    parts = urlsplit(url)
    return {key: values[-1] for key, values in parse_qs(parts.query).items()}


def test_the_camera_saves_the_chart_laid_out_for_print(page, app_url):
    open_app(page, app_url + "/attention")
    plot = page.locator(".st-key-att_weights .js-plotly-plot")
    # The export options the page sent the camera (the same page through AppTest).
    options = chart_payloads(apptest_open("attention"))["att_weights"]["config"]
    options = options["toImageButtonOptions"]
    camera = page.locator(
        '.st-key-att_weights .modebar-btn[data-title="Download for a slide or a paper"]'
    )
    plot.hover()  # plotly.js draws its toolbar when the pointer first enters
    camera.wait_for()
    titles = page.locator(".st-key-att_weights .modebar-btn").evaluate_all(
        "(buttons) => buttons.map((b) => b.getAttribute('data-title'))"
    )
    assert "Share chart..." not in titles  # plotly.js's upload to its cloud is gone
    with page.expect_download() as download:
        camera.click()
    # The chart is drawn from the scale's frames: its file name says the stop and head it shows.
    weights = "minilm" if controls.MINILM is not None else "random"
    scale = controls.default_scale(
        *controls.model_shape({"weights": weights, "d_model": 16, "heads": 1})
    )
    shown = options["filename"].replace("{scale}", f"{scale:.4g}")
    shown = shown.replace("{head}", str(controls.DEFAULT_HEAD))  # MiniLM's name has it
    assert download.value.suggested_filename == shown + ".png"
    assert f"-s{scale:.4g}-" in shown
    with Image.open(download.value.path()) as image:
        assert image.size == (3 * options["width"], 3 * options["height"])
        assert image.convert("RGB").getpixel((0, 0)) == (255, 255, 255)  # on white, for slides


def test_presentation_mode_shows_every_figure_of_the_decoder_page(page, app_url):
    """The whole alignment was drawn in an expander, which presentation mode hides: every
    figure the page draws is on the slide (the mask, the self- and cross-attention, and the
    alignment)."""
    page.set_viewport_size({"width": 1280, "height": 720})
    open_presenting(page, app_url + "/decoder")
    for key in ("decoder_mask", "decoder_self", "decoder_cross", "decoder_alignment"):
        box = page.locator(f".st-key-{key}").bounding_box()
        assert box is not None, key
        assert box["width"] > 300, (key, box)
        assert box["height"] > 200, (key, box)


#: A slide's headings that stand over nothing (the next element of the page in the order
#: drawn is another heading, or none) and its tables: whether each shows, its width and
#: right edge, and the zoom that scales it (a table draws its text at Streamlit's theme's
#: small size, 14 px, on a canvas that CSS type sizes leave alone).
SLIDE_TABLES = """() => {
    const page = document.querySelector('[data-testid="stMainBlockContainer"] '
        + '[data-testid="stVerticalBlock"]');
    const drawn = [...page.children].filter((e) => e.getBoundingClientRect().height > 1);
    drawn.sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top);
    const heading = (e) => {
        const h = e.querySelector('h2, h3');
        return h !== null && e.textContent.trim() === h.textContent.trim();
    };
    const alone = drawn.filter((e, i) => heading(e) && (i + 1 === drawn.length
        || heading(drawn[i + 1]))).map((e) => e.textContent.trim());
    const tables = [...document.querySelectorAll('[data-testid="stDataFrame"]')].map((e) => {
        const r = e.getBoundingClientRect();
        const grid = e.querySelector('.dvn-scroller');  // the grid's own scrolling box
        const sideways = grid === null ? 0 : grid.scrollWidth - grid.clientWidth;
        return {width: r.width, height: r.height, right: r.right, zoom: e.currentCSSZoom, sideways};
    });
    return {alone, tables, screen: window.innerWidth};
}"""
TABLE_FONT = 14  # px: Streamlit's dataframe text, before presentation mode's zoom


@pytest.mark.parametrize(
    ("size", "paths"),
    [
        ({"width": 1280, "height": 720}, ["/", "/book", "/efficient", "/summarize"]),
        ({"width": 1920, "height": 1080}, ["/book"]),
    ],
    ids=["1280x720", "1920x1080"],
)
def test_a_slide_shows_its_tables_in_large_type_and_no_heading_alone(page, app_url, size, paths):
    """Presentation mode hid every table (its CSS named st.dataframe's), so /book's loop,
    matrix and book tables, /'s tokens and /efficient's errors were headings over nothing;
    and /summarize's "Similarity between sentences" stood alone once its figure moved up
    under the page's title. Each table shows, within the screen's width, its type at least
    a projector's minimum."""
    page.set_viewport_size(size)
    for path in paths:
        open_presenting(page, app_url + path)
        slide = page.evaluate(SLIDE_TABLES)
        assert slide["alone"] == [], (path, slide)
        assert slide["tables"], (path, slide)
        for table in slide["tables"]:
            assert table["width"] > 0.5 * slide["screen"], (path, table)
            assert table["height"] > 100, (path, table)
            assert table["right"] <= slide["screen"], (path, table)
            assert TABLE_FONT * table["zoom"] >= axes.PRESENT_MIN_FONT, (path, table)


@pytest.mark.parametrize(
    "size", [{"width": 1280, "height": 720}, {"width": 1920, "height": 1080}], ids=str
)
def test_efficients_tables_fit_a_slide_without_scrolling_sideways(page, app_url, size):
    """/efficient's comparison, eight columns, scrolled sideways on a 1280 px slide: its
    last column, the relative error, was out of sight. Its headers are short enough now."""
    page.set_viewport_size(size)
    open_presenting(page, app_url + "/efficient")
    slide = page.evaluate(SLIDE_TABLES)
    assert len(slide["tables"]) == 2, slide  # the comparison and the slopes
    for table in slide["tables"]:
        assert table["sideways"] <= 1, table
