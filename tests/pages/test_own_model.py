"""Your own model on /pretrained (issue #27): the tiny checkpoints through AppTest.

Every view drawn on a tiny BERT and a tiny GPT-2 (2 layers, 4 heads: the page takes its
counts from the model), GPT-2's next token at the temperature the slider shows against
:mod:`engine.generate` itself, generation step by step, the folder's name in the link, and
the folders the engine refuses said in a notice, with MiniLM shown instead.
"""

import json
import shutil

import numpy as np
import pytest
import tiny_models
from apptest_support import (
    chart_payloads,
    chart_z,
    charts,
    decode,
    open_app,
    page_script,
    unbundle,
    unpack,
)

from app.data import cache, models
from app.live import temperature
from app.state.controls import MAX_SENTENCES
from app.views import next_token
from app.widgets import model_box
from engine import bert, checkpoint, generate, summarize
from engine.resources import minilm_dir

TINY = tiny_models.TINY
TEXT = "The restaurant refused to serve me because it only cooks vegetarian food."
#: Every view of /pretrained, on any model.
VIEWS = {
    "pretrained_finder",
    "pretrained_bar",
    "pretrained_heatmap",
    "pretrained_lines",
    "pretrained_model_view",
    "pretrained_summaries",
    "pretrained_neuron",
    "pretrained_rollout",
    "pretrained_sinks",
}
#: What only a causal model adds: the next token and the last token's attention, at once;
#: a step's attention once generation is asked for (:func:`generated`).
NEXT = {"pretrained_next", "pretrained_last"}
STEP = "pretrained_step"
needs_minilm = pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed")


def open_model(folder, **session):
    session = {"text": TEXT, model_box.PATH_KEY: str(folder)} | session
    return open_app("pretrained", timeout=120, **session)


def title(at):
    return at.title[0].value


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "electra"])
def test_a_tiny_encoder_draws_every_view_with_its_own_layers_and_heads(family):
    at = open_model(TINY / family)
    assert not at.exception
    assert not at.error
    assert set(charts(at)) == VIEWS  # no next token: an encoder has no LM head
    assert title(at) == f"A pretrained model: {family}"
    assert at.query_params["model"] == family  # the folder's name, never its path
    run = bert.run(checkpoint.load(TINY / family), TEXT)
    query = at.selectbox(key="pretrained_finder_query").value
    key = at.selectbox(key="pretrained_finder_key").value
    grid = chart_z(at, "pretrained_finder")
    assert grid.shape == (2, 4)
    np.testing.assert_allclose(grid, run.attentions[:, :, query, key], atol=1e-6)
    layer = at.select_slider(key="pretrained_layer").value
    head = at.select_slider(key="pretrained_head").value
    assert (
        f"Layer {layer}, head {head}" in charts(at)["pretrained_heatmap"]["layout"]["title"]["text"]
    )
    assert "through all 2 layers" in charts(at)["pretrained_rollout"]["layout"]["title"]["text"]


def test_a_tiny_gpt2_draws_every_view_and_its_next_token():
    at = open_model(TINY / "gpt2")
    assert not at.exception
    assert not at.error
    assert set(charts(at)) == VIEWS | NEXT  # no generation until it is asked for
    assert any("causal" in info.value and "model's own" in info.value for info in at.info)
    assert "pretrained_hide_special" not in {toggle.key for toggle in at.toggle}  # no [CLS]
    model = checkpoint.load(TINY / "gpt2")
    run = bert.run(model, TEXT)
    drawn = chart_z(at, "pretrained_last")  # one row per (layer, head)
    np.testing.assert_allclose(drawn, run.last_token_attention.reshape(8, -1), atol=1e-6)
    heatmap = chart_z(at, "pretrained_heatmap")
    assert (np.triu(heatmap, 1) == 0).all()  # the model's own mask, in the head view too
    token = at.selectbox(key="pretrained_token").value
    keys = chart_z(at, "pretrained_neuron")  # the keys a causal token sees: itself and before
    assert keys.shape == (token + 1, 32 // 4)


def temperature_frames(at):
    """The temperature's frames as the last run sent them: ``(header, arrays)``."""
    (element,) = [
        e for e in at.get("bidi_component") if e.proto.id.endswith(f"-{temperature.SOURCE}_frames")
    ]
    (payload,) = unbundle(element.proto.bytes)
    return unpack(payload)


def test_the_temperature_frames_hold_the_engines_probabilities_at_every_stop():
    at = open_model(TINY / "gpt2")
    model = checkpoint.load(TINY / "gpt2")
    logits = bert.run(model, TEXT).next_logits
    top = np.argsort(-logits, kind="stable")[: models.TOP_K]
    header, arrays = temperature_frames(at)
    bars = arrays["probabilities"][:, 0]  # [stop, k + 1]: the top k, then every other token
    assert bars.shape == (len(models.TEMPERATURES), models.TOP_K + 1)
    for stop, t in enumerate(models.TEMPERATURES):
        p = generate.probabilities(logits, t)
        np.testing.assert_allclose(bars[stop, :-1], p[top], rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(bars[stop, -1], 1 - p[top].sum(), atol=1e-6)
    assert header["labels"][0] == "0 (greedy)"
    for stop in (0, len(models.TEMPERATURES) - 1):  # the title the browser writes for a stop
        shown = next_token.TITLE.replace("{scale}", header["titles"][stop])  # is the server's
        server = next_token.figure([], [], 0.0, models.TEMPERATURES[stop]).layout.title.text
        assert shown == server
    assert not np.allclose(bars[0], bars[-1])  # greedy against T = 16: the stops differ

    # The bars follow those frames, drawn at T = 1 (the browser puts the stop shown in) ...
    chart = charts(at)["pretrained_next"]
    live = chart_payloads(at)["pretrained_next"]["live"]
    assert (live["source"], live["frames"], live["bar"]) == (
        temperature.SOURCE,
        header["id"],
        "probabilities",
    )
    assert models.TEMPERATURES[live["drawn"]] == 1.0
    (trace,) = chart["data"]
    np.testing.assert_allclose(decode(trace["y"]), bars[live["drawn"]], rtol=1e-6)
    assert trace["x"][-1] == next_token.REST
    # ... and a new visit of the page keeps the stop the slider was left on.
    at.session_state[temperature.STOP] = 3
    at.run()
    assert slider_data(at)["value"] == 3
    assert charts(at)["pretrained_next"]["data"] == chart["data"]  # the same reference figure


def slider_data(at):
    """The temperature slider's data as the last run sent them."""
    (element,) = [
        e for e in at.get("bidi_component") if e.proto.id.endswith(f"-{temperature.SOURCE}")
    ]
    return json.loads(element.proto.json)


def test_the_temperature_csv_is_the_stop_shown():
    tokens, sweep = models.sweep(str(TINY / "gpt2"), TEXT)
    for stop in (0, 5, len(models.TEMPERATURES) - 1):
        table = next_token.table(tokens, sweep, stop)
        assert set(table["temperature"]) == {models.TEMPERATURES[stop]}
        assert table["probability"].sum() == pytest.approx(1.0, abs=1e-12)
        assert table["token"].iloc[-1] == next_token.REST


def steps_table(at):
    (table,) = [frame.value for frame in at.dataframe if "step" in frame.value.columns]
    return table


def generated(at):
    """Press the generation button; the page after its run."""
    at.button(key="pretrained_generate").click().run()
    assert not at.exception
    return at


def step_tables(at):
    return [frame.value for frame in at.dataframe if "step" in frame.value.columns]


def test_generation_runs_when_asked_and_is_kept_until_a_setting_changes():
    at = open_model(TINY / "gpt2")
    at.slider(key="pretrained_gen_tokens").set_value(3).run()
    assert STEP not in charts(at)
    assert not step_tables(at)
    assert at.button(key="pretrained_generate").label == "Generate 3 tokens"
    generated(at)
    assert STEP in charts(at)
    at.select_slider(key="pretrained_layer").set_value(1).run()  # another view's control
    assert STEP in charts(at)  # kept
    at.slider(key="pretrained_gen_tokens").set_value(2).run()  # a setting of its own
    assert STEP not in charts(at)
    assert not step_tables(at)
    generated(at)
    assert len(steps_table(at)) == 2
    at.session_state["text"] = "The cat sat on the mat."  # a new text asks again too
    at.run()
    assert STEP not in charts(at)


def test_generation_is_the_engines_step_by_step():
    at = open_model(TINY / "gpt2")
    at.slider(key="pretrained_gen_tokens").set_value(3).run()
    generated(at)
    model = checkpoint.load(TINY / "gpt2")
    steps = generate.generate(model, TEXT, 3, temperature=0.0)
    table = steps_table(at)
    assert list(table["step"]) == [0, 1, 2]
    assert list(table["chosen"]) == [next_token.token_label(step.token) for step in steps]
    at.select_slider(key="pretrained_step3").set_value(2).run()
    np.testing.assert_allclose(chart_z(at, STEP), steps[2].attention.reshape(8, -1), atol=1e-6)
    at.select_slider(key="pretrained_gen_temperature").set_value(1.0).run()
    generated(at)
    sampled = generate.generate(model, TEXT, 3, temperature=1.0, seed=0)
    table = steps_table(at)
    assert list(table["chosen"]) == [next_token.token_label(step.token) for step in sampled]
    assert "probability at T = 1" in table.columns


def test_greedy_generation_shows_the_models_own_probability_not_one():
    """Issue #55, item 17: at T = 0 the pick is certain; the model's softmax at T = 1 is not."""
    at = generated(open_model(TINY / "gpt2"))
    model = checkpoint.load(TINY / "gpt2")
    ids = bert.run(model, TEXT).ids.tolist()
    table = steps_table(at)
    for chosen, shown in zip(table["chosen"], table["probability"], strict=True):
        whole = bert.run_ids(model, ids)  # the whole pass: the oracle
        own = generate.probabilities(whole.next_logits, 1.0)
        pick = int(np.argmax(own))
        assert chosen == next_token.token_label(model.tokenizer.id_to_token(pick))
        assert shown == pytest.approx(own[pick], abs=1e-6)
        assert shown < 1
        ids.append(pick)
    assert not any(column.startswith("probability at") for column in table.columns)


def test_a_link_names_the_folder_and_opens_it_on_a_server_that_loaded_it():
    first = open_model(TINY / "gpt2")
    assert first.query_params["model"] == "gpt2"
    assert str(TINY) not in str(dict(first.query_params))
    at = open_app("pretrained", {"model": "gpt2"}, timeout=120)  # a new session, same server
    assert not at.exception
    assert title(at) == "A pretrained model: gpt2"
    assert "pretrained_next" in charts(at)


@needs_minilm
def test_a_link_to_a_folder_this_server_does_not_know_says_so_and_keeps_the_rest():
    at = open_app("pretrained", {"model": "*nowhere*", "text": TEXT}, timeout=120)
    assert not at.exception
    (warning,) = [w for w in at.warning if "nowhere" in w.value]
    assert "\\*nowhere\\*" in warning.value  # escaped: shown as typed, never as Markdown
    assert "has not loaded" in warning.value
    assert title(at) == "A pretrained model: all-MiniLM-L6-v2"
    assert at.session_state["text"] == TEXT  # nothing else of the link is lost
    assert "model" not in at.query_params
    at.run()  # a rerun (presentation mode's first, say) still says it
    assert [w for w in at.warning if "nowhere" in w.value]
    at.text_input(key=model_box.PATH_KEY).set_value(str(TINY / "bert")).run()
    assert not [w for w in at.warning if "nowhere" in w.value]


def test_a_class_server_reads_no_typed_folder_but_opens_the_ones_it_loaded(monkeypatch):
    monkeypatch.setenv(models.FOLDER_BOX_VARIABLE, "off")  # as scripts/serve_class.sh sets it
    at = open_app("pretrained", {"text": TEXT}, timeout=120)
    assert not at.exception
    assert not [box for box in at.text_input if box.key == model_box.PATH_KEY]  # no path box
    assert title(at) == "A pretrained model: all-MiniLM-L6-v2"
    unknown = open_app("pretrained", {"model": "elsewhere"}, timeout=120)
    (warning,) = [w for w in unknown.warning if "elsewhere" in w.value]
    assert "box" not in warning.value  # points at no box the page does not draw
    models.remember(str(TINY / "gpt2"))  # a folder this server loaded (its --model, say)
    linked = open_app("pretrained", {"model": "gpt2"}, timeout=120)
    assert title(linked) == "A pretrained model: gpt2"
    assert "pretrained_next" in charts(linked)


def without(folder, tmp_path, *names):
    copy = tmp_path / folder
    shutil.copytree(TINY / folder, copy)
    for name in names:
        (copy / name).unlink()
    return copy


@needs_minilm
@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda tmp: tmp, "has no config.json"),
        (lambda tmp: without("bert", tmp, "tokenizer.json"), "has no tokenizer.json"),
        (lambda tmp: tmp / "nowhere", "is not a folder"),
    ],
    ids=["empty folder", "no tokenizer", "no folder"],
)
def test_a_refused_folder_is_said_clearly_and_minilm_shown(tmp_path, make, said):
    at = open_model(make(tmp_path))
    assert not at.exception
    (error,) = at.error
    assert said.replace(".", "\\.") in error.value
    assert title(at) == "A pretrained model: all-MiniLM-L6-v2"
    assert "pretrained_finder" in charts(at)
    assert "model" not in at.query_params


@needs_minilm
def test_weights_only_in_a_pickle_are_never_opened(tmp_path):
    folder = without("bert", tmp_path, "model.safetensors")
    (folder / "pytorch_model.bin").write_bytes(b"not even a pickle: never opened")
    at = open_model(folder)
    assert not at.exception
    (error,) = at.error
    assert "pytorch\\_model\\.bin" in error.value
    assert "never opened" in error.value
    assert title(at) == "A pretrained model: all-MiniLM-L6-v2"


def test_a_gpt2_text_without_tokens_says_so():
    at = open_model(TINY / "gpt2")
    at.sidebar.text_area(key="text").set_value("").run()
    assert not at.exception
    assert any("Type some text" in info.value for info in at.info)


@needs_minilm
def test_switching_from_minilm_to_a_smaller_model_and_back_keeps_the_page_whole():
    at = open_app("pretrained", timeout=120)
    at.select_slider(key="pretrained_layer").set_value(5).run()  # MiniLM's last layer
    at.select_slider(key="pretrained_head").set_value(11).run()
    at.text_input(key=model_box.PATH_KEY).set_value(str(TINY / "gpt2")).run()
    assert not at.exception
    assert set(charts(at)) == VIEWS | NEXT
    assert at.select_slider(key="pretrained_layer").value < 2  # the tiny model's two layers
    at.text_input(key=model_box.PATH_KEY).set_value("").run()
    assert not at.exception
    assert title(at) == "A pretrained model: all-MiniLM-L6-v2"
    assert "model" not in at.query_params


def test_a_folders_name_and_the_texts_tokens_are_shown_as_typed(tmp_path):
    folder = tmp_path / "my_*model*_<b>"
    shutil.copytree(TINY / "gpt2", folder)
    at = generated(open_model(folder, text="a <b>bold</b> <i>"))
    assert not at.exception
    assert title(at) == "A pretrained model: my\\_\\*model\\*\\_\\<b\\>"  # Markdown escaped
    assert at.query_params["model"] == folder.name  # the link names it, the URL encodes it
    for key in ("pretrained_last", "pretrained_step"):
        heading = charts(at)[key]["layout"]["title"]["text"]
        assert "<i>" not in heading
        assert "<b>" not in heading


def test_robertas_special_tokens_are_named_as_they_are():
    at = open_model(TINY / "roberta")
    (toggle,) = [toggle for toggle in at.toggle if toggle.key == "pretrained_hide_special"]
    assert toggle.label == "Hide \\<s\\> and \\<\\/s\\>"  # Markdown-escaped
    toggle.set_value(True).run()
    assert "<s>" not in charts(at)["pretrained_heatmap"]["data"][0]["y"]


def test_a_model_larger_than_the_cache_budget_is_refused_saying_what_budget_reads_it(
    tmp_path, monkeypatch
):
    folder = tmp_path / "big"  # a folder of its own: the refusal is cached on it
    shutil.copytree(TINY / "gpt2", folder)
    monkeypatch.setenv(cache.BUDGET_VARIABLE, "0.1")  # 100 KB: less than its 200 KB
    at = open_model(folder)
    assert not at.exception
    (error,) = at.error
    assert "cache budget" in error.value
    assert "\\-\\-cache\\-mb" in error.value
    assert "pretrained_next" not in charts(at)


@needs_minilm
def test_summarize_ranks_with_the_encoder_chosen_and_keeps_minilm_for_gpt2():
    at = open_model(TINY / "bert")
    at.switch_page(page_script("summarize")).run()
    assert not at.exception
    assert at.caption[0].value.startswith("bert turns each sentence into one vector")
    doc = at.session_state["summarize_text"]
    ranking = summarize.rank_sentences(checkpoint.load(TINY / "bert"), doc, MAX_SENTENCES)
    np.testing.assert_allclose(chart_z(at, "summarize_similarity"), ranking.similarity, atol=1e-6)
    at.switch_page(page_script("pretrained")).run()
    at.text_input(key=model_box.PATH_KEY).set_value(str(TINY / "gpt2")).run()
    at.switch_page(page_script("summarize")).run()
    assert not at.exception
    assert any("uses all-MiniLM-L6-v2, not “gpt2”" in c.value for c in at.caption)


def exported_names(at):
    """Each chart's exported file name (PNG; its CSV takes the same), by the chart's key."""
    return {
        key: payload["config"]["toImageButtonOptions"]["filename"]
        for key, payload in chart_payloads(at).items()
    }


def test_exported_files_name_the_model_shown_not_the_sidebars_settings():
    at = open_model(TINY / "gpt2")
    at.select_slider(key="pretrained_layer").set_value(1).run()
    at.select_slider(key="pretrained_head").set_value(2).run()
    names = exported_names(at)
    assert names["pretrained_finder"] == "attention-explorer_pretrained_finder_gpt2"
    assert names["pretrained_heatmap"] == "attention-explorer_pretrained_heatmap_gpt2-l1-h2"
    assert all("gpt2" in name for name in names.values())
    at.switch_page(page_script("attention")).run()  # back on a page of the sidebar's settings
    names = exported_names(at)
    assert not any("gpt2" in name for name in names.values())
    assert "-s{scale}-" in names["att_weights"]  # the sidebar's settings, the stop shown


def test_robertas_limit_is_its_positions_less_the_padding_offset():
    """Issue 55: RoBERTa numbers positions from padding_idx + 1, so 130 positions read 128
    tokens (transformers: max_position_embeddings - padding_idx - 1)."""
    config = json.loads((TINY / "roberta" / "config.json").read_text())
    limit = config["max_position_embeddings"] - config["pad_token_id"] - 1
    at = open_model(TINY / "roberta")
    assert f"reads at most {limit:,} tokens" in at.sidebar.text_area(key="text").help
    too_long = " ".join(["word"] * limit)  # one token each, and <s> and </s> besides
    at.sidebar.text_area(key="text").set_value(too_long).run()
    assert any(f"reads at most {limit}" in w.value for w in at.warning)


@needs_minilm
@pytest.mark.parametrize(("page", "weights"), [("attention", "minilm"), ("attention", "random")])
def test_the_core_pages_text_box_gives_the_limit_of_the_weights_shown(page, weights):
    config = json.loads((minilm_dir() / "config.json").read_text())
    at = open_app(page, {"weights": weights})
    help_text = at.sidebar.text_area(key="text").help.replace("\\", "")  # Markdown's escapes
    if weights == "minilm":
        positions = config["max_position_embeddings"]
        assert f"all-MiniLM-L6-v2 reads at most {positions:,} tokens, [CLS] and [SEP]" in help_text
    assert "the first 512 tokens and leaves the rest out" in help_text  # the random model's
