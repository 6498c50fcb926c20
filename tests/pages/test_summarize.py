"""The summarize page through AppTest: the summary, its table, the links, and bad input."""

import io

import numpy as np
import pandas as pd
import pytest
import streamlit as st
from apptest_support import (
    MAIN,
    cells_written,
    chart_z,
    charts,
    messages,
    open_app,
    page_script,
)
from streamlit.testing.v1 import AppTest

from app.data import documents
from app.state import controls
from app.views import sentences as sentence_views
from app.words import summary
from engine import checkpoint
from engine import summarize as sm
from engine.resources import minilm_dir

pytestmark = pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed")

DOCUMENT = (
    "Bees make honey from nectar. Honey keeps for years without spoiling.\n\n"
    "A hive holds one queen and thousands of workers! Do workers ever lay eggs? Rarely."
)


def open_summarize(query=None, **session):
    at = open_app("summarize", query, timeout=180, **session)
    assert not at.exception, [e.value for e in at.exception]
    return at


def table(at):
    return at.dataframe[0].value


def test_default_document_is_summarised():
    at = open_summarize()
    assert at.text_area(key="summarize_text").value == documents.DEFAULT_DOCUMENT
    rows = table(at)
    assert len(rows) == len(sm.split_sentences(documents.DEFAULT_DOCUMENT)) == 7
    assert at.slider(key="k").value == 2
    assert rows["in summary"].sum() == 2
    assert set(charts(at)) == {
        "summarize_similarity",
        "summarize_attention",
        "summarize_centrality",
    }
    assert "text" not in at.query_params  # the default document is the default text's
    assert "k" not in at.query_params


def test_the_page_says_which_text_it_summarises():
    at = open_summarize()
    assert any("A sample document" in c.value for c in at.caption)  # not the sidebar's text
    at.text_area(key="summarize_text").set_value(DOCUMENT).run()
    assert not any("A sample document" in c.value for c in at.caption)
    assert any("Your text, the one every page reads" in c.value for c in at.caption)


def test_extractive_against_abstractive_names_the_summarizers_it_means():
    """Issue 55: "the article's summarizer" spoke of an article the page never names."""
    at = open_summarize()
    (words,) = [m.value for m in at.markdown if "*abstractive*" in m.value]
    assert "article" not in words
    assert "BART (Lewis et al. 2020)" in words


def test_csv_scores_sum_to_one_and_its_summary_is_the_top_k():
    at = open_summarize()
    at.slider(key="k").set_value(3).run()
    assert at.query_params["k"] == "3"
    csv = pd.read_csv(io.StringIO(table(at).to_csv(index=False, float_format="%.6g")))
    assert list(csv.columns) == ["sentence", "text", "LexRank score", "in summary"]
    assert csv["LexRank score"].sum() == pytest.approx(1.0, abs=1e-5)
    top = set(csv["LexRank score"].nlargest(3).index)
    assert set(csv.index[csv["in summary"]]) == top
    # The page's table is the engine's ranking.
    model = checkpoint.load_minilm()
    ranking = sm.rank_sentences(model, documents.DEFAULT_DOCUMENT)
    np.testing.assert_allclose(csv["LexRank score"], ranking.scores, rtol=1e-5)
    assert list(csv["text"]) == [s.text for s in ranking.sentences]


def test_the_document_and_k_come_from_the_link():
    at = open_summarize({"text": DOCUMENT, "k": "3"})
    assert at.text_area(key="summarize_text").value == DOCUMENT
    assert at.slider(key="k").value == 3
    rows = table(at)
    assert list(rows["text"]) == [
        "Bees make honey from nectar.",
        "Honey keeps for years without spoiling.",
        "A hive holds one queen and thousands of workers!",
        "Do workers ever lay eggs?",
        "Rarely.",
    ]
    assert rows["in summary"].sum() == 3
    similarity = chart_z(at, "summarize_similarity")
    assert similarity.shape == (5, 5)
    np.testing.assert_allclose(np.diag(similarity), 1.0, atol=1e-6)


def test_typing_a_document_puts_it_in_the_link_and_the_shared_text():
    at = open_summarize()
    at.text_area(key="summarize_text").set_value(DOCUMENT).run()
    assert not at.exception
    assert at.session_state["text"] == DOCUMENT
    assert at.query_params["text"] == DOCUMENT
    assert len(table(at)) == 5


def test_k_larger_than_the_document_is_clamped():
    at = open_summarize({"k": "40"}, text="One. Two. Three.")
    assert at.slider(key="k").value == 3
    assert table(at)["in summary"].all()


def shown_k(at):
    """The k the browser's slider shows: the value the run set, else the widget's default.

    A slider whose range changed is a new widget; the browser starts it at its proto's
    ``default`` (its minimum) unless the run sent a value with ``set_value``.
    """
    proto = at.slider(key="k").proto
    return int((proto.value if proto.set_value else proto.default)[0])


def land_on_summarize():
    """The app opened at /summarize, as a browser does: the page is the session's first run.

    (``open_summarize`` runs the home page first, which leaves ``k`` in the session under
    its own name, so a slider made anew finds it; a session that starts on the page holds
    it only under the widget's id.)
    """
    at = AppTest.from_file(MAIN, default_timeout=180)
    at.switch_page(page_script("summarize"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_new_document_keeps_k():
    at = land_on_summarize()
    assert shown_k(at) == 2
    at.text_area(key="summarize_text").set_value(DOCUMENT).run()
    assert len(table(at)) == 5  # another range, so another slider
    assert shown_k(at) == 2
    assert table(at)["in summary"].sum() == 2
    assert "k" not in at.query_params
    assert not any("k is" in c.value for c in at.caption)
    at.run()  # the browser's next run sends the k it shows
    assert at.slider(key="k").value == 2


def test_a_shorter_document_clips_k_with_a_note_and_a_longer_one_gives_it_back():
    at = land_on_summarize()
    at.slider(key="k").set_value(4).run()
    at.text_area(key="summarize_text").set_value(
        "One cat sat. Two dogs ran. Three birds flew."
    ).run()
    assert shown_k(at) == 3
    assert table(at)["in summary"].all()
    notes = [c.value for c in at.caption if c.value.startswith("k is")]
    assert notes == [summary.clipped_k_note(4, 3)]
    assert "not the 4 you set" in notes[0]
    at.text_area(key="summarize_text").set_value(DOCUMENT).run()
    assert shown_k(at) == 4
    assert table(at)["in summary"].sum() == 4
    assert at.query_params["k"] == "4"
    assert not any(c.value.startswith("k is") for c in at.caption)


def test_a_bad_k_in_the_link_falls_back_with_a_warning():
    at = open_summarize({"k": "0"})
    assert any("k=" in m for m in messages(at, "warning"))
    assert at.slider(key="k").value == 2


def test_layer_slider_changes_the_attention_between_sentences():
    at = open_summarize()
    last = chart_z(at, "summarize_attention")
    at.select_slider(key="summarize_layer").set_value(0).run()
    first = chart_z(at, "summarize_attention")
    assert first.shape == last.shape == (7, 7)
    assert not np.allclose(first, last)
    assert "Layer 0" in charts(at)["summarize_attention"]["layout"]["title"]["text"]


@pytest.mark.parametrize("text", ["", "  \n\t "])
def test_empty_text_asks_for_a_document(text):
    at = open_summarize(text=text)
    assert any("Type or paste a document" in m for m in messages(at, "info"))
    assert not charts(at)


@pytest.mark.parametrize("text", ["Just one sentence here.", "no sentence ends at all"])
def test_one_sentence_is_its_own_summary(text):
    at = open_summarize(text=text)
    assert any("One sentence" in m for m in messages(at, "info"))
    rows = table(at)
    assert list(rows["LexRank score"]) == [1.0]
    assert list(rows["in summary"]) == [True]


def test_a_hundred_thousand_characters_are_capped():
    text = ("This sentence is one of many. " * 3400)[: controls.MAX_TEXT_CHARS]
    at = open_summarize(text=text)
    assert any(f"ranks the first {controls.MAX_SENTENCES}" in m for m in messages(at, "warning"))
    assert len(table(at)) == controls.MAX_SENTENCES


def test_a_hundred_thousand_characters_without_sentence_ends():
    text = ("word " * 20_000)[: controls.MAX_TEXT_CHARS]
    at = open_summarize(text=text)
    notes = " ".join(messages(at, "info"))
    assert "longer than 256 tokens" in notes
    # one sentence: no other sentence to attend to, so the document is not read whole
    assert any("no other sentence to attend to" in c.value for c in at.caption)
    assert "summarize_attention" not in charts(at)
    assert "summarize_centrality" in charts(at)


def test_a_document_too_long_to_read_whole_says_so():
    text = "This sentence has quite a few words in it, to make the document long. " * 40
    at = open_summarize(text=text)
    assert "at most 510" in " ".join(messages(at, "info"))  # too long for attention
    assert "summarize_attention" not in charts(at)
    assert "summarize_centrality" in charts(at)


def test_markup_in_the_document_stays_text():
    text = "**Bold** :red[red] $x$ <b>tag</b>. [link](http://example.com) ends here!"
    at = open_summarize(text=text)
    shown = [m.value for m in at.markdown]
    assert any("\\*\\*Bold\\*\\*" in m for m in shown)
    assert not any(":red[red]" in m for m in shown)


def test_highlighted_markdown_marks_the_summary_and_keeps_paragraphs():
    sentences = sm.split_sentences(DOCUMENT)
    md = summary.highlighted_markdown(DOCUMENT, sentences, np.full(5, 0.2), [1, 3])
    paragraphs = md.split("\n\n")
    assert len(paragraphs) == 2
    assert paragraphs[0].count(":orange-background[") == 1
    assert ":orange-background[Honey keeps for years without spoiling\\.]" in md
    assert md.count(":gray[(0.200)]") == 5
    broken = "A sentence\nover two lines. Next."
    md = summary.highlighted_markdown(broken, sm.split_sentences(broken), np.ones(2) / 2, [0])
    assert md.startswith(":orange-background[A sentence over two lines\\.]")


def test_sentence_heatmap_scales_to_its_largest_value_and_escapes_labels():
    pair = np.array([[0.02, 0.01], [np.nan, 0.005]])
    fig = sentence_views.figure(
        pair, ["S1 <b>x</b>", "S2 y"], "t", value_name="mean weight", digits=3
    )
    trace = fig.data[0]
    assert trace.zmin == 0.0
    assert trace.zmax == pytest.approx(0.02)
    assert trace.y[0] == "S1 &lt;b&gt;x&lt;/b&gt;"
    written = [[text for text, _ in row] for row in cells_written(fig)]
    assert written == [["0.020", "0.010"], ["", "0.005"]]  # to its digits
    assert np.isnan(trace.z[1][0])  # a sentence without tokens: a gap, a blank cell


def test_centrality_figure_stars_the_summary():
    fig = sentence_views.centrality_figure(
        ["S1 a", "S2 b", "S3 c"], [0.5, 0.2, 0.3], [0, 2], [0.1, 0.6, 0.3]
    )
    assert [trace.name for trace in fig.data] == ["LexRank score", "attention received"]
    assert list(fig.data[0].x) == ["★ S1 a", "S2 b", "★ S3 c"]
    only_scores = sentence_views.centrality_figure(["S1 a"], [1.0], [0])
    assert len(only_scores.data) == 1


def test_agreement_counts_the_shared_sentences():
    text = summary.agreement_markdown(np.array([0, 3]), np.array([3, 5]), 4)
    assert "**S1, S4**" in text
    assert "**S4, S6**" in text
    assert "layer 4" in text
    assert "1 of 2 in common" in text


def test_one_sentence_has_nothing_to_compare():
    at = open_summarize(text="Just one sentence here.")
    assert not any("in common" in m.value for m in at.markdown)


def test_cut_note_names_the_long_sentences():
    assert summary.cut_note(np.array([12, 40])) is None
    note = summary.cut_note(np.array([300, 12, 257, 256]))
    assert note.startswith("S1, S3: longer than 256 tokens")
    assert summary.cut_note(np.full(12, 999)).startswith(
        "S1, S2, S3, S4, S5, S6, S7, S8, S9, S10 …"
    )


def test_summary_table_rows():
    sentences = sm.split_sentences("A. B. C.")
    frame = sentence_views.summary_table(sentences, np.array([0.2, 0.5, 0.3]), [1, 2])
    assert list(frame["sentence"]) == [1, 2, 3]
    assert list(frame["in summary"]) == [False, True, True]


def test_missing_weights_say_how_to_install(monkeypatch):
    def unavailable(path=None):
        raise checkpoint.ModelUnavailableError("not installed")

    monkeypatch.setattr(checkpoint, "load_minilm", unavailable)
    st.cache_resource.clear()
    st.cache_data.clear()
    try:
        at = open_summarize()
        assert any("not installed" in e.value for e in at.error)
        assert not charts(at)
    finally:
        st.cache_resource.clear()
        st.cache_data.clear()
