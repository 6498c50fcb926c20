r"""A layer's two sums in fixed parts, the second part on a worker thread: the speed trick.

Multi-head attention is a sum over heads, and the feed-forward block a sum over its
hidden features (Vaswani et al. 2017, section 3.2.2 and eq. 2):

.. math:: \operatorname{Concat}(\text{head}_1, \dots, \text{head}_h)\,W^O
          = \sum_i \text{head}_i\,W^O_i,\qquad
          f(xW_1 + b_1)\,W_2 = \sum_j f(xW_{1,:j} + b_{1,j})\,W_{2,j:}

From :data:`PARALLEL_MIN_TOKENS` tokens on, an encoder layer computes each sum as two
partial sums (heads 0…h/2-1 and the rest; the first half of the hidden features and the
rest), added in that order. NumPy lets go of the GIL inside its loops and BLAS calls, so
a worker thread can compute the second part while the caller computes the first.

The split is a constant of the code, a function of the number of tokens alone: it rounds
differently from one sum, but the same on any machine, whoever computes each part and
however busy the CPUs are. The thread changes the time, never a number:

- one worker thread at most, shared by every caller, made on the first pass that splits
  (importing the engine starts none);
- work stealing: the caller hands the second part to the worker, computes the first, and
  takes the second back if the worker has not started it (busy with another caller, or
  not given a core), so a pass waits only for a part already under way;
- ``parallel=False`` computes every part on the caller, in the same order: the same bits;
- BLAS keeps one thread in the worker too: OpenBLAS's thread count is one setting for the
  whole process, and the worker's calls count among :mod:`engine.blas`'s callers.

What the split buys at each length is measured in docs/benchmarks.md.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from engine import blas

__all__ = ["PARALLEL_MIN_TOKENS", "Joined", "in_parts", "parts_for", "share"]

#: Below this many tokens a layer is one part: handing a part to the thread costs more
#: than it saves (docs/benchmarks.md).
PARALLEL_MIN_TOKENS = 128

_lock = threading.Lock()
_worker = {"pool": None, "pid": None}


def parts_for(n):
    """How many parts each of a layer's two sums has over ``n`` tokens (of no machine)."""
    return 2 if n >= PARALLEL_MIN_TOKENS else 1


def share(size, parts, part):
    """The ``part``-th of ``parts`` contiguous slices of ``range(size)``."""
    return slice(size * part // parts, size * (part + 1) // parts)


def _pool():
    """The one worker thread, made on first use (again in a forked child, which has none)."""
    with _lock:
        if _worker["pid"] != os.getpid():
            _worker["pool"] = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine-part")
            _worker["pid"] = os.getpid()
        return _worker["pool"]


@blas.one_thread
def _on_worker(work, part):
    return work(part)


def in_parts(work, parts, parallel=True):
    """``work(0) + work(1) + … + work(parts - 1)``, summed in that order.

    With ``parallel``, parts 1… go to the worker thread while the caller computes part 0;
    a part the worker has not started by then, the caller computes itself.

    Parameters
    ----------
    work : callable, part index -> ndarray; every part of the same shape, each a new array
    parts : int, at least 1
    parallel : bool

    Returns
    -------
    ndarray, the sum
    """
    handed = [_pool().submit(_on_worker, work, p) for p in range(1, parts)] if parallel else []
    total = work(0)
    for part in range(1, parts):
        if not handed or handed[part - 1].cancel():  # not started: the caller takes it back
            total += work(part)
        else:
            total += handed[part - 1].result()
    return total


class Joined:
    """Whole arrays that the parts fill side by side, each with its own piece.

    Each part copies its pieces in as it finishes, so the copies run on both threads
    instead of on the caller after the sum, while the worker waits for the next part.
    With one part the piece is the array itself: no copy.
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
