"""The live charts in headless Chromium: the scale played from frames while it is dragged,
the exact figures on release, a clicked cell's arithmetic (plotly.js served by the app:
test_network.py).

Fixtures (the server, the browser, a fresh page) are in ``conftest.py``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from urllib.parse import quote

import numpy as np
import pandas as pd
import pytest
from browser_support import (
    PLOTLYS_PIXELS,
    assert_healthy,
    bars,
    cells,
    drag,
    look_at,
    open_app,
    query,
    slider,
    wait_settled,
)
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

import engine
from app.state import controls
from app.views import saturation
from engine import bert, checkpoint, one_layer

pytestmark = pytest.mark.browser

#: What the weights heatmap draws, as numbers.
WEIGHTS = """() => {
    const plot = document.querySelector('.st-key-att_weights .js-plotly-plot');
    return Array.from(plot._fullData[0].z, row => Array.from(row));
}"""


def engine_weights(weights, scale, text=controls.DEFAULT_TEXT):
    """The engine's weights for ``text`` (the default passage) and head at ``scale``."""
    if weights == "minilm":
        model = checkpoint.load_minilm()
        run = bert.run(model, text)
        layer = one_layer.layer_run(model, run, controls.DEFAULT_LAYER, scale, False)
        return layer.attention.weights[controls.DEFAULT_HEAD]
    tokenization = engine.tokenize(text, controls.default_tokenizer())
    return engine.run_toy(tokenization.tokens, 16, 1, 0, scale=scale).attention.weights[0]


WEIGHTS_MODES = ["random"] + (["minilm"] if controls.MINILM is not None else [])


def wait_for_weights(page, weights):
    """Wait until the weights heatmap's exact figure shows ``weights``' first row (to 1e-6)."""
    page.wait_for_function(
        """(row) => {
            const plot = document.querySelector('.st-key-att_weights .js-plotly-plot');
            const z = plot._fullData[0].z[0];
            return !plot.closest('.ae-chart').dataset.pending
                && row.every((w, j) => Math.abs(z[j] - w) < 1e-6);
        }""",
        arg=weights[0].tolist(),
    )


@pytest.mark.parametrize("weights", WEIGHTS_MODES)
def test_a_drag_plays_frames_with_no_run_until_release(page, app_url, weights):
    open_app(page, app_url + f"/attention?weights={weights}")
    runs = page.evaluate("window.__runs.finished")
    page.evaluate("window.__aeFrames = []")
    slider(page, "att_scale").scroll_into_view_if_needed()
    drag(page, 0.5, 0.9, 30)
    shown = page.evaluate("window.__aeFrames.map(f => f.stop)")
    recoloured = page.evaluate(
        "document.querySelector('.st-key-att_weights .js-plotly-plot').dataset.recoloured"
    )
    assert len(set(shown)) >= 10  # the weights heatmap changed at many stops
    assert recoloured == str(shown[-1])
    assert page.evaluate("window.__runs.finished") == runs  # no server run while dragging
    page.mouse.up()
    page.wait_for_url(re.compile(r"[?&]scale="))
    wait_settled(page)

    scale = float(query(page)["scale"])
    options = controls.scale_options(
        *controls.model_shape({"weights": weights, "d_model": 16, "heads": 1})
    )
    assert scale == pytest.approx(options[shown[-1]])
    np.testing.assert_allclose(page.evaluate(WEIGHTS), engine_weights(weights, scale), atol=1e-6)
    assert_healthy(page)


#: Whether the weights heatmap's image is Plotly's own for its figure, and nothing else is
#: seen: no preview canvas over it, the image not hidden, the chart not marked recoloured.
PLOTLYS_OWN = """async () => {
    const plot = document.querySelector('.st-key-att_weights .js-plotly-plot');
    const image = () => plot.querySelector('.heatmaplayer image');
    const href = () => image().getAttributeNS('http://www.w3.org/1999/xlink', 'href');
    const before = href();
    await Plotly.redraw(plot);  // what Plotly draws for this figure, afresh
    return [before === href(), plot.dataset.recoloured === undefined
        && !plot.querySelector('canvas.ae-preview')
        && getComputedStyle(image()).visibility === 'visible'];
}"""


#: The colour bar labels of chart ``key`` that are shown: [text, y of the label's centre].
COLOUR_BAR = """(key) => [...document.querySelectorAll(`.st-key-${key} .colorbar text`)]
    .filter((t) => t.closest('.cbaxis, .ae-cbticks')
        && getComputedStyle(t).visibility !== 'hidden')
    .map((t) => [t.textContent, t.getBoundingClientRect()])
    .map(([text, box]) => [text, (box.top + box.bottom) / 2])
    .sort((a, b) => a[1] - b[1])"""


def colour_bar(page, key):
    """The colour bar's labels, top to bottom, as numbers, and their heights on screen."""
    labels = page.evaluate(COLOUR_BAR, key)
    number = lambda text: float(text.replace("−", "-").replace("k", "e3"))  # noqa: E731
    return [number(text) for text, _ in labels], [y for _, y in labels]


def test_during_a_drag_the_scaled_scores_colour_bar_follows_the_stop(page, app_url):
    open_app(page, app_url + "/attention?weights=random")
    slider(page, "att_scale").scroll_into_view_if_needed()
    values, _ = colour_bar(page, "att_scaled")
    drag(page, 0.5, 1.0, 20)  # to the last stop, 1024, and held there
    page.wait_for_function(
        """() => document.querySelector('.st-key-att_scaled .js-plotly-plot').dataset.recoloured
            === String(document.querySelector('.st-key-att_scale input').max)"""
    )
    title = page.locator(".st-key-att_scaled .gtitle").first.text_content()
    assert title.endswith(f"× {controls.SCALE_MAX:.4g}")
    held, heights = colour_bar(page, "att_scaled")
    tokens = engine.tokenize(controls.DEFAULT_TEXT, controls.default_tokenizer()).tokens
    scaled = engine.run_toy(tokens, 16, 1, 0, scale=controls.SCALE_MAX).attention.heads.masked[0]
    limit = np.abs(scaled).max()  # the colour scale spans ± this at the stop shown
    assert limit / 2 <= max(held) <= limit
    assert max(held) > 100 * max(values)  # not the range of the stop drawn before
    assert held == sorted(held, reverse=True)  # top to bottom, as the colours run
    assert held == [-v for v in reversed(held)]
    assert 0 in held
    zero = heights[held.index(0)]
    middle = (heights[0] + heights[-1]) / 2
    assert abs(zero - middle) < 2  # 0 sits mid-bar, where the diverging scale is white
    page.mouse.up()  # the exact figure: Plotly's own colour bar, the same labels
    page.wait_for_url(re.compile(r"[?&]scale="))
    wait_settled(page)
    assert colour_bar(page, "att_scaled")[0] == held


def test_after_release_the_pixels_are_plotlys_own(page, app_url):
    open_app(page, app_url + "/attention")
    slider(page, "att_scale").scroll_into_view_if_needed()
    drag(page, 0.5, 0.7, 10)
    page.mouse.up()
    page.wait_for_url(re.compile(r"[?&]scale="))
    wait_settled(page)
    assert page.evaluate(PLOTLYS_OWN) == [True, True]


def test_past_128_tokens_a_step_draws_the_engines_figure_from_its_frames(page, app_url):
    """Each step sends its stop's frames; the heatmap shows the engine's weights there."""
    text = " ".join(["the cat sat on the mat while the dog slept by the door"] * 16)  # 208 tokens
    open_app(page, f"{app_url}/attention?weights=random&text={quote(text)}")
    received = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda data: received.append(data)))
    step(page, "ArrowRight")
    scale = float(query(page)["scale"])
    expected = engine_weights("random", scale, text)
    assert len(expected) > 128  # past the frames of every stop
    wait_for_weights(page, expected)  # the frames came with the run; the exact figure follows
    np.testing.assert_allclose(page.evaluate(WEIGHTS), expected, atol=1e-6)
    assert page.evaluate(PLOTLYS_OWN) == [True, True]
    assert sum(len(data) for data in received) < 1024 * 1024  # one stop's frames, no figure
    assert_healthy(page)


#: Stop sending to the server: the page's WebSocket drops what it would send from now on.
CUT_OFF = """() => {
    const send = window.WebSocket.prototype.send;
    window.WebSocket.prototype.send = function (data) {
        if (!window.__cutOff) return send.call(this, data);
    };
    window.__cutOff = true;
}"""

#: From the next animation frame on, wait for the weights heatmap's preview canvas to show
#: ``stop`` and keep what it shows then (one pixel per cell) with the numbers of the
#: figure Plotly has drawn at that moment (its first row), in ``window.__preview``.
WATCH_PREVIEW = """(stop) => {
    const plot = document.querySelector('.st-key-att_weights .js-plotly-plot');
    window.__preview = new Promise((resolve) => {
        const look = () => {
            const canvas = plot.querySelector('canvas.ae-preview');
            if (!canvas || !canvas.dataset.shows.endsWith(`:${stop}`)) {
                requestAnimationFrame(look);
                return;
            }
            const {width, height} = canvas;
            const data = canvas.getContext('2d').getImageData(0, 0, width, height).data;
            const image = plot.querySelector('.heatmaplayer image');
            resolve({pixels: Array.from(data), width, height,
                     hidden: getComputedStyle(image).visibility === 'hidden',
                     drawn: Array.from(plot._fullData[0].z[0])});
        };
        requestAnimationFrame(look);
    });
}"""

#: Past 128 tokens, and no sentence twice: a step of the scale moves weights by up to 0.12
#: (repeated sentences share each row's weight between their copies, and barely move).
VARIED_TEXT = (
    "Attention lets every token look at every other token and decide how much of each to "
    "take. The restaurant refused to serve me a ham sandwich because it only cooks "
    "vegetarian food. In the end, they just gave me two slices of bread and a glass of "
    "water. The animal did not cross the street because it was too tired after the long "
    "walk. A river bank was closed after the storm flooded the road near the old mill. "
    "Queries are weighed against keys, and the values are mixed by those weights into an "
    "output. Scaling the scores flattens or sharpens each row before the softmax turns them "
    "into shares. Long texts send one stop at a time."
)


def test_past_128_tokens_a_step_needs_nothing_from_the_server(page, app_url):
    """The browser holds the next stop's frames: cut off from the server, a keyboard step
    still shows the engine's weights there, first as a preview over Plotly's image (the
    colours Plotly then draws, before its exact figure), then as the exact figure."""
    open_app(page, f"{app_url}/attention?weights=random&text={quote(VARIED_TEXT)}")
    options = controls.scale_options(16, 1)
    before = options.index(0.25)
    old, new = (engine_weights("random", options[s], VARIED_TEXT) for s in (before, before + 1))
    n = len(new)
    assert n > 128  # past the frames of every stop
    plotlys_before = cells(page.evaluate(PLOTLYS_PIXELS), n, n).astype(int)
    runs = page.evaluate("window.__runs.finished")
    page.evaluate(CUT_OFF)
    page.evaluate(WATCH_PREVIEW, before + 1)
    step_thumb = page.get_by_role("slider", name=re.compile("Scale"))
    step_thumb.focus()
    page.keyboard.press("ArrowRight")
    preview = page.evaluate("window.__preview")
    assert preview["hidden"]  # the preview is what is seen, over Plotly's image
    np.testing.assert_allclose(preview["drawn"], old[0], atol=1e-6)  # exact figure not yet
    wait_for_weights(page, new)  # then the exact figure of the new stop, from the held frames
    np.testing.assert_allclose(page.evaluate(WEIGHTS), new, atol=1e-6)
    assert page.evaluate(PLOTLYS_OWN) == [True, True]
    shown = cells(preview, n, n).astype(int)
    plotlys = cells(page.evaluate(PLOTLYS_PIXELS), n, n).astype(int)
    assert np.abs(shown - plotlys).max() <= 4  # the colours of the engine's numbers there
    assert np.abs(shown - plotlys_before).max() > 16  # not those of the stop before
    assert page.evaluate("window.__runs.finished") == runs  # the server heard nothing
    assert page.errors == []


#: Whether the scale's slider says its charts wait for their stop, and how many charts are
#: dimmed for it.
WAITING = """() => ({
    slider: document.querySelector('.ae-stop')?.hasAttribute('data-waiting') ?? null,
    dimmed: document.querySelectorAll('.ae-chart.ae-waiting').length,
})"""


def test_past_128_tokens_a_drag_past_the_held_stops_says_the_charts_wait(page, app_url):
    """The label said 0.5 while the charts' titles said × 0.2102 until the release: beyond
    the stops whose frames the browser holds, the slider says the charts follow when it is
    let go, and the charts are dimmed; at the release the stop's frames come and both end."""
    open_app(page, f"{app_url}/attention?weights=random&text={quote(VARIED_TEXT)}")
    assert page.evaluate(WAITING) == {"slider": False, "dimmed": 0}
    slider(page, "att_scale").scroll_into_view_if_needed()
    drag(page, 0.5, 0.95, 12)  # far past the stops held around the one drawn
    page.wait_for_function("() => document.querySelector('.ae-stop[data-waiting]') !== null")
    waiting = page.evaluate(WAITING)
    assert waiting["slider"] is True
    assert waiting["dimmed"] >= 2  # the weights, the output, ...
    page.mouse.up()
    page.wait_for_url(re.compile(r"[?&]scale="))
    wait_settled(page)
    page.wait_for_function(
        f"() => JSON.stringify(({WAITING})()) === JSON.stringify({{slider: false, dimmed: 0}})",
        timeout=10_000,
    )
    assert_healthy(page)


def test_a_drag_back_to_the_drawn_stop_restores_plotlys_image(page, app_url):
    sent = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda data: sent.append(data)))
    open_app(page, app_url + "/attention")
    runs = page.evaluate("window.__runs.finished")
    sent.clear()
    states = page.evaluate(
        """async () => {
            const input = document.querySelector('.st-key-att_scale input[type=range]');
            const plot = document.querySelector('.st-key-att_weights .js-plotly-plot');
            const drawn = input.value;
            const image = () => plot.querySelector('.heatmaplayer image');
            const look = () => [image().getAttribute('style'),
                                image().getAttributeNS('http://www.w3.org/1999/xlink', 'href')];
            const before = look();
            const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
            const move = value => {
                input.value = String(value);
                input.dispatchEvent(new Event('input', {bubbles: true}));
            };
            move(Number(drawn) + 12);
            await frame();
            const during = plot.dataset.recoloured;
            move(drawn);
            await frame();
            input.dispatchEvent(new Event('change', {bubbles: true}));  // released there
            const after = look();
            return [during, plot.dataset.recoloured ?? null,
                    after[0] === before[0] && after[1] === before[1]];
        }"""
    )
    assert states[0] is not None
    assert states[1:] == [None, True]
    # A keyboard step after it: the socket carries what the page sends in order, so once
    # the step's run is over, a rerun the release asked for would have been sent before.
    step(page, "ArrowRight")
    messages = [BackMsg.FromString(data) for data in sent if isinstance(data, bytes)]
    reruns = [message for message in messages if message.HasField("rerun_script")]
    assert len(reruns) == 1  # the step's: nothing to ask the server at the drawn stop
    assert page.evaluate("window.__runs.finished") == runs + 1


def test_arrow_keys_step_the_scale_its_name_says_scale_and_a_csv_is_the_new_stops(page, app_url):
    """A step down with the keyboard, on the slider named "Scale": the link follows, and
    the weights' CSV is the engine's array at the new stop, its name the new stop's
    (issue 55: a release reruns the slider's fragment alone, and the name was fixed when
    the button was drawn)."""
    open_app(page, app_url + "/attention?weights=random")
    scale = page.get_by_role("slider", name=re.compile("Scale"))
    assert scale.get_attribute("aria-valuetext").endswith("(default)")
    scale.focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_url(re.compile(r"[?&]scale="))
    wait_settled(page)
    options = controls.scale_options(16, 1)
    assert float(query(page)["scale"]) == pytest.approx(options[options.index(0.25) - 1])
    scale = float(query(page)["scale"])
    assert scale != pytest.approx(0.25)
    with page.expect_download() as download:
        page.locator(".st-key-att_weights_csv button").click()
    frame = pd.read_csv(download.value.path(), index_col=0)
    np.testing.assert_array_equal(frame.to_numpy(), engine_weights("random", scale))
    assert f"-s{scale:.4g}-" in download.value.suggested_filename  # the stop chosen
    step(page, "ArrowLeft")
    scale = float(query(page)["scale"])
    for key in ("att_weights", "att_bar", "att_saturation_mean"):
        with page.expect_download() as download:
            page.locator(f".st-key-{key}_csv button").click()
        assert f"-s{scale:.4g}-" in download.value.suggested_filename, key
    assert_healthy(page)


#: What one keyboard step of the scale may receive at the default passage (issue #11),
#: besides Streamlit's new_session (1.5 KB: it lists every page and names the main
#: script's path, so its size follows where the repository was cloned): the release
#: reruns the slider's fragment, whose elements go as references (~0.5 KB), and the six
#: CSV buttons' fragments, whose file names say the new stop (issue 55; ~0.4 KB each,
#: 3.5 KB in all). Before the slider had a fragment of its own a step received 5.9 KB;
#: before the charts were drawn from the frames, 87 KB.
STEP_BYTES = 4 * 1024


def step(page, key, times=1):
    """Press ``key`` on the focused scale slider ``times`` times, each waiting for its run."""
    scale = page.get_by_role("slider", name=re.compile("Scale"))
    scale.focus()
    for _ in range(times):
        page.keyboard.press(key)
        wait_settled(page)


def test_a_keyboard_step_reruns_only_the_slider_and_the_views_show_the_new_stop(page, app_url):
    """A step up reruns the slider's fragment alone; the weights, the bars (drawn where the
    new stop's weights put them, not put back) and the saturation tables show the new stop;
    the thumb stays there, and the next step goes on from it."""
    received = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda data: received.append(data)))
    open_app(page, app_url + "/attention?weights=random")
    look_at(page, "att_bar")
    _, bars_before = bars(page, "att_bar")
    before = page.evaluate(WEIGHTS)
    received.clear()
    step(page, "ArrowRight")
    assert all(isinstance(data, bytes) for data in received)
    messages = [ForwardMsg.FromString(data) for data in received]
    kinds = Counter(message.WhichOneof("type") for message in messages)
    deltas = [message.delta.WhichOneof("type") for message in messages if message.HasField("delta")]
    new = [m.delta.new_element for m in messages if m.delta.WhichOneof("type") == "new_element"]
    # no chart or heading sent again: the slider, which says the step was heard, and the
    # CSV buttons of the charts that follow it, whose file names say the new stop (the
    # next test downloads them)
    slider_element, *buttons = new
    assert slider_element.WhichOneof("type") == "bidi_component", deltas
    assert slider_element.bidi_component.id.endswith("-att_scale")
    assert json.loads(slider_element.bidi_component.json)["heard"] is not None
    assert [element.WhichOneof("type") for element in buttons] == ["download_button"] * 6
    assert kinds["ref_hash"] == 1  # its frames of every stop, unchanged
    sizes = Counter()
    for data, message in zip(received, messages, strict=True):
        sizes[message.WhichOneof("type")] += len(data)
    assert sizes["new_session"] < 4 * 1024
    assert sizes.total() - sizes["new_session"] <= STEP_BYTES
    options = controls.scale_options(16, 1)
    scale_now = float(query(page)["scale"])
    assert scale_now == pytest.approx(options[options.index(0.25) + 1])
    shown = page.evaluate(WEIGHTS)  # drawn in the browser from the frames
    assert not np.allclose(shown, before)
    weights = engine_weights("random", scale_now)
    np.testing.assert_allclose(shown, weights, atol=1e-6)

    look_at(page, "att_bar")
    drawn, held = bars(page, "att_bar")
    assert np.abs(np.subtract(held, bars_before)).max() > 0.01  # the step moved the bars
    assert np.isclose(weights, held, atol=1e-6).all(axis=1).any()  # a row of the new stop
    np.testing.assert_allclose(drawn, held, atol=0.01)  # drawn where they are: 2 px

    page.get_by_text("Per query row").click()  # a closed expander's table is drawn on opening
    look_at(page, "att_saturation_rows")
    columns = page.evaluate(
        """() => document.querySelector('.st-key-att_saturation_rows .js-plotly-plot')
            .data[0].cells.values.slice(1).map(c => Array.from(c))"""
    )
    stats = engine.saturation(weights)
    np.testing.assert_allclose(np.array(columns).T, np.stack(stats, axis=-1), rtol=1e-5, atol=1e-6)

    step(page, "ArrowRight")
    expected = options.index(0.25) + 2
    assert float(query(page)["scale"]) == pytest.approx(options[expected])
    thumb = slider(page, "att_scale")
    assert thumb.input_value() == str(expected)
    assert thumb.get_attribute("aria-valuetext") == f"{options[expected]:.4g}"
    assert_healthy(page)


def test_the_slider_steps_on_after_the_text_passes_128_tokens(page, app_url):
    """Past 128 tokens each step brings its own stop's frames: the slider steps on from them."""
    open_app(page, app_url + "/attention?weights=random")
    step(page, "ArrowRight")
    text = " ".join(["the cat sat on the mat"] * 30)  # 180 tokens
    box = page.locator(".st-key-text textarea")
    box.fill(text)
    box.press("Control+Enter")
    wait_settled(page)
    step(page, "ArrowRight")
    options = controls.scale_options(16, 1)
    scale = float(query(page)["scale"])
    assert scale == pytest.approx(options[options.index(0.25) + 2])
    shown = page.evaluate(WEIGHTS)  # the exact figure, from the stop's frames
    np.testing.assert_allclose(shown, engine_weights("random", scale, text), atol=1e-6)
    assert_healthy(page)


def click_largest_weight(page, query_token):
    """Click the largest weight of row ``query_token`` in the weights heatmap; its cell."""
    runs = page.evaluate("window.__runs.finished")
    page.locator(".st-key-att_weights").scroll_into_view_if_needed()
    cell = page.evaluate(
        """(token) => {
            const plot = document.querySelector('.st-key-att_weights .js-plotly-plot');
            const {z, y} = plot._fullData[0];
            const i = y.indexOf(token);
            const row = Array.from(z[i]);
            const j = row.indexOf(Math.max(...row));
            const {xaxis, yaxis} = plot._fullLayout;
            const box = plot.getBoundingClientRect();
            return {i, j, weight: row[j], x: box.left + xaxis._offset + xaxis.c2p(j),
                    y: box.top + yaxis._offset + yaxis.c2p(i)};
        }""",
        query_token,
    )
    page.evaluate(CLICK_SEEN)
    page.mouse.click(cell["x"], cell["y"])
    try:
        page.wait_for_function("(n) => window.__runs.finished > n", arg=runs, timeout=20_000)
    except PlaywrightTimeoutError as error:
        seen = page.evaluate("window.__clicked")
        raise AssertionError(f"no run after a click at {cell}; plotly.js saw {seen}") from error
    wait_settled(page)
    assert page.evaluate("window.__clicked") == [cell["i"], cell["j"]], "the click's cell"
    # The click's run may wait for one under way (the page settles between the two): wait
    # for its heading, and say what the page shows if it never comes.
    heading = page.get_by_text(f"Cell ({cell['i']}, {cell['j']}): query")
    try:
        heading.first.wait_for(timeout=15_000)
    except PlaywrightTimeoutError as error:
        shown = page.get_by_text("Cell (").all_inner_texts()
        finished = page.evaluate("window.__runs.finished")
        raise AssertionError(
            f"no arithmetic for {cell}: runs {runs} -> {finished}, headings {shown}, {page.url}"
        ) from error
    return cell


#: Records the cell plotly.js saw clicked in the weights heatmap (``window.__clicked``), so a
#: click that missed says so rather than leaving the page without its arithmetic.
CLICK_SEEN = """() => {
    window.__clicked = null;
    document.querySelector('.st-key-att_weights .js-plotly-plot')
        .once('plotly_click', (event) => { window.__clicked = event.points[0].pointIndex; });
}"""


def worked_weight(page):
    """The weight the arithmetic panel works out, as it prints it."""
    steps = page.locator('[data-testid="stTable"]').filter(has_text="row sum").inner_text()
    return float(re.search(r"weight a_ij = exp\(·\) / row sum\s+([\d.e-]+)", steps).group(1))


def test_a_clicked_cell_shows_its_arithmetic(page, app_url):
    open_app(page, app_url + "/attention")
    cell = click_largest_weight(page, "it")
    heading = page.get_by_text(f"Cell ({cell['i']}, {cell['j']}): query “it”")
    assert heading.count() == 1
    assert worked_weight(page) == pytest.approx(cell["weight"], abs=1e-6)
    assert_healthy(page)


def test_the_arithmetic_follows_a_step_of_the_scale(page, app_url):
    open_app(page, app_url + "/attention?weights=random")
    cell = click_largest_weight(page, "it")
    step(page, "ArrowRight")
    scale = float(query(page)["scale"])
    expected = engine_weights("random", scale)[cell["i"], cell["j"]]
    assert expected != pytest.approx(cell["weight"], abs=1e-3)
    assert worked_weight(page) == pytest.approx(expected, abs=1e-6)
    assert_healthy(page)


#: Where cell (row, column) of a heatmap is on the page.
HOVER_CELL = """([key, row, col]) => {
    const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const {xaxis, yaxis} = plot._fullLayout;
    const box = plot.getBoundingClientRect();
    return {x: box.left + xaxis._offset + xaxis.c2p(col),
            y: box.top + yaxis._offset + yaxis.c2p(row)};
}"""


def hover_text(page, key, row, col):
    """What the hover label of heatmap ``key`` says over cell (row, col)."""
    page.mouse.move(1, 1)
    page.locator(f".st-key-{key}").scroll_into_view_if_needed()
    cell = page.evaluate(HOVER_CELL, [key, row, col])
    page.mouse.move(cell["x"], cell["y"])
    label = page.locator(f".st-key-{key} .hoverlayer .hovertext")
    label.wait_for()
    return label.text_content()


#: Hold every Plotly.react until ``window.__releaseReact()``: the charts keep showing the
#: preview of a step, over the figure of the stop before.
HOLD_REACT = """() => {
    const react = Plotly.react;
    let open;
    const gate = new Promise((resolve) => { open = resolve; });
    window.__releaseReact = () => { Plotly.react = react; open(); };
    Plotly.react = async (...args) => { await gate; return react.apply(Plotly, args); };
}"""

#: Whether a hover label of the weights heatmap can be seen.
HOVER_SEEN = """() => {
    const layer = document.querySelector('.st-key-att_weights .hoverlayer');
    return getComputedStyle(layer).visibility !== 'hidden'
        && layer.querySelector('.hovertext') !== null;
}"""


#: Sets ``window.__hoverHeard`` at the weights heatmap's next hover event, which plotly.js
#: sends once it has made the hover label (shown or not).
HOVER_HEARD = """() => {
    window.__hoverHeard = false;
    document.querySelector('.st-key-att_weights .js-plotly-plot')
        .once('plotly_hover', () => { window.__hoverHeard = true; });
}"""


def test_hover_never_gives_the_numbers_of_a_stop_no_longer_shown(page, app_url):
    """Between a step's preview and its exact figure the hover would read the old figure."""
    open_app(page, app_url + "/attention?weights=random")
    before = hover_text(page, "att_weights", 5, 0)
    cell = page.evaluate(HOVER_CELL, ["att_weights", 5, 0])
    page.evaluate(HOLD_REACT)
    page.get_by_role("slider", name=re.compile("Scale")).focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "() => document.querySelector('.st-key-att_weights canvas.ae-preview') !== null"
    )
    page.evaluate(HOVER_HEARD)
    page.mouse.move(cell["x"] + 1, cell["y"])  # the pointer moves over the previewed cell
    page.wait_for_function("() => window.__hoverHeard")  # plotly.js has made its label
    assert not page.evaluate(HOVER_SEEN)
    page.evaluate("window.__releaseReact()")
    wait_settled(page)
    after = hover_text(page, "att_weights", 5, 0)
    assert after != before  # the new stop's numbers, once its figure is drawn
    assert page.evaluate(HOVER_SEEN)
    assert_healthy(page)


def test_a_masked_cells_hover_says_masked_at_every_stop(page, app_url):
    text = quote("the cat sat on the mat")
    open_app(page, f"{app_url}/attention?weights=random&tokenizer=words&causal=1&text={text}")
    for _ in range(2):  # as drawn by the server, then by the browser from the frames
        for key in ("att_weights", "att_scaled"):
            masked = hover_text(page, key, 0, 5)  # "the" may not see "mat"
            assert "masked (−∞ before softmax)" in masked, key
            assert "Infinity" not in masked
        assert re.search(r"scaled score -?\d+\.\d{3}", hover_text(page, "att_weights", 5, 0))
        assert re.search(r"score -?\d+\.\d{4}", hover_text(page, "att_scaled", 5, 0))
        step(page, "ArrowRight")
    assert_healthy(page)


#: Installed in a page: on every animation frame, and at each frame the chart component
#: paints ("ae-frame"), what the scaled scores' title says (the stop the heatmaps show),
#: where the saturation curve's markers stand (as scales, read back through their axes)
#: and what the saturation tables' body cells say (text, and the number held while a
#: preview shows it, else plotly.js's own), into ``window.__seen``.
SATURATION_PROBE = """(markers) => {
    window.__seen = [];
    const cells = (key) => [...document.querySelectorAll(`.st-key-${key} .cell-text`)]
        .filter((t) => t.closest('.column-block')?.__data__?.type === 'cells')
        .map((t) => [t.__data__.rowNumber, t.__data__.column.specIndex, t.textContent]);
    const look = (when) => {
        const title = document.querySelector('.st-key-att_scaled .gtitle');
        const plot = document.querySelector('.st-key-att_saturation .js-plotly-plot');
        const layout = plot._fullLayout;
        const left = plot.querySelector('.main-svg').getBoundingClientRect().left;
        const at = markers.map((index) => {
            const path = plot.querySelector(`.shapelayer path[data-index="${index}"]`);
            const box = path.getBoundingClientRect();
            const axis = layout[`xaxis${layout.shapes[index].xref.slice(1)}`];
            return axis.p2c(box.left + box.width / 2 - left - axis._offset);
        });
        const line = title.querySelector('tspan.line') ?? title;
        window.__seen.push({when, title: line.textContent, markers: at,
            means: cells('att_saturation_mean'), rows: cells('att_saturation_rows')});
    };
    look('armed');  // the stop before: a paint may beat the first animation frame below
    window.addEventListener('ae-frame', () => look('ae-frame'));
    const tick = () => { look('frame'); window.__probe = requestAnimationFrame(tick); };
    window.__probe = requestAnimationFrame(tick);
}"""


def saturation_seen(page):
    """Stop the probe: what it saw, each look's stop (from the heatmaps' title) checked."""
    seen = page.evaluate("cancelAnimationFrame(window.__probe); window.__seen")
    options = controls.scale_options(
        *controls.model_shape({"weights": "random", "d_model": 16, "heads": 1})
    )
    titles = {f"{scale:.4g}": scale for scale in options}
    assert len(titles) == len(options)
    for look in seen:
        look["scale"] = titles[re.search(r"× (\S+)", look["title"]).group(1)]
    return seen, options


def assert_saturation_shows_the_heatmaps_stop(seen, options):
    """In every look, the markers and the tables show the engine's numbers at the heatmaps' stop."""
    logs = np.log(options)
    stats = {}
    for look in seen:
        scale = look["scale"]
        if scale not in stats:
            per_row = np.stack(engine.saturation(engine_weights("random", scale)), axis=-1)
            stats[scale] = per_row.mean(axis=0), per_row
        means, per_row = stats[scale]
        for at in look["markers"]:  # the marker stands at the heatmaps' stop
            assert options[np.argmin(np.abs(logs - np.log(at)))] == scale, look["when"]
        assert len(look["means"]) == 5  # the uniform count, then four means
        for written, expected in ((look["means"], means[None]), (look["rows"], per_row)):
            for row, column, text in written:
                if column == 0:
                    continue  # the labels' column
                # the text as the table writes it (4 decimals) of the engine's number, from
                # float32 frames: within half its last digit, and 1e-6 of the value (2^H: 40)
                engine_value = expected[row, column - 1]
                assert abs(float(text) - engine_value) <= 5e-5 + 1e-6 * abs(engine_value), (
                    look["when"],
                    scale,
                    text,
                    engine_value,
                )


def test_the_saturation_panel_shows_the_heatmaps_stop_in_the_same_frame(page, app_url):
    open_app(page, app_url + "/attention?weights=random")
    page.get_by_text("Per query row").click()  # the per-row table follows when open
    page.wait_for_function(
        """() => document.querySelector('.st-key-att_saturation_rows .ae-chart .main-svg')
            && !document.querySelector('.st-key-att_saturation_rows .ae-chart[data-pending]')"""
    )
    probe = list(saturation.CURRENT_SCALE_MARKERS)
    page.evaluate(SATURATION_PROBE, probe)
    step(page, "ArrowRight")
    seen, options = saturation_seen(page)
    assert {look["scale"] for look in seen} == {
        options[options.index(0.25)],
        options[options.index(0.25) + 1],
    }
    assert any(look["when"] == "ae-frame" for look in seen)
    assert_saturation_shows_the_heatmaps_stop(seen, options)

    page.evaluate(SATURATION_PROBE, probe)  # and while the scale is dragged
    slider(page, "att_scale").scroll_into_view_if_needed()
    drag(page, 0.5, 0.9, 30)
    seen, options = saturation_seen(page)
    assert len({look["scale"] for look in seen}) >= 10
    assert_saturation_shows_the_heatmaps_stop(seen, options)
    page.mouse.up()
    wait_settled(page)
    assert_healthy(page)


def minilm_weights(layer, head, causal=False):
    """MiniLM's weights on the default passage at its default scale, for a layer and head."""
    model = checkpoint.load_minilm()
    run = bert.run(model, controls.DEFAULT_TEXT)
    return one_layer.layer_run(model, run, layer, None, causal).attention.weights[head]


#: The sidebar's controls that change the weights heatmap, each as the test drives it: the
#: widget's key, the key pressed on it, the URL parameter's new value, and the engine's
#: weights then (layer, head, causal).
CONTROLS = {
    "head": ("head", "ArrowRight", "2", (controls.DEFAULT_LAYER, controls.DEFAULT_HEAD + 1, False)),
    "layer": (
        "layer",
        "ArrowLeft",
        "2",
        (controls.DEFAULT_LAYER - 1, controls.DEFAULT_HEAD, False),
    ),
    "mask": ("causal", "Space", "1", (controls.DEFAULT_LAYER, controls.DEFAULT_HEAD, True)),
}


@pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed")
@pytest.mark.parametrize("control", CONTROLS)
def test_a_sidebar_control_shows_the_engines_weights_and_a_reload_keeps_it(page, app_url, control):
    key, press, value, (layer, head, causal) = CONTROLS[control]
    open_app(page, app_url + "/attention")
    np.testing.assert_allclose(
        page.evaluate(WEIGHTS),
        minilm_weights(controls.DEFAULT_LAYER, controls.DEFAULT_HEAD),
        atol=1e-6,
    )
    page.locator(f".st-key-{key}_control input").first.focus()  # the browser's own control
    page.keyboard.press(press)
    expected = minilm_weights(layer, head, causal)
    wait_for_weights(page, expected)
    wait_settled(page)
    np.testing.assert_allclose(page.evaluate(WEIGHTS), expected, atol=1e-6)
    assert query(page)[key] == value
    page.reload()
    page.runs_seen = 0
    wait_settled(page)
    np.testing.assert_allclose(page.evaluate(WEIGHTS), expected, atol=1e-6)
    assert_healthy(page)


@pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed")
def test_a_closed_tables_numbers_after_a_head_switch_are_the_new_heads_when_opened(page, app_url):
    """The per-row saturation table waits, closed, through a head switch, then shows its head."""
    open_app(page, app_url + "/attention")
    page.locator(".st-key-head_control input").first.focus()
    page.keyboard.press("ArrowRight")
    wait_for_weights(page, minilm_weights(controls.DEFAULT_LAYER, controls.DEFAULT_HEAD + 1))
    wait_settled(page)
    page.get_by_text("Per query row").click()
    look_at(page, "att_saturation_rows")
    columns = page.evaluate(
        """() => document.querySelector('.st-key-att_saturation_rows .js-plotly-plot')
            .data[0].cells.values.slice(1).map(c => Array.from(c))"""
    )
    weights = minilm_weights(controls.DEFAULT_LAYER, controls.DEFAULT_HEAD + 1)
    stats = np.stack(engine.saturation(weights), axis=-1)
    np.testing.assert_allclose(np.array(columns).T, stats, rtol=1e-5, atol=1e-6)
    assert_healthy(page)
