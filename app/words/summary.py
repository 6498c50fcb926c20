"""What the summarize page says: the summary and the document in Markdown, and its notes.

User text is escaped with :func:`app.state.controls.md_escape`, so it is shown as typed
and never closes a colour directive around it.
"""

from __future__ import annotations

import numpy as np

from app.state.controls import DEFAULT_TEXT, md_escape
from engine import summarize


def clipped_k_note(asked, n):
    """What the page says when a document of ``n`` sentences holds fewer than ``asked``."""
    return (
        f"k is {n}, not the {asked} you set: this document has {n} sentence"
        f"{'' if n == 1 else 's'}. A longer one gets k = {asked} back."
    )


def document_note(text):
    """What the page says under its document box: whose text is summarised, for ``text``."""
    if text == DEFAULT_TEXT:
        return (
            "A sample document: the app's default passage (“The restaurant refused to "
            "serve me…”) has three sentences, too few to summarise. Type or paste your own "
            "above; it becomes the text every page reads."
        )
    return (
        "Your text, the one every page reads: the page summarises it, and an edit here "
        "carries over to the other pages."
    )


def sentence_labels(sentences):
    """Axis labels: each sentence's number and its opening words (the figures clip them)."""
    return [f"S{i + 1} {sentence.text}" for i, sentence in enumerate(sentences)]


def highlighted_markdown(text, sentences, scores, chosen):
    """The document as Markdown: every sentence escaped, with its score; the summary marked.

    Paragraph breaks (a blank line between two sentences) are kept; line breaks inside a
    sentence become spaces, so no directive spans two lines. User text is escaped
    with :func:`app.state.controls.md_escape`, so it is shown as typed and never closes the colour
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
    return md_escape(" ".join(sentence.text.split()))


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
    limit = summarize.SENTENCE_MAX_TOKENS
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
