"""Minimal pairs: two sentences one word apart, the words they differ by, where to start.

A minimal pair changes one word and little else; the heads whose weight moves between
the two are the ones that read that word. The examples are Winograd schemas (Levesque,
Davis & Morgenstern 2012, "The Winograd Schema Challenge"), in which the changed word
decides what "it" or "they" refers to. Pure: the box and buttons that set the pair are
:mod:`app.widgets.compare_box`.
"""

from __future__ import annotations

import difflib
import re
from typing import NamedTuple

from app.words.wording import PRONOUNS  # without "it", the query starts on the first of these


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


#: A minimal pair changes one run of at most this many words.
PAIR_MAX_WORDS = 3


#: What the two sentences are called when they are not a minimal pair.
PLAIN_NAMES = ("A", "B")


_WORD = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


def start_tokens(
    text, labels, words=(None, None), specials=("[CLS]", "[SEP]"), visible=None, continues=None
):
    """The query and key tokens the head finder starts on in one sentence.

    Each is the first that the sentence has of: the word in ``words`` (sentence A's query
    and key, when choosing B's), its minimal pair's word (when the sentence is one of
    :data:`MINIMAL_PAIRS`'), :data:`START_QUERY` or :data:`START_KEY`. Else the query
    starts on the first of :data:`PRONOUNS`, or the first token, and the key on the first
    other word not in :data:`ARTICLES`: never on one of the model's ``specials`` ([CLS],
    [SEP]; GPT-2 adds none) while the sentence has a token of its own.

    In a causal model (``visible`` given) a query sees only the keys before it, so the
    query without a pronoun starts on the text's last word, not its first (which sees
    nothing but itself), and the key is one the query sees: the first of those words
    among them, else the first visible other word, else the query itself.

    Parameters
    ----------
    text : str, the sentence
    labels : list of str, its tokens as the model reads them
    words : (str or None, str or None), the query and key words to prefer
    specials : sequence of str, the tokens the model adds around the sentence
    visible : callable, optional, query position -> slice of the keys it sees
        (:func:`engine.layer_config.visible_keys`); None for an encoder, whose tokens see all
    continues : list of bool, optional, which tokens continue the word before them
        (:attr:`engine.bert.BertRun.continues`); without it, WordPiece's ``##`` says so

    Returns
    -------
    query, key : int, token positions
    """
    pair = next((p for p in MINIMAL_PAIRS if text in (p.a, p.b)), None)
    inner = [i for i, label in enumerate(labels) if label not in specials] or list(
        range(len(labels))
    )
    lowered = {i: labels[i].lower() for i in inner}
    whole = _whole_words(labels, inner, continues)

    def first(candidates, among=inner):
        for word in candidates:
            found = [i for i in among if word is not None and word.lower() in whole[i]]
            if found:
                return found[0]
        return None

    query = first((words[0], pair and pair.query, START_QUERY, *PRONOUNS))
    if query is None:  # the last word's first piece ("night", not "ight"), else the last token
        starts = [i for i in inner if not (continues and continues[i])]
        wordy = [i for i in starts if lowered[i].isalpha()] or inner
        query = wordy[-1] if visible is not None else inner[0]
    seen = (
        inner if visible is None else [i for i in inner if i in range(len(labels))[visible(query)]]
    )
    key = first((words[1], pair and pair.key, START_KEY), seen)
    if key is None:
        others = [i for i in seen if i != query and lowered[i].isalpha()]
        key = next(
            (i for i in others if lowered[i] not in ARTICLES), (others or seen or [query])[0]
        )
    return query, key


def _whole_words(labels, positions, continues=None):
    """Each position's token, lower-cased, and the whole word it starts ("council" "##men").

    ``continues`` says which tokens continue the word before them (a byte-level BPE's
    "council" "men"); without it, those with WordPiece's ``##``.
    """
    if continues is None:
        continues = [label.startswith("##") for label in labels]
    words = {}
    for i in positions:
        word = labels[i]
        for j in range(i + 1, len(labels)):
            if not continues[j]:
                break
            word += labels[j].removeprefix("##")
        words[i] = {labels[i].lower(), word.lower()}
    return words


def names(text_a, text_b):
    """What the two sentences are called: the words that differ, or "A" and "B".

    A word diff of the two texts (words and punctuation, ignoring case): the words
    between what both start with and what both end with. When that is one run of at
    most :data:`PAIR_MAX_WORDS` words replaced by another, with no word in common,
    each sentence is named by its side of that run, with the shared word before it for
    context ("too big" and "too small"; "big" alone says less). Otherwise (several
    changes, a longer one, words only added or removed, punctuation alone)
    :data:`PLAIN_NAMES`.

    Parameters
    ----------
    text_a, text_b : str

    Returns
    -------
    (str, str)
    """
    words_a, words_b = _WORD.findall(text_a), _WORD.findall(text_b)
    low_a, low_b = [w.lower() for w in words_a], [w.lower() for w in words_b]
    a0 = 0  # the words both start with …
    while a0 < min(len(low_a), len(low_b)) and low_a[a0] == low_b[a0]:
        a0 += 1
    tail = 0  # … and end with
    while tail < min(len(low_a), len(low_b)) - a0 and low_a[-1 - tail] == low_b[-1 - tail]:
        tail += 1
    a1, b1 = len(low_a) - tail, len(low_b) - tail
    runs = (words_a[a0:a1], words_b[a0:b1])
    if any(len(run) > PAIR_MAX_WORDS or not any(w[0].isalnum() for w in run) for run in runs):
        return PLAIN_NAMES  # more than a few words, or words only added, or punctuation
    shared = difflib.SequenceMatcher(a=low_a[a0:a1], b=low_b[a0:b1], autojunk=False)
    if any(size for _, _, size in shared.get_matching_blocks()):
        return PLAIN_NAMES  # two changes with a shared word between them
    before = [words_a[a0 - 1]] if a0 > 0 and words_a[a0 - 1][0].isalnum() else []
    return tuple(" ".join(before + run) for run in runs)
