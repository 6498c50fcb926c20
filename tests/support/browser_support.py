"""What the browser tests share: waiting for the app to settle, reading charts and controls.

Fixtures: the browser in ``tests/conftest.py``, the server and a fresh page in
``tests/browser/conftest.py``. The page's run counter and the check ``SETTLED_AFTER`` are
in ``harness.py`` beside this module, shared with the benchmarks. Each page counts the
script runs it hears finish, and remembers in ``page.runs_seen`` how many it had seen at
the last wait: so a wait after an input returns only once a run has finished since, never
on the state from before the input.
"""

from __future__ import annotations

import contextlib
import re
from urllib.parse import parse_qs, urlsplit

import numpy as np
from harness import FRAME_LOG, PART_DRAWN, RUN_COUNTER, SETTLED, SETTLED_AFTER
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

#: Any http(s) or ws(s) address that is not this machine.
OUTSIDE = re.compile(r"^(?:http|ws)s?://(?!(?:localhost|127\.0\.0\.1)(?:[:/]|$))")

# What a chart shows: its traces' data and its title, as JSON.
_CHART_STATE = r"""(key) => {
    const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const z = plot.data[0].z;
    return JSON.stringify({
        z: z && z.bdata !== undefined ? z.bdata : z,
        y: plot.data[0].y && plot.data[0].y.bdata,
        // Streamlit's theme wraps the title in <b> again on every redraw.
        title: plot.layout.title.text.replace(/<\/?b>/g, ''),
        shapes: plot.layout.shapes,
    });
}"""


@contextlib.contextmanager
def unplugged_page(browser, **context_options):
    """A page in a fresh browser context, with the network outside this machine unplugged.

    Uncaught page errors are kept in ``page.errors``, the console's errors in
    ``page.console_errors`` (a wait that times out reports the last); plotly.js's own
    warnings (it logs them as "WARN: …", with a stack trace, on every redraw) in
    ``page.plotly_warnings``;
    requests for anything outside this machine are refused and kept in ``page.outside``
    (the app must fetch nothing at run time: fonts, scripts and models are all served
    locally). ``context_options`` go to ``Browser.new_context`` (a user agent of its own,
    say). The context closes when the block ends.
    """
    context = browser.new_context(**{"viewport": {"width": 1400, "height": 1000}} | context_options)
    context.set_default_timeout(30_000)
    context.add_init_script(RUN_COUNTER)
    context.add_init_script(FRAME_LOG)
    page = context.new_page()
    page.errors, page.plotly_warnings, page.outside, page.runs_seen = [], [], [], 0
    page.console_errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))

    def console(message):
        if message.text.startswith("WARN:"):
            page.plotly_warnings.append(message.text)
        elif message.type == "error":
            page.console_errors.append(message.text)

    page.on("console", console)

    def refuse(route):
        page.outside.append(route.request.url)
        route.abort("internetdisconnected")

    context.route(OUTSIDE, refuse)
    try:
        yield page
    finally:
        context.close()


#: Installed before the app's scripts (``add_init_script``): marks each image whose error
#: event has been dispatched (seen first, on its way down to the image's own handlers).
IMAGE_ERRORS_SEEN = """window.addEventListener('error', (event) => {
    if (event.target instanceof HTMLImageElement) event.target.aeErrorSeen = true;
}, true);"""
#: Every image on the page has loaded, or failed and its error handlers have run.
IMAGES_DONE = """() => [...document.images].every((image) => image.complete
    && (image.naturalWidth > 0 || image.aeErrorSeen || !image.getAttribute('src')))"""


#: With the run counter: a run has finished since ``before`` and none is going on.
RUN_DONE = """(before) => window.__runs !== undefined && window.__runs.finished > before
    && document.querySelector('[data-testid="stApp"]')?.dataset.testScriptState === 'notRunning'"""


#: How long a first load may take, in ms. A page's first run computes everything it shows
#: (past 128 tokens, the frames of the stops around the scale too): 5-8 s on an idle
#: 2-core machine, several times that on a busy one; speed is the benchmarks' to judge.
FIRST_LOAD_TIMEOUT = 120_000


def open_app(page, url):
    """Go to ``url`` and wait until the script has finished and every chart is drawn.

    The tests' scripts then find a chart's object from its plotly.js div as
    ``window.__chartOf(div)`` (``chart/state.js``'s ``Chart.of``): the component keeps
    nothing on the page's elements.
    """
    page.runs_seen = 0  # a new document counts from 0
    page.goto(url)
    wait_settled(page, timeout=FIRST_LOAD_TIMEOUT)
    page.evaluate(CHART_OF)


#: Puts ``Chart.of`` where the tests' scripts reach it (:func:`open_app`).
CHART_OF = """async () => {
    const state = await import('/_stcore/bidi-components/attention-explorer.chart/state.js');
    window.__chartOf = state.Chart.of;
}"""


#: Presentation mode has laid its figures out for this window (``app.state.session.viewport``).
SCREEN_KNOWN = """() => {
    const marker = document.querySelector('.ae-viewport');
    return marker !== null && marker.dataset.known === marker.dataset.size;
}"""


def open_presenting(page, url):
    """Open ``url`` in presentation mode and wait until its figures fit this window.

    The first run lays the figures out for the smallest projector; the browser then says
    its size, and the run that starts draws them for it.
    """
    open_app(page, url + ("&" if "?" in url else "?") + "present=1")
    page.wait_for_function(SCREEN_KNOWN, polling=100)
    # The size is known once the run it started has begun: wait for that run to end.
    page.wait_for_function(SETTLED, polling=100)
    page.runs_seen = page.evaluate("window.__runs.finished")


#: What the page is waiting on, for a wait that timed out: the script's and connection's
#: state, the runs counted, the browser's controls whose move Python has not heard yet
#: (``data-unheard``), and each component
#: that has not drawn by :data:`harness.CHARTS_DRAWN`'s reckoning (its key and why).
WAITING_ON = (
    """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const keyOf = e => [...(e.closest('[class*="st-key-"]')?.classList || [])]
        .find(k => k.startsWith('st-key-'));
    const drawn = """
    + PART_DRAWN
    + """;
    const charts = [...document.querySelectorAll('.stBidiComponent')].filter(c => !drawn(c))
        .map(c => ({
            key: keyOf(c),
            svg: !!c.querySelector('.ae-chart .main-svg'),
            pending: !!c.querySelector('.ae-chart[data-pending]'),
            away: !!c.querySelector('.ae-chart[data-away]'),
        }));
    return {script: app?.dataset.testScriptState, connection: app?.dataset.testConnectionState,
            runs: window.__runs,
            exceptions: document.querySelectorAll('[data-testid="stException"]').length,
            unheard: [...document.querySelectorAll('.ae-control[data-unheard]')].map(keyOf),
            waiting: charts};
}"""
)


def wait_settled(page, charts=True, timeout=None):
    """Wait for a run to finish since the last wait (the last input's) and its charts to draw.

    ``charts=False`` for a page that draws none (empty text): the run finishing is enough.
    ``timeout`` in ms, else the context's default. A wait that times out says what the
    page was still waiting on.
    """
    try:
        page.wait_for_function(
            SETTLED_AFTER if charts else RUN_DONE, arg=page.runs_seen, polling=100, timeout=timeout
        )
    except PlaywrightTimeoutError as error:
        raise AssertionError(
            f"{error.message}; runs seen {page.runs_seen}; {page.evaluate(WAITING_ON)}; "
            f"console errors {page.console_errors[-5:]}"
        ) from error
    page.runs_seen = page.evaluate("window.__runs.finished")


def assert_healthy(page):
    """No exception, component or page error, plotly.js warning or outside fetch; a chart drawn."""
    exceptions = page.locator('[data-testid="stException"]')
    assert exceptions.count() == 0, exceptions.all_inner_texts()
    broken = page.get_by_text("BidiComponent Error")  # our chart component threw
    assert broken.count() == 0, broken.all_inner_texts()
    assert page.errors == []
    assert not page.plotly_warnings, page.plotly_warnings[:3]
    assert page.outside == []
    assert page.get_by_text("Page not found").count() == 0  # a link to a path nobody serves
    marks = ".heatmaplayer image, .cartesianlayer .trace path, .table .cell-text"
    drawn = page.locator(f".js-plotly-plot .main-svg :is({marks})")
    if drawn.count() == 0 and (away := page.evaluate(_AWAY)):
        look_at(page, away[0])  # a page whose first screen has no chart: its first one
    assert drawn.count() > 0


def chart(page, key):
    """What the chart with widget key ``key`` shows (data and title), as a JSON string."""
    return page.evaluate(_CHART_STATE, key)


def z_shape(page, key):
    """The (rows, columns) of the first trace of chart ``key``, as drawn (scrolled to)."""
    look_at(page, key)
    return page.evaluate(
        """(key) => {
            const z = document.querySelector(`.st-key-${key} .js-plotly-plot`)._fullData[0].z;
            return [z.length, z[0].length];
        }""",
        key,
    )


def slider(page, key):
    """The slider input of the widget with key ``key``."""
    return page.locator(f".st-key-{key}").get_by_role("slider")


def drag(page, start, end, steps):
    """Press on the scale slider at ``start`` (a fraction of its width), move to ``end``."""
    box = slider(page, "att_scale").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * start, y)
    page.mouse.down()
    for step in range(1, steps + 1):
        page.mouse.move(box["x"] + box["width"] * (start + (end - start) * step / steps), y)


def query(page):
    """The page's URL parameters, last value of each."""
    return {key: values[-1] for key, values in parse_qs(urlsplit(page.url).query).items()}


#: The chart with key ``key`` has drawn its data and owes no redraw: none queued or under
#: way (``data-pending``), none waiting for it to come near the window (``data-away``).
_CHART_DRAWN = """(key) => {
    const chart = document.querySelector(`.st-key-${key} .ae-chart`);
    return chart !== null && chart.querySelector('.main-svg') !== null
        && chart.dataset.pending === undefined && chart.dataset.away === undefined;
}"""


def look_at(page, key):
    """Scroll chart ``key`` into the window, as a reader does, and wait until it is current.

    A chart far from the window is redrawn only when it comes near, whatever changed (a
    head, a stop, a width, new data); what plotly.js holds is then the new figure.
    """
    page.locator(f".st-key-{key}").scroll_into_view_if_needed()
    page.wait_for_function(_CHART_DRAWN, arg=key, polling=100)


#: The keys of the charts owed a drawing that waits until they come near, top to bottom
#: (not those in a closed expander: they draw when it is opened).
_AWAY = """() => [...document.querySelectorAll('.ae-chart[data-away]')]
    .filter(chart => !chart.closest('details:not([open])'))
    .map(chart => chart.closest("[class*='st-key-']")?.className.match(/st-key-(\\S+)/)?.[1])"""

#: Scroll the page's scrolling box (Streamlit's main area) back to the top.
_TO_TOP = """() => {
    const chart = document.querySelector('.ae-chart');
    for (let node = chart?.parentElement; node; node = node.parentElement) {
        if (/auto|scroll/.test(getComputedStyle(node).overflowY)) { node.scrollTop = 0; return; }
    }
    window.scrollTo(0, 0);
}"""


def scroll_to_top(page):
    """Scroll the page back to its top, as the Home key does."""
    page.evaluate(_TO_TOP)


def look_at_every_chart(page):
    """Scroll to each chart that waits to come near, top to bottom, as a reader scrolling
    down the page does, until every chart is drawn; then back to the top."""
    while keys := page.evaluate(_AWAY):
        look_at(page, keys[0])
    scroll_to_top(page)


#: The bar chart ``key``'s bars: their heights as drawn (each path's top, back in the
#: axis's units) and as plotly.js holds them.
_BARS = r"""(key) => {
    const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const axis = gd._fullLayout.yaxis;
    const drawn = [...gd.querySelectorAll('.barlayer .trace:first-child .point path')]
        .map(path => axis.p2c(Number(path.getAttribute('d').match(/V(-?[\d.]+)/)[1])));
    return [drawn, Array.from(gd._fullData[0].y)];
}"""


def bars(page, key):
    """The bars of chart ``key``: (heights as drawn, heights in plotly.js's data)."""
    drawn, held = page.evaluate(_BARS, key)
    return np.array(drawn), np.array(held)


def next_tour_step(page, step):
    """Click the tour's "Next" on step ``step`` and wait until step ``step + 1`` has drawn.

    Its chart is a new element (``tour_step_{n}``): the run can be over, and the last
    step's chart gone, before the new one is on the page, when no chart at all is drawn.
    """
    page.locator(".st-key-tour_next button").click()
    page.wait_for_url(re.compile(rf"[?&]step={step + 1}\b"))
    wait_settled(page)
    page.wait_for_function(_CHART_DRAWN, arg=f"tour_step_{step + 1}", polling=100)


#: A heatmap's image as Plotly drew it (the weights' unless a key is given): pixels and size.
PLOTLYS_PIXELS = """async (key) => {
    const plot = document.querySelector(`.st-key-${key || 'att_weights'} .js-plotly-plot`);
    const image = new Image();
    image.src = plot.querySelector('.heatmaplayer image')
        .getAttributeNS('http://www.w3.org/1999/xlink', 'href');
    await image.decode();
    const canvas = document.createElement('canvas');
    [canvas.width, canvas.height] = [image.naturalWidth, image.naturalHeight];
    const ctx = canvas.getContext('2d');
    ctx.drawImage(image, 0, 0);
    const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    return {pixels: Array.from(data), width: canvas.width, height: canvas.height};
}"""


def cells(picture, rows, cols):
    """An RGBA picture sampled at the centres of ``rows`` × ``cols`` cells."""
    pixels = np.array(picture["pixels"]).reshape(picture["height"], picture["width"], 4)
    i = ((np.arange(rows) + 0.5) * picture["height"] / rows).astype(int)
    j = ((np.arange(cols) + 0.5) * picture["width"] / cols).astype(int)
    return pixels[i][:, j]


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
    with contextlib.suppress(PlaywrightTimeoutError):
        page.wait_for_function(f"() => ({CLIPPED})().length === 0", timeout=settle_ms)
    return page.evaluate(CLIPPED)


#: Pairs of tick labels of one chart whose boxes overlap (by more than a pixel each way).
LABEL_OVERLAPS = r"""() => [...document.querySelectorAll('.js-plotly-plot')].flatMap((plot) => {
    const key = plot.closest("[class*='st-key-']")?.className.match(/st-key-(\S+)/)?.[1];
    const boxes = [...plot.querySelectorAll('[class*="axislayer-above"] text')]
        .map((t) => [t.textContent, t.getBoundingClientRect()]);
    const hits = [];
    boxes.forEach(([a, p], i) => boxes.slice(i + 1).forEach(([b, q]) => {
        const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
        const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
        if (w > 1 && h > 1) hits.push(`${key}: ${a} / ${b}`);
    }));
    return hits;
})"""


def in_view(page, locator):
    """Whether the element is inside the window without scrolling (to a pixel: one scrolled
    into view just so can end a fraction of one past the window's edge)."""
    box = locator.bounding_box()
    bottom = page.viewport_size["height"]
    return box is not None and box["y"] >= -1 and box["y"] + box["height"] <= bottom + 1
