"""How long one multi-head self-attention layer takes in the engine, and how it grows with n.

For each (d_model, n_heads) with n_heads dividing d_model, times
:func:`engine.multi_head_attention` on n tokens (median of repeats,
``time.perf_counter``) and prints the log-log slope between consecutive n: about 1
while the O(n·d_model²) projections dominate, tending to 2 once the O(n²·d_model)
score matrix does. BLAS threads share the cores with everything else running, so
the load average is printed beside the table; on a busy machine multi-threaded BLAS
stalls waiting for its own threads, and ``OPENBLAS_NUM_THREADS=1`` gives steadier numbers.
Usage: ``python benchmarks/bench_engine.py [--quick]``.
"""

import argparse
import itertools
import math
import os
import statistics
import time

import numpy as np

import engine

N_TOKENS = (8, 64, 512, 2048)
D_MODELS = (64, 256, 768)
HEADS = (1, 4, 12)


def time_call(fn, min_repeats=3, max_repeats=50, budget_s=1.0):
    """Median wall time of ``fn()`` in seconds, after one warm-up call."""
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < max_repeats and (
        len(times) < min_repeats or time.perf_counter() - start < budget_s
    ):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench(d_model, n_heads, n, seed=0):
    rng = np.random.default_rng([seed, d_model, n])
    x = rng.standard_normal((n, d_model))
    weights = [rng.standard_normal((d_model, d_model)) / math.sqrt(d_model) for _ in range(4)]
    return time_call(lambda: engine.multi_head_attention(x, *weights, n_heads))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n up to 512 only")
    args = parser.parse_args()
    n_tokens = N_TOKENS[:-1] if args.quick else N_TOKENS

    configs = [(d, h) for d in D_MODELS for h in HEADS if d % h == 0]
    header = " ".join(f"{f'n={n}':>10}" for n in n_tokens)
    slopes = " ".join(f"{f'{a}->{b}':>9}" for a, b in itertools.pairwise(n_tokens))
    print("multi_head_attention, median wall time in ms; slope = d log t / d log n")
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    load = os.getloadavg()[0]
    print(
        f"{os.cpu_count()} CPUs, OPENBLAS_NUM_THREADS={threads}, load average {load:.2f} at start"
    )
    print(f"{'d_model':>7} {'heads':>5} {header}   {slopes}")
    total = time.perf_counter()
    for d_model, n_heads in configs:
        times = [bench(d_model, n_heads, n) for n in n_tokens]
        growth = [
            math.log(t1 / t0) / math.log(n1 / n0)
            for (n0, t0), (n1, t1) in itertools.pairwise(zip(n_tokens, times, strict=True))
        ]
        cells = " ".join(f"{t * 1e3:10.3f}" for t in times)
        print(f"{d_model:>7} {n_heads:>5} {cells}   " + " ".join(f"{g:9.2f}" for g in growth))
    load = os.getloadavg()[0]
    print(f"total {time.perf_counter() - total:.1f} s, load average {load:.2f} at end")


if __name__ == "__main__":
    main()
