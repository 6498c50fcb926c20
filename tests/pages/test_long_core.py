"""The core pages on a long text (issue #52): the lifted pages' n × n maps as tiles and a zoom.

``weights=smollm2`` is pointed at the tiny Llama of ``tests/data/tiny_models`` (2 layers,
4 heads, 2 key/value heads) copied with 8,192 positions (``tiny_models.with_positions``),
so that a text of 700-odd tokens crosses the core pages' 512 in a second, as SmolLM2's
4,096 do: the pages draw what the engine computes for that model
(``engine.one_layer.head_weights``), tiled by ``engine.tiling.tile``.
"""

import numpy as np
import pytest
import tiny_models
from apptest_support import chart_z, charts, decode, open_app

from app.data import passes, trained
from app.state import controls, weights
from app.views import long_head
from app.words import wording
from engine import bert, checkpoint, one_layer, tiling
from engine.attention import causal_mask

SENTENCE = "A long core page: the restaurant refused to serve me because it only cooks fish. "
TEXT = SENTENCE * 14  # 729 tokens with the tiny Llama's tokenizer
LAYER, HEAD = 1, 2
LINK = {"weights": "smollm2", "layer": str(LAYER), "head": str(HEAD)}


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


def test_the_text_crosses_the_core_pages_limit(run):
    assert len(run.ids) > passes.CORE_MAX_TOKENS


def test_a_page_not_lifted_still_refuses_the_long_text(as_smollm2):
    at = open_long("efficient")
    assert not at.exception
    (warning,) = at.warning
    assert "reads at most 512 with a trained model" in warning.value.replace("\\", "")


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


@pytest.mark.parametrize("page", sorted(passes.LONG_CORE_PAGES))
def test_every_lifted_page_presents_a_long_text(as_smollm2, page):
    at = open_app(page, LINK | {"present": "1"}, timeout=120, text=TEXT)
    assert not at.exception
    assert not at.error
    assert charts(at)
