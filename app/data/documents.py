"""A document to summarise, ranked by LexRank on an encoder; the attention between its sentences.

The encoder is MiniLM, or a BERT-family checkpoint folder (``folder``, as in
:mod:`app.data.models`). Ranking a document (one pass per sentence) is cached on the model
and the document's text; the attention between sentences reuses the whole-document run of
:func:`app.data.models.run` and is cached per layer. The document is the shared ``text``
control, so a link carries it as ``text``; while that is still the app's default passage
(three sentences, too few to summarise), the summarize page reads :data:`DEFAULT_DOCUMENT`
instead.
"""

from __future__ import annotations

from app.data import cache, models, threads
from app.state import controls
from engine import bert, summarize

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


def document(text):
    """The document this page summarises for the shared ``text``."""
    return DEFAULT_DOCUMENT if text == controls.DEFAULT_TEXT else text


@cache.bounded(spinner="Embedding every sentence …")
def rank(text, folder=None):
    """LexRank over ``text``'s first :data:`app.state.controls.MAX_SENTENCES` sentences.

    Returns
    -------
    engine.summarize.Ranking, or the error saying why not (ModelUnavailableError saying how
    to install MiniLM, a sentence too long for the model)
    """
    loaded = models.model(folder)
    if isinstance(loaded, Exception):
        return loaded
    try:
        return summarize.rank_sentences(
            loaded, text, controls.MAX_SENTENCES, parallel=threads.parallel()
        )
    except bert.TooLongError as error:  # a sentence past a small model's positions
        return error


@cache.bounded
def sentence_attention(text, layer, folder=None):
    """Mean attention between the sentences of ``text``, read with the whole text at once.

    ``text`` is the part of the document that was ranked; ``layer``'s attention is
    averaged over its heads, then over each pair of sentences' tokens.

    Returns
    -------
    ndarray of shape (n_sent, n_sent), or the error (TooLongError, ModelUnavailableError)
    saying why not
    """
    run = models.run(folder, text)
    if isinstance(run, Exception):
        return run
    sentences = summarize.split_sentences(text)
    owner = summarize.token_sentences(run.offsets, sentences)
    weights = run.attentions[layer].mean(axis=0)  # -> [n, n]
    return summarize.sentence_attention(weights, owner, len(sentences))
