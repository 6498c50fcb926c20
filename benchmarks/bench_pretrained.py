"""Time /pretrained in the browser: new text typed → every chart on the page drawn.

Serves the app, opens /pretrained in headless Chromium, and types a new text into the
sidebar, alternating a 45-token text (the default passage) and a 256-token one; each
round changes the last word, so every text is new to the server's caches. For each
round it records when the server finished the run and when the last chart was drawn,
and prints the medians, then how long plotly.js takes to draw each chart of the last
page on its own::

    python benchmarks/bench_pretrained.py [--rounds 5]
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

# The harness is in the tests' support folder; run as a file, a benchmark puts it on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from harness import RUN_COUNTER, SETTLED_AFTER, chromium, serve_app

from engine.checkpoint import load_minilm

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


def texts(n_tokens, word):
    """A text of ``n_tokens`` tokens ([CLS] and [SEP] included) ending in ``word``."""
    model = load_minilm()
    body = DEFAULT_TEXT.rsplit(" ", 1)[0]
    text = f"{body} {word}."
    while len(model.tokenizer.encode(text).ids) < n_tokens:
        text = f"{body} {text}"
    ids = model.tokenizer.encode(text).ids[1:-1]
    cut = model.tokenizer.decode(ids[-(n_tokens - 2) :])
    assert len(model.tokenizer.encode(cut).ids) == n_tokens, len(model.tokenizer.encode(cut).ids)
    return cut


def type_text(page, text):
    """Type ``text`` into the sidebar's text box; returns ms to the run's end and to drawn."""
    before = page.evaluate("window.__runs.finished")
    box = page.locator(".st-key-text textarea")
    box.fill(text)
    start = page.evaluate("performance.now()")
    box.press("Control+Enter")
    page.wait_for_function(SETTLED_AFTER, arg=before, polling="raf", timeout=120_000)
    end = page.evaluate("performance.now()")
    finished = page.evaluate("window.__runs.finishedAt")
    runs = page.evaluate("window.__runs.finished") - before
    return finished - start, end - start, runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cases = {45: [], 256: []}
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    with serve_app("app/main.py") as (url, _), chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_init_script(RUN_COUNTER)
        page = context.new_page()
        page.goto(url + "/pretrained")
        page.wait_for_function(SETTLED_AFTER, arg=0, polling=100, timeout=120_000)
        type_text(page, texts(45, "food"))  # warm: the model loaded, the first run done
        for round_ in range(args.rounds):
            for n in cases:
                cases[n].append(type_text(page, texts(n, LAST_WORDS[round_ % len(LAST_WORDS)])))
                time.sleep(0.5)
        print(f"\n{'tokens':>6} {'run done ms':>12} {'all drawn ms':>13} {'runs':>5}")
        for n, timings in cases.items():
            run_ms = statistics.median(t[0] for t in timings)
            drawn_ms = statistics.median(t[1] for t in timings)
            runs = max(t[2] for t in timings)
            print(f"{n:>6} {run_ms:>12.0f} {drawn_ms:>13.0f} {runs:>5}")
        print("\nplotly.js alone, per chart, at 256 tokens (ms):")
        for key in page.evaluate(CHART_KEYS):
            print(f"  {key:<24} {page.evaluate(DRAW_TIME, key):>7.0f}")
        context.close()
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
