"""Your own model in headless Chromium: the tiny GPT-2 typed in the path box (issue #27).

The temperature slider moved with the keyboard shows the next token's bars at the stop it
shows from the engine's frames, held in the browser, and the link carries the folder's name (never
its path) and opens the same model in a fresh browser on the same server.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from browser_support import assert_healthy, open_app, query, slider, unplugged_page, wait_settled

from app.data import models
from app.live import temperature
from app.widgets import model_box
from engine import bert, checkpoint, generate

pytestmark = pytest.mark.browser

TINY_GPT2 = Path(__file__).resolve().parents[1] / "data" / "tiny_models" / "gpt2"
TEXT = "The restaurant refused to serve me because it only cooks vegetarian food."

#: The next-token chart's probabilities and title, as plotly.js drew them.
BARS = """() => {
    const plot = document.querySelector('.st-key-pretrained_next .js-plotly-plot');
    return {y: Array.from(plot._fullData[0].y), title: plot._fullLayout.title.text};
}"""


def load_model(page, url, source):
    """/pretrained with ``source`` (a folder or a file) typed in the path box, as a visitor does."""
    open_app(page, url + "/pretrained?text=" + TEXT.replace(" ", "+"))
    box = page.locator(f".st-key-{model_box.PATH_KEY} input")
    if not box.is_visible():
        page.get_by_text("Your own model: a checkpoint folder").click()
    box.fill(str(source))
    box.press("Enter")
    wait_settled(page)


def load_tiny_gpt2(page, url):
    """/pretrained with the tiny GPT-2 typed in the path box, its next token drawn."""
    load_model(page, url, TINY_GPT2)
    page.locator(".st-key-pretrained_next .js-plotly-plot").wait_for()


def test_the_link_names_the_folder_and_the_temperature_plays_the_engines_frames(
    page, app_url, browser
):
    """The link carries the folder's name, not its path, and opens the same model in a
    colleague's browser; then the temperature slider, moved with the keyboard, shows the
    next token's bars from the frames the browser holds."""
    load_tiny_gpt2(page, app_url)
    assert query(page)["model"] == "gpt2"
    assert str(TINY_GPT2.parent) not in page.url
    with unplugged_page(browser) as other:  # a colleague's browser, opening the shared link
        open_app(other, page.url)
        other.locator(".st-key-pretrained_next .js-plotly-plot").wait_for()
        assert other.get_by_role("heading", name="A pretrained model: gpt2").count() == 1
        assert_healthy(other)

    logits = bert.run(checkpoint.load(TINY_GPT2), TEXT).next_logits
    top = np.argsort(-logits, kind="stable")[: models.TOP_K]

    def engine(t):  # the bars: the top k, then every other token together
        p = generate.probabilities(logits, t)
        return np.append(p[top], 1 - p[top].sum())

    drawn = page.evaluate(BARS)
    np.testing.assert_allclose(drawn["y"], engine(1.0), rtol=1e-6, atol=1e-7)
    page.evaluate("() => { window.__aeFrames = []; }")
    thumb = slider(page, temperature.SOURCE)
    thumb.focus()
    for _ in range(4):  # four quarter-octaves down: T = 1/2
        thumb.press("ArrowLeft")
    page.wait_for_function(
        f"() => ({BARS})().title === 'The next token at temperature 0.5'", polling=100
    )
    drawn = page.evaluate(BARS)
    np.testing.assert_allclose(drawn["y"], engine(0.5), rtol=1e-6, atol=1e-7)
    assert drawn["y"][0] > engine(1.0)[0]  # sharper at T < 1
    painted = page.evaluate("() => window.__aeFrames.map((frame) => frame.stop)")
    assert temperature.DRAWN - 4 in painted  # shown from the frames the browser holds
    assert_healthy(page)


TINY = TINY_GPT2.parent
FAMILIES = Path(__file__).resolve().parents[1] / "data" / "tiny_gguf_families"


@pytest.mark.parametrize(
    "source",
    [
        *(TINY / name for name in ("llama3", "qwen3", "gemma3", "gemma3_fp32", "gemma2", "phi3")),
        *sorted(FAMILIES.glob("*-Q8_0.gguf")),
    ],
    ids=lambda path: path.name,
)
def test_every_pretrained_view_draws_on_the_2026_families(page, app_url, source):
    """Each family's tiny folder and GGUF file typed in the box: every view, no error."""
    page.set_viewport_size({"width": 1280, "height": 900})
    load_model(page, app_url, source)
    page.locator(".st-key-pretrained_next").wait_for()
    assert_healthy(page)
    assert page.get_by_text(f"A pretrained model: {source.name}").count() == 1
    views = ("finder", "heatmap", "lines", "model_view", "neuron", "rollout", "sinks", "rotary")
    for view in views:
        assert page.locator(f".st-key-pretrained_{view}").count() == 1, view
