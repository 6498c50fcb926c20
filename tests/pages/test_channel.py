"""The browser's own controls (layer, head, mask) and the one channel Python writes them by.

A move the browser reports is stored and never sent back as a placement; Python's writes
on purpose (a link, the presenter bar, a new model) are, once each.
"""

import pytest
from apptest_support import RANDOM, control, move, open_app, sidebar_controls
from streamlit.testing.v1 import AppTest

from engine.resources import minilm_dir

needs_minilm = pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed")


@needs_minilm
def test_a_reported_move_is_stored_and_never_placed_back():
    at = open_app("attention")
    placed = {name: control(at, name)["placed"] for name in ("layer", "head", "causal")}
    move(at, "head", 4)
    move(at, "layer", 2)
    move(at, "causal", True)
    assert not at.exception
    assert (at.session_state["head"], at.session_state["layer"]) == (4, 2)
    assert at.session_state["causal"] is True
    assert {name: control(at, name)["placed"] for name in placed} == placed  # none placed
    assert (control(at, "head")["value"], control(at, "causal")["value"]) == (4, 1)
    assert (at.query_params["head"], at.query_params["layer"], at.query_params["causal"]) == (
        "4",
        "2",
        "1",
    )


@needs_minilm
def test_pythons_writes_on_purpose_are_placed_once_each():
    at = open_app("attention", {"present": "1"})  # no sidebar: the page's control is hidden
    head = control(at, "att_head", suffix="")
    at.selectbox(key="present_head").set_value(7).run()  # the presenter bar's pick
    picked = control(at, "att_head", suffix="")
    assert (picked["value"], picked["hidden"], at.session_state["head"]) == (7, True, 7)
    assert picked["placed"] != head["placed"]
    at.run()  # a run that changes nothing places nothing
    assert control(at, "att_head", suffix="")["placed"] == picked["placed"]


@needs_minilm
def test_a_new_model_places_the_head_it_clamps():
    at = open_app("attention")
    move(at, "head", 9)
    before = control(at, "head")["placed"]
    at.sidebar.selectbox(key="weights").set_value("random").run()
    assert at.session_state["head"] == 0
    assert not [data for data in sidebar_controls(at) if data["name"] == "head"]  # one head
    at.sidebar.selectbox(key="weights").set_value("minilm").run()
    assert control(at, "head")["value"] == at.session_state["head"]  # MiniLM's default head
    assert control(at, "head")["placed"] != before


def test_the_mask_reaches_every_page_that_reads_it():
    at = open_app("causal_mask", RANDOM)
    assert control(at, "causal")["value"] == 0
    move(at, "causal", True)
    assert not at.exception
    assert at.query_params["causal"] == "1"
    assert control(at, "causal")["value"] == 1


def test_a_run_sends_its_link_even_when_streamlits_copy_of_the_address_agrees():
    """The address bar can be newer than the address a run's request carried.

    A head moved to 2 and back to 1 before the first move's run wrote ``head=2``: the
    second run starts from the request's address (no head) while the browser's bar shows
    the first run's ``head=2``. Its link (head 1, the default: no head) must still be sent.
    """

    def script():
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        from app.state import session

        session.load_url()
        get_script_run_ctx().query_string = "layer=1&head=2"  # the bar, after the run before
        session.write_url()

    at = AppTest.from_function(script, default_timeout=30)  # a cold import of the app
    at.query_params["layer"] = "1"
    at.run()
    assert not at.exception
    assert at.query_params == {"layer": "1"}
