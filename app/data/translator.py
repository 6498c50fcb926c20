"""The date translator this project trained, loaded once, and its translations, cached."""

from __future__ import annotations

import streamlit as st

from app.data import cache, threads
from engine import seq2seq


@st.cache_resource(ttl=cache.TTL, show_spinner=False)
def _translator(path):
    """The trained date translator in ``path``; raises when it is missing or corrupt.

    Failures are raised, not returned, so they are not cached: a model trained while the
    app runs is picked up on the next rerun.
    """
    return seq2seq.load_translator(path)


def translator():
    """The date translator (weights read-only, shared by every session).

    Returns
    -------
    model : engine.seq2seq.Translator, or None
    problem : str or None, why there is no model
    """
    try:
        return _translator(str(seq2seq.TRANSLATOR_PATH)), None
    except (seq2seq.TranslatorUnavailableError, seq2seq.CorruptWeightsError) as error:
        return None, str(error)


@cache.bounded
def _translation(source_text):
    return seq2seq.translate(translator()[0], source_text, parallel=threads.parallel())


def translation(source_text):
    """Greedy translation of ``source_text`` with every step's attention, keyed on the text.

    Returns
    -------
    translation : engine.seq2seq.Translation, or None
    problem : str or None, why the source cannot be read
    """
    try:
        return _translation(source_text), None
    except seq2seq.UnreadableSourceError as error:
        return None, str(error)
