"""Time the NumPy MiniLM forward pass against PyTorch eager on the same machine.

Runs the engine's :func:`engine.bert.run_ids` on the app's default passage (45 tokens)
and on 128, 256 and 510 tokens, alternating (in blocks, see :data:`BLOCK`) with Hugging
Face transformers' ``BertModel`` (CPU, eager attention, ``output_attentions=True`` so both
return every attention map) when torch and transformers are importable, and prints the
medians, their ratio and the load average before and after::

    python benchmarks/bench_bert.py [--runs 60]

Both engines get the same cores. The engine runs as the app runs it: BLAS on one thread
(``OPENBLAS_NUM_THREADS=1``, as ``app/main.py`` sets it), with each layer's parts (blocks
of heads, of hidden features) on :data:`engine.bert.THREADS` threads of its own; PyTorch
gets that many intra-op threads.
``--threads 1`` runs both on one core. The engine uses its threads only when that many
cores are idle (:func:`engine.bert.spare_threads`); the last column says what it chose.
"""

import argparse
import os
import platform
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as app/main.py, before NumPy loads

import numpy as np

from engine import bert
from engine.bert import load_minilm, run_ids

DEFAULT_TEXT = (
    "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food. In the end, they just gave me two slices of bread. Their ambiance was just as "
    "good as the food and service."
)
LENGTHS = (128, 256, 510)
#: Runs in a row per engine before switching. Each engine's worker threads keep spinning
#: for a while after a call (OpenBLAS's for about 2**28 cycles, ~0.1 s); timed run by run
#: in turns, the two pools fight over the cores and both look 5-10 times slower. So the
#: engines alternate in blocks, after a pause that lets the other pool fall asleep and one
#: untimed run.
BLOCK = 5
SETTLE_S = 0.3


def load_reference(folder, threads):
    try:
        import torch
        from transformers import BertModel
    except ImportError as missing:
        print(f"PyTorch comparison skipped: {missing}")
        return None
    model = BertModel.from_pretrained(folder, local_files_only=True, attn_implementation="eager")
    model.eval()
    torch.set_num_threads(threads)  # the cores the engine's own threads use

    def forward(ids):
        with torch.inference_mode():
            return model(torch.tensor([ids]), output_attentions=True)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    return forward


def cases(model):
    ids = model.tokenizer.encode(DEFAULT_TEXT).ids
    body = model.tokenizer.encode(DEFAULT_TEXT, add_special_tokens=False).ids
    found = {"default passage": ids}
    for n in LENGTHS:
        repeated = (body * (n // len(body) + 1))[: n - 2]
        found[f"{n} tokens"] = [ids[0], *repeated, ids[-1]]
    return found


def median_ms(timings):
    return statistics.median(timings) * 1e3


def time_once(forward, ids):
    start = time.perf_counter()
    forward(ids)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60, help="timed runs per case and engine")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument(
        "--threads", type=int, default=bert.THREADS, help="the engine's threads and PyTorch's"
    )
    args = parser.parse_args()
    bert.THREADS = bert.PARTS = args.threads  # read on every call

    model = load_minilm()
    reference = load_reference(model.folder, args.threads)
    print(
        f"numpy {np.__version__}, {platform.processor() or platform.machine()}, "
        f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}, "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}, "
        f"engine threads {bert.THREADS}"
    )
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))

    def numpy_forward(ids):
        return run_ids(model, ids)

    print(
        f"\n{'case':<16} {'tokens':>6} {'numpy ms':>9} {'torch ms':>9} {'numpy/torch':>11} threads"
    )
    for name, ids in cases(model).items():
        engines = {"numpy": numpy_forward}
        if reference is not None:
            engines["torch"] = reference
        for forward in engines.values():
            for _ in range(args.warmup):
                forward(ids)
        timings = {engine: [] for engine in engines}
        for _ in range(max(args.runs // BLOCK, 1)):  # alternate: load drifts hit both alike
            for engine, forward in engines.items():
                time.sleep(SETTLE_S)
                forward(ids)
                timings[engine].extend(time_once(forward, ids) for _ in range(BLOCK))
        numpy_ms = median_ms(timings["numpy"])
        threads = bert.spare_threads(len(ids))  # what the engine chose at the end
        if reference is None:
            print(f"{name:<16} {len(ids):>6} {numpy_ms:>9.2f} {'-':>9} {'-':>11}")
            continue
        torch_ms = median_ms(timings["torch"])
        print(
            f"{name:<16} {len(ids):>6} {numpy_ms:>9.2f} {torch_ms:>9.2f} "
            f"{numpy_ms / torch_ms:>11.2f} {threads:>7}"
        )
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
