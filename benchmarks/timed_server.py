"""``streamlit run``, with every engine pass timed inside the server (for bench_server_pass.py).

Run as ``python benchmarks/timed_server.py run app/main.py [options]``: it wraps
:func:`engine.bert.run_ids` and then hands over to Streamlit's command line, so the app
runs as it does under ``streamlit run``. For each pass it appends one JSON line to the file
named by ``TIMED_SERVER_LOG``: the thread, the tokens, the wall time, the thread's time on
a CPU and waiting on a run queue (``/proc/self/task/TID/schedstat``), its CPU and kernel
time, minor page faults and context switches (``getrusage(RUSAGE_THREAD)``), the whole
process's CPU time and faults, and the CPU time taken meanwhile by the processes that
descend from ``TIMED_SERVER_PARENT`` other than this one (the benchmark's Chromium).
What is left of the wall time when the time on a CPU and on a run queue are taken away is
time the thread could not run: waiting for a lock (the GIL, the engine's parts) or
stopped by a debugger or a sampling profiler.
"""

import json
import os
import resource
import sys
import threading
import time

# app/main.py sets these before NumPy loads; here NumPy loads first, with the engine.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

from engine import bert  # noqa: E402

LOG_VARIABLE, PARENT_VARIABLE = "TIMED_SERVER_LOG", "TIMED_SERVER_PARENT"
_untimed = bert.run_ids
_write_lock = threading.Lock()


def scheduled():
    """The calling thread's time on a CPU and waiting on a run queue so far, in ms."""
    with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as file:
        on_cpu, waiting, _ = file.read().split()
    return int(on_cpu) / 1e6, int(waiting) / 1e6


def descendants_cpu(parent):
    """CPU ms used so far by the processes descending from ``parent``, this one left out."""
    parents, ticks = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        parents[int(name)] = int(fields[1])
        ticks[int(name)] = int(fields[11]) + int(fields[12])
    total = 0
    for pid, used in ticks.items():
        ancestor = pid
        while ancestor in parents and ancestor not in (parent, 0, 1):
            ancestor = parents[ancestor]
        if ancestor == parent and pid != os.getpid():
            total += used
    return total * 1000 / os.sysconf("SC_CLK_TCK")


def timed_run_ids(model, ids, *args, **kwargs):
    parent = int(os.environ.get(PARENT_VARIABLE, "0"))
    others = descendants_cpu(parent) if parent else 0.0
    thread, process = (
        resource.getrusage(who) for who in (resource.RUSAGE_THREAD, resource.RUSAGE_SELF)
    )
    sched = scheduled()
    cpu, process_cpu, start = time.thread_time(), time.process_time(), time.perf_counter()
    try:
        return _untimed(model, ids, *args, **kwargs)
    finally:
        wall = time.perf_counter() - start
        cpu, process_cpu = time.thread_time() - cpu, time.process_time() - process_cpu
        on_cpu, waiting = (after - before for after, before in zip(scheduled(), sched, strict=True))
        thread_after, process_after = (
            resource.getrusage(who) for who in (resource.RUSAGE_THREAD, resource.RUSAGE_SELF)
        )
        row = {
            "tokens": len(ids),
            "thread": threading.current_thread().name,
            "wall": wall * 1000,
            "on_cpu": on_cpu,
            "run_queue": waiting,
            "cpu": cpu * 1000,
            "kernel": (thread_after.ru_stime - thread.ru_stime) * 1000,
            "faults": thread_after.ru_minflt - thread.ru_minflt,
            "voluntary_switches": thread_after.ru_nvcsw - thread.ru_nvcsw,
            "involuntary_switches": thread_after.ru_nivcsw - thread.ru_nivcsw,
            "process_cpu": process_cpu * 1000,
            "process_faults": process_after.ru_minflt - process.ru_minflt,
            "others_cpu": (descendants_cpu(parent) - others) if parent else None,
        }
        with _write_lock, open(os.environ[LOG_VARIABLE], "a") as log:
            log.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    from streamlit.web import cli

    bert.run_ids = timed_run_ids  # bert.run calls it by its module's name: every pass is timed

    sys.argv = ["streamlit", *sys.argv[1:]]
    sys.exit(cli.main())
