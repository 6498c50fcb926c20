"""Token axes (app/views/axes.py): every label on its own token, every one up to 64, then 1 in k."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import engine
from app.views import (
    attention_maps,
    axes,
    bars,
    heatmap,
    line_view,
    multi_head,
    neuron_view,
    residual,
)


def tokens(n):
    """``n`` token labels with repeats, as a real text has them ("the" at every 5th)."""
    return ["the" if i % 5 == 0 else f"w{i}" for i in range(n)]


def weights(n, seed=0):
    return engine.softmax(np.random.default_rng(seed).standard_normal((n, n)))


def single_figures(labels):
    """Every builder of a chart with tokens along an axis, and which axes ("x", "y") they are."""
    n = len(labels)
    w = weights(n)
    run = engine.run_toy(labels, 16, 4, 0)
    stages = engine.arithmetic.query_stages(run.attention.q[0, 0], run.attention.k[0])
    return {
        "weights": (attention_maps.weights_figure(w, labels), "xy"),
        "scores": (attention_maps.scores_figure(np.log(w), labels, "s"), "xy"),
        "mask": (heatmap.mask_figure(engine.causal_mask(n), labels), "xy"),
        "bar": (bars.figure(w[0], labels, labels[0]), "x"),
        "bars": (bars.compared_figure({"a": w[0], "b": w[1]}, labels, "q"), "x"),
        "features": (heatmap.features_figure(run.q, labels, "Q"), "y"),
        "neuron": (neuron_view.figure(stages, run.attention.k[0], labels, "q"), "y"),
        "norms": (
            residual.figure(np.ones((3, n)), np.ones((2, n)), labels),
            "x",
        ),
    }


@pytest.mark.parametrize("n", [6, 45, 64])
def test_up_to_64_tokens_every_label_is_drawn_on_its_own_token(n):
    labels = tokens(n)
    categories = axes.axis_labels(labels)
    for name, (fig, letters) in single_figures(labels).items():
        labelled = [a for a in axes.token_axes(fig.layout) if a[0] in letters]  # drawn labels
        assert {axis_name[0] for axis_name in labelled} == set(letters), name
        for axis_name in labelled:
            axis = fig.layout[axis_name]
            assert axis.tickmode == "array", (name, axis_name)
            assert list(axis.tickvals) == categories, (name, axis_name)  # no thinning at all
            assert list(axis.categoryarray) == categories
            assert "one label in" not in (axis.title.text or "")
            assert axes.SCREEN_MIN_FONT <= axis.tickfont.size <= axes.SCREEN_FONT


def test_every_token_axis_says_what_it_holds_so_thinning_reads_whole():
    """A thinned axis's title is "token (one label in 2)": /encoder-layer's norms said only
    "one label in 2" in presentation mode, its axes untitled."""
    for name, (fig, letters) in single_figures(tokens(45)).items():
        for axis_name in axes.token_axes(fig.layout):
            if axis_name[0] in letters:
                assert fig.layout[axis_name].title.text in {"key", "query", "token"}, name


@pytest.mark.parametrize("n", [6, 24, 45, 100])
def test_a_grid_of_heads_labels_its_outer_axes_on_their_own_tokens(n):
    """Twelve small panels share their axes: labels at the left and along the bottom only,
    thinned to the room a panel has (said on the axis), never running into a neighbour."""
    labels = tokens(n)
    categories = axes.axis_labels(labels)
    run = engine.run_toy(labels, 48, 12, 0)
    fig = multi_head.figure(run.attention.weights, labels)
    labelled = axes.token_axes(fig.layout)
    assert sorted(name[0] for name in labelled) == ["x"] * 4 + ["y"] * 3  # 3 rows of 4
    steps = {}
    for name in labelled:
        axis = fig.layout[name]
        step = next(s for s in range(1, n + 1) if list(axis.tickvals) == categories[::s])
        steps.setdefault(name[0], set()).add(step)
        assert axis.tickfont.size >= axes.SCREEN_MIN_FONT
    titles = {name: fig.layout[name].title.text for name in labelled if fig.layout[name].title.text}
    assert sorted(name[0] for name in titles) == ["x", "y"]  # one a side, said once
    for name, title in titles.items():
        (step,) = steps[name[0]]
        assert title == axes.titled("key" if name[0] == "x" else "query", step)
    if n <= 24:  # rows as tall as every label needs; columns as wide as a quarter page
        assert steps["y"] == {1}
        assert steps["x"] <= {1, 2}


@pytest.mark.parametrize("n", [65, 130, 512])
def test_past_64_tokens_one_label_in_k_on_its_own_token_and_said_so(n):
    labels = tokens(n)
    categories = axes.axis_labels(labels)
    fig = attention_maps.weights_figure(weights(n), labels)
    k = math.ceil(n / axes.FULL_LABELS_MAX)
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        step = next(s for s in range(1, n) if list(axis.tickvals) == categories[::s])
        assert step >= k
        assert len(axis.tickvals) <= axes.FULL_LABELS_MAX
        assert axis.title.text.endswith(f"(one label in {step})")
    assert fig.layout.xaxis.title.text == f"key (one label in {k})"  # the width is unknown


def test_repeated_tokens_are_ticks_of_their_own():
    labels = ["the", "cat", "sat", "on", "the", "mat"]
    axis = bars.figure(np.full(6, 1 / 6), labels, "the").layout.xaxis
    assert len(set(axis.tickvals)) == 6  # two "the", two positions
    assert [text.rstrip("\u200b") for text in axis.tickvals] == labels


@given(st.integers(1, 600), st.floats(50, 3000), st.sampled_from([8, 16]))
def test_labels_drawn_are_far_enough_apart_and_no_fewer_than_fit(n, room, font):
    step, size = axes.choose(n, room, font=max(font, 12), min_font=font)
    assert size >= font
    assert math.ceil(n / step) <= axes.FULL_LABELS_MAX
    assert step * room / n >= axes.LABEL_PITCH * size - 1e-9  # drawn labels do not touch
    if step > 1:  # and one step less would make them touch, or draw more than 64
        closer = (step - 1) * room / n < axes.LABEL_PITCH * size
        assert closer or math.ceil(n / (step - 1)) > axes.FULL_LABELS_MAX


@pytest.mark.parametrize(("width", "height"), [(1216, 620), (1856, 980)])
def test_a_projector_gets_labels_of_16_px_thinned_to_fit(width, height):
    labels = tokens(45)
    fig = attention_maps.weights_figure(weights(45), labels)
    fig.update_layout(height=height)
    axes.fit(fig, width, height)
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert axis.tickfont.size >= axes.PRESENT_MIN_FONT
    rows = fig.layout.yaxis
    step = len(labels) // (len(rows.tickvals) - 1) if len(rows.tickvals) > 1 else 1
    room = height - 130 - axes.text_width(fig.layout.xaxis.categoryarray, 16)
    assert step * room / 45 >= axes.LABEL_PITCH * 16


@given(st.integers(1, 200), st.sampled_from([(1216, 620), (1856, 980), (600, 400)]))
def test_a_projectors_labels_are_as_large_as_fits_between_its_minimum_and_its_type(n, size):
    width, height = size
    fig = attention_maps.weights_figure(weights(n), tokens(n))
    fig.update_layout(height=height)
    axes.fit(fig, width, height, 20, axes.PRESENT_MIN_FONT)
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert axes.PRESENT_MIN_FONT <= axis.tickfont.size <= 20
        if axes.FULL_LABELS_MAX >= n > len(axis.tickvals):  # thinned for room: at the minimum
            assert axis.tickfont.size == axes.PRESENT_MIN_FONT
    if n <= 4:  # a few tokens: the type's own size
        assert fig.layout.yaxis.tickfont.size == 20


def test_the_line_view_labels_every_token_and_thins_on_a_short_screen():
    labels = tokens(45)
    run = engine.run_toy(labels, 16, 2, 0)
    found = engine.attention.strong_links(run.attention.weights, 0.05)
    fig = line_view.figure(found, labels, [0, 1], 0.05, "lines")
    assert list(fig.data[0].text) == axes.axis_labels(labels)
    assert list(fig.data[0].hovertext) == axes.axis_labels(labels)
    axes.fit(fig, 1216, 620)
    shown = [text for text in fig.data[0].text if text]
    assert 1 < len(shown) < 45  # every other one, say
    assert fig.data[0].textfont.size >= axes.PRESENT_MIN_FONT
    assert "one label in" in fig.layout.title.text.split("<br>")[0]
    assert list(fig.data[1].text) == list(fig.data[0].text)  # both columns alike


@given(st.integers(1, axes.FULL_LABELS_MAX))
def test_a_heatmap_names_every_row_up_to_64_tokens(n):
    """Find the row "it", the tour says: a heatmap is tall enough to label every row."""
    labels = [f"t{i}" for i in range(n)]
    fig = heatmap.figure(np.zeros((n, n)), labels, labels, "weights")
    assert list(fig.layout.yaxis.tickvals) == labels
    assert fig.layout.yaxis.tickfont.size >= axes.SCREEN_MIN_FONT


@pytest.mark.parametrize("n", [6, 28, 64])
def test_the_line_views_title_says_no_thinning_when_every_token_is_labelled(n):
    """Issue 55: "(one label in 3)" came from the opacity loop's counter, not the labels."""
    labels = tokens(n)
    run = engine.run_toy(labels, 16, 4, 0)
    found = engine.attention.strong_links(run.attention.weights, 0.01)
    fig = line_view.figure(found, labels, [0, 1, 2, 3], 0.01, "4 heads")
    assert list(fig.data[0].text) == axes.axis_labels(labels)  # every token labelled
    assert "one label in" not in fig.layout.title.text


@pytest.mark.parametrize(("d", "step"), [(8, 1), (16, 2), (32, 4), (128, 16), (384, 16)])
def test_a_feature_axis_draws_at_most_eight_numbers_one_in_a_power_of_two(d, step):
    """Issue 55: 32 feature labels in a third of the page ran into a smear."""
    run = engine.run_toy(tokens(10), d, 1, 0)
    fig = heatmap.features_figure(run.q, tokens(10), "Q")
    drawn = min(d, heatmap.FEATURE_LIMIT)
    axis = fig.layout.xaxis
    assert list(axis.tickvals) == [f"f{i}" for i in range(0, drawn, step)][: len(axis.tickvals)]
    assert len(axis.tickvals) == -(-drawn // step) <= axes.NUMBERED_LABELS_MAX
    assert axis.title.text == axes.titled("feature", step)
    assert list(fig.layout.yaxis.tickvals) == axes.axis_labels(tokens(10))  # tokens: every one


@given(st.integers(2, 600))
def test_a_numbered_axis_keeps_few_labels_and_every_token_axis_keeps_its_rule(n):
    positions = [str(i) for i in range(n)]
    axis = axes.token_axis(positions, "position")
    assert len(axis["tickvals"]) <= axes.NUMBERED_LABELS_MAX
    assert axis["tickvals"][0] == "0"
    words = axes.axis_labels(tokens(n))
    assert axes.token_axis(words, "key")["tickvals"] == words[:: axes.choose(n)[0]]
    assert not axes.numbered([str(i + 1) for i in range(n)])  # a text "1 2 3": its tokens
