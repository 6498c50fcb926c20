"""Token pickers after the text changes, and in links (issue #13, item 1).

A picker must never name one token while the figures use another: after new text it
keeps the chosen word (its nearest occurrence) or falls back to its starting token and
says so; the chosen token is in the link as ``position:word``.
"""

import pytest
from apptest_support import charts, open_app

from app.widgets import pickers

TROPHY = "The trophy would not fit in the suitcase because it was too big."


def picked(at, key):
    box = at.selectbox(key=key)
    return box.value, box.format_func(box.value).split(": ", 1)[1]


def options(at, key):
    """The picker's tokens, as it lists them ("3: it" → "it")."""
    return [option.split(": ", 1)[1] for option in at.selectbox(key=key).options]


def bar_word(at):
    title = charts(at)["att_bar"]["layout"]["title"]["text"]
    return title.split("“", 1)[1].split("”", 1)[0]


def test_nearest_token_and_link_form():
    labels = ["it", "was", "it", "big", "it"]
    assert pickers.nearest_token(labels, "it", 3) == 2
    assert pickers.nearest_token(labels, "IT", 4) == 4
    assert pickers.nearest_token(labels, "cat", 1) is None
    assert pickers.parse_token_param("13:because") == (13, "because")
    assert pickers.parse_token_param("5::") == (5, ":")
    for bad in ("because", "x:because", "-1:it", "3:"):
        with pytest.raises(ValueError, match="position:word"):
            pickers.parse_token_param(bad)


@pytest.mark.parametrize("choice", ["it", "because", "food"])
def test_attention_picker_keeps_the_word_after_new_text(choice):
    at = open_app("attention", tokenizer="words")
    labels = [label.lower() for label in options(at, "attention_query")]
    at.selectbox(key="attention_query").set_value(labels.index(choice)).run()
    assert picked(at, "attention_query")[1] == choice
    at.sidebar.text_area(key="text").set_value(TROPHY).run()
    assert not at.exception
    shown = picked(at, "attention_query")[1]
    assert shown == bar_word(at)  # the picker names the token the chart uses
    if choice in TROPHY.split():
        assert shown == choice
    else:  # gone from the text: back to the start, and said so
        assert shown == "it"
        assert any("not in the new text" in c.value for c in at.caption)


def test_chosen_query_is_in_the_link_and_a_link_restores_it():
    at = open_app("attention", tokenizer="words")
    labels = options(at, "attention_query")
    because = labels.index("because")
    at.selectbox(key="attention_query").set_value(because).run()
    assert at.query_params["query"] == f"{because}:because"

    again = open_app("attention", {"tokenizer": "words", "query": f"{because}:because"})
    assert not again.exception
    assert picked(again, "attention_query") == (because, "because")
    assert bar_word(again) == "because"
    assert not again.warning


def test_a_bad_query_in_a_link_warns_and_falls_back():
    at = open_app("attention", {"tokenizer": "words", "query": "3:zebra"})
    assert not at.exception
    assert any("query=" in w.value for w in at.warning)
    assert picked(at, "attention_query")[1] == "it"
