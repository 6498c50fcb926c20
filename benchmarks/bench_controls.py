"""Latency of every control on /attention and /pretrained, against a trivial app's slider step.

Both apps are served at once (``app/main.py`` and ``benchmarks/trivial_app.py``) and
driven by one headless Chromium, each action of the real app alternating with a keyboard
step of the trivial app's slider, so both see the same machine load. The actions, on
/attention with the default passage and weights: a head switch and a layer switch (an
arrow key on the sidebar's slider, to heads and layers not shown before while there are
some, then back), the "Mask future tokens" toggle (space on it, on and off: from the
third toggle on, states shown before), a new sentence (the text box filled, then
Ctrl+Enter), a keyboard step of the scale; on /pretrained the head view's head and layer
and a new sentence. Then the first load of /attention with a text never seen before,
alternating with the trivial app's first load, timed twice: until the script has run and
every chart in the window is drawn (the first screen), and until every chart near the
window is drawn too (within a window's height of it; a chart further away is drawn when
it comes near).

An action is timed in the page, with ``benchmarks/bench_slider.py``'s instrument: from the
key press (a capturing keydown listener) to the frame after the last change of any chart
(its DOM node, data, images, preview canvas, paths, title, table cells), once the script
run is over and the socket has been quiet for 400 ms: "every chart has drawn". For the
scale the figure is the frame after the *first* change of the last chart to change: when
every chart it drives shows the new stop (the exact figures follow from the same frames).
The head switches (an arrow key on the live head control, or on the sidebar's slider), the
layer switch and the mask toggle are timed both ways: until every chart has drawn and the
run is over, and ("shown") until every chart shows the new head, layer or mask.

The breakdown of each action (medians): when the widget's value was sent, when the first
reply came, when the script run was over (the ``script_finished`` message: the server's
script time plus its sending), the bytes received, and plotly.js's ``Plotly.react`` time
per chart (the chart component's calls, wrapped in the page), so what the browser waits
on is: the server (sent → finished) or drawing (finished → drawn, and the reacts).

Last, the bytes a text change to 128 tokens receives (``--payload-tokens``; issue #24:
at most 4 MB), its own run and the slider's after it.

Run: ``python benchmarks/bench_controls.py [--runs 5] [--loads 3]``; ``--runs 0`` times the
first loads alone (and the payload).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_slider import _LOADED, INSTRUMENT, LONG_TEXT
from harness import chromium, serve_app

from app.state import controls
from engine.tokenize import wordpiece_tokenizer

ROOT = Path(__file__).resolve().parents[1]
#: Targets (issue #24), as ratios to the trivial app's step (its first load for a load).
TARGETS = {"head": 1.0, "layer": 1.0, "mask": 1.0, "sentence": 2.0, "scale": 0.8, "load": 1.2}
#: The most a text change may send at 128 tokens (issue #24), KB.
TARGET_PAYLOAD_KB = 4 * 1024
#: The sidebar's "Mask future tokens": the browser's own switch (chart/control.js).
MASK_INPUT = ".st-key-causal_control input"

#: Wraps the chart component's ``Plotly.react`` (plotly.js's own object, once loaded) to
#: log each call's duration and chart key as ``['react', start, ms, key]``.
WRAP_REACT = """() => {
    const P = window.Plotly;
    if (!P || P.__benchWrapped) return Boolean(P);
    const react = P.react;
    P.react = function (div, ...rest) {
        const t = performance.now();
        const holder = div.closest('[class*="st-key-"]');
        const named = holder && [...holder.classList].find(c => c.startsWith('st-key-'));
        const key = named ? named.slice(7) : '?';
        const done = () => window.__bench.log.push(['react', t, performance.now() - t, key]);
        const out = react.call(this, div, ...rest);
        Promise.resolve(out).then(done, done);
        return out;
    };
    P.__benchWrapped = true;
    return true;
}"""


class Browser:
    """One app in one instrumented page."""

    def __init__(self, browser, mbit=None):
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.context.add_init_script(INSTRUMENT)
        self.page = self.context.new_page()
        if mbit:
            throttle(self.page, mbit)

    def open(self, url):
        """Load ``url``, wait until it has settled, and wrap its plotly.js's react."""
        self.page.goto(url)
        self.settle(timeout=300)
        self.page.wait_for_function(WRAP_REACT, polling=100, timeout=120_000)

    def settle(self, quiet_ms=400, timeout=120):
        """Wait until a run since the last arm() is over, charts drawn, the socket quiet."""
        self.page.evaluate("([q, t]) => window.__bench.settled(q, t)", [quiet_ms, timeout * 1000])

    def act(self, perform, first_shown=False):
        """Arm the timer, ``perform(page)`` (a key press), wait for the page to settle.

        Returns a dict of ms from the key press (``ms``: every chart drawn, or with
        ``first_shown`` every changed chart showing its new state), and the breakdown.
        """
        self.page.bring_to_front()
        self.page.evaluate("window.__bench.arm()")
        perform(self.page)
        self.settle()
        result = self.page.evaluate("window.__bench.result()")
        if not result["changed"]:
            raise RuntimeError(f"nothing changed after {perform.__name__}")
        t0, events = result["t0"], result["events"]
        after = [e for e in events if e[1] >= t0]
        sends = [e[1] for e in after if e[0] == "send"]
        recvs = [e[1] for e in after if e[0] == "recv"]
        finished = [e[1] for e in after if e[0] == "finished"]
        reacts = defaultdict(float)
        for e in after:
            if e[0] == "react":
                reacts[e[3]] += e[2]
        end = result["shown"] if first_shown else result["t1"]
        # Runs after the action's own draw nothing: "drawn" stops at the action's runs, "ms"
        # after all.
        asks = [s for s in sends if finished and s > finished[0]]
        own = [f for f in finished if not asks or f < asks[0]]
        drawn = max(end, own[-1]) if own and not first_shown else end
        if finished and not first_shown:
            end = max(end, finished[-1])
        return {
            "ms": end - t0,
            "drawn": drawn - t0,
            "sent": sends[0] - t0 if sends else float("nan"),
            "first": recvs[0] - t0 if recvs else float("nan"),
            "finished": own[-1] - t0 if own else float("nan"),  # the action's own runs
            "kb": sum(e[2] for e in after if e[0] == "recv") / 1024,
            "react": dict(reacts),
            "changed": result["changed"],
        }


def throttle(page, mbit):
    """Chromium's network emulation on ``page``: ``mbit`` Mbit/s each way (WebSocket too)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    rate = mbit * 1_000_000 / 8  # bytes per second
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 0, "downloadThroughput": rate, "uploadThroughput": rate},
    )


def key_on(selector, key):
    """An action: focus ``selector`` and press ``key``."""

    def perform(page):
        page.locator(selector).first.focus()
        page.keyboard.press(key)

    perform.__name__ = f"{key} on {selector}"
    return perform


def thumb(widget_key):
    return f".st-key-{widget_key} input[type=range]"


def new_sentence(counter):
    """An action: a sentence never typed before into the sidebar's box, then Ctrl+Enter."""

    def perform(page):
        counter[0] += 1
        box = page.locator(".st-key-text textarea")
        box.fill(f"{controls.DEFAULT_TEXT} Then it rained on day {counter[0]}.")
        box.press("Control+Enter")

    return perform


#: The first screen is drawn: the script has run and every chart in the window is drawn
#: (then the time in the page, else false).
_FIRST_SCREEN = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"], .ae-chart')];
    const seen = charts.filter(c => {
        const box = c.getBoundingClientRect();
        return c.checkVisibility() && box.bottom > 0 && box.top < window.innerHeight;
    });
    return app?.dataset.testScriptState === 'notRunning' && seen.length > 0
        && seen.every(c => c.querySelector('.main-svg') && !c.dataset.pending)
        && performance.now();
}"""


def text_of(tokens, weights=None):
    """A text of at most ``tokens`` tokens of the page's model, and its count.

    As the model reads it (MiniLM's WordPiece with [CLS] and [SEP], SmolLM2's BPE); as many
    as whole words allow.
    """
    tokenizer = (
        wordpiece_tokenizer() if weights in (None, "minilm", "random") else _tokenizer(weights)
    )

    def count(text):
        return len(tokenizer.encode(text).ids)

    text = ""
    for word in f"{LONG_TEXT} {LONG_TEXT} {LONG_TEXT} {LONG_TEXT}".split():
        if count(f"{text} {word}".strip()) > tokens:
            break
        text = f"{text} {word}".strip()
    return text, count(text)


def _tokenizer(weights):
    from engine import checkpoint

    return checkpoint.load(weights).tokenizer


def payload(app, tokens, weights=None):
    """KB a text change to ``tokens`` tokens receives on /attention, and the count reached.

    Its own run and the slider's after it (the scale's frames of every stop).
    """
    text, count = text_of(tokens, weights)

    def perform(page):
        box = page.locator(".st-key-text textarea")
        box.fill(text)
        box.press("Control+Enter")

    return app.act(perform)["kb"], count


def first_loads(browser, app_url, trivial_url, loads, weights=""):
    """Median ms from navigation until the first screen is drawn, and every chart near it.

    /attention with a new text, and the trivial app (whose one chart is its first screen):
    ``{app: {"screen": ms, "near": ms}}``.
    """
    times = {name: {"screen": [], "near": []} for name in ("attention", "trivial")}
    for i in range(loads):
        text = f"{controls.DEFAULT_TEXT} The bill came {i} minutes later."
        urls = {
            "attention": f"{app_url}/attention?text={quote(text)}{weights}",
            "trivial": trivial_url,
        }
        for name in ("attention", "trivial") if i % 2 == 0 else ("trivial", "attention"):
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            page.goto(urls[name])
            # the time the page saw it: a call after would wait for the next chart's drawing
            screen = page.wait_for_function(_FIRST_SCREEN, polling=50, timeout=300_000)
            times[name]["screen"].append(screen.json_value())
            page.wait_for_function(_LOADED, polling=50, timeout=300_000)
            times[name]["near"].append(page.evaluate("performance.now()"))
            context.close()
    return {
        name: {line: statistics.median(ms) for line, ms in lines.items()}
        for name, lines in times.items()
    }


def measure(app, trivial, actions, runs, results):
    """Each action ``runs`` times, each followed by a trivial step; into ``results``, by name."""
    direction = {"ArrowRight": "ArrowLeft", "ArrowLeft": "ArrowRight"}
    trivial_key = ["ArrowRight"]
    for name, perform, first_shown in actions:
        app.act(perform, first_shown)  # warm-up (and back where it started, for arrows)
        for _ in range(runs):
            results.setdefault(name, []).append(app.act(perform, first_shown))
            step = key_on(thumb("value"), trivial_key[0])
            results.setdefault("trivial", []).append(trivial.act(step))
            trivial_key[0] = direction[trivial_key[0]]
    return results


def print_table(results, loads, load_avg):
    print(f"\nload average (1, 5, 15 min) at start: {load_avg}, at end: {os.getloadavg()}")
    if results:
        print_actions(results)
    for line, until in (("screen", "the first screen drawn"), ("near", "every chart near it")):
        if not loads:
            break
        attention, trivial = loads["attention"][line], loads["trivial"][line]
        print(
            f"first load until {until}, /attention with a new text: {attention:.0f} ms; "
            f"trivial app: {trivial:.0f} ms; ratio {attention / trivial:.2f} "
            f"(target {TARGETS['load']})"
        )


def print_actions(results):
    base = statistics.median(r["ms"] for r in results["trivial"])
    header = (
        f"{'action':<28} {'n':>3} {'ms':>6} {'ratio':>6} {'drawn':>6} {'ratio':>6} "
        f"{'target':>6} {'sent':>5} "
        f"{'1st msg':>7} {'finished':>8} {'KB':>8} {'react ms':>8}"
    )
    print(header)
    print("-" * len(header))
    for name, rows in results.items():
        ms = statistics.median(r["ms"] for r in rows)
        react = statistics.median(sum(r["react"].values()) for r in rows)
        target = TARGETS.get(name.split(":")[-1].strip().split()[0], float("nan"))
        drawn = statistics.median(r.get("drawn", r["ms"]) for r in rows)
        print(
            f"{name:<28} {len(rows):>3} {ms:>6.0f} {ms / base:>6.2f} {drawn:>6.0f} "
            f"{drawn / base:>6.2f} {target:>6.1f} "
            f"{statistics.median(r['sent'] for r in rows):>5.0f} "
            f"{statistics.median(r['first'] for r in rows):>7.0f} "
            f"{statistics.median(r['finished'] for r in rows):>8.0f} "
            f"{statistics.median(r['kb'] for r in rows):>8.1f} {react:>8.0f}"
        )
    print(
        "ms: median from the key press until the run is over and every chart has drawn (the "
        "scale: until every chart it drives shows the new stop), and the scale's frames of "
        "every stop that the slider asks for after the run have arrived; drawn: the same "
        "without that run, which draws nothing; ratio: to the trivial app's "
        "step in the same run. sent / 1st msg / finished: ms until the widget's value was "
        "sent, the first reply came, the action's run was over. KB: WebSocket bytes received. "
        "react ms: plotly.js's Plotly.react, all charts summed."
    )
    print("\nPlotly.react per chart, median ms over the runs that drew it:")
    for name, rows in results.items():
        per = defaultdict(list)
        for r in rows:
            for key, ms in r["react"].items():
                per[key].append(ms)
        if per:
            parts = ", ".join(
                f"{key} {statistics.median(v):.0f}"
                for key, v in sorted(per.items(), key=lambda kv: -statistics.median(kv[1]))
            )
            print(f"  {name}: {parts}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per action (0: none)")
    parser.add_argument("--loads", type=int, default=3, help="first loads of each (0: skip)")
    parser.add_argument("--no-pretrained", action="store_true", help="skip /pretrained")
    parser.add_argument(
        "--mbit", type=float, help="both apps over a network of this many Mbit/s (a classroom's)"
    )
    parser.add_argument(
        "--at", help="scroll /attention to the chart with this key first (default: the top)"
    )
    parser.add_argument(
        "--payload-tokens",
        type=int,
        default=128,
        help="a text change to this many tokens: the bytes it receives (0: skip)",
    )
    parser.add_argument(
        "--weights", help="/attention on these weights (?weights=: minilm, smollm2, random)"
    )
    args = parser.parse_args()
    weights = f"&weights={args.weights}" if args.weights else ""
    load_avg = os.getloadavg()
    counter = [0]
    with (
        serve_app(ROOT / "app" / "main.py") as (app_url, _),
        serve_app(ROOT / "benchmarks" / "trivial_app.py", cwd=ROOT) as (trivial_url, _),
        chromium() as browser,
    ):
        app, trivial = Browser(browser, args.mbit), Browser(browser, args.mbit)
        trivial.page.goto(trivial_url)
        trivial.settle(timeout=300)
        app.open(app_url + "/attention?" + weights[1:])
        if args.at:  # a reader looking at that chart: the page scrolled to it
            app.page.locator(f".st-key-{args.at}").scroll_into_view_if_needed()
            app.settle()

        def walk(widget, key):  # one way to its end (new heads or layers), then back
            keys[widget] = key

            def perform(page):
                thumb_input = page.locator(thumb(widget)).first
                end = "max" if keys[widget] == "ArrowRight" else "min"
                if thumb_input.input_value() == thumb_input.get_attribute(end):
                    keys[widget] = "ArrowLeft" if end == "max" else "ArrowRight"
                key_on(thumb(widget), keys[widget])(page)

            return perform

        keys = {}
        live_head, sidebar_head = walk("att_head", "ArrowRight"), walk("head_control", "ArrowRight")
        layer = walk("layer_control", "ArrowLeft")
        actions = [
            ("/attention: head switch", sidebar_head, False),
            ("/attention: head switch, shown", sidebar_head, True),
            ("/attention: head switch, live", live_head, False),
            ("/attention: head switch, live, shown", live_head, True),
            ("/attention: layer switch", layer, False),
            ("/attention: layer switch, shown", layer, True),
            ("/attention: mask toggle", key_on(MASK_INPUT, "Space"), False),
            ("/attention: mask toggle, shown", key_on(MASK_INPUT, "Space"), True),
            ("/attention: sentence (Ctrl+Enter)", new_sentence(counter), False),
            ("/attention: scale step, every chart", key_on(thumb("att_scale"), "ArrowRight"), True),
        ]
        if not app.page.locator(MASK_INPUT).count():  # a decoder's mask is its own: no toggle
            actions = [action for action in actions if "mask" not in action[0]]
        results = {}
        if args.runs:
            measure(app, trivial, actions, args.runs, results)
        if args.runs and not args.no_pretrained:
            app.open(app_url + "/pretrained")
            actions = [
                ("/pretrained: head switch", walk("pretrained_head", "ArrowRight"), False),
                ("/pretrained: layer switch", walk("pretrained_layer", "ArrowLeft"), False),
                ("/pretrained: sentence (Ctrl+Enter)", new_sentence(counter), False),
            ]
            measure(app, trivial, actions, args.runs, results)
        sent = None
        if args.payload_tokens:  # last: the long text stays in the session, every page's
            app.open(app_url + "/attention?" + weights[1:])
            sent = payload(app, args.payload_tokens, args.weights)
        loads = (
            first_loads(browser, app_url, trivial_url, args.loads, weights) if args.loads else {}
        )
    if args.mbit:
        print(f"network: {args.mbit:g} Mbit/s each way (Chromium's emulation), first loads not")
    if args.weights:
        print(f"/attention on weights={args.weights}")
    if args.at:
        print(f"/attention scrolled to {args.at} before its actions")
    print_table(results, loads, load_avg)
    if sent:
        kb, count = sent
        verdict = "meets" if kb <= TARGET_PAYLOAD_KB else "misses"
        print(
            f"a text change to {count} tokens received {kb:.0f} KB: {verdict} the target "
            f"≤ {TARGET_PAYLOAD_KB} KB"
        )


if __name__ == "__main__":
    main()
