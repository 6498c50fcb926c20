"""The engine's threads in this server: every CPU, unless the command line set a count.

``attention-explorer --threads N`` (:mod:`app.cli`) and ``scripts/serve_class.sh`` (the
machine's CPUs shared among its replicas, so that replicas × threads ≤ CPUs) set
:data:`THREADS_VARIABLE`; each engine call of the app that computes a layer in parts passes
:func:`parallel` on as its ``parallel`` argument. The engine itself reads no environment,
and the count changes its time, never a number (:mod:`engine.parts`). Why a server of
several replicas wants it: docs/decisions.md.
"""

from __future__ import annotations

import os

__all__ = ["THREADS_VARIABLE", "parallel"]

THREADS_VARIABLE = "ATTENTION_EXPLORER_THREADS"


def parallel():
    """The ``parallel`` argument of the app's engine calls: the count set, else True (every CPU).

    A value that is not a whole number of at least 1 counts as unset, as the cache budget's
    does (:func:`app.data.cache.budget`).
    """
    raw = os.environ.get(THREADS_VARIABLE, "").strip()
    try:
        threads = int(raw)
    except ValueError:
        return True
    return threads if threads >= 1 else True
