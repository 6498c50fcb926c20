"""The summarize page's cached engine calls, its default document, and its Markdown.

Ranking a document (one MiniLM pass per sentence) is cached on the document's text; the
attention between sentences reuses the whole-document run of :func:`app.minilm.run` and
is cached per layer. The document is the shared ``text`` control, so a link carries it as
``text``; while that is still the app's default passage (three sentences, too few to
summarise), this page reads :data:`DEFAULT_DOCUMENT` instead.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app import cache, minilm
from app.state import controls
from engine import summarize as engine_summarize

__all__ = [
    "DEFAULT_DOCUMENT",
    "agreement_markdown",
    "ask_k",
    "asked_k",
    "clipped_k_note",
    "cut_note",
    "document",
    "document_note",
    "highlighted_markdown",
    "rank",
    "sentence_attention",
    "sentence_labels",
    "summary_markdown",
]

DEFAULT_DOCUMENT = (
    "Transformers changed how machines read text. Before them, recurrent networks read a "
    "sentence one word at a time and carried everything they had read in a single vector.\n\n"
    "In 2017, Vaswani and colleagues showed that attention alone was enough to translate "
    "text. Every word looks at every other word at once and learns how much of each to "
    "take in. Because no word waits for the one before it, training runs in parallel on "
    "modern hardware.\n\n"
    "Today attention reads text, images and sound. Its cost grows with the square of the "
    "input's length, so long documents remain a challenge."
)


#: Session key of the summary's k as the user set it (on the slider or in a link), which a
#: document with fewer sentences clips and a longer one gives back.
K_ASKED = "summarize_k_asked"


def asked_k():
    """The k the user asked for: the slider's last setting, else the link's (``k``)."""
    return st.session_state.setdefault(K_ASKED, st.session_state["k"])


def ask_k():
    """The k slider's callback: the k set there is the one asked for."""
    st.session_state[K_ASKED] = st.session_state["k"]


def clipped_k_note(asked, n):
    """What the page says when a document of ``n`` sentences holds fewer than ``asked``."""
    return (
        f"k is {n}, not the {asked} you set: this document has {n} sentence"
        f"{'' if n == 1 else 's'}. A longer one gets k = {asked} back."
    )


def document(text):
    """The document this page summarises for the shared ``text``."""
    return DEFAULT_DOCUMENT if text == controls.DEFAULT_TEXT else text


def document_note(text):
    """What the page says under its document box: whose text is summarised, for ``text``."""
    if text == controls.DEFAULT_TEXT:
        return (
            "A sample document: the app's default passage (“The restaurant refused to "
            "serve me…”) has three sentences, too few to summarise. Type or paste your own "
            "above; it becomes the text every page reads."
        )
    return (
        "Your text, the one every page reads: the page summarises it, and an edit here "
        "carries over to the other pages."
    )


@cache.bounded(spinner="Embedding every sentence with MiniLM …")
def rank(text):
    """LexRank over ``text``'s first :data:`app.state.MAX_SENTENCES` sentences.

    Returns
    -------
    engine.summarize.Ranking, or the ModelUnavailableError saying how to install the model
    """
    loaded = minilm.model()
    if isinstance(loaded, Exception):
        return loaded
    return engine_summarize.rank_sentences(loaded, text, controls.MAX_SENTENCES)


@cache.bounded
def sentence_attention(text, layer):
    """Mean attention between the sentences of ``text``, read with the whole text at once.

    ``text`` is the part of the document that was ranked; ``layer``'s attention is
    averaged over its heads, then over each pair of sentences' tokens.

    Returns
    -------
    ndarray of shape (n_sent, n_sent), or the error (TooLongError, ModelUnavailableError)
    saying why not
    """
    run = minilm.run(text)
    if isinstance(run, Exception):
        return run
    sentences = engine_summarize.split_sentences(text)
    owner = engine_summarize.token_sentences(run.offsets, sentences)
    weights = run.attentions[layer].mean(axis=0)  # -> [n, n]
    return engine_summarize.sentence_attention(weights, owner, len(sentences))


def sentence_labels(sentences):
    """Axis labels: each sentence's number and its opening words (the figures clip them)."""
    return [f"S{i + 1} {sentence.text}" for i, sentence in enumerate(sentences)]


def highlighted_markdown(text, sentences, scores, chosen):
    """The document as Markdown: every sentence escaped, with its score; the summary marked.

    Paragraph breaks (a blank line between two sentences) are kept; line breaks inside a
    sentence become spaces, so no directive spans two lines. User text is escaped
    with :func:`app.state.md_escape`, so it is shown as typed and never closes the colour
    directive around it.

    Parameters
    ----------
    text : str, the document the sentences' spans point into
    sentences : sequence of engine.summarize.Sentence
    scores : ndarray of shape (n_sent,)
    chosen : sequence of int, the summary's sentences

    Returns
    -------
    str
    """
    chosen = set(np.asarray(chosen).tolist())
    parts = []
    for i, sentence in enumerate(sentences):
        if i and "\n\n" in text[sentences[i - 1].end : sentence.start].replace("\r", ""):
            parts.append("\n\n")
        elif i:
            parts.append(" ")
        body = _escaped(sentence)
        if i in chosen:
            body = f":orange-background[{body}]"
        parts.append(f"{body} :gray[({scores[i]:.3f})]")
    return "".join(parts)


def summary_markdown(sentences, chosen):
    """The summary's sentences, escaped, as one Markdown paragraph."""
    return " ".join(_escaped(sentences[i]) for i in chosen)


def _escaped(sentence):
    """A sentence's text on one line (no directive may span two), Markdown-escaped."""
    return controls.md_escape(" ".join(sentence.text.split()))


def agreement_markdown(chosen, attended, layer):
    """Which sentences LexRank picks, which the attention favours, and how many agree.

    Parameters
    ----------
    chosen : sequence of int, LexRank's summary
    attended : sequence of int, as many sentences, those receiving the most attention
    layer : int
    """
    shared = len(set(np.asarray(chosen).tolist()) & set(np.asarray(attended).tolist()))
    plural = "s" if len(attended) > 1 else ""
    return (
        f"LexRank picks **{_names(chosen)}**; the {len(attended)} sentence{plural} the others "
        f"attend to most in layer {layer}: **{_names(attended)}** — {shared} of {len(chosen)} "
        "in common."
    )


def cut_note(n_tokens, shown=10):
    """What to say about sentences too long for the model, or None when there are none.

    Parameters
    ----------
    n_tokens : int ndarray of shape (n_sent,), each sentence's tokens before the cut
    shown : int, how many sentence numbers to name
    """
    limit = engine_summarize.SENTENCE_MAX_TOKENS
    long = np.flatnonzero(np.asarray(n_tokens) > limit)
    if not long.size:
        return None
    more = " …" if long.size > shown else ""
    return (
        f"{_names(long[:shown])}{more}: longer than {limit} tokens, so the model reads only "
        f"the first {limit - 2} word pieces of each, as sentence-transformers does."
    )


def _names(indices):
    """Sentence numbers as the figures name them: S1, S4."""
    return ", ".join(f"S{i + 1}" for i in indices)
