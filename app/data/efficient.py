"""Efficient attention: the patterns on one head, cached; the measured cost of each.

Linear and sparse patterns against full softmax on the core pages' layer, cached on the
settings, the head and the pattern's sizes; and the measured cost of softmax against
linear attention, engine wall time and peak memory.

Timing is not pure, so it lives here, beside the app, and not in the engine. The
benchmark (``benchmarks/bench_efficient.py``) and the efficient-attention page both
call :func:`measure_cost`; the benchmark's last run on the development machine is kept
in ``assets/efficient_cost.json`` so the page can show it without measuring.

Time is the shortest of a few calls (``time.perf_counter``). Peak memory is what
``tracemalloc`` sees NumPy allocate during one call beyond what was allocated before
it: the output and every temporary, including the (n, n) scores, scaled scores and
weights the engine keeps for drawing. tracemalloc is process-wide, so measurements
running at the same time in one process would see each other's allocations.
"""

from __future__ import annotations

import functools
import json
import math
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

import engine
from app.data import cache, layers
from engine.efficient import PATTERNS, attention_patterns, pattern_errors
from engine.resources import ASSETS

COST_FILE = ASSETS / "efficient_cost.json"
N_VALUES = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
D_HEAD = 64


def _softmax(q, k, v):
    return engine.scaled_dot_product_attention(q, k, v).output


def _softmax_causal(q, k, v):
    return engine.scaled_dot_product_attention(q, k, v, mask=engine.causal_mask(len(q))).output


def _linear(q, k, v):
    return engine.linear_attention(q, k, v)


def _linear_causal(q, k, v):
    return engine.linear_attention(q, k, v, causal=True)


#: Method name -> function of (q, k, v); the softmax ones are O(n²), the linear ones O(n).
METHODS = {
    "softmax": _softmax,
    "softmax, causal": _softmax_causal,
    "linear": _linear,
    "linear, causal": _linear_causal,
}


def peak_bytes(fn):
    """Bytes allocated at the peak of ``fn()`` beyond those allocated when it started."""
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        if not already:
            tracemalloc.stop()


def best_seconds(fn, repeats=5, budget_s=0.5, min_repeats=1):
    """Shortest wall time of ``fn()`` over ``min_repeats`` to ``repeats`` calls.

    The shortest, not the mean: on a shared machine other work only ever adds time,
    so the minimum is the best estimate of the call's own cost. Past ``min_repeats``
    calls, stops once ``budget_s`` is spent, so slow calls run fewer times.
    """
    times = []
    start = time.perf_counter()
    while len(times) < repeats and (
        len(times) < min_repeats or time.perf_counter() - start < budget_s
    ):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure_cost(
    n_values=N_VALUES, d=D_HEAD, methods=tuple(METHODS), max_n=None, seed=0, min_repeats=1
):
    """Time and peak memory of each method for each n, on seeded N(0, 1) inputs.

    Parameters
    ----------
    n_values : sequence of int
    d : int, d_k = d_v
    methods : sequence of keys of :data:`METHODS`
    max_n : dict of method -> int, optional; larger n are skipped for that method
    seed : int
    min_repeats : int, timed calls at least, however slow (see :func:`best_seconds`)

    Returns
    -------
    list of dict with "method", "n", "seconds", "peak_bytes"
    """
    max_n = max_n or {}
    rows = []
    for n in n_values:
        rng = np.random.default_rng([seed, n, d])
        q, k, v = (rng.standard_normal((n, d)) for _ in range(3))  # [n, d] each
        for method in methods:
            if n > max_n.get(method, math.inf):
                continue
            call = functools.partial(METHODS[method], q, k, v)
            call()  # warm-up
            rows.append(
                {
                    "method": method,
                    "n": n,
                    "seconds": best_seconds(call, min_repeats=min_repeats),
                    "peak_bytes": peak_bytes(call),
                }
            )
    return rows


def fit_slope(n, values, n_min=512):
    """The slope of log(value) against log(n), least squares over ``n >= n_min``.

    Small n are left out: there fixed overheads, not the growth, set the time.
    Returns NaN with fewer than two points.
    """
    n, values = np.asarray(n, dtype=float), np.asarray(values, dtype=float)
    keep = (n >= n_min) & (values > 0)
    if keep.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(n[keep]), np.log(values[keep]), 1)[0])


def slopes(rows, n_min=512):
    """Fitted log-log slopes of time and of peak memory, per method.

    Returns
    -------
    dict of method -> {"time": float, "memory": float}
    """
    out = {}
    for method in dict.fromkeys(row["method"] for row in rows):
        mine = [row for row in rows if row["method"] == method]
        n = [row["n"] for row in mine]
        out[method] = {
            "time": fit_slope(n, [row["seconds"] for row in mine], n_min),
            "memory": fit_slope(n, [row["peak_bytes"] for row in mine], n_min),
        }
    return out


def load_reference(path=COST_FILE):
    """The measurement committed with the project, or None when the file is missing.

    Returns
    -------
    dict with "machine" (str), "d" (int) and "rows" (as :func:`measure_cost`), or None
    """
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


@cache.bounded
def efficient_patterns(settings, head, window, stride, first=None):
    """Full softmax, linear attention and the sparse patterns on one head of the layer.

    ``first``: the first this many tokens alone (a long text's, whose layer keeps no
    head's weights: five patterns' every weight of 4,096 tokens would be gigabytes).

    Returns
    -------
    tuple of engine.efficient.Pattern, full softmax first
    """
    attention = layers.layer(settings, keep_weights=first is None).attention
    return attention_patterns(
        attention.q[head, :first],
        attention.k[head, :first],
        attention.v[head, :first],
        window,
        stride,
        causal=settings.causal,
        scale=attention.heads.scale,
    )


#: Linear attention weights every pair but scores none: it never forms q·k.
LINEAR = PATTERNS[1]


@st.cache_data(max_entries=32, ttl=cache.TTL, show_spinner=False)
def efficient_errors(settings, head, window, stride, first=None):
    """Each pattern's distance from full softmax, as a table (one row per pattern).

    ``first`` as :func:`efficient_patterns` takes it.

    "pairs weighted" is the share of (query, key) pairs with a weight; "pairs scored" the
    share whose q·k the pattern needs, none for linear attention. ΔA is the weights less
    full softmax's, ΔAV the outputs less its outputs: headers short enough that the table
    fits a 1280 px slide without scrolling sideways.
    """
    patterns = efficient_patterns(settings, head, window, stride, first)
    return pd.DataFrame(
        [
            {
                "pattern": row.name,
                "pairs weighted": row.density,
                "pairs scored": 0.0 if row.name == LINEAR else row.density,
                "mean |ΔA|": row.weights_mae,
                "max |ΔA|": row.weights_max,
                "mean |ΔAV|": row.output_mae,
                "max |ΔAV|": row.output_max,
                "‖ΔAV‖ / ‖AV‖": row.output_relative,
            }
            for row in pattern_errors(patterns)
        ]
    )


def _cost_record(rows, machine):
    table = pd.DataFrame(
        [
            {"method": method, "time slope": fit["time"], "memory slope": fit["memory"]}
            for method, fit in slopes(rows).items()
        ]
    )
    return {"rows": rows, "machine": machine, "slopes": table}


@st.cache_data(show_spinner=False)
def cost_reference():
    """The measurement shipped in ``assets/efficient_cost.json``, or None without the file.

    Returns
    -------
    dict with "rows" (list of dict), "machine" (str), "slopes" (DataFrame), or None
    """
    record = load_reference()
    return None if record is None else _cost_record(record["rows"], record["machine"])


@st.cache_data(show_spinner="Measuring on this machine (about ten seconds)…")
def cost_measurement():
    """A fresh, bounded measurement, taken once per server and shared by every session.

    Softmax runs to n = 4096 (its (n, n) intermediates take about 0.6 GB there), its
    causal form to 2048; linear attention to 8192.

    Returns
    -------
    dict as :func:`cost_reference`
    """
    rows = measure_cost(max_n={"softmax": 4096, "softmax, causal": 2048})
    return _cost_record(rows, "this server, just now")
