"""Latency of one keyboard step of the scale slider on /attention, against a trivial app.

Both apps are served at once (the real one, ``app/main.py``, and
``benchmarks/trivial_app.py``: one select_slider driving one 2×2 heatmap) and driven by
one headless Chromium, alternating a step of one with a step of the other, so both see
the same machine load.

"Repainted" is decided in the page. At the key press (a capturing keydown listener)
``performance.now()`` is recorded. From then on, every animation frame takes a
fingerprint of each chart the page changed since the frame before (a MutationObserver
says which): the DOM node that draws it (Streamlit remounts a chart
whose spec or config changed), the data arrays it was given, and what it drew (its
heatmap images, the stop shown by a preview canvas over one, trace and shape paths,
title). Once the rerun has finished (the ``script_finished`` message arrived) and the
socket has been quiet for 400 ms, the step ends at the frame after the first change of
the last chart to change: the moment every chart the step changed showed the new stop
(on the app, from the scale's frames, before the server has answered). "exact" is the
frame after the last change: the server's exact figures drawn. A step is one arrow key
on the focused slider thumb (right through the default passage, then back left at 512
tokens).

Then: frames per second while the scale is dragged (driven in the page, one input event
per animation frame; under Playwright's pointer, one move a stop; and that pointer's own
floor, the same drag over a bare page with one range input), with the script runs
meanwhile (``--drag-only`` measures only this, ``--drags`` rounds of it); the bytes of
the scale's frames at 43, 64 and 128 tokens; with ``--loads``, the first load of
/attention (and of ``--baseline``, an older checkout, beside it).

An instrumented WebSocket stamps each message the page sends and receives, which
splits a step into: press → widget value sent → first reply → last reply → painted.
The bytes per rerun are the WebSocket frames Playwright saw arrive after the press.

The same is then done with 512 tokens of text (typed into the sidebar's text box;
links carry at most 2000 characters).

Then, to say where the time goes: the server's parts, timed by wrapping the figure
builders, ``plotly.io.to_json`` and ``st.plotly_chart`` in an AppTest run of the page;
and the client's, each chart's figure (as the page received it) drawn alone by the
plotly.js that the plotly package ships, both afresh (``newPlot``, what Streamlit does,
since it remounts a chart whose spec changed) and as an update in place (``react``).

Run: ``python3 benchmarks/bench_slider.py [--steps 30] [--long-steps 15] [--no-profile]``;
the drag alone: ``python3 benchmarks/bench_slider.py --drag-only --drags 3``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# The harness is in the tests' support folder; run as a file, a benchmark puts it on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from harness import FRAME_LOG, PROTOBUF_TOP_FIELDS, chromium, serve_app

ROOT = Path(__file__).resolve().parents[1]
#: Targets (issue #11): a keyboard step until every chart shows the new stop, against the
#: trivial app; the same at 512 tokens; painted frames per second while dragging; bytes.
TARGET_RATIO = 0.8
TARGET_RATIO_LONG = 1.25
TARGET_FPS = 40
TARGET_FRAMES_KB = 4 * 1024
TARGET_STEP_KB = 2
LONG_TEXT = " ".join(
    [
        "The restaurant refused to serve me a ham sandwich because it only cooks "
        "vegetarian food. In the end, they just gave me two slices of bread.",
        "The animal did not cross the street because it was too tired, and the river "
        "bank was closed after the storm flooded the road.",
        "Attention lets every token look at every other token and decide how much of "
        "each to take, weighing queries against keys.",
    ]
    * 7
)

# Installed before any page script: stamps WebSocket traffic, and the step timer.
INSTRUMENT = (
    "(() => {"
    + PROTOBUF_TOP_FIELDS
    + r"""
    const log = [];
    const size = d => d.byteLength ?? d.size ?? d.length ?? 0;
    const Native = window.WebSocket;
    const send = Native.prototype.send;
    Native.prototype.send = function (data) {
        log.push(['send', performance.now(), size(data)]);
        return send.call(this, data);
    };
    window.WebSocket = class extends Native {
        constructor(...args) {
            super(...args);
            this.addEventListener('message', e => {
                const t = performance.now();
                const fields = e.data instanceof ArrayBuffer ? topFields(e.data) : [];
                log.push(['recv', t, size(e.data), fields.join(',')]);
                if (fields.includes(SCRIPT_FINISHED) && endsARun(e.data)) {
                    log.push(['finished', t, 0]);
                }
            });
        }
    };
    // A chart's state: which DOM node draws it (Streamlit remounts a chart whose spec
    // changed), the data it was given, and what it drew.
    const nodeIds = new WeakMap();
    let nextId = 0;
    const nodeId = n => nodeIds.get(n) ?? (nodeIds.set(n, ++nextId), nextId);
    const hash = s => s.length + ':' + s.slice(0, 64) + s.slice(-96);
    const arrays = trace => ['x', 'y', 'z', 'customdata']
        .map(k => trace[k]?.bdata ?? '').join('/');
    const fingerprint = plot => [
        nodeId(plot),
        ...(plot.data || []).map(arrays),
        ...[...plot.querySelectorAll('image')].map(i => hash(i.getAttribute('href') || '')
            + i.style.visibility),
        // the chart component's preview of a stop, drawn over a heatmap's image
        ...[...plot.querySelectorAll('canvas.ae-preview')].map(c => c.dataset.shows),
        ...[...plot.querySelectorAll('.cartesianlayer .trace path, .shapelayer path')]
            .map(p => `${p.getAttribute('d')} ${p.getAttribute('transform')} ${p.style.fill}`),
        ...[...plot.querySelectorAll('.gtitle')].map(t => t.textContent),
        // a table's cells (the saturation tables follow the scale)
        [...plot.querySelectorAll('.cell-text')].map(t => t.textContent).join(' '),
    ].join('|');
    const keyOf = plot => {
        const holder = plot.closest('[class*="st-key-"]');
        const key = holder && [...holder.classList].find(c => c.startsWith('st-key-'));
        return key && plot.querySelector('.main-svg') ? key.slice(7) : null;
    };
    const charts = () => {
        const out = {};
        for (const plot of document.querySelectorAll('.js-plotly-plot')) {
            const key = keyOf(plot);
            if (key) out[key] = fingerprint(plot);
        }
        return out;
    };
    // The charts the page changed since the last look, from a MutationObserver: a frame
    // fingerprints only those (all of them, when a chart came or went). Fingerprinting
    // every chart on every frame cost the page 50-65 ms of its main thread a head switch.
    const PLOT = '.js-plotly-plot';
    const dirty = {plots: new Set(), all: false};
    const holdsPlot = n => n.nodeType === 1 && (n.matches(PLOT) || n.querySelector(PLOT));
    new MutationObserver(records => {
        for (const r of records) {
            const element = r.target.nodeType === 1 ? r.target : r.target.parentElement;
            const plot = element?.closest(PLOT);
            if (plot) dirty.plots.add(plot);
            else if ([...r.addedNodes, ...r.removedNodes].some(holdsPlot)) dirty.all = true;
        }
    }).observe(document, {subtree: true, childList: true, attributes: true,
                          characterData: true});
    const changedCharts = previous => {
        if (dirty.all) {
            dirty.all = false;
            dirty.plots.clear();
            return charts();
        }
        const out = {...previous};
        for (const plot of dirty.plots) {
            const key = plot.isConnected && keyOf(plot);
            if (key) out[key] = fingerprint(plot);
        }
        dirty.plots.clear();
        return out;
    };
    // st.plotly_chart's charts (the trivial app) or the chart component's (the app).
    const idle = () => {
        const app = document.querySelector('[data-testid="stApp"]');
        const drawn = document.querySelectorAll('[data-testid="stPlotlyChart"], .ae-chart');
        return app?.dataset.testScriptState === 'notRunning' && drawn.length > 0
            && [...drawn].every(c => c.querySelector('.main-svg') || c.dataset.away)
            && !document.querySelector('.ae-chart[data-pending]');
    };
    window.__bench = {
        log,
        charts,
        // Before a key press: note every chart's state, then on each animation frame
        // note when a chart first and last changed, at the frame after (when it was on
        // screen). First: the chart shows the new stop (from the scale's frames, on the
        // app); last: the exact figure from the server is drawn.
        arm() {
            this.before = charts();
            dirty.plots.clear();
            dirty.all = false;
            this.start = log.length;
            this.t0 = null;
            this.shownAt = {};
            this.firstShownAt = {};
            document.addEventListener('keydown', () => { this.t0 = performance.now(); },
                                      {capture: true, once: true});
            let previous = this.before, pending = [];
            const run = ++this.run;
            const tick = now => {
                if (run !== this.run) return;
                for (const key of pending) {
                    this.shownAt[key] = now;
                    this.firstShownAt[key] ??= now;
                }
                const current = changedCharts(previous);
                pending = Object.keys(current).filter(k => current[k] !== previous[k]);
                previous = current;
                requestAnimationFrame(tick);
            };
            requestAnimationFrame(tick);
        },
        run: 0,
        // Every chart's figure as Plotly was given it (typed arrays left as base64).
        specs() {
            const strip = (k, v) => (k === '_inputArray' ? undefined : v);
            const out = {};
            for (const plot of document.querySelectorAll('.js-plotly-plot')) {
                const holder = plot.closest('[class*="st-key-"]');
                const key = holder && [...holder.classList].find(c => c.startsWith('st-key-'));
                if (key) out[key.slice(7)] = JSON.stringify({
                    data: plot.data, layout: plot.layout, width: plot._fullLayout.width,
                }, strip);
            }
            return out;
        },
        // After the rerun has settled: when was the last changed chart on screen?
        result() {
            this.run++;
            const now = charts();
            const changed = Object.keys(now).filter(k => now[k] !== this.before[k]).sort();
            // A change the frame loop did not note (it happens at 512 tokens, under load)
            // counts as shown now, after the settle: an upper bound.
            const missing = changed.filter(k => !(k in this.shownAt));
            const late = performance.now();
            return {
                t0: this.t0,
                shown: Math.max(...changed.map(k => this.firstShownAt[k] ?? late)),
                t1: Math.max(...changed.map(k => this.shownAt[k] ?? late)),
                changed,
                missing,
                events: log.slice(this.start),
            };
        },
        // Resolves once a script run has finished since arm(), every chart is drawn, and
        // the socket has been quiet for quietMs (checked in the page, so the harness
        // does not poll it while it works).
        settled(quietMs, timeoutMs) {
            return new Promise((resolve, reject) => {
                const started = performance.now();
                const check = () => {
                    const events = log.slice(this.start ?? 0);
                    const last = events.filter(e => e[0] === 'recv' || e[0] === 'send').at(-1);
                    const quiet = last ? performance.now() - last[1] : Infinity;
                    if (events.some(e => e[0] === 'finished') && quiet >= quietMs && idle()) {
                        // two more frames, so the frame loop has noted the last change
                        requestAnimationFrame(() => requestAnimationFrame(resolve));
                    } else if (performance.now() - started > timeoutMs) {
                        reject(new Error(`no finished rerun in ${timeoutMs} ms`));
                    } else {
                        setTimeout(check, 50);
                    }
                };
                check();
            });
        },
        // Bytes received since arm(), as the page saw them.
        received() {
            return log.slice(this.start).filter(e => e[0] === 'recv')
                .reduce((sum, e) => sum + e[2], 0);
        },
    };
})();
"""
)


@dataclass
class Target:
    """One app in one browser page, and what its steps measured."""

    name: str
    page: object
    slider_key: str
    key: str = "ArrowRight"
    received: int = 0
    messages: list = field(default_factory=list)  # the last step's, as received
    counting: bool = True
    missed: int = 0  # steps where the frame loop missed a change (timed as an upper bound)
    charts: Counter = field(default_factory=Counter)
    steps: list = field(default_factory=list)

    def open(self, url, count_frames=True):
        """Load the app; count the bytes its WebSocket receives, through Playwright."""
        self.counting = count_frames
        if count_frames:
            self.page.on("websocket", self._watch)
        self.page.goto(url)
        self.settle()  # arm() never ran: counts from the page's first event

    def _watch(self, ws):
        def count(payload):
            self.received += len(payload)
            self.messages.append(payload)

        ws.on("framereceived", count)

    def settle(self, quiet_ms=400, timeout=300):
        """Wait until a rerun since the last arm() has finished and the socket is quiet."""
        self.page.evaluate(
            "([quiet, timeout]) => window.__bench.settled(quiet, timeout)",
            [quiet_ms, timeout * 1000],
        )

    def press(self):
        """Focus the slider, arm the timer, press the key; return the byte count before."""
        self.page.bring_to_front()
        thumb = self.page.locator(f".st-key-{self.slider_key}").get_by_role("slider")
        end = "max" if self.key == "ArrowRight" else "min"
        if thumb.get_attribute("value") == thumb.get_attribute(end):
            raise RuntimeError(f"{self.name}: the slider is at its {end}; use fewer steps")
        thumb.focus()
        self.page.evaluate("window.__bench.arm()")
        before = self.received
        self.messages = []
        self.page.keyboard.press(self.key)
        return before

    def step(self, record=True):
        """One step: press, settle, and note when the last chart it changed was on screen.

        Records the times, the bytes received and which charts changed.
        """
        before = self.press()
        self.settle()
        result = self.page.evaluate("window.__bench.result()")
        if not result["changed"]:
            raise RuntimeError(f"{self.name}: no repaint seen")
        if not record:
            return
        self.missed += bool(result["missing"])
        t0, t1 = result["t0"], result["t1"]
        sends = [t for kind, t, *_ in result["events"] if kind == "send" and t >= t0]
        replies = [
            t
            for kind, t, *_ in result["events"]
            if kind == "recv" and sends and sends[0] <= t <= t1
        ]
        self.charts[", ".join(result["changed"])] += 1
        self.steps.append(
            {
                "ms": result["shown"] - t0,
                "exact": t1 - t0,
                "bytes": self.received - before if self.counting else float("nan"),
                "page_bytes": self.page.evaluate("window.__bench.received()"),
                "sent": (sends[0] - t0) if sends else float("nan"),
                "first": (replies[0] - t0) if replies else float("nan"),
                "last": (replies[-1] - t0) if replies else float("nan"),
            }
        )

    def tokens(self):
        """Rows of the attention weights chart: the tokens the page shows."""
        return self.page.evaluate(
            """() => {
                const plot = document.querySelector('.st-key-att_weights .js-plotly-plot');
                return plot ? plot._fullData[0].z.length : null;
            }"""
        )


def run_alternating(targets, steps):
    for i in range(steps):
        order = targets if i % 2 == 0 else targets[::-1]
        for target in order:
            target.step()


def summary(target, baseline=None):
    ms = np.array([s["ms"] for s in target.steps])
    median = float(np.median(ms))
    row = {
        "case": target.name,
        "n": len(ms),
        "median": median,
        "exact": float(np.median([s["exact"] for s in target.steps])),
        "p90": float(np.percentile(ms, 90)),
        "ratio": median / float(np.median([s["ms"] for s in baseline.steps])) if baseline else 1.0,
        "kb": statistics.median(s["bytes"] for s in target.steps) / 1024,
        "kb_page": statistics.median(s["page_bytes"] for s in target.steps) / 1024,
    }
    for part in ("sent", "first", "last"):
        row[part] = float(np.nanmedian([s[part] for s in target.steps]))
    return row


def message_breakdown(messages):
    """Bytes of each message one step received: ``(bytes, what)``, in arrival order.

    ``what`` names the ForwardMsg: its type, and for an element its kind and key (a
    ``ref_hash`` is an element resent as a reference to the browser's copy).
    """
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    out = []
    for payload in messages:
        if isinstance(payload, str):
            out.append((len(payload), "text"))
            continue
        msg = ForwardMsg()
        msg.ParseFromString(payload)
        what = msg.WhichOneof("type")
        if what == "delta":
            what = msg.delta.WhichOneof("type")
            if what == "new_element":
                element = msg.delta.new_element
                kind = element.WhichOneof("type")
                key = getattr(getattr(element, kind), "id", "").rsplit("-", 1)[-1]
                what = f"{kind} {key}".strip()
        out.append((len(payload), what))
    return out


def print_breakdown(label, messages):
    """The last step's bytes by message: references and blocks summed, elements by key."""
    parts = message_breakdown(messages)
    sizes, counts = Counter(), Counter()
    for size, what in parts:
        group = what if what not in ("ref_hash", "add_block") else f"{what} (every one)"
        sizes[group] += size
        counts[group] += 1
    total = sum(size for size, _ in parts)
    print(f"bytes of the last step, {label}: {total} in {len(parts)} messages")
    for group, size in sizes.most_common():
        times = f" ({counts[group]}×)" if counts[group] > 1 else ""
        print(f"  {size:7d}  {group}{times}")


def print_table(rows):
    header = (
        f"{'case':<36} {'steps':>5} {'median ms':>9} {'p90 ms':>7} {'ratio':>6} {'exact':>6} "
        f"{'KB/rerun':>9} {'(page)':>8} {'sent':>5} {'1st msg':>7} {'last msg':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['case']:<36} {r['n']:>5} {r['median']:>9.0f} {r['p90']:>7.0f} "
            f"{r['ratio']:>6.2f} {r['exact']:>6.0f} {r['kb']:>9.1f} {r['kb_page']:>8.1f} "
            f"{r['sent']:>5.0f} {r['first']:>7.0f} {r['last']:>8.0f}"
        )
    print(
        "median / p90: ms from the key press until every chart the step changed shows the "
        "new stop; exact: until the last of them has drawn its exact figure from the server "
        "(the same moment for the trivial app).\n"
        "KB/rerun: WebSocket bytes received per step, as Playwright saw the frames; (page): "
        "as the page's own socket counted them.\nsent / 1st msg / last msg: median ms from the "
        "key press until the page sent the widget value, got the first reply, got the last "
        "reply before the repaint."
    )


# Drawing each chart alone, with the plotly.js that the plotly package ships (the page's
# bundle does not expose its copy): a fresh newPlot (what a remount costs) and a react
# from the chart's previous state (what an update in place would cost).
_DRAW = """async ([before, after, repeats]) => {
    const parse = s => JSON.parse(s);
    const median = xs => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const out = {};
    for (const key of Object.keys(after)) {
        const a = parse(after[key]), b = parse(before[key] ?? after[key]);
        const div = document.createElement('div');
        div.style.width = a.width + 'px';
        document.body.appendChild(div);
        const fresh = [], react = [];
        for (let i = 0; i < repeats; i++) {
            Plotly.purge(div);
            let t = performance.now();
            await Plotly.newPlot(div, a.data, a.layout);
            fresh.push(performance.now() - t);
            await Plotly.newPlot(div, b.data, b.layout);
            t = performance.now();
            await Plotly.react(div, a.data, a.layout);
            react.push(performance.now() - t);
        }
        Plotly.purge(div);
        div.remove();
        out[key] = [median(fresh), median(react), after[key].length];
    }
    return out;
}"""


def profile_client(browser, before, after, repeats=5):
    """Milliseconds to draw each chart afresh and to update it in place; spec sizes."""
    import plotly

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_content("<html><body></body></html>")
    page.add_script_tag(path=str(Path(plotly.__file__).parent / "package_data" / "plotly.min.js"))
    timings = page.evaluate(_DRAW, [before, after, repeats])
    page.close()
    return timings


def profile_server(text=None, runs=3):
    """Per-rerun milliseconds of the server's parts, timed by wrapping them in AppTest.

    Wraps every public function of the view modules (``app/views/``), of
    ``app.data.layers`` and ``app.live.sweeps``, ``plotly.io.to_json``, the chart component
    and Streamlit's ``dataframe``; runs /attention (the whole script: AppTest has no
    fragment reruns), moving the scale one stop per run.
    """
    import functools
    import importlib

    import plotly.io
    from streamlit.delta_generator import DeltaGenerator
    from streamlit.testing.v1 import AppTest

    import attention_explorer
    from app.state import controls

    spent, calls = Counter(), Counter()

    def wrap(owner, name, label):
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - start
                calls[label] += 1

        setattr(owner, name, timed)
        return original

    undo = []
    views = [f"app.views.{path.stem}" for path in (ROOT / "app" / "views").glob("[!_]*.py")]
    for module_name in (*sorted(views), "app.data.layers", "app.live.sweeps"):
        with contextlib.suppress(ImportError):
            module = importlib.import_module(module_name)
            for name, obj in list(vars(module).items()):
                public = not name.startswith("_") and not isinstance(obj, type)
                if public and callable(obj) and getattr(obj, "__module__", None) == module_name:
                    undo.append((module, name, wrap(module, name, f"{module_name}.{name}")))
    for owner, name, label in (
        (plotly.io, "to_json", "plotly.io.to_json"),
        (attention_explorer, "chart", "attention_explorer.chart (the chart component)"),
        (DeltaGenerator, "dataframe", "st.dataframe"),
    ):
        undo.append((owner, name, wrap(owner, name, label)))
    try:
        at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=600)
        at.run()
        at.switch_page("../pages/attention.py").run()
        if text is not None:
            at.text_area(key="text").set_value(text).run()
        spent.clear()
        calls.clear()
        total = 0.0
        for _ in range(runs):
            options = controls.scale_options(at.session_state["d_model"], at.session_state["heads"])
            at.session_state["scale"] = options[options.index(at.session_state["scale"]) + 1]
            start = time.perf_counter()
            at.run()
            total += time.perf_counter() - start
        if at.exception:
            raise RuntimeError(at.exception[0].value)
    finally:
        for owner, name, original in undo:
            setattr(owner, name, original)
    parts = {
        label: (seconds * 1000 / runs, calls[label] // runs) for label, seconds in spent.items()
    }
    return total * 1000 / runs, parts


def print_profiles(server, client):
    for label, (total, parts) in server.items():
        print(f"server, {label}: whole script {total:.0f} ms per rerun (AppTest); inclusive parts:")
        for name, (ms, n) in sorted(parts.items(), key=lambda kv: -kv[1][0]):
            if ms >= 1:
                print(f"  {ms:8.1f} ms  {n:3d}×  {name}")
    for label, charts in client.items():
        fresh = sum(t[0] for t in charts.values())
        react = sum(t[1] for t in charts.values())
        print(
            f"client, {label}: drawing every chart afresh {fresh:.0f} ms, updating in place "
            f"{react:.0f} ms (plotly.js alone, no Streamlit)"
        )
        for key, (ms_fresh, ms_react, size) in charts.items():
            print(
                f"  {key:<16} newPlot {ms_fresh:7.1f} ms  react {ms_react:7.1f} ms  "
                f"spec {size / 1024:8.1f} KB"
            )


def measure_phase(app, trivial, steps, warmup, browser, profile):
    """Warm up, then alternate ``steps`` timed steps of each app.

    Returns
    -------
    rows : the trivial app's row and the attention page's row, for :func:`print_table`
    n : int, the tokens the attention page shows
    charts : Counter of the sets of charts that each step repainted
    drawing : dict, the client profile of the last step (empty without ``profile``)
    """
    app.steps, trivial.steps, app.charts, app.missed = [], [], Counter(), 0
    for target in (app, trivial):
        for _ in range(warmup):
            target.step(record=False)
    n = app.tokens()
    run_alternating([app, trivial], steps - 1)
    before = app.page.evaluate("window.__bench.specs()")
    run_alternating([app, trivial], 1)
    drawing = {}
    if profile:
        drawing = profile_client(browser, before, app.page.evaluate("window.__bench.specs()"))
    rows = [summary(trivial), summary(app, trivial)]
    rows[1]["case"] = f"attention page, {n} tokens"
    if app.missed:
        rows[1]["case"] += f" ({app.missed} upper bounds)"
    return rows, n, app.charts, drawing


# A drag driven from inside the page: on every animation frame the slider moves one stop
# (back and forth over its range) and gets the input event a pointer would send. Counts
# the frames the charts painted (the chart component announces each with an "ae-frame"
# event, timed with performance.now() inside its callback; FRAME_LOG keeps them) and
# the script runs that finished meanwhile.
_DRAG_IN_PAGE = """async (ms) => {
    const input = document.querySelector('.st-key-att_scale input[type=range]');
    const finished = () => window.__bench.log.filter(e => e[0] === 'finished').length;
    const runs = finished();
    window.__aeFrames = [];
    const lo = 10, hi = Number(input.max) - 10;
    let value = lo, direction = 1;
    const start = performance.now();
    await new Promise(resolve => {
        const tick = () => {
            if (performance.now() - start > ms) return resolve();
            value += direction;
            if (value >= hi || value <= lo) direction = -direction;
            input.value = String(value);
            input.dispatchEvent(new Event('input', {bubbles: true}));
            requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
    });
    await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    const frames = window.__aeFrames;
    const span = frames.at(-1).painted - frames[0].started;
    const paint = frames.map(f => f.painted - f.started).sort((a, b) => a - b);
    return {frames: frames.length, fps: (frames.length - 1) / span * 1000,
            paint_ms: paint[Math.floor(paint.length / 2)], runs: finished() - runs};
}"""

# Notes, in a page, the times of the pointer moves and input events it is given while on.
_POINTER_LOG = """() => {
    if (window.__pointer) return;
    window.__pointer = {moves: [], inputs: [], on: false};
    addEventListener('pointermove', () => __pointer.on && __pointer.moves.push(performance.now()),
                     true);
    addEventListener('input', () => __pointer.on && __pointer.inputs.push(performance.now()), true);
}"""

# What the page was given while on, and the script runs finished since __bench.start
# (the app's; before the release).
_POINTER_SEEN = """() => {
    __pointer.on = false;
    const runs = window.__bench
        ? __bench.log.slice(__bench.start).filter(e => e[0] === 'finished').length : 0;
    return [__pointer.moves, __pointer.inputs,
            (window.__aeFrames || []).map(f => [f.started, f.painted]), runs];
}"""

# Whether the page asked for a run since __bench.start (a release on the stop Python holds
# asks for none), waiting up to a second for it.
_SENT = """() => new Promise(resolve => {
    const t0 = performance.now();
    const look = () => {
        if (__bench.log.slice(__bench.start).some(e => e[0] === 'send')) resolve(true);
        else if (performance.now() - t0 > 1000) resolve(false);
        else setTimeout(look, 50);
    };
    look();
})"""

#: The driver's floor: a page with nothing but a range input, as wide as the scale and with
#: as many stops, dragged by the same pointer.
_BARE_RANGE = (
    '<html><body style="margin: 40px"><input type="range" min="0" max="{max}" step="1" '
    'value="0" style="width: {width}px"></body></html>'
)


def _rate(times):
    """Events per second from the first time to the last (ms, performance.now())."""
    return (len(times) - 1) / (times[-1] - times[0]) * 1000 if len(times) > 1 else float("nan")


def pointer_drag(page, thumb, forward=True):
    """Playwright's pointer dragging ``thumb`` (a range input), one move a stop.

    Presses at 20 % of its width and moves to 80 % (``forward``; else back) in as many
    moves as stops, each waiting for Chromium to take the one before; releases once the
    moves are counted.

    Returns {moves, frames, fps, moves_s, inputs_s}: the moves, the frames the chart
    component painted and per second (first start to last paint), the pointer moves and
    input events the page was given per second.
    """
    page.bring_to_front()
    thumb.scroll_into_view_if_needed()
    page.evaluate(_POINTER_LOG)
    box = thumb.bounding_box()
    stops = int(thumb.get_attribute("max"))
    ends = [box["x"] + box["width"] * 0.2, box["x"] + box["width"] * 0.8]
    start, end = ends if forward else ends[::-1]
    moves = max(1, round(0.6 * stops))
    y = box["y"] + box["height"] / 2
    page.mouse.move(start, y)
    page.evaluate(
        "window.__aeFrames = []; __pointer.moves = []; __pointer.inputs = []; __pointer.on = true"
    )
    page.mouse.down()
    page.mouse.move(end, y, steps=moves)
    seen = page.evaluate(_POINTER_SEEN)
    page.mouse.up()
    pointer_moves, inputs, frames, runs = seen
    span = frames[-1][1] - frames[0][0] if len(frames) > 1 else float("nan")
    return {
        "moves": moves,
        "frames": len(frames),
        "fps": (len(frames) - 1) / span * 1000 if len(frames) > 1 else float("nan"),
        "moves_s": _rate(pointer_moves),
        "inputs_s": _rate(inputs),
        "runs": runs,
    }


def measure_drag(target, browser, rounds=1, seconds=3.0):
    """Frames per second while the scale is dragged, and the pointer driver's floor.

    Three ways, ``rounds`` times, alternating: driven in the page (one input event per
    animation frame: what the page can paint), with Playwright's pointer (one move a stop,
    so that a frame painted a move is the most there is to paint), and the same pointer
    over a bare page with only a range input as wide and with as many stops: the rate the
    driver delivers moves at, which bounds the second. Script runs meanwhile: none
    expected (a drag runs nothing until release).

    Returns
    -------
    list of {in_page, pointer, floor} per round: ``in_page`` from :data:`_DRAG_IN_PAGE`,
    ``pointer`` and ``floor`` from :func:`pointer_drag` (``pointer`` with ``runs``, those
    before release)
    """
    page = target.page
    thumb = page.locator(f".st-key-{target.slider_key} input[type=range]")
    thumb.scroll_into_view_if_needed()
    bare = browser.new_context(viewport=page.viewport_size).new_page()
    bare.set_content(
        _BARE_RANGE.format(max=thumb.get_attribute("max"), width=thumb.bounding_box()["width"])
    )
    bare_thumb = bare.locator("input[type=range]")
    out = []
    for i in range(rounds):
        forward = i % 2 == 0  # back and forth: each release lands on a new stop, so it runs
        row = {}
        for part in ("in_page", "pointer", "floor") if forward else ("floor", "pointer", "in_page"):
            if part == "in_page":
                page.bring_to_front()
                thumb.scroll_into_view_if_needed()
                row[part] = page.evaluate(_DRAG_IN_PAGE, seconds * 1000)
            elif part == "floor":
                row[part] = pointer_drag(bare, bare_thumb, forward)
            else:
                # runs counted, and settled waits for the release's, from here
                page.evaluate("window.__bench.start = window.__bench.log.length")
                row[part] = pointer_drag(page, thumb, forward)
                if page.evaluate(_SENT):
                    target.settle()
        out.append(row)
    bare.context.close()
    return out


def print_drag(n, drags):
    """The drag's figures: each round's, and with several rounds the median and range."""
    columns = (
        ("driven in the page", lambda d: d["in_page"]["fps"]),
        ("under the pointer", lambda d: d["pointer"]["fps"]),
        ("pointer moves/s given", lambda d: d["pointer"]["moves_s"]),
        ("driver's floor", lambda d: d["floor"]["inputs_s"]),
    )
    print(
        f"dragging the scale, {n} tokens, painted frames/s (driven in the page: one input "
        "event a frame; under Playwright's pointer: one move a stop; the driver's floor: input "
        "events/s of the same pointer drag over a bare range input):"
    )
    print("  " + "  ".join(f"{name:>21}" for name, _ in columns) + "  runs")
    for d in drags:
        runs = d["in_page"]["runs"] + d["pointer"]["runs"]
        print("  " + "  ".join(f"{get(d):21.0f}" for _, get in columns) + f"  {runs:4d}")
    if len(drags) > 1:
        print(
            "  median / range: "
            + "; ".join(
                f"{name} {np.median([get(d) for d in drags]):.0f} "
                f"({min(get(d) for d in drags):.0f}-{max(get(d) for d in drags):.0f})"
                for name, get in columns
            )
        )
    last = drags[-1]
    print(
        f"  median {last['in_page']['paint_ms']:.1f} ms to paint a frame in the page (the last "
        f"round); under the pointer {last['pointer']['frames']} frames for "
        f"{last['pointer']['moves']} moves"
    )


def drag_verdicts(drags):
    """Each drag figure (the median of the rounds) against the target, the driver's floor."""
    in_page = float(np.median([d["in_page"]["fps"] for d in drags]))
    pointer = float(np.median([d["pointer"]["fps"] for d in drags]))
    floor = float(np.median([d["floor"]["inputs_s"] for d in drags]))
    for label, fps in (("driven in the page", in_page), ("under the pointer", pointer)):
        verdict = "meets" if fps >= TARGET_FPS else "misses"
        print(f"dragging, {label}: {fps:.0f} frames/s {verdict} the target ≥ {TARGET_FPS}")
    print(
        f"dragging, the pointer driver's floor (a bare range input): {floor:.0f} events/s; "
        f"under the pointer the page paints {pointer / floor:.2f} of it"
    )


def frames_sizes():
    """Bytes of the scale's frames (sent once per text or settings change) at a few sizes.

    From the engine and the packer the page uses, with d_model 16 and one head (the
    defaults).
    """
    import engine
    from app.live import protocol
    from app.state import controls

    sizes = {}
    for n in (43, 64, 128):
        tokens = [f"w{i}" for i in range(n)]
        run = engine.run_toy(tokens, 16, 1, 0)
        sweep = engine.attention_over_scales(
            run.attention.q[0], run.attention.k[0], run.attention.v[0],
            np.array(controls.scale_options(16, 1)),
        )  # fmt: skip
        _, payload = protocol.sweep_frames(protocol.SOURCE, sweep)
        sizes[n] = len(payload) if payload is not None else None
    return sizes


#: A first load is over when the script has run and every chart has drawn, whether the
#: app draws them with st.plotly_chart (an older checkout) or with the chart component;
#: since 3 December 2026 the component draws a chart far from the window (over a window's
#: height beyond it) only when it comes near (``data-away``): the first screen, then.
_LOADED = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const charts = document.querySelectorAll('[data-testid="stPlotlyChart"], .ae-chart');
    return app?.dataset.testScriptState === 'notRunning' && charts.length > 0
        && [...charts].every(c => c.querySelector('.main-svg') || c.dataset.away)
        && !document.querySelector('.ae-chart[data-pending]');
}"""


def first_loads(browser, urls, loads):
    """Median ms from navigation to every chart drawn, for each URL, loads alternating."""
    times = {url: [] for url in urls}
    for i in range(loads):
        for url in urls if i % 2 == 0 else urls[::-1]:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            page.goto(url)
            page.wait_for_function(_LOADED, polling=50, timeout=300_000)
            times[url].append(page.evaluate("performance.now()"))
            context.close()
    return {url: float(np.median(ms)) for url, ms in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30, help="timed steps per app (default)")
    parser.add_argument(
        "--long-steps", type=int, default=15, help="timed steps at 512 tokens (0: skip)"
    )
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument(
        "--page-bytes-only",
        action="store_true",
        help="count bytes in the page only, without Playwright's frame events (less overhead)",
    )
    parser.add_argument(
        "--no-profile", action="store_true", help="skip timing the server's and client's parts"
    )
    parser.add_argument(
        "--loads", type=int, default=0, help="first loads of /attention to time (0: skip)"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another checkout of the app (e.g. `git archive` of an older commit) whose "
        "first load of /attention is timed beside this one's",
    )
    parser.add_argument(
        "--drags", type=int, default=1, help="rounds of the drag's three measurements"
    )
    parser.add_argument(
        "--drag-only", action="store_true", help="measure only the drag (about 30 s a round)"
    )
    args = parser.parse_args()
    if args.drag_only:
        drag_only(args.drags)
        return
    profile = not args.no_profile
    rows, charts, client = [], {}, {}
    load_before = os.getloadavg()

    with (
        serve_app(ROOT / "app" / "main.py") as (app_url, _),
        # from the root too, so both servers read the project's .streamlit/config.toml
        serve_app(ROOT / "benchmarks" / "trivial_app.py", cwd=ROOT) as (trivial_url, _),
        chromium() as browser,
    ):
        pages = []
        for _ in range(2):
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.add_init_script(INSTRUMENT)
            context.add_init_script(FRAME_LOG)
            pages.append(context.new_page())
        app = Target("attention page", pages[0], "att_scale")
        trivial = Target("trivial app (1 slider, 2×2 heatmap)", pages[1], "value")
        # The random model, as before real weights: MiniLM reads at most 510 tokens, and
        # the 512-token phase needs a layer that runs on all of them.
        app.open(app_url + "/attention?weights=random", count_frames=not args.page_bytes_only)
        trivial.open(trivial_url, count_frames=not args.page_bytes_only)
        phase, n, charts["default"], client["default"] = measure_phase(
            app, trivial, args.steps, args.warmup, browser, profile
        )
        rows += phase
        step_messages = {"default passage": list(app.messages)}  # before the drag adds more
        drags = measure_drag(app, browser, args.drags)
        loads = {}
        if args.loads:
            urls = {"this checkout": app_url + "/attention"}
            with contextlib.ExitStack() as stack:
                if args.baseline:
                    # the baseline imports its own app and engine, not the installed ones
                    previous = os.environ.get("PYTHONPATH")
                    os.environ["PYTHONPATH"] = str(args.baseline.resolve())
                    url, _ = stack.enter_context(serve_app(args.baseline / "app" / "main.py"))
                    if previous is None:
                        del os.environ["PYTHONPATH"]
                    else:
                        os.environ["PYTHONPATH"] = previous
                    urls["baseline"] = url + "/attention"
                medians = first_loads(browser, list(urls.values()), args.loads)
                loads = {name: medians[url] for name, url in urls.items()}

        if args.long_steps > 0:
            box = app.page.locator(".st-key-text textarea")
            box.fill(LONG_TEXT)
            app.page.evaluate("window.__bench.arm()")
            box.press("Control+Enter")
            app.settle()
            app.key = "ArrowLeft"  # back down from where the first phase left the scale
            phase, n_long, charts["long"], client["long"] = measure_phase(
                app, trivial, args.long_steps, args.warmup, browser, profile
            )
            phase[0]["case"] = "trivial app (same phase)"
            rows += phase

    print()
    print(
        f"load average (1 min) before / after: {load_before[0]:.1f} / {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} CPUs"
    )
    print_table(rows)
    print()
    for label, messages in step_messages.items():
        if messages:
            print_breakdown(label, messages)
    print()
    for label, counts in charts.items():
        for names, count in counts.most_common():
            print(f"charts repainted per step, {label}: {names} ({count} steps)")
    if profile:
        server = {f"{n} tokens": profile_server()}
        drawing = {f"{n} tokens": client["default"]}
        if args.long_steps > 0:
            server[f"{n_long} tokens"] = profile_server(LONG_TEXT)
            drawing[f"{n_long} tokens"] = client["long"]
        print()
        print_profiles(server, drawing)
    print()
    print_drag(n, drags)
    sizes = frames_sizes()
    print(
        "the scale's frames, sent once per text or settings change: "
        + ", ".join(
            f"{n_tokens} tokens {size / 1024:.0f} KB" if size else f"{n_tokens} tokens: none"
            for n_tokens, size in sizes.items()
        )
    )
    for name, ms in loads.items():
        print(f"first load of /attention, {name}: median {ms:.0f} ms ({args.loads} loads)")
    print()
    verdicts = [
        ("default passage, step ratio", rows[1]["ratio"], TARGET_RATIO),
        ("512 tokens, step ratio", rows[3]["ratio"] if len(rows) > 3 else None, TARGET_RATIO_LONG),
        ("default passage, KB per step", rows[1]["kb"], TARGET_STEP_KB),
        ("128 tokens, KB of frames", (sizes[128] or 0) / 1024, TARGET_FRAMES_KB),
    ]
    for label, value, target in verdicts:
        if value is not None:
            verdict = "meets" if value <= target else "misses"
            print(f"{label}: {value:.2f} {verdict} the target ≤ {target}")
    drag_verdicts(drags)


def drag_only(rounds):
    """``--drag-only``: the app alone, its drag measured ``rounds`` times, and the verdicts."""
    load_before = os.getloadavg()
    with serve_app(ROOT / "app" / "main.py") as (app_url, _), chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_init_script(INSTRUMENT)
        context.add_init_script(FRAME_LOG)
        app = Target("attention page", context.new_page(), "att_scale")
        app.open(app_url + "/attention?weights=random", count_frames=False)
        n = app.tokens()
        drags = measure_drag(app, browser, rounds)
    print(
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load average (1 min) before / "
        f"after: {load_before[0]:.1f} / {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print_drag(n, drags)
    print()
    drag_verdicts(drags)


if __name__ == "__main__":
    main()
