"""Where a layer's parts pay for themselves: MiniLM's pass as one part against twelve.

:data:`engine.parts.PARALLEL_MIN_TOKENS` is where a layer's two sums start being computed
in :data:`engine.parts.PARTS` parts on the engine's threads; below, one part on the
caller. This script times MiniLM's pass (:func:`engine.bert.run_ids`, the app's default
passage repeated and cut to each length) both ways in one process, alternating run by
run: one part (``parts_for`` made to answer 1), and twelve parts on every CPU the process
may use (``parallel=True``). It prints, per length, each side's fastest and median run
and what the parts buy (one part's time over twelve's; above 1, the parts pay), with the
load average, since another program on the machine takes the second core the parts need::

    python3 benchmarks/bench_parts.py [--lengths 45 64 96 128 256] [--runs 40]

Figures: docs/benchmarks.md.
"""

import argparse
import os
import statistics
import time

import engine.layers
import engine.long_run
import engine.one_layer
from engine import bert, checkpoint, parts

TEXT = (
    "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food. In the end, they just gave me two slices of bread. Their ambiance was just as "
    "good as the food and service. "
)


def set_parts(count):
    """Make every layer ``count`` parts (None: the code's own split)."""
    split = parts.parts_for if count is None else (lambda n: count)
    engine.layers.parts_for = split
    engine.long_run.parts_for = split
    engine.one_layer.parts_for = split


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[45, 64, 96, 128, 256])
    parser.add_argument("--runs", type=int, default=40, help="timed runs per length and side")
    args = parser.parse_args()
    model = checkpoint.load_minilm()
    ids = model.tokenizer.encode(TEXT * 12).ids
    print(f"{parts.cpus()} CPUs; PARALLEL_MIN_TOKENS = {parts.PARALLEL_MIN_TOKENS}")
    print(
        f"{'tokens':>6} {'1 part min/median ms':>21} {'12 parts min/median':>20} {'buys':>6} load"
    )
    for n in args.lengths:
        cut = [*ids[: n - 1], ids[-1]]  # [CLS] … [SEP]
        times = {1: [], parts.PARTS: []}
        for _ in range(args.runs):
            for count in times:
                set_parts(count)
                start = time.perf_counter()
                bert.run_ids(model, cut)
                times[count].append(time.perf_counter() - start)
        set_parts(None)
        one, split = (times[c] for c in times)
        cells = [f"{min(t) * 1e3:8.1f} / {statistics.median(t) * 1e3:6.1f}" for t in (one, split)]
        buys = statistics.median(one) / statistics.median(split)
        print(f"{n:>6} {cells[0]:>21} {cells[1]:>20} {buys:5.2f}× {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
