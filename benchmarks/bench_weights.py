"""What MiniLM's real weights cost on /attention: a head switch, and a new text, against the toy.

One server (``app/main.py``), one headless Chromium, two tabs: /attention with MiniLM's
weights (the default) and with the seeded random model (``?weights=random&heads=4``, so
it has heads to switch too). The two are driven alternately, so both see the same
machine load:

* head switch: one arrow key on the sidebar's focused "Head h" slider thumb;
* text change: a new sentence typed into the sidebar's text box (Ctrl+Enter), each one
  never seen before, so nothing is cached: MiniLM runs its six layers, the toy embeds.

A step runs from the key press until the run it causes has finished and every chart
has drawn (``harness.SETTLED_AFTER``): what a visitor waits.
Also timed without a browser: the page's whole script in AppTest, per rerun, for the
same two interactions. BLAS runs on one thread in both, as the app sets it.

Run: ``python benchmarks/bench_weights.py [--steps 12]``.
"""

from __future__ import annotations

import os

# Before NumPy loads: one BLAS thread, as app/main.py sets for the server.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

# The harness is in the tests' support folder; run as a file, a benchmark puts it on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from harness import RUN_COUNTER, SETTLED, SETTLED_AFTER, chromium, serve_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BASE = (
    "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food. In the end, they just gave me two slices of bread. Their ambiance was just as "
    "good as the food and service, number {i}."
)
MODES = {"MiniLM (layer 3)": "", "Random (toy, 4 heads)": "?weights=random&heads=4"}


def settle(page):
    page.wait_for_timeout(50)
    page.wait_for_function(SETTLED, polling=20, timeout=120_000)


def timed(page, action):
    """Seconds from ``action`` until the run it causes has finished and every chart drawn."""
    before = page.evaluate("window.__runs.finished")
    start = time.perf_counter()
    action()
    page.wait_for_function(SETTLED_AFTER, arg=before, polling=20, timeout=120_000)
    return time.perf_counter() - start


def head_step(page, n_heads):
    thumb = page.locator(".st-key-head_control").get_by_role("slider")
    current = int(thumb.get_attribute("aria-valuetext"))
    thumb.focus()
    return timed(
        page, lambda: page.keyboard.press("ArrowRight" if current + 1 < n_heads else "Home")
    )


def text_step(page, tag, step):
    box = page.locator(".st-key-text textarea")
    box.fill(BASE.format(i=f"{tag}{step}"))
    return timed(page, lambda: box.press("Control+Enter"))


def browser_table(steps):
    results = {(mode, kind): [] for mode in MODES for kind in ("head", "text")}
    with serve_app(ROOT / "app" / "main.py") as (url, _), chromium() as browser:
        pages = {}
        for mode, query in MODES.items():
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.add_init_script(RUN_COUNTER)
            page = context.new_page()
            page.goto(f"{url}/attention{query}")
            settle(page)
            pages[mode] = page
        for step in range(steps + 1):  # the first round warms up
            for index, (mode, page) in enumerate(pages.items()):
                n_heads = 12 if index == 0 else 4
                head = head_step(page, n_heads)
                text = text_step(page, f"m{index}s", step)
                if step:
                    results[mode, "head"].append(head)
                    results[mode, "text"].append(text)
    return results


def apptest_table(steps):
    from streamlit.testing.v1 import AppTest

    results = {}
    for mode, query in MODES.items():
        at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=600)
        for part in query.lstrip("?").split("&") if query else ():
            key, value = part.split("=")
            at.query_params[key] = value
        at.run()
        at.switch_page("../pages/attention.py").run()
        heads, texts = [], []
        n_heads = 12  # MiniLM's
        for step in range(steps):
            at.session_state["head"] = (step + 1) % n_heads  # as the sidebar's control reports it
            start = time.perf_counter()
            at.run()
            heads.append(time.perf_counter() - start)
            at.sidebar.text_area(key="text").set_value(BASE.format(i=f"apptest {mode} {step}"))
            start = time.perf_counter()
            at.run()
            texts.append(time.perf_counter() - start)
        if at.exception:
            raise RuntimeError(at.exception[0].value)
        results[mode, "head"], results[mode, "text"] = heads, texts
    return results


def print_table(title, results):
    print(f"\n{title}: median (min–max) ms")
    print("| weights | head switch | text change |")
    print("| --- | ---: | ---: |")
    for mode in MODES:
        cells = []
        for kind in ("head", "text"):
            ms = [t * 1000 for t in results[mode, kind]]
            cells.append(f"{statistics.median(ms):,.0f} ({min(ms):,.0f}–{max(ms):,.0f})")
        print(f"| {mode} | {cells[0]} | {cells[1]} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start")
    print_table("AppTest, the whole /attention script per rerun", apptest_table(args.steps))
    print_table("Chromium, key press to every chart drawn", browser_table(args.steps))


if __name__ == "__main__":
    main()
