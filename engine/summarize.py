"""Extractive summarization with MiniLM sentence embeddings and continuous LexRank.

The method (Erkan & Radev 2004, "LexRank: Graph-based Lexical Centrality as Salience in
Text Summarization", JAIR 22, section 3.3, continuous LexRank): split the text into
sentences; embed each sentence on its own with all-MiniLM-L6-v2 the way
sentence-transformers does for this model (the mean of the last hidden states over all
its tokens, [CLS] and [SEP] included, then L2-normalised); compare every pair by cosine
similarity, negatives set to 0; and rank the sentences by the stationary distribution of
a random walk on that similarity graph, with damping. The summary is the k most central
sentences, in document order.

Beside it, what the model's own attention says: the whole document encoded at once, and
the attention between its sentences, token weights averaged per pair of sentences.

Beyond the dimension vocabulary of :mod:`engine`, ``n_sent`` counts sentences.
"""

from __future__ import annotations

import itertools
import re
from typing import NamedTuple

import numpy as np

from engine import bert, blas

__all__ = [
    "DAMPING",
    "SENTENCE_MAX_TOKENS",
    "LexRank",
    "Ranking",
    "Sentence",
    "SentenceEmbeddings",
    "attention_inflow",
    "cosine_similarity",
    "embed_sentences",
    "lexrank",
    "rank_sentences",
    "sentence_attention",
    "split_sentences",
    "token_sentences",
    "top_sentences",
]

#: The probability of following a similarity edge rather than jumping to a random
#: sentence; Erkan & Radev's d (the jump probability, 0.1–0.2 in their experiments) is
#: 1 − DAMPING.
DAMPING = 0.85
#: Tokens per sentence, [CLS] and [SEP] included, that sentence-transformers feeds this
#: model (``max_seq_length`` in the model's sentence_bert_config.json); longer sentences
#: are cut, as it cuts them.
SENTENCE_MAX_TOKENS = 256

_SENTENCE_END = re.compile(r"[.!?](?=\s)")


class Sentence(NamedTuple):
    """One sentence: its text, without the whitespace around it, and where it lies.

    ``text == document[start:end]``.
    """

    text: str
    start: int
    end: int


class SentenceEmbeddings(NamedTuple):
    """Sentence embeddings and what the model read of each sentence.

    Attributes
    ----------
    embeddings : float32 ndarray of shape (n_sent, d_model)
        Unit rows.
    n_tokens : int ndarray of shape (n_sent,)
        Tokens the sentence has, [CLS] and [SEP] included, before any cut.
    """

    embeddings: np.ndarray
    n_tokens: np.ndarray


class LexRank(NamedTuple):
    """The stationary distribution of the LexRank walk and how it was reached.

    Attributes
    ----------
    scores : float64 ndarray of shape (n_sent,)
        Non-negative, summing to 1.
    iterations : int
        Power-iteration steps taken.
    """

    scores: np.ndarray
    iterations: int


class Ranking(NamedTuple):
    """A document's sentences ranked by LexRank on their MiniLM embeddings.

    Attributes
    ----------
    sentences : list of Sentence
        The sentences ranked: the document's first ``max_sentences``.
    n_left_out : int
        Sentences after those, not ranked.
    n_tokens : int ndarray of shape (n_sent,)
        Tokens per sentence with [CLS] and [SEP], before the cut at SENTENCE_MAX_TOKENS.
    similarity : float64 ndarray of shape (n_sent, n_sent)
    scores : float64 ndarray of shape (n_sent,), summing to 1
    iterations : int
    """

    sentences: list[Sentence]
    n_left_out: int
    n_tokens: np.ndarray
    similarity: np.ndarray
    scores: np.ndarray
    iterations: int


def split_sentences(text):
    """Cut ``text`` into sentences at ``.``, ``!`` or ``?`` followed by whitespace.

    The mark stays with its sentence; whitespace around sentences is dropped, and so are
    sentences that would be empty. Text without such a mark is one sentence. This is
    the simple rule and nothing cleverer: "e.g. this" is cut after "e.g.".

    Parameters
    ----------
    text : str

    Returns
    -------
    list of Sentence, in document order; empty for blank text
    """
    cuts = [0, *(match.end() for match in _SENTENCE_END.finditer(text)), len(text)]
    sentences = []
    for start, end in itertools.pairwise(cuts):
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            lead = len(piece) - len(piece.lstrip())
            sentences.append(Sentence(stripped, start + lead, start + lead + len(stripped)))
    return sentences


def embed_sentences(model, sentences, max_tokens=SENTENCE_MAX_TOKENS, parallel=True):
    r"""Each sentence's embedding: its tokens' last hidden states, averaged, unit length.

    .. math:: e = \frac{\bar h}{\lVert \bar h \rVert},\qquad
              \bar h = \frac1n \sum_{i=1}^{n} h^{(L)}_i

    over all n tokens of the sentence, [CLS] and [SEP] included: sentence-transformers'
    mean pooling and Normalize modules for all-MiniLM-L6-v2 (Reimers & Gurevych 2019,
    "Sentence-BERT", section 3). Each sentence runs on its own, so there is no padding to
    mask. A sentence longer than ``max_tokens`` keeps its first ``max_tokens − 1``
    tokens and its [SEP], as sentence-transformers' tokenizer truncation does.

    Parameters
    ----------
    model : engine.checkpoint.Model
    sentences : sequence of str, length n_sent
    max_tokens : int, at most the model's positions
    parallel : bool or int, as in :func:`engine.bert.run_ids`: the same bits

    Returns
    -------
    SentenceEmbeddings
    """
    embeddings = np.empty((len(sentences), model.config.d_model), dtype=np.float32)
    n_tokens = np.empty(len(sentences), dtype=np.intp)
    for s, sentence in enumerate(sentences):
        ids = model.tokenizer.encode(sentence).ids  # [CLS] … [SEP]
        n_tokens[s] = len(ids)
        if len(ids) > max_tokens:
            ids = ids[: max_tokens - 1] + ids[-1:]  # keep [SEP] at the end
        last = bert.run_ids(model, ids, parallel=parallel).hidden_states[-1]  # -> [n, d_model]
        mean = last.mean(axis=0)  # -> [d_model]
        embeddings[s] = mean / np.linalg.norm(mean)
    return SentenceEmbeddings(embeddings, n_tokens)


@blas.one_thread
def cosine_similarity(embeddings):  # [n_sent, d_model] -> [n_sent, n_sent]
    r"""Cosine similarity between every pair of sentences, negatives set to 0.

    .. math:: S_{uv} = \max\!\left(0,\ \frac{e_u \cdot e_v}
              {\lVert e_u\rVert\,\lVert e_v\rVert}\right)

    LexRank reads S as the weights of an undirected graph, which must not be negative.
    The diagonal is each sentence's similarity to itself, 1.

    Parameters
    ----------
    embeddings : ndarray of shape (n_sent, d_model), no zero rows

    Returns
    -------
    float64 ndarray of shape (n_sent, n_sent), symmetric, in [0, 1]
    """
    e = np.asarray(embeddings, dtype=np.float64)
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    return np.clip(e @ e.T, 0.0, 1.0)  # rounding can put the diagonal a hair above 1


@blas.one_thread
def lexrank(similarity, damping=DAMPING, tol=1e-12, max_iter=10_000):
    r"""Continuous LexRank (Erkan & Radev 2004, section 3.3): the centrality of each sentence.

    .. math:: p = \frac{1-\delta}{N}\,\mathbf 1 + \delta\, M^\top p,\qquad
              M_{uv} = \frac{S_{uv}}{\sum_w S_{uw}}

    the stationary distribution of a walk that, from sentence u, moves to v with
    probability proportional to their similarity (with probability δ) or jumps to any
    sentence (1 − δ). Found by power iteration from the uniform distribution until the
    L1 change is below ``tol``; the jump makes the chain ergodic, so it converges, with
    error shrinking at least by δ per step. A row of zeros (a sentence similar to
    nothing, itself included) jumps uniformly.

    Parameters
    ----------
    similarity : ndarray of shape (n_sent, n_sent), non-negative
    damping : float in [0, 1]
        δ, the probability of following an edge.
    tol : float
    max_iter : int

    Returns
    -------
    LexRank, scores summing to 1
    """
    s = np.asarray(similarity, dtype=np.float64)
    n = s.shape[0]
    if n == 0:
        return LexRank(np.zeros(0), 0)
    degree = s.sum(axis=1, keepdims=True)  # -> [n_sent, 1]
    m = np.divide(s, degree, out=np.full_like(s, 1.0 / n), where=degree > 0)  # rows sum to 1
    p = np.full(n, 1.0 / n)
    iterations = 0
    while iterations < max_iter:
        updated = (1.0 - damping) / n + damping * (m.T @ p)
        iterations += 1
        change = np.abs(updated - p).sum()
        p = updated
        if change < tol:
            break
    return LexRank(p / p.sum(), iterations)


def top_sentences(scores, k):
    """The summary: the ``k`` highest-scoring sentences, in document order.

    Ties go to the earlier sentence. ``k`` is clipped to [0, n_sent].

    Parameters
    ----------
    scores : ndarray of shape (n_sent,)
    k : int

    Returns
    -------
    int ndarray of shape (min(k, n_sent),), ascending
    """
    order = np.argsort(-np.asarray(scores), kind="stable")
    return np.sort(order[: max(0, min(k, len(order)))])


def token_sentences(offsets, sentences):
    """Which sentence each token of the whole document belongs to.

    Parameters
    ----------
    offsets : sequence of (int, int), length n
        Each token's character span in the document, (0, 0) for [CLS] and [SEP]
        (:attr:`engine.bert.BertRun.offsets`).
    sentences : sequence of Sentence, spans in the same document

    Returns
    -------
    int ndarray of shape (n,): the sentence's index, or -1 for [CLS], [SEP] and tokens
    outside every sentence
    """
    starts = np.array([start for start, _ in offsets], dtype=np.intp)
    ends = np.array([end for _, end in offsets], dtype=np.intp)
    owner = np.full(len(offsets), -1, dtype=np.intp)
    for s, sentence in enumerate(sentences):
        inside = (starts >= sentence.start) & (starts < sentence.end) & (ends > starts)
        owner[inside] = s
    return owner


@blas.one_thread
def sentence_attention(weights, owner, n_sentences):  # [n, n], [n] -> [n_sent, n_sent]
    r"""Mean attention from one sentence's tokens to another's.

    .. math:: A_{ab} = \frac{1}{|a|\,|b|} \sum_{i \in a} \sum_{j \in b} W_{ij}

    Usually ``W`` is one layer's attention averaged over its heads. A mean over token
    pairs, not a sum, so long sentences do not win by their length alone.

    Parameters
    ----------
    weights : ndarray of shape (n, n)
        Rows are query tokens, columns key tokens.
    owner : int ndarray of shape (n,)
        Each token's sentence (:func:`token_sentences`); tokens marked -1 are left out.
    n_sentences : int

    Returns
    -------
    float64 ndarray of shape (n_sent, n_sent); NaN in the rows and columns of a sentence
    with no tokens
    """
    owner = np.asarray(owner)
    membership = (owner[None, :] == np.arange(n_sentences)[:, None]).astype(np.float64)
    sums = membership @ np.asarray(weights, dtype=np.float64) @ membership.T  # -> [n_sent, n_sent]
    sizes = membership.sum(axis=1)  # -> [n_sent]
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / np.outer(sizes, sizes)


def attention_inflow(pair):  # [n_sent, n_sent] -> [n_sent]
    r"""The share of attention each sentence receives from the other sentences.

    .. math:: r_b = \frac{\sum_{a \ne b} A_{ab}}{\sum_{c}\sum_{a \ne c} A_{ac}}

    The diagonal is left out: tokens attend heavily within their own sentence, and that
    says nothing about which sentences the others look at. The counterpart, in attention,
    of LexRank's centrality.

    Parameters
    ----------
    pair : ndarray of shape (n_sent, n_sent), from :func:`sentence_attention`

    Returns
    -------
    float64 ndarray of shape (n_sent,), summing to 1; a single sentence gets 1; a
    sentence with no tokens (NaN row and column) gets 0
    """
    a = np.nan_to_num(np.asarray(pair, dtype=np.float64), nan=0.0)
    n = a.shape[0]
    if n == 1:
        return np.ones(1)
    received = a.sum(axis=0) - np.diag(a)  # -> [n_sent]
    total = received.sum()
    return received / total if total > 0 else np.full(n, 1.0 / n)


def rank_sentences(model, text, max_sentences=None, damping=DAMPING, parallel=True):
    """The whole method: split, embed each sentence, compare, and rank by LexRank.

    Parameters
    ----------
    model : engine.checkpoint.Model
    text : str
    max_sentences : int, optional
        Rank only the first this many sentences (each is one forward pass).
    damping : float
    parallel : bool or int, as in :func:`engine.bert.run_ids`: the same bits

    Returns
    -------
    Ranking; with no sentences, every array is empty
    """
    sentences = split_sentences(text)
    kept = sentences[:max_sentences]
    encoded = embed_sentences(model, [sentence.text for sentence in kept], parallel=parallel)
    similarity = cosine_similarity(encoded.embeddings)
    ranked = lexrank(similarity, damping)
    return Ranking(
        kept,
        len(sentences) - len(kept),
        encoded.n_tokens,
        similarity,
        ranked.scores,
        ranked.iterations,
    )
