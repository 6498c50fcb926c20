"""Two sentences compared on /pretrained: the second text box and its minimal pairs.

A minimal pair changes one word and little else; the heads whose weight moves between
the two are the ones that read that word. The examples are Winograd schemas (Levesque,
Davis & Morgenstern 2012, "The Winograd Schema Challenge"), in which the changed word
decides what "it" or "they" refers to.
"""

from __future__ import annotations

from typing import NamedTuple

import streamlit as st

from app import controls, minilm, render, state


class MinimalPair(NamedTuple):
    """Two sentences one word apart, and the query and key words the head finder starts on."""

    name: str
    a: str
    b: str
    query: str
    key: str


MINIMAL_PAIRS = (
    MinimalPair(
        "trophy: too big / too small",
        "The trophy doesn't fit into the brown suitcase because it is too big.",
        "The trophy doesn't fit into the brown suitcase because it is too small.",
        "it",
        "trophy",
    ),
    MinimalPair(
        "animal: too tired / too wide",
        "The animal didn't cross the street because it was too tired.",
        "The animal didn't cross the street because it was too wide.",
        "it",
        "animal",
    ),
    MinimalPair(
        "councilmen: feared / advocated",
        "The city councilmen refused the demonstrators a permit because they feared violence.",
        "The city councilmen refused the demonstrators a permit because they advocated violence.",
        "they",
        "councilmen",
    ),
)
#: The head finder's pickers: sentence A's (shared with the single-sentence page) and B's.
PICKERS_A = ("pretrained_finder_query", "pretrained_finder_key")
PICKERS_B = ("pretrained_b_query", "pretrained_b_key")


def use_pair(pair):
    """Button callback: both texts, and every picker on the pair's query and key words."""
    st.session_state["text"], st.session_state["text_b"] = pair.a, pair.b
    for text, pickers in ((pair.a, PICKERS_A), (pair.b, PICKERS_B)):
        run = minilm.run(text)
        if isinstance(run, Exception):
            continue
        for picker, word in zip(pickers, (pair.query, pair.key), strict=True):
            st.session_state[picker] = controls.find_token(run.labels, word)
            st.session_state[f"_{picker}_labels"] = list(run.labels)  # chosen for this text


def text_box():
    """The "compare with" box and the minimal pairs; returns the second text ('' for none)."""
    st.text_area(
        "Compare with (optional): a second sentence, say the same one with one word changed",
        key="text_b",
        height=68,
        max_chars=state.MAX_TEXT_CHARS,
        persist_state="session",
    )
    if not render.presenting():  # a projector shows the pair, not the buttons that set it
        columns = st.columns(len(MINIMAL_PAIRS) + 1)
        columns[0].caption("Minimal pairs:")
        for column, pair in zip(columns[1:], MINIMAL_PAIRS, strict=True):
            column.button(pair.name, key=f"pair_{pair.key}", on_click=use_pair, args=(pair,))
    return st.session_state["text_b"]
