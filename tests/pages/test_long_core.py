"""The core pages on a long text (issue #52): the lifted pages' n × n maps as tiles and a zoom.

``weights=smollm2`` is pointed at the tiny Llama of ``tests/data/tiny_models`` (2 layers,
4 heads, 2 key/value heads) copied with 8,192 positions (``tiny_models.with_positions``),
so that a text of 700-odd tokens crosses the core pages' 512 in a second, as SmolLM2's
4,096 do: the pages draw what the engine computes for that model
(``engine.one_layer.head_weights``), tiled by ``engine.tiling.tile``.
"""

import re
from pathlib import Path

import numpy as np
import pytest
import tiny_models
from apptest_support import chart_z, charts, decode, open_app

from app import registry
from app.data import passes, trained
from app.state import controls, weights
from app.views import chart, long_head, style
from app.words import wording
from engine import bert, checkpoint, one_layer, tiling
from engine.attention import causal_mask

SENTENCE = "A long core page: the restaurant refused to serve me because it only cooks fish. "
TEXT = SENTENCE * 14  # 729 tokens with the tiny Llama's tokenizer
LAYER, HEAD = 1, 2
LINK = {"weights": "smollm2", "layer": str(LAYER), "head": str(HEAD)}
#: The core pages: the scripts that run the layer every core page shares.
CORE_PAGES = sorted(
    script.stem
    for script in (Path(__file__).parents[2] / "pages").glob("*.py")
    if re.search(r"notices\.(layer|head)_or_stop\(", script.read_text(encoding="utf-8"))
)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """The tiny Llama with 8,192 positions, loaded."""
    folder = tiny_models.with_positions("llama", tmp_path_factory.mktemp("core") / "llama", 8192)
    return checkpoint.load(folder)


@pytest.fixture(scope="module")
def as_smollm2(model):
    """The packaged name ``smollm2`` runs the tiny long model for this module's tests."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(weights, "installed", lambda name, *_: True)
        patch.setattr(
            weights,
            "trained_config",
            lambda name: model.config if name == "smollm2" else weights.MINILM,
        )
        original = trained.model
        patch.setattr(trained, "model", lambda name: model if name == "smollm2" else original(name))
        yield model


@pytest.fixture(scope="module")
def run(as_smollm2):
    return bert.run(as_smollm2, TEXT)


def open_long(page, **session):
    return open_app(page, LINK, timeout=120, text=TEXT, **session)


@pytest.fixture(scope="module")
def causal(as_smollm2):
    return open_long("causal_mask")


def test_the_text_crosses_the_long_texts_threshold(run):
    assert len(run.ids) > passes.LONG_TOKENS


def test_every_page_with_the_weights_box_runs_the_shared_layer():
    """The pages opened below on the long text are every core page: none is left out."""
    offering = {page.script for page in registry.PAGES if "weights" in page.sidebar}
    assert offering == set(CORE_PAGES)


def test_causal_mask_draws_every_map_as_tiles_with_a_zoom(causal, run):
    assert not causal.exception
    assert not causal.error
    drawn = set(charts(causal))
    for key in ("causal_mask", "causal_scores", "causal_weights_masked", "causal_weights_unmasked"):
        assert {key, f"{key}_zoom"} <= drawn
    said = " ".join(c.value for c in causal.caption)
    assert f"{len(run.ids):,} tokens: the mask, the masked scores" in said
    help_text = causal.sidebar.text_area(key="text").help
    assert "reads at most 4,096 tokens" in help_text
    assert "on this page" not in help_text  # the pages' own limit, not the core pages' 512


def test_causal_mask_tiles_are_the_engines_head_and_the_zoom_exact(causal, as_smollm2, run):
    weights_ = one_layer.head_weights(as_smollm2, run, LAYER, HEAD)
    expected = tiling.tile(weights_, long_head.OVERVIEW_TILES, "max").values
    np.testing.assert_array_equal(chart_z(causal, "causal_weights_masked"), expected)
    title = charts(causal)["causal_weights_masked"]["layout"]["title"]["text"]
    assert "each the maximum of its block" in title
    first, last = next(s for s in causal.slider if s.label == "Zoom: queries").value
    k0, k1 = next(s for s in causal.slider if s.label == "Zoom: keys").value
    assert last - first + 1 == long_head.ZOOM_CELLS
    zoom = charts(causal)["causal_weights_masked_zoom"]["data"][0]
    np.testing.assert_array_equal(decode(zoom["z"]), weights_[first : last + 1, k0 : k1 + 1])
    assert zoom["y"][0].replace("\u200b", "") == f"{first} {run.labels[first]}"
    unmasked = decode(charts(causal)["causal_weights_unmasked_zoom"]["data"][0]["z"])
    later = np.arange(k0, k1 + 1)[None, :] > np.arange(first, last + 1)[:, None]
    assert later.any()
    assert (unmasked[later] > 0).all()  # the what-if lets the later tokens in


def test_causal_mask_scores_are_masked_and_blank_where_hidden(causal, as_smollm2, run):
    first, last = next(s for s in causal.slider if s.label == "Zoom: queries").value
    k0, k1 = next(s for s in causal.slider if s.label == "Zoom: keys").value
    zoom = decode(charts(causal)["causal_scores_zoom"]["data"][0]["z"])
    q, k = run.queries[LAYER, HEAD], run.keys[LAYER, HEAD]
    scores = q[first : last + 1] @ k[k0 : k1 + 1].T / np.sqrt(q.shape[-1])
    rows, cols = np.arange(first, last + 1)[:, None], np.arange(k0, k1 + 1)[None, :]
    np.testing.assert_allclose(zoom[rows >= cols], scores[rows >= cols], rtol=1e-5, atol=1e-5)
    assert np.isnan(zoom[rows < cols]).all()  # −∞, drawn blank
    mask = causal_mask(len(run.ids)).astype(np.float32)  # the engine's, tiled: any cell seen
    expected = tiling.tile(mask, long_head.OVERVIEW_TILES, "max").values
    np.testing.assert_array_equal(chart_z(causal, "causal_mask"), expected)
    assert np.triu(expected, 1).max() == 0.0


def test_causal_mask_mean_tiles_and_a_wide_zoom(causal, as_smollm2, run):
    causal.radio(key="causal_reduction").set_value("mean").run()
    next(s for s in causal.slider if s.label == "Zoom: queries").set_value((0, 599)).run()
    assert not causal.exception
    weights_ = one_layer.head_weights(as_smollm2, run, LAYER, HEAD)
    means = tiling.tile(weights_, long_head.OVERVIEW_TILES, "mean").values
    np.testing.assert_allclose(chart_z(causal, "causal_weights_masked"), means, rtol=1e-6)
    k0, k1 = next(s for s in causal.slider if s.label == "Zoom: keys").value
    block = tiling.tile(weights_[0:600, k0 : k1 + 1], long_head.OVERVIEW_TILES, "mean").values
    np.testing.assert_allclose(chart_z(causal, "causal_weights_masked_zoom"), block, rtol=1e-6)


def test_encoder_layer_draws_its_stages_whole_without_any_heads_weights(as_smollm2, run):
    at = open_long("encoder_layer")
    assert not at.exception
    assert not at.error
    n = len(run.ids)
    said = " ".join(c.value for c in at.caption)
    assert f"{n:,} tokens: every tokens × features matrix below is drawn whole" in said
    np.testing.assert_array_equal(chart_z(at, "enc_output"), run.hidden_states[LAYER + 1])
    np.testing.assert_array_equal(chart_z(at, "enc_input"), run.hidden_states[LAYER])
    norms = charts(at)["enc_norms"]["data"]
    assert len(decode(norms[0]["y"])) == n
    stages = trained.layer_stages("smollm2", TEXT, LAYER, keep_weights=False)  # the page's
    assert stages.attention.weights is None


def test_home_draws_x_and_the_heads_q_k_v_whole(as_smollm2, run):
    at = open_long("home")
    assert not at.exception
    assert not at.error
    n = len(run.ids)
    assert at.subheader[0].value == f"{n} tokens"
    said = " ".join(c.value for c in at.caption)
    assert f"{n:,} tokens: every tokens × features matrix below is drawn whole" in said
    q = chart_z(at, "home_Q")
    assert q.shape == (n, run.queries.shape[-1])
    np.testing.assert_allclose(q, run.queries[LAYER, HEAD], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(chart_z(at, "home_K"), run.keys[LAYER, HEAD], rtol=1e-6, atol=1e-6)


def test_positional_encoding_draws_both_heads_as_tiles_with_exact_zooms(as_smollm2, run):
    at = open_long("positional_encoding")
    assert not at.exception
    assert not at.error
    # as a short text's page draws it: the pass without positions, its layer run again
    without = one_layer.layer_run(as_smollm2, bert.run(as_smollm2, TEXT, positions=False), LAYER)
    first, last = next(s for s in at.slider if s.label == "Zoom: queries").value
    k0, k1 = next(s for s in at.slider if s.label == "Zoom: keys").value
    with_ = one_layer.head_weights(as_smollm2, run, LAYER, HEAD)
    for key, weights_ in (("pe_with", with_), ("pe_without", without.attention.weights[HEAD])):
        expected = tiling.tile(weights_, long_head.OVERVIEW_TILES, "max").values
        np.testing.assert_array_equal(chart_z(at, key), expected)
        zoom = chart_z(at, f"{key}_zoom")
        np.testing.assert_array_equal(zoom, weights_[first : last + 1, k0 : k1 + 1])
    said = " ".join(c.value for c in at.caption)
    assert f"{len(run.ids):,} tokens: the weights without and with positions" in said
    assert f"the test shuffles its first {passes.LONG_TOKENS} alone" in said
    shuffled = next(t.value for t in at.text if t.value.startswith("Shuffled: "))
    assert len(shuffled.split(" ")) - 1 >= passes.LONG_TOKENS - 5  # a label may hold a space


def test_multi_head_draws_every_head_as_tiles_and_the_sidebars_head_with_a_zoom(as_smollm2, run):
    at = open_long("multi_head")
    assert not at.exception
    assert not at.error
    n = len(run.ids)
    every = [one_layer.head_weights(as_smollm2, run, LAYER, h) for h in range(4)]
    panels = charts(at)["mh_heads"]["data"]
    for h, trace in enumerate(panels):  # each head's tiles, side by side
        expected = tiling.tile(every[h], long_head.OVERVIEW_TILES // 2, "max").values
        np.testing.assert_array_equal(decode(trace["z"]), expected)
    np.testing.assert_array_equal(
        chart_z(at, "mh_head"), tiling.tile(every[HEAD], long_head.OVERVIEW_TILES).values
    )
    first, last = next(s for s in at.slider if s.label == "Zoom: queries").value
    k0, k1 = next(s for s in at.slider if s.label == "Zoom: keys").value
    np.testing.assert_array_equal(
        chart_z(at, "mh_head_zoom"), every[HEAD][first : last + 1, k0 : k1 + 1]
    )
    entropy = at.dataframe[0].value["mean entropy (bits)"].to_numpy()
    rows = [np.where(w > 0, -w * np.log2(np.where(w > 0, w, 1)), 0).sum(axis=1) for w in every]
    np.testing.assert_allclose(entropy, [r.mean() for r in rows], rtol=1e-4)
    title = charts(at)["mh_lines"]["layout"]["title"]["text"]
    start, stop = long_head.around(wording.default_query(run.labels), n, long_head.AROUND)
    assert f"tokens {start}–{stop - 1}" in title


def test_attention_draws_each_stop_as_tiles_from_the_server(as_smollm2, run):
    at = open_long("attention")
    assert not at.exception
    assert not at.error
    n = len(run.ids)
    said = " ".join(c.value for c in at.caption)
    assert f"{n:,} tokens: the raw scores, the scaled scores and the weights" in said
    assert "att_sinks" in charts(at)
    first, last = next(s for s in at.slider if s.label == "Zoom: queries").value
    k0, k1 = next(s for s in at.slider if s.label == "Zoom: keys").value
    weights_ = one_layer.head_weights(as_smollm2, run, LAYER, HEAD)
    np.testing.assert_array_equal(chart_z(at, "att_weights"), tiling.tile(weights_, 256).values)
    np.testing.assert_array_equal(
        chart_z(at, "att_weights_zoom"), weights_[first : last + 1, k0 : k1 + 1]
    )
    query = at.selectbox(key="attention_query").value
    bar = decode(charts(at)["att_bar"]["data"][0]["y"])
    np.testing.assert_array_equal(bar, weights_[query, k0 : k1 + 1])
    q, k = run.queries[LAYER, HEAD], run.keys[LAYER, HEAD]
    raw = chart_z(at, "att_raw_zoom")
    np.testing.assert_allclose(raw, q[first : last + 1] @ k[k0 : k1 + 1].T, rtol=1e-4, atol=1e-5)

    scale = at.select_slider(key="attention_long_scale")
    c = as_smollm2.config
    options = controls.scale_options(c.d_model, c.n_heads)
    stop = options[options.index(scale.value) + 3]
    scale.set_value(stop).run()  # a what-if: the same head's scores at another scale
    assert not at.exception
    assert at.session_state["scale"] == pytest.approx(float(stop))
    again = one_layer.layer_run(as_smollm2, run, LAYER, scale=float(stop)).attention.weights[HEAD]
    np.testing.assert_array_equal(chart_z(at, "att_weights"), tiling.tile(again, 256).values)


@pytest.mark.parametrize("page", CORE_PAGES)
def test_every_lifted_page_presents_a_long_text(as_smollm2, page):
    at = open_app(page, LINK | {"present": "1"}, timeout=120, text=TEXT)
    assert not at.exception
    assert not at.error
    assert not [w.value for w in at.warning if "reads at most" in w.value]
    assert charts(at)
    for spec in charts(at).values():  # tiles: their key axis on top, under a large title
        layout = spec["layout"]
        if layout.get("xaxis", {}).get("side") == "top" and layout.get("title", {}).get("text"):
            assert layout["margin"]["t"] >= chart.PRESENT_TOP_AXIS


def test_a_presented_tile_map_leaves_its_top_axis_room_under_the_title(as_smollm2):
    at = open_app("causal_mask", LINK | {"present": "1"}, timeout=120, text=TEXT)
    layout = charts(at)["causal_weights_masked"]["layout"]
    assert layout["xaxis"]["side"] == "top"
    assert layout["margin"]["t"] >= chart.PRESENT_TOP_AXIS > style.NOTE_TOP


def zoom_ranges(at):
    first, last = next(s for s in at.slider if s.label == "Zoom: queries").value
    k0, k1 = next(s for s in at.slider if s.label == "Zoom: keys").value
    return slice(first, last + 1), slice(k0, k1 + 1)


@pytest.fixture(scope="module")
def tour_steps(as_smollm2):
    """The tour on the long text, walked from step 3 to 9: each step's charts and sentences."""
    at = open_app("tour", LINK, page_query={"step": "3"}, timeout=120, text=TEXT)
    steps = {}
    for step in range(3, 10):
        assert not at.exception, step
        assert not at.error, step
        said = " ".join(m.value for m in (*at.markdown, *at.caption, *at.info))
        zoom = zoom_ranges(at) if any(s.label == "Zoom: queries" for s in at.slider) else None
        steps[step] = charts(at), said, zoom
        at.button(key="tour_next").click().run()
    return steps


def test_tour_draws_the_scores_and_weights_as_tiles_with_exact_zooms(tour_steps, as_smollm2, run):
    weights_ = one_layer.head_weights(as_smollm2, run, LAYER, HEAD)
    q, k = run.queries[LAYER, HEAD], run.keys[LAYER, HEAD]
    for step in (5, 7):  # the weights, and with the mask: SmolLM2's own, the same weights
        drawn, said, (rows, cols) = tour_steps[step]
        z = decode(drawn[f"tour_step_{step}"]["data"][0]["z"])
        np.testing.assert_array_equal(z, tiling.tile(weights_, long_head.OVERVIEW_TILES).values)
        zoom = decode(drawn[f"tour_step_{step}_zoom"]["data"][0]["z"])
        np.testing.assert_array_equal(zoom, weights_[rows, cols])
        assert f"{len(run.ids):,} tokens: this head's" in said
    drawn, said, (rows, cols) = tour_steps[3]
    raw = decode(drawn["tour_step_3_zoom"]["data"][0]["z"])
    np.testing.assert_allclose(raw, q[rows] @ k[cols].T, rtol=1e-4, atol=1e-5)
    query = wording.default_query(run.labels)
    best = int(np.argmax(weights_[query]))
    assert f"{weights_[query, best]:.2f} of its budget of 1" in tour_steps[5][1]


def test_tour_draws_the_trained_row_and_every_head_on_a_long_text(tour_steps, as_smollm2, run):
    n = len(run.ids)
    query = wording.default_query(run.labels)
    start, stop = long_head.around(query, n, long_head.AROUND)
    weights_ = one_layer.head_weights(as_smollm2, run, LAYER, HEAD)
    drawn, said, _ = tour_steps[6]
    np.testing.assert_array_equal(
        decode(drawn["tour_step_6"]["data"][0]["y"]), weights_[query, start:stop]
    )
    assert f"4 × {n:,} × {n:,}" in said  # why the random side needs a short text
    assert f"at most {passes.LONG_TOKENS} tokens; this one has {n:,}" in said
    drawn, said, _ = tour_steps[9]
    for h, trace in enumerate(drawn["tour_step_9"]["data"]):
        every = one_layer.head_weights(as_smollm2, run, LAYER, h)
        expected = tiling.tile(every, long_head.OVERVIEW_TILES // 2, "max").values
        np.testing.assert_array_equal(decode(trace["z"]), expected)
    assert "tour_step_4" in tour_steps[4][0]  # the saturation curve from q and k alone


def test_efficient_draws_the_head_as_tiles_and_the_patterns_on_the_first_tokens(as_smollm2, run):
    at = open_long("efficient")
    assert not at.exception
    assert not at.error
    n, first = len(run.ids), passes.LONG_TOKENS
    weights_ = one_layer.head_weights(as_smollm2, run, LAYER, HEAD)
    rows, cols = zoom_ranges(at)
    np.testing.assert_array_equal(chart_z(at, "efficient_whole"), tiling.tile(weights_, 256).values)
    np.testing.assert_array_equal(chart_z(at, "efficient_whole_zoom"), weights_[rows, cols])
    full = chart_z(at, "efficient_full")  # causal: the first queries' rows are the text's own
    assert full.shape == (first, first)
    np.testing.assert_allclose(full, weights_[:first, :first], rtol=1e-4, atol=1e-6)
    for key in ("linear", "sliding", "strided", "fixed"):
        np.testing.assert_allclose(chart_z(at, f"efficient_{key}").sum(axis=1), 1.0, atol=1e-5)
    said = " ".join(c.value for c in at.caption)
    assert f"5 maps of {n:,} × {n:,}" in said
    assert f"read the first {first} tokens alone" in said
    window = next(s for s in at.slider if s.key == "efficient_window")
    assert window.max == first - 1


@pytest.mark.parametrize("step", [3, 6, 9])
def test_the_tour_presents_its_long_steps(as_smollm2, step):
    query = LINK | {"present": "1"}
    at = open_app("tour", query, page_query={"step": str(step)}, timeout=120, text=TEXT)
    assert not at.exception
    assert not at.error
    assert f"tour_step_{step}" in charts(at)
