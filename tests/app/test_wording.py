"""The sentences app.words.wording builds from the engine's numbers: each names what they say."""

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import engine
from app.words import wording

LABELS = ["[CLS]", "The", "restaurant", "refused", "because", "it", "cooks", ".", "[SEP]"]


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (LABELS, 5),  # "it"
        (["[CLS]", "The", "lawyer", "said", "he", "lied", "[SEP]"], 4),  # the first pronoun
        (["[CLS]", ",", "Cats", "sleep", "[SEP]"], 2),  # the first word, not a marker or a comma
        (["[CLS]", "[SEP]"], 0),
        (["It", "rains", "it", "pours"], 0),  # case does not matter
    ],
)
def test_default_query(labels, expected):
    assert wording.default_query(labels) == expected


def test_a_text_without_it_is_told_so():
    assert wording.query_note(LABELS, 5) is None
    note = wording.query_note(["[CLS]", "Cats", "sleep", "[SEP]"], 1)
    assert note == "This text has no *it*: the row shown is its first word, “Cats”."


distinct_labels = [f"w{i}" for i in range(12)]


@given(arrays(np.float64, 12, elements=st.floats(-8, 8)), st.integers(0, 11))
def test_attends_names_the_strongest_key_and_its_weight(scores, query):
    row = engine.softmax(scores)
    sentence = wording.attends(row, distinct_labels, query)
    found = re.match(
        r"“w(\d+)” spends (\d\.\d\d) of its budget of 1 on (itself|“w(\d+)”)", sentence
    )
    assert found, sentence
    assert int(found.group(1)) == query
    strongest = query if found.group(3) == "itself" else int(found.group(4))
    assert row[strongest] == row.max()
    assert float(found.group(2)) == pytest.approx(row.max(), abs=0.005)


def test_attends_says_what_a_marker_is():
    row = np.zeros(len(LABELS))
    row[0], row[2] = 0.7, 0.3
    sentence = wording.attends(row, LABELS, 5)
    assert sentence.startswith("“it” spends 0.70 of its budget of 1 on “\\[CLS\\]”")
    assert "a marker the tokenizer adds" in sentence
    words_only = np.zeros(len(LABELS))
    words_only[[2, 3, 6]] = 0.6, 0.3, 0.1
    assert "marker" not in wording.attends(words_only, LABELS, 5)


def test_random_and_trained_names_each_rows_largest_share():
    untrained = np.full(len(LABELS), 1 / len(LABELS))
    untrained[3] += 0.05
    trained = np.zeros(len(LABELS))
    trained[2] = 1.0
    said = wording.random_and_trained(LABELS, 5, untrained, trained, "MiniLM's layer 3, head 1")
    assert said == (
        f"Row “it”: the random weights put their largest share, {untrained[3]:.3f}, on "
        "“refused”; MiniLM's layer 3, head 1 puts 1.000 on “restaurant”."
    )


def test_word_pieces_find_the_first_split_word():
    labels = ["[CLS]", "Their", "am", "##bian", "##ce", "was", "un", "##real", "[SEP]"]
    assert wording.word_pieces(labels) == ([2, 3, 4], "ambiance")
    assert wording.word_pieces(LABELS) is None
    assert "“ambiance” is not in the vocabulary whole" in wording.pieces_sentence(labels)
    assert "none is cut into pieces" in wording.pieces_sentence(LABELS)


def test_case_sentence_names_the_shared_id_only_when_both_cases_are_there():
    tokens, labels, ids = ["the", "cat", "the"], ["The", "cat", "the"], [1996, 4937, 1996]
    said = wording.case_sentence(tokens, labels, ids)
    assert "“The” is looked up as “the”: both are id 1996" in said
    said = wording.case_sentence(tokens[:2], labels[:2], ids[:2])
    assert "“The” is looked up in lower case, as id 1996" in said
    assert wording.case_sentence(["cat"], ["cat"], [4937]) is None


def test_tokens_sentences_by_tokenizer():
    tokenization = engine.tokenize("The ambiance", "words")
    assert wording.tokens_sentences(tokenization, "words") == [
        "This tokenizer keeps every word and punctuation mark whole."
    ]
    tokenization = engine.tokenize("The ambiance", "bpe")
    assert not any("lower-case" in s for s in wording.tokens_sentences(tokenization, "bpe"))


def test_finder_answer():
    class Head:
        def __init__(self, layer, head, weight):
            self.layer, self.head, self.weight = layer, head, weight

    ranked = [Head(3, 1, 0.516), Head(4, 3, 0.43), Head(5, 10, 0.38), Head(0, 0, 0.1)]
    assert wording.finder_answer(ranked, "it", "trophy") == (
        "Which head links “it” to “trophy” most? Layer 3, head 1, with weight 0.52; then "
        "layer 4, head 3 (0.43), layer 5, head 10 (0.38)."
    )


def test_plural():
    assert wording.plural(1, "step") == "1 step"
    assert wording.plural(3, "step") == "3 steps"


def test_a_bpe_split_word_is_named_whole_and_its_pieces_as_the_text_has_them():
    """Issue 55: byte-level BPE's pieces carry no "##"; the sentence finds them all the same."""
    tokenization = engine.tokenize("The ambiance was good.", "bpe")
    positions, word = wording.word_pieces(tokenization.labels, tokenization.continues)
    assert word == "ambiance"
    assert "".join(tokenization.labels[i] for i in positions) == "ambiance"
    (said,) = wording.tokens_sentences(tokenization, "bpe")
    assert said.startswith("Here “ambiance” is not in the vocabulary whole: it becomes “")
    assert "#" not in said
