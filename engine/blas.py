"""BLAS on one thread while the engine multiplies matrices: the same bits on any machine.

OpenBLAS shares a matrix product among its threads in ways that change the order of
some sums, so the number of its threads (two by default on a two-core machine, as many
as ``OPENBLAS_NUM_THREADS`` says, one in a process kept to one CPU) would change the
engine's last bits (measured in docs/benchmarks.md). The engine's functions that multiply
matrices are decorated with :func:`one_thread`: BLAS keeps one thread while any of them
runs, set with ``threadpoolctl`` and put back as it was when the last one returns. Nothing
else of the process changes: no environment variable, no CPU affinity, no thread started.

OpenBLAS (pthreads, as NumPy's wheels build it) keeps its thread count in one variable
for the whole process, so the limit holds in every thread; the engine's own worker
threads (:mod:`engine.parts`) run their parts of a layer inside a decorated call, so they
count among the callers and BLAS gets its threads back only when every part is done.
"""

from __future__ import annotations

import functools
import threading

from threadpoolctl import OpenBLASController, ThreadpoolController

__all__ = ["one_thread"]

_lock = threading.Lock()
_inside = threading.local()  # whether this thread is already in a decorated call
_limit = {"controller": None, "callers": 0, "previous": None}


def _as_any_thread(change):
    """Make a change to OpenBLAS's threads from whichever thread holds ``_lock``.

    threadpoolctl lets only the first thread that sets OpenBLAS's threads set them again
    (others are ignored, silently) until that thread lets go; the first caller of a pass
    may not be the last, so each change lets go before and after.
    """
    OpenBLASController.clear_controlling_thread(force=True)
    try:
        return change()
    finally:
        OpenBLASController.clear_controlling_thread(force=True)


def _enter():
    with _lock:
        if _limit["callers"] == 0:
            if _limit["controller"] is None:  # finds the BLAS libraries once, on first use
                _limit["controller"] = ThreadpoolController()
            limit = _limit["controller"].limit
            _limit["previous"] = _as_any_thread(lambda: limit(limits=1, user_api="blas"))
        _limit["callers"] += 1


def _leave():
    with _lock:
        _limit["callers"] -= 1
        if _limit["callers"] == 0:  # the last caller out restores what the process had
            _as_any_thread(_limit["previous"].restore_original_limits)


def one_thread(function):
    """Run ``function`` with BLAS on one thread (see the module's docstring).

    Nested calls cost one attribute lookup; the outermost costs about 7 µs.
    """

    @functools.wraps(function)
    def with_one_blas_thread(*args, **kwargs):
        if getattr(_inside, "active", False):
            return function(*args, **kwargs)
        _enter()
        _inside.active = True
        try:
            return function(*args, **kwargs)
        finally:
            _inside.active = False
            _leave()

    return with_one_blas_thread
