"""Llama 3.x, Qwen3, Gemma 2 and 3, Phi-3 on /pretrained (issue #53): every view drawn.

The tiny checkpoints of ``tests/data/tiny_models`` (``scripts/make_tiny_families.py``)
opened as ``tests/pages/test_decoder_models.py`` opens today's decoders: no exception, every
view, the head finder's numbers the engine's, and the views that read a layer's own
settings (Gemma 3's window and scale, Qwen3's normalised q and k) on those settings.
"""

import numpy as np
import pytest
import tiny_models
from apptest_support import chart_z, charts, decode, open_app

from app.views import next_token
from app.widgets import model_box
from engine import analysis, bert, checkpoint, generate, one_layer
from engine.arithmetic import query_stages

TINY = tiny_models.TINY
TEXT = "The restaurant refused to serve me because it only cooks vegetarian food."
EVERY = {
    "pretrained_finder",
    "pretrained_bar",
    "pretrained_heatmap",
    "pretrained_lines",
    "pretrained_model_view",
    "pretrained_summaries",
    "pretrained_neuron",
    "pretrained_rollout",
    "pretrained_next",
    "pretrained_last",
    "pretrained_sinks",
    "pretrained_rotary",
}
FOLDERS = ("llama3", "qwen3", "gemma3", "gemma3_fp32", "gemma2", "phi3")


def open_model(name, **session):
    session = {"text": TEXT, model_box.PATH_KEY: str(TINY / name)} | session
    return open_app("pretrained", timeout=120, **session)


GGUF = TINY.parent / "tiny_gguf_families"


@pytest.mark.parametrize("name", ["llama3-Q8_0", "qwen3-Q8_0", "gemma3-Q8_0", "phi3-Q8_0"])
def test_every_view_is_drawn_on_each_familys_gguf_file(name):
    """The same families from llama.cpp's files (tests/data/tiny_gguf_families)."""
    path = GGUF / f"{name}.gguf"
    at = open_app("pretrained", timeout=120, text=TEXT, **{model_box.PATH_KEY: str(path)})
    assert not at.exception
    assert not at.error
    model = checkpoint.load(path)
    grouped = model.config.kv_heads < model.config.n_heads
    llama3 = model.config.rope_llama3 is not None
    assert llama3 == name.startswith("llama3")
    assert set(charts(at)) == EVERY | ({"pretrained_gqa"} if grouped else set()) | (
        {"pretrained_rotary_wavelengths"} if llama3 else set()
    )
    run = bert.run(model, TEXT)
    query = at.selectbox(key="pretrained_finder_query").value
    key = at.selectbox(key="pretrained_finder_key").value
    np.testing.assert_allclose(
        chart_z(at, "pretrained_finder"), run.attentions[:, :, query, key], atol=1e-6
    )


@pytest.mark.parametrize("name", FOLDERS)
def test_every_view_is_drawn_on_each_family(name):
    at = open_model(name)
    assert not at.exception
    assert not at.error
    model = checkpoint.load(TINY / name)
    grouped = model.config.kv_heads < model.config.n_heads
    llama3 = model.config.rope_llama3 is not None
    assert set(charts(at)) == EVERY | ({"pretrained_gqa"} if grouped else set()) | (
        {"pretrained_rotary_wavelengths"} if llama3 else set()
    )
    run = bert.run(model, TEXT)
    query = at.selectbox(key="pretrained_finder_query").value
    key = at.selectbox(key="pretrained_finder_key").value
    np.testing.assert_allclose(
        chart_z(at, "pretrained_finder"), run.attentions[:, :, query, key], atol=1e-6
    )


@pytest.mark.parametrize("name", FOLDERS)
def test_generation_on_each_family_is_the_engines(name):
    """The button's tokens, probabilities and the step's attention: generate's, with its cache."""
    at = open_model(name)
    at.slider(key="pretrained_gen_tokens").set_value(3).run()
    assert "pretrained_step" not in charts(at)  # until asked for
    at.button(key="pretrained_generate").click().run()
    assert not at.exception
    steps = generate.generate(checkpoint.load(TINY / name), TEXT, 3)
    (table,) = [frame.value for frame in at.dataframe if "step" in frame.value.columns]
    assert list(table["chosen"]) == [next_token.token_label(step.token) for step in steps]
    assert list(table["probability"]) == pytest.approx([s.probability for s in steps])
    np.testing.assert_allclose(
        chart_z(at, "pretrained_step"),
        steps[0].attention.reshape(-1, steps[0].attention.shape[-1]),
        atol=1e-6,
    )


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("llama3", ("Llama decoder", "Llama 3's rotary scaling", "32 times slower")),
        ("qwen3", ("Qwen3 decoder", "q and k normalised (16 features a head)")),
        ("gemma3", ("Gemma 3 decoder", "GeGLU", "1 local layers with a 16-token sliding")),
        ("gemma2", ("Gemma 2 decoder", "GeGLU", "1 local layers with a 16-token sliding")),
        ("phi3", ("Phi-3 decoder", "a 16-token sliding window", "SwiGLU")),
    ],
)
def test_the_description_names_what_each_family_changes(name, words):
    at = open_model(name)
    (caption,) = [c.value for c in at.caption if "decoder (causal)" in c.value]
    for word in words:
        assert word in caption


@pytest.mark.parametrize("name", ["gemma3", "gemma2"])
@pytest.mark.parametrize("layer", [0, 1])
def test_gemmas_neuron_view_uses_the_layers_window_and_the_models_scale_and_cap(name, layer):
    """Local layer 0 shows the 16 keys of its window, global layer 1 all of them."""
    at = open_model(name)
    model = checkpoint.load(TINY / name)
    run = bert.run(model, TEXT)
    n = len(run.ids)
    assert n > 16
    at.select_slider(key="pretrained_layer").set_value(layer).run()
    at.selectbox(key="pretrained_token").set_value(n - 1).run()
    assert not at.exception
    head = at.select_slider(key="pretrained_head").value
    seen = slice(n - 16, n) if layer == 0 else slice(0, n)
    keys = run.keys[layer, head, seen]
    assert chart_z(at, "pretrained_neuron").shape == (len(keys), 16)
    cap = model.config.attn_softcap  # Gemma 2's 5, Gemma 3's none
    stages = query_stages(run.queries[layer, head, n - 1], keys, 24**-0.5, cap)
    np.testing.assert_allclose(stages.weights, run.attentions[layer, head, n - 1, seen], atol=1e-6)
    bars = charts(at)["pretrained_neuron"]["data"]
    np.testing.assert_allclose(decode(bars[-1]["x"]), stages.weights, atol=1e-6)
    assert bars[-2]["name"] == ("scaled, × 0.204, capped at 5" if cap else "scaled, × 0.204")


def test_the_rotary_view_of_a_gemma_3_local_layer_uses_its_base_and_scale():
    at = open_model("gemma3")
    at.select_slider(key="pretrained_layer").set_value(0).run()
    assert not at.exception
    model = checkpoint.load(TINY / "gemma3")
    run = bert.run(model, TEXT)
    head = at.select_slider(key="pretrained_head").value
    query = at.selectbox(key="pretrained_finder_query").value
    key = at.selectbox(key="pretrained_finder_key").value
    q, k = one_layer.head_vectors(model, run, 0, head)
    rope = model.config.rotary_at(0)
    assert rope["base"] == 1e4
    scores = analysis.rotary_scores(q[query], k[key], np.arange(128), 24**-0.5, **rope)
    drawn = charts(at)["pretrained_rotary"]["data"]
    np.testing.assert_allclose(decode(drawn[0]["y"]), scores.rotary, atol=1e-5)
    rotated_q, rotated_k = run.queries[0, head, query], run.keys[0, head, key]
    assert scores.rotary[query - key] == pytest.approx(
        float(rotated_q @ rotated_k) * 24**-0.5, abs=1e-5
    )


def test_the_rotary_view_of_llama_3_draws_its_stretched_wavelengths_against_unscaled():
    at = open_model("llama3")
    c = checkpoint.load(TINY / "llama3").config
    drawn = charts(at)["pretrained_rotary_wavelengths"]["data"]
    plain = 2 * np.pi / (5e5 ** (-np.arange(0, 8, 2) / 8))
    np.testing.assert_allclose(decode(drawn[0]["y"]), plain, rtol=1e-6)
    scaled = decode(drawn[1]["y"])
    np.testing.assert_allclose(scaled[0], plain[0], rtol=1e-6)  # fast: kept
    assert plain[1] < scaled[1] < 32 * plain[1]  # between: blended
    np.testing.assert_allclose(scaled[2:], 32 * plain[2:], rtol=1e-5)  # slow: 32 times
    assert c.rope_llama3 == (1.0, 4.0, 256.0)
    assert any("turn 32 times slower" in caption.value for caption in at.caption)


def test_gemma_3s_model_view_names_local_and_global_layers_and_draws_the_window():
    """Each layer's kind is its band's colour, which the legend names (the checkpoint's
    ``layer_types``: a sliding-window layer, then a full one)."""
    at = open_model("gemma3")
    drawn = charts(at)["pretrained_model_view"]
    figure, band = drawn["layout"], drawn["data"][1]
    assert figure["yaxis"]["ticktext"] == ["L0", "L1"]
    config = checkpoint.load(TINY / "gemma3").config
    assert config.layer_types == ("sliding_attention", "full_attention")
    legend = {trace["name"]: trace["marker"]["color"] for trace in drawn["data"][2:]}
    assert list(legend) == ["local (a window of 16 tokens)", "global (every token before)"]
    stops = dict(band["colorscale"])  # a code's colour: local at 0, global at 1
    codes = np.ravel(decode(band["z"]).astype(float))
    assert [stops[code] for code in codes[::2]] == list(legend.values())
    local, other = legend
    assert [row[0] for row in band["text"]][::2] == [f"L0: {local}", f"L1: {other}"]
    edges = figure["shapes"]
    assert len(edges) == 4  # one per head of the local layer
    assert all(edge["y1"] < 50 for edge in edges)  # on layer 0's row of thumbnails
    assert any("1 of the 2 layers are local" in caption.value for caption in at.caption)
    assert any("16 tokens back in its local layers" in info.value for info in at.info)


def test_qwen3s_neuron_view_says_q_and_k_are_after_its_norms():
    at = open_model("qwen3")
    assert any("q_norm and k_norm" in caption.value for caption in at.caption)
