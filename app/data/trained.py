"""Cached access to the packaged trained models: loaded once per server, run once per text.

The core pages run a packaged model by name (:data:`engine.resources.PACKAGED`):
all-MiniLM-L6-v2, a 2019 encoder, and SmolLM2-135M-Instruct, a 2024 decoder. The weights
are read-only and shared by every session (``cache_resource``); runs are keyed on the
model's name and the text and kept within the server's memory budget
(:mod:`app.data.cache`), which makes their arrays read-only.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app.data import cache, passes, threads
from engine import analysis, bert, checkpoint, one_layer, roles
from engine.toy import random_permutation

__all__ = [
    "head_grid",
    "head_roles",
    "layer_run",
    "layer_stages",
    "model",
    "permutation_errors",
    "ranked_heads",
    "rollout",
    "run",
]


#: Room each packaged model's results need in the cache budget, in MB: SmolLM2's run of a
#: 512-token text with its layer runs and frames (docs/benchmarks.md); MiniLM's fit the
#: default.
RESULTS_MB = {"smollm2": 450}


@st.cache_resource(show_spinner="Loading the model …")
def model(name):
    """The loaded model ``name``, or the ModelUnavailableError saying how to install it."""
    try:
        loaded = checkpoint.load(name)
    except checkpoint.ModelUnavailableError as error:
        return error
    if name in RESULTS_MB:
        cache.make_room(name, RESULTS_MB[name])
    return loaded


def run(name, text, positions=True):
    """One forward pass of model ``name`` over ``text``, arrays read-only, cached.

    ``positions=False`` runs the model with its position embeddings removed (no rotation
    of q and k in a rotary model).

    Returns
    -------
    engine.bert.BertRun, or the error (ModelUnavailableError, TooLongError, a ValueError
    for a decoder's text with no tokens) saying why not
    """
    return _run(name, text, positions)  # one call form, so one cache entry per text


@cache.bounded
def _run(name, text, positions):
    loaded = model(name)
    if isinstance(loaded, Exception):
        return loaded
    try:
        return passes.run(loaded, text, positions, threads.parallel())
    except (bert.TooLongError, ValueError) as error:  # ValueError: a decoder with no tokens
        return error


@cache.bounded
def layer_run(name, text, layer, scale=None, causal=None, positions=True, keep_weights=True):
    """Every head of layer ``layer`` on ``text`` (see :func:`engine.one_layer.layer_run`).

    Cheap: the model has run once for the text (:func:`run`); this redoes one layer's
    attention from its input. Call only when :func:`run` succeeds for the text.
    ``keep_weights`` False: no head's ``n × n`` weights kept (a long text's).

    Returns
    -------
    engine.one_layer.LayerRun
    """
    this = run(name, text, positions)
    parallel = threads.parallel()
    return one_layer.layer_run(model(name), this, layer, scale, causal, parallel, keep_weights)


@cache.bounded
def layer_stages(name, text, layer, keep_weights=True):
    """Every stage of layer ``layer`` on ``text`` (see :func:`engine.one_layer.layer_stages`).

    ``keep_weights`` False: no head's ``n × n`` weights kept (a long text's).

    Returns
    -------
    engine.layers.EncoderLayerResult
    """
    this = run(name, text)
    return one_layer.layer_stages(model(name), this, layer, threads.parallel(), keep_weights)


@st.cache_data(max_entries=64, show_spinner=False)
def permutation_errors(name, text, shuffle_seed, tokens=None):
    """Shuffle the text's tokens and measure the model with and without its positions.

    ``tokens``: the first this many tokens alone (a long text's: the test runs the whole
    model four times).

    Returns
    -------
    permutation : list of int, the new order of the tokens (special tokens included)
    errors : dict of {"learned": float, "none": float}, max |Enc(PX) − P·Enc(X)|
    """
    ids = run(name, text).ids[:tokens]
    permutation = random_permutation(len(ids), shuffle_seed)
    errors = {
        kind: analysis.permutation_error(
            model(name), ids, permutation, kind == "learned", threads.parallel()
        )
        for kind in ("learned", "none")
    }
    return permutation.tolist(), errors


@cache.bounded
def rollout(name, text):
    """Attention rollout over every layer for ``text``, shape (n, n)."""
    return analysis.attention_rollout(run(name, text).attentions)


@cache.bounded
def ranked_heads(name, text, query, key):
    """Every head ranked by the weight from token ``query`` to token ``key``."""
    return analysis.rank_heads(run(name, text).attentions, query, key)


def head_grid(name, text, query, key):
    """The weight from ``query`` to ``key`` in every head, shape (n_layers, n_heads)."""
    return np.asarray(run(name, text).attentions[:, :, query, key])


@cache.bounded(spinner="Scoring every head on repeated random tokens …")
def head_roles(name):
    """Every head's role scores (:func:`engine.roles.head_roles`), or the error saying why not."""
    loaded = model(name)
    if isinstance(loaded, Exception):
        return loaded
    return roles.head_roles(loaded, parallel=threads.parallel())
