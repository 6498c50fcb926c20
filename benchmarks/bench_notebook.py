"""Time to a drawn head view in a notebook, the views' sizes, and BertViz's head view beside them.

For texts of 30 and 250 MiniLM tokens the script times, in this process (what a kernel
runs when a cell says ``ae.head_view(att)``):

- *call to figure*: ``ae.head_view(att)`` and ``ae.line_view(att)`` (BertViz's head view),
  from the engine's run (``ae.attention``, timed apart, once per text);
- *figure to message*: the figure's mime bundle, the JSON the kernel sends to the notebook;
- *drawn*: that JSON drawn by plotly.js (the ``plotly`` package's, as the notebook's is)
  in headless Chromium, ``Plotly.newPlot`` until the next animation frame;

and, where BertViz imports in a development Python of its own (``--bertviz-python``, with
``--bertviz-path`` on its ``PYTHONPATH``; never a dependency), BertViz's
``head_view(attention, tokens, html_action='return')`` on the same attention (the same
arrays, as PyTorch tensors), in a worker process: the two sides take turns, round by round.
BertViz's page cannot be drawn with the network unplugged (it loads require.js, d3 and
jQuery from a CDN), so its side stops at the HTML. Then the sizes of the saved pages
(``ae.save_html``) for the scale view and the line view at 45 and 128 tokens::

    python benchmarks/bench_notebook.py [--rounds 15] [--bertviz-python /tmp/torchenv/bin/python]
                                        [--bertviz-path /tmp/bertviz]

Figures and how they were taken: docs/benchmarks.md.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import plotly.io as pio
from plotly.offline import get_plotlyjs

import aeviews as ae
from engine import checkpoint

PASSAGE = (
    "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food. In the end, they just gave me two slices of bread. Their ambiance was just as "
    "good as the food and service. The trophy would not fit in the brown suitcase because "
    "it was too big, and the city council refused the demonstrators a permit because they "
    "feared violence. "
)

BERTVIZ_WORKER = r"""
import json, re, sys, time
import numpy as np, torch
from bertviz import head_view
data = np.load(sys.argv[1])
for line in sys.stdin:
    n = line.strip()
    layers = tuple(torch.from_numpy(layer[None]) for layer in data[f"a{n}"])
    tokens = [str(t) for t in data[f"t{n}"]]
    start = time.perf_counter()
    html = head_view(layers, tokens, html_action="return")
    took = time.perf_counter() - start
    fetched = sorted(set(re.findall(r"https?://cdn[^\"' ]+", html.data)))
    print(json.dumps({"s": took, "bytes": len(html.data.encode()), "fetched": fetched}), flush=True)
"""


def text_of(tokens_wanted, tokenizer):
    """A text of ``tokens_wanted`` MiniLM tokens ([CLS] and [SEP] counted), cut at a word."""
    words = (PASSAGE * 20).split()
    best = ""
    for k in range(1, len(words) + 1):
        text = " ".join(words[:k])
        if len(tokenizer.encode(text).ids) > tokens_wanted:
            break
        best = text
    return best


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def bundle_of(fig):
    return fig._repr_mimebundle_()["application/vnd.plotly.v1+json"]


def drawn_ms(page, bundles):
    """Plotly.newPlot of each bundle until the next animation frame, in ms, in Chromium."""
    return page.evaluate(
        """async (bundles) => {
            const out = [];
            for (const b of bundles) {
                const div = document.createElement("div");
                document.body.appendChild(div);
                const start = performance.now();
                await Plotly.newPlot(div, b.data, b.layout, b.config);
                await new Promise((done) => requestAnimationFrame(() => done()));
                out.push(performance.now() - start);
                Plotly.purge(div);
                div.remove();
            }
            return out;
        }""",
        bundles,
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--bertviz-python", default=os.environ.get("BERTVIZ_PYTHON"))
    parser.add_argument("--bertviz-path", default=os.environ.get("BERTVIZ_PATH", ""))
    args = parser.parse_args()
    pio.renderers.default = "plotly_mimetype"  # what JupyterLab and VS Code get
    tokenizer = checkpoint.load_minilm().tokenizer
    sizes = (30, 250)
    took, _ = timed(ae.attention, "Loading the model.")
    print(f"MiniLM loaded and a first text run: {took * 1000:.0f} ms (once per kernel)")
    atts = {}
    for n in sizes:
        took, att = timed(ae.attention, text_of(n, tokenizer))
        atts[n] = att
        print(f"{len(att.tokens)} tokens: ae.attention (engine run) {took * 1000:.0f} ms")

    folder = Path(tempfile.mkdtemp(prefix="bench_notebook_"))
    worker = None
    if args.bertviz_python:
        arrays = {f"a{n}": atts[n].attentions for n in sizes}
        arrays |= {f"t{n}": np.array(atts[n].tokens) for n in sizes}
        np.savez(folder / "attention.npz", **arrays)
        env = {**os.environ, "PYTHONPATH": args.bertviz_path}
        worker = subprocess.Popen(
            [args.bertviz_python, "-c", BERTVIZ_WORKER, str(folder / "attention.npz")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    times = {(view, n): [] for view in ("head", "line", "bertviz") for n in sizes}
    to_json = {(view, n): [] for view in ("head", "line") for n in sizes}
    bundles, bertviz_bytes, bertviz_fetched = {}, {}, []
    for _ in range(args.rounds):
        for n in sizes:
            for view, build in (("head", ae.head_view), ("line", ae.line_view)):
                took, fig = timed(build, atts[n])
                times[view, n].append(took)
                took, bundle = timed(bundle_of, fig)
                to_json[view, n].append(took)
                bundles[view, n] = bundle
            if worker is not None:
                worker.stdin.write(f"{n}\n")
                worker.stdin.flush()
                answer = json.loads(worker.stdout.readline())
                times["bertviz", n].append(answer["s"])
                bertviz_bytes[n] = answer["bytes"]
                bertviz_fetched = answer["fetched"]
    if worker is not None:
        worker.stdin.close()
        worker.wait()

    from harness import chromium  # tests/support: the harness the browser tests drive

    drawn = {key: [] for key in bundles}
    with chromium() as browser:
        page = browser.new_page()
        page.set_content(f"<html><body><script>{get_plotlyjs()}</script></body></html>")
        keys = list(bundles)
        for _ in range(max(3, args.rounds // 3)):
            for key, ms in zip(keys, drawn_ms(page, [bundles[k] for k in keys]), strict=True):
                drawn[key].append(ms)

    def ms(values):
        return statistics.median(values) * 1000

    print(f"\nmedians over {args.rounds} rounds (load average {os.getloadavg()[0]:.2f}):")
    for n in sizes:
        tokens = len(atts[n].tokens)
        for view in ("head", "line"):
            size = len(json.dumps(bundles[view, n])) / 1e3
            print(
                f"  {tokens} tokens ae.{view}_view: call to figure {ms(times[view, n]):.1f} ms, "
                f"figure to message {ms(to_json[view, n]):.1f} ms ({size:.0f} kB), "
                f"drawn {statistics.median(drawn[view, n]):.0f} ms"
            )
        if times["bertviz", n]:
            ratio = statistics.median(times["bertviz", n]) / statistics.median(times["line", n])
            print(
                f"  {tokens} tokens BertViz head_view(html_action='return'): "
                f"{ms(times['bertviz', n]):.1f} ms ({bertviz_bytes[n] / 1e3:.0f} kB of HTML, "
                f"draws nothing offline); BertViz / ae.line_view call to figure {ratio:.2f}x"
            )

    if bertviz_fetched:
        print(f"  BertViz's HTML loads: {', '.join(bertviz_fetched)}")
    print("\nsaved pages (ae.save_html):")
    for n in (45, 128):
        att = ae.attention(text_of(n, tokenizer))
        for view in ("scale", "line"):
            fig = ae.scale_view(att) if view == "scale" else ae.line_view(att)
            size = ae.save_html(fig, folder / f"{view}{n}.html")
            frames = f", {len(fig.frames)} frames" if fig.frames else ""
            print(f"  {len(att.tokens)} tokens {view} view: {size / 1e6:.2f} MB{frames}")
    text = (folder / "scale45.html").read_text(encoding="utf-8")
    print(f"  of which plotly.js (the app's partial bundle): {len(ae_plotly(text)) / 1e6:.2f} MB")


def ae_plotly(text):
    """The inlined plotly.js of a saved page: its first script element."""
    return re.search(r"<script>(.*?)</script>", text, re.S).group(1)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
    main()
