"""A long text on /pretrained or a core page (issue #52): the server's peak memory, the first view.

One server (``app/main.py``) started on SmolLM2 (``ATTENTION_EXPLORER_MODEL=smollm2``) and a
text of ``--tokens`` tokens (``ATTENTION_EXPLORER_TEXT``: such a text is too long for a
link), one headless Chromium opening ``/pretrained`` (or ``--page``, a core page, with
``weights=smollm2``). The server's resident memory (it
and its children) is sampled every quarter second from its start; printed: the seconds
until the first chart is drawn and until every chart is, the peak and final memory.
``--check`` then runs the engine here, after the server has stopped, and compares the
zoom the browser drew with the head's exact weights; ``--shots DIR`` saves the new views
(every head's grid, the tiles, the zoom, the sinks) as PNG at 1280 × 720 and 390 × 844.

Run: ``python benchmarks/long_text.py [--tokens 4096] [--page causal-mask] [--check]
[--query step=5] [--shots DIR]`` (``--check`` on /pretrained only).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

# The harness is in the tests' support folder; run as a file, a benchmark puts it on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from browser_support import look_at
from harness import SETTLED, ServerSampler, chromium, serve_app, tree_rss_mb

ROOT = Path(__file__).resolve().parents[1]
WORDS = (  # noqa: SIM905 - a sentence reads better than a list
    "the restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food in the end they just gave two slices of bread their ambiance was as good as "
    "service students attention weights query key value softmax scale head layer model"
).split()
#: The zoom as plotly.js drew it: its weights and its tokens (``1203 it``).
ZOOM = """() => {
    const trace = document.querySelector('.st-key-pretrained_zoom .js-plotly-plot')._fullData[0];
    return {z: trace.z, x: Array.from(trace.x), y: Array.from(trace.y)};
}"""
FIRST_CHART = "() => document.querySelector('.js-plotly-plot .main-svg') !== null"


def text_of(tokenizer, n_tokens, seed=0):
    """Seeded random words, cut to at most ``n_tokens`` tokens of ``tokenizer``."""
    rng = random.Random(seed)
    text = " ".join(rng.choice(WORDS) for _ in range(n_tokens))
    while len(tokenizer.encode(text).ids) > n_tokens:
        text = text[: int(len(text) * 0.995)]
    return text


#: The views a long text adds, photographed with ``--shots``, by page.
SHOTS = {
    "pretrained": (
        "pretrained_summaries",
        "pretrained_tiles",
        "pretrained_zoom",
        "pretrained_sinks",
    ),
    "causal-mask": ("causal_scores", "causal_weights_masked"),
    "encoder-layer": ("enc_norms", "enc_attention_update"),
    "home": ("home_x", "home_Q"),
    "positional-encoding": ("pe_without", "pe_with"),
    "multi-head": ("mh_heads", "mh_head"),
    "attention": ("att_raw", "att_weights", "att_saturation"),
    "efficient": ("efficient_whole", "efficient_full"),
    "tour": ("tour_step_{step}",),  # the step of --query (step=5), 1 without
}


def measure(text, timeout_s, shots=None, page="pretrained", query=""):
    """Serve the app on ``text``, open ``page``; the times, memory and the drawn zoom.

    ``query``: more of the core page's URL query (``step=5``), ``&``-joined.
    """
    os.environ.update(ATTENTION_EXPLORER_MODEL="smollm2", ATTENTION_EXPLORER_TEXT=text)
    with (
        serve_app(ROOT / "app" / "main.py") as (url, pid),
        ServerSampler(pid, interval=0.25, measure=tree_rss_mb) as rss,
        chromium() as browser,
    ):
        start_mb = rss.now()
        tab = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        tab.set_default_timeout(timeout_s * 1000)
        start = time.perf_counter()
        path = "" if page == "home" else page  # the default page's path is the root
        more = f"&{query}" if query else ""
        core = f"{url}/{path}?weights=smollm2{more}"
        tab.goto(f"{url}/pretrained" if page == "pretrained" else core)
        tab.wait_for_function(FIRST_CHART, polling=200)
        first = time.perf_counter() - start
        tab.wait_for_timeout(200)
        tab.wait_for_function(SETTLED, polling=200)
        settled = time.perf_counter() - start
        errors = tab.locator('[data-testid="stException"]').all_inner_texts()
        zoom = head = None
        if page == "pretrained":
            look_at(tab, "pretrained_zoom")
            zoom = tab.evaluate(ZOOM)
            head = tuple(
                int(
                    tab.locator(f".st-key-{k}")
                    .get_by_role("slider")
                    .get_attribute("aria-valuetext")
                )
                for k in ("pretrained_layer", "pretrained_head")
            )
        end_mb = rss.now()
        for width, height in ((1280, 720), (390, 844)) if shots else ():
            tab.set_viewport_size({"width": width, "height": height})
            tab.evaluate("window.scrollTo(0, 0)")
            tab.wait_for_timeout(500)
            tab.screenshot(path=str(Path(shots) / f"long_{page}_top_{width}.png"))
            step = dict(part.split("=", 1) for part in query.split("&") if part).get("step", 1)
            for key in (k.format(step=step) for k in SHOTS[page]):
                look_at(tab, key)
                tab.wait_for_timeout(500)
                tab.screenshot(path=str(Path(shots) / f"long_{key}_{width}.png"))
    return {
        "first": first,
        "settled": settled,
        "start_mb": start_mb,
        "peak_mb": rss.peak_mb,
        "end_mb": end_mb,
        "zoom": zoom,
        "head": head,
        "errors": errors,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--timeout", type=int, default=1800, help="seconds for the page")
    parser.add_argument(
        "--page", default="pretrained", choices=list(SHOTS), help="the page's URL path"
    )
    parser.add_argument("--query", default="", help="more of a core page's query: step=5")
    parser.add_argument("--check", action="store_true", help="compare the zoom with the engine")
    parser.add_argument("--shots", help="a folder for screenshots of the new views")
    args = parser.parse_args()
    from engine import (  # here only: the server is measured, not this process
        bert,
        checkpoint,
        one_layer,
    )

    model = checkpoint.load("smollm2")
    text = text_of(model.tokenizer, args.tokens)
    n = len(model.tokenizer.encode(text).ids)
    del model
    found = measure(text, args.timeout, args.shots, args.page, args.query)
    if found["errors"]:
        print("errors on the page:", *found["errors"], sep="\n")
    print(f"/{args.page}{'?' + args.query if args.query else ''}, SmolLM2, {n} tokens")
    print(f"  first chart drawn  {found['first']:7.1f} s")
    print(f"  every chart drawn  {found['settled']:7.1f} s")
    print(
        f"  server memory      start {found['start_mb']:.0f} MB, peak {found['peak_mb']:.0f} MB, "
        f"end {found['end_mb']:.0f} MB"
    )
    if args.check and found["zoom"] is not None:
        model = checkpoint.load("smollm2")
        run = bert.run(model, text)
        layer, head = found["head"]
        zoom = found["zoom"]
        rows = [int(label.split(" ", 1)[0]) for label in zoom["y"]]
        cols = [int(label.split(" ", 1)[0]) for label in zoom["x"]]
        exact = one_layer.head_weights(model, run, layer, head)[np.ix_(rows, cols)]
        drawn = np.array(zoom["z"], dtype=np.float32)
        print(
            f"  zoom of layer {layer}, head {head}: {drawn.shape[0]} × {drawn.shape[1]} cells, "
            f"largest difference from the engine's weights {np.abs(drawn - exact).max():.2e}"
        )


if __name__ == "__main__":
    main()
