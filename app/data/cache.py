"""One memory budget for every cached result that grows with what users type.

Streamlit's caches bound entries, not bytes: 32 toy runs at 500 tokens and 16 heads
hold about 5 GB. Here every large cached result (toy and MiniLM runs, layer runs,
saturation curves, scale frames, rollouts, summaries, vision runs, uploads …) goes
into one least-recently-used store shared by the whole server process, which drops
the oldest results once their arrays together pass :func:`budget` bytes. A dropped
result is computed again when a page asks for it.

The budget is the environment variable :data:`BUDGET_VARIABLE`, in MB (default
:data:`DEFAULT_BUDGET_MB`); ``attention-explorer --cache-mb N`` sets it. Small caches of
fixed size (the model's weights, the book's exercise, tokenizations) stay Streamlit's.

Cached values are shared by every session, so their arrays are made read-only. A result
is sized as the bytes of the NumPy arrays (and bytes/str) reachable through tuples,
NamedTuples, lists, mappings and dataclasses, each array counted once. Streamlit's
"Clear caches" (``st.cache_resource.clear()`` or ``st.cache_data.clear()``) clears this
store too; :func:`clear` clears it alone.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import gc
import hashlib
import inspect
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np
import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

__all__ = [
    "BUDGET_VARIABLE",
    "DEFAULT_BUDGET_MB",
    "TTL",
    "bounded",
    "budget",
    "clear",
    "digest",
    "freeze",
    "freeze_long_lived",
    "make_room",
    "nbytes",
    "stats",
]

BUDGET_VARIABLE = "ATTENTION_EXPLORER_CACHE_MB"
#: With MiniLM loaded and the interpreter, Streamlit, Plotly and pandas, the server holds
#: about 330 MB before any text; this leaves room for the results being computed.
DEFAULT_BUDGET_MB = 300
#: How long a cached result lives, in seconds, here and in Streamlit's caches of the app.
TTL = 3600
#: What an entry costs beyond its arrays (key, bookkeeping, small Python objects).
ENTRY_OVERHEAD = 1024
#: glibc's M_MMAP_THRESHOLD (malloc.h), and the value this module sets it to.
_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES = -3, 4 * 1024 * 1024


def _glibc():
    """The C library when it is glibc (Linux), else None."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


_LIBC = _glibc()


def _return_freed_arrays_to_the_system():
    """Have glibc give every array above 4 MB its own mapping, unmapped when freed.

    By default glibc raises this threshold to the size of each large block freed, up to
    32 MB, so a (16, 500, 500) float64 array (32 MB) freed once lands in the heap the next
    time, and the heap seldom shrinks: a server that had evicted its results still held
    about 250 MB more than its live arrays (AppTest, three long texts). 4 MB, not lower:
    smaller arrays (one head's figure data) reuse the heap, and a view drawn from cached
    results does not pay for fresh pages each time. Not glibc: nothing happens.
    """
    if _LIBC is not None:
        _LIBC.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)


def _trim():
    """Give the heap's free pages back to the system (after an eviction freed results)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


_return_freed_arrays_to_the_system()


_runs = {"count": 0}
_runs_lock = threading.Lock()


def freeze_long_lived():
    """Move every object alive to ``gc``'s permanent generation at the second script run.

    Once per process; called at the start of every run. Streamlit collects every
    generation after each run (``runner.postScriptGC``), holding the GIL while the run's
    last messages wait to be sent: 45-120 ms a run here, most of it scanning objects that
    live as long as the process (the modules, plotly's validators, Streamlit's own, the
    model's containers). Frozen, they are left out of every collection. By the second run
    the first one's garbage has been collected; an object frozen is still freed when
    nothing refers to it, and only a reference cycle among frozen objects (the first
    session's, once it ends) would stay.
    """
    with _runs_lock:
        _runs["count"] += 1
        if _runs["count"] == 2:
            gc.freeze()


#: Room added to the default budget by the resources loaded so far (:func:`make_room`).
_ROOM = {}


def make_room(name, mb):
    """Grow the default budget by ``mb`` for ``name``'s results, once per name.

    A resource whose results are large (SmolLM2: its 512-token run holds 30 layers × 9
    heads of 512 × 512 weights) calls this when it is loaded, so that the default budget
    keeps them rather than computing them again on every call; a server that never loads
    it keeps the plain default. A budget set with ``--cache-mb`` is kept as given.
    """
    _ROOM[name] = mb


def budget():
    """The byte budget: :data:`BUDGET_VARIABLE` MB, else the default and :func:`make_room`'s."""
    raw = os.environ.get(BUDGET_VARIABLE, "").strip()
    default = DEFAULT_BUDGET_MB + sum(_ROOM.values())
    try:
        mb = float(raw) if raw else default
    except ValueError:
        mb = default
    return int(max(mb, 0.0) * 1024 * 1024)


def _walk(value, seen, visit):
    """Call ``visit`` on every array reachable from ``value`` once; sum bytes/str lengths."""
    if isinstance(value, np.ndarray):
        if id(value) in seen:
            return 0
        seen.add(id(value))
        return visit(value)
    if isinstance(value, bytes | bytearray | memoryview | str):
        return len(value)
    if isinstance(value, tuple | list | set | frozenset):
        return sum(_walk(item, seen, visit) for item in value)
    if isinstance(value, Mapping):  # a dict, or a loaded model's read-only mappings
        return sum(_walk(k, seen, visit) + _walk(v, seen, visit) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(_walk(getattr(value, f.name), seen, visit) for f in dataclasses.fields(value))
    return 0


def nbytes(value):
    """Bytes of the arrays (each counted once), bytes and strings reachable in ``value``."""
    return _walk(value, set(), lambda array: array.nbytes)


def freeze(value):
    """Mark every reachable array read-only (shared by every session); return ``value``.

    :func:`bounded` does it to every result it keeps; a result cached by Streamlit's own
    ``st.cache_resource`` calls it.
    """

    def freeze(array):
        array.flags.writeable = False
        return array.nbytes

    _walk(value, set(), freeze)
    return value


def digest(value):
    """A short hex name for ``value``'s content: equal for equal data, arrays by their bytes.

    ``value`` is data: arrays, NumPy and Python scalars, str, bytes, None, ranges, and
    tuples, lists and dicts of them. Anything else raises TypeError, so that a key never stands
    for an object whose content it cannot see.
    """
    hasher = hashlib.blake2b(digest_size=16)

    def feed(item):
        if isinstance(item, np.ndarray):
            if item.dtype.hasobject:  # its bytes are pointers, not the content
                raise TypeError("cannot name an array of Python objects by its content")
            hasher.update(f"a{item.dtype.str}{item.shape}".encode())
            hasher.update(np.ascontiguousarray(item).data)
        elif isinstance(item, str | bytes):
            hasher.update(f"{type(item).__name__}{len(item)}:".encode())
            hasher.update(item.encode() if isinstance(item, str) else item)
        elif item is None or isinstance(item, bool | int | float | np.generic):
            hasher.update(f"{type(item).__name__}:{item!r};".encode())
        elif isinstance(item, range):
            hasher.update(f"range{item.start},{item.stop},{item.step};".encode())
        elif isinstance(item, tuple | list):
            hasher.update(f"{type(item).__name__}{len(item)}(".encode())
            for element in item:
                feed(element)
        elif isinstance(item, Mapping):
            hasher.update(f"map{len(item)}(".encode())
            for name in sorted(item, key=repr):
                feed(name)
                feed(item[name])
        else:
            raise TypeError(f"cannot name {type(item).__name__} by its content")

    feed(value)
    return hasher.hexdigest()


class _Store:
    """A thread-safe LRU map from key to (value, bytes, expiry), bounded in bytes."""

    def __init__(self):
        self._entries = OrderedDict()  # key -> (value, size, expires)
        self._lock = threading.Lock()
        self._computing = {}  # key -> Lock held while one thread computes it
        self.total = 0
        self.hits = self.misses = self.evictions = 0

    def get(self, key):
        """(True, value) for a fresh entry, made most recent; (False, None) otherwise."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return False, None
            if entry[2] < time.monotonic():
                self._drop(key)
                return False, None
            self._entries.move_to_end(key)
            self.hits += 1
            return True, entry[0]

    def put(self, key, value, size, ttl):
        """Keep ``value``, dropping the least recent entries until the budget holds.

        Returns
        -------
        int, the number of entries dropped to make room
        """
        limit = budget()
        evicted = 0
        with self._lock:
            if key in self._entries:
                self._drop(key)
            if size > limit:
                return 0  # larger than the whole budget: returned, never kept
            while self._entries and self.total + size > limit:
                self._drop(next(iter(self._entries)))
                evicted += 1
            self.evictions += evicted
            self._entries[key] = (value, size, time.monotonic() + ttl)
            self.total += size
        return evicted

    def _drop(self, key):
        self.total -= self._entries.pop(key)[1]

    def computing(self, key):
        """The lock that whoever computes ``key`` holds, so no key is computed twice at once."""
        with self._lock:
            return self._computing.setdefault(key, threading.Lock())

    def done(self, key, lock):
        with self._lock:
            if self._computing.get(key) is lock:
                del self._computing[key]

    def clear(self):
        with self._lock:
            self._entries.clear()
            self.total = 0


_STORE = _Store()


@st.cache_resource(show_spinner=False)
def _resource_generation():
    return uuid.uuid4().hex


@st.cache_data(show_spinner=False)
def _data_generation():
    return uuid.uuid4().hex


_seen_generation = [None]


def _follow_streamlit_clear():
    """Clear the store when Streamlit's caches were cleared since the last call."""
    generation = (_resource_generation(), _data_generation())
    if generation != _seen_generation[0]:
        if _seen_generation[0] is not None:
            _STORE.clear()
        _seen_generation[0] = generation


def clear():
    """Drop every cached result (the budget's store only; Streamlit's caches stay)."""
    _STORE.clear()


def stats():
    """What the store holds now: entries, bytes, budget, hits, misses, evictions."""
    with _STORE._lock:
        return {
            "entries": len(_STORE._entries),
            "bytes": _STORE.total,
            "budget": budget(),
            "hits": _STORE.hits,
            "misses": _STORE.misses,
            "evictions": _STORE.evictions,
        }


def bounded(function=None, *, ttl=TTL, spinner=None):
    """Cache ``function``'s results in the shared store, keyed on its hashable arguments.

    Use like ``st.cache_resource``: arguments whose names start with ``_`` are not part
    of the key; exceptions raised are not cached (returned ones are). The result's arrays
    become read-only. ``spinner`` is shown while a script run waits for a miss.
    """
    if function is None:
        return functools.partial(bounded, ttl=ttl, spinner=spinner)
    signature = inspect.signature(function)
    name = f"{function.__module__}.{function.__qualname__}"

    @functools.wraps(function)
    def cached(*args, **kwargs):
        _follow_streamlit_clear()
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        key = (name, *((k, v) for k, v in bound.arguments.items() if not k.startswith("_")))
        found, value = _STORE.get(key)
        if found:
            return value
        lock = _STORE.computing(key)
        try:
            with lock:
                found, value = _STORE.get(key)  # another thread may have just computed it
                if found:
                    return value
                _STORE.misses += 1
                # Outside a script run (a CSV built on its button's click, in a server
                # thread) there is no page to spin on: ask without Streamlit's warning.
                if spinner and get_script_run_ctx(suppress_warning=True) is not None:
                    with st.spinner(spinner):
                        value = function(*args, **kwargs)
                else:
                    value = function(*args, **kwargs)
                freeze(value)
                if _STORE.put(key, value, nbytes(value) + ENTRY_OVERHEAD, ttl):
                    _trim()
                return value
        finally:
            _STORE.done(key, lock)

    cached.clear = clear
    return cached
