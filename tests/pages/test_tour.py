"""The guided tour, the presentation mode and the export set-up, through AppTest."""

import json

import pytest
from apptest_support import RANDOM, chart_payloads, open_app

from app.lecture import tour
from app.state import controls
from app.views import chart


def open_tour(step=None, **query):
    if step is not None:
        query["step"] = str(step)
    return open_app("tour", page_query=query)


def titles(at):
    return [t.value for t in at.main.title]


def test_tour_walks_forward_and_back_with_the_step_in_the_url():
    at = open_tour()
    assert titles(at) == [tour.STEPS[0].title]
    for step in range(2, len(tour.STEPS) + 1):
        at.button(key="tour_next").click().run()
        assert not at.exception
        assert titles(at) == [tour.STEPS[step - 1].title]
        assert at.query_params["step"] == str(step)
        assert chart_payloads(at)
    assert any("End of the tour" in s.value for s in at.success)
    at.button(key="tour_back").click().run()
    assert at.query_params["step"] == str(len(tour.STEPS) - 1)


def test_a_link_opens_its_step():
    at = open_tour(step=5)
    assert titles(at) == [tour.STEPS[4].title]


@pytest.mark.parametrize("raw", ["0", "99", "two", "-1"])
def test_a_bad_step_starts_at_the_beginning_with_a_warning(raw):
    at = open_tour(step=raw)
    assert not at.exception
    assert titles(at) == [tour.STEPS[0].title]
    assert any("tour step" in w.value for w in at.warning)


def test_parse_step():
    assert tour.parse_step(None) == (1, None)
    assert tour.parse_step("3") == (3, None)
    step, warning = tour.parse_step("<b>9</b>")
    assert step == 1
    assert "<b>" not in warning


def test_presentation_mode_hides_controls_and_can_be_left():
    at = open_tour(step=4, present="1")
    assert not at.exception
    assert any("display: none" in h.proto.body for h in at.get("html"))
    assert not at.get("download_button")
    at.button(key="leave_presentation").click().run()
    assert "present" not in at.query_params
    assert not any("display: none" in h.proto.body for h in at.get("html"))


def test_charts_export_print_resolution_images_named_after_settings():
    at = open_app("attention", RANDOM)
    options = chart_payloads(at)["att_weights"]["config"]["toImageButtonOptions"]
    assert options["scale"] >= 3
    assert options["format"] == "png"
    # drawn from the scale's frames: the browser puts in the stop it shows
    assert options["filename"].startswith("attention-explorer_att_weights_d16-h1-s{scale}")
    raw = chart_payloads(at)["att_raw"]["config"]["toImageButtonOptions"]
    # the raw scores do not depend on the scale: their name leaves it out
    assert raw["filename"].startswith("attention-explorer_att_raw_d16-h1-full")
    at.sidebar.selectbox(key="export_format").set_value("svg").run()
    options = chart_payloads(at)["att_weights"]["config"]["toImageButtonOptions"]
    assert options["format"] == "svg"


def test_every_heatmap_offers_csv():
    at = open_app("attention")
    keys = {b.proto.id.rsplit("-", 1)[-1] for b in at.get("download_button")}
    assert {"att_raw_csv", "att_scaled_csv", "att_weights_csv", "att_output_csv"} <= keys


def test_the_last_step_says_where_next():
    at = open_tour(step=len(tour.STEPS))
    assert not at.exception
    links = [link.proto.page for link in at.get("page_link")]  # the pages' URL paths
    assert links[-len(tour.WHERE_NEXT) :] == ["pretrained", "summarize", "decoder"]


@pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed")
def test_export_names_say_the_trained_layer_and_head():
    at = open_app("attention", {"layer": "2", "head": "7"})
    options = chart_payloads(at)["att_weights"]["config"]["toImageButtonOptions"]
    filename = options["filename"]  # the browser puts in the head and stop it shows
    assert filename == "attention-explorer_att_weights_minilm-l2-h{head}-s{scale}-full"
    options = chart_payloads(at)["att_raw"]["config"]["toImageButtonOptions"]
    assert options["filename"] == "attention-explorer_att_raw_minilm-l2-h{head}-full"


def test_presentation_mode_gives_a_tables_rows_room_for_its_large_type():
    spec = json.loads(chart_payloads(open_tour(step=1, present="1"))["tour_step_1"]["spec"])
    table = spec["data"][0]
    assert table["type"] == "table"
    assert table["cells"]["height"] >= chart.PRESENT_FONT + 10
    assert table["header"]["height"] >= chart.PRESENT_FONT + 10


def test_back_and_next_show_one_arrow_each_the_keys_badge():
    """Streamlit draws a shortcut's key as a badge beside the label (← for Left): an arrow
    in the label too read "← Back ←"."""
    at = open_tour(step=2)
    for key, shortcut in (("tour_back", "Left"), ("tour_next", "Right")):
        button = at.button(key=key)
        assert button.proto.shortcut.lower() == shortcut.lower()
        assert not set(button.label) & set("←→"), button.label
