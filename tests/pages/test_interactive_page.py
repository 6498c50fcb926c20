"""The app's "Download as an interactive page" buttons: the page built on a click, its numbers."""

import json
import re

import numpy as np
import pytest
import streamlit as st
from apptest_support import RANDOM, context_warnings, decode, open_app, outside_a_script_run
from streamlit.delta_generator import DeltaGenerator

from app.data import cache, layers
from app.state import controls
from app.views import page
from engine import bert, checkpoint
from engine.attention import attention_over_scales, strong_links
from engine.resources import minilm_dir

needs_minilm = pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed")


@pytest.fixture
def buttons(monkeypatch):
    """Every download button the runs create, by key: (label, data callable, file name)."""
    found = {}
    original = DeltaGenerator.download_button

    def capture(self, label, data, *args, **kwargs):
        found[kwargs["key"]] = (label, data, kwargs["file_name"])
        return original(self, label, data, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", capture)
    monkeypatch.setattr(st, "download_button", capture.__get__(st._main))
    return found


def figure_in(html):
    """The figure a page holds, as JSON (its frames included)."""
    spec = html.split("const FIGURE = ", 1)[1].split(";\nconst PRINT = ", 1)[0]
    return json.loads(spec)


def built_page(buttons, key):
    label, build, file_name = buttons[key]
    assert label == page.BUTTON_LABEL
    assert file_name.endswith(".html")
    cache.clear()  # a click long after the run: every cached result gone
    with context_warnings() as warnings:
        html = outside_a_script_run(build)
    assert warnings == []
    assert "<script src" not in html
    return figure_in(html)


@pytest.mark.parametrize("query", [RANDOM, {}])
def test_the_attention_pages_file_plays_the_engines_sweep(query, buttons):
    if not query and minilm_dir() is None:
        pytest.skip("MiniLM is not installed")
    at = open_app("attention", query)
    assert not at.exception
    figure = built_page(buttons, "attention_page")
    values = {key: at.session_state[key] for key in controls.CONTROLS}
    settings = controls.Settings.from_values(values)
    head = values["head"]
    run = layers.layer(settings.replace(scale=None))
    scales = np.array(controls.scale_options(*settings.shape))
    attention = run.attention
    sweep = attention_over_scales(
        attention.q[head], attention.k[head], attention.v[head], scales, run.mask
    )
    assert len(figure["frames"]) == len(scales)  # a short text: every stop
    for stop in (0, len(scales) // 2, len(scales) - 1):
        z = decode(figure["frames"][stop]["data"][0]["z"])
        np.testing.assert_array_equal(z, sweep.weights[stop].astype(np.float32))
    start = figure["layout"]["sliders"][0]["active"]
    shown = controls.default_scale(*settings.shape) if settings.scale is None else settings.scale
    assert scales[start] == shown  # opens at the stop the page shows


@needs_minilm
def test_the_pretrained_pages_file_draws_the_line_views_lines(buttons):
    at = open_app("pretrained", timeout=120)
    assert not at.exception
    figure = built_page(buttons, "pretrained_lines_page")
    run = bert.run(checkpoint.load_minilm(), at.session_state["text"])
    layer = at.session_state["pretrained_layer"]
    heads = sorted(at.session_state["pretrained_lines_heads"])
    threshold = at.session_state["pretrained_lines_threshold"]
    links = strong_links(run.attentions[layer][heads], threshold)
    drawn = "".join(shape["path"] for shape in figure["layout"]["shapes"])
    assert sorted(re.findall(r"M0,(\d+)L1,(\d+)", drawn)) == sorted(
        (str(q), str(k)) for q, k in zip(links.query, links.key, strict=True)
    )
    assert f"layer {layer}" in figure["layout"]["title"]["text"]
