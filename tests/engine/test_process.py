"""The engine in any Python process: importing it changes nothing, and its numbers do not
depend on the machine (CPUs, BLAS threads, threads calling it).

Each check runs in a fresh interpreter, so what it sees is what a user's script, a
notebook or the server would see.
"""

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from engine import blas
from engine.resources import minilm_dir

DIGESTS = Path(__file__).parent / "engine_digests.py"
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

needs_minilm = pytest.mark.skipif(minilm_dir() is None, reason="all-MiniLM-L6-v2 is not installed")


def _python(args, blas_threads=None, prefix=()):
    """Run Python in a plain environment; ``blas_threads`` sets OPENBLAS_NUM_THREADS;
    ``prefix`` is a command that runs it (``taskset``)."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    if blas_threads is not None:
        env["OPENBLAS_NUM_THREADS"] = str(blas_threads)
    result = subprocess.run(
        [*prefix, sys.executable, *args], capture_output=True, text=True, env=env, timeout=600
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


# What importing and running the engine leaves behind: nothing

PROBE = """
import json, os, sys, threading
import numpy as np
from threadpoolctl import threadpool_info

def state():
    return {
        "environ": dict(os.environ),
        "affinity": sorted(os.sched_getaffinity(0)),
        "python threads": threading.active_count(),
        "os threads": len(os.listdir("/proc/self/task")),
        "blas threads": [lib["num_threads"] for lib in threadpool_info()],
    }

before = state()
import engine, engine.analysis, engine.bert, engine.checkpoint, engine.layers, engine.seq2seq
imported = state()
after_run = None
if sys.argv[1] != "import":
    from engine import bert, checkpoint, run_toy
    model = checkpoint.load_minilm()
    bert.run(model, "The restaurant refused because it only cooks.")
    run_toy(["a", "b", "c"], 8, 2, seed=0)
    if sys.argv[1] == "long":  # 296 tokens: each layer in parts, on sys.argv[2] threads
        parallel = json.loads(sys.argv[2])
        text = "Every token looks at every other. " * 42
        for _ in range(3):
            bert.run(model, text, parallel=parallel)
    after_run = state()
names = sorted(thread.name for thread in threading.enumerate())
print(json.dumps({"before": before, "imported": imported, "after run": after_run, "names": names}))
"""

needs_procfs = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir() or not hasattr(os, "sched_getaffinity"),
    reason="counts threads in /proc and reads the CPU affinity",
)


@needs_procfs
def test_importing_the_engine_changes_nothing_in_the_process():
    found = json.loads(_python(["-c", PROBE, "import"]))
    assert found["imported"] == found["before"]


@needs_procfs
@needs_minilm
@pytest.mark.parametrize("blas_threads", [None, 1, 3])
def test_a_pass_leaves_no_thread_no_affinity_and_blas_as_it_found_them(blas_threads):
    found = json.loads(_python(["-c", PROBE, "run"], blas_threads))
    assert found["after run"] == found["before"]


@needs_procfs
@needs_minilm
@pytest.mark.parametrize("parallel", [True, 3])
def test_long_passes_leave_their_worker_threads_asleep_and_nothing_else(parallel):
    """Passes of 128 tokens or more hand parts of each layer to the engine's worker threads,
    made then, one fewer than the threads asked for (True: the CPUs); they stay, asleep,
    for the next passes, and nothing else changes."""
    found = json.loads(_python(["-c", PROBE, "long", json.dumps(parallel)]))
    before, after = found["before"], found["after run"]
    workers = (len(os.sched_getaffinity(0)) if parallel is True else parallel) - 1
    assert after["python threads"] == before["python threads"] + workers
    assert after["os threads"] == before["os threads"] + workers
    for unchanged in ("environ", "affinity", "blas threads"):
        assert after[unchanged] == before[unchanged]
    expected = [f"engine-part_{i}" for i in range(workers)]
    assert [name for name in found["names"] if name != "MainThread"] == expected


@needs_procfs
@needs_minilm
def test_long_passes_without_parallel_start_no_thread():
    found = json.loads(_python(["-c", PROBE, "long", "false"]))
    assert found["after run"] == found["before"]


FORKED = """
import os, sys
import numpy as np
from engine import bert, checkpoint
model = checkpoint.load_minilm()
text = "Every token looks at every other. " * 42
parent = bert.run(model, text, parallel=2).last_hidden_state  # the workers exist now
pid = os.fork()
if pid == 0:  # the child has none of the parent's threads: it makes its own
    child = bert.run(model, text, parallel=2).last_hidden_state
    os._exit(0 if np.array_equal(child, parent) else 3)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


@needs_minilm
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_runs_passes_on_threads_of_its_own():
    assert _python(["-c", FORKED]).strip() == "0"


# The same bits on any machine


@pytest.fixture(scope="module")
def reference_digests():
    return _python([str(DIGESTS)])


def _taskset():
    if shutil.which("taskset") is None or not hasattr(os, "sched_getaffinity"):
        pytest.skip("needs taskset")
    return ["taskset", "-c", str(min(os.sched_getaffinity(0)))]


@needs_minilm
@pytest.mark.parametrize(
    ("blas_threads", "callers", "parallel", "one_cpu"),
    [
        (1, 1, 1, False),  # BLAS on one thread, as app/main.py sets it; one engine thread
        (None, 1, 2, False),  # BLAS's default (one thread per core); two engine threads
        (None, 1, 3, False),  # three engine threads, more than the cores
        (4, 1, 4, False),  # more BLAS threads than cores, four engine threads
        (None, 2, 2, False),  # two callers at once, two engine threads each
        (None, 1, None, True),  # a process kept to one CPU (taskset): one engine thread
        (None, 1, 2, True),  # two engine threads on that one CPU
        (None, 1, "serial", False),  # parallel=False: every part on the caller
        (None, 2, "serial", True),  # the same, two callers on one CPU
    ],
)
def test_every_array_is_the_same_whatever_the_threads_and_cpus(
    reference_digests, blas_threads, callers, parallel, one_cpu
):
    prefix = _taskset() if one_cpu else []
    args = [str(DIGESTS), "--threads", str(callers)]
    if parallel == "serial":
        args.append("--serial")
    elif parallel is not None:
        args += ["--parallel", str(parallel)]
    found = _python(args, blas_threads, prefix)
    assert found.count(":") == 12  # every result of the workload was digested
    assert found == reference_digests


# BLAS on one thread while the engine computes, however many callers overlap


def _blas_threads():
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


def test_blas_keeps_one_thread_until_the_last_of_overlapping_calls_returns():
    """Two threads' calls overlap: the first to return must not give BLAS its threads back
    while the second still computes, and the last restores what the process had."""
    if not _blas_threads():
        pytest.skip("no BLAS library found by threadpoolctl")
    first_inside, second_inside, first_done = (threading.Event() for _ in range(3))
    seen = {}

    @blas.one_thread
    def first():
        seen["first"] = _blas_threads()
        first_inside.set()
        second_inside.wait(timeout=30)

    @blas.one_thread
    def second():
        second_inside.set()
        first_done.wait(timeout=30)
        seen["second, after the first returned"] = _blas_threads()

    with threadpool_limits(limits=3, user_api="blas"):
        worker = threading.Thread(target=second)
        first_thread = threading.Thread(target=first)
        first_thread.start()
        first_inside.wait(timeout=30)
        worker.start()
        first_thread.join()
        first_done.set()
        worker.join()
        after = _blas_threads()
    assert seen == {"first": {1}, "second, after the first returned": {1}}
    assert after == {3}


def test_blas_keeps_one_thread_in_a_thread_after_another_thread_set_it():
    """threadpoolctl ignores, silently, a thread other than the first that set OpenBLAS's
    threads; the server's sessions run in threads of their own, one after another."""
    if not _blas_threads():
        pytest.skip("no BLAS library found by threadpoolctl")
    seen = []

    @blas.one_thread
    def record():
        seen.append(_blas_threads())

    with threadpool_limits(limits=2, user_api="blas"):
        record()  # in this thread first
        for _ in range(2):
            worker = threading.Thread(target=record)
            worker.start()
            worker.join()
        assert _blas_threads() == {2}
    assert seen == [{1}, {1}, {1}]

    def limit_elsewhere():  # and no thread is left holding threadpoolctl's control
        with threadpool_limits(limits=1, user_api="blas"):
            seen.append(_blas_threads())

    worker = threading.Thread(target=limit_elsewhere)
    worker.start()
    worker.join()
    assert seen[-1] == {1}


def test_a_failing_call_gives_blas_its_threads_back():
    if not _blas_threads():
        pytest.skip("no BLAS library found by threadpoolctl")

    @blas.one_thread
    def fails():
        raise RuntimeError("inside")

    with threadpool_limits(limits=2, user_api="blas"):
        with pytest.raises(RuntimeError, match="inside"):
            fails()
        assert _blas_threads() == {2}
