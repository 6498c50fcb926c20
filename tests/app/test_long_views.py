"""The views of a long text (issue #52), built from arrays without Streamlit.

The tiled head view and its zoom (:mod:`app.views.long_head`), the grid of every head's
summaries (:mod:`app.views.summary_grid`), the model view's max-pooled thumbnails and the
neuron view of the keys around a query: each figure holds the engine's numbers.
"""

import numpy as np
import pytest

import engine
from app.views import last_token, long_head, model_view, neuron_view, summary_grid
from engine import tiling
from engine.arithmetic import query_stages
from engine.summaries import head_summaries


def _causal_weights(seed, n, n_heads=1):
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((n_heads, n, n)) + np.where(np.tri(n, dtype=bool), 0.0, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)).astype(np.float32)


def test_a_sink_head_shows_bright_in_the_model_view():
    """Issue #52: 0.73 of a head's weight on the first token at 266 tokens showed as 0.17."""
    n = 266
    sink = np.full((n, n), 0.27 / (n - 1), dtype=np.float32)
    sink[:, 0] = 0.73
    attentions = np.stack([_causal_weights(0, n, 2)[None, 0], sink[None]])  # [2, 1, n, n]
    z = np.asarray(model_view.figure(attentions).data[0].z)
    side = model_view.THUMBNAIL_MAX
    thumbnail = z[side + model_view.THUMBNAIL_GAP :, :side]  # layer 1, head 0
    assert thumbnail[:, 0].min() == round(0.73 * 254)


def test_the_tiled_map_is_drawn_at_each_tiles_middle_token_with_its_ranges():
    weights = _causal_weights(1, 300)[0]
    tiles = tiling.tile(weights, 32, "max")
    trace = long_head.tile_figure(tiles, "L0 H0").data[0]
    np.testing.assert_array_equal(trace.z, tiles.values)
    edges = tiles.row_edges
    np.testing.assert_allclose(trace.y, (edges[:-1] + edges[1:] - 1) / 2)
    assert list(trace.customdata[0, 0]) == [0, edges[1] - 1, 0, edges[1] - 1]
    table = long_head.tile_table(tiles)
    assert table.index[0] == f"0-{edges[1] - 1}"
    assert table.shape == tiles.values.shape


def test_the_zoom_of_a_block_names_its_tokens_by_position_and_keeps_the_offsets():
    weights = _causal_weights(2, 200)[0]
    labels = [f"w{i}" for i in range(200)]
    rows, cols = (100, 130), (90, 110)
    assert long_head.fits(rows, cols)
    trace = long_head.cells_figure(weights[100:130, 90:110], labels, rows, cols, "zoom").data[0]
    np.testing.assert_array_equal(trace.z, weights[100:130, 90:110])
    assert list(trace.y) == [f"{i} w{i}" for i in range(100, 130)]
    assert list(trace.x) == [f"{i} w{i}" for i in range(90, 110)]
    tiles = tiling.tile(weights[0:150, 10:200], 16, "mean")
    zoomed = long_head.tile_figure(tiles, "zoom", rows=(0, 150), cols=(10, 200)).data[0]
    assert zoomed.x[0] == 10 + (tiles.col_edges[1] - 1) / 2
    box = long_head.zoom_box(rows, cols)
    assert (box["x0"], box["x1"], box["y0"], box["y1"]) == (89.5, 109.5, 99.5, 129.5)


@pytest.mark.parametrize(("token", "n"), [(0, 4096), (2000, 4096), (4095, 4096), (3, 10)])
def test_around_gives_the_window_holding_the_token_within_the_text(token, n):
    start, stop = long_head.around(token, n, 32)
    assert 0 <= start <= token < stop <= n
    assert stop - start == min(32, n)


def test_the_summary_grid_draws_one_summary_and_its_csv_holds_them_all():
    summaries = head_summaries(_causal_weights(3, 40, 6).reshape(2, 3, 40, 40))
    for field, (name, _) in summary_grid.SUMMARIES.items():
        fig = summary_grid.figure(getattr(summaries, field), name)
        np.testing.assert_array_equal(fig.data[0].z, getattr(summaries, field))
        assert name in fig.layout.title.text
    weight = summary_grid.figure(summaries.first_token, "w", weight=True).data[0]
    assert weight.zmax == 1.0
    table = summary_grid.table(summaries)
    assert list(table.columns) == ["layer", "head", *summary_grid.SUMMARIES]
    assert table.loc[5, "entropy"] == summaries.entropy[1, 2]


def test_the_neuron_views_keys_around_the_query_keep_the_softmax_over_every_key():
    rng = np.random.default_rng(4)
    q, k = rng.standard_normal(8), rng.standard_normal((500, 8))
    stages = query_stages(q, k)
    labels = [f"t{i}" for i in range(500)]
    cut, keys, names = neuron_view.keys_shown(stages, k, labels, slice(480, 500))
    np.testing.assert_array_equal(cut.weights, stages.weights[480:])
    assert cut.weights.sum() < 1.0
    np.testing.assert_array_equal(keys, k[480:])
    assert names == labels[480:]


def test_the_last_tokens_row_of_a_long_text_is_drawn_as_the_maximum_of_blocks_of_keys():
    n = 3000
    attention = np.random.default_rng(5).random((2, 3, n)).astype(np.float32)
    attention[1, 2, 1234] = 1.0
    fig = last_token.figure(attention, [f"t{i}" for i in range(n)])
    z = np.asarray(fig.data[0].z)
    assert z.shape == (6, last_token.KEY_TILES)
    expected = tiling.tile(attention.reshape(6, n), (6, last_token.KEY_TILES), "max").values
    np.testing.assert_array_equal(z, expected)
    assert z[5].max() == 1.0
    assert "each their maximum" in fig.layout.title.text


@pytest.mark.parametrize(
    ("token", "seen"),
    [(2000, slice(0, 2001)), (10, slice(0, 11)), (5, slice(None)), (3000, slice(2500, 3001))],
)
def test_the_keys_around_a_query_are_those_it_sees_within_the_window(token, seen):
    n = 4096
    near = long_head.keys_around(token, n, seen)
    keys = range(n)[seen][near]
    start, stop = long_head.around(token, n, long_head.AROUND)
    assert list(keys) == [k for k in range(start, stop) if k in range(n)[seen]]


def test_a_long_heads_saturation_by_blocks_of_rows_is_the_whole_heads():
    """The core pages' row statistics of a long head, taken a block of rows at a time to
    bound the float64 temporaries, are engine.saturation's of the whole matrix, to the bit."""
    from app.data import long_layers

    rng = np.random.default_rng(0)
    n = long_layers.STAT_ROWS * 2 + 37
    weights = rng.random((n, n)).astype(np.float32)
    weights /= weights.sum(axis=1, keepdims=True)
    weights[3] = 0.0  # a row that sees nothing
    weights[4] = np.eye(n, dtype=np.float32)[9]  # one-hot
    whole, blocked = engine.saturation(weights), long_layers.row_saturation(weights)
    for a, b in zip(whole, blocked, strict=True):
        np.testing.assert_array_equal(a, b)
    assert long_layers.row_saturation(weights, jacobian=False).jacobian_norm is None


def test_a_long_heads_saturation_curve_by_a_few_scales_is_the_whole_sweeps():
    """/attention's curve on a long text sweeps a few scales at a time: the same numbers."""
    from app.data import long_layers

    rng = np.random.default_rng(1)
    n, scales = 700, np.geomspace(1e-3, 1e3, 61)
    scores = rng.standard_normal((64, n)).astype(np.float32)
    mask = np.tril(np.ones((n, n), dtype=bool))[np.linspace(0, n - 1, 64).round().astype(int)]
    whole = engine.saturation_sweep(scores, scales, mask, jacobian=False)
    step = long_layers.SWEEP_SCALES
    parts = [
        engine.saturation_sweep(scores, scales[i : i + step], mask, jacobian=False)
        for i in range(0, len(scales), step)
    ]
    for a, b in zip(whole, long_layers._joined(parts), strict=True):
        assert (a is None and b is None) or np.array_equal(a, b)
