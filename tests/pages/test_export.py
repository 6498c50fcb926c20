"""Exported figures are laid out for print: sized from the token count, no tick labels touching."""

import numpy as np
import pytest
from apptest_support import RANDOM, chart_payloads, open_app
from hypothesis import given, settings
from hypothesis import strategies as st

from app.views import attention_maps, bars, export


def _attention(n, label_chars=6):
    rng = np.random.default_rng(n)
    weights = rng.random((n, n))
    labels = [f"{i:0{label_chars}d}" for i in range(n)]
    return attention_maps.weights_figure(weights / weights.sum(axis=1, keepdims=True), labels)


def _pitch(layout, axis, n):
    """Pixels between the centres of neighbouring shown labels (labels are the positions)."""
    shown = layout[axis]["tickvals"]
    if axis == "xaxis":
        extent = layout["width"] - layout["margin"]["l"] - layout["margin"]["r"]
    else:
        extent = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    return extent / n * (int(shown[1]) - int(shown[0]))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 512), chars=st.integers(1, 18))
def test_shown_labels_never_touch_and_fit_their_margins(n, chars):
    layout = export.print_layout(_attention(n, chars))
    for axis, margin in (("xaxis", "b"), ("yaxis", "l")):
        shown = layout[axis]["tickvals"]
        assert shown, axis
        if len(shown) > 1:
            # the size is rounded to whole pixels: at most half a pixel over all n cells
            assert _pitch(layout, axis, n) >= export.LABEL_PITCH * export.PRINT_FONT - 0.5
        widest = export.CHAR_WIDTH * export.PRINT_FONT * max(len(label) for label in shown)
        assert layout["margin"][margin] >= widest


def test_every_label_is_shown_while_they_fit_then_thinned_and_said_so():
    small, large = export.print_layout(_attention(40)), export.print_layout(_attention(300))
    assert len(small["xaxis"]["tickvals"]) == 40
    assert "one label in" not in small["xaxis"]["title"]["text"]
    step = export.label_step(export.TARGET_SIDE / 300)
    assert large["yaxis"]["tickvals"][:2] == ["000000", f"{step:06d}"]
    assert f"one label in {step}" in large["yaxis"]["title"]["text"]


def test_size_follows_the_token_count_within_bounds():
    sizes = [export.print_layout(_attention(n))["height"] for n in (4, 20, 60, 512)]
    assert sizes == sorted(sizes)
    assert sizes[0] < 400  # four tokens make a small figure, not a sea of empty cells
    assert sizes[-1] < 1400  # 512 tokens stay a figure that fits a page


def test_other_figures_get_the_plain_print_size_and_font():
    bar = bars.figure(np.full(5, 0.2), list("abcde"), "a")
    layout = export.print_layout(bar)
    assert (layout["width"], layout["height"]) == export.PLAIN_SIZE
    assert layout["font"]["size"] == export.PRINT_FONT


@pytest.mark.parametrize("page_key", ["att_weights", "att_output", "att_bar"])
def test_each_chart_carries_its_print_layout_and_export_size(page_key):
    payload = chart_payloads(open_app("attention", RANDOM))[page_key]
    options = payload["config"]["toImageButtonOptions"]
    assert (options["width"], options["height"]) == (
        payload["print"]["width"],
        payload["print"]["height"],
    )
    assert options["scale"] == export.EXPORT_SCALE
