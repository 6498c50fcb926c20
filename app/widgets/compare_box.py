"""The second sentence on /pretrained: its text box and the minimal pairs that fill both boxes."""

from __future__ import annotations

import functools

import streamlit as st

from app.data import models
from app.state import controls, session
from app.widgets import sidebar
from app.words.minimal_pairs import MINIMAL_PAIRS, start_tokens
from engine import bert, layer_config

#: The head finder's pickers: sentence A's (shared with the single-sentence page) and B's.
PICKERS_A = ("pretrained_finder_query", "pretrained_finder_key")
PICKERS_B = ("pretrained_b_query", "pretrained_b_key")


def visible(config):
    """The keys each query sees in a causal model (:func:`layer_config.visible_keys`), or None.

    None for an encoder, whose every token sees every other.
    """
    return functools.partial(layer_config.visible_keys, config) if config.causal else None


def use_pair(pair, folder=None):
    """Button callback: both texts, and every picker on the pair's query and key words."""
    st.session_state["text"], st.session_state["text_b"] = pair.a, pair.b
    loaded = models.model(folder)
    specials = getattr(loaded, "special_tokens", ())  # an error has none: its runs fail below
    seen = visible(loaded.config) if hasattr(loaded, "config") else None
    for text, pickers in ((pair.a, PICKERS_A), (pair.b, PICKERS_B)):
        run = models.run(folder, text)
        if isinstance(run, Exception):
            continue
        starts = start_tokens(
            text, run.labels, specials=specials, visible=seen, continues=run.continues
        )
        for picker, index in zip(pickers, starts, strict=True):
            st.session_state[picker] = index
            st.session_state[f"_{picker}_labels"] = list(run.labels)  # chosen for this text


def text_box(folder=None):
    """The "compare with" box and the minimal pairs; returns the second text ('' for none).

    ``folder`` is the model's (None: MiniLM), whose tokens the pairs' pickers choose.
    """
    sidebar.text_area(
        "Compare with (optional): a second sentence, say the same one with one word changed",
        "text_b",
        68,
    )
    if not session.presenting():  # a projector shows the pair, not the buttons that set it
        # A row that wraps: each button as wide as its name (equal columns cut the longest).
        row = st.container(horizontal=True, vertical_alignment="center")
        row.caption("Minimal pairs:")
        for pair in MINIMAL_PAIRS:
            row.button(pair.name, key=f"pair_{pair.key}", on_click=use_pair, args=(pair, folder))
    return st.session_state["text_b"]


def second_run(text_b, folder=None):
    """The model's run on the sentence compared with, or None (no sentence, or one it cannot read).

    ``folder`` is the model's checkpoint folder; None for MiniLM.

    A sentence too long for the model is said so; without a second run, B's tokens leave
    the link.
    """
    run_b = models.run(folder, text_b) if text_b else None
    if isinstance(run_b, bert.TooLongError):
        st.warning(controls.md_escape(str(run_b)) + " (the sentence compared with)")
    if not isinstance(run_b, bert.BertRun):
        run_b = None
        for param in ("query_b", "key_b"):
            st.query_params.pop(param, None)
    return run_b
