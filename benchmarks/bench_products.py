"""The 36 linear products of a MiniLM pass: NumPy's OpenBLAS against PyTorch, the same shapes.

Where the engine's pass loses to PyTorch's: its products alone, without the rest of the
layer. Per layer, four (n, 384) @ (384, 384) products (queries, keys, values, the
attention's output), (n, 384) @ (384, 1536) and (n, 1536) @ (1536, 384); six layers of
weights of their own (42 MB, as a pass streams them). Four sides take turns in blocks of
five runs, in one process: NumPy with BLAS held to one thread (as the engine holds it)
and to two (OpenBLAS's own threads), and PyTorch's ``nn.functional.linear`` (weights in
``nn.Linear``'s layout) on one thread and on two. Prints each side's median::

    /tmp/torchenv/bin/python benchmarks/bench_products.py [--runs 40]

It needs torch, numpy and threadpoolctl in one Python: the virtual environment of
``benchmarks/bench_bert.py`` plus ``pip install numpy threadpoolctl``. Figures:
docs/benchmarks.md ("What the target needs").
"""

import argparse
import statistics
import time

import numpy as np
import threadpoolctl
import torch

D_MODEL, D_FF, N_LAYERS = 384, 1536, 6
BLOCK = 5  # runs a side takes in turn, after one untimed run


def weights(rng):
    """Six layers' weights, (d_in, d_out) as the engine keeps them."""
    shapes = [(D_MODEL, D_MODEL)] * 4 + [(D_MODEL, D_FF), (D_FF, D_MODEL)]
    return [
        [rng.standard_normal(shape, dtype=np.float32) * 0.05 for shape in shapes]
        for _ in range(N_LAYERS)
    ]


def numpy_products(layers, x, hidden):
    for w in layers:
        for w_proj in w[:4]:
            x @ w_proj
        x @ w[4]
        hidden @ w[5]


def torch_products(layers, x, hidden):
    with torch.inference_mode():
        for w in layers:
            for w_proj in w[:4]:
                torch.nn.functional.linear(x, w_proj)
            torch.nn.functional.linear(x, w[4])
            torch.nn.functional.linear(hidden, w[5])


def block(function, *args):
    function(*args)
    times = []
    for _ in range(BLOCK):
        start = time.perf_counter()
        function(*args)
        times.append(time.perf_counter() - start)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="timed runs per side and length")
    args = parser.parse_args()
    controller = threadpoolctl.ThreadpoolController()
    rng = np.random.default_rng(0)
    ours = weights(rng)
    theirs = [[torch.from_numpy(np.ascontiguousarray(w.T)) for w in layer] for layer in ours]
    print(f"numpy {np.__version__}, torch {torch.__version__}; median ms of {args.runs} runs")
    print("tokens  numpy 1 thread  OpenBLAS 2 threads  torch 1 thread  torch 2 threads")
    for n in (45, 128, 256, 510):
        x = rng.standard_normal((n, D_MODEL), dtype=np.float32)
        hidden = rng.standard_normal((n, D_FF), dtype=np.float32)
        tx, thidden = torch.from_numpy(x), torch.from_numpy(hidden)
        times = {side: [] for side in ("numpy 1", "numpy 2", "torch 1", "torch 2")}
        for _ in range(max(1, args.runs // BLOCK)):
            for threads in (1, 2):
                with controller.limit(limits=threads, user_api="blas"):
                    times[f"numpy {threads}"] += block(numpy_products, ours, x, hidden)
            for threads in (1, 2):
                torch.set_num_threads(threads)
                times[f"torch {threads}"] += block(torch_products, theirs, tx, thidden)
            time.sleep(0.2)
        ms = [statistics.median(t) * 1e3 for t in times.values()]
        print(f"{n:6d}" + "".join(f"{m:16.2f}" for m in ms), flush=True)


if __name__ == "__main__":
    main()
