"""The live head in headless Chromium: a head switch shown from the heads the browser holds.

Fixtures (the server, the browser, a fresh page) are in ``conftest.py``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest
from browser_support import (
    PLOTLYS_PIXELS,
    assert_healthy,
    bars,
    cells,
    look_at,
    open_app,
    query,
    scroll_to_top,
    wait_settled,
)
from harness import free_port, serve_app

from app.state import controls
from engine import bert, checkpoint, one_layer

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed"),
]

#: What the weights heatmap draws, as numbers.
WEIGHTS = """() => {
    const plot = document.querySelector('.st-key-att_weights .js-plotly-plot');
    return Array.from(plot._fullData[0].z, row => Array.from(row));
}"""

#: Drop every message the page sends the server from now on (until ``RECONNECT``).
UNPLUG = """() => {
    window.__sent = WebSocket.prototype.send;
    WebSocket.prototype.send = function () {};
}"""
RECONNECT = "() => { WebSocket.prototype.send = window.__sent; }"


#: Record every weights and raw scores figure plotly.js draws (their numbers, once drawn,
#: in ``__drawn`` and ``__drawnRaw``) and how many times a redraw rebuilt a plot from
#: scratch (its SVG replaced) instead of updating it.
RECORD_DRAWINGS = """() => {
    const P = window.Plotly;
    window.__drawn = [];
    window.__drawnRaw = [];
    window.__rebuilt = 0;
    const react = P.react;
    P.react = async function (div, ...rest) {
        const svg = div.querySelector('.main-svg');
        const result = await react.call(this, div, ...rest);
        if (svg && !svg.isConnected) window.__rebuilt += 1;
        const z = () => Array.from(div._fullData[0].z, row => Array.from(row));
        if (div.closest('.st-key-att_weights')) window.__drawn.push(z());
        if (div.closest('.st-key-att_raw')) window.__drawnRaw.push(z());
        return result;
    };
}"""


def minilm_weights(head, layer=controls.DEFAULT_LAYER, causal=False, scale=None):
    """MiniLM's weights on the default passage, at its default scale unless ``scale``."""
    model = checkpoint.load_minilm()
    run = bert.run(model, controls.DEFAULT_TEXT)
    return one_layer.layer_run(model, run, layer, scale, causal).attention.weights[head]


def wait_for_weights(page, weights):
    """Wait until the weights heatmap's exact figure shows ``weights`` (to 1e-6), drawn."""
    page.wait_for_function(
        """(rows) => {
            const plot = document.querySelector('.st-key-att_weights .js-plotly-plot');
            const z = plot._fullData[0].z;
            return !plot.closest('.ae-chart').dataset.pending
                && rows.every((row, i) => row.every((w, j) => Math.abs(z[i][j] - w) < 1e-6));
        }""",
        arg=weights.tolist(),
    )


def switch_layer_or_mask(page, control):
    """From the defaults, a step down the sidebar's layer or the mask turned on: (layer, causal)."""
    if control == "mask":
        page.locator(".st-key-causal_control input").focus()
        page.keyboard.press("Space")
        return controls.DEFAULT_LAYER, True
    page.locator(".st-key-layer_control input[type=range]").first.focus()
    page.keyboard.press("ArrowLeft")
    return controls.DEFAULT_LAYER - 1, False


def step_head(page, key="ArrowRight"):
    page.locator(".st-key-att_head input").focus()
    page.keyboard.press(key)


def test_a_head_switch_is_shown_from_held_heads_with_no_server(page, app_url):
    """With nothing reaching the server, the new head's weights are drawn, to 1e-6."""
    open_app(page, app_url + "/attention")
    look_at(page, "att_bar")  # drawn once near the window: then previewed too
    runs = page.evaluate("window.__runs.finished")
    page.evaluate("window.__aeFrames = []")
    page.evaluate(UNPLUG)
    step_head(page)
    expected = minilm_weights(controls.DEFAULT_HEAD + 1)
    wait_for_weights(page, expected)
    painted = page.evaluate("window.__aeFrames")
    assert painted  # the preview, first
    assert painted[0]["head"] == controls.DEFAULT_HEAD + 1
    assert {"att_weights", "att_scaled", "att_raw", "att_bar"} <= set(painted[0]["parts"])
    np.testing.assert_allclose(page.evaluate(WEIGHTS), expected, atol=1e-6)
    assert page.evaluate("window.__runs.finished") == runs  # no run: the server never heard
    assert query(page).get("head") is None  # the default head: the link waits for Python
    page.evaluate(RECONNECT)
    assert page.errors == []


def test_the_sidebars_head_is_shown_from_held_heads_before_its_run(page, app_url):
    """A key on the sidebar's "Head h" shows the new head with nothing reaching the server."""
    open_app(page, app_url + "/attention")
    runs = page.evaluate("window.__runs.finished")
    page.evaluate("window.__aeFrames = []")
    page.evaluate(UNPLUG)  # Streamlit's own message with the slider's value is lost too
    page.locator(".st-key-head_control input[type=range]").first.focus()
    page.keyboard.press("ArrowRight")
    expected = minilm_weights(controls.DEFAULT_HEAD + 1)
    wait_for_weights(page, expected)
    assert page.evaluate("window.__aeFrames")[0]["head"] == controls.DEFAULT_HEAD + 1
    assert page.locator(".st-key-att_head input").input_value() == str(controls.DEFAULT_HEAD + 1)
    assert page.evaluate("window.__runs.finished") == runs  # no run: the server never heard
    page.evaluate(RECONNECT)
    assert page.errors == []


#: From the next animation frame on, wait for the weights heatmap's preview canvas to show
#: ``shows`` (``"layer 2"``, ``"mask 1"``: the mask on) and keep its pixels, and how many
#: runs had finished then, in ``window.__preview`` (null if none shows it within 10 s).
WATCH_PREVIEW = """(shows) => {
    const plot = document.querySelector('.st-key-att_weights .js-plotly-plot');
    window.__preview = new Promise((resolve) => {
        setTimeout(() => resolve(null), 10000);
        const look = () => {
            const canvas = plot.querySelector('canvas.ae-preview');
            if (!canvas || !canvas.dataset.shows.startsWith(`${shows}:`)) {
                requestAnimationFrame(look);
                return;
            }
            const {width, height} = canvas;
            const data = canvas.getContext('2d').getImageData(0, 0, width, height).data;
            resolve({pixels: Array.from(data), width, height, runs: window.__runs.finished});
        };
        requestAnimationFrame(look);
    });
}"""


@pytest.mark.parametrize("stepped", [False, True], ids=["", "after-a-scale-step"])
@pytest.mark.parametrize("control", ["layer", "mask"])
def test_the_sidebars_layer_or_mask_is_shown_from_held_frames_before_its_run(
    page, app_url, control, stepped
):
    """A key on the sidebar's "Layer ℓ", or a click on its "Mask future tokens", shows the
    head in the new layer or mask before its run is over, in the colours of the engine's
    weights there (those Plotly draws once it is); after a step of the scale too, whose
    release brings that layer's or mask's frames at the new stop."""
    open_app(page, app_url + "/attention")
    scale = None
    if stepped:
        page.get_by_role("slider", name=re.compile("Scale")).focus()
        page.keyboard.press("ArrowRight")
        wait_settled(page)
        scale = float(query(page)["scale"])
        assert scale != controls.default_scale(384, 12)
    page.wait_for_function(HELD_ALONG, arg=control, timeout=10_000)
    layer, causal = controls.DEFAULT_LAYER, control == "mask"
    if control == "layer":
        layer -= 1
    expected = minilm_weights(controls.DEFAULT_HEAD, layer, causal, scale)
    n = len(expected)
    before = cells(page.evaluate(PLOTLYS_PIXELS), n, n).astype(int)
    runs = page.evaluate("window.__runs.finished")
    page.evaluate(WATCH_PREVIEW, f"layer {layer}" if control == "layer" else "mask 1")
    assert switch_layer_or_mask(page, control) == (layer, causal)
    preview = page.evaluate("window.__preview")
    assert preview is not None
    assert preview["runs"] == runs  # shown before the layer's run was over
    wait_for_weights(page, expected)  # then drawn by the run, exactly
    shown = cells(preview, n, n).astype(int)
    plotlys = cells(page.evaluate(PLOTLYS_PIXELS), n, n).astype(int)
    assert np.abs(shown - plotlys).max() <= 4  # the colours of the engine's numbers there
    assert np.abs(shown - before).max() > 16  # not those of the layer before
    assert page.errors == []


def test_the_sidebars_head_is_shown_at_once_after_a_visit_to_another_page(page, app_url):
    """Back on /attention from another page, its new head control follows the sidebar."""
    open_app(page, app_url + "/attention")
    page.locator('[data-testid="stSidebarNavLink"][href$="/multi-head"]').click()
    page.wait_for_url(re.compile(r"/multi-head"))
    wait_settled(page)
    page.locator('[data-testid="stSidebarNavLink"][href$="/attention"]').click()
    page.wait_for_url(re.compile(r"/attention"))
    wait_settled(page)
    runs = page.evaluate("window.__runs.finished")
    page.evaluate(UNPLUG)
    page.locator(".st-key-head_control input[type=range]").first.focus()
    page.keyboard.press("ArrowRight")
    wait_for_weights(page, minilm_weights(controls.DEFAULT_HEAD + 1))
    assert page.evaluate("window.__runs.finished") == runs  # shown before any run
    page.evaluate(RECONNECT)
    assert page.errors == []


def test_the_sidebar_and_the_live_control_take_turns_on_the_head(page, app_url):
    """From a link's head, a live step and a sidebar step back: each shown, the link follows."""
    open_app(page, app_url + "/attention?head=3")
    np.testing.assert_allclose(page.evaluate(WEIGHTS), minilm_weights(3), atol=1e-6)
    page.locator(".st-key-att_head input").focus()  # the live control, then the sidebar
    page.keyboard.press("ArrowRight")
    wait_for_weights(page, minilm_weights(4))
    wait_settled(page)
    page.locator(".st-key-head_control input[type=range]").first.focus()
    page.keyboard.press("ArrowLeft")
    wait_for_weights(page, minilm_weights(3))
    wait_settled(page)
    assert query(page)["head"] == "3"
    assert page.locator(".st-key-att_head input").input_value() == "3"
    assert_healthy(page)


@pytest.mark.parametrize("control", ["sidebar", "live"])
def test_the_bars_drawn_after_a_head_switch_are_the_new_heads(page, app_url, control):
    """The bars the preview moved are plotly.js's own after the exact figure, at the new head.

    plotly.js redraws a bar where the preview had put it, the same path: that is its
    drawing now, not one to put back (a bar chart once showed the head before).
    """
    open_app(page, app_url + "/attention")
    look_at(page, "att_bar")
    if control == "sidebar":
        page.locator(".st-key-head_control input[type=range]").first.focus()
        page.keyboard.press("ArrowRight")
    else:
        step_head(page)
    head = controls.DEFAULT_HEAD + 1
    weights = minilm_weights(head)
    wait_for_weights(page, weights)
    wait_settled(page)
    look_at(page, "att_bar")
    row = bert.run(checkpoint.load_minilm(), controls.DEFAULT_TEXT).labels.index("it")
    assert np.abs(weights[row] - minilm_weights(controls.DEFAULT_HEAD)[row]).max() > 0.1
    np.testing.assert_allclose(bars(page, "att_bar")[0], weights[row], atol=0.01)  # 2 px
    assert_healthy(page)


#: The head's output as the output heatmap draws it, as numbers.
OUTPUT = """() => {
    const plot = document.querySelector('.st-key-att_output .js-plotly-plot');
    return Array.from(plot._fullData[0].z, row => Array.from(row));
}"""


def drawn_far_below(page):
    """The output heatmap, two windows down, drawn (scrolled to), the page then scrolled
    back to the top; what it shows."""
    look_at(page, "att_output")
    scroll_to_top(page)
    output = "document.querySelector('.st-key-att_output .ae-chart')"
    page.wait_for_function(f"() => window.__chartOf({output}).near === false")
    return page.evaluate(OUTPUT)


def test_a_first_load_draws_a_chart_far_below_only_when_it_comes_near(page, app_url):
    """The charts near the window are drawn at once; one two windows down keeps its room,
    undrawn, until scrolled to, and then shows the engine's numbers in that room."""
    open_app(page, app_url + "/attention")
    for near in ("att_raw", "att_weights"):
        assert page.locator(f".st-key-{near} .ae-chart .main-svg").count() > 0
    output = page.locator(".st-key-att_output .ae-chart")
    assert output.get_attribute("data-away") == "1"
    assert output.locator(".main-svg").count() == 0
    room = output.evaluate("d => d.getBoundingClientRect().height")
    assert room == output.evaluate("d => window.__chartOf(d).figure.layout.height")
    look_at(page, "att_output")
    assert output.evaluate("d => d.getBoundingClientRect().height") == pytest.approx(room, abs=1)
    model = checkpoint.load_minilm()
    run = bert.run(model, controls.DEFAULT_TEXT)
    layer = one_layer.layer_run(model, run, controls.DEFAULT_LAYER)
    expected = layer.attention.heads.output[controls.DEFAULT_HEAD]
    np.testing.assert_allclose(page.evaluate(OUTPUT), expected, atol=1e-6)
    assert_healthy(page)


#: Record the charts plotly.js draws, in order (their keys, in ``__reacted``).
RECORD_REACTS = """() => {
    const P = window.Plotly;
    window.__reacted = [];
    const react = P.react;
    P.react = function (div, ...rest) {
        window.__reacted.push(div.closest('[class*="st-key-"]').className.match(/st-key-(\\S+)/)[1]);
        return react.call(this, div, ...rest);
    };
}"""

#: The keys of the charts in the window now (not those in a closed expander).
IN_WINDOW = """() => [...document.querySelectorAll('.ae-chart')].filter(chart => {
    const box = chart.getBoundingClientRect();
    return chart.checkVisibility() && box.bottom > 0 && box.top < window.innerHeight;
}).map(chart => chart.closest('[class*="st-key-"]').className.match(/st-key-(\\S+)/)[1])"""


def test_a_switch_redraws_the_charts_in_the_window_before_those_near_it(page, app_url):
    """The reader's screen first: scrolled down the page, a head switch from the sidebar
    replots the charts in the window before the ones above it (near, so replotted too)."""
    open_app(page, app_url + "/attention")
    look_at(page, "att_saturation_mean")
    page.wait_for_function("() => !document.querySelector('.ae-chart[data-pending]')")
    seen = page.evaluate(IN_WINDOW)
    page.evaluate(RECORD_REACTS)
    page.locator(".st-key-head_control input[type=range]").focus()  # the sidebar's: the page stays
    page.keyboard.press("ArrowRight")
    wait_settled(page)
    reacted = page.evaluate("window.__reacted")
    assert seen
    assert len(reacted) > len(seen), (seen, reacted)  # some above it replotted too
    assert set(reacted[: len(seen)]) == set(seen), (seen, reacted)
    assert_healthy(page)


def test_a_chart_far_below_is_redrawn_at_the_new_head_when_it_comes_near(page, app_url):
    """Only the charts near the window are replotted at once; one far below, when scrolled to."""
    open_app(page, app_url + "/attention")
    before = drawn_far_below(page)
    page.evaluate("window.__aeFrames = []")
    step_head(page)
    head = controls.DEFAULT_HEAD + 1
    wait_for_weights(page, minilm_weights(head))  # near the window: replotted at once
    wait_settled(page)
    assert "att_output" in page.evaluate("window.__aeFrames")[0]["parts"]  # previewed, though
    assert page.locator(".st-key-att_output .ae-chart[data-away]").count() == 1
    assert page.evaluate(OUTPUT) == before  # not replotted
    assert page.locator(".st-key-att_output .ae-chart").is_visible()  # its preview shows it
    look_at(page, "att_output")
    model = checkpoint.load_minilm()
    run = bert.run(model, controls.DEFAULT_TEXT)
    expected = one_layer.layer_run(model, run, controls.DEFAULT_LAYER).attention.heads.output[head]
    np.testing.assert_allclose(page.evaluate(OUTPUT), expected, atol=1e-6)
    assert_healthy(page)


@pytest.mark.parametrize("control", ["layer", "mask"])
def test_a_chart_far_below_gets_a_new_layers_or_masks_data_when_it_comes_near(
    page, app_url, control
):
    """New data, too, are drawn near the window at once and far below only when scrolled to."""
    open_app(page, app_url + "/attention")
    before = drawn_far_below(page)
    layer, causal = switch_layer_or_mask(page, control)
    head = controls.DEFAULT_HEAD
    wait_for_weights(page, minilm_weights(head, layer=layer, causal=causal))  # near: at once
    wait_settled(page)
    assert page.locator(".st-key-att_output .ae-chart[data-away]").count() == 1
    assert page.evaluate(OUTPUT) == before  # not drawn yet, and hidden: never seen stale
    output = page.locator(".st-key-att_output .ae-chart")
    assert output.evaluate("d => d.style.visibility") == "hidden"
    look_at(page, "att_output")
    assert output.is_visible()
    model = checkpoint.load_minilm()
    run = bert.run(model, controls.DEFAULT_TEXT)
    expected = one_layer.layer_run(model, run, layer, None, causal).attention.heads.output[head]
    assert np.abs(np.array(before) - expected).max() > 0.01  # the change is one to see
    np.testing.assert_allclose(page.evaluate(OUTPUT), expected, atol=1e-6)
    assert_healthy(page)


def test_a_page_about_to_print_draws_the_charts_far_from_the_window(page, app_url):
    """Printing (here, to PDF) draws every chart that waited to come near: none prints stale."""
    open_app(page, app_url + "/attention")
    layer, _ = switch_layer_or_mask(page, "layer")
    head = controls.DEFAULT_HEAD
    wait_for_weights(page, minilm_weights(head, layer=layer))
    wait_settled(page)
    assert page.locator(".st-key-att_output .ae-chart[data-away]").count() == 1
    page.pdf()
    stale = """() => [...document.querySelectorAll('.ae-chart[data-away]')]
        .filter((d) => d.style.visibility === 'hidden').length"""  # away and owed data
    assert page.evaluate(stale) == 0  # drawn for the print; far away again after, but current
    model = checkpoint.load_minilm()
    run = bert.run(model, controls.DEFAULT_TEXT)
    expected = one_layer.layer_run(model, run, layer).attention.heads.output[head]
    np.testing.assert_allclose(page.evaluate(OUTPUT), expected, atol=1e-6)


def test_the_new_heads_frames_of_every_stop_come_in_the_switchs_run_and_play(page, app_url):
    """A head switch's own run brings the new head's frames of every stop: nothing asked.

    Once that run is over, a step of the scale with nothing reaching the server shows the
    new head's weights at the new stop: drawn from those frames, to 1e-6.
    """
    traffic = []  # ("sent" | "received", bytes) in the order the socket saw them
    page.on(
        "websocket",
        lambda ws: (
            ws.on("framesent", lambda data: traffic.append(("sent", len(data)))),
            ws.on("framereceived", lambda data: traffic.append(("received", len(data)))),
        ),
    )
    open_app(page, app_url + "/attention")
    traffic.clear()
    page.locator(".st-key-head_control input").first.focus()  # the sidebar's head
    page.keyboard.press("ArrowRight")
    head = controls.DEFAULT_HEAD + 1
    wait_for_weights(page, minilm_weights(head))  # shown before the run, from held heads
    wait_settled(page)
    assert page.evaluate(SCALE_FRAMES, head)  # held once the switch's run is over
    wait_for_traffic(page, traffic, lambda kind, size: kind == "received" and size > 1_500_000)
    assert [kind for kind, _ in traffic].count("sent") == 1  # the head's report, no ask
    options = controls.scale_options(384, 12)
    stop = options.index(controls.default_scale(384, 12))
    page.evaluate(UNPLUG)
    page.get_by_role("slider", name=re.compile("Scale")).focus()
    page.keyboard.press("ArrowRight")
    wait_for_weights(page, minilm_weights(head, scale=options[stop + 1]))
    page.evaluate(RECONNECT)
    assert page.errors == []


def wait_for_traffic(page, traffic, seen, timeout_s=15):
    """Let Playwright report socket frames until one ``seen(kind, size)`` is in ``traffic``."""
    deadline = time.monotonic() + timeout_s
    while not any(seen(kind, size) for kind, size in traffic):
        assert time.monotonic() < deadline, f"no such frame in {timeout_s} s: {traffic}"
        page.wait_for_timeout(50)


#: Whether the page is connected to a server.
CONNECTED = """() => document.querySelector('[data-testid="stApp"]')
    ?.dataset.testConnectionState === 'CONNECTED'"""

#: Whether frames.js holds the scale's frames of every stop of the head shown (of that
#: head, when given one, and showing it).
SCALE_FRAMES = """async (head) => {
    const frames = await import('/_stcore/bidi-components/attention-explorer.chart/frames.js');
    const src = frames.source('att_scale');
    if (head !== undefined && head !== null && src.head !== head) return false;
    return [...frames.heldFrames(src)].some(
        (held) => held.axis === undefined && held.head === src.head && held.scales.length > 1);
}"""
#: Whether frames.js holds the head shown along the axis of ``control`` ("layer", "mask").
HELD_ALONG = """async (control) => {
    const frames = await import('/_stcore/bidi-components/attention-explorer.chart/frames.js');
    return frames.otherFrames(frames.source('att_scale'), control) !== null;
}"""


def test_a_page_that_comes_back_on_a_new_server_gets_its_frames_of_every_stop(page):
    """A lost connection that comes back to a new session: its first run sends them all.

    As when a replica dies behind the proxy: the page reconnects to a server that never
    heard of it and runs once from its address bar (connection.js); that run sends the
    frames of every stop with the rest, as every run does.
    """
    port = free_port()
    main = Path(__file__).resolve().parents[2] / "app" / "main.py"
    with serve_app(main, port=port) as (url, _):
        open_app(page, url + "/attention")
        assert page.evaluate(SCALE_FRAMES)
    page.wait_for_function(f"() => !({CONNECTED})()", timeout=60_000)  # it saw the loss
    runs = page.evaluate("window.__runs.finished")
    with serve_app(main, port=port):
        page.wait_for_function(CONNECTED, timeout=60_000)
        page.wait_for_function("(n) => window.__runs.finished >= n + 1", arg=runs)  # the link's
        page.wait_for_function(SCALE_FRAMES, polling=100)
        wait_settled(page)
        np.testing.assert_allclose(
            page.evaluate(WEIGHTS), minilm_weights(controls.DEFAULT_HEAD), atol=1e-6
        )
    assert page.errors == []


def test_a_live_head_reaches_the_sidebar_the_link_and_a_reload(page, app_url):
    open_app(page, app_url + "/attention")
    step_head(page)
    step_head(page)
    head = controls.DEFAULT_HEAD + 2
    expected = minilm_weights(head)
    wait_for_weights(page, expected)
    wait_settled(page)
    assert query(page)["head"] == str(head)
    sidebar = page.locator(".st-key-head_control input[type=range]").first  # heads 0-11: the index
    assert sidebar.input_value() == str(head)
    assert page.locator(".st-key-att_head input").input_value() == str(head)
    page.reload()
    page.runs_seen = 0
    wait_settled(page)
    np.testing.assert_allclose(page.evaluate(WEIGHTS), expected, atol=1e-6)
    assert page.locator(".st-key-att_head input").input_value() == str(head)
    assert_healthy(page)


def test_the_sidebars_head_moves_the_live_control(page, app_url):
    open_app(page, app_url + "/attention")
    page.locator(".st-key-head_control input").first.focus()
    page.keyboard.press("ArrowLeft")
    expected = minilm_weights(controls.DEFAULT_HEAD - 1)
    wait_for_weights(page, expected)
    wait_settled(page)
    assert page.locator(".st-key-att_head input").input_value() == str(controls.DEFAULT_HEAD - 1)
    step_head(page)  # and back to the default head from the live control
    wait_for_weights(page, minilm_weights(controls.DEFAULT_HEAD))
    wait_settled(page)
    assert "head" not in query(page)
    assert_healthy(page)


def test_the_sidebars_head_dragged_is_shown_as_it_goes(page, app_url):
    """Dragged along the sidebar's "Head h", the charts show each head passed, with no server."""
    open_app(page, app_url + "/attention")
    page.evaluate("window.__aeFrames = []")
    page.evaluate(UNPLUG)
    page.locator(".st-key-head_control").scroll_into_view_if_needed()
    sidebar = page.locator(".st-key-head_control input[type=range]").first
    heads = int(sidebar.get_attribute("max")) + 1
    track = sidebar.bounding_box()
    y = track["y"] + track["height"] / 2
    page.mouse.move(track["x"] + track["width"] * (controls.DEFAULT_HEAD + 0.5) / heads, y)
    page.mouse.down()
    page.mouse.move(track["x"] + track["width"] * 0.99, y, steps=12)
    page.mouse.up()
    last = int(page.locator(".st-key-head_control input[type=range]").first.input_value())
    assert last >= heads - 2  # dragged near the end
    wait_for_weights(page, minilm_weights(last))
    shown = page.evaluate("window.__aeFrames.map(f => f.head)")
    assert len(set(shown)) >= 4
    assert shown[-1] == last
    assert page.locator(".st-key-att_head input").input_value() == str(last)
    page.evaluate(RECONNECT)


def test_a_live_step_just_after_a_sidebar_step_stays(page, app_url):
    """The run after a live step writes the sidebar's head, the old one then the new: no
    move of the user's, even a moment after the user's own key on the sidebar.

    Taken for one, it pulled the charts and the live control back to the old head while
    the sidebar and the link went on to the new.
    """
    open_app(page, app_url + "/attention")
    page.evaluate(RECORD_DRAWINGS)
    page.locator(".st-key-head_control input[type=range]").first.focus()
    page.keyboard.press("ArrowRight")
    wait_for_weights(page, minilm_weights(controls.DEFAULT_HEAD + 1))
    page.evaluate("window.__aeFrames = []; window.__drawn = []")
    step_head(page)  # within a second of the sidebar's key
    head = controls.DEFAULT_HEAD + 2
    expected = minilm_weights(head)
    wait_for_weights(page, expected)
    wait_settled(page)
    assert {frame["head"] for frame in page.evaluate("window.__aeFrames")} == {head}
    for drawn in page.evaluate("window.__drawn"):
        np.testing.assert_allclose(drawn, expected, atol=1e-6)
    np.testing.assert_allclose(page.evaluate(WEIGHTS), expected, atol=1e-6)
    assert page.locator(".st-key-att_head input").input_value() == str(head)
    assert page.locator(".st-key-head_control input[type=range]").first.input_value() == str(head)
    assert query(page)["head"] == str(head)
    assert_healthy(page)


def test_quick_steps_on_both_head_controls_never_show_an_earlier_head_again(page, app_url):
    """Keys on the sidebar's head and the live control, faster than the runs they start:
    every head painted is a later one than the head before, and the runs that catch up
    (each with the head of an older key) move neither control back.

    The old sidebar watch took a run's write of an older head for the user's move, and the
    charts went back to it while the link went on.
    """
    open_app(page, app_url + "/attention")
    page.evaluate("window.__aeFrames = []")
    page.locator(".st-key-head_control input[type=range]").first.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    step_head(page)
    step_head(page)
    head = controls.DEFAULT_HEAD + 4
    expected = minilm_weights(head)
    wait_for_weights(page, expected)
    wait_settled(page)
    shown = page.evaluate("window.__aeFrames.map(f => f.head)")
    assert shown == sorted(shown), shown
    assert shown[-1] == head
    assert page.locator(".st-key-att_head input").input_value() == str(head)
    assert page.locator(".st-key-head_control input[type=range]").first.input_value() == str(head)
    assert query(page)["head"] == str(head)
    np.testing.assert_allclose(page.evaluate(WEIGHTS), expected, atol=1e-6)
    assert_healthy(page)


@pytest.mark.parametrize("control", ["mask", "layer"])
def test_a_new_layer_or_mask_never_draws_another_head_on_the_way(page, app_url, control):
    """Every weights and raw scores figure drawn on the way to a new mask or layer is the
    head shown's, drawn once.

    The charts are drawn at a reference head (head 0) and the browser puts the head shown
    in; when new frames replace a chart's, the chart waits for them or its own new data in
    the same run, whichever comes last, instead of showing its reference figure (head 0)
    meanwhile. And no redraw rebuilds a plot from scratch.
    """
    assert controls.DEFAULT_HEAD != 0  # else the reference head would be the head shown
    open_app(page, app_url + "/attention")
    page.evaluate(RECORD_DRAWINGS)
    layer, causal = switch_layer_or_mask(page, control)
    expected = minilm_weights(controls.DEFAULT_HEAD, layer=layer, causal=causal)
    wait_for_weights(page, expected)
    wait_settled(page)
    drawn = page.evaluate("window.__drawn")
    assert len(drawn) == 1  # the new figure, drawn once
    np.testing.assert_allclose(drawn[0], expected, atol=1e-6)
    model = checkpoint.load_minilm()
    run = bert.run(model, controls.DEFAULT_TEXT)
    scores = one_layer.layer_run(model, run, layer, None, causal).attention.heads.scores
    drawn_raw = page.evaluate("window.__drawnRaw")
    assert len(drawn_raw) == 1  # not its reference figure (head 0) first
    np.testing.assert_allclose(drawn_raw[0], scores[controls.DEFAULT_HEAD], atol=1e-4)
    assert page.evaluate("window.__rebuilt") == 0
    assert_healthy(page)


def test_a_live_head_switch_updates_each_plot_in_place(page, app_url):
    """The exact figures after a live switch are drawn by updating each plot, not rebuilding it.

    Plotly.react compares the config it is given with the plot's, functions by identity, and
    rebuilds the whole plot when they differ (about twice the redraw's time).
    """
    open_app(page, app_url + "/attention")
    page.evaluate(RECORD_DRAWINGS)
    step_head(page)
    expected = minilm_weights(controls.DEFAULT_HEAD + 1)
    wait_for_weights(page, expected)
    wait_settled(page)
    assert len(page.evaluate("window.__drawn")) >= 1
    assert page.evaluate("window.__rebuilt") == 0
    assert_healthy(page)
