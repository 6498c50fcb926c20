"""Time /pretrained in the browser: new text typed → every chart on the page drawn.

Serves the app, opens /pretrained in headless Chromium, and types a new text into the
sidebar, alternating a 45-token text (the default passage) and a 256-token one; each
round changes the last word, so every text is new to the server's caches. For each
round it records when the server finished the run, when the charts in the window (the
first screen, 1400×1000) were drawn for the last time (a MutationObserver on their
plots, the charts' own ``data-`` marks left out), and when every chart was drawn, and
prints the medians, then how long plotly.js takes to draw each chart of the last page on
its own::

    python benchmarks/bench_pretrained.py [--rounds 5] [--model smollm2] [--page attention]
                                          [--floor]

``--model smollm2`` opens the page on the packaged decoder (``/pretrained?model=smollm2``,
or ``/attention?weights=smollm2`` with ``--page attention``), and prints beside each
length the engine's pass over a text of that length in this process
(:func:`engine.bert.run`): the median of three before the server starts, and the median of
one pass in every round, just before the page's new text, under the same load as the
page; the page's time is given as a multiple of the second.

``--floor`` also serves ``benchmarks/trivial_text_app.py`` (one text box, one 2×2
heatmap) and types a new text into it after each of the page's, in the same browser: what
any Streamlit page pays for a new text, model or no model.
"""

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

# The harness is in the tests' support folder; run as a file, a benchmark puts it on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from harness import RUN_COUNTER, SETTLED_AFTER, chromium, serve_app

from engine import bert, checkpoint

TRIVIAL = Path(__file__).resolve().parent / "trivial_text_app.py"

DEFAULT_TEXT = (
    "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food. In the end, they just gave me two slices of bread. Their ambiance was just as "
    "good as the food and service."
)
#: One-token words that end each round's text, so no text repeats.
LAST_WORDS = ("service", "staff", "music", "wine", "coffee", "tea", "water", "light", "price")

#: Draw one chart again, alone, in a new element: plotly.js's own time for it.
DRAW_TIME = """async (key) => {
    const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    const div = document.createElement('div');
    div.style.width = gd.offsetWidth + 'px';
    document.body.appendChild(div);
    const start = performance.now();
    await Plotly.newPlot(div, gd.data, gd.layout);
    const ms = performance.now() - start;
    Plotly.purge(div);
    div.remove();
    return ms;
}"""
CHART_KEYS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(
    p => p.closest("[class*='st-key-']").className.match(/st-key-(\\S+)/)[1])"""


def texts(n_tokens, word, model):
    """A text of ``n_tokens`` tokens of ``model`` (special tokens included) ending in ``word``."""
    specials = len(model.special_tokens)
    body = DEFAULT_TEXT.rsplit(" ", 1)[0]
    text = f"{body} {word}."
    while len(model.tokenizer.encode(text).ids) < n_tokens:
        text = f"{body} {text}"
    ids = model.tokenizer.encode(text).ids
    ids = ids[1:-1] if specials == 2 else ids
    for extra in range(4):  # a cut mid-word may tokenize into one piece more or less
        cut = model.tokenizer.decode(ids[-(n_tokens - specials - extra) :]).lstrip()
        if len(model.tokenizer.encode(cut).ids) == n_tokens:
            return cut
    raise AssertionError(f"no text of {n_tokens} tokens ending in {word}")


#: Before a new text: note, for every plotly.js chart, when its drawing last changed.
WATCH_CHARTS = """() => {
    window.__aeChanged = new Map();
    window.__aeObserver?.disconnect();
    window.__aeObserver = new MutationObserver(records => {
        const now = performance.now();
        for (const record of records) {
            if (record.attributeName?.startsWith('data-')) continue;  // the chart's marks
            const node = record.target.nodeType === 1 ? record.target : record.target.parentElement;
            const plot = node?.closest('.js-plotly-plot');
            if (plot) window.__aeChanged.set(plot, now);
        }
    });
    window.__aeObserver.observe(document.body,
        {subtree: true, childList: true, attributes: true, characterData: true});
}"""

#: Once the page has settled: when the last chart in the window (the first screen) was
#: last drawn, or null when one of them was not drawn again.
FIRST_SCREEN_DRAWN = """() => {
    let last = null;
    for (const plot of document.querySelectorAll('.js-plotly-plot')) {
        const box = plot.getBoundingClientRect();
        if (!plot.checkVisibility() || box.bottom <= 0 || box.top >= window.innerHeight) continue;
        const at = window.__aeChanged.get(plot);
        if (at === undefined) return null;
        last = Math.max(last ?? 0, at);
    }
    window.__aeObserver.disconnect();
    return last;
}"""


def type_text(page, text):
    """Type ``text`` into the sidebar's text box.

    Returns ms from the keypress to the run's end, to every chart drawn, to every chart in
    the window (the first screen) drawn for the last time (None if one was not redrawn),
    and the runs it took.
    """
    before = page.evaluate("window.__runs.finished")
    box = page.locator(".st-key-text textarea")
    box.fill(text)
    page.evaluate(WATCH_CHARTS)
    start = page.evaluate("performance.now()")
    box.press("Control+Enter")
    page.wait_for_function(SETTLED_AFTER, arg=before, polling="raf", timeout=120_000)
    end = page.evaluate("performance.now()")
    finished = page.evaluate("window.__runs.finishedAt")
    runs = page.evaluate("window.__runs.finished") - before
    screen = page.evaluate(FIRST_SCREEN_DRAWN)
    return finished - start, end - start, runs, None if screen is None else screen - start


#: The trivial app drawn: its run over, its one chart showing the new text's word count.
TRIVIAL_DRAWN = """([before, words]) => {
    const app = document.querySelector('[data-testid="stApp"]');
    const plot = document.querySelector('.js-plotly-plot');
    return window.__runs !== undefined && window.__runs.finished > before
        && app && app.dataset.testScriptState === 'notRunning'
        && plot && plot.layout && plot.layout.title.text.includes(`>${words} words<`);
}"""


def type_trivial(page, text):
    """:func:`type_text` on ``trivial_text_app.py``, which draws with st.plotly_chart."""
    page.wait_for_selector(".st-key-text textarea", timeout=180_000)
    before = page.evaluate("window.__runs.finished")
    box = page.locator(".st-key-text textarea")
    box.fill(text)
    start = page.evaluate("performance.now()")
    box.press("Control+Enter")
    words = len(text.split())
    page.wait_for_function(TRIVIAL_DRAWN, arg=[before, words], polling="raf", timeout=120_000)
    end = page.evaluate("new Promise(r => requestAnimationFrame(() => r(performance.now())))")
    return page.evaluate("window.__runs.finishedAt") - start, end - start, 1


def open_warm(browser, url, model):
    """A page of ``browser`` on ``url``, the model loaded and a first new text drawn.

    Returns
    -------
    context, page : the Playwright context (its run counter installed) and page
    """
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(RUN_COUNTER)
    page = context.new_page()
    page.goto(url)
    page.wait_for_function(SETTLED_AFTER, arg=0, polling=100, timeout=180_000)
    type_text(page, texts(45, "food", model))  # warm: the model loaded, the first run done
    return context, page


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--model", choices=("minilm", "smollm2"), default="minilm")
    parser.add_argument("--page", choices=("pretrained", "attention"), default="pretrained")
    parser.add_argument("--floor", action="store_true", help="time a trivial text app too")
    args = parser.parse_args()
    model = checkpoint.load(args.model)
    cases = {45: [], 256: []}
    path = f"/{args.page}"
    if args.model != "minilm":
        path += f"?{'model' if args.page == 'pretrained' else 'weights'}={args.model}"
    passes = {}
    for n in cases:  # the engine's pass alone, for the ratio
        text = texts(n, "food", model)
        timings = []
        for _ in range(3):
            start = time.perf_counter()
            bert.run(model, text)
            timings.append(time.perf_counter() - start)
        passes[n] = statistics.median(timings) * 1000
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    floor = []
    with contextlib.ExitStack() as stack:
        url, _ = stack.enter_context(serve_app("app/main.py"))
        context, page = open_warm(stack.enter_context(chromium()), url + path, model)
        trivial = None
        if args.floor:
            trivial_url, _ = stack.enter_context(serve_app(TRIVIAL, cwd=TRIVIAL.parent.parent))
            trivial = context.new_page()
            trivial.goto(trivial_url)
            type_trivial(trivial, "A first text.")
        beside = {n: [] for n in cases}
        for round_ in range(args.rounds):
            for n in cases:
                word = LAST_WORDS[round_ % len(LAST_WORDS)]
                start = time.perf_counter()  # the pass under the page's load, on another text
                bert.run(model, texts(n, LAST_WORDS[-1 - round_ % len(LAST_WORDS)], model))
                beside[n].append((time.perf_counter() - start) * 1000)
                time.sleep(0.3)
                page.bring_to_front()
                cases[n].append(type_text(page, texts(n, word, model)))
                time.sleep(0.5)
                if trivial is not None:
                    trivial.bring_to_front()
                    floor.append(type_trivial(trivial, f"{texts(45, word, model)} {n}"))
                    time.sleep(0.5)
        print(f"\n{path}")
        heads = ("tokens", "run done ms", "first screen", "all drawn ms", "runs")
        heads += ("pass before", "pass beside", "screen/pass", "drawn/pass")
        widths = (6, 12, 12, 13, 5, 12, 12, 11, 10)
        print(" ".join(f"{h:>{w}}" for h, w in zip(heads, widths, strict=True)))
        for n, timings in cases.items():
            run_ms = statistics.median(t[0] for t in timings)
            screens = [t[3] for t in timings if t[3] is not None]
            screen_ms = statistics.median(screens) if screens else float("nan")
            drawn_ms = statistics.median(t[1] for t in timings)
            runs = max(t[2] for t in timings)
            pass_ms = statistics.median(beside[n])
            row = f"{n:>6} {run_ms:>12.0f} {screen_ms:>12.0f} {drawn_ms:>13.0f} {runs:>5}"
            row += f" {passes[n]:>12.0f} {pass_ms:>12.0f} {screen_ms / pass_ms:>11.2f}"
            print(f"{row} {drawn_ms / pass_ms:>10.2f}")
        if floor:
            run_ms = statistics.median(t[0] for t in floor)
            drawn_ms = statistics.median(t[1] for t in floor)
            print(f"the trivial text app: run done {run_ms:.0f} ms, all drawn {drawn_ms:.0f} ms")
        print("\nplotly.js alone, per chart, at 256 tokens (ms):")
        for key in page.evaluate(CHART_KEYS):
            print(f"  {key:<24} {page.evaluate(DRAW_TIME, key):>7.0f}")
        context.close()
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
