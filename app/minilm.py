"""Cached access to the pretrained MiniLM: loaded once per server, run once per text.

The weights are read-only and shared by every session (``cache_resource``); runs are
keyed on the text alone.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from engine import bert
from engine.resources import MINILM_INSTALL_HINT

__all__ = ["MINILM_INSTALL_HINT", "model", "run"]


@st.cache_resource(show_spinner="Loading all-MiniLM-L6-v2 …")
def model():
    """The loaded model, or the ModelUnavailableError saying how to install it."""
    try:
        return bert.load_minilm()
    except bert.ModelUnavailableError as error:
        return error


@st.cache_resource(max_entries=32, ttl=3600, show_spinner=False)
def run(text):
    """One forward pass over ``text``, arrays read-only.

    Returns
    -------
    engine.bert.BertRun, or the error (ModelUnavailableError, TooLongError) saying why not
    """
    loaded = model()
    if isinstance(loaded, Exception):
        return loaded
    try:
        result = bert.run(loaded, text)
    except bert.TooLongError as error:
        return error
    for array in (result.attentions, result.hidden_states, result.queries, result.keys):
        array.flags.writeable = False
    return result


@st.cache_data(max_entries=256, show_spinner=False)
def rollout(text):
    """Attention rollout over all six layers for ``text``, shape (n, n)."""
    return bert.attention_rollout(run(text).attentions)


@st.cache_data(max_entries=256, show_spinner=False)
def ranked_heads(text, query, key):
    """Every head ranked by the weight from token ``query`` to token ``key``."""
    return bert.rank_heads(run(text).attentions, query, key)


def head_grid(text, query, key):
    """The weight from ``query`` to ``key`` in every head, shape (n_layers, n_heads)."""
    return np.asarray(run(text).attentions[:, :, query, key])
