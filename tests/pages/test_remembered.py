"""Figures remembered by their arguments (app.views.chart.remembered): built once, drawn the same.

A chart drawn at the live head's reference head is the same figure whichever head is
shown, so a head switch builds none of them; a remembered figure is the one its builder
makes, and presentation mode's large type is never served from a desktop's figure.
"""

import functools
import json

import pytest
from apptest_support import (
    chart_payloads,
    charts,
    move,
    open_app,
)

from app.data import cache
from app.views import attention_maps, chart
from engine.resources import minilm_dir

needs_minilm = pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed")


@pytest.fixture
def weights_builds(monkeypatch):
    """The titles of the weights figures built from now on (the builder counts its calls)."""
    built, original = [], attention_maps.weights_figure

    @functools.wraps(original)
    def counted(weights, labels, title="Attention weights", **options):
        built.append(title)
        return original(weights, labels, title, **options)

    monkeypatch.setattr(attention_maps, "weights_figure", counted)
    return built


@needs_minilm
def test_a_head_switch_builds_no_chart_drawn_at_the_reference_head(weights_builds):
    at = open_app("attention")
    before = chart_payloads(at)["att_weights"]["spec"]
    weights_builds.clear()
    move(at, "head", 1)
    assert not at.exception
    assert weights_builds == []
    assert chart_payloads(at)["att_weights"]["spec"] == before


def test_a_remembered_figure_is_the_one_its_builder_makes(weights_builds):
    cache.clear()
    at = open_app("causal_mask")
    built = charts(at)
    assert weights_builds  # the page draws weights: built on this first run
    weights_builds.clear()
    at.run()
    assert weights_builds == []  # the second run sends the remembered figures
    assert charts(at) == built


@needs_minilm
def test_presentation_mode_is_not_served_the_desktops_figure():
    desktop = charts(open_app("attention"))["att_weights"]
    presented = charts(open_app("attention", {"present": "1"}))["att_weights"]
    assert desktop["layout"].get("font", {}).get("size") is None  # the desktop's theme's
    assert presented["layout"]["font"]["size"] == chart.PRESENT_FONT
    wide = charts(open_app("attention", {"present": "1"}, _viewport=(1920, 1080)))["att_weights"]
    assert wide["layout"]["height"] > presented["layout"]["height"]  # laid out for its screen


def test_a_closure_is_refused():
    def local(x):
        return x

    with pytest.raises(ValueError, match="module-level"):
        chart.remembered(local, 1)
    with pytest.raises(TypeError):
        chart.remembered(attention_maps.weights_figure, object(), []).name()
    assert json.loads(json.dumps(chart.remembered(len, (1,)).name()))  # a name of plain strings


def test_a_figure_over_large_arrays_is_built_each_time(weights_builds, monkeypatch):
    """Past the limit a figure is not hashed nor kept: the budget stays the engine's."""
    monkeypatch.setattr(chart, "REMEMBER_MAX_BYTES", 0)
    at = open_app("causal_mask")
    weights_builds.clear()
    at.run()
    assert weights_builds  # built again on the rerun
