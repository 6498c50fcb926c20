"""Figure builders, tested without Streamlit: labels, scales, cell text, compact data."""

import itertools
import json

import numpy as np
import pytest
from apptest_support import cells_written
from hypothesis import given
from hypothesis import strategies as st

import engine
from app.views import (
    attention_maps,
    axes,
    bars,
    encoding_curves,
    export,
    heatmap,
    multi_head,
    saturation,
    style,
)

LABELS = ["the", "cat", "sat", "on", "the", "mat"]


def weights_for(labels, seed=0):
    rng = np.random.default_rng(seed)
    return engine.softmax(rng.standard_normal((len(labels), len(labels))))


@given(st.lists(st.text(max_size=30), max_size=40))
def test_axis_labels_are_distinct_and_carry_no_markup(labels):
    out = axes.axis_labels(labels)
    assert len(out) == len(labels)
    assert len(set(out)) == len(out)
    for label in out:
        assert "<" not in label
        assert ">" not in label
        assert len(label.rstrip("\u200b")) <= axes.LABEL_MAX_CHARS + 10  # escapes add length


def test_repeated_tokens_keep_their_own_rows():
    fig = attention_maps.weights_figure(weights_for(LABELS), LABELS)
    assert list(fig.data[0].x).count("the") == 1
    assert len(set(fig.data[0].x)) == len(LABELS)


def test_weights_use_a_fixed_zero_to_one_scale_and_float32():
    fig = attention_maps.weights_figure(weights_for(LABELS) * 0.5, LABELS)
    trace = fig.data[0]
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)
    assert trace.z.dtype == np.float32
    assert fig.layout.yaxis.autorange == "reversed"  # first query on top


def test_hover_names_tokens_and_gives_scores():
    w = weights_for(LABELS)
    scores = np.arange(36.0).reshape(6, 6)
    fig = attention_maps.weights_figure(w, LABELS, scores=scores, scaled=scores / 2)
    trace = fig.data[0]
    assert trace.customdata.shape == (6, 6, 2)
    np.testing.assert_array_equal(trace.customdata[..., 0], scores.astype(np.float32))
    for part in ("query %{y}", "key %{x}", "raw score", "scaled score", "weight"):
        assert part in trace.hovertemplate


def test_a_masked_cells_hover_says_it_is_masked_not_minus_infinity():
    scores = np.arange(9.0).reshape(3, 3)
    mask = engine.causal_mask(3)
    scaled = np.where(mask, scores / 2, -np.inf)
    fig = attention_maps.weights_figure(
        engine.softmax(scaled), LABELS[:3], scores=scores, scaled=scaled
    )
    trace = fig.data[0]
    assert list(trace.customdata[0][2]) == [
        2.0,
        "",
        attention_maps.MASKED_HOVER,
    ]  # above the diagonal
    assert list(trace.customdata[2][0]) == [6.0, 3.0, ""]
    assert "scaled score %{customdata[1]:.3f}%{customdata[2]}" in trace.hovertemplate
    assert trace.z[0, 2] == 0.0  # the colour is the weight's, as before


def test_scores_are_diverging_and_centred():
    scores = np.array([[1.0, -3.0], [2.0, 0.5]])
    trace = heatmap.figure(scores, ["a", "b"], ["a", "b"], "s").data[0]
    assert trace.zmid == 0.0
    assert trace.zmin == -3.0
    assert trace.zmax == 3.0


def test_cell_text_only_for_small_matrices():
    weights = weights_for(LABELS)
    small = attention_maps.weights_figure(weights, LABELS)
    # white numbers in the heatmap, black ones in a clear heatmap over it
    assert [t.name for t in small.data] == [None, style.TEXT_OVERLAY]
    written = cells_written(small)
    assert [[float(t) for t, _ in row] for row in written] == pytest.approx(weights, abs=0.005)
    assert {c for row in written for _, c in row} <= set(heatmap.TEXT_COLOURS)
    drawn = attention_maps.weights_figure(weights, LABELS, follows_frames=True)
    assert len(drawn.data) == 1
    assert drawn.data[0].texttemplate == "%{z:.2f}"  # from the frames: plotly.js's colour
    assert drawn.data[0].text is None  # never formatted here as well
    big_labels = [f"t{i}" for i in range(heatmap.CELL_TEXT_MAX + 1)]
    big = attention_maps.weights_figure(weights_for(big_labels), big_labels)
    assert len(big.data) == 1
    assert big.data[0].texttemplate is None


def test_masked_scores_show_minus_infinity():
    masked = np.where(engine.causal_mask(3), 1.0, -np.inf)
    fig = attention_maps.scores_figure(masked, ["a", "b", "c"], "masked")
    trace = fig.data[0]
    assert np.isnan(trace.z[0, 2])  # a gap: plotly.js writes no value there
    assert trace.z[2, 0] == 1.0
    assert cells_written(fig)[2][0][0] == "1.00"
    assert cells_written(fig)[0][2] == ("", "")  # a gap: nothing written
    # invisible, over the masked cells alone, which it names
    (hover,) = [t for t in fig.data if t.name == style.MASKED_OVERLAY]
    assert hover.opacity == 0.0
    np.testing.assert_array_equal(np.isnan(hover.z), np.isfinite(masked))
    assert attention_maps.MASKED_HOVER in hover.hovertemplate
    assert (hover.text[0][2], hover.text[2][0]) == ("−∞", "")  # written over the gap alone
    assert hover.texttemplate == "%{text}"
    assert "xaxis" in export.print_layout(fig)  # still laid out for print as one heatmap
    assert "blank cells are −∞" in fig.layout.title.text  # said in the title, not on the plot


def test_transpose_swaps_axes_and_titles():
    m = np.arange(6.0).reshape(2, 3)
    fig = heatmap.figure(
        m, ["r0", "r1"], ["c0", "c1", "c2"], "m", x_title="feature", y_title="token", transpose=True
    )
    assert fig.data[0].z.shape == (3, 2)
    assert list(fig.data[0].y) == ["c0", "c1", "c2"]
    assert fig.layout.xaxis.title.text == "token"


def test_column_groups_draw_head_boundaries():
    fig = heatmap.figure(np.zeros((3, 8)), list("abc"), list("abcdefgh"), "Q", column_groups=4)
    xs = sorted(shape.x0 for shape in fig.layout.shapes)
    assert xs == [1.5, 3.5, 5.5]


def test_one_panel_per_head():
    run = engine.run_toy(LABELS, 16, 4, 0)
    fig = multi_head.figure(run.attention.weights, LABELS, stat=["a", "b", "c", "d"])
    assert len(fig.data) == 4
    assert sum(trace.showscale for trace in fig.data) == 1


def test_saturation_figure_marks_the_current_scale():
    run = engine.run_toy(LABELS, 16, 1, 0)
    scales = np.geomspace(1e-3, 1e3, 13)
    stats = engine.saturation_sweep(run.attention.heads.scores[0], scales)
    fig = saturation.figure(scales, stats, 2.0, 0.25)
    assert len(fig.data) == 3
    assert {shape.x0 for shape in fig.layout.shapes} == {2.0, 0.25}
    assert fig.layout.xaxis.type == "log"


def test_bar_chart_of_one_row():
    w = weights_for(LABELS)
    fig = bars.figure(w[2], LABELS, LABELS[2])
    np.testing.assert_allclose(fig.data[0].y, w[2].astype(np.float32))
    assert "sat" in fig.layout.title.text
    # Colours are CSS strings from the weights scale (plotly.js 4.2 warns per bar on numbers).
    strongest, weakest = int(np.argmax(w[2])), int(np.argmin(w[2]))
    assert all(color.startswith("rgb(") for color in fig.data[0].marker.color)
    assert fig.data[0].marker.color[strongest] != fig.data[0].marker.color[weakest]
    assert style.weight_colors([0.0, 1.0]) == ["rgb(68, 1, 84)", "rgb(253, 231, 37)"]


def test_mask_heatmap_shows_the_triangle():
    fig = heatmap.mask_figure(engine.causal_mask(4), list("abcd"))
    np.testing.assert_array_equal(fig.data[0].z, np.tril(np.ones((4, 4), dtype=np.float32)))


def test_figures_serialise_compactly():
    labels = [f"t{i}" for i in range(64)]
    fig = attention_maps.weights_figure(weights_for(labels), labels)
    spec = json.loads(fig.to_json())
    z = spec["data"][0]["z"]
    assert z["dtype"] == "f4"  # sent as base64 float32, not a list of decimals
    assert len(fig.to_json()) < 64 * 64 * 4 * 1.5 + 20_000


def test_user_text_never_becomes_markup_in_a_figure():
    payload = ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "a&b"]
    spec = json.loads(attention_maps.weights_figure(weights_for(payload), payload).to_json())
    labels = spec["data"][0]["x"] + spec["data"][0]["y"]
    assert all("<" not in label and ">" not in label for label in labels)
    assert any(label.startswith("&lt;script&gt;alert(1)") for label in labels)  # shown as text


def test_saturation_tables_label_rows():
    w = weights_for(LABELS)
    summary, per_row = saturation.tables(w, LABELS)
    assert list(per_row["query"]) == LABELS
    assert per_row["entropy Hᵢ (bits)"].between(0, np.log2(6) + 1e-9).all()
    assert summary["mean largest weight"].iloc[0] == pytest.approx(w.max(axis=1).mean())


def test_the_effective_tokens_column_says_it_is_the_mean_of_two_to_the_entropy():
    w = weights_for(LABELS)
    summary, per_row = saturation.tables(w, LABELS)
    entropy = per_row["entropy Hᵢ (bits)"]
    assert per_row["effective tokens 2^Hᵢ"].to_numpy() == pytest.approx(2.0**entropy)
    mean = summary["effective tokens: mean of 2^Hᵢ"].iloc[0]
    assert mean == pytest.approx(np.mean(2.0**entropy))
    assert mean > 2.0 ** entropy.mean()  # Jensen: not 2^(mean H), which the old label suggested
    heads = multi_head.entropy_table(w[None])
    assert heads["effective tokens: mean of 2^Hᵢ"].iloc[0] == pytest.approx(mean)


def test_head_entropy_per_head():
    run = engine.run_toy(LABELS, 16, 4, 0)
    table = multi_head.entropy_table(run.attention.weights)
    assert len(table) == 4
    expected = engine.saturation(run.attention.weights).entropy.mean(axis=-1)
    np.testing.assert_allclose(table["mean entropy (bits)"], expected)


def test_wide_feature_axes_are_cropped_and_say_so():
    m = np.arange(10 * 300, dtype=float).reshape(10, 300)
    fig = heatmap.figure(m, range(10), range(300), "Q", max_cols=128)
    assert fig.data[0].z.shape == (10, 128)
    assert "first 128 of 300 columns" in fig.layout.title.text
    narrow = heatmap.figure(m[:, :100], range(10), range(100), "Q", max_cols=128)
    assert narrow.layout.title.text == "Q"


def _measured_wavelength(values):
    """A sampled wave's wavelength in samples, from how often it changes sign."""
    changes = np.count_nonzero(np.diff(np.signbit(values)))
    return 2 * len(values) / changes


@pytest.mark.parametrize("d_model", [384, 64, 16])
def test_the_encoding_curves_are_sinusoids_whose_wavelengths_differ_visibly(d_model):
    """Issue 55: dimensions 0, 2, 4, 6 at d = 384 had wavelengths within 16 % of each other."""
    pe = engine.sinusoidal_positional_encoding(2048, d_model)
    fig = encoding_curves.figure(pe, encoding_curves.doubling_dims(d_model))
    assert fig.layout.title.text.startswith("The sinusoidal encoding")
    assert len(fig.data) == 4
    measured = [_measured_wavelength(np.asarray(trace.y, dtype=float)) for trace in fig.data]
    assert measured[0] == pytest.approx(2 * np.pi, rel=0.05)  # sin(p): wavelength 2π
    for shorter, longer in itertools.pairwise(measured):
        assert longer / shorter > 1.7  # each curve at least ~twice as long a wave
    for trace, length in zip(fig.data, measured, strict=True):  # the legend says it
        said = float(trace.name.rsplit("wavelength ", 1)[1])
        assert said == pytest.approx(length, rel=0.1)
