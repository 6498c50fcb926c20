"""The engine's pass inside the Streamlit server against the same pass in a plain process.

Serves the app through ``benchmarks/timed_server.py`` (every pass of the server timed on
its own thread: wall, time on a CPU, time waiting on a run queue, faults), opens
``/attention?weights=smollm2`` (or ``/pretrained``) in headless Chromium and, in each
round and for 45 and 256 tokens, runs the pass in this process's main thread on a text of
that length, then types a new text of that length into the page, as
``bench_pretrained.py`` does: the plain pass and the server's are measured side by side,
under the same load. It prints the medians of both and their ratios, and what the page
took (new text typed → every chart drawn) over the plain pass::

    python benchmarks/bench_server_pass.py [--rounds 4] [--page attention]
                                           [--py-spy blocking|nonblocking]

``--py-spy`` samples the server at 1 kHz with py-spy while the rounds run (py-spy's
default, ``blocking``, stops the process for each sample); ``--py-spy-raw FILE`` keeps
its samples (py-spy's ``raw`` format, thread names included). ``--threads`` instead times the
pass in plain processes only, each on its main thread and on a new thread per pass (as
Streamlit runs each script run), three kinds alternating: glibc's defaults (``default``);
Streamlit and :mod:`app.data.cache` imported first, as ``app/main.py`` does, which sets
``mallopt(M_MMAP_THRESHOLD, 4 MB)`` (``app``); and that ``mallopt`` made before anything
else (``mallopt``), which leaves glibc's trim threshold at its initial 128 KB where the
imports before it had raised it.
"""

import argparse
import contextlib
import ctypes
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_pretrained import LAST_WORDS, open_warm, texts, type_text  # noqa: E402
from harness import (  # noqa: E402
    chromium,
    free_port,
    stop,
    wait_healthy,
)
from timed_server import LOG_VARIABLE, PARENT_VARIABLE, scheduled  # noqa: E402

from engine import bert, checkpoint  # noqa: E402

LENGTHS = (45, 256)
COLUMNS = ("wall", "on_cpu", "run_queue", "not_runnable", "kernel", "faults")


def timed_pass(model, text):
    """:func:`engine.bert.run` on this thread, timed as ``timed_server.py`` times it (ms)."""
    before = resource.getrusage(resource.RUSAGE_THREAD)
    sched = scheduled()
    start = time.perf_counter()
    bert.run(model, text)
    wall = (time.perf_counter() - start) * 1000
    on_cpu, waiting = (after - before for after, before in zip(scheduled(), sched, strict=True))
    after = resource.getrusage(resource.RUSAGE_THREAD)
    return {
        "wall": wall,
        "on_cpu": on_cpu,
        "run_queue": waiting,
        "kernel": (after.ru_stime - before.ru_stime) * 1000,
        "faults": after.ru_minflt - before.ru_minflt,
    }


def not_runnable(row):
    """The wall time neither on a CPU nor waiting for one: a lock, or stopped."""
    return {**row, "not_runnable": row["wall"] - row["on_cpu"] - row["run_queue"]}


def medians(rows):
    return {key: statistics.median(not_runnable(row)[key] for row in rows) for key in COLUMNS}


@contextlib.contextmanager
def timed_server(log, py_spy):
    """The app served by ``timed_server.py``, its passes logged to ``log``; yields its URL."""
    port = free_port()
    command = [
        sys.executable, str(ROOT / "benchmarks" / "timed_server.py"), "run", "app/main.py",
        "--server.headless", "true", "--server.port", str(port),
        "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
    ]  # fmt: skip
    env = dict(os.environ, **{LOG_VARIABLE: str(log), PARENT_VARIABLE: str(os.getpid())})
    url = f"http://localhost:{port}"
    with tempfile.TemporaryFile() as output:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=output, stderr=output)

        def printed():
            output.seek(0)
            return output.read().decode(errors="replace")

        try:
            wait_healthy(url, server, 120, printed)
            yield url, server.pid
        finally:
            stop(server, timeout=15)


@contextlib.contextmanager
def sampled(pid, mode, raw=None):
    """py-spy recording process ``pid`` at 1 kHz (``mode``: blocking, nonblocking or None)."""
    if mode is None:
        yield
        return
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    line = [spy, "record", "-r", "1000", "-p", str(pid), "-o", raw or os.devnull, "-f", "raw"]
    line.append("--threads")
    sampler = subprocess.Popen(
        line + (["--nonblocking"] if mode == "nonblocking" else []),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1)  # attached
    try:
        yield
    finally:
        sampler.send_signal(signal.SIGINT)
        sampler.wait(timeout=60)


def in_server(args):
    model = checkpoint.load("smollm2")
    path = f"/{args.page}?{'model' if args.page == 'pretrained' else 'weights'}=smollm2"
    plain = {n: [] for n in LENGTHS}
    pages = {n: [] for n in LENGTHS}
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        log = Path(folder) / "passes.jsonl"
        url, pid = stack.enter_context(timed_server(log, args.py_spy))
        _, page = open_warm(stack.enter_context(chromium()), url + path, model)
        warm = len(log.read_text().splitlines())
        with sampled(pid, args.py_spy, args.py_spy_raw):
            for round_ in range(args.rounds):
                for n in LENGTHS:
                    plain[n].append(timed_pass(model, texts(n, LAST_WORDS[-1 - round_], model)))
                    time.sleep(0.3)
                    pages[n].append(type_text(page, texts(n, LAST_WORDS[round_], model))[1])
                    time.sleep(0.5)
        rows = [json.loads(line) for line in log.read_text().splitlines()[warm:]]
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"\n{path}, {args.rounds} rounds, py-spy: {args.py_spy or 'off'}; medians, ms")
    print(f"{'':>16}" + "".join(f"{key:>13}" for key in COLUMNS) + f"{'others CPU':>12}")
    for n in LENGTHS:
        server = [row for row in rows if row["tokens"] == n]
        if len(server) != args.rounds:
            print(f"  {n} tokens: {len(server)} passes in the server, {args.rounds} expected")
        ours, theirs = medians(server), medians(plain[n])
        others = statistics.median(row["others_cpu"] for row in server)
        for name, values in ((f"{n} server", ours), (f"{n} plain", theirs)):
            end = f"{others:>12.0f}" if name.endswith("server") else ""
            print(f"{name:>16}" + "".join(f"{values[k]:>13.1f}" for k in COLUMNS) + end)
        ratio = {k: ours[k] / theirs[k] for k in ("wall", "on_cpu")}
        drawn = statistics.median(pages[n])
        print(
            f"{'':>16} server / plain: wall {ratio['wall']:.2f}, on a CPU {ratio['on_cpu']:.2f};"
            f" page drawn {drawn:.0f} ms = {drawn / theirs['wall']:.2f} × the plain pass"
        )


def on_thread(model, text, rows):
    rows.append(timed_pass(model, text))


def worker(mode, rounds):
    """One plain process: the pass on the main thread and on a new thread, alternating."""
    if mode == "mallopt":
        ctypes.CDLL("libc.so.6").mallopt(-3, 4 * 1024 * 1024)  # as app.data.cache does
    elif mode == "app":
        import streamlit  # noqa: F401  # as app/main.py imports them, Streamlit first

        from app.data import cache  # noqa: F401
    model = checkpoint.load("smollm2")
    for n in LENGTHS:
        timed = {"main": [], "thread": []}
        for round_ in range(rounds):
            text = texts(n, LAST_WORDS[round_ % len(LAST_WORDS)], model)
            timed["main"].append(timed_pass(model, text))
            thread = threading.Thread(target=on_thread, args=(model, text, timed["thread"]))
            thread.start()
            thread.join()
        for where, rows in timed.items():
            values = medians(rows)
            print(f"{mode:>8} {n:>4} {where:>7}" + "".join(f"{values[k]:>13.1f}" for k in COLUMNS))


def in_plain_processes(args):
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(f"{'malloc':>8} {'n':>4} {'thread':>7}" + "".join(f"{key:>13}" for key in COLUMNS))
    for _ in range(2):
        for mode in ("default", "app", "mallopt"):
            line = [sys.executable, __file__, "--worker", mode, "--rounds", str(args.rounds)]
            subprocess.run(line, check=True)
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--page", choices=("pretrained", "attention"), default="attention")
    parser.add_argument("--py-spy", choices=("blocking", "nonblocking"))
    parser.add_argument("--py-spy-raw", metavar="FILE", help="where py-spy's samples go")
    parser.add_argument("--threads", action="store_true", help="plain processes only")
    parser.add_argument("--worker", choices=("default", "app", "mallopt"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.rounds)
    elif args.threads:
        in_plain_processes(args)
    else:
        in_server(args)


if __name__ == "__main__":
    main()
