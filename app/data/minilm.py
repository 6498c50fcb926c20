"""Cached access to the pretrained MiniLM: loaded once per server, run once per text.

The weights are read-only and shared by every session (``cache_resource``); runs are
keyed on the text alone and kept within the server's memory budget (:mod:`app.data.cache`),
which makes their arrays read-only.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app.data import cache, threads
from engine import analysis, bert, checkpoint
from engine.resources import MINILM_INSTALL_HINT
from engine.toy import random_permutation

__all__ = ["MINILM_INSTALL_HINT", "layer_run", "layer_stages", "model", "run"]


@st.cache_resource(show_spinner="Loading all-MiniLM-L6-v2 …")
def model():
    """The loaded model, or the ModelUnavailableError saying how to install it."""
    try:
        return checkpoint.load_minilm()
    except checkpoint.ModelUnavailableError as error:
        return error


def run(text, positions=True):
    """One forward pass over ``text``, arrays read-only, cached on the text.

    ``positions=False`` runs the model with its position embeddings removed.

    Returns
    -------
    engine.bert.BertRun, or the error (ModelUnavailableError, TooLongError) saying why not
    """
    return _run(text, positions)  # one call form, so one cache entry per text


@cache.bounded
def _run(text, positions):
    loaded = model()
    if isinstance(loaded, Exception):
        return loaded
    try:
        return bert.run(loaded, text, positions, threads.parallel())
    except bert.TooLongError as error:
        return error


@cache.bounded
def layer_run(text, layer, scale=None, causal=False, positions=True):
    """Every head of layer ``layer`` on ``text`` (see :func:`engine.bert.layer_run`).

    Cheap: the model has run once for the text (:func:`run`); this redoes one layer's
    attention from its input. Call only when :func:`run` succeeds for the text.

    Returns
    -------
    engine.bert.LayerRun
    """
    return bert.layer_run(model(), run(text, positions), layer, scale, causal, threads.parallel())


@cache.bounded
def layer_stages(text, layer):
    """Every stage of encoder layer ``layer`` on ``text`` (see :func:`engine.bert.layer_stages`).

    Returns
    -------
    engine.layers.EncoderLayerResult
    """
    return bert.layer_stages(model(), run(text), layer, threads.parallel())


@st.cache_data(max_entries=64, show_spinner=False)
def permutation_errors(text, shuffle_seed):
    """Shuffle the text's tokens and measure the model with and without its positions.

    Returns
    -------
    permutation : list of int, the new order of the tokens ([CLS] and [SEP] included)
    errors : dict of {"learned": float, "none": float}, max |Enc(PX) − P·Enc(X)|
    """
    ids = run(text).ids
    permutation = random_permutation(len(ids), shuffle_seed)
    errors = {
        kind: analysis.permutation_error(
            model(), ids, permutation, kind == "learned", threads.parallel()
        )
        for kind in ("learned", "none")
    }
    return permutation.tolist(), errors


@cache.bounded
def rollout(text):
    """Attention rollout over all six layers for ``text``, shape (n, n)."""
    return analysis.attention_rollout(run(text).attentions)


@cache.bounded
def ranked_heads(text, query, key):
    """Every head ranked by the weight from token ``query`` to token ``key``."""
    return analysis.rank_heads(run(text).attentions, query, key)


def head_grid(text, query, key):
    """The weight from ``query`` to ``key`` in every head, shape (n_layers, n_heads)."""
    return np.asarray(run(text).attentions[:, :, query, key])
