"""The numbers written in heatmap cells stand out from their cells: WCAG 2 contrast ≥ 4.5.

plotly.js colours a cell's text white or dark grey (#444), which reached about 3:1 on
Viridis's greens (/decoder's cross-attention, /pretrained's sinks grid). The cell's colour
is taken here from plotly's own ``sample_colorscale`` and the contrast from WCAG 2's
definition, written out below, independently of :mod:`app.views.style`.
"""

import re

import numpy as np
import pytest
from apptest_support import cells_written, chart_z, charts, decode, open_app
from hypothesis import given
from hypothesis import strategies as st
from plotly.colors import hex_to_rgb, sample_colorscale

from app.views import head_finder, heatmap, sinks, style
from engine import analysis

#: WCAG 2.x's least contrast for ordinary text.
WCAG_AA = 4.5
SCALES = [style.WEIGHTS_SCALE, style.DIVERGING_SCALE, style.MASK_SCALE]


def relative_luminance(rgb255):
    """WCAG 2.x: the relative luminance of an sRGB colour with channels 0-255."""
    channels = []
    for value in rgb255:
        c = value / 255
        channels.append(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
    r, g, b = channels
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b):
    lighter, darker = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def cell_colour(colorscale, t):
    """The colour plotly draws at ``t`` in [0, 1] on ``colorscale``, channels 0-255 (whole)."""
    if not isinstance(colorscale, str):  # plotly reads a tuple of stops as one colour
        colorscale = [list(stop) for stop in colorscale]
    (written,) = sample_colorscale(colorscale, [min(max(t, 0.0), 1.0)])
    return [float(v) for v in re.findall(r"[\d.]+", written)]


def text_rgb(colour):
    return hex_to_rgb(colour)


def assert_legible(z, colours, colorscale, zmin, zmax):
    for value, colour in zip(np.ravel(z), np.ravel(np.array(colours, dtype=object)), strict=True):
        if np.isnan(value):
            assert colour == ""
            continue
        cell = cell_colour(colorscale, (value - zmin) / (zmax - zmin))
        assert contrast(text_rgb(colour), cell) >= WCAG_AA, (value, colour, cell)


@given(
    st.lists(st.floats(-2.0, 2.0, allow_nan=False), min_size=1, max_size=12),
    st.sampled_from(SCALES),
    st.floats(-1.0, 0.5),
    st.floats(0.01, 2.0),
)
def test_every_cells_text_reaches_wcag_contrast_on_its_cell(values, colorscale, zmin, span):
    z = np.array([values])
    colours = heatmap.text_colours(z, colorscale, zmin, zmin + span)
    assert_legible(z, colours, colorscale, zmin, zmin + span)


def test_a_gap_gets_no_colour_and_the_greens_get_black():
    colours = heatmap.text_colours([[np.nan, 0.55, 0.0, 1.0]], style.WEIGHTS_SCALE, 0.0, 1.0)
    # Viridis: teal-green at 0.55 (white reads 3.7:1 on it), dark purple at 0, yellow at 1
    assert colours == [["", "#000000", "#ffffff", "#000000"]]


def assert_figure_legible(figure, index, shown):
    """Heatmap ``index`` writes ``shown`` (to two decimals) in legible colours, NaN blank."""
    trace = figure["data"][index]
    cells = cells_written(figure, index)
    texts = [[text for text, _ in row] for row in cells]
    colours = [[colour for _, colour in row] for row in cells]
    expected = [["" if np.isnan(v) else f"{v:.2f}" for v in row] for row in np.asarray(shown)]
    assert texts == expected
    assert_legible(
        np.asarray(shown, float), colours, trace["colorscale"], trace["zmin"], trace["zmax"]
    )


def test_decoders_cross_attention_writes_each_number_legibly():
    at = open_app("decoder")
    at.slider(key="decoder_step").set_value(5).run()
    assert not at.exception
    for key in ("decoder_cross", "decoder_alignment", "decoder_self"):
        assert_figure_legible(charts(at)[key], 0, chart_z(at, key))


def test_the_sinks_grid_and_the_head_finder_write_each_number_legibly():
    first = np.linspace(0.0, 1.0, 30 * 9).reshape(30, 9)  # SmolLM2's 30 layers × 9 heads
    found = analysis.Sinks(first, float(first.mean()), 0.1, np.full(5, 0.2), np.arange(5))
    for fig in (
        sinks.figure(found, [f"t{i}" for i in range(5)]),
        head_finder.figure(first, "it", "trophy"),
    ):
        assert_figure_legible(fig, 0, decode(fig.data[0].z))


@pytest.mark.parametrize("colorscale", SCALES)
def test_the_colours_follow_plotlys_own_interpolation(colorscale):
    t = np.linspace(0.0, 1.0, 101)
    expected = np.array([cell_colour(colorscale, v) for v in t]) / 255
    # plotly writes whole channels, as plotly.js draws them: half a step apart at most
    np.testing.assert_allclose(style.scale_rgb(t, colorscale), expected, atol=0.5 / 255 + 1e-9)
