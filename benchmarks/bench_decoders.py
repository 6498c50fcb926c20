"""Llama, Mistral and Qwen2 in the engine: parity; a 135M bf16 model's time and memory.

First the largest difference of each tiny decoder of ``tests/data/tiny_models``
(``scripts/make_tiny_decoders.py``) from what transformers computed: every layer's
attention, every hidden state, the logits, and whether greedy generation gives the same
10 tokens. Then a random model of SmolLM2-135M's shape (30 layers, 9 query heads sharing
3 key/value heads, d_model 576, SwiGLU 1536, 49152 tokens, tied embeddings, rotary base
1e5), made here with NumPy in bf16 and written to a temporary folder (never committed),
runs in two worker processes that take turns in blocks on the same ids, 45 and 256
tokens: the engine (:func:`engine.bert.run_ids`, every attention map returned) and
transformers' ``LlamaForCausalLM`` (eager attention, ``output_attentions=True``, float32
on the same weights upcast, PyTorch's default threads). Each worker says its resident
memory after loading (VmRSS, less what it held before) and its peak (VmHWM)::

    python3 benchmarks/bench_decoders.py [--runs 10] [--torch-python /tmp/torchenv/bin/python]
                                         [--torch-threads 1]

The PyTorch side needs a Python that imports torch and transformers (``--torch-python``
or ``TORCH_PYTHON``); without one it is skipped. Figures: docs/benchmarks.md.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "tests" / "data" / "tiny_models"
DECODERS = ("llama", "llama_fp32", "mistral", "qwen2")
#: SmolLM2-135M's config.json, but for the weights, which are random.
SMOLLM2_135M = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "vocab_size": 49152,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
    "rope_theta": 100000.0,
    "rope_scaling": None,
    "tie_word_embeddings": True,
    "hidden_act": "silu",
    "bos_token_id": 1,
    "eos_token_id": 2,
    "torch_dtype": "bfloat16",
}
LENGTHS = (45, 256)
BLOCK = 2
SETTLE_S = 0.3
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def parity():
    """Print each tiny decoder's largest differences from transformers."""
    from engine import bert, checkpoint, generate

    print(
        f"{'checkpoint':<11} {'weights':>8} {'attention':>10} {'hidden':>10} {'logits':>10}  greedy"
    )
    for name in DECODERS:
        model = checkpoint.load(TINY / name)
        with np.load(TINY / f"{name}.npz") as data:
            reference = {key: data[key] for key in data.files}
        worst = {"attention": 0.0, "hidden": 0.0, "logits": 0.0}
        for case in ("short", "long"):
            result = bert.run_ids(model, reference[f"{case}/ids"])
            ours = np.concatenate([result.hidden_states[:-1], result.last_hidden_state[None]])
            found = {
                "attention": np.abs(result.attentions - reference[f"{case}/attentions"]).max(),
                "hidden": np.abs(ours - reference[f"{case}/hidden_states"]).max(),
                "logits": np.abs(
                    generate.logits(model, result) - reference[f"{case}/logits"]
                ).max(),
            }
            worst = {key: max(worst[key], float(found[key])) for key in worst}
        steps = generate.generate(model, str(reference["short/text"]), 10)
        same = [s.id for s in steps] == reference["short/greedy"].tolist()
        print(
            f"{name:<11} {model.config.precision:>8} {worst['attention']:10.1e} "
            f"{worst['hidden']:10.1e} {worst['logits']:10.1e}  {'same 10' if same else 'DIFFERENT'}"
        )


def make_model(folder, seed=0):
    """A random bf16 model of SmolLM2-135M's shape in ``folder``; its parameter count."""
    from safetensors.numpy import save_file

    c = SMOLLM2_135M
    d, f, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    d_kv = d // c["num_attention_heads"] * c["num_key_value_heads"]
    rng = np.random.default_rng(seed)

    def weight(*shape):
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(ml_dtypes.bfloat16)

    def gain():
        return np.ones(d, dtype=ml_dtypes.bfloat16)

    tensors = {"model.embed_tokens.weight": weight(v, d), "model.norm.weight": gain()}
    for i in range(c["num_hidden_layers"]):
        layer = f"model.layers.{i}."
        shapes = {
            "self_attn.q_proj": (d, d),
            "self_attn.k_proj": (d_kv, d),
            "self_attn.v_proj": (d_kv, d),
            "self_attn.o_proj": (d, d),
            "mlp.gate_proj": (f, d),
            "mlp.up_proj": (f, d),
            "mlp.down_proj": (d, f),
        }
        tensors |= {layer + name + ".weight": weight(*shape) for name, shape in shapes.items()}
        tensors[layer + "input_layernorm.weight"] = gain()
        tensors[layer + "post_attention_layernorm.weight"] = gain()
    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(c, indent=2), encoding="utf-8")
    shutil.copy(TINY / "llama" / "tokenizer.json", folder / "tokenizer.json")
    return sum(t.size for t in tensors.values())


def memory_kb(field):
    """VmRSS or VmHWM of this process, in kB (Linux)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def serve(kind, folder, threads=None):
    """A worker: load the model, say its memory, then answer timing requests line by line."""
    before = memory_kb("VmRSS")
    if kind == "torch":
        import torch
        from transformers import LlamaForCausalLM

        if threads:
            torch.set_num_threads(threads)
        model = LlamaForCausalLM.from_pretrained(
            folder, dtype=torch.float32, attn_implementation="eager"
        ).eval()
        version = f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32"

        def forward(ids):
            with torch.inference_mode():
                out = model(torch.tensor([ids]), output_attentions=True)
            return out.logits[0, -1].numpy()
    else:
        from engine import bert, checkpoint

        model = checkpoint.load(folder)
        version = f"numpy {np.__version__}, weights {model.config.precision}"

        def forward(ids):
            return bert.run_ids(model, ids).next_logits

    loaded = memory_kb("VmRSS") - before
    print(json.dumps({"version": version, "loaded_kb": loaded}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        logits = forward(request["ids"])  # untimed: wakes the side's threads
        timings = []
        for _ in range(request["runs"]):
            start = time.perf_counter()
            forward(request["ids"])
            timings.append(time.perf_counter() - start)
        answer = {"timings": timings, "peak_kb": memory_kb("VmHWM"), "logits": logits.tolist()}
        print(json.dumps(answer), flush=True)


class Worker:
    """One side, in its own process, asked for blocks of timed runs."""

    def __init__(self, python, kind, folder, threads=None):
        env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        self.process = subprocess.Popen(
            [python, __file__, "--worker", kind, "--folder", str(folder)]
            + (["--torch-threads", str(threads)] if threads else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.hello = self.answer()

    def answer(self):
        """The worker's next line, as JSON."""
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker {self.process.args} stopped")
        return json.loads(line)

    def time(self, ids, runs):
        """``runs`` timed passes over ``ids`` after one untimed: timings, peak, logits."""
        self.process.stdin.write(json.dumps({"ids": ids, "runs": runs}) + "\n")
        self.process.stdin.flush()
        return self.answer()

    def close(self):
        """End the worker: it stops when its input does."""
        self.process.stdin.close()
        self.process.wait(timeout=120)


def torch_python(given):
    python = given or os.environ.get("TORCH_PYTHON") or sys.executable
    probe = subprocess.run(
        [python, "-c", "import torch, transformers"], capture_output=True, check=False
    )
    return python if probe.returncode == 0 else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per length and side")
    parser.add_argument("--torch-python", help="a Python that imports torch and transformers")
    parser.add_argument(
        "--torch-threads", type=int, help="PyTorch's threads (default: its own, one per core)"
    )
    parser.add_argument("--worker", choices=("numpy", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        serve(args.worker, args.folder, args.torch_threads)
        return
    parity()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary) / "smollm2-135m-shaped"
        count = make_model(folder)
        size = (folder / "model.safetensors").stat().st_size
        print(
            f"\nrandom SmolLM2-135M-shaped model: {count / 1e6:.1f}M parameters, "
            f"bf16 file {size / 2**20:.0f} MB"
        )
        workers = {"numpy": Worker(sys.executable, "numpy", folder)}
        python = torch_python(args.torch_python)
        if python is None:
            print("PyTorch comparison skipped: no Python given that imports torch and transformers")
        else:
            workers["torch"] = Worker(python, "torch", folder, args.torch_threads)
        for side, worker in workers.items():
            loaded = worker.hello["loaded_kb"] / 1024
            print(f"{side}: {worker.hello['version']}; resident after loading {loaded:.0f} MB")
        compare(workers, args.runs)
        for worker in workers.values():
            worker.close()


def compare(workers, runs):
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    columns = ("numpy ms", "torch ms", "numpy/torch", "logits diff")
    print(f"{'tokens':>6} " + " ".join(f"{c:>11}" for c in columns) + "  peak MB")
    rng = np.random.default_rng(1)
    for n in LENGTHS:
        ids = [1, *rng.integers(3, 320, n - 1).tolist()]  # ids the tokenizer has
        timings = {side: [] for side in workers}
        logits, peaks = {}, {}
        for block in range(max(runs // BLOCK, 1)):
            order = list(workers) if block % 2 == 0 else list(reversed(workers))
            for side in order:
                time.sleep(SETTLE_S)
                answer = workers[side].time(ids, BLOCK)
                timings[side] += answer["timings"]
                logits[side], peaks[side] = np.array(answer["logits"]), answer["peak_kb"]
        median = {side: statistics.median(t) * 1e3 for side, t in timings.items()}
        torch_ms = median.get("torch", float("nan"))
        diff = (
            np.abs(logits["numpy"] - logits["torch"]).max() if "torch" in logits else float("nan")
        )
        peak = ", ".join(f"{side} {kb / 1024:.0f}" for side, kb in peaks.items())
        print(
            f"{n:>6} {median['numpy']:11.1f} {torch_ms:11.1f} {median['numpy'] / torch_ms:11.2f} "
            f"{diff:11.1e}  {peak}"
        )
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
