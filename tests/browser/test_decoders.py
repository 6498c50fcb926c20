"""Llama, Mistral and Qwen2 on /pretrained in headless Chromium (issue #43).

Each tiny decoder typed in the path box, as a visitor does: every view draws, the three
new ones included, and the sink view's heatmap is the engine's numbers as plotly.js
holds them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from browser_support import assert_healthy, look_at, look_at_every_chart, open_app, wait_settled

from app.widgets import model_box
from engine import analysis, bert, checkpoint, generate, layer_config

pytestmark = pytest.mark.browser

TINY = Path(__file__).resolve().parents[1] / "data" / "tiny_models"
TEXT = "The restaurant refused to serve me because it only cooks vegetarian food."
NEW_VIEWS = ("pretrained_sinks", "pretrained_gqa", "pretrained_rotary")

#: A chart's traces as plotly.js drew them: each trace's z (or y) as plain lists.
TRACES = """(key) => {
    const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    return plot._fullData.map(t => ({
        z: t.z ? Array.from(t.z, row => Array.from(row)) : null,
        y: t.y ? Array.from(t.y) : null,
    }));
}"""


def load_folder(page, folder):
    """Type ``folder`` in /pretrained's path box, as a visitor does, and wait for its views."""
    box = page.locator(f".st-key-{model_box.PATH_KEY} input")
    if not box.is_visible():
        page.get_by_text("Your own model: a checkpoint folder").click()
    box.fill(str(folder))
    box.press("Enter")
    wait_settled(page)
    page.locator(".st-key-pretrained_next .js-plotly-plot").wait_for()


def test_each_tiny_decoder_draws_every_view_and_the_sinks_are_the_engines(page, app_url, subtests):
    """Each folder typed in turn into one page, each a subtest of its own."""
    open_app(page, app_url + "/pretrained?text=" + TEXT.replace(" ", "+"))
    for name in ("llama", "llama_fp32", "mistral", "qwen2"):
        with subtests.test(msg=name):
            load_folder(page, TINY / name)
            look_at_every_chart(page)
            for key in NEW_VIEWS:
                look_at(page, key)
            model = checkpoint.load(TINY / name)
            run = bert.run(model, TEXT)
            sinks = analysis.attention_sinks(
                run.attentions, layer_config.attention_mask(model.config, len(run.ids))
            )
            drawn = page.evaluate(TRACES, "pretrained_sinks")
            np.testing.assert_allclose(drawn[0]["z"], sinks.first, atol=1e-6)
            rotary = page.evaluate(TRACES, "pretrained_rotary")
            assert len(rotary[0]["y"]) == 128  # every distance the model's positions allow
            assert_healthy(page)
        page.errors.clear()  # a page error fails the folder it came with, not the next


def test_generation_runs_when_its_button_is_pressed(page, app_url):
    """The next token at once; generation after the click, the engine's steps drawn."""
    open_app(page, app_url + "/pretrained?text=" + TEXT.replace(" ", "+"))
    load_folder(page, TINY / "qwen2")
    assert page.locator(".st-key-pretrained_step").count() == 0  # not run on a new text
    button = page.locator(".st-key-pretrained_generate button")
    button.scroll_into_view_if_needed()
    assert button.inner_text() == "Generate 4 tokens"
    button.click()
    wait_settled(page)
    look_at(page, "pretrained_step")
    steps = generate.generate(checkpoint.load(TINY / "qwen2"), TEXT, 4)
    drawn = page.evaluate(TRACES, "pretrained_step")
    np.testing.assert_allclose(drawn[0]["z"], steps[0].attention.reshape(8, -1), atol=1e-6)
    assert_healthy(page)
