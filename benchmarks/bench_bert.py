"""Time the NumPy MiniLM forward pass against PyTorch eager, each in a plain process.

Two worker processes start with the default environment (any ``*_NUM_THREADS`` variable
of the caller removed), as a notebook or a user's script would run them: one runs the
engine's :func:`engine.bert.run_ids`, the other Hugging Face transformers' ``BertModel``
(CPU, eager attention, ``output_attentions=True`` so both return every attention map,
PyTorch's default threads, one per core, unless ``--torch-threads`` says). They take
turns on the same token ids, in blocks (see :data:`BLOCK`), on the app's default passage
(45 tokens) and on 128, 256 and 510 tokens; the script prints each side's median, their
ratio and the load average::

    python3 benchmarks/bench_bert.py [--runs 40] [--torch-python /tmp/torchenv/bin/python]
                                     [--serial] [--hogs 1] [--scaling] [--replicas 2]

``--serial`` adds a third side, the engine with ``parallel=False`` (every part of a layer
on the caller, the same bits), and prints what the engine's threads buy; ``--hogs N``
keeps N processes spinning on the CPU for the whole run, a machine busy with other work
(each in a session of its own, as another user's program is: see :func:`others_cpu`).
``--scaling`` times the engine alone instead, one side per thread count (``parallel=1``,
``2``, … up to the CPUs the script may use), and prints each one's median and its speed-up
over one thread: the same command on a machine with more cores shows how the pass scales.
``--replicas R`` times a server of R replicas all busy at once (``serve_class.sh R``): R
engine processes pass at the same time, each on every CPU (``parallel=True``, the default)
against each on its share, CPUs / R threads (what ``serve_class.sh`` gives them), taking
turns in rounds; it prints each side's median pass and their ratio.

Other programs on the machine slow a two-thread pass down for as long as they run, so
each block also records how much CPU the rest of the machine used meanwhile, and the
script prints a second line per case: the medians over the "quiet" blocks alone, those
in which the rest of the machine used under :data:`QUIET_CPUS` of a CPU (Linux only).

PyTorch is a development tool, never a dependency: the PyTorch side runs in the Python
given by ``--torch-python`` (or the ``TORCH_PYTHON`` environment variable), by default
this one, and is skipped when that Python cannot import torch and transformers. A
virtual environment for it: ``python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip
install torch==2.13.0 transformers``. Figures and how they were taken: docs/benchmarks.md.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_TEXT = (
    "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food. In the end, they just gave me two slices of bread. Their ambiance was just as "
    "good as the food and service."
)
LENGTHS = (128, 256, 510)
#: Runs in a row per side before the other takes its turn. A library's worker threads
#: keep spinning for a while after a call (OpenBLAS's about 0.1 s); timed run by run in
#: turns, the two would fight over the cores. So the sides alternate in blocks, after a
#: pause that lets the other side's threads fall asleep and one untimed run.
BLOCK = 5
SETTLE_S = 0.3
#: A block is quiet when the rest of the machine used less than this many CPUs meanwhile
#: (the tick counts it is read from are 10 ms coarse: about 0.07 CPU over a block).
QUIET_CPUS = 0.15
#: Variables that would make a worker's process other than a plain one.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def numpy_worker(folder, parallel=True):
    import numpy as np

    from engine.bert import run_ids
    from engine.checkpoint import load_minilm
    from engine.parts import cpus

    model = load_minilm(folder)
    how = f"parallel={parallel}" + (f" ({cpus()} CPUs)" if parallel is True else "")
    return lambda ids: run_ids(model, ids, parallel=parallel), f"numpy {np.__version__}, {how}"


def _parallel(kind):
    """The ``parallel`` argument a worker of ``kind`` passes: numpy, serial, threads=N."""
    if kind.startswith("threads="):
        return int(kind.removeprefix("threads="))
    return kind == "numpy"


def torch_worker(folder, threads=None):
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from transformers import BertModel
    from transformers.utils import logging

    logging.disable_progress_bar()

    model = BertModel.from_pretrained(folder, local_files_only=True, attn_implementation="eager")
    model.eval()
    if threads:
        torch.set_num_threads(threads)

    def forward(ids):
        with torch.inference_mode():
            return model(torch.tensor([ids]), output_attentions=True)

    return forward, f"torch {torch.__version__}, {torch.get_num_threads()} threads"


def serve(kind, folder, torch_threads):
    """A worker: read requests (ids, runs) line by line, answer each with its timings."""
    if kind == "torch":
        forward, version = torch_worker(folder, torch_threads)
    else:
        forward, version = numpy_worker(folder, _parallel(kind))
    print(json.dumps(version), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        forward(request["ids"])  # untimed: wakes the side's threads and caches
        timings = []
        for _ in range(request["runs"]):
            start = time.perf_counter()
            forward(request["ids"])
            timings.append(time.perf_counter() - start)
        print(json.dumps(timings), flush=True)


class Worker:
    """One side, in its own process, asked for blocks of timed runs."""

    def __init__(self, python, kind, folder, torch_threads=None):
        env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
        threads = ["--torch-threads", str(torch_threads)] if torch_threads else []
        self.process = subprocess.Popen(
            [python, __file__, "--worker", kind, "--folder", str(folder), *threads],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.version = self._answer()

    def _answer(self):
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker {self.process.args} stopped")
        return json.loads(line)

    def time(self, ids, runs):
        """``runs`` timed passes over ``ids`` after one untimed, in seconds, and others' CPUs.

        The second value is how many CPUs the rest of the machine used meanwhile
        (:func:`others_cpu`; None where /proc cannot tell).
        """
        before = others_cpu(self.process.pid)
        self.ask(ids, runs)
        timings = self._answer()
        return timings, others_cpu(self.process.pid, before)

    def ask(self, ids, runs):
        """Start ``runs`` timed passes; :meth:`timings` waits for them."""
        self.process.stdin.write(json.dumps({"ids": ids, "runs": runs}) + "\n")
        self.process.stdin.flush()

    def timings(self):
        """The timings of the passes :meth:`ask` started, in seconds."""
        return self._answer()

    def close(self):
        """End the worker: it stops when its input does."""
        self.process.stdin.close()
        self.process.wait(timeout=60)


def others_cpu(pid, before=None):
    """How many CPUs the machine used beside the process ``pid`` (or processes) since ``before``.

    Without ``before``, a reading to pass later: the machine's busy ticks, the process's
    and the time. None where /proc cannot tell (not Linux).

    The scheduler shares the CPUs fairly between sessions (autogroups), not threads: a
    program of another session running one busy thread leaves a two-thread pass one CPU
    for its two threads, whose parts then take twice as long (docs/benchmarks.md).
    """
    own = 0
    try:
        with open("/proc/stat") as stat:
            ticks = [int(t) for t in stat.readline().split()[1:]]
        for one in pid if isinstance(pid, list | tuple) else [pid]:
            with open(f"/proc/{one}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            own += int(fields[11]) + int(fields[12])
    except OSError:
        return None
    now = (sum(ticks) - ticks[3] - ticks[4], own, time.monotonic())
    if before is None:
        return now
    hz = os.sysconf("SC_CLK_TCK")
    busy, own, wall = (a - b for a, b in zip(now, before, strict=True))
    return (busy - own) / hz / wall


def torch_python(given):
    """The Python that runs the PyTorch side, or None when none can import it."""
    python = given or os.environ.get("TORCH_PYTHON") or sys.executable
    probe = subprocess.run(
        [python, "-c", "import torch, transformers"], capture_output=True, check=False
    )
    return python if probe.returncode == 0 else None


def cases(tokenizer):
    ids = tokenizer.encode(DEFAULT_TEXT).ids
    body = tokenizer.encode(DEFAULT_TEXT, add_special_tokens=False).ids
    found = {"default passage": ids}
    for n in LENGTHS:
        repeated = (body * (n // len(body) + 1))[: n - 2]
        found[f"{n} tokens"] = [ids[0], *repeated, ids[-1]]
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="timed runs per case and side")
    parser.add_argument("--torch-python", help="a Python that imports torch and transformers")
    parser.add_argument(
        "--torch-threads", type=int, help="PyTorch's threads (default: its own, one per core)"
    )
    parser.add_argument(
        "--serial", action="store_true", help="also time the engine with parallel=False"
    )
    parser.add_argument("--hogs", type=int, default=0, help="processes spinning meanwhile")
    parser.add_argument(
        "--scaling", action="store_true", help="the engine alone on 1, 2, … threads"
    )
    parser.add_argument(
        "--replicas",
        type=int,
        default=0,
        help="R engine processes at once, each on every CPU against each on CPUs / R threads",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        serve(args.worker, args.folder, args.torch_threads)
        return

    from tokenizers import Tokenizer

    from engine.resources import minilm_dir

    folder = minilm_dir()
    tokenizer = Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
    tokenizer.no_padding()  # as the engine reads it: the file pads to 128
    removed = [name for name in THREAD_VARIABLES if name in os.environ]
    print(f"workers' environment: the default ({', '.join(removed) or 'nothing'} removed)")
    if args.replicas:
        replicas(tokenizer, folder, args)
        return
    if args.scaling:
        from engine.parts import cpus

        workers = {
            f"threads={n}": Worker(sys.executable, f"threads={n}", folder)
            for n in range(1, cpus() + 1)
        }
    else:
        workers = {"numpy": Worker(sys.executable, "numpy", folder)}
    if args.serial and not args.scaling:
        workers["serial"] = Worker(sys.executable, "serial", folder)
    python = None if args.scaling else torch_python(args.torch_python)
    if python is None and not args.scaling:
        print("PyTorch comparison skipped: no Python given that imports torch and transformers")
    elif python is not None:
        workers["torch"] = Worker(python, "torch", folder, args.torch_threads)
    for worker in workers.values():
        print(worker.version)
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while 1: pass"], start_new_session=True)
        for _ in range(args.hogs)
    ]
    try:
        compare(workers, tokenizer, args)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    for worker in workers.values():
        worker.close()


def compare(workers, tokenizer, args):
    """Time each side on each case, in alternating blocks; print the medians and ratios."""
    print(f"processes spinning meanwhile: {args.hogs}")
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    if args.scaling:
        header = f"\n{'case':<16} {'tokens':>6}" + "".join(
            f" {side.removeprefix('threads=') + ' thr. ms':>11} {'speed-up':>8}" for side in workers
        )
        print(header)
    else:
        header = f"\n{'case':<16} {'tokens':>6} {'numpy ms':>9} {'torch ms':>9} {'numpy/torch':>11}"
        print(header + (f" {'serial ms':>9} {'serial/numpy':>12}" if args.serial else ""))
    line = _scaling_line if args.scaling else _line
    for name, ids in cases(tokenizer).items():
        timings = {side: [] for side in workers}
        quiet = {side: [] for side in workers}
        others = []
        for block in range(max(args.runs // BLOCK, 1)):  # alternate: load drifts hit both alike
            order = list(workers) if block % 2 == 0 else list(reversed(workers))
            for side in order:
                time.sleep(SETTLE_S)
                found, cpus = workers[side].time(ids, BLOCK)
                timings[side] += found
                if cpus is not None:
                    others.append(cpus)
                    if cpus < QUIET_CPUS:
                        quiet[side] += found
        print(line(name, len(ids), timings), flush=True)
        if others:
            counts = "/".join(str(len(found) // BLOCK) for found in quiet.values())
            print(
                line(f"  quiet {counts}", len(ids), quiet)
                + f"   others' CPUs per block: median {statistics.median(others):.2f},"
                f" max {max(others):.2f}",
                flush=True,
            )
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


def replicas(tokenizer, folder, args):
    """R engine processes passing at once: each on every CPU, against each on CPUs / R."""
    from engine.parts import cpus

    share = max(1, cpus() // args.replicas)
    sides = {
        "every CPU": [Worker(sys.executable, "numpy", folder) for _ in range(args.replicas)],
        f"{share} thread{'s' * (share > 1)}": [
            Worker(sys.executable, f"threads={share}", folder) for _ in range(args.replicas)
        ],
    }
    print(f"{args.replicas} replicas at once, {cpus()} CPUs")
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    names = list(sides)
    print(
        f"\n{'case':<16} {'tokens':>6} {names[0] + ' ms':>13} {names[1] + ' ms':>13} {'ratio':>6}"
    )
    for name, ids in cases(tokenizer).items():
        timings = {side: [] for side in sides}
        quiet = {side: [] for side in sides}
        for block in range(max(args.runs // BLOCK, 1)):
            for side in names if block % 2 == 0 else names[::-1]:
                time.sleep(SETTLE_S)
                pids = [worker.process.pid for worker in sides[side]]
                before = others_cpu(pids)
                for worker in sides[side]:  # every replica at once
                    worker.ask(ids, BLOCK)
                found = [t for worker in sides[side] for t in worker.timings()]
                timings[side] += found
                others = others_cpu(pids, before)
                if others is not None and others < QUIET_CPUS:
                    quiet[side] += found
        blocks = "/".join(str(len(quiet[side]) // BLOCK // args.replicas) for side in names)
        for label, found in ((name, timings), (f"  quiet {blocks}", quiet)):
            ms = [statistics.median(found[side]) * 1e3 if found[side] else None for side in names]
            cells = [f"{m:>13.2f}" if m else f"{'-':>13}" for m in ms]
            ratio = f"{ms[0] / ms[1]:>6.2f}" if all(ms) else f"{'-':>6}"
            print(f"{label:<16} {len(ids):>6} {cells[0]} {cells[1]} {ratio}", flush=True)
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    for workers in sides.values():
        for worker in workers:
            worker.close()


def _scaling_line(name, n, timings):
    """A case's medians in ms on each thread count, and the speed-up over one thread."""
    ms = {side: statistics.median(t) * 1e3 if t else None for side, t in timings.items()}
    one = ms.get("threads=1")
    line = f"{name:<16} {n:>6}"
    for value in ms.values():
        if value is None:
            line += f" {'-':>11} {'-':>8}"
        else:
            line += f" {value:>11.2f} " + (f"{one / value:>7.2f}×" if one else f"{'-':>8}")
    return line


def _line(name, n, timings):
    """A case's medians and ratios in ms, a dash where a side has no timings."""
    ms = {side: statistics.median(t) * 1e3 if t else None for side, t in timings.items()}

    def cell(side, width):
        return f"{ms[side]:>{width}.2f}" if ms.get(side) else f"{'-':>{width}}"

    def ratio(top, bottom, width):
        if ms.get(top) and ms.get(bottom):
            return f"{ms[top] / ms[bottom]:>{width}.2f}"
        return f"{'-':>{width}}"

    line = f"{name:<16} {n:>6} {cell('numpy', 9)} {cell('torch', 9)} {ratio('numpy', 'torch', 11)}"
    if "serial" in timings:
        line += f" {cell('serial', 9)} {ratio('serial', 'numpy', 12)}"
    return line


if __name__ == "__main__":
    main()
