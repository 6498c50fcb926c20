"""Softmax against linear attention in the engine: wall time and peak memory against n.

For n = 64 … 8192 tokens (one head, d_k = d_v = 64, seeded N(0, 1) inputs) measures
:func:`engine.scaled_dot_product_attention` (softmax, with and without the causal
mask) and :func:`engine.linear_attention` (both modes) with
:func:`app.data.efficient.measure_cost`: the shortest wall time of at least three calls, and the
tracemalloc peak of one call. Prints the table and the log-log slopes fitted over
n >= 512: about 2 for softmax (the (n, n) matrices), about 1 for linear attention.
The cores are shared with whatever else runs, so the load average is printed too,
and BLAS runs on one thread (unless ``OPENBLAS_NUM_THREADS`` or ``OMP_NUM_THREADS``
say otherwise) so that threads waiting for busy cores do not drown the growth we
measure. ``--write`` stores the run in ``assets/efficient_cost.json``, which the
efficient-attention page shows. Usage:
``python benchmarks/bench_efficient.py [--quick] [--write]``.
"""

import os

# Before NumPy loads: one BLAS thread, so the timings measure work rather than contention.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

from app.data.efficient import (  # noqa: E402
    COST_FILE,
    D_HEAD,
    METHODS,
    N_VALUES,
    measure_cost,
    slopes,
)


def table(rows):
    """The measurement as Markdown: one row per n, time and peak memory per method."""
    methods = list(dict.fromkeys(row["method"] for row in rows))
    by_key = {(row["method"], row["n"]): row for row in rows}
    header = ["n"] + [f"{m} ms" for m in methods] + [f"{m} MiB" for m in methods]
    lines = ["| " + " | ".join(header) + " |", "|" + " ---: |" * len(header)]
    for n in sorted({row["n"] for row in rows}):
        cells = [str(n)]
        for unit, scale in (("seconds", 1e3), ("peak_bytes", 2**-20)):
            for method in methods:
                row = by_key.get((method, n))
                cells.append(f"{row[unit] * scale:,.2f}" if row else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n up to 2048 only")
    parser.add_argument("--write", action="store_true", help=f"store the run in {COST_FILE.name}")
    args = parser.parse_args()
    n_values = [n for n in N_VALUES if not args.quick or n <= 2048]

    load = os.getloadavg()[0]
    threads = os.environ["OPENBLAS_NUM_THREADS"]
    machine = (
        f"{platform.machine()}, {os.cpu_count()} CPUs, BLAS threads {threads}, "
        f"load average {load:.2f} at start"
    )
    print(f"engine attention, one head, d_k = d_v = {D_HEAD}; {machine}")
    start = time.perf_counter()
    rows = measure_cost(n_values, D_HEAD, tuple(METHODS), min_repeats=3)
    print(table(rows))
    total = time.perf_counter() - start
    print(f"\nlog-log slopes over n >= 512 (time, peak memory); total {total:.1f} s")
    fitted = slopes(rows)
    for method, slope in fitted.items():
        print(f"  {method:<16} time {slope['time']:.2f}   memory {slope['memory']:.2f}")
    if args.write:
        record = {"machine": machine, "d": D_HEAD, "rows": rows, "slopes": fitted}
        COST_FILE.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"written to {COST_FILE}")


if __name__ == "__main__":
    main()
