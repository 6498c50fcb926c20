"""The decoder page through Streamlit's AppTest: steps, pickers, examples, unreadable input."""

import numpy as np
import pytest
from apptest_support import chart_z, charts, messages, open_app

from engine import seq2seq


def test_page_renders_the_translation_and_its_figures():
    at = open_app("decoder")
    assert not at.exception
    assert not messages(at, "warning")
    assert {"decoder_mask", "decoder_self", "decoder_cross", "decoder_alignment"} <= set(charts(at))
    assert at.text_input(key="decoder_source").value == "the third of march 2021"
    assert [c.value for c in at.main.code] == ["2021-03-03"]
    assert at.slider(key="decoder_step").value == 1
    assert chart_z(at, "decoder_self").shape == (1, 1)
    assert chart_z(at, "decoder_cross").shape == (1, 5)  # <s> × the third of march 2021


def test_step_slider_grows_the_masked_self_attention():
    at = open_app("decoder")
    at.slider(key="decoder_step").set_value(5).run()
    assert not at.exception
    weights = chart_z(at, "decoder_self")
    assert weights.shape == (5, 5)
    assert np.all(np.triu(weights, k=1) == 0)  # causal on screen
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)
    assert chart_z(at, "decoder_mask").shape == (5, 5)
    cross = chart_z(at, "decoder_cross")
    assert cross.shape == (5, 5)
    np.testing.assert_allclose(cross.sum(axis=1), 1.0, atol=1e-5)
    at.slider(key="decoder_step").set_value(11).run()
    assert chart_z(at, "decoder_self").shape == (11, 11)


def test_layer_and_head_pickers_change_the_figures():
    at = open_app("decoder", decoder_step=4)
    before = chart_z(at, "decoder_cross")
    at.radio(key="decoder_layer").set_value(1).run()
    after_layer = chart_z(at, "decoder_cross")
    at.select_slider(key="decoder_head").set_value(2).run()
    after_head = chart_z(at, "decoder_cross")
    assert not at.exception
    assert not np.allclose(before, after_layer)
    assert not np.allclose(after_layer, after_head)


def test_picking_an_example_translates_it():
    at = open_app("decoder")
    at.selectbox(key="decoder_example").set_value("march twenty-first 1999").run()
    assert not at.exception
    assert at.text_input(key="decoder_source").value == "march twenty-first 1999"
    assert [c.value for c in at.main.code] == ["1999-03-21"]


def test_a_shorter_translation_clamps_the_step():
    at = open_app("decoder", decoder_step=11)
    assert chart_z(at, "decoder_self").shape == (11, 11)
    at.text_input(key="decoder_source").set_value("").run()
    at.text_input(key="decoder_source").set_value("the first of may 2000").run()
    assert not at.exception
    assert at.slider(key="decoder_step").value <= 11


@pytest.mark.parametrize("text", ["", "  ?! ", "of " * 40])
def test_unreadable_input_gives_a_message(text):
    at = open_app("decoder")
    at.text_input(key="decoder_source").set_value(text).run()
    assert not at.exception
    assert any("Type a date" in m for m in messages(at, "info"))
    assert not charts(at)


def test_unknown_words_give_an_escaped_warning_and_still_translate():
    at = open_app("decoder")
    at.text_input(key="decoder_source").set_value("the thrid of march 2021").run()
    assert not at.exception
    warning = " ".join(messages(at, "warning"))
    assert "thrid" in warning
    assert r"\<unk\>" in warning  # escaped for Markdown, shown as typed
    assert len(at.main.code) == 1  # a translation is still shown
    assert charts(at)


def test_missing_weights_say_how_to_create_them(monkeypatch, tmp_path):
    monkeypatch.setattr(seq2seq, "TRANSLATOR_PATH", tmp_path / "translator.npz")
    at = open_app("decoder")
    assert not at.exception
    assert any("missing" in m for m in messages(at, "warning"))
    assert [c.value for c in at.main.code] == [seq2seq.TRAIN_COMMAND]
    assert not charts(at)
