"""A long text on /pretrained (issue #52): every view drawn or said why, from the engine's numbers.

The tiny Llama of ``tests/data/tiny_models`` (2 layers, 4 heads), copied with 8,192
positions instead of 128 (rotary positions have no table, so the weights are the same):
3,000 tokens make its pass keep no n × n (:class:`engine.long_run.Attentions`), as SmolLM2's
4,096 do, in a second.
"""

import numpy as np
import pytest
import tiny_models
from apptest_support import chart_z, charts, decode, open_app

from app.data import passes
from app.views import last_token, long_head, summary_grid
from app.widgets import model_box
from engine import analysis, bert, checkpoint, generate, long_run, one_layer, tiling

SENTENCE = "The restaurant refused to serve me because it only cooks vegetarian food. "
TEXT = SENTENCE * 62  # 3,039 tokens with the tiny Llama's tokenizer


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The tiny Llama with 8,192 positions."""
    path = tmp_path_factory.mktemp("long") / "llama_long"
    return tiny_models.with_positions("llama", path, 8192)


@pytest.fixture(scope="module")
def model(folder):
    return checkpoint.load(folder)


@pytest.fixture(scope="module")
def run(model):
    return bert.run(model, TEXT)


@pytest.fixture(scope="module")
def page(folder):
    return open_app("pretrained", timeout=120, text=TEXT, **{model_box.PATH_KEY: str(folder)})


def test_the_text_is_long_and_its_pass_keeps_no_head(run):
    assert len(run.ids) > passes.LONG_TOKENS
    assert isinstance(run.attentions, long_run.Attentions)


def test_every_view_is_drawn_or_says_why_it_needs_a_shorter_text(page, run):
    assert not page.exception
    assert not page.error
    assert set(charts(page)) == {
        "pretrained_finder",
        "pretrained_summaries",
        "pretrained_tiles",
        "pretrained_zoom",
        "pretrained_bar",
        "pretrained_lines",
        "pretrained_gqa",
        "pretrained_neuron",
        "pretrained_sinks",
        "pretrained_rotary",
        "pretrained_next",
        "pretrained_last",
    }
    said = " ".join(info.value for info in page.info)
    n = f"{len(run.ids):,}"
    assert f"The model view is drawn for texts of at most 1,024 tokens; this one has {n}" in said
    assert f"The rollout is drawn for texts of at most 512 tokens; this one has {n}" in said


def test_the_tiled_map_is_the_engines_tiles_of_the_head_and_says_its_reduction(page, model, run):
    layer, head = (
        page.select_slider(key="pretrained_layer").value,
        page.select_slider(key="pretrained_head").value,
    )
    weights = one_layer.head_weights(model, run, layer, head)
    expected = tiling.tile(weights, long_head.OVERVIEW_TILES, "max")
    np.testing.assert_array_equal(chart_z(page, "pretrained_tiles"), expected.values)
    title = charts(page)["pretrained_tiles"]["layout"]["title"]["text"]
    assert "each the maximum of its block" in title
    assert expected.values.max() == weights.max()


def test_the_zoom_shows_the_exact_cells_around_the_token_with_their_tokens(page, model, run):
    layer, head = (
        page.select_slider(key="pretrained_layer").value,
        page.select_slider(key="pretrained_head").value,
    )
    token = page.selectbox(key="pretrained_token").value
    first, last = next(s for s in page.slider if s.label == "Zoom: queries").value
    assert first <= token <= last
    assert last - first + 1 == long_head.ZOOM_CELLS
    cols = next(s for s in page.slider if s.label == "Zoom: keys").value
    weights = one_layer.head_weights(model, run, layer, head)
    zoom = charts(page)["pretrained_zoom"]["data"][0]
    np.testing.assert_array_equal(
        decode(zoom["z"]), weights[first : last + 1, cols[0] : cols[1] + 1]
    )
    positions = [int(label.split(" ", 1)[0]) for label in zoom["y"]]
    assert positions == list(range(first, last + 1))
    assert zoom["y"][token - first] == f"{token} {run.labels[token]}"
    assert zoom["x"][0].startswith(f"{cols[0]} ")


def test_a_zoom_too_large_for_cells_draws_its_blocks_tiles(page, model, run):
    layer = page.select_slider(key="pretrained_layer").value
    head = page.select_slider(key="pretrained_head").value
    zoom = next(s for s in page.slider if s.label == "Zoom: queries")
    zoom.set_value((0, 999)).run()
    assert not page.exception
    weights = one_layer.head_weights(model, run, layer, head)
    cols = next(s for s in page.slider if s.label == "Zoom: keys").value
    expected = tiling.tile(
        weights[0:1000, cols[0] : cols[1] + 1], long_head.OVERVIEW_TILES, "max"
    ).values
    np.testing.assert_array_equal(chart_z(page, "pretrained_zoom"), expected)
    page.radio(key="pretrained_reduction").set_value("mean").run()
    means = tiling.tile(weights, long_head.OVERVIEW_TILES, "mean").values
    np.testing.assert_allclose(chart_z(page, "pretrained_tiles"), means, rtol=1e-6)
    assert (
        "each the mean of its block" in charts(page)["pretrained_tiles"]["layout"]["title"]["text"]
    )


def test_the_summary_grid_is_the_passs_summaries(page, run):
    np.testing.assert_array_equal(chart_z(page, "pretrained_summaries"), run.summaries.first_token)
    for field in ("entropy", "distance", "previous"):
        page.selectbox(key="pretrained_summary").set_value(field).run()
        np.testing.assert_array_equal(
            chart_z(page, "pretrained_summaries"), getattr(run.summaries, field)
        )
        name = summary_grid.SUMMARIES[field][0]
        assert name in charts(page)["pretrained_summaries"]["layout"]["title"]["text"]


def test_the_sinks_of_a_long_text_are_the_engines_from_its_summaries(page, model, run):
    found = analysis.summary_sinks(run.summaries, model.config)
    heatmap, bars = charts(page)["pretrained_sinks"]["data"][:2]  # then its black numbers
    np.testing.assert_allclose(decode(heatmap["z"]), found.first, rtol=1e-6)
    np.testing.assert_allclose(decode(bars["x"]), found.received[found.strongest], rtol=1e-6)
    assert any("strongest key" in caption.value for caption in page.caption)


def test_the_line_and_neuron_views_draw_the_tokens_around_the_query(page, model, run):
    token = page.selectbox(key="pretrained_token").value
    start, stop = long_head.around(token, len(run.ids), long_head.AROUND)
    lines = charts(page)["pretrained_lines"]
    assert f"tokens {start}–{stop - 1}" in lines["layout"]["title"]["text"]
    neuron = charts(page)["pretrained_neuron"]
    assert len(neuron["data"][0]["y"]) == min(stop, token + 1) - start  # causal: keys up to it


def test_the_rotary_view_reaches_the_models_positions(page, model):
    distances = decode(charts(page)["pretrained_rotary"]["data"][0]["x"])
    assert distances[-1] == model.config.max_tokens - 1


def test_a_text_past_4096_tokens_is_refused_saying_the_pages_limit(folder):
    text = SENTENCE * 84  # 4,117 tokens: within the model's 8,192 positions
    at = open_app("pretrained", timeout=120, text=text, **{model_box.PATH_KEY: str(folder)})
    assert not at.exception
    (warning,) = at.warning
    said = warning.value.replace("\\", "")  # markdown's escapes
    assert "the pages read at most 4,096 (the model has positions for 8,192)" in said
    help_text = at.sidebar.text_area(key="text").help
    assert "reads at most 4,096 tokens" in help_text
    assert "its positions cover 8,192" in help_text


def test_a_long_pass_moves_a_progress_bar_after_each_layer(folder, monkeypatch):
    reported = []
    engine_run = bert.run

    def run(*args, progress=None, **kwargs):
        def moved(done, total):
            reported.append((done, total))
            progress(done, total)  # the page's bar: an error here fails the page

        return engine_run(*args, progress=None if progress is None else moved, **kwargs)

    monkeypatch.setattr(bert, "run", run)
    text = SENTENCE * 6 + "A text this test alone runs."  # > 256 tokens, run once here
    at = open_app("pretrained", timeout=120, text=text, **{model_box.PATH_KEY: str(folder)})
    assert not at.exception
    assert reported == [(1, 2), (2, 2)]
    assert not at.get("progress")  # emptied once the pass is done


def test_the_last_tokens_attention_is_drawn_as_tiles_of_keys(page, run):
    rows = run.last_token_attention.reshape(-1, len(run.ids))
    expected = tiling.tile(rows, (len(rows), last_token.KEY_TILES), "max").values
    np.testing.assert_array_equal(chart_z(page, "pretrained_last"), expected)


def test_a_tile_clicked_moves_the_zoom_there(folder, model, run):
    """The click as the map's chart reports it sets where the zoom goes, then the page runs."""
    at = open_app("pretrained", timeout=120, text=TEXT, **{model_box.PATH_KEY: str(folder)})
    at.session_state["_pretrained_tiles_moved_to"] = (1500, 1000)
    at.run()
    assert not at.exception
    rows = next(s for s in at.slider if s.label == "Zoom: queries").value
    cols = next(s for s in at.slider if s.label == "Zoom: keys").value
    assert rows == (1500 - long_head.ZOOM_CELLS // 2, 1500 + long_head.ZOOM_CELLS // 2 - 1)
    assert cols == (1000 - long_head.ZOOM_CELLS // 2, 1000 + long_head.ZOOM_CELLS // 2 - 1)
    layer = at.select_slider(key="pretrained_layer").value
    head = at.select_slider(key="pretrained_head").value
    weights = one_layer.head_weights(model, run, layer, head)
    np.testing.assert_array_equal(
        chart_z(at, "pretrained_zoom"), weights[rows[0] : rows[1] + 1, cols[0] : cols[1] + 1]
    )


def test_heads_draws_a_long_texts_head_as_tiles(folder, model, run):
    at = open_app("heads", timeout=120, text=TEXT, **{model_box.PATH_KEY: str(folder)})
    assert not at.exception
    layer, head = at.selectbox(key="heads_layer").value, at.selectbox(key="heads_head").value
    figure = charts(at)["heads_text"]
    assert "each the maximum of its block" in figure["layout"]["title"]["text"]
    expected = tiling.tile(
        one_layer.head_weights(model, run, layer, head), long_head.OVERVIEW_TILES
    )
    np.testing.assert_array_equal(decode(figure["data"][0]["z"]), expected.values)


def test_a_long_second_text_is_compared_without_its_line_view(folder):
    at = open_app(
        "pretrained", timeout=120, text=SENTENCE, text_b=TEXT, **{model_box.PATH_KEY: str(folder)}
    )
    assert not at.exception
    assert "pretrained_compare" in charts(at)
    assert "pretrained_lines_b" not in charts(at)
    assert any("B's line view needs a text of at most 512" in c.value for c in at.caption)


def test_pretrained_presents_a_long_text(folder):
    at = open_app(
        "pretrained",
        {"present": "1"},
        timeout=120,
        text=TEXT,
        **{model_box.PATH_KEY: str(folder)},
    )
    assert not at.exception
    assert not at.error
    assert {"pretrained_tiles", "pretrained_zoom"} <= set(charts(at))


def test_a_long_text_generates_from_its_cache(folder, model, run):
    """Generation after a long text: the pass keeps each key/value head once, then steps."""
    at = open_app("pretrained", timeout=120, text=TEXT, **{model_box.PATH_KEY: str(folder)})
    at.button(key="pretrained_generate").click().run()
    assert not at.exception
    steps = generate.generate(model, TEXT, 4)
    shown = next(d.value for d in at.dataframe if "chosen" in d.value.columns)
    assert len(shown) == len(steps) == 4
    assert list(shown["probability"]) == pytest.approx([s.probability for s in steps])
    assert "pretrained_step" in charts(at)
    first = decode(charts(at)["pretrained_step"]["data"][0]["z"]).reshape(-1)
    assert len(first) > passes.LONG_TOKENS  # the step's row over every key, tiled or not
