"""Every page through Streamlit's AppTest: renders, reacts to its controls, survives bad input."""

import json

import numpy as np
import pytest
from apptest_support import (
    RANDOM,
    SCALE_CHARTS,
    TOY_PAGES,
    chart_payloads,
    chart_z,
    charts,
    control,
    decode,
    messages,
    move,
    open_app,
    scale_frames,
    scale_shown,
    scale_slider,
    stop_frames,
)

import engine
from app.state import controls
from app.views import attention_maps, style
from engine import book

PAGES = [*TOY_PAGES, "book"]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_figures_without_exception(page):
    at = open_app(page)
    assert not at.exception
    assert len(charts(at)) >= 1


def engine_heads(text, scale):
    """The engine's single head on ``text`` (the page's defaults: d_model 16, seed 0)."""
    tokens = engine.tokenize(text, controls.default_tokenizer()).tokens
    return engine.run_toy(tokens, 16, 1, 0, scale=scale).attention.heads


def test_scale_slider_changes_the_scaled_scores_and_weights():
    at = open_app("attention", RANDOM)
    before = charts(at)
    assert scale_shown(at) == "0.25 = 1/√16 (default)"
    at.session_state["scale"] = 4.0  # what releasing the slider on 4 does
    at.run()
    assert scale_shown(at) == "4"
    after = charts(at)
    raw_before, raw_after = (decode(c["att_raw"]["data"][0]["z"]) for c in (before, after))
    np.testing.assert_array_equal(raw_before, raw_after)  # raw scores do not depend on the scale
    # At 43 tokens the browser draws every stop from the float32 frames: what the charts
    # show at 4 is the frames' stop at 4, the engine's numbers there.
    header, frames = scale_frames(at)
    stop = header["scales"].index(4.0)
    heads = engine_heads(controls.DEFAULT_TEXT, 4.0)
    np.testing.assert_allclose(frames["weights"][stop], heads.weights[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(frames["scaled"][stop], heads.masked[0], rtol=1e-6, atol=1e-6)
    default = header["scales"].index(0.25)
    sharpness = frames["weights"].max(axis=2).mean(axis=1)
    assert sharpness[stop] > sharpness[default]  # sharper rows
    assert at.query_params["scale"] == "4.0"


def test_charts_drawn_from_frames_send_the_same_data_at_every_stop():
    """Streamlit resends an unchanged element as a reference, so a step costs no figure."""
    at = open_app("attention", RANDOM)
    before = chart_payloads(at)
    for scale in (4.0, 0.001953125):
        at.session_state["scale"] = scale
        at.run()
        after = chart_payloads(at)
        for key in SCALE_CHARTS:
            assert after[key] == before[key], key
            assert after[key]["live"]["drawn"] == stop_of(0.25)


def test_the_weights_hover_is_the_entry_the_frames_fill_at_every_stop():
    """The browser only swaps arrays: the entry of each cell's hover data that the binding
    names holds, in the figure drawn, the frames' scaled scores at that stop."""
    at = open_app("attention", RANDOM)
    weights = chart_payloads(at)["att_weights"]
    header, frames = scale_frames(at)
    assert weights["live"]["hover"] == [
        ["scaled", attention_maps.SCALED_SCORE],
        ["scores", attention_maps.RAW_SCORE],
    ]
    assert "%{customdata[1]:.3f}" in charts(at)["att_weights"]["data"][0]["hovertemplate"]
    assert "%{customdata[0]:.3f}" in charts(at)["att_weights"]["data"][0]["hovertemplate"]
    cells = decode(charts(at)["att_weights"]["data"][0]["customdata"])
    drawn = weights["live"]["drawn"] - header["first"]
    np.testing.assert_array_equal(
        cells[..., attention_maps.SCALED_SCORE], frames["scaled"][drawn].astype(np.float32)
    )
    # the raw scores, the same at every stop: one frame
    assert header["arrays"]["scores"]["shape"][0] == 1
    np.testing.assert_array_equal(cells[..., attention_maps.RAW_SCORE], frames["scores"][0])


def test_the_slider_places_its_thumb_only_when_python_moves_the_scale():
    """A full run that keeps the scale leaves the thumb alone; one that moves it places it."""
    at = open_app("attention", RANDOM)
    first = scale_slider(at)
    at.run()
    assert scale_slider(at) == first
    at.session_state["d_model"] = 64  # the default scale follows d_k: 1/√64
    at.run()
    moved = scale_slider(at)
    assert moved["placed"] != first["placed"]
    assert moved["value"] == stop_of(0.125, d_model=64)


def test_without_float32_frames_the_server_draws_the_exact_figures():
    text = " ".join(["the cat sat on the mat while the dog slept by the door"] * 8)  # 96 tokens
    at = open_app("attention", RANDOM | {"text": text})
    header, _ = scale_frames(at)
    assert "scaled" not in header["arrays"]  # float32 with them would pass 4 MB
    at.session_state["scale"] = 4.0
    at.run()
    payloads = chart_payloads(at)
    assert "drawn" not in payloads["att_weights"]["live"]
    heads = engine_heads(text, 4.0)
    np.testing.assert_allclose(chart_z(at, "att_weights"), heads.weights[0], atol=1e-6)
    shown = chart_z(at, "att_scaled")
    finite = np.isfinite(heads.masked[0])
    np.testing.assert_allclose(shown[finite], heads.masked[0][finite], rtol=1e-6, atol=1e-5)


def test_past_128_tokens_each_stop_sends_its_own_frames():
    """The charts keep the same data from stop to stop; the frames hold one stop each: the
    current one and its neighbours, so the browser has the next keyboard step's."""
    text = " ".join(["the cat sat on the mat while the dog slept by the door"] * 16)  # 192
    at = open_app("attention", RANDOM | {"text": text})
    before = chart_payloads(at)
    at.session_state["scale"] = 4.0
    at.run()
    held = stop_frames(at)
    stop = stop_of(4.0)
    assert sorted(held) == [stop - 1, stop, stop + 1]
    options = controls.scale_options(16, 1)
    for near, (header, _) in held.items():
        assert header["scales"] == [options[near]]
        assert header["id"] == held[stop][0]["id"]  # one name: the charts follow every stop
    frames = held[stop][1]
    after = chart_payloads(at)
    for key in ("att_scaled", "att_weights", "att_output", "att_bar", "att_saturation"):
        assert after[key] == before[key], key
    heads = engine_heads(text, 4.0)
    np.testing.assert_allclose(chart_z(at, "att_weights"), heads.weights[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(frames["scaled"][0], heads.masked[0], rtol=1e-6, atol=1e-6)
    at.session_state["scale"] = options[0]  # the end of the grid: one neighbour
    at.run()
    assert sorted(stop_frames(at)) == [0, 1]


def stop_of(scale, d_model=16, heads=1):
    """The slider's stop of ``scale`` (by default at the page's d_model 16 and one head)."""
    return controls.scale_options(d_model, heads).index(scale)


def test_weights_rows_sum_to_one_on_screen():
    at = open_app("attention", RANDOM)
    w = chart_z(at, "att_weights")
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-5)
    assert w.shape == (43, 43)  # the default passage in WordPiece, without [CLS]/[SEP]


def test_link_sets_the_controls():
    query = {"d_model": "32", "heads": "4", "causal": "1", "pe": "sinusoidal", "scale": "1.0"}
    query |= RANDOM
    at = open_app("attention", {**query, "text": "the cat sat on the mat"})
    assert not at.exception
    assert not messages(at, "warning")
    assert at.sidebar.select_slider(key="d_model").value == 32
    assert at.sidebar.select_slider(key="heads").value == 4
    assert control(at, "causal")["value"] == 1
    assert scale_shown(at) == "1 (no scaling)"
    w = chart_z(at, "att_weights")
    assert w.shape == (6, 6)
    assert np.all(np.triu(w, k=1) == 0)  # causal
    assert at.query_params["d_model"] == "32"


def test_bad_link_values_give_defaults_and_a_warning():
    at = open_app(
        "attention", RANDOM | {"scale": "abc", "heads": "0", "d_model": "-3", "junk": "1"}
    )
    assert not at.exception
    warning = " ".join(messages(at, "warning"))
    for key in ("scale", "heads", "d_model", "junk"):
        assert key in warning
    assert at.sidebar.select_slider(key="d_model").value == 16
    assert at.session_state["scale"] == pytest.approx(0.25)
    assert "junk" not in at.query_params


def test_warning_can_be_dismissed():
    at = open_app("home", {"seed": "banana"})
    assert messages(at, "warning")
    at.button(key="dismiss_url_warnings").click().run()
    assert not messages(at, "warning")


@pytest.mark.parametrize("text", ["", "   \n\t  "])
def test_empty_text_gives_a_hint(text):
    at = open_app("attention", text=text)
    assert not at.exception
    assert any("Type some text" in m for m in messages(at, "info"))


def test_single_token():
    at = open_app("attention", RANDOM, text="it")
    assert not at.exception
    assert chart_z(at, "att_weights").tolist() == [[1.0]]


def test_long_text_is_cut_at_512_tokens_with_a_message():
    at = open_app("home", RANDOM, text="word " * 700, tokenizer="words")
    assert not at.exception
    assert any("700 tokens" in m and "512" in m for m in messages(at, "warning"))
    assert chart_z(at, "home_Q").shape[0] == 512


def test_changing_d_model_snaps_heads_and_keeps_scale_default():
    at = open_app("multi_head", RANDOM | {"d_model": "16", "heads": "8"})
    at.sidebar.select_slider(key="d_model").set_value(12).run()
    assert not at.exception
    assert at.sidebar.select_slider(key="heads").value == 6
    assert at.session_state["scale"] == pytest.approx(1 / np.sqrt(2))


def test_controls_survive_a_page_switch():
    at = open_app("attention")
    at.session_state["scale"] = 2.0
    at.run()
    move(at, "causal", True)
    at.switch_page("../pages/causal_mask.py").run()
    at.switch_page("../pages/attention.py").run()
    assert scale_shown(at) == "2"
    assert control(at, "causal")["value"] == 1


@pytest.mark.parametrize(
    ("page", "shown"), [("decoder", []), ("book", []), ("pretrained", ["text"])]
)
def test_pages_with_their_own_inputs_show_less_and_keep_the_rest(page, shown):
    at = open_app("attention", RANDOM)
    at.sidebar.select_slider(key="d_model").set_value(32).run()
    move(at, "causal", True)
    at.switch_page(f"../pages/{page}.py").run()
    assert [box.key for box in at.sidebar.text_area] == shown
    assert len(at.sidebar.select_slider) == len(at.sidebar.toggle) == 0
    assert "inputs of its own" in at.sidebar.caption[0].value
    assert at.query_params["d_model"] == "32"  # the link still carries them
    at.switch_page("../pages/attention.py").run()
    assert at.sidebar.select_slider(key="d_model").value == 32
    assert control(at, "causal")["value"] == 1


def test_convention_switch_transposes_the_figures():
    at = open_app("home", RANDOM, text="a b c", tokenizer="words")
    rows = chart_z(at, "home_x")
    at.segmented_control(key="convention").set_value("columns").run()
    cols = chart_z(at, "home_x")
    np.testing.assert_array_equal(cols, rows.T)
    assert rows.shape == (3, 16)


@pytest.mark.parametrize(
    ("page", "keys"),
    [
        ("home", ("home_wq", "home_wk", "home_wv", "home_Q", "home_K", "home_V", "home_x")),
        ("positional_encoding", ("pe_table_minilm", "pe_table_sinusoidal", "pe_similarity_minilm")),
        ("encoder_layer", ("enc_input", "enc_output")),
    ],
)
def test_numbered_axes_draw_few_labels_and_say_what_they_number(page, keys):
    """Issue 55: 32 feature labels overlapped into a smear; the W panels' only axis title
    was "one label in 2"."""
    figures = charts(open_app(page))
    for key in keys:
        layout = figures[key]["layout"]
        x, y = layout["xaxis"], layout["yaxis"]
        assert len(x["tickvals"]) <= 8, key  # features or positions along the columns
        for axis in (x, y):
            assert not axis["title"]["text"].startswith("one label in"), key
    for part in "qkv" if page == "home" else "":
        layout = figures[f"home_w{part}"]["layout"]
        assert layout["xaxis"]["title"]["text"].startswith(f"feature of {part.upper()}")
        assert layout["yaxis"]["title"]["text"].startswith("feature of X")


def test_multi_head_page_draws_one_panel_per_head():
    at = open_app("multi_head", RANDOM | {"heads": "4"})
    spec = charts(at)["mh_heads"]
    assert len(spec["data"]) == 4
    lines = charts(at)["mh_lines"]["layout"]["shapes"]  # one path per head and opacity step
    assert {shape["name"] for shape in lines} == {"H0", "H1", "H2", "H3"}
    weights = [decode(z) for z in (trace["z"] for trace in spec["data"])]
    drawn = sum(shape["path"].count("M") for shape in lines)
    assert drawn == sum(int((w >= 0.05).sum()) for w in weights)


@pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed")
def test_multi_heads_line_view_offers_the_sidebars_head_alone():
    """MiniLM opens on head 1 (the one whose "it" finds "restaurant"): the line view's
    button draws that head alone, not head 0, until a head is clicked on the page."""
    at = open_app("multi_head")
    head = at.session_state["head"]
    assert head == 1
    only = at.button(key="mh_lines_only")
    assert only.label == f"Only H{head}"
    only.click().run()
    assert at.session_state["mh_lines_heads"] == [head]
    assert {shape["name"] for shape in charts(at)["mh_lines"]["layout"]["shapes"]} == {"H1"}


@pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed")
def test_causal_page_opens_on_it_with_the_words_before_it_visible():
    """Issue 55: it opened on [CLS], which sees nothing but itself."""
    at = open_app("causal_mask")
    labels = engine.tokenize(controls.DEFAULT_TEXT, "wordpiece").labels
    it = labels.index("it") + 1  # after [CLS]
    assert at.selectbox(key="causal_query").value == it
    texts = [t.value for t in at.text]
    assert "restaurant" in texts[0].split()  # "it" sees "restaurant", said before it
    assert texts[1] == f"Hidden by the mask: {len(labels) + 2 - it - 1} later tokens"


def test_causal_page_compares_masked_and_unmasked():
    at = open_app("causal_mask", RANDOM, text="one two three four", tokenizer="words")
    figs = charts(at)
    masked = decode(figs["causal_weights_masked"]["data"][0]["z"])
    unmasked = decode(figs["causal_weights_unmasked"]["data"][0]["z"])
    above = np.triu_indices(4, 1)
    assert np.all(masked[above] == 0)
    assert np.all(unmasked[above] > 0)
    (masked_cells,) = [  # over the scores' gaps
        t for t in figs["causal_scores"]["data"] if t.get("name") == style.MASKED_OVERLAY
    ]
    assert masked_cells["text"][0][3] == "−∞"
    trace = figs["causal_weights_masked"]["data"][0]
    hover = decode(trace["customdata"])  # [raw, scaled]: not the unmasked score
    assert np.isnan(hover[0, 3, 1])
    assert np.isfinite(hover[0, 3, 0])
    assert np.isfinite(hover[3, 0, 1])
    # the chart component writes a masked cell's scaled score so (frames.test.mjs)
    assert trace["meta"] == {attention_maps.GAP_TEXT: attention_maps.MASKED_HOVER}
    assert "%{customdata[2]}" in trace["hovertemplate"]


def test_positional_page_answers_the_permutation_question():
    at = open_app("positional_encoding", RANDOM | {"pe": "sinusoidal"}, text="the cat sat on a mat")
    table = at.dataframe[0].value
    verdict = dict(zip(table["positional encoding"], table["outputs just permute?"], strict=True))
    assert verdict == {"none": "yes", "sinusoidal": "no", "learned": "no", "rotary": "no"}


def test_book_page_matches_the_printed_values():
    at = open_app("book")
    table = at.dataframe[0].value
    matrix = table[table["source"] == "matrix"][["d0", "d1", "d2", "d3"]].to_numpy()
    np.testing.assert_allclose(matrix, book.NOTEBOOK_X_PRIME.T, atol=1e-6)
    assert table["max |Δ| to matrix"].max() < 1e-6
    assert "e-" in at.metric[0].value  # Sa[XP] = Sa[X]P to round-off


def test_book_tables_show_the_printed_decimals_and_differences_as_powers_of_ten():
    """A round-off difference reads 1.11e-16, as the metric below writes one, not
    0.0000000000000001; the outputs show the book's eight printed decimals (0.94744244),
    not 0.9474 beside 1.642 (Streamlit's default drops digits and trailing zeros)."""
    at = open_app("book")
    for frame in at.dataframe[:2]:
        formats = {
            name: config["type_config"]["format"]
            for name, config in json.loads(frame.proto.columns).items()
            if "type_config" in config
        }
        table = frame.value
        assert set(formats) == {"d0", "d1", "d2", "d3", "max |Δ| to matrix"}
        tiny = table["max |Δ| to matrix"][table["max |Δ| to matrix"] > 0].min()
        shown = formats["max |Δ| to matrix"] % tiny
        assert "e-" in shown
        assert float(shown) == pytest.approx(tiny, rel=0.01)
        for printed in book.NOTEBOOK_X_PRIME.ravel():
            assert float(formats["d0"] % printed) == printed  # the book's digits, all of them


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert(1)</script> <img src=x onerror=alert(2)>",
        "**bold** $x^2$ :red[colour] [link](javascript:alert(3))",
        "😀 你好世界 مرحبا بالعالم e\u0301 \x00\x07 tab\there",
    ],
)
def test_hostile_text_renders_as_text(text):
    at = open_app("causal_mask", text=text)
    assert not at.exception
    assert len(charts(at)) >= 3
    for md in at.markdown:
        assert "<script" not in md.value
        assert "<img" not in md.value


def test_text_too_long_for_a_link_stays_out_of_the_url():
    at = open_app("home", text="a " * (controls.MAX_URL_TEXT))
    assert not at.exception
    assert "text" not in at.query_params


def test_encoder_page_switches_layernorm_placement():
    at = open_app("encoder_layer", RANDOM, text="the cat sat on the mat", tokenizer="words")
    assert not at.exception
    post = chart_z(at, "enc_output")
    np.testing.assert_allclose(post.mean(axis=1), 0.0, atol=1e-5)  # post-LN output is normalised
    at.segmented_control(key="encoder_norm").set_value("pre").run()
    pre = chart_z(at, "enc_output")
    assert not np.allclose(pre, post)
    assert np.abs(pre.mean(axis=1)).max() > 1e-3  # pre-LN leaves the stream un-normalised
