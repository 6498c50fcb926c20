r"""A layer's two sums in a fixed number of parts, run on every core: the speed trick.

Multi-head attention is a sum over heads, and the feed-forward block a sum over its
hidden features (Vaswani et al. 2017, section 3.2.2 and eq. 2):

.. math:: \operatorname{Concat}(\text{head}_1, \dots, \text{head}_h)\,W^O
          = \sum_i \text{head}_i\,W^O_i,\qquad
          f(xW_1 + b_1)\,W_2 = \sum_j f(xW_{1,:j} + b_{1,j})\,W_{2,j:}

An encoder layer computes each sum as :func:`parts_for` partial sums (groups of heads;
groups of hidden features), added in the order of the parts: twelve from 96 tokens on.
NumPy lets go of the GIL inside its loops and BLAS calls, so other threads can compute
parts while the caller computes one.

The split is a constant of the code, a function of the number of tokens alone: it rounds
differently from one sum, but the same on any machine, whoever computes each part and
however many threads there are. The threads change the time, never a number:

- the caller and up to ``threads - 1`` of the engine's worker threads take the parts not
  yet started one at a time, in order, until none is left; each part is computed whole by
  one thread, BLAS on one thread (:mod:`engine.blas`); once no part is left to start, the
  caller adds them up in their order, each as soon as it is done. A worker busy with
  another caller's parts, or given no core, leaves its share to those that are free: a
  pass waits only for parts under way;
- ``threads`` is the ``parallel`` argument: True, the CPUs the process may use
  (:func:`cpus`, ``os.sched_getaffinity``; never the machine's load), an int, that many,
  False (or 1), every part on the caller, in the same order: the same bits;
- the worker threads are made on the first pass that needs them (importing the engine
  starts none), as many as the most any pass has asked for, shared by every caller; idle,
  they sleep; no CPU affinity is set; a forked child starts with none and makes its own;
- BLAS keeps one thread in the workers too: OpenBLAS's thread count is one setting for the
  whole process, and a worker's parts count among :mod:`engine.blas`'s callers.

What the split buys at each length and thread count is measured in docs/benchmarks.md.
"""

from __future__ import annotations

import os
import queue
import threading

import numpy as np

from engine import blas

__all__ = [
    "PARALLEL_MIN_TOKENS",
    "PARTS",
    "Joined",
    "cpus",
    "in_parts",
    "parts_for",
    "share",
    "threads_for",
]

#: Below this many tokens a layer is one part: handing a part to another thread, and two
#: threads taking turns with the GIL over a part's small NumPy calls, cost more than the
#: second core saves (docs/benchmarks.md, "the number of parts").
PARALLEL_MIN_TOKENS = 96
#: From there on, each of a layer's sums has this many parts (the attention's at most the
#: layer's heads): a constant of the code, so that the bits are those of no machine; parts
#: enough for twelve cores, and small enough that a thread slowed by the others (the GIL,
#: another program) leaves the rest of its share to them (docs/benchmarks.md).
PARTS = 12

_lock = threading.Lock()
_pool = {"pid": None, "tickets": None, "workers": 0}


def parts_for(n):
    """How many parts each of a layer's two sums has over ``n`` tokens (of no machine)."""
    return PARTS if n >= PARALLEL_MIN_TOKENS else 1


def share(size, parts, part):
    """The ``part``-th of ``parts`` contiguous slices of ``range(size)``."""
    return slice(size * part // parts, size * (part + 1) // parts)


def cpus():
    """How many CPUs this process may run on (its affinity), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(len(os.sched_getaffinity(0)), 1)
    return os.cpu_count() or 1


def threads_for(parallel, parts):
    """How many threads compute ``parts`` parts: ``parallel`` as :func:`in_parts` takes it."""
    if isinstance(parallel, bool | np.bool_):
        wanted = cpus() if parallel else 1
    else:
        wanted = int(parallel)
        if wanted < 1:
            raise ValueError(f"parallel must be True, False or a thread count >= 1, got {parallel}")
    return min(wanted, parts)


class _Job:
    """One call's parts, taken in order by whichever thread asks next."""

    def __init__(self, work, parts):
        self.work = work
        self.parts = parts
        self._results = [None] * parts  # each part's array, or what it raised
        self._taken = 0
        self._lock = threading.Lock()
        self._finished = threading.Condition(self._lock)

    def take(self):
        """The next part no thread has started, or None."""
        with self._lock:
            if self._taken == self.parts:
                return None
            self._taken += 1
            return self._taken - 1

    def run(self, part):
        """Compute ``part``, then the parts not yet started, until none is left."""
        while part is not None:
            try:
                result = self.work(part)
            except BaseException as error:  # handed to the caller, which raises it
                result = error
            with self._finished:
                self._results[part] = result
                self._finished.notify_all()
            part = self.take()

    def result(self, part):
        """Part ``part``'s array, once computed (or what it raised)."""
        with self._finished:
            self._finished.wait_for(lambda: self._results[part] is not None)
        return self._results[part]

    def total(self):
        """The parts' sum, in order, each added as soon as it and those before are done."""
        total, error = None, None
        for part in range(self.parts):
            term = self.result(part)
            if isinstance(term, BaseException):
                error = error or term
            elif total is None:
                total = term
            elif error is None:
                total += term
        if error is not None:  # raised once every part has finished
            raise error
        return total


@blas.one_thread
def _run_on_worker(job, part):
    job.run(part)


def _serve(tickets):
    while True:
        job = tickets.get()
        part = job.take()  # None: the other threads took every part already
        if part is not None:
            _run_on_worker(job, part)


def _after_fork_in_child():
    global _lock
    _lock = threading.Lock()  # another thread may have held it when the process forked


def _tickets(workers):
    """The queue the worker threads wait on, with at least ``workers`` of them."""
    with _lock:
        if _pool["pid"] != os.getpid():  # first use in this process: a forked child has none
            if _pool["pid"] is None and hasattr(os, "register_at_fork"):
                os.register_at_fork(after_in_child=_after_fork_in_child)
            _pool.update(pid=os.getpid(), tickets=queue.SimpleQueue(), workers=0)
        while _pool["workers"] < workers:
            _pool["workers"] += 1
            name = f"engine-part_{_pool['workers'] - 1}"
            worker = threading.Thread(target=_serve, args=(_pool["tickets"],), name=name)
            worker.daemon = True  # asleep in get() when the interpreter exits
            worker.start()
        return _pool["tickets"]


def in_parts(work, parts, parallel=True):
    """``work(0) + work(1) + … + work(parts - 1)``, summed in that order.

    With ``parallel``, the caller and up to ``threads - 1`` worker threads
    (:func:`threads_for`) take the parts in turn; the sum is the same either way.

    Parameters
    ----------
    work : callable, part index -> ndarray; every part of the same shape, each a new array
    parts : int, at least 1
    parallel : bool or int
        True: as many threads as the process has CPUs (:func:`cpus`); an int, that many;
        False, or 1: every part on the caller.

    Returns
    -------
    ndarray, the sum
    """
    threads = threads_for(parallel, parts)
    if threads == 1:
        total = work(0)
        for part in range(1, parts):
            total += work(part)
        return total
    job = _Job(work, parts)
    first = job.take()  # part 0 is the caller's: it is awake already
    tickets = _tickets(threads - 1)
    for _ in range(threads - 1):
        tickets.put(job)
    job.run(first)
    return job.total()


class Joined:
    """Whole arrays that the parts fill side by side, each with its own piece.

    Each part copies its pieces in as it finishes, so the copies run on every thread
    instead of on the caller after the sum. With one part the piece is the array itself:
    no copy.
    """

    def __init__(self, parts):
        self.parts = parts
        self.arrays = {}
        self._lock = threading.Lock()

    def put(self, name, piece, shape, where):
        """Write ``piece`` at ``where`` (an index) of the whole array ``name`` of ``shape``."""
        if self.parts == 1:
            self.arrays[name] = piece
            return
        with self._lock:  # the first part to get here makes the array
            if name not in self.arrays:
                self.arrays[name] = np.empty(shape, dtype=piece.dtype)
        self.arrays[name][where] = piece
