"""Time the summarize page for a 7-sentence and a 40-sentence document, through AppTest.

For each document: the page's first run on it (every sentence embedded, the whole
document run once, nothing cached but the loaded model), then a run after moving k
(everything cached), then one after moving the layer slider (one new mean over pairs).
Each is the wall time of ``AppTest.run`` for the page's script, the entry point included,
median of ``--repeats`` (the caches are cleared before each first run)::

    python benchmarks/bench_summarize.py [--repeats 3]

The 7-sentence document is the page's default; the 40-sentence one is made of short
seeded sentences, 361 tokens in all, so the whole document still fits the model's 510
and the attention between sentences is drawn too.
"""

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import streamlit as st
from streamlit.testing.v1 import AppTest

from app.data import documents
from engine import checkpoint
from engine import summarize as sm

MAIN = str(Path(__file__).resolve().parents[1] / "app" / "main.py")
SUBJECTS = ("The farmer", "A student", "The old dog", "Our teacher", "The pilot", "My sister")
VERBS = ("painted", "repaired", "sold", "found", "carried", "visited")
OBJECTS = ("a red boat", "the village school", "two bicycles", "the museum", "a small farm")
ENDS = ("on Monday.", "after the storm.", "in the spring.", "before lunch.", "last year.")


def long_document(n=40, seed=0):
    """``n`` short sentences from a seeded grammar, in paragraphs of eight."""
    rng = np.random.default_rng(seed)
    sentences = [
        " ".join(str(rng.choice(part)) for part in (SUBJECTS, VERBS, OBJECTS, ENDS))
        for _ in range(n)
    ]
    return "\n\n".join(" ".join(sentences[i : i + 8]) for i in range(0, n, 8))


def page_times(text, repeats):
    first, k_move, layer_move = [], [], []
    for _ in range(repeats):
        st.cache_data.clear()
        at = AppTest.from_file(MAIN, default_timeout=600)
        at.session_state["text"] = text
        at.run()
        at.switch_page("../pages/summarize.py")
        start = time.perf_counter()
        at.run()
        first.append(time.perf_counter() - start)
        assert not at.exception, [e.value for e in at.exception]
        drawn = {c.proto.id.rsplit("-", 1)[-1] for c in at.get("bidi_component")}
        start = time.perf_counter()
        at.slider(key="k").set_value(3).run()
        k_move.append(time.perf_counter() - start)
        start = time.perf_counter()
        at.select_slider(key="summarize_layer").set_value(2).run()
        layer_move.append(time.perf_counter() - start)
    return statistics.median(first), statistics.median(k_move), statistics.median(layer_move), drawn


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    model = checkpoint.load_minilm()
    texts = {"7 sentences": documents.DEFAULT_DOCUMENT, "40 sentences": long_document()}
    print(
        f"{platform.machine()}, {os.cpu_count()} CPUs, OPENBLAS_NUM_THREADS="
        f"{os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}, load average "
        f"{os.getloadavg()[0]:.2f} at start"
    )
    print("| document | tokens | first run s | k moved s | layer moved s | attention drawn |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for name, text in texts.items():
        n_sentences = len(sm.split_sentences(text))
        tokens = len(model.tokenizer.encode(text).ids)
        first, k_move, layer_move, drawn = page_times(text, args.repeats)
        print(
            f"| {name} ({n_sentences}) | {tokens} | {first:.2f} | {k_move:.2f} | "
            f"{layer_move:.2f} | {'yes' if 'summarize_attention' in drawn else 'no'} |"
        )


if __name__ == "__main__":
    main()
