"""The views of what the 2026 families change (issue #53), as pure figures of engine numbers.

The model view's window edge of Gemma 3's local layers, against the mask it stands for;
the rotary view's wavelengths, against :func:`engine.positional.rotary_frequencies`.
"""

import numpy as np
import pytest

from app.views import model_view, rotary
from engine.attention import sliding_window_mask
from engine.positional import rotary_frequencies


@pytest.mark.parametrize(("n", "window"), [(10, 3), (20, 16), (7, 1)])
def test_the_window_edge_parts_the_keys_a_local_layer_sees_from_those_it_does_not(n, window):
    """Unpooled (n ≤ 48): each cell lies on the side of the line its mask says."""
    attentions = np.zeros((2, 3, n, n))
    edges = model_view.window_edges(attentions, [window, None])
    assert len(edges) == 3  # one per head of the local layer, none on the global one
    assert model_view.window_edges(attentions, [None, None]) == []
    x0, y0, x1, y1 = (edges[0][name] for name in ("x0", "y0", "x1", "y1"))
    i, j = np.indices((n, n))  # query rows, key columns, the heatmap's cells
    side = (x1 - x0) * (i - y0) - (y1 - y0) * (j - x0)  # > 0: left of the line, below it
    seen = sliding_window_mask(n, window) | (j > i)  # the causal half is not the window's
    assert (side[~seen] > 0).all()
    assert (side[seen] < 0).all()


def test_a_window_as_long_as_the_text_draws_no_edge():
    attentions = np.zeros((1, 2, 8, 8))
    assert model_view.window_edges(attentions, [8]) == []
    figure = model_view.figure(attentions, windows=[8])
    assert figure.layout.yaxis.ticktext == ("L0",)
    assert [list(row) for row in figure.data[1].text] == [["L0: local (a window of 8 tokens)"]]


def test_the_wavelengths_are_two_pi_over_the_engines_frequencies():
    rule = (1.0, 4.0, 8192.0)
    plain = rotary_frequencies(64, 5e5)
    scaled = rotary_frequencies(64, 5e5, 32.0, rule)
    figure = rotary.wavelength_figure(plain, scaled, rule)
    np.testing.assert_allclose(figure.data[0].y, 2 * np.pi / plain)
    np.testing.assert_allclose(figure.data[1].y, 2 * np.pi / scaled)
    assert [shape.y0 for shape in figure.layout.shapes] == [2048.0, 8192.0]
    table = rotary.wavelength_table(plain, scaled)
    assert len(table) == 32
    stretched = table["wavelength_scaled"] / table["wavelength_unscaled"]
    assert stretched.iloc[0] == 1.0
    assert stretched.iloc[-1] == pytest.approx(32.0)
