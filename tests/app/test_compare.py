"""Two sentences compared (/pretrained's minimal pairs): their names, the grids, the note."""

import numpy as np
import pytest
from apptest_support import cells_written
from hypothesis import given
from hypothesis import strategies as st

from app.views import compare
from app.words import minimal_pairs
from engine import analysis

WINOGRAD = (
    "The trophy would not fit in the suitcase because it was too big.",
    "The trophy would not fit in the suitcase because it was too small.",
)


@pytest.mark.parametrize(
    ("pair", "expected"),
    [
        (WINOGRAD, ("too big", "too small")),
        (minimal_pairs.MINIMAL_PAIRS[0][1:3], ("too big", "too small")),
        (minimal_pairs.MINIMAL_PAIRS[1][1:3], ("too tired", "too wide")),
        (minimal_pairs.MINIMAL_PAIRS[2][1:3], ("they feared", "they advocated")),
    ],
)
def test_a_minimal_pair_is_named_after_the_words_that_differ(pair, expected):
    assert minimal_pairs.names(*pair) == expected


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The cat sat on the mat.", "A dog ran in the park."),  # not a pair at all
        ("The cat sat.", "The cat sat on the mat."),  # words added, none replaced
        ("It is big.", "It is big!"),  # punctuation alone
        ("Big dogs bark at night.", "Big dogs bark at night."),  # the same sentence
        ("one two three four five six", "one 2 3 4 5 six"),  # a run longer than three words
        ("The red cat sat.", "The blue cat ran."),  # two separate changes
    ],
)
def test_sentences_that_are_not_a_minimal_pair_are_a_and_b(a, b):
    assert minimal_pairs.names(a, b) == minimal_pairs.PLAIN_NAMES


WORDS = st.lists(st.sampled_from(["the", "cat", "sat", "on", "a", "mat", "dog", "ran"]), min_size=3)


@given(WORDS, st.data())
def test_one_word_replaced_names_that_word_on_each_side(words, data):
    position = data.draw(st.integers(1, len(words) - 1))
    new = data.draw(st.sampled_from(["zebra", "quietly", "seven"]))
    changed = [*words[:position], new, *words[position + 1 :]]
    a, b = minimal_pairs.names(" ".join(words), " ".join(changed))
    assert b.split()[-1] == new
    assert a.split()[-1] == words[position]
    assert a.split()[:-1] == b.split()[:-1] == [words[position - 1]]  # the word before


GRID_A = np.linspace(0.0, 0.6, 72).reshape(6, 12)


def test_the_difference_has_a_symmetric_scale_with_a_floor_said_in_its_colour_bar():
    small = GRID_A + 0.035  # a change of 0.035 must not fill the scale
    fig = compare.figure(GRID_A, small, ("it", "trophy"), ("it", "trophy"))
    change = fig.data[2]
    assert (change.zmin, change.zmax) == (-compare.CHANGE_FLOOR, compare.CHANGE_FLOOR)
    assert "±0.1" in change.colorbar.title.text
    large = GRID_A.copy()
    large[3, 1] += 0.25
    fig = compare.figure(large, GRID_A, ("it", "trophy"), ("it", "trophy"))
    assert fig.data[2].zmax == pytest.approx(0.25) == -fig.data[2].zmin
    assert "±0.25" in fig.data[2].colorbar.title.text


def test_every_grid_writes_its_numbers():
    b = GRID_A[::-1]
    fig = compare.figure(GRID_A, b, ("it", "trophy"), ("it", "trophy"))
    for index, values, fmt in zip(
        range(3), (GRID_A, b, GRID_A - b), ("{:.2f}", "{:.2f}", "{:+.2f}"), strict=True
    ):
        assert fig.data[index].texttemplate == "%{text}"
        written = cells_written(fig, index)  # white in the panel, black over it
        assert np.array(written).shape == (6, 12, 2)
        assert written[3][1][0] == fmt.format(np.float32(values[3, 1]))
    same = compare.figure(GRID_A, GRID_A + 1e-4, ("it", "a"), ("it", "a"))
    written = {text for row in cells_written(same, 2) for text, _ in row}
    assert written == {"0.00"}  # no "−0.00"


def test_titles_and_columns_are_named_after_the_sentences():
    names = minimal_pairs.names(*WINOGRAD)
    fig = compare.figure(GRID_A, GRID_A, ("it", "trophy"), ("it", "trophy"), names)
    titles = [annotation.text for annotation in fig.layout.annotations]
    assert "too big" in titles[0]
    assert "too small" in titles[1]
    assert titles[2] == "“too big” − “too small”"
    assert "too big" in fig.layout.title.text
    frame = compare.table(analysis.rank_changes(GRID_A, GRID_A + 0.01), names)
    assert list(frame.columns) == [
        "layer",
        "head",
        "weight, too big",
        "weight, too small",
        "change, too big − too small",
    ]
    plain = compare.table(analysis.rank_changes(GRID_A, GRID_A))
    assert "weight_a" not in plain.columns


def test_the_note_says_what_size_of_change_stands_out():
    b = GRID_A.copy()
    b[2, 5] -= 0.3
    note = compare.change_note(analysis.rank_changes(GRID_A, b), minimal_pairs.names(*WINOGRAD))
    assert "median head moves by 0.000" in note
    assert "1 of the 72 heads by 0.1 or more" in note
    assert "layer 2, head 5, +0.300" in note
    assert "“too big” − “too small”" in note


def test_start_tokens_skip_only_the_models_own_special_tokens():
    # GPT-2 adds no token: its first and last tokens are the sentence's own.
    labels = ["It", "rained", "on", "the", "tents"]
    assert minimal_pairs.start_tokens("It rained on the tents", labels, specials=()) == (0, 1)
    with_specials = ["<s>", *labels, "</s>"]  # RoBERTa's: never a start while a word is left
    starts = minimal_pairs.start_tokens("It rained", with_specials, specials=("<s>", "</s>"))
    assert starts == (1, 2)


def test_a_causal_models_start_tokens_are_a_late_query_and_a_key_it_sees():
    """Issue 55: a decoder started on query 0 and key 1, a key the query cannot see."""

    def causal(query):
        return slice(0, query + 1)

    def window(query):  # a sliding window of 3 tokens
        return slice(max(0, query - 2), query + 1)

    labels = ["Cats", "sleep", "and", "dogs", "guard", "the", "house", "."]
    text = "Cats sleep and dogs guard the house."
    assert minimal_pairs.start_tokens(text, labels, specials=(), visible=causal) == (6, 0)
    assert minimal_pairs.start_tokens(text, labels, specials=(), visible=window) == (6, 4)
    labels = ["The", "restaurant", "refused", "because", "it", "was", "full"]
    text = "The restaurant refused because it was full"
    assert minimal_pairs.start_tokens(text, labels, specials=(), visible=causal) == (4, 1)
    after = ["It", "was", "the", "restaurant"]  # "restaurant" comes after "it": not seen
    starts = minimal_pairs.start_tokens("It was the restaurant", after, specials=(), visible=causal)
    assert starts == (0, 0)  # the first token sees itself alone


def test_a_bpe_pairs_word_is_found_whole_across_its_pieces():
    labels = ["The", "old", "council", "men", "refused", "because", "they", "feared"]
    continues = [False, False, False, True, False, False, False, False]
    text = "The old councilmen refused because they feared"
    words = ("they", "councilmen")
    assert minimal_pairs.start_tokens(text, labels, words, (), continues=continues) == (6, 2)
    assert minimal_pairs.start_tokens(text, labels, words, ()) == (6, 1)  # "old": not found
