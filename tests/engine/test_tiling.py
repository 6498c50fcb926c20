"""Properties of engine.tiling: every tile is its block's max or mean, every cell in one tile.

The oracle is the loop form: each tile recomputed from its own block with NumPy's
``max`` and ``mean``; the laws are those a reduction must keep whatever the split (the
largest tile is the largest cell; the tiles' means weighted by their areas give the
matrix's sum).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from engine.tiling import tile, tile_edges

MATRICES = st.tuples(st.integers(1, 40), st.integers(1, 40)).flatmap(
    lambda shape: arrays(np.float32, shape, elements=st.floats(0, 1, width=32))
)


@settings(max_examples=60, deadline=None)
@given(MATRICES, st.integers(1, 12), st.sampled_from(["max", "mean"]))
def test_each_tile_is_its_blocks_reduction(matrix, size, reduction):
    tiles = tile(matrix, size, reduction)
    assert tiles.values.shape == (len(tiles.row_edges) - 1, len(tiles.col_edges) - 1)
    assert tiles.values.shape == (min(size, matrix.shape[0]), min(size, matrix.shape[1]))
    for a, (r0, r1) in enumerate(zip(tiles.row_edges[:-1], tiles.row_edges[1:], strict=True)):
        for b, (c0, c1) in enumerate(zip(tiles.col_edges[:-1], tiles.col_edges[1:], strict=True)):
            block = matrix[r0:r1, c0:c1].astype(np.float64)
            expected = block.max() if reduction == "max" else block.mean()
            assert tiles.values[a, b] == pytest.approx(expected, rel=1e-6, abs=1e-7)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5000), st.integers(1, 300))
def test_the_edges_cover_every_token_once_in_blocks_as_even_as_whole_tokens_allow(n, size):
    edges = tile_edges(n, size)
    assert edges[0] == 0
    assert edges[-1] == n
    widths = np.diff(edges)
    assert len(widths) == min(n, size)
    assert widths.min() >= 1
    assert widths.max() - widths.min() <= 1


@settings(max_examples=60, deadline=None)
@given(MATRICES, st.integers(1, 12))
def test_the_largest_tile_is_the_largest_cell_and_the_means_keep_the_sum(matrix, size):
    assert tile(matrix, size, "max").values.max() == matrix.max()
    tiles = tile(matrix, size, "mean")
    areas = np.outer(np.diff(tiles.row_edges), np.diff(tiles.col_edges))
    # atol: a block's mean of values near float32's smallest normal (1.2e-38) is subnormal,
    # with fewer bits (hypothesis found one 1.3e-5 off); no weight drawn is that small.
    np.testing.assert_allclose(
        (tiles.values * areas).sum(), matrix.astype(np.float64).sum(), rtol=1e-5, atol=1e-30
    )


def test_rows_and_columns_may_have_their_own_number_of_tiles():
    matrix = np.random.default_rng(0).random((30, 1000)).astype(np.float32)
    tiles = tile(matrix, (30, 100), "max")
    assert tiles.values.shape == (30, 100)
    np.testing.assert_array_equal(tiles.values[:, 0], matrix[:, :10].max(axis=1))


def test_a_small_matrix_comes_back_whole():
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4) / 12
    tiles = tile(matrix, 8, "mean")
    np.testing.assert_array_equal(tiles.values, matrix)
    np.testing.assert_array_equal(tiles.row_edges, [0, 1, 2, 3])


def test_a_sink_column_stays_bright_under_the_maximum_not_the_mean():
    """Issue #52: a sink head at 266 tokens, 0.73 on the first token, looked dim when averaged."""
    n = 266
    weights = np.full((n, n), 0.27 / (n - 1), dtype=np.float32)
    weights[:, 0] = 0.73
    assert tile(weights, 48, "max").values[:, 0].min() == pytest.approx(0.73)
    assert tile(weights, 48, "mean").values[:, 0].max() < 0.2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((np.ones((2, 2)), 4, "median"), "reduction"),
        ((np.ones(3), 4), "matrix"),
        ((np.ones((2, 2)), 0), "tile"),
    ],
)
def test_bad_input_is_refused_with_a_message(args, message):
    with pytest.raises(ValueError, match=message):
        tile(*args)
