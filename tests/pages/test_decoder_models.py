"""Llama, Mistral and Qwen2 on /pretrained (issue #43): every view, and the three new ones.

The tiny decoders of ``tests/data/tiny_models`` (``scripts/make_tiny_decoders.py``) opened
as ``tests/pages/test_own_model.py`` opens the older families: every view drawn, the
attention sinks equal to :func:`engine.analysis.attention_sinks`, grouped-query attention's
groups, and the rotary view's scores against :func:`engine.analysis.rotary_scores`.
"""

import html
import json
import shutil

import numpy as np
import pytest
import tiny_models
from apptest_support import chart_z, charts, decode, open_app
from streamlit.delta_generator import DeltaGenerator

from app.data import cache, models
from app.views import gqa, next_token, sinks
from app.widgets import model_box
from engine import analysis, bert, checkpoint, generate, layer_config, one_layer
from engine.resources import minilm_dir

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


def open_model(name, **session):
    session = {"text": TEXT, model_box.PATH_KEY: str(TINY / name)} | session
    return open_app("pretrained", timeout=120, **session)


def test_the_next_tokens_bars_are_the_first_thing_sent_after_the_pass(monkeypatch):
    """What needs no pass (the mask's note, the heading, the temperature's slider) is
    written before it, so that the bars are sent the moment it is done: each element
    sent before them costs the browser a layout of the page first (docs/benchmarks.md)."""
    sent = []  # element ids (a heading: its text), and "pass" where the engine ran
    enqueue, engine_run = DeltaGenerator._enqueue, bert.run

    def logged(self, delta_type, element, *args, **kwargs):
        sent.append(getattr(element, "id", "").rsplit("-", 1)[-1] or getattr(element, "body", ""))
        return enqueue(self, delta_type, element, *args, **kwargs)

    def run(*args, **kwargs):
        sent.append("pass")
        return engine_run(*args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "_enqueue", logged)
    monkeypatch.setattr(bert, "run", run)
    at = open_model("llama", text=TEXT + " A text this test alone runs.")
    assert not at.exception
    passed = len(sent) - sent[::-1].index("pass") - 1
    assert sent[passed + 1 : passed + 3] == ["pretrained_temperature_frames", "pretrained_next"]
    title = max(i for i, name in enumerate(sent[:passed]) if name.startswith("A pretrained"))
    assert {"Next token", "pretrained_temperature"} <= set(sent[title:passed])
    assert "pretrained_next" in charts(at)


@pytest.mark.parametrize("name", ["llama", "llama_fp32", "mistral", "qwen2"])
def test_every_view_is_drawn_on_each_decoder(name):
    """Every tiny decoder has grouped-query attention, so the GQA view too."""
    at = open_model(name)
    assert not at.exception
    assert not at.error
    assert set(charts(at)) == EVERY | {"pretrained_gqa"}
    assert at.title[0].value == f"A pretrained model: {model_box.title(str(TINY / name))}"
    model = checkpoint.load(TINY / name)
    run = bert.run(model, TEXT)
    query = at.selectbox(key="pretrained_finder_query").value
    key = at.selectbox(key="pretrained_finder_key").value
    np.testing.assert_allclose(
        chart_z(at, "pretrained_finder"), run.attentions[:, :, query, key], atol=1e-6
    )
    np.testing.assert_allclose(
        chart_z(at, "pretrained_last"), run.last_token_attention.reshape(8, -1), atol=1e-6
    )


def test_the_description_names_what_is_new():
    at = open_model("mistral")
    (caption,) = [c.value for c in at.caption if "Mistral decoder" in c.value]
    for words in ("rotary positions", "2 key/value heads", "16-token sliding window", "bfloat16"):
        assert words in caption
    assert any("at most 16 tokens back" in info.value for info in at.info)


def test_the_sink_view_shows_the_engines_numbers_and_says_them():
    at = open_model("llama")
    model = checkpoint.load(TINY / "llama")
    run = bert.run(model, TEXT)
    expected = analysis.attention_sinks(
        run.attentions, layer_config.attention_mask(model.config, len(run.ids))
    )
    drawn = charts(at)["pretrained_sinks"]["data"]
    np.testing.assert_allclose(decode(drawn[0]["z"]), expected.first, atol=1e-6)
    np.testing.assert_allclose(
        decode(drawn[1]["x"]), expected.received[expected.strongest], atol=1e-6
    )
    words = sinks.sentence(expected, run.labels)
    assert f"{expected.share:.0%}" in words
    assert "“<s>”" in words
    shown = [m.value for m in at.markdown if "Across all 8 heads" in m.value]
    assert len(shown) == 1
    assert f"{expected.share * 100:.0f}\\%" in shown[0]


def test_the_neuron_view_of_a_sliding_window_shows_the_keys_in_the_window():
    at = open_model("mistral")
    n = len(bert.run(checkpoint.load(TINY / "mistral"), TEXT).ids)
    at.selectbox(key="pretrained_token").set_value(n - 1).run()
    assert not at.exception
    assert chart_z(at, "pretrained_neuron").shape == (16, 8)  # the window, not all n tokens


def test_gqa_groups_are_drawn_and_the_picker_names_the_shared_head():
    at = open_model("llama")
    at.select_slider(key="pretrained_head").set_value(3).run()
    assert not at.exception
    assert any(c.value == gqa.sharing([0, 0, 1, 1], 3) for c in at.caption)
    assert "shared with head 2" in gqa.sharing([0, 0, 1, 1], 3)
    assert any("query heads 2, 3" in c.value for c in at.caption)  # the neuron view's k
    ticks = charts(at)["pretrained_model_view"]["layout"]["xaxis"]["ticktext"]
    assert ticks == ["H0<br>KV0", "H1<br>KV0", "H2<br>KV1", "H3<br>KV1"]  # the model view too
    traces = charts(at)["pretrained_gqa"]["data"]
    assert traces[2]["text"] == ["Q0", "Q1", "Q2", "Q3"]
    assert traces[3]["text"] == ["KV0", "KV1"]
    one = open_model("llama_fp32")  # multi-query: one key/value head for all
    assert any("key/value head 0, shared with heads" in c.value for c in one.caption)
    assert charts(one)["pretrained_gqa"]["data"][3]["text"] == ["KV0"]


def test_the_rotary_view_is_the_engines_scores_against_rotary_removed():
    at = open_model("qwen2")
    model = checkpoint.load(TINY / "qwen2")
    run = bert.run(model, TEXT)
    layer = at.select_slider(key="pretrained_layer").value
    head = at.select_slider(key="pretrained_head").value
    query = at.selectbox(key="pretrained_finder_query").value
    key = at.selectbox(key="pretrained_finder_key").value
    q, k = one_layer.head_vectors(model, run, layer, head)
    scores = analysis.rotary_scores(
        q[query], k[key], np.arange(128), 8**-0.5, **model.config.rotary
    )
    drawn = charts(at)["pretrained_rotary"]["data"]
    np.testing.assert_allclose(decode(drawn[0]["y"]), scores.rotary, atol=1e-5)
    np.testing.assert_allclose(decode(drawn[1]["y"]), scores.plain, atol=1e-5)
    assert not np.allclose(scores.rotary, scores.plain)
    # At the pair's own distance, the score is the one the pass computed.
    rotated_q, rotated_k = run.queries[layer, head, query], run.keys[layer, head, key]
    assert scores.rotary[query - key] == pytest.approx(
        float(rotated_q @ rotated_k) * 8**-0.5, abs=1e-5
    )


@pytest.mark.parametrize("name", ["qwen2", "mistral"])
def test_generation_on_a_bf16_model_is_the_engines(name):
    at = open_model(name)
    at.slider(key="pretrained_gen_tokens").set_value(3).run()
    assert "pretrained_step" not in charts(at)  # until asked for
    at.button(key="pretrained_generate").click().run()
    assert not at.exception
    steps = generate.generate(checkpoint.load(TINY / name), TEXT, 3)
    (table,) = [frame.value for frame in at.dataframe if "step" in frame.value.columns]
    chosen = [next_token.token_label(step.token) for step in steps]
    assert list(table["chosen"]) == chosen
    assert list(table["probability"]) == pytest.approx([s.probability for s in steps])
    np.testing.assert_allclose(
        chart_z(at, "pretrained_step"), steps[0].attention.reshape(8, -1), atol=1e-6
    )


def test_the_cache_budget_counts_bf16_weights_at_their_own_size():
    held = cache.nbytes(checkpoint.load(TINY / "llama"))
    stored = (TINY / "llama" / "model.safetensors").stat().st_size
    assert stored - 4096 < held <= stored  # the tensors as stored, not float32's twice
    params = checkpoint.load(TINY / "llama").params
    arrays = [params["wte"], params["lm_head"], params["ln_f"]["g"]]
    arrays += [a for block in params["blocks"] for group in block.values() for a in group.values()]
    weights = 2 * sum(a.size for a in arrays)  # two bytes a weight, not float32's four
    assert weights <= held < weights + 1024  # and a few bytes of config


def test_a_bf16_model_over_the_budget_is_refused_naming_the_budget_that_reads_it(
    tmp_path, monkeypatch
):
    folder = tmp_path / "big_llama"
    shutil.copytree(TINY / "llama", folder)
    monkeypatch.setenv(cache.BUDGET_VARIABLE, "0.05")  # 50 KB: less than its 78 KB
    at = open_app("pretrained", timeout=120, text=TEXT, **{model_box.PATH_KEY: str(folder)})
    assert not at.exception
    (error,) = at.error
    assert "cache budget" in error.value
    assert "\\-\\-cache\\-mb 0" in error.value  # 2 × 78 KB: well under a megabyte


def test_two_sentences_are_compared_on_a_decoder():
    a = "The trophy doesn't fit into the brown suitcase because it is too big."
    b = "The trophy doesn't fit into the brown suitcase because it is too small."
    at = open_model("mistral", text=a, text_b=b)
    assert not at.exception
    assert {"pretrained_compare", "pretrained_lines", "pretrained_lines_b"} <= set(charts(at))
    model = checkpoint.load(TINY / "mistral")
    query = at.selectbox(key="pretrained_finder_query").value
    key = at.selectbox(key="pretrained_finder_key").value
    grid_a = chart_z(at, "pretrained_compare", 0)
    np.testing.assert_allclose(grid_a, bert.run(model, a).attentions[:, :, query, key], atol=1e-6)


def test_the_next_tokens_bars_are_the_engines_probabilities_on_a_bf16_model():
    at = open_model("qwen2")
    logits = bert.run(checkpoint.load(TINY / "qwen2"), TEXT).next_logits
    p = generate.probabilities(logits, 1.0)  # the stop drawn first
    top = np.argsort(-logits, kind="stable")[: models.TOP_K]
    (trace,) = charts(at)["pretrained_next"]["data"]
    np.testing.assert_allclose(decode(trace["y"]), [*p[top], 1 - p[top].sum()], rtol=1e-5)


@pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed")
def test_a_rope_scaling_this_engine_does_not_compute_is_said_by_name(tmp_path):
    folder = tmp_path / "yarn_scaled"
    shutil.copytree(TINY / "llama", folder)
    raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    raw["rope_scaling"] = {"rope_type": "yarn", "factor": 32.0}
    (folder / "config.json").write_text(json.dumps(raw), encoding="utf-8")
    at = open_app("pretrained", timeout=120, text=TEXT, **{model_box.PATH_KEY: str(folder)})
    assert not at.exception
    (error,) = at.error
    assert "rope\\_scaling type \\'yarn\\'" in error.value  # Markdown-escaped
    assert at.title[0].value == "A pretrained model: all-MiniLM-L6-v2"


NO_PRONOUN = "Cats sleep most of the day and dogs guard the house at night."


@pytest.mark.parametrize("name", ["gpt2", "llama", "mistral", "qwen2"])
def test_a_causal_models_pickers_start_late_and_offer_only_keys_the_query_sees(name):
    """Issue 55: after a new text the finder picked query 0 and key 1 (every weight 0.00),
    its key picker offered future keys, and the neuron and rotary views opened on token 0."""
    at = open_model(name)
    at.sidebar.text_area(key="text").set_value(NO_PRONOUN).run()
    assert not at.exception
    model = checkpoint.load(TINY / name)
    run = bert.run(model, NO_PRONOUN)
    n = len(run.labels)
    query = at.selectbox(key="pretrained_finder_query").value
    key = at.selectbox(key="pretrained_finder_key").value
    starts = [i for i, label in enumerate(run.labels) if label.isalpha() and not run.continues[i]]
    assert query == starts[-1]  # the last word's first piece: it sees the whole text
    seen = range(n)[layer_config.visible_keys(model.config, query)]
    assert key in seen
    assert key != query
    assert list(at.selectbox(key="pretrained_finder_key").options) == [
        f"{i}: {run.labels[i]}" for i in seen
    ]
    grid = chart_z(at, "pretrained_finder")
    np.testing.assert_allclose(grid, run.attentions[:, :, query, key], atol=1e-6)
    assert grid.min() > 0.0  # a key the query sees: no weight is the mask's 0
    assert at.selectbox(key="pretrained_token").value == query  # the neuron view's token
    at.selectbox(key="pretrained_finder_query").set_value(2).run()  # before the key
    assert at.selectbox(key="pretrained_finder_key").value <= 2
    assert len(at.selectbox(key="pretrained_finder_key").options) <= 3


@pytest.mark.parametrize("name", ["gpt2", "llama", "mistral", "qwen2"])
def test_the_text_box_and_the_description_give_the_models_own_length_limit(name):
    """Issue 55: the sidebar said "the model reads its first 512 tokens" for every model."""
    config = json.loads((TINY / name / "config.json").read_text())
    positions = config.get("max_position_embeddings", config.get("n_positions"))
    at = open_model(name)
    help_text = at.sidebar.text_area(key="text").help
    assert f"reads at most {positions:,} tokens" in help_text
    assert help_text.endswith("a longer text is refused.")
    assert "512" not in help_text
    assert any(f"positions for {positions:,} tokens" in c.value for c in at.caption)


@pytest.mark.parametrize("name", ["gpt2", "qwen2"])
def test_byte_level_pieces_are_labelled_as_the_text_holds_them(name):
    """Issue 55: "##oys" for a byte-level BPE's piece, "Ċ" for a line break."""
    text = "The boys\nran home unconvinced."
    at = open_model(name, text=text)
    assert not at.exception
    labels = [
        html.unescape(v).rstrip("\u200b") for v in charts(at)["pretrained_heatmap"]["data"][0]["x"]
    ]
    tokenizer = checkpoint.load(TINY / name).tokenizer
    ids = tokenizer.encode(text).ids
    decoded = [tokenizer.decode([i]) for i in ids]
    assert labels == [d.strip() or d.replace("\n", "↵").replace(" ", "␣") for d in decoded]
    assert "↵" in labels
    assert not any(label.startswith("##") or "Ċ" in label for label in labels)
