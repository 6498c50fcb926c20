"""What a class costs one server in memory: N long texts on /attention, M on /pretrained.

One server (``app/main.py``), one headless Chromium. Each "student" opens a context of
its own (a session of its own) on ``/attention`` with a distinct text of about 2,000
characters at the largest random model (``weights=random&d_model=768&heads=16``), waits
until every chart has drawn, and leaves; then M of those texts are opened on
``/pretrained``. The server's resident memory (VmRSS of it and its children) is sampled
every quarter second: start (before any page), peak, end, and after each text, to see
whether it stays flat once the cache budget is reached.

Then the time of a view, from ``goto`` until every chart has drawn, alternating: a
repeated view (the text just shown, a cache hit) and a fresh one (a text never seen, a
miss).

``--baseline DIR`` (repeatable) first measures the app of another checkout
(``/work/main``), served with ``PYTHONPATH=DIR`` so its ``app`` and ``engine`` are
imported; ``--budget-mb`` sets ``ATTENTION_EXPLORER_CACHE_MB`` for every server (code
without the budget ignores it).

Run: ``python benchmarks/memory.py [--texts 20] [--pretrained 10] [--budget-mb 300]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

# The harness is in the tests' support folder; run as a file, a benchmark puts it on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from harness import SETTLED, ServerSampler, chromium, serve_app, tree_rss_mb

ROOT = Path(__file__).resolve().parents[1]
BUDGET_VARIABLE = "ATTENTION_EXPLORER_CACHE_MB"  # app.data.cache reads it; not imported here
LARGEST = {"weights": "random", "d_model": "768", "heads": "16"}
WORDS = (  # noqa: SIM905 - a sentence reads better than a list
    "the restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food in the end they just gave two slices of bread their ambiance was as good as "
    "service students attention weights query key value softmax scale head layer model "
    "token sentence river bank money lecture morning evening garden window mountain "
    "library teacher question answer reason number paper table chair coffee train"
).split()


def long_text(i, chars=2000):
    """Text number ``i``: seeded random words, about ``chars`` characters, never repeated."""
    rng = random.Random(i)
    words = [f"Text {i}."]
    while sum(len(w) + 1 for w in words) < chars - 12:
        words.append(rng.choice(WORDS))
    return " ".join(words)[: chars - 1] + "."


def view(browser, url, page, params, timeout_ms):
    """Open ``page`` in a fresh context (a new session); seconds until every chart drew."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        tab = context.new_page()
        start = time.perf_counter()
        tab.goto(f"{url}/{page}?{urllib.parse.urlencode(params)}")
        tab.wait_for_timeout(50)
        tab.wait_for_function(SETTLED, polling=50, timeout=timeout_ms)
        return time.perf_counter() - start
    finally:
        context.close()


@contextlib.contextmanager
def _environment(**values):
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update({k: v for k, v in values.items() if v is not None})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def measure(
    n_texts=20, n_pretrained=10, budget_mb=None, baseline=None, timings=3, log=print, browser=None
):
    """Drive one server as a class would; return the RSS figures (MB) and view times (s).

    Parameters
    ----------
    n_texts, n_pretrained : int, texts opened on /attention, and how many of them on /pretrained
    budget_mb : float, optional, the server's cache budget (its default when None)
    baseline : str or Path, optional, another checkout whose app is served instead
    timings : int, hit/miss pairs timed at the end (0: none)
    log : callable, receives one line per step
    browser : a Playwright Browser to use, optional (one of its own is launched when None:
        Playwright's sync API runs once per process, so a test passes the session's)

    Returns
    -------
    dict with "start", "peak", "end", "after_each" (list), "hits", "misses" (lists of s)
    """
    root = Path(baseline) if baseline else ROOT
    env = {
        BUDGET_VARIABLE: None if budget_mb is None else str(budget_mb),
        "PYTHONPATH": str(root) if baseline else None,
    }
    timeout_ms = 600_000
    with (
        _environment(**env),
        serve_app(root / "app" / "main.py") as (url, pid),
        contextlib.nullcontext(browser) if browser else chromium() as browser,
        ServerSampler(pid, interval=0.25, measure=tree_rss_mb) as rss,
    ):
        start = rss.now()
        log(f"start {start:.0f} MB")
        after_each = []
        for i in range(n_texts):
            seconds = view(browser, url, "attention", {**LARGEST, "text": long_text(i)}, timeout_ms)
            after_each.append(rss.now())
            log(f"/attention text {i}: {seconds:.1f} s, RSS {after_each[-1]:.0f} MB")
        for i in range(n_pretrained):
            seconds = view(browser, url, "pretrained", {"text": long_text(i)}, timeout_ms)
            after_each.append(rss.now())
            log(f"/pretrained text {i}: {seconds:.1f} s, RSS {after_each[-1]:.0f} MB")
        hits, misses = [], []
        last = long_text(n_texts - 1)
        for j in range(timings):
            params = {**LARGEST, "text": last}
            hits.append(view(browser, url, "attention", params, timeout_ms))
            last = long_text(1000 + j)
            params = {**LARGEST, "text": last}
            misses.append(view(browser, url, "attention", params, timeout_ms))
            log(f"repeated view {hits[-1]:.2f} s, fresh view {misses[-1]:.2f} s")
        end = rss.now()
    return {
        "start": start,
        "peak": rss.peak_mb,
        "end": end,
        "after_each": after_each,
        "hits": hits,
        "misses": misses,
    }


def _summary(name, result):
    hits = statistics.median(result["hits"]) if result["hits"] else float("nan")
    misses = statistics.median(result["misses"]) if result["misses"] else float("nan")
    return (
        f"| {name} | {result['start']:,.0f} | {result['peak']:,.0f} | {result['end']:,.0f} "
        f"| {hits:.2f} | {misses:.2f} |"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--texts", type=int, default=20)
    parser.add_argument("--pretrained", type=int, default=10)
    parser.add_argument("--budget-mb", type=float, default=None)
    parser.add_argument("--timings", type=int, default=3)
    parser.add_argument(
        "--baseline",
        action="append",
        default=[],
        help="also measure this checkout's app, first (repeat for several)",
    )
    args = parser.parse_args()
    runs = {}
    print(f"load average at the start: {os.getloadavg()}")
    for baseline in args.baseline:
        print(f"\n{baseline}:")
        runs[baseline] = measure(
            args.texts, args.pretrained, args.budget_mb, baseline, args.timings
        )
    print("\nthis checkout:")
    runs["this checkout"] = measure(args.texts, args.pretrained, args.budget_mb, None, args.timings)
    print(f"load average at the end: {os.getloadavg()}")
    print(f"\n{args.texts} texts on /attention (d_model 768, 16 heads), ", end="")
    print(f"{args.pretrained} on /pretrained")
    print("| app | start MB | peak MB | end MB | repeated view s | fresh view s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, result in runs.items():
        print(_summary(name, result))


if __name__ == "__main__":
    main()
