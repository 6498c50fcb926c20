"""Two sentences compared on /pretrained: the second text box and its minimal pairs.

A minimal pair changes one word and little else; the heads whose weight moves between
the two are the ones that read that word. The examples are Winograd schemas (Levesque,
Davis & Morgenstern 2012, "The Winograd Schema Challenge"), in which the changed word
decides what "it" or "they" refers to.
"""

from __future__ import annotations

from typing import NamedTuple

import streamlit as st

from app import minilm, render, state
from app.wording import PRONOUNS  # without "it", the query starts on the first of these


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
#: The words the head finder starts on when a sentence has them: the default passage's.
START_QUERY, START_KEY = "it", "restaurant"
#: Without a word to start on, the key starts on the first word that is none of these.
ARTICLES = frozenset({"the", "a", "an"})
#: The head finder's pickers: sentence A's (shared with the single-sentence page) and B's.
PICKERS_A = ("pretrained_finder_query", "pretrained_finder_key")
PICKERS_B = ("pretrained_b_query", "pretrained_b_key")


def start_tokens(text, labels, words=(None, None)):
    """The query and key tokens the head finder starts on in one sentence.

    Each is the first that the sentence has of: the word in ``words`` (sentence A's query
    and key, when choosing B's), its minimal pair's word (when the sentence is one of
    :data:`MINIMAL_PAIRS`'), :data:`START_QUERY` or :data:`START_KEY`. Else the query
    starts on the first of :data:`PRONOUNS`, or the first token, and the key on the first
    other word not in :data:`ARTICLES`: never on [CLS] or [SEP] while the sentence has a
    token of its own.

    Parameters
    ----------
    text : str, the sentence
    labels : list of str, its WordPiece tokens, [CLS] first and [SEP] last
    words : (str or None, str or None), the query and key words to prefer

    Returns
    -------
    query, key : int, token positions
    """
    pair = next((p for p in MINIMAL_PAIRS if text in (p.a, p.b)), None)
    inner = list(range(1, len(labels) - 1)) if len(labels) > 2 else list(range(len(labels)))
    lowered = {i: labels[i].lower() for i in inner}
    whole = _whole_words(labels, inner)

    def first(candidates):
        for word in candidates:
            found = [i for i in inner if word is not None and word.lower() in whole[i]]
            if found:
                return found[0]
        return None

    query = first((words[0], pair and pair.query, START_QUERY, *PRONOUNS))
    query = inner[0] if query is None else query
    key = first((words[1], pair and pair.key, START_KEY))
    if key is None:
        others = [i for i in inner if i != query and lowered[i].isalpha()]
        key = next((i for i in others if lowered[i] not in ARTICLES), (others or inner)[0])
    return query, key


def _whole_words(labels, positions):
    """Each position's token, lower-cased, and the whole word it starts ("council" "##men")."""
    words = {}
    for i in positions:
        word = labels[i]
        for piece in labels[i + 1 :]:
            if not piece.startswith("##"):
                break
            word += piece[2:]
        words[i] = {labels[i].lower(), word.lower()}
    return words


def use_pair(pair):
    """Button callback: both texts, and every picker on the pair's query and key words."""
    st.session_state["text"], st.session_state["text_b"] = pair.a, pair.b
    for text, pickers in ((pair.a, PICKERS_A), (pair.b, PICKERS_B)):
        run = minilm.run(text)
        if isinstance(run, Exception):
            continue
        for picker, index in zip(pickers, start_tokens(text, run.labels), strict=True):
            st.session_state[picker] = index
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
