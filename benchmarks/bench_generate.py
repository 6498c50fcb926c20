"""Generation with the key/value cache: ten new tokens against one pass, and against the old way.

On one model (what :func:`engine.checkpoint.load` takes: the tiny Llama of
``tests/data/tiny_models`` by default), a text of ``--tokens`` tokens (fewer where the
model has fewer positions, so that ``--new`` more fit), timed in one process, in turns,
``--runs`` times each:

- the pass: :func:`engine.bert.run` on the text, as a page runs it;
- generation with the cache: :func:`engine.generate.generate`, ``--new`` greedy tokens:
  the pass over the text keeping every layer's keys and values, then one token's work per
  new token (:func:`engine.bert.step`);
- generation the old way: a whole pass over the tokens so far for every new token, and one
  more after the last, as ``generate`` ran before the cache (kept here, not in the engine);
- the floor of a step: only the products that read the weights, one token's worth (a
  vector times every layer's matrices and the output matrix, float32 NumPy on one BLAS
  thread, as a step computes them): what a step costs at least, the memory read.

It prints the medians, generation against one pass (issue #50's target: at most 1.5 for ten
tokens after 256) and the old way against the new, and checks that both ways choose the
same tokens, and what generation would cost if each step were its products alone (the pass
plus ``--new`` - 1 floors). Wall time, and the process's CPU time (every thread's), which a machine
shared with other work disturbs less: the work each way does::

    python3 benchmarks/bench_generate.py [--model FOLDER] [--tokens 256] [--new 10] [--runs 5]
                                         [--no-old]

``--no-old`` leaves the old way out (eleven passes a run), for more runs of the other two.

Figures: docs/benchmarks.md.
"""

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from engine import bert, blas, checkpoint, generate
from engine.checkpoint import upcast

ROOT = Path(__file__).resolve().parent.parent
TINY_LLAMA = ROOT / "tests" / "data" / "tiny_models" / "llama"
CORPUS = ROOT / "assets" / "bpe-corpus.txt"


def text_of(model, n_tokens):
    """The corpus's first words, as many as make at most ``n_tokens`` tokens."""
    words = CORPUS.read_text(encoding="utf-8").split()
    low, high = 1, len(words)
    while low < high:  # the most words whose tokens fit
        middle = (low + high + 1) // 2
        if len(model.tokenizer.encode(" ".join(words[:middle])).ids) <= n_tokens:
            low = middle
        else:
            high = middle - 1
    return " ".join(words[:low])


def old_generate(model, text, n_new):
    """Greedy tokens as ``generate`` made them before the cache: a whole pass per token."""
    current, chosen = bert.run(model, text), []
    for _ in range(n_new):
        chosen.append(int(np.argmax(current.next_logits)))
        current = bert.run_ids(model, [*current.ids, chosen[-1]])
    return chosen


def weight_products(model):
    """One token's products with every weight matrix: the floor of a step, as a function."""
    matrices = []
    for block in model.params["blocks"]:
        block = upcast(block)
        matrices += [w for part in block.values() for w in part.values() if np.ndim(w) == 2]
    head = upcast(model.unembedding)
    rng = np.random.default_rng(0)
    rows = {
        n: rng.standard_normal((1, n)).astype(np.float32) for n in {w.shape[0] for w in matrices}
    }
    last = rng.standard_normal(head.shape[1]).astype(np.float32)

    @blas.one_thread  # as a step runs
    def products():
        for w in matrices:
            rows[w.shape[0]] @ w  # [1, d_in] @ [d_in, d_out]
        last @ head.T  # the logits: [d_model] @ [d_model, n_vocab]

    return products


def timed(work):
    """Wall and CPU seconds of ``work()``, and its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    return (time.perf_counter() - wall, time.process_time() - cpu), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=str(TINY_LLAMA))
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--new", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--old", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    model = checkpoint.load(args.model)
    text = text_of(model, min(args.tokens, model.config.max_tokens - args.new))
    n = len(bert.run(model, text).ids)
    name = Path(args.model).name
    print(f"{name}: {model.config.precision}, a text of {n} tokens, {args.new} new")
    times = {"pass": [], "cache": [], "old": []} if args.old else {"pass": [], "cache": []}
    times["floor"] = []
    products = weight_products(model)
    for _ in range(args.runs):
        seconds = timed(products)[0]
        times["floor"].append(seconds)
        # The pass's run let go at once: held while generation ran, its arrays made
        # generation's own pass grow the heap anew, in page faults (docs/benchmarks.md).
        seconds = timed(lambda: bert.run(model, text))[0]
        times["pass"].append(seconds)
        seconds, steps = timed(lambda: generate.generate(model, text, args.new))
        times["cache"].append(seconds)
        if not args.old:
            continue
        seconds, old = timed(lambda: old_generate(model, text, args.new))
        times["old"].append(seconds)
        if [step.id for step in steps] != old:
            raise SystemExit(f"the cache chose {[s.id for s in steps]}, the whole pass {old}")
    for clock, which in (("wall", 0), ("CPU", 1)):
        report(args, {name: [t[which] for t in values] for name, values in times.items()}, clock)
    if args.old:
        print("  the same tokens both ways: yes")


def report(args, times, clock):
    """Medians, spreads and ratios of one clock's times."""
    median = {name: statistics.median(values) for name, values in times.items()}
    labels = {
        "pass": "one pass",
        "cache": "generation, cache",
        "old": "generation, whole pass",
        "floor": "a step's products alone",
    }
    print(f"  {clock} time, median of {args.runs} (least–most):")
    for name, values in times.items():
        spread = f"{min(values) * 1e3:.1f}–{max(values) * 1e3:.1f}"
        print(f"    {labels[name]:24} {median[name] * 1e3:9.1f} ms ({spread})")
    ratio = median["cache"] / median["pass"]
    print(f"    {args.new} tokens with the cache / one pass: {ratio:.2f}")
    ratios = sorted(c / p for c, p in zip(times["cache"], times["pass"], strict=True))
    print(f"      each run's own: {', '.join(f'{r:.2f}' for r in ratios)}")
    floor = median["floor"] / median["pass"]
    print(f"    {args.new} x a step's products / one pass: {args.new * floor:.2f}")
    print(
        f"    the floor: (one pass + {args.new - 1} x the products) / one pass: "
        f"{1 + (args.new - 1) * floor:.2f}"
    )
    if args.old:
        print(f"    whole pass per token / cache:         {median['old'] / median['cache']:.2f}")


if __name__ == "__main__":
    main()
